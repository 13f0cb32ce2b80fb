"""Engine, sessions, migrations and the retry of transient store errors.

``MEDSIM_DATABASE_URL`` selects the database; the embedded default is
``sqlite:///data/medsim.db`` (relative to the working directory), opened in WAL mode with
foreign keys on and ``synchronous=FULL`` (a committed rating survives power loss). Every
command and the app call :func:`get_engine`, which creates the file and runs the Alembic
migrations up to head on first use, so a fresh URL just works — also when several processes
start at once (migrations are serialised: a PostgreSQL advisory lock, SQLite's write lock).

SQLite waits at most :data:`BUSY_TIMEOUT_MS` for another writer's lock (the one busy timeout of
the project); :func:`with_retry` then retries transient errors (``database is locked``, a
dropped or refused connection, PostgreSQL restarting) with backoff for up to
:data:`RETRY_BUDGET_S` before giving up with :class:`~medsim_annot.errors.StoreUnavailable`.
"""

from __future__ import annotations

import logging
import os
import random
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from sqlalchemy import create_engine, event, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import Session, sessionmaker

from medsim_annot.errors import StoreUnavailable
from medsim_annot.i18n import t

DEFAULT_URL = "sqlite:///data/medsim.db"
#: How long a SQLite connection waits for another connection's write lock before failing with
#: "database is locked" (the only busy timeout; writers hold the lock for milliseconds, and
#: ``study create`` releases it between batches).
BUSY_TIMEOUT_MS = 5000
#: How long (seconds, from the first attempt) a service keeps retrying transient store errors.
RETRY_BUDGET_S = 10.0
#: SQLite's synchronous mode: FULL syncs the WAL on every commit, so an acknowledged rating
#: survives an OS crash or power loss (NORMAL may lose the last commits). Cost: see
#: docs/store.md and benchmarks/bench_annotation.py.
SQLITE_SYNCHRONOUS = "FULL"
#: Busy timeout while waiting for another process's migration (a big backfill can take long).
MIGRATION_BUSY_TIMEOUT_MS = 600_000
_log = logging.getLogger(__name__)
_ENGINES: dict[str, Engine] = {}
_LOCK = threading.Lock()
MIGRATIONS = Path(__file__).parent / "migrations"


def database_url(url: str | None = None) -> str:
    return url or os.environ.get("MEDSIM_DATABASE_URL") or DEFAULT_URL


