"""Annotation use cases: an annotator's queue, the pair they may see, saving a rating.

Blinding is enforced here, not in the page: :func:`get_pair` returns a :class:`PairView` that
holds only what an annotator may see (the two terms in the slot's order, the scale and
guideline, this annotator's own current rating of this slot, progress). Auto-labels, dataset,
difficulty, negative strategy, concept ids, the pair id, the slot kind (calibration or
duplicate) and other annotators' ratings never leave this module for an annotator.

Saving is append-only (history is kept; the *current* rating of a slot is its row with the
highest id) and committed before the next position is returned. Re-sending the rating that is
already current (a double key press, a resubmitted form) inserts nothing.

Speed: every call is a handful of indexed queries (``assignments (annotator_id, position)``
and ``ratings (assignment_id, id)``); nothing loads a whole queue. See
``benchmarks/bench_annotation.py``.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass

from sqlalchemy import exists, func, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import aliased

from data_schemas.scales import Scale
from medsim_annot.errors import UsageProblem
from medsim_annot.storage import (
    Annotator,
    Assignment,
    Item,
    Rating,
    Study,
    get_engine,
    session_scope,
)
from medsim_annot.storage.models import utcnow

#: Identical consecutive ratings that trigger the straight-lining reminder (Chiu et al. 2018).
STRAIGHT_LINE_RUN = 10


@dataclass(frozen=True)
class QueueState:
    """Progress of one annotator: slots rated (``done``) of ``total``, and the position of the
    first unrated slot (``None`` when the queue is complete)."""

    done: int
    total: int
    first_unrated: int | None

    @property
    def complete(self) -> bool:
        return self.first_unrated is None


@dataclass(frozen=True)
class PairView:
    """Everything an annotator's screen may show for one slot — and nothing else."""

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

    @property
    def rated(self) -> bool:
        return self.rating is not None


@dataclass(frozen=True)
class SubmitResult:
    """Outcome of :func:`submit_rating`: whether a new row was saved and the position to
    show next (``None`` when the queue is complete). Progress comes with the next
    :func:`get_pair` (computing it here too would double the cost of a key press)."""

    saved: bool
    next_position: int | None


@functools.lru_cache(maxsize=64)
def _scale(scale_json: str) -> Scale:
    return Scale.from_json(scale_json)


def _engine(engine: Engine | None) -> Engine:
    return engine or get_engine()


def _rated(slot_id_col):
    return exists().where(Rating.assignment_id == slot_id_col)


#: Ratings with ids within this distance of the newest one are re-counted on every call: a
#: PostgreSQL transaction may commit a smaller id after a larger one, never this far apart.
_WINDOW = 500
#: (database url, annotator id) -> (study id, total slots, base rating id, done up to base).
_PROGRESS: dict[tuple[str, int], tuple[int, int, int, int]] = {}
_PROGRESS_LOCK = threading.Lock()


def _new_slots(study_id: int, annotator_id: int, lo: int, hi: int | None = None):
    """Count of slots whose first rating by this annotator has an id in (lo, hi], and the
    highest such rating id; reads the ``ratings (study_id, id)`` index from *lo* on."""
    r2 = aliased(Rating)
    earlier = exists().where(r2.assignment_id == Rating.assignment_id, r2.id <= lo)
    cond = [Rating.study_id == study_id, Rating.annotator_id == annotator_id, Rating.id > lo]
    if hi is not None:
        cond.append(Rating.id <= hi)
    return select(
        func.count(func.distinct(Rating.assignment_id)).filter(~earlier), func.max(Rating.id)
    ).where(*cond)


