"""Queries of the sequential audit: the ratings of one group, the claim that
stops a group once, withdrawing and restoring its unrated slots.

Every function takes the caller's open session (for the per-rating check: the save's own
transaction, see :func:`medsim_annot.services.stopping.after_rating`) and returns plain typed
values. Slots are never deleted: a withdrawn slot keeps its row with ``withdrawn_at`` set.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

from sqlalchemy import delete, exists, func, insert, select, update
from sqlalchemy import exc as sa_exc
from sqlalchemy.orm import Session, aliased

from .events import detail_json
from .models import Annotator, Assignment, GroupStop, Item, Rating

#: Built once (see storage.annotation: building an alias per call is slow).
_R_NEWEST = aliased(Rating, name="r_newest")


@dataclass(frozen=True)
class GroupRating:
    """The current rating of one (non-duplicate) slot of a pair of a group."""

    group: str
    item_id: int
    auto_label: int | None
    value: str


@dataclass(frozen=True)
class StoppedGroup:
    group: str
    stopped_at: dt.datetime
    detail: dict


@dataclass(frozen=True)
class GroupSlots:
    """Slot counts of one group: pairs, slots still served unrated, slots withdrawn."""

    pairs: int
    open: int
    withdrawn: int


def item_group(s: Session, item_id: int) -> str | None:
    return s.scalar(select(Item.audit_group).where(Item.id == item_id))


def slot_withdrawn(s: Session, assignment_id: int) -> tuple[bool, int]:
    """(whether the slot is withdrawn, its annotator id)."""
    w, a = s.execute(
        select(Assignment.withdrawn_at, Assignment.annotator_id).where(
            Assignment.id == assignment_id
        )
    ).one()
    return w is not None, int(a)


def bump_queue_version(s: Session, annotator_ids) -> None:
    """Make every process recount the total of these annotators' queues."""
    ids = sorted({int(a) for a in annotator_ids})
    if ids:
        s.execute(
            update(Annotator)
            .where(Annotator.id.in_(ids))
            .values(queue_version=Annotator.queue_version + 1)
        )


def _newest():
    r2 = _R_NEWEST
    return (
        select(func.max(r2.revision))
        .where(r2.assignment_id == Assignment.id)
        .correlate(Assignment)
        .scalar_subquery()
    )


def group_ratings(s: Session, study_id: int, group: str | None = None) -> list[GroupRating]:
    """Current ratings of the non-duplicate slots of the study's pairs (of *group* only when
    given), with each pair's group and automatic label."""
    q = (
        select(Item.audit_group, Item.id, Item.auto_label, Rating.value)
        .select_from(Item)
        .join(Assignment, Assignment.item_id == Item.id)
        .join(Rating, (Rating.assignment_id == Assignment.id) & (Rating.revision == _newest()))
        .where(
            Item.study_id == study_id,
            Assignment.kind != "duplicate",
            Item.audit_group.is_not(None) if group is None else Item.audit_group == group,
        )
    )
    return [
        GroupRating(str(g), int(i), None if lab is None else int(lab), str(v))
        for g, i, lab, v in s.execute(q).all()
    ]


def pair_values(s: Session, item_id: int, assignment_id: int) -> tuple[list[str], list[str]]:
    """The current rating values of the pair's non-duplicate slots now, and as they were
    before the newest rating of slot *assignment_id* (its previous revision, or none)."""
    rows = s.execute(
        select(Assignment.id, Rating.value)
        .select_from(Assignment)
        .join(Rating, Rating.assignment_id == Assignment.id)
        .where(Assignment.item_id == item_id, Assignment.kind != "duplicate")
        .order_by(Assignment.id, Rating.revision)
    ).all()
    by_slot: dict[int, list[str]] = {}
    for a, v in rows:
        by_slot.setdefault(int(a), []).append(str(v))
    now = [vs[-1] for vs in by_slot.values()]
    before = [
        vs[-2] if a == assignment_id else vs[-1]
        for a, vs in by_slot.items()
        if a != assignment_id or len(vs) > 1
    ]
    return now, before


def is_stopped(s: Session, study_id: int, group: str) -> bool:
    return bool(
        s.scalar(
            select(exists().where(GroupStop.study_id == study_id, GroupStop.audit_group == group))
        )
    )


