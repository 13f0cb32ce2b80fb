"""Simulated doctors on the ratings endpoint: the load harness shared by
``benchmarks/bench_capacity.py`` (full size) and ``tests/test_load.py`` (small).

A :class:`Doctor` behaves like the annotation widget in a doctor's browser, without the
browser: it holds a token minted through the service (as the Annotate page mints one), asks
the endpoint where to resume, walks its window of pairs in serving order and presses a key
every ``pace_s`` seconds ± ``jitter_s`` (a share ``back_share`` of the presses go back one
pair and change that answer, chained onto the unacknowledged edit when there is one). Its
unacknowledged ratings form one ordered list that is posted whole, one request at a time;
a request unanswered for ``RESEND_AFTER_MS`` is sent again, errors are retried with the
widget's backoff. A refill is asked for when fewer than ``REFILL_BELOW`` pairs lie ahead.

Exactly once is checked twice:

- **live**, on every acknowledgement: a slot's version the endpoint reports must be its
  version when the doctor first received it plus the number of presses acknowledged on it
  (each acknowledged press is exactly one stored revision). A resend that stored an answer
  again shows up as a version too high, an acknowledged answer that was not stored as one
  too low (``version_errors``); an entry acknowledged without a version, or refused, is
  counted too;
- **against the store**, at the end (:func:`audit`): each slot's stored revisions, in order,
  must be exactly the acknowledged answers for that slot, in the order they were pressed.

All traffic goes to the base URL given (127.0.0.1 in the benchmark and the tests); every run
is bounded by a number of presses per doctor and a deadline, and stops by itself.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import random
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import httpx
import numpy as np

from data_schemas.widget import (
    BACKOFF_MS,
    MAX_BATCH,
    RATINGS_PATH,
    REFILL_BELOW,
    RESEND_AFTER_MS,
    RatingsResponse,
)

VALUES = ("same", "not_same")


@dataclass(frozen=True)
class Pace:
    """How a simulated doctor presses: every ``pace_s`` ± ``jitter_s`` seconds (uniform),
    ``back_share`` of the presses change the previous pair's answer."""

    pace_s: float = 2.0
    jitter_s: float = 0.5
    back_share: float = 0.05


@dataclass
class Press:
    annotator_id: int
    seq: int
    position: int
    value: str
    at: float  # time.monotonic() of the key press
    elapsed_ms: int  # how long the pair was on screen before the press
    version: int | None = None
    after: int | None = None
    acked_at: float | None = None
    stored_version: int | None = None
    refused: bool = False

    def entry(self) -> dict:
        out: dict = {
            "seq": self.seq,
            "position": self.position,
            "value": self.value,
            "elapsed_ms": self.elapsed_ms,
        }
        if self.after is not None:
            out["after"] = self.after
        else:
            out["version"] = self.version
        return out


@dataclass
class Tally:
    """What every doctor of a run saw, shared (one asyncio loop: no locks needed)."""

    presses: list[Press] = field(default_factory=list)
    requests: int = 0
    resends: int = 0
    http_errors: Counter = field(default_factory=Counter)
    refused: list[str] = field(default_factory=list)
    version_errors: list[str] = field(default_factory=list)
    fatal: list[str] = field(default_factory=list)

    def acked(self) -> list[Press]:
        return [p for p in self.presses if p.acked_at is not None]

    def unacked(self) -> list[Press]:
        return [p for p in self.presses if p.acked_at is None]

    def latencies(self, since: float = -np.inf, until: float = np.inf) -> np.ndarray:
        """Key press → acknowledgement (seconds) of the presses made in [since, until)."""
        return np.array(
            [p.acked_at - p.at for p in self.acked() if since <= p.at < until], dtype=float
        )

    def late_share(self, since: float, until: float, limit: float, now: float) -> float:
        """Share of the presses made in [since, until) acknowledged after *limit* seconds,
        counting a press still waiting for longer than *limit* as late already."""
        made = [p for p in self.presses if since <= p.at < until]
        if not made:
            return 0.0
        late = sum(
            1 for p in made if (p.acked_at - p.at if p.acked_at is not None else now - p.at) > limit
        )
        return late / len(made)