def _progress(s, annotator_id: int, study_id: int) -> tuple[int, int]:
    """(done, total): slots of the queue with at least one rating, and all slots.

    Ratings are append-only and a queue never changes once created, so ``done`` is kept
    incrementally per process: ``done = done(base) + new slots rated after base``, where the
    base trails the newest rating id by :data:`_WINDOW` (late commits of smaller ids are
    still counted). A key press thus reads a few index entries instead of the whole queue;
    the first call for an annotator counts everything once.
    """
    key = (s.get_bind().url.render_as_string(hide_password=True), annotator_id)
    with _PROGRESS_LOCK:
        cached = _PROGRESS.get(key)
    if cached is None or cached[0] != study_id:
        total = (
            s.scalar(
                select(func.count())
                .select_from(Assignment)
                .where(Assignment.annotator_id == annotator_id)
            )
            or 0
        )
        base, base_done = 0, 0
    else:
        _, total, base, base_done = cached
    new, top = s.execute(_new_slots(study_id, annotator_id, base)).one()
    done = base_done + int(new or 0)
    if top is not None and top - base > 2 * _WINDOW:
        new_base = int(top) - _WINDOW
        extra = s.execute(_new_slots(study_id, annotator_id, base, new_base)).one()[0]
        base, base_done = new_base, base_done + int(extra or 0)
    with _PROGRESS_LOCK:
        _PROGRESS[key] = (study_id, int(total), base, base_done)
    return min(done, int(total)), int(total)


def _first_unrated(s, annotator_id: int, after: int = -1) -> int | None:
    # ORDER BY + LIMIT 1 walks the (annotator_id, position) index and stops at the first
    # slot without a rating (a nested-loop anti-join on ratings(assignment_id)); min()
    # would make PostgreSQL hash-join the whole rest of the queue.
    return s.scalar(
        select(Assignment.position)
        .where(
            Assignment.annotator_id == annotator_id,
            Assignment.position > after,
            ~_rated(Assignment.id),
        )
        .order_by(Assignment.position)
        .limit(1)
    )


def _slot(s, annotator_id: int, position: int, *columns) -> tuple:
    """*columns* of the slot at *position* in the annotator's queue (assignment joined with its
    item, study and annotator); refuses a position outside the queue or a revoked annotator."""
    row = s.execute(
        select(Annotator.active, *columns)
        .select_from(Assignment)
        .join(Item, Item.id == Assignment.item_id)
        .join(Study, Study.id == Assignment.study_id)
        .join(Annotator, Annotator.id == Assignment.annotator_id)
        .where(Assignment.annotator_id == annotator_id, Assignment.position == position)
    ).first()
    if row is None:
        raise UsageProblem(f"position {position} is not in this annotator's queue")
    if not row[0]:
        raise UsageProblem("this access code has been revoked; ask the study admin for a new one")
    return tuple(row[1:])


def queue_state(annotator_id: int, *, engine: Engine | None = None) -> QueueState:
    """Done/total and the first unrated position of *annotator_id*'s queue (where a new
    sign-in or a reload resumes). Counts from scratch (and refreshes the incremental count
    that :func:`get_pair` keeps)."""
    with session_scope(_engine(engine)) as s:
        study_id = s.scalar(select(Annotator.study_id).where(Annotator.id == annotator_id))
        if study_id is None:
            raise UsageProblem(f"there is no annotator with id {annotator_id}")
        with _PROGRESS_LOCK:
            _PROGRESS.pop(
                (s.get_bind().url.render_as_string(hide_password=True), annotator_id), None
            )
        done, total = _progress(s, annotator_id, study_id)
        first = _first_unrated(s, annotator_id) if done < total else None
    return QueueState(done, total, first)


def get_pair(annotator_id: int, position: int, *, engine: Engine | None = None) -> PairView:
    """The slot at *position* of *annotator_id*'s queue, blinded (see :class:`PairView`).

    Raises :class:`UsageProblem` for a position outside the queue or a revoked annotator.
    """
    with session_scope(_engine(engine)) as s:
        slot_id, swapped, t1, t2, scale_json, guideline, study_id = _slot(
            s,
            annotator_id,
            position,
            Assignment.id,
            Assignment.swapped,
            Item.term_1,
            Item.term_2,
            Study.scale_json,
            Study.guideline,
            Assignment.study_id,
        )
        latest = s.execute(
            select(Rating.value, Rating.unclear, Rating.comment)
            .where(Rating.assignment_id == slot_id)
            .order_by(Rating.id.desc())
            .limit(1)
        ).first()
        done, total = _progress(s, annotator_id, study_id)
    scale = _scale(scale_json)
    value = scale.canonical(latest[0]) if latest else None
    return PairView(
        position=position,
        total=total,
        done=done,
        term_1=t2 if swapped else t1,
        term_2=t1 if swapped else t2,
        scale=scale,
        guideline=guideline or scale.guideline,
        rating=value,
        unclear=bool(latest[1]) if latest else False,
        comment=(latest[2] or "") if latest else "",
    )


