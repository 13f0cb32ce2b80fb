"""Guessing is slowed and seen: failed sign-ins counted per client, per target and overall.

Each kind of secret (``admin`` passwords, annotator access ``code``\\ s) has its own
:class:`Throttle`. Three counts, each over the last :attr:`Policy.window_s` seconds:

* **per client** (its address): after a few free failures the client waits an increasing
  delay (doubling, capped), timed from its own last failure, before its next attempt is even
  checked; after :attr:`Policy.lockout_after` failures it is locked out for
  :attr:`Policy.lockout_s`;
* **overall** (every client together): past :attr:`Policy.free_overall` failures, a client
  with failures of its own also waits the overall delay — timed from *its own* last failure,
  so guessing from other addresses cannot keep pushing a doctor's wait forward;
* **per target** (an admin name; for access codes the kind as a whole, since a code names
  nobody): once a target has :attr:`Policy.target_lockout_after` failures (the overall
  count for codes, :attr:`Policy.free_overall`), it is *under attack*, and a client with
  :attr:`Policy.attack_tries` or more failures of its own may not try it until the oldest of
  them leaves the window. A **clean** client (fewer failures) is still checked: the right
  secret from a doctor who mistyped once passes.

So an attacker rotating addresses gets at most :attr:`Policy.attack_tries` guesses per
address (IPv6: per /64) per window while a target is under attack, and a doctor with one
typo waits at most the capped overall delay after it. A success clears the client's
failures. Every failure writes one log line (kind, client, counts, wait) and never the
secret that was tried; an admin name is stored only as a hash.

A client is its address; IPv6 addresses count per /64 (one subscriber's prefix, which an
attacker can fill with addresses at will), IPv4-mapped IPv6 addresses as the IPv4 address.

With an engine (the app always passes one) the failures live in the store, so every app
process counts the same ones and a lockout holds whichever server a client reaches; without
one they live in this process (the command line, unit tests).
"""

from __future__ import annotations

import functools
import hashlib
import ipaddress
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from medsim_annot.i18n import fmt_int, tn
from medsim_annot.storage import Engine, with_retry
from medsim_annot.storage import signins as store

log = logging.getLogger("medsim_annot.signin")


class ThrottledError(Exception):
    """Too many failed attempts: try again after ``retry_after`` seconds."""

    def __init__(self, retry_after: float, *, locked: bool = False, busy: bool = False):
        self.retry_after = max(0.0, float(retry_after))
        self.locked = locked
        wait = math.ceil(self.retry_after)
        values = {"n": fmt_int(wait)}
        if busy:
            text = tn(
                "too many sign-ins at once; try again in {n} second",
                "too many sign-ins at once; try again in {n} seconds",
                wait,
                **values,
            )
        elif locked:
            text = tn(
                "too many failed sign-ins: temporarily locked; try again in {n} second",
                "too many failed sign-ins: temporarily locked; try again in {n} seconds",
                wait,
                **values,
            )
        else:
            text = tn(
                "too many failed sign-ins: slowed down; try again in {n} second",
                "too many failed sign-ins: slowed down; try again in {n} seconds",
                wait,
                **values,
            )
        super().__init__(text)


@dataclass(frozen=True)
class Policy:
    free_per_client: int = 3  # failures before any delay
    base_delay_s: float = 1.0  # first delay, doubled with each further failure
    max_delay_s: float = 60.0
    lockout_after: int = 10  # failures of one client -> lockout
    lockout_s: float = 900.0
    free_overall: int = 50  # failures of all clients together before the overall delay
    max_overall_delay_s: float = 30.0
    window_s: float = 900.0  # failures older than this no longer count
    target_lockout_after: int = 20  # failures against one admin name -> under attack
    attack_tries: int = 2  # own failures that keep a client from a target under attack


def client_key(client: str) -> str:
    """The key failures are counted under: an IPv4 address, an IPv6 /64, or *client* as is.

    >>> client_key("2001:db8:1:2:aaaa::1"), client_key("::ffff:10.0.0.7"), client_key("local")
    ('2001:db8:1:2::/64', '10.0.0.7', 'local')
    """
    text = (client or "").strip()
    try:
        ip = ipaddress.ip_address(text.strip("[]").split("%", 1)[0])
    except ValueError:
        return text[:100] or "unknown"
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def _add(engine: Engine, kind: str, key: str, now: float, forget_before: float) -> None:
    store.add_failure(engine, kind, key, now, forget_before=forget_before)


def _delay(n: int, free: int, base: float, cap: float) -> float:
    if n < free:
        return 0.0
    return min(cap, base * 2.0 ** (n - free))


class _Memory:
    """Failures of one kind kept in this process (no engine)."""

    def __init__(self) -> None:
        self.times: dict[str, list[float]] = {}
        self.lock = threading.Lock()

    def client_times(self, client: str, since: float) -> list[float]:
        with self.lock:
            return [t for t in self.times.get(client, ()) if t >= since]

    def overall(self, since: float) -> tuple[int, float | None]:
        with self.lock:
            recent = [t for ts in self.times.values() for t in ts if t >= since]
        return len(recent), (max(recent) if recent else None)

    def add(self, client: str, at: float, forget_before: float) -> None:
        with self.lock:
            for key in list(self.times):
                kept = [t for t in self.times[key] if t >= forget_before]
                if kept:
                    self.times[key] = kept
                else:
                    del self.times[key]
            self.times.setdefault(client, []).append(at)

    def clear(self, client: str | None = None) -> None:
        """Forget *client*'s failures (they keep counting overall), or every failure."""
        with self.lock:
            if client is None:
                self.times.clear()
            elif client in self.times:
                self.times.setdefault("", []).extend(self.times.pop(client))


