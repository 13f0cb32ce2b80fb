"""Queries of the 2 + 1 design: the ratings of one pair, who may get its third
rating, where that slot is served, and the claim that makes it the only one.

Every function takes the caller's open session (the save's own transaction, see
:func:`medsim_annot.services.tiebreak.after_rating`) and returns plain typed values.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sqlalchemy import exc as sa_exc
from sqlalchemy import exists, func, insert, select, update
from sqlalchemy.orm import Session, aliased

from .models import ORDER_GAP, Annotator, Assignment, Item, Rating, Study, Tiebreak

#: The slot kind of a tiebreak slot.
TIEBREAK_KIND = "tiebreak"

#: Built once (see storage.annotation: building an alias per call is slow).
_R_NEWEST = aliased(Rating, name="r_newest")


@dataclass(frozen=True)
class PairRating:
    """The current rating of one (non-duplicate) slot of a pair."""

    annotator_id: int
    value: str
    unclear: bool


@dataclass(frozen=True)
class UpcomingSlot:
    """A slot of an annotator's queue in serving order, for placing a tiebreak slot."""

    order_key: int
    twin: frozenset[str]


def study_design(s: Session, study_id: int) -> tuple[dict, str]:
    """The study's config (parsed) and its scale JSON."""
    row = s.execute(select(Study.config_json, Study.scale_json).where(Study.id == study_id)).one()
    return json.loads(row[0] or "{}"), row[1]


def lock_item(s: Session, item_id: int) -> None:
    """Lock the item's row until the transaction ends (PostgreSQL ``FOR UPDATE``; SQLite
    already serialises writers): of two annotators finishing the same pair at once, the
    second reads the pair's ratings only after the first committed."""
    s.execute(select(Item.id).where(Item.id == item_id).with_for_update())


def pair_ratings(s: Session, item_id: int) -> list[PairRating]:
    """Current ratings of the item's slots, duplicates (second showings) and check slots
    left out: a check pair has a known answer, so a disagreement on it needs no third
    rater (the answers count toward each doctor's accuracy instead)."""
    r2 = _R_NEWEST
    newest = (
        select(func.max(r2.revision))
        .where(r2.assignment_id == Assignment.id)
        .correlate(Assignment)
        .scalar_subquery()
    )
    rows = s.execute(
        select(Assignment.annotator_id, Rating.value, Rating.unclear)
        .join(Rating, (Rating.assignment_id == Assignment.id) & (Rating.revision == newest))
        .where(Assignment.item_id == item_id, Assignment.kind.not_in(("duplicate", "check")))
        .order_by(Assignment.id)
    ).all()
    return [PairRating(int(a), str(v), bool(u)) for a, v, u in rows]


def has_tiebreak(s: Session, item_id: int) -> bool:
    return bool(s.scalar(select(exists().where(Tiebreak.item_id == item_id))))


def holders(s: Session, item_id: int) -> set[int]:
    """Annotators holding any slot of the item."""
    return {
        int(a)
        for a in s.scalars(
            select(Assignment.annotator_id).where(Assignment.item_id == item_id).distinct()
        )
    }


def remaining_work(s: Session, study_id: int) -> dict[int, int]:
    """Unrated slots left per active annotator of the study (0 for a finished queue)."""
    active = [
        int(a)
        for a in s.scalars(
            select(Annotator.id).where(Annotator.study_id == study_id, Annotator.active)
        )
    ]
    counts = dict.fromkeys(active, 0)
    rows = s.execute(
        select(Assignment.annotator_id, func.count())
        .where(
            Assignment.study_id == study_id,
            ~exists().where(Rating.assignment_id == Assignment.id),
            Assignment.withdrawn_at.is_(None),
        )
        .group_by(Assignment.annotator_id)
    ).all()
    for a, n in rows:
        if int(a) in counts:
            counts[int(a)] = int(n)
    return counts


def upcoming(s: Session, annotator_id: int, limit: int) -> list[UpcomingSlot]:
    """The annotator's slots in serving order from their first unrated one (at most
    *limit*; slots withdrawn by the sequential audit are not served, so not counted); empty
    when every slot is rated."""
    start = (
        select(Assignment.order_key)
        .where(
            Assignment.annotator_id == annotator_id,
            Assignment.withdrawn_at.is_(None),
            ~exists().where(Rating.assignment_id == Assignment.id),
        )
        .order_by(Assignment.order_key)
        .limit(1)
        .scalar_subquery()
    )
    rows = s.execute(
        select(Assignment.order_key, Item.term_1, Item.term_2)
        .join(Item, Item.id == Assignment.item_id)
        .where(
            Assignment.annotator_id == annotator_id,
            Assignment.order_key >= start,
            Assignment.withdrawn_at.is_(None),
        )
        .order_by(Assignment.order_key)
        .limit(limit)
    ).all()
    return [UpcomingSlot(int(k), frozenset((t1, t2))) for k, t1, t2 in rows]


