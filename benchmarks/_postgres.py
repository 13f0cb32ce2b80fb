"""A throw-away PostgreSQL database for a benchmark, on the server the environment names."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator

import sqlalchemy as sa

from medsim_annot.storage import dispose_all


def postgres_base() -> str | None:
    """The PostgreSQL server's URL: ``MEDSIM_BENCH_POSTGRES_URL``, else the tests'
    ``MEDSIM_TEST_POSTGRES_URL``; None without either."""
    return os.environ.get("MEDSIM_BENCH_POSTGRES_URL") or os.environ.get("MEDSIM_TEST_POSTGRES_URL")


@contextlib.contextmanager
def throwaway_database(base: str, prefix: str = "medsim_bench_") -> Iterator[str]:
    """A new database on *base*'s server, named *prefix* and a random part: its URL. On exit
    every engine of the process is disposed and the database dropped (connections others
    still hold are ended)."""
    name = prefix + uuid.uuid4().hex[:10]
    admin = sa.create_engine(
        base.replace("postgresql://", "postgresql+psycopg://", 1), isolation_level="AUTOCOMMIT"
    )
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    try:
        yield sa.make_url(base).set(database=name).render_as_string(hide_password=False)
    finally:
        dispose_all()
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()
