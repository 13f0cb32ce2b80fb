"""Backup and restore of the study store (``medsim backup`` / ``medsim restore``).

SQLite (the embedded default): an online backup, consistent while the app is running and
writing, checked with ``PRAGMA integrity_check`` before it is given its name. PostgreSQL:
``pg_dump`` / ``pg_restore`` are the right tools (consistent snapshots, compression, parallel
restore); the commands check the URL and say exactly what to run (docs/deploy.md).
"""

from __future__ import annotations

from pathlib import Path

from medsim_annot.errors import UsageProblem
from medsim_annot.storage import backup as store
from medsim_annot.storage import database_url, dispose_all, get_engine


def _pg_hint(url: str, action: str) -> str:
    shown = store.shown_url(url)
    if action == "backup":
        return (
            "this store is PostgreSQL: back it up with pg_dump, e.g. "
            f"pg_dump --format=custom --file medsim.dump '{shown}' (see docs/deploy.md)"
        )
    return (
        "this store is PostgreSQL: restore a pg_dump backup with pg_restore, e.g. "
        f"pg_restore --clean --if-exists --dbname '{shown}' medsim.dump (see docs/deploy.md)"
    )


def _sqlite_file(url: str, action: str) -> Path:
    backend = store.backend_name(url)
    if backend == "postgresql":
        raise UsageProblem(_pg_hint(url, action))
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
    db = _sqlite_file(url, "backup")
    out = Path(out)
    if out.exists() and not force:
        raise UsageProblem(f"{out} exists; choose another file or pass --force")
    if out.is_dir():
        raise UsageProblem(f"{out} is a folder; give the backup file's name")
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
    db = _sqlite_file(url, "restore")
    source = Path(source)
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
                f"{db} already holds {current.studies} studies; pass --force to replace them"
            )
    dispose_all()
    copy = store.restore_sqlite(source, db)
    get_engine(url)  # migrate an older backup to the current schema
    after = store.inspect_sqlite(db)
    return {
        "restored": str(copy.path),
        "from": str(source),
        "revision": after.revision,
        "studies": after.studies,
        "ratings": after.ratings,
    }
