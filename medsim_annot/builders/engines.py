"""The SQL engines of the co-occurrence builder: DuckDB in-process and Apache Spark.

:mod:`medsim_annot.builders.cooccurrence` writes one SQL text for both engines against the
view names below; an engine here only loads the inputs under those names
(:meth:`~_Engine.load_events`, :meth:`~_Engine.load_table`), runs a query, streams its result
in batches of column lists (:meth:`~_Engine.stream`) or fetches it whole
(:meth:`~_Engine.fetch`), and turns the engine's own errors into the project's (a malformed
file -> :class:`~data_schemas.errors.InputError`, DuckDB out of memory -> ``ValueError``
with the remedy, no pyspark or Java -> :class:`EngineUnavailableError`). :func:`open_engine`
gives one by name. duckdb (0.2–0.3 s, every ``medsim`` command would pay it) and pyspark
(an optional extra) are imported only when their engine starts.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa

from data_schemas.errors import InputError
from data_schemas.options import StrOptions
from medsim_annot.builders.events import EventsSource

EngineName = Literal["duckdb", "spark"]
ENGINES = StrOptions.of(
    EngineName,
    "engine",
    {
        "duckdb": "in-process",
        "spark": "pyspark; master from the usual Spark configuration",
    },
)
#: DuckDB's memory limit unless told otherwise (``MEDSIM_DUCKDB_MEMORY_LIMIT``); beyond it
#: DuckDB spills to its temporary folder.
DEFAULT_MEMORY_LIMIT = "4GB"
BATCH_ROWS = 65_536

# Names under which each engine sees the inputs; the builder's SQL refers to these only.
EVENTS_VIEW = "medsim_events"
EXCLUDE_VIEW = "medsim_exclude"
HIERARCHY_VIEW = "medsim_hierarchy"
CATEGORIES_VIEW = "medsim_categories"
WANTED_VIEW = "medsim_wanted"


class EngineUnavailableError(RuntimeError):
    """The chosen engine cannot run here (pyspark or Java missing, Spark failed to start)."""


class _Engine:
    name = ""

    def load_events(self, source: EventsSource) -> None:
        raise NotImplementedError

    def load_table(self, name: str, columns: Sequence[str], rows: Sequence[tuple]) -> None:
        raise NotImplementedError

    def stream(self, sql: str, batch_rows: int = BATCH_ROWS) -> Iterator[list]:
        """Batches of the query's result as column lists (in the query's order)."""
        raise NotImplementedError

    def fetch(self, sql: str) -> list[tuple]:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _sql_text(value: str | Path) -> str:
    return "'" + str(value).replace("'", "''") + "'"


class DuckDBEngine(_Engine):
    """In-process DuckDB with a memory limit, spilling to a private temporary folder."""

    name = "duckdb"

    def __init__(
        self,
        *,
        memory_limit: str | None = None,
        temp_dir: str | Path | None = None,
        threads: int | None = None,
    ) -> None:
        # duckdb: 0.2–0.3 s, loaded only when this engine starts (CLI start-up)
        import duckdb

        self._duckdb = duckdb
        self._source: EventsSource | None = None
        self._tmp = tempfile.mkdtemp(prefix="medsim-duckdb-", dir=temp_dir)
        config: dict[str, Any] = {
            "memory_limit": memory_limit
            or os.environ.get("MEDSIM_DUCKDB_MEMORY_LIMIT")
            or DEFAULT_MEMORY_LIMIT,
            "temp_directory": self._tmp,
            "preserve_insertion_order": False,
        }
        if threads:
            config["threads"] = int(threads)
        try:
            self.con = duckdb.connect(config=config)
        except duckdb.Error as exc:
            shutil.rmtree(self._tmp, ignore_errors=True)
            raise ValueError(f"cannot start DuckDB: {exc}") from None
        self.con.execute("SET enable_progress_bar = false")

    def load_events(self, source: EventsSource) -> None:
        self._source = source
        files = "[" + ", ".join(_sql_text(f) for f in source.files) + "]"
        if source.kind == "parquet":
            reader = f"read_parquet({files}, union_by_name = true)"
        else:
            cols = "{" + ", ".join(f"{_sql_text(c)}: 'VARCHAR'" for c in source.columns) + "}"
            reader = (
                f"read_csv({files}, header = true, auto_detect = false, columns = {cols}, "
                f"delim = {_sql_text(source.delimiter)}, quote = '\"', escape = '\"')"
            )
        self.con.execute(f"CREATE OR REPLACE TEMP VIEW {EVENTS_VIEW} AS SELECT * FROM {reader}")

    def load_table(self, name: str, columns: Sequence[str], rows: Sequence[tuple]) -> None:
        table = pa.table(
            {c: pa.array([r[i] for r in rows], type=pa.string()) for i, c in enumerate(columns)}
        )
        self.con.register(f"{name}_arrow", table)
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT * FROM {name}_arrow")
        self.con.unregister(f"{name}_arrow")

    def _run(self, call):
        try:
            return call()
        except self._duckdb.OutOfMemoryException as exc:
            raise ValueError(
                f"DuckDB ran out of memory ({str(exc).strip().splitlines()[0]}); raise "
                "--memory-limit or give it a --temp-dir with more free disk"
            ) from None
        except (
            self._duckdb.InvalidInputException,
            self._duckdb.IOException,
            self._duckdb.ConversionException,
        ) as exc:
            file = str(self._source.path) if self._source else None
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
            line = re.search(r"CSV Error on Line: (\d+)", first)
            raise InputError.single(
                f"cannot be read ({first})", file=file, row=int(line.group(1)) if line else None
            ) from None

    def stream(self, sql: str, batch_rows: int = BATCH_ROWS) -> Iterator[list]:
        reader = self._run(lambda: self.con.sql(sql).to_arrow_reader(batch_rows))
        try:
            while True:
                try:
                    batch = self._run(reader.read_next_batch)
                except StopIteration:
                    return
                yield [
                    col.to_numpy(zero_copy_only=False) if pa.types.is_integer(col.type) else col
                    for col in batch.columns
                ]
        finally:
            reader.close()

    def fetch(self, sql: str) -> list[tuple]:
        return self._run(lambda: self.con.execute(sql).fetchall())

    def close(self) -> None:
        try:
            self.con.close()
        finally:
            shutil.rmtree(self._tmp, ignore_errors=True)


class SparkEngine(_Engine):
    """Apache Spark through pyspark: the active session, the one given, or a new one built
    from the usual Spark configuration (``spark-defaults.conf``, ``PYSPARK_SUBMIT_ARGS``;
    ``local[*]`` when no master is set). Runs in a child session so that its temporary
    views and settings stay private; stops the session only if it started it."""

    name = "spark"

    def __init__(self, spark=None) -> None:
        try:
            # pyspark is the optional [spark] extra: imported only when this engine starts
            from pyspark.sql import SparkSession
        except ImportError:
            raise EngineUnavailableError(
                "engine 'spark' needs pyspark (pip install pyspark) and Java 17 or newer"
            ) from None
        self._source: EventsSource | None = None
        base = spark or SparkSession.getActiveSession()
        self._owned = None
        if base is None:
            try:
                base = (
                    SparkSession.builder.appName("medsim-cooccurrence")
                    .config("spark.ui.showConsoleProgress", "false")
                    .getOrCreate()
                )
            except Exception as exc:  # Java missing, gateway failure
                first = (str(exc).strip().splitlines() or [exc.__class__.__name__])[0]
                raise EngineUnavailableError(
                    f"could not start Spark ({first}); Spark needs Java 17 or "
                    "newer (check `java -version` and JAVA_HOME)"
                ) from None
            self._owned = base
        self.spark = base.newSession()
        self.spark.conf.set("spark.sql.cteRecursionRowLimit", str(2**31 - 1))

    def load_events(self, source: EventsSource) -> None:
        # the optional [spark] extra, present once __init__ has started a session
        from pyspark.sql.types import StringType, StructField, StructType

        self._source = source
        files = [str(f) for f in source.files]
        if source.kind == "parquet":
            df = self.spark.read.parquet(*files)
        else:
            schema = StructType([StructField(c, StringType(), True) for c in source.columns])
            df = self.spark.read.csv(
                files,
                schema=schema,
                header=True,
                enforceSchema=True,
                sep=source.delimiter,
                quote='"',
                escape='"',
                mode="FAILFAST",
                encoding="UTF-8",
            )
        df.createOrReplaceTempView(EVENTS_VIEW)

    def load_table(self, name: str, columns: Sequence[str], rows: Sequence[tuple]) -> None:
        schema = ", ".join(f"{c} string" for c in columns)
        self.spark.createDataFrame([tuple(r) for r in rows], schema=schema).createOrReplaceTempView(
            name
        )

    def _run(self, call):
        try:
            return call()
        except Exception as exc:
            text = str(exc)
            if "MALFORMED" in text.upper() or "FAILFAST" in text.upper():
                file = str(self._source.path) if self._source else None
                line = next((l for l in text.splitlines() if "alformed" in l), text.splitlines()[0])
                raise InputError.single(
                    f"cannot be read ({line.strip()[:200]})", file=file
                ) from None
            raise

    def stream(self, sql: str, batch_rows: int = BATCH_ROWS) -> Iterator[list]:
        rows = self._run(lambda: self.spark.sql(sql).toLocalIterator(prefetchPartitions=True))
        try:
            while True:
                chunk = self._run(lambda: list(islice(rows, batch_rows)))
                if not chunk:
                    return
                yield [list(col) for col in zip(*chunk)]
        finally:
            if hasattr(rows, "close"):
                rows.close()

    def fetch(self, sql: str) -> list[tuple]:
        return self._run(lambda: [tuple(r) for r in self.spark.sql(sql).collect()])

    def close(self) -> None:
        for view in (EVENTS_VIEW, EXCLUDE_VIEW, HIERARCHY_VIEW, CATEGORIES_VIEW, WANTED_VIEW):
            try:
                self.spark.catalog.dropTempView(view)
            except Exception:
                pass
        if self._owned is not None:
            self._owned.stop()


def open_engine(
    engine: str,
    *,
    spark=None,
    memory_limit: str | None = None,
    temp_dir: str | Path | None = None,
    threads: int | None = None,
) -> _Engine:
    """A ready engine by name (``duckdb`` or ``spark``)."""
    ENGINES.check(engine)
    if engine == "duckdb":
        return DuckDBEngine(memory_limit=memory_limit, temp_dir=temp_dir, threads=threads)
    if engine == "spark":
        return SparkEngine(spark)
    raise AssertionError(engine)  # checked above
