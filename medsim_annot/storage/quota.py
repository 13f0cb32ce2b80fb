"""The ratings endpoint's quota per annotator (``endpoint_quota``, migration 0017).

One row per annotator holds the current rate window: when it started and how many requests
and rating writes were counted in it. :func:`take` counts and reserves in **one** ``UPDATE``
(the row lock, or SQLite's write lock, is taken by the statement that decides), so two
requests in two processes can never both see room that only one of them may use; the
statement returns what it granted. :func:`give_back` returns the unused part of a grant
(entries refused or already stored). The window is fixed: it starts at the first request
after the previous one ended, so at most ``2 × cap`` can pass in any span of one window's
length (the end of one window and the start of the next).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import case, literal, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from .models import EndpointQuota

Q = EndpointQuota


@dataclass(frozen=True)
class Taken:
    """What :func:`take` counted: ``requests`` in the window (this one included, capped at
    one past the limit), ``granted`` writes reserved for this request, and ``window`` (the
    window's start, for :func:`give_back`)."""

    requests: int
    granted: int
    window: float


def _update(
    annotator_id: int,
    now: float,
    window_s: float,
    requests: int,
    writes: int,
    max_requests: int,
    max_writes: int,
):
    fresh = Q.window_start <= literal(now - window_s)
    base_r = case((fresh, 0), else_=Q.requests)
    base_w = case((fresh, 0), else_=Q.writes)
    room = case((base_w >= max_writes, 0), else_=literal(max_writes) - base_w)
    over = base_r >= max_requests
    # A request past the request limit is granted no writes.
    grant = case((over, 0), (room < writes, room), else_=literal(writes))
    return (
        update(Q)
        .where(Q.annotator_id == annotator_id)
        .values(
            window_start=case((fresh, literal(now)), else_=Q.window_start),
            requests=case((base_r > max_requests, base_r), else_=base_r + requests),
            writes=base_w + grant,
            granted=grant,
        )
        .returning(Q.requests, Q.granted, Q.window_start)
    )


def take(
    s: Session,
    annotator_id: int,
    *,
    now: float,
    window_s: float,
    requests: int,
    writes: int,
    max_requests: int,
    max_writes: int,
) -> Taken:
    """Count *requests* and reserve up to *writes* rating writes for *annotator_id* in the
    current window (a new one when the last started *window_s* or more before *now*), inside
    transaction *s*. One statement decides; the row is created on first use."""
    stmt = _update(annotator_id, now, window_s, requests, writes, max_requests, max_writes)
    row = s.execute(stmt).first()
    if row is None:
        dialect = s.get_bind().dialect.name
        ins = (pg_insert if dialect == "postgresql" else sqlite_insert)(Q).values(
            annotator_id=annotator_id, window_start=now, requests=0, writes=0, granted=0
        )
        s.execute(ins.on_conflict_do_nothing(index_elements=[Q.annotator_id]))
        row = s.execute(stmt).first()
    assert row is not None
    return Taken(requests=int(row[0]), granted=int(row[1]), window=float(row[2]))


def give_back(s: Session, annotator_id: int, window: float, writes: int) -> None:
    """Return *writes* unused writes of a grant made in *window* (nothing when that window
    has ended meanwhile)."""
    if writes <= 0:
        return
    s.execute(
        update(Q)
        .where(Q.annotator_id == annotator_id, Q.window_start == window, Q.writes >= writes)
        .values(writes=Q.writes - writes)
    )


def requests_counted(s: Session, annotator_id: int, *, now: float, window_s: float) -> int:
    """The requests counted in *annotator_id*'s current window (0 when it has ended): a read,
    for refusing a request over the limit before its body is read."""
    row = s.execute(
        select(Q.requests, Q.window_start).where(Q.annotator_id == annotator_id)
    ).first()
    if row is None or float(row[1]) <= now - window_s:
        return 0
    return int(row[0])
