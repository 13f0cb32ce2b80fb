"""Engine, sessions and migrations.

``MEDSIM_DATABASE_URL`` selects the database; the embedded default is
``sqlite:///data/medsim.db`` (relative to the working directory), opened in WAL mode with
foreign keys on. Every command and the app call :func:`get_engine`, which creates the file
and runs the Alembic migrations up to head on first use, so a fresh URL just works.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

DEFAULT_URL = "sqlite:///data/medsim.db"
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
    0600, before SQLite opens it (security finding 8): ratings, comments and access-code
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


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA busy_timeout=10000")
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
            engine = create_engine(key, connect_args={"check_same_thread": False, "timeout": 30})
            event.listen(engine, "connect", _sqlite_pragmas)
        else:
            engine = create_engine(key, pool_pre_ping=True, pool_size=5, max_overflow=10)
        migrate(engine)
        _ENGINES[key] = engine
        return engine


def migrate(engine: Engine) -> None:
    """Run the Alembic migrations up to head (idempotent)."""
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            # Serialise concurrent first-use migrations (several processes starting at once).
            conn.exec_driver_sql("SELECT pg_advisory_xact_lock(4242001)")
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


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
