"""Queries of the annotation loop: an annotator's slots with their current rating, progress,
and the versioned insert of a rating.

A slot's *version* is the number of ratings stored for it (0 = none); each rating row carries
its ``revision`` (1, 2, … within the slot) and the unique index
``uq_ratings_assignment_revision`` lets exactly one of several concurrent writers store
revision ``v + 1``: :func:`insert_rating` reports the loser instead of raising, and the
service starts again from a fresh read. Every function takes an open session (one
transaction, the caller's) and returns plain typed values.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import exc as sa_exc
from sqlalchemy import exists, func, insert, or_, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, aliased

from .guidelines import version_in_force
from .models import ORDER_GAP, Annotator, Assignment, Item, Rating, Study


@dataclass(frozen=True)
class CurrentRating:
    """The newest rating of a slot: stored value text, flags and its revision (= version)."""

    value: str
    unclear: bool
    comment: str
    revision: int


@dataclass(frozen=True)
class SlotRow:
    """One slot of an annotator's queue with everything the service needs to decide."""

    position: int
    assignment_id: int
    study_id: int
    item_id: int
    swapped: bool
    term_1: str
    term_2: str
    scale_json: str
    guideline: str
    active: bool
    credential_version: int
    ready: bool
    current: CurrentRating | None

    @property
    def version(self) -> int:
        return self.current.revision if self.current else 0


@dataclass(frozen=True)
class AnnotatorAccess:
    """Who an annotator is for access checks: their study, whether the code is active and the
    credential version sessions must carry."""

    study_id: int
    active: bool
    credential_version: int
    ready: bool


def annotator_access(s: Session, annotator_id: int) -> AnnotatorAccess | None:
    row = s.execute(
        select(Annotator.study_id, Annotator.active, Annotator.credential_version, Study.ready)
        .join(Study, Study.id == Annotator.study_id)
        .where(Annotator.id == annotator_id)
    ).first()
    return AnnotatorAccess(int(row[0]), bool(row[1]), int(row[2]), bool(row[3])) if row else None


# Aliases built once: an aliased entity proxies every column of its table, and building one
# on each call cost more than the key press's queries themselves (a few ms per press).
_A_ORDER = aliased(Assignment, name="a_order")
_R_NEWEST = aliased(Rating, name="r_newest")
_R_EARLIER = aliased(Rating, name="r_earlier")


def _order_of(annotator_id: int, position: int):
    """The serving order key of the slot at *position* (a scalar subquery)."""
    a2 = _A_ORDER
    return (
        select(a2.order_key)
        .where(a2.annotator_id == annotator_id, a2.position == position)
        .scalar_subquery()
    )


def _served(*also):
    """A slot the queue serves: not withdrawn by the sequential audit (or one of *also*:
    rated, or the very slot asked for — a rating may still arrive for a withdrawn one)."""
    return or_(Assignment.withdrawn_at.is_(None), *also)


def slots(s: Session, annotator_id: int, position: int, n: int = 1) -> list[SlotRow]:
    """The slot at *position* and the ones served after it (at most *n*, serving order:
    ``order_key``, see :class:`~medsim_annot.storage.models.Assignment`), each with its
    current rating, in one query (assignment ⋈ item ⋈ study ⋈ annotator ⟕ newest rating).
    Without a slot at *position*, the first slots served after where it would be."""
    r2 = _R_NEWEST
    newest = (
        select(func.max(r2.revision))
        .where(r2.assignment_id == Assignment.id)
        .correlate(Assignment)
        .scalar_subquery()
    )
    rows = s.execute(
        select(
            Assignment.position,
            Assignment.id,
            Assignment.study_id,
            Assignment.item_id,
            Assignment.swapped,
            Item.term_1,
            Item.term_2,
            Study.scale_json,
            Study.guideline,
            Annotator.active,
            Annotator.credential_version,
            Study.ready,
            Rating.value,
            Rating.unclear,
            Rating.comment,
            Rating.revision,
        )
        .select_from(Assignment)
        .join(Item, Item.id == Assignment.item_id)
        .join(Study, Study.id == Assignment.study_id)
        .join(Annotator, Annotator.id == Assignment.annotator_id)
        .outerjoin(Rating, (Rating.assignment_id == Assignment.id) & (Rating.revision == newest))
        .where(
            Assignment.annotator_id == annotator_id,
            Assignment.order_key
            >= func.coalesce(_order_of(annotator_id, position), position * ORDER_GAP),
            _served(Rating.revision.is_not(None), Assignment.position == position),
        )
        .order_by(Assignment.order_key)
        .limit(n)
    ).all()
    out = []
    for r in rows:
        current = (
            CurrentRating(str(r[12]), bool(r[13]), r[14] or "", int(r[15]))
            if r[15] is not None
            else None
        )
        out.append(
            SlotRow(
                position=int(r[0]),
                assignment_id=int(r[1]),
                study_id=int(r[2]),
                item_id=int(r[3]),
                swapped=bool(r[4]),
                term_1=r[5],
                term_2=r[6],
                scale_json=r[7],
                guideline=r[8] or "",
                active=bool(r[9]),
                credential_version=int(r[10]),
                ready=bool(r[11]),
                current=current,
            )
        )
    return out


