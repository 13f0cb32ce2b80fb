"""Backups of the embedded SQLite store with SQLite's online backup API.

:func:`backup_sqlite` copies a consistent snapshot of a database that the app may be writing
to at that moment (WAL mode: writers are not blocked; the copy holds every transaction
committed before it started and none half-written). :func:`restore_sqlite` copies a backup
into the store the same way. Both write 0600 files; a backup appears under its name only
once complete and checked (written beside it, then renamed).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import make_url


@dataclass(frozen=True)
class SqliteCopy:
    """What a backup or restore copied: the file written, its size, its Alembic revision and
    the number of studies and ratings it holds."""

    path: Path
    bytes: int
    revision: str | None
    studies: int
    ratings: int


def backend_name(url: str) -> str:
    """``sqlite``, ``postgresql``, ... of a database URL."""
    return make_url(url).get_backend_name()


def shown_url(url: str) -> str:
    """*url* without its password, with the plain ``postgresql://`` scheme for PostgreSQL
    (what pg_dump and psql accept)."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "postgresql":
        parsed = parsed.set(drivername="postgresql")
    return parsed.render_as_string(hide_password=True)


def url_without_password(url: str) -> str:
    """*url* with no password at all (not even a mask), as pg_dump and psql accept it."""
    parsed = make_url(url)._replace(password=None)  # (.set ignores None)
    if parsed.get_backend_name() == "postgresql":
        parsed = parsed.set(drivername="postgresql")
    return parsed.render_as_string(hide_password=False)


def sqlite_path(url: str) -> Path | None:
    """The database file of a SQLite URL; ``None`` for any other database (or in-memory)."""
    parsed = make_url(url)
    if (
        parsed.get_backend_name() != "sqlite"
        or not parsed.database
        or parsed.database == ":memory:"
    ):
        return None
    return Path(parsed.database).expanduser()


def _facts(conn: sqlite3.Connection) -> tuple[str | None, int, int]:
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    revision = (
        conn.execute("SELECT version_num FROM alembic_version").fetchone()
        if "alembic_version" in tables
        else None
    )
    studies = (
        conn.execute("SELECT count(*) FROM studies").fetchone()[0] if "studies" in tables else 0
    )
    ratings = (
        conn.execute("SELECT count(*) FROM ratings").fetchone()[0] if "ratings" in tables else 0
    )
    return (revision[0] if revision else None), int(studies), int(ratings)


def integrity_problems(path: Path) -> list[str]:
    """``PRAGMA integrity_check`` of the database file *path* (empty list: ok)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
    finally:
        conn.close()
    return [] if rows == ["ok"] else rows


def inspect_sqlite(path: Path) -> SqliteCopy:
    """Facts of the SQLite database file *path* (read-only)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        revision, studies, ratings = _facts(conn)
    finally:
        conn.close()
    return SqliteCopy(path, path.stat().st_size, revision, studies, ratings)


def _copy(source: sqlite3.Connection, dest_path: Path) -> None:
    fd = os.open(dest_path, os.O_CREAT | os.O_RDWR, 0o600)
    os.close(fd)
    dest = sqlite3.connect(dest_path)
    try:
        # pages=-1: one step under one read transaction of the source, so the copy is one
        # consistent snapshot even while other connections keep writing.
        source.backup(dest, pages=-1)
        dest.execute("PRAGMA journal_mode=DELETE")  # a backup is a single self-contained file
    finally:
        dest.close()


def backup_sqlite(db: Path, out: Path) -> SqliteCopy:
    """Copy the live database *db* to *out* (0600), checked with ``integrity_check``."""
    out = out.expanduser()
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        source = sqlite3.connect(db, timeout=30)
        try:
            _copy(source, tmp)
        finally:
            source.close()
        problems = integrity_problems(tmp)
        if problems:
            raise RuntimeError(
                "the backup copy fails PRAGMA integrity_check: " + "; ".join(problems[:5])
            )
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return inspect_sqlite(out)