@dataclass(frozen=True)
class _State:
    failures: int  # the client's failures within the window
    overall: int  # every client's failures within the window
    not_before: float  # the client may try again from then
    locked_until: float


def target_kind(kind: str, target: str | None) -> str | None:
    """The kind a target's failures are stored under (a hash of the name: the log and the
    store never hold a name someone typed), ``None`` without a target."""
    if target is None:
        return None
    return f"{kind[:5]}@" + hashlib.sha256(target.encode()).hexdigest()[:12]


@dataclass
class Throttle:
    """Failure counts of one kind of secret, per client, per target and overall (thread-
    and, with an engine, process-safe)."""

    kind: str
    policy: Policy = field(default_factory=Policy)
    clock: Callable[[], float] = time.time
    _memories: dict[str, _Memory] = field(default_factory=dict, init=False, repr=False)
    _guard: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def _memory(self) -> _Memory:
        return self._memory_of(self.kind)

    def _memory_of(self, kind: str) -> _Memory:
        with self._guard:
            return self._memories.setdefault(kind, _Memory())

    def _overall(self, kind: str, since: float, engine: Engine | None) -> tuple[int, float | None]:
        if engine is None:
            return self._memory_of(kind).overall(since)
        return with_retry(lambda: store.overall_failures(engine, kind, since))

    def _state(
        self, key: str, now: float, engine: Engine | None, target: str | None = None
    ) -> _State:
        p = self.policy
        since = now - p.window_s
        horizon = now - p.window_s - p.lockout_s
        if engine is None:
            times = self._memory.client_times(key, horizon)
        else:
            times = with_retry(lambda: store.client_failure_times(engine, self.kind, key, horizon))
        n_all, _last_all = self._overall(self.kind, since, engine)
        recent = [t for t in times if t >= since]
        locked_until = 0.0
        for i, t in enumerate(times):  # locked from each failure that made lockout_after
            if sum(1 for u in times[: i + 1] if u >= t - p.window_s) >= p.lockout_after:
                locked_until = max(locked_until, t + p.lockout_s)
        not_before = 0.0
        if recent:
            own_last = recent[-1]
            not_before = own_last + _delay(
                len(recent), p.free_per_client, p.base_delay_s, p.max_delay_s
            )
            # The overall delay: only for clients who failed too, timed from their own
            # last failure (others' guessing cannot push it forward).
            overall = _delay(n_all, p.free_overall, 1.0, p.max_overall_delay_s)
            not_before = max(not_before, own_last + overall)
            if len(recent) >= p.attack_tries and self._under_attack(n_all, since, engine, target):
                locked_until = max(locked_until, recent[-p.attack_tries] + p.window_s)
        return _State(len(recent), n_all, not_before, locked_until)

    def _under_attack(
        self, n_all: int, since: float, engine: Engine | None, target: str | None
    ) -> bool:
        if n_all >= self.policy.free_overall:
            return True
        tkind = target_kind(self.kind, target)
        if tkind is None:
            return False
        return self._overall(tkind, since, engine)[0] >= self.policy.target_lockout_after

    def check(
        self, client: str, *, target: str | None = None, engine: Engine | None = None
    ) -> None:
        """Raise :class:`ThrottledError` if *client* may not try now (before checking a
        secret); *target*: the admin name tried (``None`` for access codes)."""
        now = self.clock()
        state = self._state(client_key(client), now, engine, target)
        if state.locked_until > now:
            raise ThrottledError(state.locked_until - now, locked=True)
        if state.not_before > now:
            raise ThrottledError(state.not_before - now)

    def failure(
        self,
        client: str,
        *,
        target: str | None = None,
        detail: str = "",
        engine: Engine | None = None,
    ) -> float:
        """Count a failed attempt of *client* (against *target*, an admin name); log it;
        return the wait before the next one."""
        p = self.policy
        key = client_key(client)
        now = self.clock()
        forget_before = now - p.window_s - p.lockout_s
        kinds = [k for k in (self.kind, target_kind(self.kind, target)) if k is not None]
        for kind in kinds:
            if engine is None:
                self._memory_of(kind).add(key, now, forget_before)
            else:
                with_retry(functools.partial(_add, engine, kind, key, now, forget_before))
        state = self._state(key, now, engine, target)
        wait = max(state.not_before, state.locked_until) - now
        locked = state.locked_until > now
        log.warning(
            "failed %s sign-in: client=%s failures_client=%d failures_overall=%d wait_s=%.0f%s%s",
            self.kind,
            key,
            state.failures,
            state.overall,
            max(wait, 0.0),
            " locked" if locked else "",
            f" {detail}" if detail else "",
        )
        return max(wait, 0.0)

    def success(self, client: str, *, engine: Engine | None = None) -> None:
        """A correct secret: forget *client*'s failures (the overall count stays)."""
        key = client_key(client)
        if engine is None:
            self._memory.clear(key)
        else:
            with_retry(lambda: store.clear_client(engine, self.kind, key))

    def failures(self, client: str | None = None, *, engine: Engine | None = None) -> int:
        """Failures counted for *client* (or overall) in the current window."""
        now = self.clock()
        since = now - self.policy.window_s
        if client is None:
            if engine is None:
                return self._memory.overall(since)[0]
            return store.overall_failures(engine, self.kind, since)[0]
        key = client_key(client)
        if engine is None:
            return len(self._memory.client_times(key, since))
        return len(store.client_failure_times(engine, self.kind, key, since))

    def reset(self, *, engine: Engine | None = None) -> None:
        if engine is None:
            with self._guard:
                self._memories.clear()
        else:
            store.clear_kind(engine, self.kind)
            store.clear_targets(engine, self.kind[:5] + "@")


ADMIN_SIGNINS = Throttle("admin")
CODE_SIGNINS = Throttle("access-code")