def submit_rating(
    annotator_id: int,
    position: int,
    value,
    unclear: bool = False,
    comment: str = "",
    elapsed_ms: int | None = None,
    *,
    engine: Engine | None = None,
) -> SubmitResult:
    """Save *value* for the slot at *position* and return where to go next.

    The row is committed before this returns. If the slot's current rating already has the
    same value, unclear flag and comment, nothing is inserted (``saved=False``): a double
    press or a resubmitted form never adds a rating. A different answer appends a new row
    (the old one stays in the history). ``elapsed_ms`` (time on the pair) is stored with the
    rating.

    The next position is the first unrated slot after *position*, else the first unrated slot
    from the start (an item skipped earlier), else ``None`` (queue complete).
    """
    comment = (comment or "").strip()
    unclear = bool(unclear)
    if elapsed_ms is not None:
        elapsed_ms = max(0, min(int(elapsed_ms), 2**31 - 1))
    with session_scope(_engine(engine)) as s:
        slot_id, study_id, item_id, scale_json = _slot(
            s,
            annotator_id,
            position,
            Assignment.id,
            Assignment.study_id,
            Assignment.item_id,
            Study.scale_json,
        )
        scale = _scale(scale_json)
        try:
            canon = scale.canonical(value)
        except ValueError as exc:
            raise UsageProblem(str(exc)) from None
        if unclear and not scale.unclear_flag:
            raise UsageProblem(f"the {scale.name} scale has no 'unclear meaning' flag")
        latest = s.execute(
            select(Rating.value, Rating.unclear, Rating.comment)
            .where(Rating.assignment_id == slot_id)
            .order_by(Rating.id.desc())
            .limit(1)
        ).first()
        same = (
            latest is not None
            and Scale._same(scale.canonical(latest[0]), canon)
            and bool(latest[1]) == unclear
            and (latest[2] or "") == comment
        )
        if not same:
            s.add(
                Rating(
                    study_id=study_id,
                    annotator_id=annotator_id,
                    item_id=item_id,
                    assignment_id=slot_id,
                    value=str(Scale.display(canon)),
                    unclear=unclear,
                    comment=comment,
                    rated_at=utcnow(),
                    elapsed_ms=elapsed_ms,
                    source="app",
                )
            )
            s.flush()
        nxt = _first_unrated(s, annotator_id, position)
        if nxt is None:
            nxt = _first_unrated(s, annotator_id)
    return SubmitResult(saved=not same, next_position=nxt)


def straight_line_warning(
    annotator_id: int,
    position: int | None = None,
    *,
    run: int = STRAIGHT_LINE_RUN,
    engine: Engine | None = None,
) -> bool:
    """Whether the *run* slots ending at *position* (in queue order; default: the slot just
    before the first unrated one) all carry the same current rating value.

    Chiu et al. (2018) reminded a rater to pay attention after ten identical consecutive
    ratings; this is the same gentle check (a reminder, never a block).
    """
    with session_scope(_engine(engine)) as s:
        if position is None:
            first = _first_unrated(s, annotator_id)
            if first is None:
                position = s.scalar(
                    select(func.max(Assignment.position)).where(
                        Assignment.annotator_id == annotator_id
                    )
                )
            else:
                position = first - 1
            if position is None or position < 0:
                return False
        latest = (
            select(Rating.assignment_id, func.max(Rating.id).label("rid"))
            .join(Assignment, Assignment.id == Rating.assignment_id)
            .where(
                Assignment.annotator_id == annotator_id,
                Assignment.position.between(position - run + 1, position),
            )
            .group_by(Rating.assignment_id)
            .subquery()
        )
        values = s.scalars(select(Rating.value).join(latest, latest.c.rid == Rating.id)).all()
    return len(values) >= run and len(set(values)) == 1
