"""The study store as the pages see it: which database, and its engine.

Pages hold no SQL and do not import :mod:`medsim_annot.storage`; they cache the engine this
returns (one per process and URL) and pass it to the other services.
"""

from __future__ import annotations

from medsim_annot.storage import Engine, database_url, get_engine


def store_url(url: str | None = None) -> str:
    """*url*, else ``MEDSIM_DATABASE_URL``, else the embedded SQLite default."""
    return database_url(url)


def open_store(url: str | None = None) -> Engine:
    """The engine for :func:`store_url` (*url*), migrated to the newest schema."""
    return get_engine(url)