def processes_holding(path: Path) -> list[int]:
    """Other processes that have the database *path* (or its ``-wal`` / ``-shm`` file) open:
    an app server still serving it. Read from Linux's ``/proc`` (processes of other users
    are visible to root only); elsewhere the list is empty."""
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    base = str(path.expanduser().resolve())
    targets = {base, base + "-wal", base + "-shm"}
    me, found = os.getpid(), []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            fds = list((entry / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(fd) in targets:
                    found.append(int(entry.name))
                    break
            except OSError:
                continue
    return sorted(found)


def restore_sqlite(backup: Path, db: Path) -> SqliteCopy:
    """Copy the backup file *backup* over the database *db* (created 0600 if absent)."""
    db = db.expanduser()
    if not db.parent.exists():
        db.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    source = sqlite3.connect(f"file:{backup}?mode=ro", uri=True)
    try:
        fd = os.open(db, os.O_CREAT | os.O_RDWR, 0o600)
        os.close(fd)
        dest = sqlite3.connect(db, timeout=30)
        try:
            source.backup(dest, pages=-1)
            dest.execute("PRAGMA journal_mode=WAL")
        finally:
            dest.close()
    finally:
        source.close()
    return inspect_sqlite(db)


def schema_revision(engine) -> str | None:
    """The Alembic revision a migrated store of any backend is at."""
    with engine.connect() as conn:
        return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


# ------------------------------------------------------------------------------ PostgreSQL
#: libpq environment variables for the URL's parts: the password reaches pg_dump and
#: pg_restore through the environment, never their command line (which `ps` shows).
_PG_ENV = {
    "host": "PGHOST",
    "port": "PGPORT",
    "username": "PGUSER",
    "password": "PGPASSWORD",
    "database": "PGDATABASE",
}
_PG_QUERY_ENV = {
    "sslmode": "PGSSLMODE",
    "sslrootcert": "PGSSLROOTCERT",
    "sslcert": "PGSSLCERT",
    "sslkey": "PGSSLKEY",
    "connect_timeout": "PGCONNECT_TIMEOUT",
    "application_name": "PGAPPNAME",
}


@dataclass(frozen=True)
class PgDump:
    """A pg_dump archive written or restored: its path, size and number of entries."""

    path: Path
    bytes: int
    entries: int


def pg_tools_available() -> bool:
    return shutil.which("pg_dump") is not None and shutil.which("pg_restore") is not None


def pg_env(url: str) -> dict[str, str]:
    """The process environment for pg_dump / pg_restore to reach the store of *url*."""
    parsed = make_url(url)
    env = dict(os.environ)
    for attr, var in _PG_ENV.items():
        value = getattr(parsed, attr)
        if value is not None and value != "":
            env[var] = str(value)
    for key, var in _PG_QUERY_ENV.items():
        if key in parsed.query:
            env[var] = str(parsed.query[key])
    return env


def _run(args: list[str], env: dict[str, str], **kw):
    kw.setdefault("stdout", subprocess.PIPE)
    proc = subprocess.run(args, env=env, stderr=subprocess.PIPE, timeout=24 * 3600, **kw)
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise RuntimeError(f"{args[0]} failed: " + (" / ".join(err[-3:]) or "no message"))
    return proc


def pg_archive_entries(path: Path) -> int:
    """How many entries ``pg_restore --list`` finds in the archive *path* (raises
    RuntimeError when it is not a readable pg_dump archive)."""
    proc = _run(["pg_restore", "--list", str(path)], dict(os.environ))
    lines = proc.stdout.decode("utf-8", "replace").splitlines()
    return sum(1 for line in lines if line.strip() and not line.startswith(";"))


def backup_postgres(url: str, out: Path) -> PgDump:
    """pg_dump the store of *url* to *out* (custom format, 0600), checked with
    ``pg_restore --list`` before it is given its name."""
    out = out.expanduser()
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent)
    tmp = Path(tmp_name)  # mkstemp: 0600
    try:
        with os.fdopen(fd, "wb") as fh:
            _run(["pg_dump", "--format=custom", "--no-password"], pg_env(url), stdout=fh)
        entries = pg_archive_entries(tmp)
        if entries == 0:
            raise RuntimeError("pg_dump wrote an archive without entries")
        os.replace(tmp, out)
        os.chmod(out, 0o600)
    finally:
        tmp.unlink(missing_ok=True)
    return PgDump(out, out.stat().st_size, entries)


def restore_postgres(url: str, source: Path) -> PgDump:
    """pg_restore the archive *source* into the store of *url*: objects of the archive are
    dropped and recreated, all in one transaction (a failure leaves the store as it was)."""
    entries = pg_archive_entries(source)
    _run(
        [
            "pg_restore",
            "--clean",
            "--if-exists",
            "--no-owner",
            "--single-transaction",
            "--exit-on-error",
            "--no-password",
            "--dbname",
            str(make_url(url).database or ""),
            str(source),
        ],
        pg_env(url),
    )
    return PgDump(source, source.stat().st_size, entries)


def store_counts(engine) -> tuple[int, int]:
    """Numbers of studies and ratings in a migrated store of any backend."""
    with engine.connect() as conn:
        studies = conn.execute(text("SELECT count(*) FROM studies")).scalar() or 0
        ratings = conn.execute(text("SELECT count(*) FROM ratings")).scalar() or 0
    return int(studies), int(ratings)