def insert_rating(
    s: Session,
    slot: SlotRow,
    *,
    annotator_id: int,
    revision: int,
    value: str,
    unclear: bool,
    comment: str,
    rated_at,
    elapsed_ms: int | None,
    source: str = "app",
    browser_ms: int | None = None,
) -> bool:
    """Insert revision *revision* of *slot*'s rating. ``False`` when another writer stored that
    revision first: the transaction is then unusable and the caller must roll it back and
    read again."""
    try:
        s.execute(
            insert(Rating).values(
                study_id=slot.study_id,
                annotator_id=annotator_id,
                item_id=slot.item_id,
                assignment_id=slot.assignment_id,
                revision=revision,
                value=value,
                unclear=unclear,
                comment=comment,
                rated_at=rated_at,
                elapsed_ms=elapsed_ms,
                browser_ms=browser_ms,
                source=source,
                guideline_version=version_in_force(slot.study_id),
            )
        )
    except sa_exc.IntegrityError as exc:
        text = str(exc.orig).lower()
        if "revision" in text or "uq_ratings_assignment_revision" in text:
            return False
        raise
    return True


def insert_ratings(s: Session, rows: Sequence[dict]) -> None:
    """Bulk-insert rating rows (dicts of :class:`Rating` columns, without ``revision``) in list
    order, numbering each slot's ratings after the ones it already has. For imports and the
    demo; the annotation loop uses :func:`insert_rating`."""
    if not rows:
        return
    slot_ids = sorted({int(r["assignment_id"]) for r in rows})
    top: dict[int, int] = {}
    for k in range(0, len(slot_ids), 500):
        chunk = slot_ids[k : k + 500]
        top.update(
            (int(a), int(m))
            for a, m in s.execute(
                select(Rating.assignment_id, func.max(Rating.revision))
                .where(Rating.assignment_id.in_(chunk))
                .group_by(Rating.assignment_id)
            ).all()
        )
    in_force = {
        sid: int(s.scalar(select(version_in_force(sid))) or 1)
        for sid in {int(r["study_id"]) for r in rows}
    }
    numbered = []
    for r in rows:
        a = int(r["assignment_id"])
        top[a] = top.get(a, 0) + 1
        gv = r.get("guideline_version", in_force[int(r["study_id"])])
        numbered.append({**r, "revision": top[a], "guideline_version": gv})
    for k in range(0, len(numbered), 20_000):
        s.execute(insert(Rating), numbered[k : k + 20_000])


def first_unrated(s: Session, annotator_id: int, after: int = -1) -> int | None:
    """Position of the first slot without a rating served after the slot at position *after*
    (``-1``: from the start of the queue), or ``None``."""
    # ORDER BY + LIMIT 1 walks the (annotator_id, position) index and stops at the first
    # slot without a rating (a nested-loop anti-join on ratings(assignment_id)); min()
    # would make PostgreSQL hash-join the whole rest of the queue.
    return s.scalar(
        select(Assignment.position)
        .where(
            Assignment.annotator_id == annotator_id,
            Assignment.order_key
            > (
                func.coalesce(_order_of(annotator_id, after), after * ORDER_GAP)
                if after >= 0
                else -1
            ),
            ~exists().where(Rating.assignment_id == Assignment.id),
            Assignment.withdrawn_at.is_(None),
        )
        .order_by(Assignment.order_key)
        .limit(1)
    )


