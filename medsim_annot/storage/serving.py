"""Queries of an annotator's queue in serving order (``assignments.order_key``, then nothing
else: keys are unique per annotator) around one slot: the slots served just before it, how
many are served before it, and where the queue ends.

A slot's position is its identity and never changes; a 2 + 1 tiebreak slot gets a new
position past the end of the queue and an order key among the next few pairs (see
:mod:`medsim_annot.storage.tiebreak`), so "before" and "after" here are serving order, not
position order. Every query walks the ``ix_assignments_annotator_order (annotator_id,
order_key)`` index. Every function takes an open session and returns plain values.
"""

from __future__ import annotations

from sqlalchemy import exists, func, select
from sqlalchemy.orm import Session

from .annotation import _order_of, _queue_mark, _served
from .models import Assignment, Rating


def _listed():
    """A slot the queue lists: served (not withdrawn by the sequential audit) or rated (a
    rating that arrived for a withdrawn slot keeps it in the doctor's history)."""
    return _served(exists().where(Rating.assignment_id == Assignment.id))


def positions_before(s: Session, annotator_id: int, position: int | None, n: int) -> list[int]:
    """Positions of the at most *n* slots served just before the slot at *position* (``None``:
    the last *n* slots of the queue), nearest first. Empty when *position* is not a slot of
    this annotator or nothing is served before it."""
    query = select(Assignment.position).where(Assignment.annotator_id == annotator_id, _listed())
    if position is not None:
        query = query.where(Assignment.order_key < _order_of(annotator_id, position))
    return [int(p) for p in s.scalars(query.order_by(Assignment.order_key.desc()).limit(n))]


def served_before(s: Session, annotator_id: int, position: int) -> int:
    """How many slots are served before the slot at *position* (its 0-based serving index)."""
    return int(
        s.scalar(
            select(func.count())
            .select_from(Assignment)
            .where(
                Assignment.annotator_id == annotator_id,
                Assignment.order_key < _order_of(annotator_id, position),
                _listed(),
            )
        )
        or 0
    )


def queue_mark(s: Session, annotator_id: int) -> tuple[int, int]:
    """(highest position, queue version): moves whenever the queue's stretch may have changed
    (a 2 + 1 tiebreak slot added; slots withdrawn or restored by the sequential audit)."""
    return _queue_mark(s, annotator_id)