def last_slot(s: Session, annotator_id: int) -> tuple[int, int]:
    """(highest position, highest order key) of the queue; (-1, -ORDER_GAP) when empty."""
    pos, key = s.execute(
        select(func.max(Assignment.position), func.max(Assignment.order_key)).where(
            Assignment.annotator_id == annotator_id
        )
    ).one()
    return (-1 if pos is None else int(pos)), (-ORDER_GAP if key is None else int(key))


def twin_key(s: Session, item_id: int) -> frozenset[str]:
    t1, t2 = s.execute(select(Item.term_1, Item.term_2).where(Item.id == item_id)).one()
    return frozenset((t1, t2))


def _conflict(exc: sa_exc.IntegrityError, name: str, columns: str) -> bool:
    text = str(exc.orig).lower()
    return name in text or columns in text


def claim(s: Session, *, study_id: int, item_id: int, annotator_id: int, created_at) -> bool:
    """Record that the item gets its tiebreak from *annotator_id*; ``False`` when another
    transaction claimed the item first (the unique ``item_id``), nothing written."""
    try:
        with s.begin_nested():
            s.execute(
                insert(Tiebreak).values(
                    study_id=study_id,
                    item_id=item_id,
                    annotator_id=annotator_id,
                    created_at=created_at,
                )
            )
    except sa_exc.IntegrityError as exc:
        if _conflict(exc, "uq_tiebreaks_item", "tiebreaks.item_id"):
            return False
        raise
    return True


def add_slot(
    s: Session, *, study_id: int, item_id: int, annotator_id: int, order_key: int
) -> int | None:
    """Append a tiebreak slot to the annotator's queue: the next free position, served at
    *order_key*. Returns its position; ``None`` if a concurrent writer kept taking the next
    position (it is tried a few times)."""
    for _ in range(5):
        pos, _key = last_slot(s, annotator_id)
        try:
            with s.begin_nested():
                res = s.execute(
                    insert(Assignment)
                    .values(
                        study_id=study_id,
                        annotator_id=annotator_id,
                        item_id=item_id,
                        position=pos + 1,
                        order_key=order_key,
                        kind=TIEBREAK_KIND,
                        swapped=False,
                    )
                    .returning(Assignment.id)
                )
                slot_id = int(res.scalar_one())
                s.execute(
                    update(Tiebreak)
                    .where(Tiebreak.item_id == item_id)
                    .values(assignment_id=slot_id)
                )
        except sa_exc.IntegrityError as exc:
            if _conflict(exc, "uq_assignments_position", "assignments.position"):
                continue
            raise
        return pos + 1
    return None


def waiting(s: Session, study_id: int, annotator_id: int) -> int:
    """Pairs of the study that could still bring this annotator a tiebreak slot: fewer than
    two current ratings (duplicates left out), no tiebreak yet, no slot of theirs, and no
    slot withdrawn by the sequential audit (its group stopped). One
    grouped read of the study's ratings (``ratings (study_id, id)``)."""
    rated = (
        select(Rating.item_id, func.count(func.distinct(Rating.assignment_id)).label("n"))
        .join(Assignment, Assignment.id == Rating.assignment_id)
        .where(Rating.study_id == study_id, Assignment.kind != "duplicate")
        .group_by(Rating.item_id)
        .subquery()
    )
    mine, gone = aliased(Assignment), aliased(Assignment)
    return int(
        s.scalar(
            select(func.count())
            .select_from(Item)
            .outerjoin(rated, rated.c.item_id == Item.id)
            .where(
                Item.study_id == study_id,
                func.coalesce(rated.c.n, 0) < 2,
                ~exists().where(Tiebreak.item_id == Item.id),
                ~exists().where(mine.item_id == Item.id, mine.annotator_id == annotator_id),
                ~exists().where(gone.item_id == Item.id, gone.withdrawn_at.is_not(None)),
            )
        )
        or 0
    )