class Doctor:
    """One simulated doctor (see the module docstring)."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        annotator_id: int,
        token: str,
        tally: Tally,
        *,
        pace: Pace,
        max_presses: int,
        seed: int,
    ) -> None:
        self.client = client
        self.annotator_id = annotator_id
        # X-Load-Doctor: only for the proxy's access log (which server answered whom); the
        # endpoint ignores it.
        self.headers = {"Authorization": f"Bearer {token}", "X-Load-Doctor": str(annotator_id)}
        self.tally = tally
        self.pace = pace
        self.max_presses = max_presses
        self.rng = random.Random(seed)
        self.order: list[int] = []  # positions held, in serving order
        self.known: dict[int, int] = {}  # position -> version the doctor would press on
        self.last_value: dict[int, str] = {}
        self.idx = 0  # index in order of the pair on screen
        self.end_of_queue = False
        self.complete = False
        self.pending: list[Press] = []
        self.unacked_at: dict[int, Press] = {}  # position -> latest unacknowledged press
        self.seq = 0
        self.first_version: dict[int, int] = {}  # position -> version when first received
        self.acked_count: Counter = Counter()  # position -> presses acknowledged on it
        self.need: int | None = -1
        self.mark: list[int] | None = None  # the queue mark of the last window received
        self.wake = asyncio.Event()
        self.stopping = False
        self.last_press = time.monotonic()
        self.presses = 0

    # ---- the network side -------------------------------------------------------------
    async def _post(self, body: dict) -> RatingsResponse | None:
        """One request; ``None`` after an error (already counted and waited out)."""
        self.tally.requests += 1
        try:
            r = await self.client.post(
                RATINGS_PATH, json=body, headers=self.headers, timeout=RESEND_AFTER_MS / 1000
            )
        except httpx.TimeoutException:
            self.tally.resends += 1
            return None
        except httpx.TransportError as exc:
            self.tally.http_errors[type(exc).__name__] += 1
            await asyncio.sleep(BACKOFF_MS[0] / 1000)
            return None
        if r.status_code == 200:
            return RatingsResponse.model_validate_json(r.content)
        self.tally.http_errors[str(r.status_code)] += 1
        try:
            err = r.json()
        except ValueError:
            err = {"error": "?", "reason": r.text[:200]}
        if r.status_code in (429, 503, 502, 504):
            wait = err.get("retry_after_ms") or BACKOFF_MS[0]
            await asyncio.sleep(min(wait, BACKOFF_MS[-1]) / 1000)
            return None
        self.tally.fatal.append(f"doctor {self.annotator_id}: HTTP {r.status_code} {err}")
        self.stopping = True
        return None

    def _take(self, res: RatingsResponse, now: float) -> None:
        self._check_versions(self._acknowledge(res, now))
        self._take_window(res)

    def _acknowledge(self, res: RatingsResponse, now: float) -> dict[int, int]:
        """Resolve the pending presses *res* acknowledges; position -> highest version
        reported for it."""
        refused = {r.seq: r for r in res.refused}
        touched: dict[int, int] = {}
        for p in [p for p in self.pending if p.seq <= res.ack]:
            self.pending.remove(p)
            if self.unacked_at.get(p.position) is p:
                del self.unacked_at[p.position]
            p.acked_at = now
            if p.seq in refused:
                p.refused = True
                self.tally.refused.append(
                    f"{p.annotator_id}/{p.position}: {refused[p.seq].message}"
                )
                continue
            v = res.versions.get(str(p.seq))
            if v is None:
                self.tally.version_errors.append(f"{p.annotator_id}/{p.seq}: acked, no version")
                continue
            p.stored_version = v
            self.acked_count[p.position] += 1
            touched[p.position] = max(v, touched.get(p.position, v))
            self.known[p.position] = v
            # The endpoint keeps nothing between requests: a later edit chained onto this
            # one is now made on the version it stored (as the widget rewrites it).
            for q in self.pending:
                if q.after == p.seq:
                    q.after, q.version = None, v
        return touched

    def _check_versions(self, touched: dict[int, int]) -> None:
        for pos, v in touched.items():
            # Each acknowledged press is exactly one stored revision: the slot's version is
            # the version it had when the doctor first saw it plus the presses acknowledged
            # on it. (A chain re-sent after a lost answer is acknowledged with the slot's
            # version now for each of its entries, so only the highest is compared.)
            want = self.first_version.get(pos, 0) + self.acked_count[pos]
            if v != want:
                self.tally.version_errors.append(
                    f"{self.annotator_id}/{pos}: version {v} after "
                    f"{self.acked_count[pos]} acknowledged presses (expected {want})"
                )

    def _take_window(self, res: RatingsResponse) -> None:
        if res.resume:
            self.complete = res.complete or res.start is None
        if res.window:
            held = set(self.order)
            for w in res.window:
                if w.position not in held:
                    self.order.append(w.position)
                    held.add(w.position)
                    self.known.setdefault(w.position, w.version)
                    self.first_version.setdefault(w.position, w.version)
            if res.resume and res.start is not None:
                self.idx = self.order.index(res.start)
        if res.mark is not None:
            self.mark = list(res.mark)
        if res.window_info is not None:
            self.end_of_queue = res.window_info.end_of_queue
        if res.resume or res.window:
            self.need = None

    async def sender(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            if not self.pending and self.need is None:
                if self.stopping:
                    return
                self.wake.clear()
                try:
                    await asyncio.wait_for(self.wake.wait(), timeout=1.0)
                except TimeoutError:
                    pass
                continue
            body: dict = {
                "pending": [p.entry() for p in self.pending[:MAX_BATCH]],
                "need": self.need,
            }
            if self.order:
                body["at"] = self.order[min(self.idx, len(self.order) - 1)]
            if self.mark is not None:
                body["mark"] = self.mark
            res = await self._post(body)
            if res is None:
                if self.stopping and self.tally.fatal:
                    return
                continue
            if res.unavailable:
                await asyncio.sleep(BACKOFF_MS[0] / 1000)
            self._take(res, time.monotonic())

    # ---- the doctor ------------------------------------------------------------------
    def _press(self) -> None:
        now = time.monotonic()
        back = self.idx > 0 and self.rng.random() < self.pace.back_share
        pos = self.order[self.idx - 1] if back else self.order[self.idx]
        if back:
            value = VALUES[1 - VALUES.index(self.last_value.get(pos, VALUES[0]))]
        else:
            value = self.rng.choice(VALUES)
            self.idx += 1
        self.seq += 1
        prior = self.unacked_at.get(pos)
        p = Press(self.annotator_id, self.seq, pos, value, now, int((now - self.last_press) * 1000))
        if prior is not None:
            p.after = prior.seq
        else:
            p.version = self.known.get(pos, 0)
        self.unacked_at[pos] = p
        self.last_value[pos] = value
        self.pending.append(p)
        self.tally.presses.append(p)
        self.presses += 1
        self.last_press = now
        if (
            not self.end_of_queue
            and len(self.order) - self.idx < REFILL_BELOW
            and self.need is None
            and self.order
        ):
            self.need = self.order[-1]
        self.wake.set()

    async def presser(self, stop_at: float) -> None:
        await asyncio.sleep(self.rng.uniform(0, self.pace.pace_s))
        while self.presses < self.max_presses and time.monotonic() < stop_at:
            if self.order and self.idx < len(self.order):
                self._press()
            elif self.complete or (self.end_of_queue and self.idx >= len(self.order)):
                break
            gap = self.pace.pace_s + self.rng.uniform(-self.pace.jitter_s, self.pace.jitter_s)
            await asyncio.sleep(max(0.0, gap))
        self.stopping = True
        self.wake.set()


@dataclass
class Step:
    doctors: int
    start: float
    end: float


@dataclass
class LoadRun:
    tally: Tally
    steps: list[Step]
    wall_s: float
    client_cpu_s: float
    drained: bool


async def _run(
    base_url: str,
    doctors: list[tuple[int, str]],
    steps: list[tuple[int, float]],
    pace: Pace,
    max_presses: int,
    drain_s: float,
    stop_late_share: float | None,
    late_limit_s: float,
    verify: bool,
) -> LoadRun:
    tally = Tally()
    limits = httpx.Limits(max_connections=len(doctors) + 10, max_keepalive_connections=len(doctors))
    cpu0, t0 = time.process_time(), time.monotonic()
    done: list[Step] = []
    async with httpx.AsyncClient(base_url=base_url, limits=limits, verify=verify) as client:
        started: list[Doctor] = []
        tasks: list[asyncio.Task] = []
        pressers: list[asyncio.Task] = []
        total = sum(s for _, s in steps)
        stop_at = t0 + total
        send_deadline = stop_at + drain_s
        for n, seconds in steps:
            s0 = time.monotonic()
            while len(started) < min(n, len(doctors)):
                aid, token = doctors[len(started)]
                d = Doctor(
                    client,
                    aid,
                    token,
                    tally,
                    pace=pace,
                    max_presses=max_presses,
                    seed=aid * 7919 + len(started),
                )
                started.append(d)
                tasks.append(asyncio.create_task(d.sender(send_deadline)))
                pressers.append(asyncio.create_task(d.presser(stop_at)))
            # The step ends after its time, or earlier when every doctor has stopped pressing.
            left = max(0.0, seconds - (time.monotonic() - s0))
            await asyncio.wait(pressers, timeout=left)
            step = Step(len(started), s0, time.monotonic())
            done.append(step)
            if tally.fatal:
                break
            if stop_late_share is not None:
                # Presses of this step still unacknowledged after late_limit_s count as late.
                await asyncio.sleep(late_limit_s)
                # (from one press interval into the step: its new doctors first ask where
                # to resume)
                since = step.start + min(pace.pace_s, (step.end - step.start) / 2)
                share = tally.late_share(since, step.end, late_limit_s, time.monotonic())
                if share > stop_late_share:
                    break
        for d in started:
            d.max_presses = 0  # stop pressing now; senders drain what is pending
            d.stopping = True
            d.wake.set()
        presser_and_sender = asyncio.gather(*pressers, *tasks, return_exceptions=True)
        try:
            results = await asyncio.wait_for(presser_and_sender, timeout=drain_s + 5)
        except TimeoutError:
            results = []
        for r in results:
            if isinstance(r, BaseException):
                tally.fatal.append(repr(r))
    return LoadRun(
        tally=tally,
        steps=done,
        wall_s=time.monotonic() - t0,
        client_cpu_s=time.process_time() - cpu0,
        drained=not tally.unacked(),
    )


def run_load(
    base_url: str,
    doctors: list[tuple[int, str]],
    *,
    steps: list[tuple[int, float]],
    pace: Pace = Pace(),
    max_presses: int = 10**6,
    drain_s: float = 30.0,
    stop_late_share: float | None = None,
    late_limit_s: float = 1.0,
    verify: bool = True,
) -> LoadRun:
    """Drive *doctors* (annotator id, token) against *base_url*.

    *steps*: (doctors active, seconds) in order — the first n of *doctors* press during the
    step (a ramp adds doctors step by step). With *stop_late_share*, the ramp ends after the
    first step in which more than that share of the presses waited over *late_limit_s* for
    their acknowledgement (the 95th percentile crossed it). Each doctor presses at most
    *max_presses* times; after the last step nobody presses and every doctor has *drain_s*
    seconds to get its pending ratings acknowledged.
    """
    coro = _run(
        base_url,
        doctors,
        steps,
        pace,
        max_presses,
        drain_s,
        stop_late_share,
        late_limit_s,
        verify,
    )
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    # Called from a thread that runs a loop already (Playwright's sync API): use another.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


@dataclass
class Audit:
    acknowledged: int
    stored: int
    lost: int
    doubled: int
    unacknowledged: int


def audit(engine, annotator_ids: list[int], tally: Tally) -> Audit:
    """Each slot's stored revisions (in order) against the acknowledged answers (in press
    order). ``lost``: acknowledged answers missing from the store; ``doubled``: stored rows
    beyond what was pressed (a resend stored twice). Presses never acknowledged may or may
    not be stored: they are counted apart and excused from ``doubled``."""
    from sqlalchemy import bindparam, text

    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT a.annotator_id, a.position, r.value FROM ratings r "
                "JOIN assignments a ON a.id = r.assignment_id "
                "WHERE a.annotator_id IN :ids ORDER BY a.annotator_id, a.position, r.revision"
            ).bindparams(bindparam("ids", expanding=True)),
            {"ids": list(annotator_ids)},
        ).all()
    stored: dict[tuple[int, int], list[str]] = defaultdict(list)
    for a, pos, value in rows:
        stored[(a, pos)].append(str(value))
    acked: dict[tuple[int, int], list[str]] = defaultdict(list)
    unacked: dict[tuple[int, int], list[str]] = defaultdict(list)
    for p in sorted(tally.presses, key=lambda p: (p.annotator_id, p.seq)):
        if p.acked_at is None:
            unacked[(p.annotator_id, p.position)].append(p.value)
        elif not p.refused:
            acked[(p.annotator_id, p.position)].append(p.value)
    lost = doubled = 0
    for key in set(stored) | set(acked):
        want, have = acked.get(key, []), stored.get(key, [])
        # the acknowledged answers must be the stored revisions, in order
        common = 0
        while common < min(len(want), len(have)) and want[common] == have[common]:
            common += 1
        lost += len(want) - common
        extra = len(have) - common
        doubled += max(0, extra - len(unacked.get(key, [])))
    return Audit(
        acknowledged=sum(len(v) for v in acked.values()),
        stored=len(rows),
        lost=lost,
        doubled=doubled,
        unacknowledged=sum(len(v) for v in unacked.values()),
    )


def mint_tokens(engine, idents: list) -> list[tuple[int, str]]:
    """A ratings token per identity, minted through the service as the Annotate page does."""
    from medsim_annot.services.people.tokens import mint_token

    return [
        (i.annotator_id, mint_token(i.annotator_id, i.credential_version, engine=engine).token)
        for i in idents
    ]