def _normalise(url: str) -> str:
    # "postgresql://" means psycopg 3 here (psycopg2 is not a dependency).
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def _private_sqlite_file(path: Path) -> None:
    """Create the database's folder 0700 (when it does not exist yet) and the database file
    0600, before SQLite opens it: ratings, comments and access-code
    hashes are nobody else's business on a shared machine. SQLite gives its ``-wal`` and
    ``-shm`` files the database file's permissions. An existing file of ours that others may
    read is tightened to 0600 as well."""
    folder = path.expanduser().parent
    if not folder.exists():
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    target = path.expanduser()
    fd = os.open(target, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        st = os.fstat(fd)
        if st.st_uid == os.getuid() and st.st_mode & 0o077:
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


def _wal(cur, deadline_s: float = MIGRATION_BUSY_TIMEOUT_MS / 1000) -> None:
    """Put the database in WAL mode (persistent: the first connection of a fresh database
    does it, later ones find it done). Switching needs the database to itself, so while other
    processes hold it (ten processes opening a brand-new file at once, one of them migrating
    it) SQLite answers "database is locked" or returns the old mode; wait and try again, as
    the migration itself waits for its lock, instead of failing the first use."""
    deadline = time.monotonic() + deadline_s
    delay = 0.02
    while True:
        try:
            mode = cur.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        except Exception as exc:  # sqlite3.OperationalError: locked / busy
            if not _is_busy(exc) or time.monotonic() > deadline:
                raise
        else:
            if str(mode).lower() in ("wal", "memory"):  # an in-memory database has no WAL
                return
            if time.monotonic() > deadline:
                raise StoreUnavailable(f"could not switch the SQLite database to WAL ({mode})")
        time.sleep(delay * (0.5 + random.random()))
        delay = min(delay * 2, 0.5)


def _is_busy(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "database is locked" in text or "busy" in text


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    _wal(cur)
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute(f"PRAGMA synchronous={SQLITE_SYNCHRONOUS}")
    cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    cur.close()


def get_engine(url: str | None = None) -> Engine:
    """The (cached) engine for *url* or MEDSIM_DATABASE_URL, migrated to the newest schema."""
    key = _normalise(database_url(url))
    with _LOCK:
        engine = _ENGINES.get(key)
        if engine is not None:
            return engine
        if key.startswith("sqlite:///") and key != "sqlite:///:memory:":
            _private_sqlite_file(Path(key[len("sqlite:///") :].split("?", 1)[0]))
        if key.startswith("sqlite"):
            engine = create_engine(
                key,
                connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000},
                hide_parameters=True,
            )
            event.listen(engine, "connect", _sqlite_pragmas)
        else:
            # 20 annotators and the dashboard at once: up to 30 connections per process.
            engine = create_engine(
                key, pool_pre_ping=True, pool_size=10, max_overflow=20, hide_parameters=True
            )
        migrate(engine)
        _ENGINES[key] = engine
        return engine


def _heads() -> set[str]:
    # alembic (~0.3 s) loads when a store is opened, not with this module (CLI start-up)
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return set(ScriptDirectory.from_config(cfg).get_heads())


def _at_head(engine: Engine) -> bool:
    # alembic (~0.3 s) loads when a store is opened, not with this module (CLI start-up)
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return set(MigrationContext.configure(conn).get_current_heads()) == _heads()


def migrate(engine: Engine) -> None:
    """Run the Alembic migrations up to head (idempotent, safe from several processes).

    A store already at head is left alone (no lock taken). Otherwise the upgrade runs in one
    transaction that first takes a lock: ``pg_advisory_xact_lock`` on PostgreSQL, the write
    lock (``BEGIN IMMEDIATE``) on SQLite, so a second process waits, then finds the schema at
    head and does nothing.
    """
    # alembic (~0.3 s) loads when a store is opened, not with this module (CLI start-up)
    from alembic import command
    from alembic.config import Config

    if _at_head(engine):
        return
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    sqlite = engine.dialect.name == "sqlite"
    with engine.connect() as conn:
        if sqlite:
            conn.exec_driver_sql(f"PRAGMA busy_timeout={MIGRATION_BUSY_TIMEOUT_MS}")
            conn.commit()
        try:
            with conn.begin():
                if sqlite:
                    # pysqlite opens transactions lazily (before the first write); an explicit
                    # BEGIN IMMEDIATE takes the write lock now; the commit below ends it.
                    conn.exec_driver_sql("BEGIN IMMEDIATE")
                else:
                    conn.exec_driver_sql("SELECT pg_advisory_xact_lock(4242001)")
                cfg.attributes["connection"] = conn
                command.upgrade(cfg, "head")
        finally:
            if sqlite:
                conn.exec_driver_sql(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
                conn.commit()


def dispose_all() -> None:
    """Forget cached engines (tests switch databases)."""
    with _LOCK:
        for engine in _ENGINES.values():
            engine.dispose()
        _ENGINES.clear()


@contextmanager
def session_scope(engine: Engine | None = None) -> Iterator[Session]:
    """One transaction: commit on success, roll back on any error (nothing half-written)."""
    factory = sessionmaker(bind=engine or get_engine(), expire_on_commit=False)
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


#: What a bulk reader reads from: the engine (a connection of its own, one statement, one
#: snapshot) or the open transaction of :func:`read_snapshot` (with every other read in it).
Source = Engine | Session


@contextmanager
def read_snapshot(engine: Engine) -> Iterator[Session]:
    """One read-only transaction in which every read sees the same state of the database
    (what a gold export reads: pairs, current ratings, decisions and the ratings version).

    PostgreSQL: ``REPEATABLE READ, READ ONLY`` (the ADBC reads join it through an exported
    snapshot, :func:`exported_snapshot`). SQLite: one connection in one deferred ``BEGIN``;
    in WAL mode its first read fixes the snapshot, and writers go on meanwhile. Nothing is
    written: the transaction is rolled back at the end. The session yielded is passed to
    the query functions as any other transaction, and to the bulk readers as their
    :data:`Source`."""
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            conn.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
        outer = conn.begin()
        try:
            if engine.dialect.name == "sqlite":
                # pysqlite begins a transaction only before a write: begin it here, so
                # that every SELECT below reads in it.
                conn.exec_driver_sql("BEGIN")
            session = Session(bind=conn, expire_on_commit=False)
            try:
                yield session
            finally:
                session.close()
        finally:
            outer.rollback()


@contextmanager
def connection_of(source: Source) -> Iterator[Connection]:
    """The connection a bulk read runs on: the transaction's own for a session of
    :func:`read_snapshot` (or :func:`session_scope`), else a new one of the engine."""
    if isinstance(source, Session):
        yield source.connection()
    else:
        with source.connect() as conn:
            yield conn


def engine_of(source: Source) -> Engine:
    """The engine *source* reads from."""
    if isinstance(source, Session):
        return source.get_bind().engine
    return source


_SNAPSHOT_ID = re.compile(r"[0-9A-F]+-[0-9A-F]+(-[0-9A-F]+)?")


def exported_snapshot(s: Session) -> str:
    """The id of the PostgreSQL snapshot of transaction *s* (``pg_export_snapshot``, read
    once per transaction), for another connection to read in the same snapshot."""
    sid = s.info.get("exported_snapshot")
    if sid is None:
        sid = str(s.execute(text("SELECT pg_export_snapshot()")).scalar_one())
        if not _SNAPSHOT_ID.fullmatch(sid):
            raise ValueError(f"unexpected snapshot id {sid!r}")
        s.info["exported_snapshot"] = sid
    return sid


# --------------------------------------------------------------------------- transient errors
_T = TypeVar("_T")
#: PostgreSQL SQLSTATEs worth retrying: connection exceptions (class 08), the server shutting
#: down or starting up, serialization failures and deadlocks.
_TRANSIENT_SQLSTATES = ("08", "57P01", "57P02", "57P03", "40001", "40P01")
_TRANSIENT_MESSAGES = (
    "database is locked",
    "database table is locked",
    "database schema is locked",
    "server closed the connection",
    "terminating connection",
    "connection refused",
    "could not connect",
    "connection is closed",
    "connection timeout",
    "consuming input failed",
    "the database system is starting up",
    "the database system is shutting down",
    "the database system is in recovery mode",
    "ssl syscall",
    "connection reset",
    "broken pipe",
)


def is_transient(exc: BaseException) -> bool:
    """Whether *exc* is a store error that may go away by itself (retrying makes sense)."""
    if isinstance(exc, sa_exc.IntegrityError):
        return False
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return True
    orig = getattr(exc, "orig", None) or exc
    state = getattr(orig, "sqlstate", None) or ""
    if state and state.startswith(_TRANSIENT_SQLSTATES):
        return True
    text = str(orig).lower()
    return any(m in text for m in _TRANSIENT_MESSAGES)


def is_store_error(exc: BaseException) -> bool:
    """A failure of the store itself (not of the request): unreachable, locked, read-only,
    full disk. Constraint violations are the caller's business, not store errors."""
    if isinstance(exc, sa_exc.IntegrityError):
        return False
    return isinstance(exc, (sa_exc.OperationalError, sa_exc.InterfaceError, sa_exc.DatabaseError))


def with_retry(fn: Callable[[], _T], *, budget_s: float | None = None) -> _T:
    """``fn()``, retried with jittered exponential backoff (20 ms doubling to 1 s) while it
    fails with a transient store error, for up to *budget_s* (default
    :data:`RETRY_BUDGET_S`). A store error that persists, or is not transient (read-only file,
    disk full), becomes :class:`StoreUnavailable`; nothing was committed by the failed attempts
    (each attempt is one transaction that rolled back). *fn* must be safe to run again.
    """
    budget = RETRY_BUDGET_S if budget_s is None else budget_s
    start = time.monotonic()
    delay = 0.02
    attempt = 0
    while True:
        attempt += 1
        try:
            return fn()
        except Exception as exc:  # classified below, re-raised otherwise
            if not is_store_error(exc):
                raise
            waited = time.monotonic() - start
            if not is_transient(exc) or waited + delay > budget:
                # The reason only: a statement's parameters are comments, ratings and terms.
                _log.warning(
                    "store unavailable after %d attempt(s): %s: %s",
                    attempt,
                    type(getattr(exc, "orig", None) or exc).__name__,
                    _reason(exc),
                )
                raise StoreUnavailable(
                    t(
                        "the study store is unavailable ({reason}); nothing was saved — try "
                        "again in a moment",
                        reason=_reason(exc),
                    )
                ) from exc
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 1.0)


def _reason(exc: BaseException) -> str:
    """The driver's first line, without the statement or its parameters (SQLAlchemy appends
    both to its own message; the driver's message names neither)."""
    orig = getattr(exc, "orig", None) or exc
    first = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
    return first.split("[SQL:", 1)[0].strip()[:200]
