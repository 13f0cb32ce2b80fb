"""Backup and restore of the study store (``medsim backup`` / ``medsim restore``).

SQLite (the embedded default): an online backup, consistent while the app is running and
writing, checked with ``PRAGMA integrity_check`` before it is given its name. PostgreSQL:
``pg_dump`` / ``pg_restore`` are the right tools (consistent snapshots, compression); when
they are on PATH the commands run them (the password through the environment, never the
command line), write the archive 0600 under its name only once ``pg_restore --list`` reads
it, and restore in one transaction; otherwise they print a command that works as printed
(docs/deploy.md).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from medsim_annot.errors import UsageProblem
from medsim_annot.storage import backup as store
from medsim_annot.storage import database_url, dispose_all, get_engine


def _pg_command(url: str, action: str, path: Path) -> str:
    """A command that works as printed when pg_dump / pg_restore are not on this machine's
    PATH: the URL without its password (libpq asks for it, or reads PGPASSWORD or
    ~/.pgpass), the file named as given."""
    bare = store.url_without_password(url)
    file, dbname = shlex.quote(str(path)), shlex.quote(bare)
    if action == "backup":
        tool = "pg_dump"
        cmd = f"pg_dump --format=custom --file {file} --dbname {dbname}"
    else:
        tool = "pg_restore"
        cmd = (
            "pg_restore --clean --if-exists --no-owner --single-transaction --exit-on-error "
            f"--dbname {dbname} {file}"
        )
    return (
        f"this store is PostgreSQL and {tool} is not on this machine's PATH; run this where "
        "it is (it asks for the password, or set PGPASSWORD or use ~/.pgpass): "
        f"{cmd} (see docs/deploy.md)"
    )


def _backup_postgres(url: str, out: Path) -> dict:
    if not store.pg_tools_available():
        raise UsageProblem(_pg_command(url, "backup", out))
    try:
        dump = store.backup_postgres(url, out)
    except RuntimeError as exc:
        raise UsageProblem(f"backup of {store.shown_url(url)} failed: {exc}") from None
    engine = get_engine(url)
    studies, ratings = store.store_counts(engine)
    return {
        "out": str(dump.path),
        "bytes": dump.bytes,
        "revision": store.schema_revision(engine),
        "studies": studies,
        "ratings": ratings,
    }


def _restore_postgres(url: str, source: Path, force: bool) -> dict:
    if not store.pg_tools_available():
        raise UsageProblem(_pg_command(url, "restore", source))
    if not source.is_file():
        raise UsageProblem(f"{source}: no such backup file")
    try:
        store.pg_archive_entries(source)
    except RuntimeError:
        raise UsageProblem(f"{source} is not a pg_dump archive (pg_restore --list fails)") from None
    engine = get_engine(url)
    studies, _ = store.store_counts(engine)
    if studies and not force:
        raise UsageProblem(
            f"{store.shown_url(url)} already holds {studies} studies; replace them only when "
            "forced (force)"
        )
    dispose_all()
    try:
        store.restore_postgres(url, source)
    except RuntimeError as exc:
        raise UsageProblem(f"restore into {store.shown_url(url)} failed: {exc}") from None
    dispose_all()
    engine = get_engine(url)  # migrate an older backup to the current schema
    studies, ratings = store.store_counts(engine)
    return {
        "restored": store.shown_url(url),
        "from": str(source),
        "revision": store.schema_revision(engine),
        "studies": studies,
        "ratings": ratings,
    }


def _sqlite_file(url: str, action: str) -> Path:
    path = store.sqlite_path(url)
    if path is None:
        raise UsageProblem(
            f"cannot {action} {store.shown_url(url)}: "
            "only a SQLite file or PostgreSQL (with pg_dump) can be backed up"
        )
    return path


def backup(out: str | Path, *, url: str | None = None, force: bool = False) -> dict:
    """Back up the store of *url* (default MEDSIM_DATABASE_URL) to *out*.

    Returns ``{"out", "bytes", "revision", "studies", "ratings"}``. Refuses to overwrite an
    existing *out* unless *force*.
    """
    url = database_url(url)
    out = Path(out)
    if out.exists() and not force:
        raise UsageProblem(f"{out} exists; choose another file or overwrite it (force)")
    if out.is_dir():
        raise UsageProblem(f"{out} is a folder; give the backup file's name")
    if store.backend_name(url) == "postgresql":
        return _backup_postgres(url, out)
    db = _sqlite_file(url, "backup")
    get_engine(url)  # creates and migrates an empty store rather than copying nothing
    try:
        copy = store.backup_sqlite(db, out)
    except RuntimeError as exc:
        raise UsageProblem(str(exc)) from None
    return {
        "out": str(copy.path),
        "bytes": copy.bytes,
        "revision": copy.revision,
        "studies": copy.studies,
        "ratings": copy.ratings,
    }


def restore(source: str | Path, *, url: str | None = None, force: bool = False) -> dict:
    """Replace the store of *url* with the backup *source* (then migrate it to head).

    Stop the app first. Refuses a file that is not a sound medsim backup, and a store that
    already holds studies unless *force*.
    """
    url = database_url(url)
    source = Path(source)
    if store.backend_name(url) == "postgresql":
        return _restore_postgres(url, source, force)
    db = _sqlite_file(url, "restore")
    if not source.is_file():
        raise UsageProblem(f"{source}: no such backup file")
    try:
        problems = store.integrity_problems(source)
        facts = store.inspect_sqlite(source)
    except Exception as exc:  # sqlite3.DatabaseError: not a database file
        raise UsageProblem(f"{source} is not a SQLite backup ({exc})") from None
    if problems:
        raise UsageProblem(f"{source} fails PRAGMA integrity_check: {'; '.join(problems[:5])}")
    if facts.revision is None:
        raise UsageProblem(f"{source} is not a medsim-annot backup (no schema version)")
    if db.exists() and db.stat().st_size and not force:
        current = store.inspect_sqlite(db)
        if current.studies:
            raise UsageProblem(
                f"{db} already holds {current.studies} studies; replace them only when forced (force)"
            )
    dispose_all()
    holders = store.processes_holding(db)
    if holders:
        raise UsageProblem(
            f"{db} is open in process {', '.join(map(str, holders))} (the app serving it?): "
            "stop the app first (Ctrl-C where `make run` or `streamlit run` runs, or stop its "
            "service), then restore; nothing was changed"
        )
    kept = None
    if db.exists() and db.stat().st_size:
        # The replaced store stays beside it, consistent and checked, until the next restore.
        kept = store.backup_sqlite(db, db.with_name(db.name + ".before-restore")).path
    copy = store.restore_sqlite(source, db)
    get_engine(url)  # migrate an older backup to the current schema
    after = store.inspect_sqlite(db)
    return {
        "restored": str(copy.path),
        "kept": str(kept) if kept else None,
        "from": str(source),
        "revision": after.revision,
        "studies": after.studies,
        "ratings": after.ratings,
    }
