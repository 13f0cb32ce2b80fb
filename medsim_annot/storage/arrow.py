"""Column-wise reads of large result sets (100,000s of ratings) for the dashboard, without a
Python object per value where that can be avoided.

The DBAPI path (:func:`medsim_annot.storage.studies.fetch_columns`) builds one Python
object per value (text, date-time); at 100,000s of ratings that conversion costs more than
the query. Here the current ratings come back as integer codes and small lookup arrays
(:class:`CodedRatings`):

* **PostgreSQL** through ADBC (``adbc-driver-postgresql``: Apache Arrow's database
  connectivity over libpq, a socket, so nothing is shared with the process's other
  connections): columnar Arrow buffers built in C, text columns dictionary-encoded by Arrow.
* **SQLite** through the engine's own ``sqlite3`` connection, never an in-process ADBC
  driver: ``adbc-driver-sqlite`` links its own copy of the SQLite library, and two SQLite
  libraries on one database file in one process break each other's POSIX locks (closing
  one copy's file descriptor drops the other's locks, https://sqlite.org/howtocorrupt.html
  section 2.2.1) — a dashboard read while another thread saves a rating. The query returns
  one aggregate row: each column a ``group_concat`` of integers (ids, positions, the rating
  value, slot kind and flags packed into one code) parsed by NumPy's C parser, and the
  date-times (fixed-width text) read as ``datetime64`` from their concatenation — no Python
  object per value. The pairs' ids come from one read of the items, the few non-empty
  comments from a second query keyed by rating id (ratings are append-only, so a rating id
  names the same row in every snapshot).

The latest rating per slot is an anti-join (no newer rating of the same slot), which the
``ix_ratings_assignment`` index answers on both databases. For any other database
:func:`supports_arrow` is False and callers keep the DBAPI path;
:func:`current_ratings_coded` returns None when the stored values do not fit the integer form (a date-time not in the
form SQLAlchemy writes, or a value saved between the two queries, three times in a row),
and callers then fall back to the DBAPI path too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from sqlalchemy import Select, case, exists, func, literal, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import aliased

from medsim_annot.storage.models import Assignment, Item, Rating

_DIALECTS = ("sqlite", "postgresql")


def supports_arrow(engine: Engine) -> bool:
    """True when *engine*'s database has a column-wise read here (SQLite, PostgreSQL)."""
    return engine.dialect.name in _DIALECTS


@dataclass(frozen=True)
class CodedRatings:
    """The current ratings of a study (duplicate slots included), one NumPy array per
    column, in the order the database returned them. Text columns are codes into small
    lookup arrays: ``pair_ids[pair_code]``, ``values[value_code]``, ``kinds[kind_code]``,
    ``comments[comment_code]`` (object arrays of ``str``)."""

    annotator_id: np.ndarray  # int64
    item_position: np.ndarray  # int64, the pair's position in the file
    position: np.ndarray  # int64, the slot's queue position
    pair_code: np.ndarray
    pair_ids: np.ndarray
    value_code: np.ndarray
    values: np.ndarray
    kind_code: np.ndarray
    kinds: np.ndarray
    comment_code: np.ndarray
    comments: np.ndarray
    unclear: np.ndarray  # bool
    elapsed_ms: np.ndarray  # int64, 0 where missing
    elapsed_missing: np.ndarray  # bool
    rated_at: np.ndarray  # datetime64[us], naive UTC (NaT where missing)

    def __len__(self) -> int:
        return len(self.annotator_id)


def _is_latest():
    """No newer rating of the same slot: the rating is the slot's current one."""
    newer = aliased(Rating)
    return ~exists().where(newer.assignment_id == Rating.assignment_id, newer.id > Rating.id)


def _base(study_id: int, columns: list[Any]) -> Select[Any]:
    return (
        select(*columns)
        .join(Assignment, Assignment.id == Rating.assignment_id)
        .join(Item, Item.id == Rating.item_id)
        .where(Rating.study_id == study_id, _is_latest())
    )


