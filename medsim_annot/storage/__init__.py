"""The study store: the only package that speaks SQL. Services call its functions.

What is public here is the plumbing a service needs to run a use case: the engine
(:func:`get_engine`, :class:`Engine`), one transaction (:func:`session_scope`, typed as
:data:`Transaction`), retries of transient errors (:func:`with_retry`) and the clock
(:func:`utcnow`). The query modules (:mod:`.studies`, :mod:`.annotation`, :mod:`.events`,
...) hold the reads and writes. The table classes (:mod:`.models`) are not exported: a
caller outside this package gets plain values (ids, tuples, dicts, NumPy columns) and never
builds or reads a row object.

One convention for transactions: **services own the transaction, storage queries take it.**
A use case opens ``with session_scope(engine) as s:`` and passes ``s`` to every query it
makes, so what one use case writes commits or rolls back together. The exceptions take the
engine, for a stated reason: :mod:`.bulk` commits a big study in batches (so annotators keep
rating meanwhile), the bulk readers of :mod:`.studies` stream whole columns on a connection
of their own, the credential checks of :mod:`.credentials` run on every annotator request
as a use case of one statement, and :func:`.events.record_event` appends a lone event (an
export) after the file is written. A read that must see one state of the database across
several queries (a gold export) runs them all in :func:`read_snapshot`; the bulk readers take
its session in place of the engine.
"""

from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session as _Session

from . import events  # registers the hook that names each event's actor
from .db import (
    Source,
    database_url,
    dispose_all,
    engine_of,
    get_engine,
    migrate,
    read_snapshot,
    session_scope,
    with_retry,
)
from .models import ORDER_GAP, utcnow

#: The open transaction of :func:`session_scope`; services hold it only to pass it on to
#: the query functions.
Transaction = _Session

__all__ = [
    "ORDER_GAP",
    "Engine",
    "Source",
    "Transaction",
    "database_url",
    "dispose_all",
    "engine_of",
    "events",
    "get_engine",
    "migrate",
    "read_snapshot",
    "session_scope",
    "utcnow",
    "with_retry",
]
