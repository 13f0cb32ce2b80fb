"""The browser's queue of unacknowledged ratings, committed in order.

The annotation widget draws the next pair in the browser and keeps every rating it has not yet
seen acknowledged in an ordered list: each entry carries its slot position, a client sequence
number, the version of the slot's rating the widget showed (``PairView.version``), or — for a
second edit of a slot whose first edit is still unacknowledged — the sequence number of that
earlier edit (``after``), so that the edit is chained onto the version the earlier one stored.

:func:`commit_pending` commits the entries in sequence order through
:func:`medsim_annot.services.annotation.submit_rating` and reports the highest sequence number
up to which every entry is resolved (stored, already stored, or refused). Re-sending an entry
is harmless: the service stores the same answer on the same version once.

- A refusal because the pair was changed in another window (:class:`StaleRating`) is reported
  with the slot's current answer; later edits chained onto a refused entry are refused too.
- A store error (:class:`StoreUnavailable`) stops at that entry: it and
  every later entry stay unacknowledged for the widget to resend.
- A replaced or revoked code (:class:`SessionEnded`) stops everything.

Through the endpoint (:func:`exchange`) every entry must also name a version or an earlier
edit (``after``), and its slot must have been served to the signed-in page session the entry
names (recorded in ``served_slots`` per served window, :data:`KEPT_TTL_S` at most ago):
ratings planted in the browser's storage by someone else, or for a slot never shown, are
refused. The time stored as ``elapsed_ms`` is the browser's figure capped by the server's
time between serving the slot and saving; the browser's own figure is kept in
``browser_ms`` (docs/security.md).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import threading
from dataclasses import asdict, dataclass, field

from data_schemas.limits import MIN_VIEW_MS
from data_schemas.scales import Scale
from data_schemas.widget import (
    BEHIND,
    KEPT_TTL_S,
    MAX_REVISIONS_PER_SLOT,
    RATINGS_PATH,
    WINDOW,
    PracticeState,
    RatingEntry,
    RatingsRequest,
    RatingsResponse,
    Refusal,
    ScaleView,
    WidgetBoot,
    WidgetPair,
    WindowInfo,
)
from medsim_annot import i18n
from medsim_annot.errors import (
    PracticeLocked,
    SessionEnded,
    StaleRating,
    StoreUnavailable,
    UsageProblem,
)
from medsim_annot.i18n import N_, fmt_int, t
from medsim_annot.services import annotation as A
from medsim_annot.services import endpoint_quota
from medsim_annot.services.people import tokens
from medsim_annot.services.practice import gate as practice_gate
from medsim_annot.services.widget_text import number_locale, widget_text
from medsim_annot.storage import Engine, get_engine, session_scope, utcnow, with_retry
from medsim_annot.storage import practice as practice_store
from medsim_annot.storage import served as served_store
from medsim_annot.storage import serving as serving_store

#: Errors that mean "the store cannot be reached": the annotation services retry transient
#: store errors and raise StoreUnavailable for any that remain (see docs/store.md).
STORE_ERRORS: tuple[type[BaseException], ...] = (StoreUnavailable,)
#: Committed sequence numbers remembered per session (for chaining later edits).
LOG_SIZE = 500
#: One commit at a time per annotator in this process: a Streamlit rerun may start while the
#: interrupted one is still inside a save, and both carry the same entries.
_LOCKS: dict[int, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _lock(annotator_id: int) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(annotator_id, threading.Lock())


@dataclass
class CommitOutcome:
    """What :func:`commit_pending` did.

    ``ack``: every entry with a sequence number up to it is resolved. ``versions``: sequence
    number → version stored (or found stored) for it. ``refused``: entries the store refused,
    each ``{seq, position, message, current}`` (``current``: the slot's answer now, or
    ``None``). ``unavailable``: the store failed; entries after ``ack`` wait for a resend.
    ``ended``: the message when the access code was replaced or revoked. ``stored``: new
    rating rows written. ``capped``: the write cap was reached; entries after ``ack`` wait.
    ``locked``: the practice gate closed meanwhile (the doctor was sent back to practice);
    entries after ``ack`` wait until it opens again.
    """

    ack: int
    versions: dict[int, int] = field(default_factory=dict)
    refused: list[dict] = field(default_factory=list)
    unavailable: bool = False
    ended: str | None = None
    stored: int = 0
    capped: bool = False
    locked: bool = False


def _same_answer(entry: RatingEntry, current: dict) -> bool:
    cur = current.get("rating")
    same_value = str(cur) == str(entry.value)
    if not same_value:
        try:
            same_value = float(cur) == float(entry.value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            same_value = False
    return (
        same_value
        and bool(current.get("unclear")) == entry.unclear
        and (current.get("comment") or "").strip() == entry.comment.strip()
    )


def commit_pending(
    annotator_id: int,
    entries: list[RatingEntry],
    *,
    acked: int = 0,
    log: dict[int, int] | None = None,
    credential: int | None = None,
    max_writes: int | None = None,
    served_ms: dict[int, int] | None = None,
    engine: Engine | None = None,
) -> CommitOutcome:
    """Commit *entries* (sequence order) whose sequence number is above *acked*.

    The rules of every rating the widget sends, in one place: the position must be in this
    annotator's queue, the value in the study's scale, the comment within its cap (checked
    by the contract), the pair on screen at least :data:`MIN_VIEW_MS`, the slot under
    :data:`MAX_REVISIONS_PER_SLOT` revisions, the version the one the widget showed (a stale
    tab is refused with the current answer), the credential current. At most *max_writes*
    new rows are written (the session's write cap); the entries after stay unacknowledged.

    *log* (optional) maps sequence numbers committed earlier to the version they stored; it
    is updated in place (and trimmed to :data:`LOG_SIZE`). Entries found in it are
    acknowledged without another save. *served_ms* (the endpoint) maps the sequence number
    of each entry whose slot was served to its session to the milliseconds since: an entry
    not in it is refused, an entry without a version or ``after`` too, and the time stored
    is the smaller of the browser's and the server's (the browser's kept beside it).
    Returns a :class:`CommitOutcome`.
    """
    with _lock(annotator_id):
        return _commit(
            annotator_id,
            entries,
            acked,
            {} if log is None else log,
            credential,
            max_writes,
            served_ms,
            engine,
        )


def _refusal(e: RatingEntry, message: str, current: dict | None = None) -> dict:
    return {"seq": e.seq, "position": e.position, "message": message, "current": current}


NOT_SERVED = N_(
    "this pair was not served to the session this rating was made in (or was served more "
    "than {hours} hours ago), so it is not saved; look at the pair and press again"
)
NO_VERSION = N_(
    "this rating names neither the answer it changes (version) nor an earlier edit (after), "
    "so it is not saved; look at the pair and press again"
)


def _refused_before_saving(
    e: RatingEntry,
    log: dict[int, int],
    out: CommitOutcome,
    refused_seqs: set[int],
    served_ms: dict[int, int] | None,
) -> dict | None:
    """The refusal of *e* that needs no save to decide (through the endpoint: its slot not
    served to its session, or naming no version; pressed too soon after the pair appeared;
    chained onto an edit that was refused or is unknown), or ``None``."""
    if served_ms is not None:
        if e.seq not in served_ms:
            return _refusal(e, t(NOT_SERVED, hours=fmt_int(KEPT_TTL_S // 3600)))
        if e.version is None and e.after is None:
            return _refusal(e, t(NO_VERSION))
    if e.elapsed_ms < MIN_VIEW_MS:
        return _refusal(
            e,
            t(
                "the key was pressed {elapsed} ms after the pair appeared (less than "
                "{minimum} ms); look at the pair and press again",
                elapsed=fmt_int(e.elapsed_ms),
                minimum=fmt_int(MIN_VIEW_MS),
            ),
        )
    if e.after is None:
        return None
    if e.after in refused_seqs:
        prior = next(r for r in out.refused if r["seq"] == e.after)
        return {**prior, "seq": e.seq, "position": e.position}
    if log.get(e.after, out.versions.get(e.after)) is None:
        return _refusal(
            e,
            t(
                "this change could not be matched to the answer it changes; look at the pair "
                "and press again"
            ),
        )
    return None


def _stored_chain(
    e: RatingEntry, current: dict, nxt: dict[int, int], by_seq: dict[int, RatingEntry]
) -> list[RatingEntry]:
    """*e* and the later edits chained onto it, when the slot already holds the last one's
    answer (the chain was stored before and its acknowledgement lost); else ``[]``."""
    chain = [e]
    while chain[-1].seq in nxt and nxt[chain[-1].seq] in by_seq:
        chain.append(by_seq[nxt[chain[-1].seq]])
    return chain if len(chain) > 1 and _same_answer(chain[-1], current) else []


def _commit(
    annotator_id, entries, acked, log, credential, max_writes, served_ms, engine
) -> CommitOutcome:
    todo = sorted((e for e in entries if e.seq > acked), key=lambda e: e.seq)
    out = CommitOutcome(ack=acked)
    by_seq = {e.seq: e for e in todo}
    # The last edit of each chain (entry -> later entries chained onto it).
    nxt: dict[int, int] = {e.after: e.seq for e in todo if e.after is not None}
    refused_seqs: set[int] = set()
    for e in todo:
        if e.seq in log and e.seq not in out.versions:
            out.versions[e.seq] = log[e.seq]
        if e.seq in out.versions or e.seq in refused_seqs:
            out.ack = e.seq
            continue
        refusal = _refused_before_saving(e, log, out, refused_seqs, served_ms)
        if refusal is not None:
            refused_seqs.add(e.seq)
            out.refused.append(refusal)
            out.ack = e.seq
            continue
        expected = e.version if e.after is None else log.get(e.after, out.versions.get(e.after))
        if max_writes is not None and out.stored >= max_writes:
            out.capped = True
            break
        elapsed, browser = e.elapsed_ms, None
        if served_ms is not None:
            elapsed, browser = min(e.elapsed_ms, served_ms[e.seq]), e.elapsed_ms
        try:
            res = A.submit_rating(
                annotator_id,
                e.position,
                e.value,
                unclear=e.unclear,
                comment=e.comment,
                elapsed_ms=elapsed,
                browser_ms=browser,
                expected_version=expected,
                credential=credential,
                max_revisions=MAX_REVISIONS_PER_SLOT,
                want_next=False,
                engine=engine,
            )
        except SessionEnded as exc:
            out.ended = str(exc)
            break
        except StaleRating as exc:
            current = dict(exc.current)
            chain = _stored_chain(e, current, nxt, by_seq)
            if chain:
                # The whole chain was stored before (its acknowledgement was lost): the slot
                # holds the chain's last answer.
                for c in chain:
                    out.versions[c.seq] = int(str(current.get("version") or 0))
                out.ack = e.seq
                continue
            refused_seqs.add(e.seq)
            out.refused.append(_refusal(e, str(exc), current))
            out.ack = e.seq
            continue
        except PracticeLocked:
            out.locked = True
            break
        except UsageProblem as exc:
            refused_seqs.add(e.seq)
            out.refused.append(_refusal(e, str(exc)))
            out.ack = e.seq
            continue
        except STORE_ERRORS:
            out.unavailable = True
            break
        out.versions[e.seq] = int(res.version)
        out.stored += int(res.saved)
        out.ack = e.seq
    log.update(out.versions)
    for k in sorted(log)[: max(0, len(log) - LOG_SIZE)]:
        del log[k]
    return out


TOO_MANY_REQUESTS = N_("too many requests from this session in a short time")


class RateLimitedError(Exception):
    """The annotator made as many requests, or stored as many ratings, as they may in the
    current window (:mod:`medsim_annot.services.endpoint_quota`)."""


def admit(token: str | None, *, engine: Engine | None = None) -> tokens.Grant:
    """Check *token*, and that its annotator is under the request limit, in one short read
    before the body is read (a large body with a bad token costs one indexed read). Raises
    :class:`~medsim_annot.services.people.tokens.TokenRefusedError`,
    :class:`RateLimitedError` or :class:`StoreUnavailable`."""
    eng = engine or get_engine()

    def run() -> tuple[tokens.Grant, bool]:
        with session_scope(eng) as s:
            grant = tokens.check_token(s, token)
            return grant, endpoint_quota.over_limit(s, grant.annotator_id)

    grant, over = with_retry(run)
    if over:
        raise RateLimitedError(t(TOO_MANY_REQUESTS))
    return grant


def count_refused(grant: tokens.Grant, *, engine: Engine | None = None) -> bool:
    """Count a request whose body was refused against the request limit; whether the
    annotator is still within it."""
    eng = engine or get_engine()

    def run() -> bool:
        with session_scope(eng) as s:
            return endpoint_quota.count(s, grant.annotator_id)

    return with_retry(run)


def exchange(
    token: str | None,
    request: RatingsRequest,
    *,
    engine: Engine | None = None,
    grant: tokens.Grant | None = None,
) -> RatingsResponse:
    """One round trip of the ratings endpoint: check *token* (:func:`admit`, unless its
    *grant* is given), count the request and reserve the writes it may make, commit its entries
    (:func:`commit_pending`), give back what was not used, then read the pairs the widget
    needs. Stateless: everything it knows comes from the request and the store, so any
    server process can answer.

    Raises :class:`~medsim_annot.services.people.tokens.TokenRefusedError` (bad, expired or ended
    token; also when the code is replaced midway), :class:`RateLimitedError` (the request
    limit is reached, or the write limit and the request carries ratings),
    :class:`StoreUnavailable` (the token could not be checked) and :class:`UsageProblem` (a
    window that cannot be served). Nothing is stored for any of them but the entries
    committed before a code replaced midway.
    """
    eng = engine or get_engine()
    grant = grant or admit(token, engine=eng)
    aid, credential = grant.annotator_id, grant.credential
    writes = len(request.pending)

    def check() -> tuple[endpoint_quota.Grant, tuple[int, int] | None, bool, dict[int, int]]:
        # One short transaction: the request counted and its writes reserved in the store
        # (one statement), the queue's mark, whether the practice gate keeps the real queue
        # closed, and when the slots of the entries were served to the sessions they name.
        with session_scope(eng) as s:
            now = utcnow()
            quota = endpoint_quota.reserve(s, aid, writes)
            mark = serving_store.queue_mark(s, aid) if request.mark else None
            locked = practice_store.is_locked(s, grant.study_id, aid)
            return quota, mark, locked, _served_ms(s, grant, request, now)

    quota, mark, locked, served_ms = with_retry(check)
    if not quota.allowed:
        raise RateLimitedError(t(TOO_MANY_REQUESTS))
    practice: PracticeState | None = None
    if locked or request.practice is not None:
        try:
            practice = with_retry(lambda: _practice(aid, credential, request, eng))
        except SessionEnded as exc:
            _give_back(aid, quota, 0, eng)
            raise tokens.TokenRefusedError("ended", str(exc)) from None
        if not practice.open:
            # The real queue is closed: nothing real is stored or served; the widget keeps
            # its pending ratings until the gate opens.
            _give_back(aid, quota, 0, eng)
            return RatingsResponse(ack=0, practice=practice)
        # The gate opened with this answer (or earlier): resume the real queue.
        request = request.model_copy(update={"need": -1, "pending": []})
        writes = 0
    if writes and quota.writes <= 0:
        raise RateLimitedError(t("too many ratings from this session in a short time"))
    outcome = CommitOutcome(ack=0)
    if writes:
        outcome = commit_pending(
            aid,
            list(request.pending),
            credential=credential,
            max_writes=quota.writes,
            served_ms=served_ms,
            engine=eng,
        )
    # What was not used (refused, resent and stored before, or not sent on) goes back.
    # Should the commit fail midway, nothing goes back: the room is lost until the window
    # ends, never counted twice.
    if outcome.stored < quota.writes:
        _give_back(aid, quota, outcome.stored, eng)
    if outcome.ended:
        raise tokens.TokenRefusedError("ended", outcome.ended)
    if outcome.locked:
        # Sent back to practice between the check and the saves: the rest waits.
        practice = with_retry(lambda: _practice(aid, credential, RatingsRequest(), eng))
    reply = RatingsResponse(
        ack=outcome.ack,
        versions={str(k): v for k, v in outcome.versions.items()},
        refused=[Refusal.model_validate(r) for r in outcome.refused],
        unavailable=outcome.unavailable or outcome.capped,
        practice=practice,
    )
    if practice is not None and not practice.open:
        return reply
    try:
        return _with_window(grant, request, mark, reply, eng)
    except PracticeLocked:
        closed = with_retry(lambda: _practice(aid, credential, RatingsRequest(), eng))
        return reply.model_copy(update={"practice": closed})
    except SessionEnded as exc:
        raise tokens.TokenRefusedError("ended", str(exc)) from None
    except STORE_ERRORS:
        return reply.model_copy(update={"unavailable": True})


def _give_back(aid: int, quota: endpoint_quota.Grant, used: int, eng: Engine) -> None:
    """Return the unused writes of *quota*; a store error here only costs the annotator room
    until the window ends."""

    def run() -> None:
        with session_scope(eng) as s:
            endpoint_quota.give_back(s, aid, quota, used)

    try:
        with_retry(run)
    except StoreUnavailable:
        pass


def _practice(aid: int, credential: int, request: RatingsRequest, eng: Engine) -> PracticeState:
    """The practice part of an exchange: store the request's practice answer (if any) and
    say where the doctor stands (:mod:`medsim_annot.services.practice.gate`)."""
    feedback = None
    answer = request.practice
    if answer is not None:
        try:
            fb, g = practice_gate.answer(
                aid,
                answer.serial,
                answer.value,
                elapsed_ms=answer.elapsed_ms,
                credential=credential,
                engine=eng,
            )
            feedback = asdict(fb)
        except (SessionEnded, StoreUnavailable):
            raise
        except UsageProblem:
            # The round is over (an admin unlocked the doctor meanwhile) or the answer is
            # out of turn: say where the doctor stands instead.
            g = practice_gate.gate(aid, credential=credential, engine=eng)
    else:
        g = practice_gate.gate(aid, credential=credential, engine=eng)
    pair = asdict(g.next_pair) if g.next_pair is not None else None
    return PracticeState.model_validate(
        {
            "open": g.open,
            "answered": g.answered,
            "needed": g.needed,
            "threshold": g.threshold,
            "exact": g.exact,
            "within_one": g.within_one,
            "pair": pair,
            "feedback": feedback,
        }
    )


def _served_ms(s, grant: tokens.Grant, request: RatingsRequest, now: dt.datetime) -> dict[int, int]:
    """Sequence number → milliseconds since its slot was served to the session the entry
    names (the token's own when it names none), for the entries whose slot was served to
    that session of this annotator within :data:`KEPT_TTL_S` (one indexed read)."""
    if not request.pending:
        return {}
    key = {e.seq: (e.session or grant.session, e.position) for e in request.pending}
    since = now - dt.timedelta(seconds=KEPT_TTL_S)
    when = served_store.served_at(s, grant.annotator_id, key.values(), since)
    return {
        seq: max(0, int((now - when[k]).total_seconds() * 1000))
        for seq, k in key.items()
        if k in when
    }


def _record(grant: tokens.Grant, window: A.Window, eng: Engine) -> None:
    """Record that *window*'s slots were served to the token's session (one insert)."""
    now = utcnow()

    def run() -> None:
        with session_scope(eng) as s:
            served_store.record_served(
                s,
                annotator_id=grant.annotator_id,
                session_key=grant.session,
                token_id=grant.token_id,
                positions=[v.position for v in window.pairs],
                now=now,
            )

    with_retry(run)


def _with_window(
    grant: tokens.Grant,
    request: RatingsRequest,
    mark: tuple[int, int] | None,
    reply: RatingsResponse,
    eng: Engine,
) -> RatingsResponse:
    """*reply* with the pairs the request asks for: ``need = -1`` resumes at the first
    unrated slot; a position sends the stretch from it (before it, with ``back``). When the
    queue moved since the widget's ``mark`` (a slot added by a 2 + 1 tiebreak, slots the
    sequential audit withdrew), the stretch from the pair on screen is sent again in serving
    order (long enough to reach what the widget holds). The slots sent are recorded as served
    to the token's session."""
    aid, credential = grant.annotator_id, grant.credential
    need, back, after = request.need, request.back, WINDOW
    resume = need == -1
    if not resume and request.mark is not None and mark is not None:
        if tuple(mark) != tuple(request.mark):
            if request.at is not None:
                need, back, after = request.at, False, 2 * WINDOW
            else:
                resume = True
    update: dict = {}
    window: A.Window | None = None
    if resume:
        state = resume_state(aid, credential=credential, engine=eng)
        update.update(
            resume=True,
            start=state.first_unrated,
            complete=state.complete,
            waiting=state.waiting,
            done=state.done,
            total=state.total,
        )
        if state.total:
            window = read_window(
                aid,
                state.first_unrated,
                before=BEHIND if state.first_unrated is not None else WINDOW,
                after=WINDOW,
                credential=credential,
                engine=eng,
            )
    elif need is not None:
        window = read_window(
            aid,
            need,
            before=WINDOW if back else BEHIND,
            after=1 if back else after,
            credential=credential,
            engine=eng,
        )
    if window is not None and window.pairs:
        _record(grant, window, eng)
        pairs, info = widget_window(window)
        update.update(
            window=[WidgetPair.model_validate(p) for p in pairs],
            window_info=WindowInfo.model_validate(info),
            mark=tuple(window.queue_mark),
            total=window.pairs[0].total,
            done=update.get("done", window.pairs[0].done),
        )
    return reply.model_copy(update=update)


def session_key(annotator_id: int, study_id: int) -> str:
    """An opaque name for this annotator's browser storage (no id is shown in the page)."""
    return hashlib.sha256(f"medsim-annot:{study_id}:{annotator_id}".encode()).hexdigest()[:16]


def read_window(
    annotator_id: int,
    position: int | None,
    *,
    before: int,
    after: int,
    credential: int | None = None,
    engine: Engine | None = None,
) -> A.Window:
    """The stretch of the queue the widget walks: *before* slots served before *position*,
    it and ``after - 1`` served after it, in serving order (``None``: the last *before*
    slots). See :func:`medsim_annot.services.annotation.serving_window`."""
    return A.serving_window(
        annotator_id, position, before=before, after=after, credential=credential, engine=engine
    )


def queue_end(annotator_id: int, *, engine: Engine | None = None) -> tuple[int, int]:
    """The queue's mark (highest position, queue version); it moves when a tiebreak slot is
    added or the sequential audit withdraws or restores slots."""
    return A.queue_end(annotator_id, engine=engine)


def widget_window(window: A.Window) -> tuple[list[dict], dict]:
    """The window's pairs as the widget gets them (:func:`widget_pair` plus each pair's
    serving index, for "pair N of total") and where the stretch sits in the queue."""
    pairs = [
        {**widget_pair(v), "index": window.first_index + i} for i, v in enumerate(window.pairs)
    ]
    info = {"start_of_queue": window.start_of_queue, "end_of_queue": window.end_of_queue}
    return pairs, info


def widget_pair(view: A.PairView) -> dict:
    """The JSON the widget gets for one slot: exactly what :class:`PairView` exposes about
    it (terms in slot order, the annotator's own current answer and its version, the slot
    position) — no pair id, dataset, label or other annotator's rating."""
    rating = view.rating
    if isinstance(rating, float) and rating.is_integer():
        rating = int(rating)
    return {
        "position": view.position,
        "term_1": view.term_1,
        "term_2": view.term_2,
        "rating": None if rating is None else str(rating),
        "unclear": bool(view.unclear),
        "comment": view.comment or "",
        "version": int(view.version),
    }


def widget_scale(view: A.PairView) -> dict:
    """The scale as the widget draws it: options (value, label, key, description) in order,
    whether the 'unclear meaning' flag exists and the question asked above every pair."""
    return _scale_view(view.scale)


def _scale_view(scale: Scale) -> dict:
    options = []
    for o in scale.options:
        value = o.value
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        options.append(
            {"value": str(value), "label": o.label, "key": o.key, "description": o.description}
        )
    return {
        "name": scale.name,
        "options": options,
        "unclear_flag": bool(scale.unclear_flag),
        "question": scale.asks,
    }


def resume_state(
    annotator_id: int, *, credential: int | None = None, engine: Engine | None = None
) -> A.QueueState:
    """Progress and the first unrated position (where a sign-in or a reload resumes)."""
    return A.queue_state(annotator_id, credential=credential, engine=engine)


@dataclass(frozen=True)
class WidgetSetup:
    """What the Annotate page needs to mount the widget: the scale as the widget draws it,
    the guideline, the queue's length and how much of it is rated."""

    scale: dict
    guideline: str
    total: int
    #: Slots this annotator has rated (0: a first sign-in, shown the guideline).
    done: int = 0


def widget_setup(
    annotator_id: int, *, credential: int | None = None, engine: Engine | None = None
) -> WidgetSetup:
    """The scale, guideline and total of *annotator_id*'s queue (one short read). Raises
    :class:`SessionEnded` for a replaced or revoked code, :class:`UsageProblem` for an empty
    queue or a study still being created."""
    try:
        window = A.serving_window(
            annotator_id, None, before=1, credential=credential, engine=engine
        )
    except PracticeLocked:
        # The practice round comes first: the scale and guideline without a real pair.
        scale, guideline, total = A.queue_setup(annotator_id, credential=credential, engine=engine)
        return WidgetSetup(_scale_view(scale), guideline, total)
    view = window.pairs[0]
    return WidgetSetup(widget_scale(view), view.guideline, view.total, view.done)


def widget_boot(
    annotator_id: int,
    study_id: int,
    setup: WidgetSetup,
    *,
    token: str | None,
    token_serial: int,
    ended: str | None = None,
    session: str | None = None,
    earlier: list[str] | None = None,
    sign_out: bool = False,
) -> dict:
    """The widget's boot data (:class:`~data_schemas.widget.WidgetBoot`, validated) as the
    page hands it over: *session* is the page session its tokens were minted for,
    *earlier* this annotator's other recent sessions (:func:`earlier_sessions`), *sign_out*
    that the doctor asked to sign out. Its texts are in the current language
    (:func:`medsim_annot.i18n.current_language`: the page's)."""
    lang = i18n.current_language()
    text, practice_text = widget_text(lang)
    return WidgetBoot(
        who=session_key(annotator_id, study_id),
        endpoint=RATINGS_PATH,
        token=token,
        token_serial=token_serial,
        scale=ScaleView.model_validate(setup.scale),
        total=setup.total,
        ended=ended,
        session=session,
        earlier=list(earlier or []),
        sign_out=sign_out,
        text=text,
        practice_text=practice_text,
        lang=lang,
        dir="rtl" if i18n.direction(lang) == "rtl" else "ltr",
        locale=number_locale(lang),
    ).model_dump(mode="json")


def earlier_sessions(
    annotator_id: int, session: str | None, *, engine: Engine | None = None
) -> list[str]:
    """The other page sessions of *annotator_id* that were served slots in the last
    :data:`KEPT_TTL_S` seconds: ratings kept in a browser from one of them may still be
    sent (after the doctor confirms); kept lists naming any other session are discarded
    unsent."""
    since = utcnow() - dt.timedelta(seconds=KEPT_TTL_S)

    def run() -> list[str]:
        with session_scope(engine or get_engine()) as s:
            return served_store.sessions_since(s, annotator_id, since)

    return [k for k in with_retry(run) if k != session]