def current_ratings_coded(engine: Engine, study_id: int) -> CodedRatings | None:
    """The current ratings of study *study_id* (every slot kind) as :class:`CodedRatings`,
    or None when they do not fit the integer form (see the module's docstring)."""
    if engine.dialect.name == "postgresql":
        return _postgres(engine, study_id)
    if engine.dialect.name == "sqlite":
        for _ in range(3):
            got = _sqlite(engine, study_id)
            if got is not None:
                return got
        return None
    raise ValueError(f"no column-wise read for {engine.dialect.name} databases")


# --------------------------------------------------------------------------- PostgreSQL
def _sql(engine: Engine, query: Select[Any]) -> str:
    """*query* as SQL text for ADBC; only integer parameters (study ids) are rendered into
    it, so no text value is ever interpolated."""
    compiled = query.compile(dialect=engine.dialect)
    bad = {k: v for k, v in compiled.construct_params().items() if type(v) is not int}
    if bad:
        raise TypeError(f"Arrow reads render integer parameters only, not {bad}")
    return str(query.compile(dialect=engine.dialect, compile_kwargs={"literal_binds": True}))


def fetch_arrow(engine: Engine, query: Select[Any], names: tuple[str, ...]) -> pa.Table:
    """The result of *query* as an Arrow table with columns *names*, read through ADBC on
    PostgreSQL (the engine's URL, with its password, given to libpq). One statement, so one
    snapshot."""
    if engine.dialect.name != "postgresql":
        raise ValueError(f"ADBC reads are for PostgreSQL, not {engine.dialect.name}")
    import adbc_driver_postgresql.dbapi as driver

    conn = driver.connect(engine.url.set(drivername="postgresql").render_as_string(False))
    try:
        with conn.cursor() as cur:
            cur.execute(_sql(engine, query))
            table = cur.fetch_arrow_table()
    finally:
        conn.close()
    return table.rename_columns(list(names))


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """Codes and distinct values (object array of str) of a text column without NULLs."""
    enc = column.combine_chunks().dictionary_encode()
    codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    return codes, np.asarray(enc.dictionary.to_pylist(), dtype=object)


def _int(column: pa.ChunkedArray) -> np.ndarray:
    return column.to_numpy().astype(np.int64, copy=False)


def _postgres(engine: Engine, study_id: int) -> CodedRatings | None:
    names = ("ann", "item_pos", "pos", "pair", "value", "kind", "comment", "unclear", "ms", "at")
    q = _base(
        study_id,
        [
            Rating.annotator_id,
            Item.position,
            Assignment.position,
            Item.pair_id,
            Rating.value,
            Assignment.kind,
            Rating.comment,
            Rating.unclear,
            Rating.elapsed_ms,
            Rating.rated_at,
        ],
    )
    t = fetch_arrow(engine, q, names)
    if any(t.column(c).null_count for c in names[:8]):
        return None  # not the shape the integer form assumes: the DBAPI path reads it
    pair_code, pair_ids = _codes(t.column("pair"))
    value_code, values = _codes(t.column("value"))
    kind_code, kinds = _codes(t.column("kind"))
    comment_code, comments = _codes(t.column("comment"))
    ms = t.column("ms")
    at = t.column("at").cast(pa.timestamp("us"))
    return CodedRatings(
        annotator_id=_int(t.column("ann")),
        item_position=_int(t.column("item_pos")),
        position=_int(t.column("pos")),
        pair_code=pair_code,
        pair_ids=pair_ids,
        value_code=value_code,
        values=values,
        kind_code=kind_code,
        kinds=kinds,
        comment_code=comment_code,
        comments=comments,
        unclear=t.column("unclear").to_numpy().astype(bool),
        elapsed_ms=ms.fill_null(0).to_numpy().astype(np.int64, copy=False),
        elapsed_missing=ms.is_null().to_numpy(zero_copy_only=False).astype(bool),
        rated_at=at.to_numpy().astype("datetime64[us]"),
    )