# --------------------------------------------------------------------------- progress
#: Ratings with ids within this distance of the newest one are re-counted on every call: a
#: PostgreSQL transaction may commit a smaller id after a larger one, never this far apart.
_WINDOW = 500
#: (database url, annotator id) -> (study id, total slots, base rating id, done up to base,
#: queue mark (last position, queue version) when total was counted).
_PROGRESS: dict[tuple[str, int], tuple[int, int, int, int, tuple[int, int]]] = {}
_PROGRESS_LOCK = threading.Lock()


def _url(s: Session) -> str:
    bind = s.get_bind()
    engine = bind if isinstance(bind, Engine) else bind.engine
    return engine.url.render_as_string(hide_password=True)


def _new_slots(study_id: int, annotator_id: int, lo: int, hi: int | None = None):
    """Count of slots whose first rating by this annotator has an id in (lo, hi], and the
    highest such rating id; reads the ``ratings (study_id, id)`` index from *lo* on."""
    r2 = _R_EARLIER
    earlier = exists().where(r2.assignment_id == Rating.assignment_id, r2.id <= lo)
    cond = [Rating.study_id == study_id, Rating.annotator_id == annotator_id, Rating.id > lo]
    if hi is not None:
        cond.append(Rating.id <= hi)
    return select(
        func.count(func.distinct(Rating.assignment_id)).filter(~earlier), func.max(Rating.id)
    ).where(*cond)


def _queue_mark(s: Session, annotator_id: int) -> tuple[int, int]:
    """(last position, queue version): either moves when the queue's total may have (a
    tiebreak slot added; slots withdrawn or restored by the sequential audit)."""
    last = (
        select(func.max(Assignment.position))
        .where(Assignment.annotator_id == annotator_id)
        .scalar_subquery()
    )
    pos, version = s.execute(
        select(last, Annotator.queue_version).where(Annotator.id == annotator_id)
    ).one()
    return (-1 if pos is None else int(pos)), int(version or 0)


def forget_progress(s: Session, annotator_id: int) -> None:
    """Drop the incremental progress count of *annotator_id* (the next call counts afresh)."""
    with _PROGRESS_LOCK:
        _PROGRESS.pop((_url(s), annotator_id), None)


def progress(s: Session, annotator_id: int, study_id: int) -> tuple[int, int]:
    """(done, total): slots of the queue with at least one rating, and all slots (a slot
    withdrawn by the sequential audit counts only once rated).

    Ratings are append-only and a queue only grows (a tiebreak slot of a 2 + 1 study gets a
    new position past the end), so ``done`` is kept
    incrementally per process: ``done = done(base) + new slots rated after base``, where the
    base trails the newest rating id by :data:`_WINDOW` (late commits of smaller ids are
    still counted). ``total`` is recounted whenever the queue's last position or its
    ``queue_version`` moved (one index lookup: any process may have added a tiebreak slot or
    withdrawn slots). A key press thus reads a few
    index entries instead of the whole queue; the first call for an annotator counts
    everything once.
    """
    key = (_url(s), annotator_id)
    with _PROGRESS_LOCK:
        cached = _PROGRESS.get(key)
    last = _queue_mark(s, annotator_id)
    if cached is None or cached[0] != study_id or cached[4] != last:
        total = (
            s.scalar(
                select(func.count())
                .select_from(Assignment)
                .where(
                    Assignment.annotator_id == annotator_id,
                    _served(exists().where(Rating.assignment_id == Assignment.id)),
                )
            )
            or 0
        )
        if cached is not None and cached[0] == study_id:
            base, base_done = cached[2], cached[3]
        else:
            base, base_done = 0, 0
    else:
        _, total, base, base_done, _ = cached
    new, top = s.execute(_new_slots(study_id, annotator_id, base)).one()
    done = base_done + int(new or 0)
    if top is not None and top - base > 2 * _WINDOW:
        new_base = int(top) - _WINDOW
        extra = s.execute(_new_slots(study_id, annotator_id, base, new_base)).one()[0]
        base, base_done = new_base, base_done + int(extra or 0)
    with _PROGRESS_LOCK:
        _PROGRESS[key] = (study_id, int(total), base, base_done, last)
    return min(done, int(total)), int(total)
