"""Annotation use cases: an annotator's queue, the pair they may see, saving a rating.

Blinding is enforced here, not in the page: :func:`get_pair` returns a :class:`PairView` that
holds only what an annotator may see (the two terms in the slot's order, the scale and
guideline, this annotator's own current rating of this slot and its version, progress).
Auto-labels, dataset, difficulty, negative strategy, concept ids, the pair id, the slot kind
(calibration or duplicate) and other annotators' ratings never leave this module for an
annotator.

The practice gate is enforced here too: while an annotator of a study with practice pairs
has not passed the practice round (nor been unlocked by an admin), no real pair is served
and no real rating stored (:class:`~medsim_annot.errors.PracticeLocked`; see
:mod:`medsim_annot.services.practice`).

Saving is append-only (history is kept; the *current* rating of a slot is its newest row) and
committed before :func:`submit_rating` returns ("saved" means committed: see
docs/store.md for what survives a crash). A save may carry the slot's version the page
showed (``expected_version``): it is stored only if nobody changed the slot since, so a stale
tab can never overwrite an answer it did not show; re-sending the answer that is already
current inserts nothing — also when several requests race (the store's unique
``(assignment_id, revision)`` index decides, see :mod:`medsim_annot.storage.annotation`).
Transient store errors are retried with backoff; a store that stays unavailable raises
:class:`~medsim_annot.errors.StoreUnavailable` (nothing saved; the caller keeps the answer).

Speed: every call is a handful of indexed queries (``assignments (annotator_id, position)``,
``assignments (annotator_id, order_key)`` for serving order and ``ratings (assignment_id,
revision)``); nothing loads a whole queue. See
``benchmarks/bench_annotation.py`` and ``benchmarks/bench_concurrency.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from data_schemas.limits import COMMENT_MAX_CHARS
from data_schemas.scales import Scale, scale_from_json
from medsim_annot.errors import PracticeLocked, SessionEnded, StaleRating, UsageProblem
from medsim_annot.i18n import N_, fmt_int, t
from medsim_annot.services import stopping, tiebreak
from medsim_annot.storage import Engine, get_engine, session_scope, utcnow, with_retry
from medsim_annot.storage import annotation as store
from medsim_annot.storage import practice as practice_store
from medsim_annot.storage import serving as serving_store

#: Most pairs :func:`get_window` returns at once.
WINDOW_MAX = 200


@dataclass(frozen=True)
class QueueState:
    """Progress of one annotator: slots rated (``done``) of ``total``, and the position of the
    first unrated slot (``None`` when the queue is complete). ``waiting``: in a 2 + 1 study
    with a complete queue, the pairs that could still bring this annotator a tiebreak slot
    (others have not rated them yet) — "come back later" rather than "done"."""

    done: int
    total: int
    first_unrated: int | None
    waiting: int = 0

    @property
    def complete(self) -> bool:
        return self.first_unrated is None


@dataclass(frozen=True)
class PairView:
    """Everything an annotator's screen may show for one slot — and nothing else.

    ``version`` is the number of ratings this annotator has stored for the slot (0 = none);
    a save sends it back as ``expected_version``.
    """

    position: int
    total: int
    done: int
    term_1: str
    term_2: str
    scale: Scale
    guideline: str
    rating: str | float | None
    unclear: bool
    comment: str
    version: int = 0

    @property
    def rated(self) -> bool:
        return self.rating is not None


@dataclass(frozen=True)
class SubmitResult:
    """Outcome of :func:`submit_rating`: whether a new row was saved, the position to show
    next (``None`` when the queue is complete) and the slot's version after the save.
    Progress comes with the next :func:`get_pair` (computing it here too would double the
    cost of a key press)."""

    saved: bool
    next_position: int | None
    version: int = 0


def _engine(engine: Engine | None) -> Engine:
    return engine or get_engine()


_REVOKED = N_("this access code has been revoked; ask the study admin for a new one")
_REPLACED = N_(
    "this session has ended: the access code was replaced or revoked — sign in again "
    "(ask the study admin for a new code if needed)"
)


def _check_access(active: bool, version: int, ready: bool, credential: int | None) -> None:
    if not active:
        raise SessionEnded(t(_REVOKED))
    if credential is not None and int(credential) != version:
        raise SessionEnded(t(_REPLACED))
    if not ready:
        raise UsageProblem(t("this study is still being created; try again in a minute"))


#: Why nothing real is served while the practice gate is closed.
PRACTICE_FIRST = N_(
    "practice first: the real pairs open after the practice round (or when the study "
    "admin unlocks you)"
)


def _check_gate(s, annotator_id: int, study_id: int) -> None:
    """Refuse (:class:`PracticeLocked`) while *annotator_id* has not met the practice gate of
    a study with practice pairs (see :mod:`medsim_annot.services.practice`)."""
    if practice_store.is_locked(s, study_id, annotator_id):
        raise PracticeLocked(t(PRACTICE_FIRST))


def _slot(s, annotator_id: int, position: int, credential: int | None) -> store.SlotRow:
    """The slot at *position* (with its current rating); refuses a position outside the
    queue, a revoked annotator or an ended session."""
    rows = store.slots(s, annotator_id, position, 1)
    if not rows or rows[0].position != position:
        if credential is not None:
            access = store.annotator_access(s, annotator_id)
            if access is not None:
                _check_access(access.active, access.credential_version, True, credential)
        raise UsageProblem(
            t("position {position} is not in this annotator's queue", position=position)
        )
    row = rows[0]
    _check_access(row.active, row.credential_version, row.ready, credential)
    _check_gate(s, annotator_id, row.study_id)
    return row


def _view(row: store.SlotRow, done: int, total: int) -> PairView:
    scale = scale_from_json(row.scale_json)
    cur = row.current
    return PairView(
        position=row.position,
        total=total,
        done=done,
        term_1=row.term_2 if row.swapped else row.term_1,
        term_2=row.term_1 if row.swapped else row.term_2,
        scale=scale,
        guideline=row.guideline or scale.guideline,
        rating=scale.canonical(cur.value) if cur else None,
        unclear=cur.unclear if cur else False,
        comment=cur.comment if cur else "",
        version=row.version,
    )


def queue_state(
    annotator_id: int, *, credential: int | None = None, engine: Engine | None = None
) -> QueueState:
    """Done/total and the first unrated position of *annotator_id*'s queue (where a new
    sign-in or a reload resumes). Counts from scratch (and refreshes the incremental count
    that :func:`get_pair` keeps). With *credential*, a revoked or replaced code raises
    :class:`SessionEnded`."""

    def run() -> QueueState:
        with session_scope(_engine(engine)) as s:
            access = store.annotator_access(s, annotator_id)
            if access is None:
                raise UsageProblem(f"there is no annotator with id {annotator_id}")
            if credential is not None:
                _check_access(access.active, access.credential_version, access.ready, credential)
            store.forget_progress(s, annotator_id)
            done, total = store.progress(s, annotator_id, access.study_id)
            first = store.first_unrated(s, annotator_id) if done < total else None
            waiting = (
                tiebreak.waiting(s, study_id=access.study_id, annotator_id=annotator_id)
                if first is None
                else 0
            )
        return QueueState(done, total, first, waiting)

    return with_retry(run)


def queue_setup(
    annotator_id: int, *, credential: int | None = None, engine: Engine | None = None
) -> tuple[Scale, str, int]:
    """The scale, guideline and queue length of *annotator_id*'s study, without serving a
    pair: what the annotation widget needs to start while the practice gate is closed.
    Raises like :func:`queue_state`."""

    def run() -> tuple[Scale, str, int]:
        with session_scope(_engine(engine)) as s:
            access = store.annotator_access(s, annotator_id)
            if access is None:
                raise UsageProblem(f"there is no annotator with id {annotator_id}")
            _check_access(access.active, access.credential_version, access.ready, credential)
            scale_json, _, guideline = practice_store.study_setup(s, access.study_id)
            _, total = store.progress(s, annotator_id, access.study_id)
        scale = scale_from_json(scale_json)
        return scale, guideline or scale.guideline, total

    return with_retry(run)


def get_pair(
    annotator_id: int,
    position: int,
    *,
    credential: int | None = None,
    engine: Engine | None = None,
) -> PairView:
    """The slot at *position* of *annotator_id*'s queue, blinded (see :class:`PairView`).

    Raises :class:`UsageProblem` for a position outside the queue, :class:`SessionEnded` for
    a revoked annotator or (with *credential*) a replaced code.
    """

    def run() -> PairView:
        with session_scope(_engine(engine)) as s:
            row = _slot(s, annotator_id, position, credential)
            done, total = store.progress(s, annotator_id, row.study_id)
        return _view(row, done, total)

    return with_retry(run)


def get_window(
    annotator_id: int,
    position: int,
    n: int,
    *,
    credential: int | None = None,
    engine: Engine | None = None,
) -> list[PairView]:
    """The slot at *position* and the next ``n - 1`` slots in queue order (fewer at the end
    of the queue), blinded, read in one query — what the annotation widget keeps ahead of
    the doctor so the next pair is drawn in the same frame as the key press.

    Raises like :func:`get_pair`; ``n`` must be between 1 and :data:`WINDOW_MAX`.
    """
    if not 1 <= int(n) <= WINDOW_MAX:
        raise UsageProblem(f"a window holds 1 to {WINDOW_MAX} pairs, not {n}")

    def run() -> list[PairView]:
        with session_scope(_engine(engine)) as s:
            rows = store.slots(s, annotator_id, position, int(n))
            if not rows or rows[0].position != position:
                _slot(s, annotator_id, position, credential)  # raises the right problem
            first = rows[0]
            _check_access(first.active, first.credential_version, first.ready, credential)
            _check_gate(s, annotator_id, first.study_id)
            done, total = store.progress(s, annotator_id, first.study_id)
        return [_view(r, done, total) for r in rows]

    return with_retry(run)


@dataclass(frozen=True)
class Window:
    """A stretch of an annotator's queue in serving order (what the annotation widget walks).

    ``pairs``: blinded slots in serving order, contiguous. ``first_index``: the serving index
    (0-based) of ``pairs[0]``. ``start_of_queue`` / ``end_of_queue``: nothing is served
    before the first / after the last pair. ``last_position``: the queue's highest position,
    which moves whenever a slot is added (a 2 + 1 tiebreak), so a caller can tell the queue
    grew. ``queue_mark``: (highest position, queue version), which also moves when the
    sequential audit withdraws or restores slots (:func:`queue_end`)."""

    pairs: list[PairView]
    first_index: int
    start_of_queue: bool
    end_of_queue: bool
    last_position: int
    queue_mark: tuple[int, int]


def serving_window(
    annotator_id: int,
    position: int | None,
    *,
    before: int = 0,
    after: int = 1,
    credential: int | None = None,
    engine: Engine | None = None,
) -> Window:
    """The *before* slots served just before the slot at *position*, that slot and the
    ``after - 1`` slots served after it, in serving order (``order_key``), blinded, with
    where the stretch sits in the queue. ``position=None``: the last *before* slots of the
    queue (``after`` is ignored). Three indexed reads; see :class:`Window`.

    Raises like :func:`get_pair`; *before* must be 0 to :data:`WINDOW_MAX` and *after* 1 to
    :data:`WINDOW_MAX`.
    """
    if not 0 <= int(before) <= WINDOW_MAX or not 1 <= int(after) <= WINDOW_MAX:
        raise UsageProblem(f"a window holds 1 to {WINDOW_MAX} pairs each side")
    if position is None and int(before) < 1:
        raise UsageProblem("the end of the queue needs a window of at least one pair")

    def run() -> Window:
        with session_scope(_engine(engine)) as s:
            prior = serving_store.positions_before(s, annotator_id, position, int(before))
            if position is None:
                if not prior:
                    raise UsageProblem("this annotator's queue is empty")
                start, n = prior[-1], len(prior)
            else:
                start, n = (prior[-1] if prior else position), len(prior) + int(after)
            rows = store.slots(s, annotator_id, start, n + 1)
            if not rows or rows[0].position != start:
                _slot(s, annotator_id, start, credential)  # raises the right problem
            if position is not None and not any(r.position == position for r in rows):
                _slot(s, annotator_id, position, credential)
            first = rows[0]
            _check_access(first.active, first.credential_version, first.ready, credential)
            _check_gate(s, annotator_id, first.study_id)
            index = serving_store.served_before(s, annotator_id, start)
            mark = serving_store.queue_mark(s, annotator_id)
            done, total = store.progress(s, annotator_id, first.study_id)
        return Window(
            pairs=[_view(r, done, total) for r in rows[:n]],
            first_index=index,
            start_of_queue=index == 0,
            end_of_queue=len(rows) <= n,
            last_position=mark[0],
            queue_mark=mark,
        )

    return with_retry(run)


def queue_end(annotator_id: int, *, engine: Engine | None = None) -> tuple[int, int]:
    """*annotator_id*'s queue mark (highest position, queue version; two index lookups): when
    it moves, a slot was added (a 2 + 1 tiebreak) or slots were withdrawn or restored (the
    sequential audit), and a window the browser holds may be out of date."""

    def run() -> tuple[int, int]:
        with session_scope(_engine(engine)) as s:
            return serving_store.queue_mark(s, annotator_id)

    return with_retry(run)


def _may_change(
    row: store.SlotRow, scale: Scale, expected_version: int | None, max_revisions: int | None
) -> None:
    """Refuse a new answer for *row*: :class:`StaleRating` (with the current answer) when the
    slot moved past *expected_version*, :class:`UsageProblem` when it already has
    *max_revisions* ratings."""
    cur, version = row.current, row.version
    if expected_version is not None and version != expected_version:
        raise StaleRating(
            current={
                "rating": scale.canonical(cur.value) if cur else None,
                "unclear": cur.unclear if cur else False,
                "comment": cur.comment if cur else "",
                "version": version,
            }
        )
    if max_revisions is not None and version >= max_revisions:
        raise UsageProblem(
            t(
                "this pair's answer has been changed {n} times, the most allowed; ask the "
                "study admin if it must change again",
                n=fmt_int(version),
            )
        )


class _LostRaceError(Exception):
    """Another writer stored the revision this attempt wanted: read again and decide again."""


def submit_rating(
    annotator_id: int,
    position: int,
    value,
    unclear: bool = False,
    comment: str = "",
    elapsed_ms: int | None = None,
    *,
    browser_ms: int | None = None,
    expected_version: int | None = None,
    credential: int | None = None,
    max_revisions: int | None = None,
    want_next: bool = True,
    engine: Engine | None = None,
) -> SubmitResult:
    """Save *value* for the slot at *position* and return where to go next.

    The row is committed before this returns. If the slot's current rating already has the
    same value, unclear flag and comment, nothing is inserted (``saved=False``): a double
    press or a resubmitted form never adds a rating, even when the copies arrive at the same
    instant. A different answer appends a new row (the old one stays in the history).
    ``elapsed_ms`` (time on the pair) is stored with the rating; *browser_ms* (the ratings
    endpoint: the browser's own figure, when ``elapsed_ms`` is the server's bound) beside it.

    *expected_version* is the slot's version the page showed (:attr:`PairView.version`). When
    given, the answer is stored only if the slot still has that version; if another window
    changed it meanwhile, the save is refused with :class:`StaleRating` (carrying the current
    answer) unless the current answer is this very one (then ``saved=False``). ``None`` saves
    unchecked (the CLI, imports). With *credential*, a revoked or replaced code raises
    :class:`SessionEnded`. A comment longer than ``COMMENT_MAX_CHARS`` is refused, and so is
    a new answer for a slot that already has *max_revisions* ratings (the annotation
    widget's cap; ``None``: no cap). A store that stays unavailable raises
    :class:`StoreUnavailable` (nothing saved).

    The next position is the first unrated slot after *position*, else the first unrated slot
    from the start (an item skipped earlier), else ``None`` (queue complete). A caller that
    walks the queue itself (the annotation widget) passes ``want_next=False`` and gets
    ``None`` without the extra read.
    """
    comment = (comment or "").strip()
    if len(comment) > COMMENT_MAX_CHARS:
        raise UsageProblem(
            t(
                "a comment may have at most {limit} characters, not {n}",
                # Plain digits: the command line shows this message too (2000, not 2,000).
                limit=COMMENT_MAX_CHARS,
                n=len(comment),
            )
        )
    unclear = bool(unclear)
    if expected_version is not None:
        if isinstance(expected_version, bool) or int(expected_version) < 0:
            raise UsageProblem(f"expected_version must be 0 or more, not {expected_version!r}")
        expected_version = int(expected_version)
    if elapsed_ms is not None:
        elapsed_ms = max(0, min(int(elapsed_ms), 2**31 - 1))
    if browser_ms is not None:
        browser_ms = max(0, min(int(browser_ms), 2**31 - 1))

    def attempt() -> SubmitResult:
        with session_scope(_engine(engine)) as s:
            row = _slot(s, annotator_id, position, credential)
            scale = scale_from_json(row.scale_json)
            try:
                canon = scale.canonical(value)
            except ValueError as exc:
                raise UsageProblem(str(exc)) from None
            if unclear and not scale.unclear_flag:
                raise UsageProblem(
                    t("the {scale} scale has no 'unclear meaning' flag", scale=scale.name)
                )
            cur = row.current
            version = row.version
            same = (
                cur is not None
                and Scale._same(scale.canonical(cur.value), canon)
                and cur.unclear == unclear
                and cur.comment == comment
            )
            if not same:
                _may_change(row, scale, expected_version, max_revisions)
                stored = store.insert_rating(
                    s,
                    row,
                    annotator_id=annotator_id,
                    revision=version + 1,
                    value=str(Scale.display(canon)),
                    unclear=unclear,
                    comment=comment,
                    rated_at=utcnow(),
                    elapsed_ms=elapsed_ms,
                    browser_ms=browser_ms,
                )
                if not stored:
                    raise _LostRaceError
                version += 1
                # 2 + 1 designs: a third rater for a pair whose two ratings disagree, in this
                # same transaction (see services/tiebreak.py).
                tiebreak.after_rating(s, study_id=row.study_id, item_id=row.item_id)
                # Sequential audit: a group whose estimate is tight stops being served
                # (see services/stopping.py).
                stopping.after_rating(
                    s,
                    study_id=row.study_id,
                    item_id=row.item_id,
                    assignment_id=row.assignment_id,
                )
        return SubmitResult(saved=not same, next_position=None, version=version)

    def next_position() -> int | None:
        # After the commit, in a read of its own: the write lock (SQLite) is held only for
        # the insert itself.
        with session_scope(_engine(engine)) as s:
            nxt = store.first_unrated(s, annotator_id, position)
            return store.first_unrated(s, annotator_id) if nxt is None else nxt

    while True:
        try:
            done = with_retry(attempt)
            break
        except _LostRaceError:
            continue  # the winner's row is committed now: the next read sees it
    if not want_next:
        return done
    return SubmitResult(done.saved, with_retry(next_position), done.version)