# --------------------------------------------------------------------------- SQLite
def _rows(engine: Engine, query: Any) -> list[tuple[Any, ...]]:
    """The rows of *query* through the engine's own ``sqlite3`` connection (bound
    parameters, no SQLAlchemy row processing)."""
    with engine.connect() as conn:
        compiled = query.compile(dialect=conn.dialect)
        params = compiled.construct_params()
        order = compiled.positiontup or []
        cursor = conn.connection.cursor()
        try:
            cursor.execute(str(compiled), tuple(params[k] for k in order))
            return list(cursor.fetchall())
        finally:
            cursor.close()


def _code_of(column: Any, known: list[str]) -> Any:
    """The index of *column*'s value in *known*; ``len(known)`` for any other value."""
    if not known:
        return literal(0)
    return case({v: i for i, v in enumerate(known)}, value=column, else_=len(known))


def _ints(text: str | None, n: int) -> np.ndarray:
    """A ``group_concat`` of *n* integers as an int64 array."""
    if not n:
        return np.zeros(0, dtype=np.int64)
    if text is None:
        raise ValueError(f"expected {n} integers, read none")
    out = np.fromstring(text, dtype=np.int64, sep=",")  # C parser, no list of str
    if len(out) != n:
        raise ValueError(f"expected {n} integers, read {len(out)}")
    return out


def _sqlite(engine: Engine, study_id: int) -> CodedRatings | None:
    """One aggregate row: each column of the current ratings as one ``group_concat`` text
    (the aggregates of one SELECT see the rows in the same order, so the columns stay
    aligned), parsed by NumPy's C parsers; the rating value, slot kind and the flags are
    packed into one integer per rating. Date-times, stored as fixed-width text, are read as
    NumPy ``datetime64`` from the concatenated text without a separator."""
    values = [
        str(v)
        for (v,) in _rows(
            engine, select(Rating.value).where(Rating.study_id == study_id).distinct()
        )
    ]
    kinds = [
        str(v)
        for (v,) in _rows(
            engine, select(Assignment.kind).where(Assignment.study_id == study_id).distinct()
        )
    ]
    nv, nk = len(values) + 1, len(kinds) + 1  # the last code of each: a value not known
    at = Rating.rated_at
    flag = lambda cond: case((cond, 1), else_=0)
    packed = _code_of(Rating.value, values) + nv * (
        _code_of(Assignment.kind, kinds)
        + nk
        * (
            flag(Rating.unclear)
            + 2 * flag(Rating.elapsed_ms.is_(None))
            + 4 * flag(Rating.comment != "")
        )
    )
    q = _base(
        study_id,
        [
            func.count(),
            func.group_concat(Rating.id),
            func.group_concat(Rating.annotator_id),
            func.group_concat(Item.position),
            func.group_concat(Assignment.position),
            func.group_concat(packed),
            func.group_concat(func.coalesce(Rating.elapsed_ms, 0)),
            # SQLAlchemy stores date-times as 'YYYY-MM-DD HH:MM:SS.ffffff' (26 characters,
            # naive UTC); any other length (or NULL) sends the read to the DBAPI path.
            func.group_concat(at, ""),
            func.sum(case((func.coalesce(func.length(at), 0) == _TIME_WIDTH, 0), else_=1)),
        ],
    )
    [(n, *cols, bad_times)] = _rows(engine, q)
    n = int(n)
    if n == 0:
        return _empty()
    if bad_times:
        return None  # a date-time in another form: the DBAPI path parses the text
    rid, ann, item_pos, pos, code, ms = (_ints(c, n) for c in cols[:6])
    try:
        rated_at = np.frombuffer(cols[6].encode("ascii"), dtype=f"S{_TIME_WIDTH}").astype(
            "datetime64[us]"
        )
    except (UnicodeEncodeError, ValueError):
        return None
    code, value_code = np.divmod(code, nv)
    flags, kind_code = np.divmod(code, nk)
    if (value_code == nv - 1).any() or (kind_code == nk - 1).any():
        return None  # a value or slot kind saved after the first two queries: read again
    has_comment = (flags & 4).astype(bool)
    comments = [""]
    comment_code = np.zeros(n, dtype=np.int64)
    if has_comment.any():
        wanted = rid[has_comment]
        found: dict[int, str] = dict(
            _rows(
                engine,
                select(Rating.id, Rating.comment).where(
                    Rating.study_id == study_id, Rating.comment != "", Rating.id <= int(rid.max())
                ),
            )
        )
        distinct = sorted({found[int(r)] for r in wanted})
        comments += distinct
        index = {c: i + 1 for i, c in enumerate(distinct)}
        comment_code[has_comment] = [index[found[int(r)]] for r in wanted]
    items = _rows(engine, select(Item.position, Item.pair_id).where(Item.study_id == study_id))
    positions = np.array([p for p, _ in items], dtype=np.int64)
    ids = np.array([str(i) for _, i in items], dtype=object)
    by_pos = np.argsort(positions)
    pair_code = by_pos[np.searchsorted(positions, item_pos, sorter=by_pos)]
    return CodedRatings(
        annotator_id=ann,
        item_position=item_pos,
        position=pos,
        pair_code=pair_code.astype(np.int64),
        pair_ids=ids,
        value_code=value_code,
        values=np.array(values, dtype=object),
        kind_code=kind_code,
        kinds=np.array(kinds, dtype=object),
        comment_code=comment_code,
        comments=np.array(comments, dtype=object),
        unclear=(flags & 1).astype(bool),
        elapsed_ms=ms,
        elapsed_missing=(flags & 2).astype(bool),
        rated_at=rated_at,
    )


