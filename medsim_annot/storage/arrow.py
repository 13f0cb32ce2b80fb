"""Arrow-native reads of large result sets (100,000s of ratings), through ADBC drivers.

The DBAPI path (:func:`medsim_annot.storage.studies.fetch_columns`) builds one Python
object per value; at a million ratings that conversion costs more than the query. The ADBC
drivers (Apache Arrow's database connectivity: ``adbc-driver-sqlite``,
``adbc-driver-postgresql``) return columnar Arrow buffers built in C, which pandas and NumPy
read without a Python object per value.

The same SQLAlchemy Core query is used on both paths, compiled for the engine's dialect;
its parameters are rendered into the SQL text only when they are integers (study and
rating ids), so no text value is ever interpolated. SQLite and PostgreSQL are supported;
for any other database :func:`supports_arrow` is False and callers keep the DBAPI path.
DuckDB's own SQLite/PostgreSQL scanners would need an extension download at run time, which
an offline server cannot do: ADBC ships its drivers as wheels.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from sqlalchemy import Select
from sqlalchemy.engine import Engine

from medsim_annot.storage.studies import CURRENT_COLUMNS, current_ratings_query

_DIALECTS = ("sqlite", "postgresql")


def supports_arrow(engine: Engine) -> bool:
    """True when *engine*'s database has an ADBC driver here (SQLite, PostgreSQL)."""
    return engine.dialect.name in _DIALECTS


def _sql(engine: Engine, query: Select[Any]) -> str:
    compiled = query.compile(dialect=engine.dialect)
    params = compiled.construct_params()
    bad = {k: v for k, v in params.items() if type(v) is not int}
    if bad:
        raise TypeError(f"Arrow reads render integer parameters only, not {bad}")
    return str(query.compile(dialect=engine.dialect, compile_kwargs={"literal_binds": True}))


def fetch_arrow(engine: Engine, query: Select[Any], names: tuple[str, ...]) -> pa.Table:
    """The result of *query* as an Arrow table with columns *names* (in query order).

    SQLite: the database file of *engine*, opened read-only by the driver. PostgreSQL: the
    engine's URL (with its password) given to libpq. The read is one statement, so one
    snapshot, as on the DBAPI path."""
    sql = _sql(engine, query)
    url = engine.url
    if engine.dialect.name == "sqlite":
        import adbc_driver_sqlite.dbapi as driver

        if not url.database or url.database == ":memory:":
            raise ValueError("Arrow reads need a SQLite database file, not an in-memory one")
        conn = driver.connect(f"file:{url.database}?mode=ro")
    elif engine.dialect.name == "postgresql":
        import adbc_driver_postgresql.dbapi as driver  # type: ignore[no-redef]

        conn = driver.connect(url.set(drivername="postgresql").render_as_string(False))
    else:
        raise ValueError(f"no Arrow driver for {engine.dialect.name} databases")
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            table = cur.fetch_arrow_table()
    finally:
        conn.close()
    return table.rename_columns(list(names))


def current_ratings_arrow(
    engine: Engine, study_id: int, *, include_duplicates: bool = True
) -> pa.Table:
    """:func:`medsim_annot.storage.studies.current_rating_columns` (without bookkeeping) as
    an Arrow table, one column per name of
    :data:`~medsim_annot.storage.studies.CURRENT_COLUMNS` (raw stored values: SQLite gives
    date-times as text, PostgreSQL as timestamps; booleans as 0/1 or bool)."""
    q, n = current_ratings_query(study_id, include_duplicates=include_duplicates, bookkeeping=False)
    return fetch_arrow(engine, q, CURRENT_COLUMNS[:n])
