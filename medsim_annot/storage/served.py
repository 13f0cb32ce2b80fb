"""Queries of what the ratings endpoint served (``served_slots``, migration 0016).

Typed functions; :mod:`medsim_annot.services.rating_queue` calls them. A served window is
recorded with one INSERT (one row per slot; a slot served again to the same session keeps its
first time), and a request's ratings are checked with one indexed read of the primary key
``(annotator_id, session_key, position)``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from sqlalchemy import CursorResult, delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from .models import ServedSlot


def record_served(
    s: Session,
    *,
    annotator_id: int,
    session_key: str,
    token_id: int,
    positions: Iterable[int],
    now: dt.datetime,
) -> None:
    """Record that *positions* were served to *session_key* at *now* (one statement; rows
    already there keep their first time)."""
    rows = [
        {
            "annotator_id": annotator_id,
            "session_key": session_key,
            "position": int(p),
            "token_id": token_id,
            "served_at": now,
        }
        for p in dict.fromkeys(positions)
    ]
    if not rows:
        return
    make = pg_insert if s.get_bind().dialect.name == "postgresql" else sqlite_insert
    s.execute(make(ServedSlot).on_conflict_do_nothing(), rows)


def served_at(
    s: Session,
    annotator_id: int,
    wanted: Iterable[tuple[str, int]],
    since: dt.datetime,
) -> dict[tuple[str, int], dt.datetime]:
    """When each (session, position) of *wanted* was first served to *annotator_id*, for
    those served after *since* (one read)."""
    pairs = set(wanted)
    if not pairs:
        return {}
    sessions = {k for k, _ in pairs}
    positions = {p for _, p in pairs}
    rows = s.execute(
        select(ServedSlot.session_key, ServedSlot.position, ServedSlot.served_at).where(
            ServedSlot.annotator_id == annotator_id,
            ServedSlot.session_key.in_(sessions),
            ServedSlot.position.in_(positions),
            ServedSlot.served_at > since,
        )
    ).all()
    return {(k, int(p)): t for k, p, t in rows if (k, int(p)) in pairs}


def sessions_since(s: Session, annotator_id: int, since: dt.datetime) -> list[str]:
    """The sessions *annotator_id* was served anything in after *since*."""
    return sorted(
        s.scalars(
            select(ServedSlot.session_key)
            .where(ServedSlot.annotator_id == annotator_id, ServedSlot.served_at > since)
            .distinct()
        )
    )


def delete_served_before(s: Session, before: dt.datetime) -> int:
    """Delete the record of everything served before *before* (past the kept-list
    lifetime: no rating of those slots is taken any more)."""
    done: CursorResult = s.execute(delete(ServedSlot).where(ServedSlot.served_at < before))  # type: ignore[assignment]
    return int(done.rowcount or 0)
