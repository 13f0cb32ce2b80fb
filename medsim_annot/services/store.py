"""The study store as the pages see it: which database, and its engine.

Pages hold no SQL and do not import :mod:`medsim_annot.storage`; they cache the engine this
returns (one per process and URL) and pass it to the other services.
"""

from __future__ import annotations

from medsim_annot.storage import Engine, database_url, get_engine
from medsim_annot.storage import backup as backup_store


def store_url(url: str | None = None) -> str:
    """*url*, else ``MEDSIM_DATABASE_URL``, else the embedded SQLite default."""
    return database_url(url)


def open_store(url: str | None = None) -> Engine:
    """The engine for :func:`store_url` (*url*), migrated to the newest schema."""
    return get_engine(url)


def embedded_store(url: str | None = None) -> bool:
    """Whether the store is an embedded SQLite file (the default, a laptop, a demo) rather
    than a database server (PostgreSQL: production)."""
    return backup_store.backend_name(database_url(url)) == "sqlite"


def migrate_store(url: str | None = None) -> dict:
    """Create or migrate the store's schema and nothing else: ``{"store", "revision"}``
    (the store's URL without its password)."""
    url = database_url(url)
    engine = get_engine(url)
    return {"store": backup_store.shown_url(url), "revision": backup_store.schema_revision(engine)}
