"""Writing big studies without locking doctors out.

SQLite has one writer at a time: a study of a million slots written in one transaction holds
the write lock for seconds, and every key press meanwhile waits (and fails after the busy
timeout). :func:`insert_in_batches` commits :data:`BATCH_ROWS` rows per transaction, so the
lock is free between batches and a press waits at most one batch. The study stays
``ready = false`` (invisible to annotators) until :func:`mark_ready`; a create that fails
half-way is removed again by :func:`discard_study`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from sqlalchemy import delete, insert, select, update
from sqlalchemy.engine import CursorResult, Engine

from .db import session_scope
from .events import add_event
from .models import Annotator, Assignment, Event, Item, PracticePair, Rating, Study
from .studies import NewItem, QueueSlot, item_rows, queue_rows

#: Rows per transaction when writing a study (a batch holds SQLite's write lock for tens of
#: milliseconds on a quiet machine).
BATCH_ROWS = 5_000


def insert_in_batches(
    engine: Engine,
    model,
    rows: Sequence[dict],
    *,
    batch_rows: int | None = None,
    on_batch: Callable[[int], None] | None = None,
) -> None:
    """Insert *rows* into *model*'s table, one committed transaction per batch."""
    size = batch_rows or BATCH_ROWS
    for k in range(0, len(rows), size):
        chunk = rows[k : k + size]
        with session_scope(engine) as s:
            s.execute(insert(model), list(chunk))
        if on_batch is not None:
            on_batch(len(chunk))


def item_ids(engine: Engine, study_id: int) -> list[int]:
    """Ids of the study's items in position order."""
    with session_scope(engine) as s:
        return list(
            s.scalars(select(Item.id).where(Item.study_id == study_id).order_by(Item.position))
        )


def insert_items(engine: Engine, study_id: int, items: Sequence[NewItem]) -> None:
    """Insert the study's *items* (``position`` 0..n-1), a batch per transaction."""
    insert_in_batches(engine, Item, item_rows(study_id, items))


def insert_queue(
    engine: Engine,
    study_id: int,
    annotator_id: int,
    item_ids: Sequence[int],
    queue: Sequence[QueueSlot],
) -> None:
    """Insert an annotator's whole *queue*, a batch per transaction."""
    insert_in_batches(engine, Assignment, queue_rows(study_id, annotator_id, item_ids, queue))


def mark_ready(
    engine: Engine,
    study_id: int,
    kind: str,
    at: dt.datetime,
    *,
    detail: Mapping[str, Any] | None = None,
) -> None:
    """Make the study visible to annotators and log event *kind*, in one transaction."""
    with session_scope(engine) as s:
        s.execute(update(Study).where(Study.id == study_id).values(ready=True))
        add_event(s, kind, study_id=study_id, at=at, detail=detail)


def discard_study(engine: Engine, study_id: int) -> None:
    """Remove a study that never became ready (a create that failed half-way), in batches."""
    with session_scope(engine) as s:
        ready = s.scalar(select(Study.ready).where(Study.id == study_id))
        rated = s.scalar(select(Rating.id).where(Rating.study_id == study_id).limit(1))
    if ready is None or ready or rated is not None:
        return  # gone already, or complete (never delete a study anyone could use)
    for model in (Assignment, Annotator, Item):
        while True:
            with session_scope(engine) as s:
                ids = select(model.id).where(model.study_id == study_id).limit(BATCH_ROWS)
                done = cast(CursorResult, s.execute(delete(model).where(model.id.in_(ids))))
                n = done.rowcount
            if not n:
                break
    with session_scope(engine) as s:
        s.execute(delete(PracticePair).where(PracticePair.study_id == study_id))
        s.execute(delete(Event).where(Event.study_id == study_id))
        s.execute(delete(Study).where(Study.id == study_id))