#: Characters of a date-time as SQLAlchemy stores it in SQLite.
_TIME_WIDTH = 26


def _empty() -> CodedRatings:
    none = np.zeros(0, dtype=np.int64)
    text = np.zeros(0, dtype=object)
    return CodedRatings(
        none, none, none, none, text, none, text, none, text, none, text,
        none.astype(bool), none, none.astype(bool), none.astype("datetime64[us]"),
    )  # fmt: skip


# --------------------------------------------------------------------------- pairs
#: Text columns of the items as :func:`medsim_annot.storage.studies.item_columns` reads
#: them (with ``auto_label`` between ``term_2`` and ``dataset``), in that order.
ITEM_TEXT = (
    "pair_id",
    "term_1",
    "term_2",
    "dataset",
    "difficulty",
    "negative_strategy",
    "concept_id_1",
    "concept_id_2",
    "meta_json",
)


@dataclass(frozen=True)
class ItemColumns:
    """The study's items in file order: each text column of :data:`ITEM_TEXT` as an Arrow
    array, and ``auto_label`` as int64 values with a missing mask."""

    text: dict[str, Any]
    auto_label: np.ndarray
    auto_label_missing: np.ndarray

    def __len__(self) -> int:
        return len(self.auto_label)


def item_columns(engine: Engine, study_id: int) -> ItemColumns | None:
    """The items of study *study_id* column-wise (:class:`ItemColumns`) through ADBC on
    PostgreSQL (half the DBAPI read's CPU at 100,000 pairs); None on SQLite, where every
    text becomes a Python ``str`` either way and a concatenated read measured only ~7%
    faster, and when a text is NULL (callers then read through the DBAPI)."""
    cols = [getattr(Item, c) for c in ITEM_TEXT]
    label = Item.auto_label
    if engine.dialect.name == "postgresql":
        q = (
            select(*cols, func.coalesce(label, 0), label.is_(None))
            .where(Item.study_id == study_id)
            .order_by(Item.position)
        )
        t = fetch_arrow(engine, q, (*ITEM_TEXT, "label", "missing"))
        if any(t.column(c).null_count for c in ITEM_TEXT):
            return None
        return ItemColumns(
            {c: t.column(c).combine_chunks() for c in ITEM_TEXT},
            _int(t.column("label")),
            t.column("missing").to_numpy().astype(bool),
        )
    return None  # SQLite: the DBAPI read is as fast for text (a str per value either way)