def claim_stop(s: Session, *, study_id: int, group: str, at: dt.datetime, detail: dict) -> bool:
    """Record that *group* stopped; ``False`` (nothing written) when it already had, also
    when a concurrent transaction claimed it first (the unique ``(study_id, audit_group)``)."""
    try:
        with s.begin_nested():
            s.execute(
                insert(GroupStop).values(
                    study_id=study_id,
                    audit_group=group,
                    stopped_at=at,
                    detail_json=detail_json(detail),
                )
            )
    except sa_exc.IntegrityError as exc:
        text = str(exc.orig).lower()
        if "uq_group_stops_group" in text or "group_stops.study_id" in text:
            return False
        raise
    return True


def withdraw_group(s: Session, study_id: int, group: str, at: dt.datetime) -> dict[int, int]:
    """Withdraw the group's slots that are neither rated nor withdrawn yet; the number
    withdrawn per annotator."""
    rows = s.execute(
        select(Assignment.id, Assignment.annotator_id)
        .join(Item, Item.id == Assignment.item_id)
        .where(
            Item.study_id == study_id,
            Item.audit_group == group,
            Assignment.withdrawn_at.is_(None),
            ~exists().where(Rating.assignment_id == Assignment.id),
        )
    ).all()
    out: dict[int, int] = {}
    ids = [int(i) for i, _a in rows]
    for k in range(0, len(ids), 500):
        s.execute(
            update(Assignment)
            .where(Assignment.id.in_(ids[k : k + 500]), Assignment.withdrawn_at.is_(None))
            .values(withdrawn_at=at)
        )
    for _i, a in rows:
        out[int(a)] = out.get(int(a), 0) + 1
    return out


def restore_all(s: Session, study_id: int) -> tuple[dict[int, int], list[str]]:
    """Serve every withdrawn slot of the study again and forget its stopped groups: the
    slots restored per annotator and the groups that had stopped."""
    rows = s.execute(
        select(Assignment.annotator_id, func.count())
        .where(Assignment.study_id == study_id, Assignment.withdrawn_at.is_not(None))
        .group_by(Assignment.annotator_id)
    ).all()
    groups = [
        str(g)
        for g in s.scalars(
            select(GroupStop.audit_group)
            .where(GroupStop.study_id == study_id)
            .order_by(GroupStop.audit_group)
        )
    ]
    s.execute(
        update(Assignment)
        .where(Assignment.study_id == study_id, Assignment.withdrawn_at.is_not(None))
        .values(withdrawn_at=None)
    )
    s.execute(delete(GroupStop).where(GroupStop.study_id == study_id))
    return {int(a): int(n) for a, n in rows}, groups


def stopped_groups(s: Session, study_id: int) -> dict[str, StoppedGroup]:
    rows = s.execute(
        select(GroupStop.audit_group, GroupStop.stopped_at, GroupStop.detail_json).where(
            GroupStop.study_id == study_id
        )
    ).all()
    return {str(g): StoppedGroup(str(g), at, json.loads(d or "{}")) for g, at, d in rows}


def group_slots(s: Session, study_id: int) -> dict[str, GroupSlots]:
    """Per group: pairs, unrated slots still served, withdrawn slots (rated or not)."""
    pairs = dict(
        s.execute(
            select(Item.audit_group, func.count())
            .where(Item.study_id == study_id, Item.audit_group.is_not(None))
            .group_by(Item.audit_group)
        ).all()
    )
    unrated = ~exists().where(Rating.assignment_id == Assignment.id)
    served = func.count().filter(Assignment.withdrawn_at.is_(None), unrated)
    gone = func.count().filter(Assignment.withdrawn_at.is_not(None))
    rows = s.execute(
        select(Item.audit_group, served, gone)
        .select_from(Assignment)
        .join(Item, Item.id == Assignment.item_id)
        .where(Assignment.study_id == study_id, Item.audit_group.is_not(None))
        .group_by(Item.audit_group)
    ).all()
    counts = {str(g): (int(o or 0), int(w or 0)) for g, o, w in rows}
    return {
        str(g): GroupSlots(int(n), *counts.get(str(g), (0, 0))) for g, n in sorted(pairs.items())
    }
