"""The ratings endpoint's limits per annotator, counted and reserved in the store.

Two limits, both per annotator (every token and tab of one annotator shares them) and per
:data:`RATE_WINDOW_S`-second window, held in one row of the store
(:mod:`medsim_annot.storage.quota`), so every app process sees the same count:

- :data:`MAX_REQUESTS_PER_WINDOW` requests of any kind — a script that only asks for pairs,
  or sends bodies that break the contract (:func:`count`), is stopped too. A request over
  the limit is refused before its body is read (:func:`over_limit`, a read); the count
  itself moves with the reservation below, in the same statement (:func:`reserve`), so a
  press costs one write to the store besides its rating;
- :data:`MAX_WRITES_PER_WINDOW` new rating rows (:func:`reserve`): the writes a request may
  make are *reserved* by the same statement that checks the room left, before any is
  written; what a request did not use (entries refused, or resent and already stored) is
  given back (:func:`give_back`). Two requests in parallel, in one process or two, cannot
  both spend the same room.

Not promised: the windows are fixed, not sliding, so up to twice a limit can pass in one
window's length across the boundary of two windows.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from data_schemas.widget import MAX_REQUESTS_PER_WINDOW, MAX_WRITES_PER_WINDOW, RATE_WINDOW_S
from medsim_annot.storage import Transaction
from medsim_annot.storage import quota as store

__all__ = [
    "MAX_REQUESTS_PER_WINDOW",
    "MAX_WRITES_PER_WINDOW",
    "RATE_WINDOW_S",
    "Grant",
    "count",
    "give_back",
    "over_limit",
    "reserve",
]


@dataclass(frozen=True)
class Grant:
    """``allowed``: the request may go on. ``writes``: rating rows it may store.
    ``window``: the window the grant belongs to (for :func:`give_back`)."""

    allowed: bool
    writes: int
    window: float


def _take(s: Transaction, annotator_id: int, requests: int, writes: int) -> Grant:
    taken = store.take(
        s,
        annotator_id,
        now=time.time(),
        window_s=RATE_WINDOW_S,
        requests=requests,
        writes=writes,
        max_requests=MAX_REQUESTS_PER_WINDOW,
        max_writes=MAX_WRITES_PER_WINDOW,
    )
    return Grant(taken.requests <= MAX_REQUESTS_PER_WINDOW, taken.granted, taken.window)


def over_limit(s: Transaction, annotator_id: int) -> bool:
    """Whether *annotator_id* has used up :data:`MAX_REQUESTS_PER_WINDOW` (a read: refused
    before the body is read, at no write to the store)."""
    used = store.requests_counted(s, annotator_id, now=time.time(), window_s=RATE_WINDOW_S)
    return used >= MAX_REQUESTS_PER_WINDOW


def count(s: Transaction, annotator_id: int) -> bool:
    """Count one request that stores nothing (a body refused); whether it is within
    :data:`MAX_REQUESTS_PER_WINDOW`."""
    return _take(s, annotator_id, 1, 0).allowed


def reserve(s: Transaction, annotator_id: int, writes: int) -> Grant:
    """Count one request of *annotator_id* and reserve up to *writes* rating rows for it,
    in one statement inside transaction *s*."""
    return _take(s, annotator_id, 1, writes)


def give_back(s: Transaction, annotator_id: int, grant: Grant, used: int) -> None:
    """Return the writes of *grant* that were not used (``grant.writes - used``)."""
    store.give_back(s, annotator_id, grant.window, grant.writes - used)
