"""Column-wise reads of large result sets (100,000s of ratings): a study's current ratings
and its pairs, without a Python object per value where that can be avoided.

The DBAPI path (:func:`medsim_annot.storage.studies.fetch_columns`) builds one Python
object per value (text, date-time); at 100,000s of ratings that conversion costs more than
the query. Here the current ratings come back as integer codes and small lookup arrays
(:class:`RatingArrays`):

* **PostgreSQL** through ADBC (``adbc-driver-postgresql``: Apache Arrow's database
  connectivity over libpq, a socket, so nothing is shared with the process's other
  connections): columnar Arrow buffers built in C, text columns dictionary-encoded by Arrow,
  three join-free queries in one REPEATABLE READ transaction.
* **SQLite** through the engine's own ``sqlite3`` connection, never an in-process ADBC
  driver: ``adbc-driver-sqlite`` links its own copy of the SQLite library, and two SQLite
  libraries on one database file in one process break each other's POSIX locks (closing
  one copy's file descriptor drops the other's locks, https://sqlite.org/howtocorrupt.html
  section 2.2.1) — a dashboard read while another thread saves a rating. Three single-row
  queries in one read transaction, none with a join: the study's ratings (superseded ones
  included), its slots and its items, each column one ``group_concat`` — integers parsed
  by NumPy's C parser, texts cut into Arrow string arrays at a separator, date-times (fixed
  width) read as ``datetime64`` — so no Python object per value. The current rating of a
  slot (its highest id) and the joins are done in NumPy: SQLite's anti-join and two joins
  per rating cost more than the whole read (0.68 s against 0.24 s for the ratings of
  100,000 pairs x 3). The few non-empty comments come from a fourth query by rating id.
  The pairs (:func:`item_columns`) are read the same way.

On both, the queries are plain index scans whatever the planner knows (a freshly imported
study has no statistics yet: PostgreSQL's anti-join then ran as nested loops). For any
other database
:func:`supports_arrow` is False and callers keep the DBAPI path;
:func:`current_rating_arrays` returns None when the stored values do not fit the integer
form (a date-time not in the form SQLAlchemy writes, a text holding the separator), and
callers then fall back to the DBAPI path too.

Both readers also read inside an open :func:`~medsim_annot.storage.read_snapshot` (given its
session in place of the engine), with every other read of that transaction: on SQLite through
the transaction's own connection, on PostgreSQL in the transaction's exported snapshot.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np
import pyarrow as pa
from sqlalchemy import LargeBinary, Select, case, func, literal_column, select
from sqlalchemy import cast as sa_cast
from sqlalchemy.engine import Engine

from medsim_annot.storage.db import Source, connection_of, engine_of, exported_snapshot
from medsim_annot.storage.models import Assignment, Item, Rating

_DIALECTS = ("sqlite", "postgresql")


def supports_arrow(engine: Engine) -> bool:
    """True when *engine*'s database has a column-wise read here (SQLite, PostgreSQL)."""
    return engine.dialect.name in _DIALECTS


def reads_in_server(engine: Engine) -> bool:
    """True when *engine*'s database does a read's work in its own process (PostgreSQL),
    so two reads from two threads overlap; False for SQLite, in this process, where two
    whole-study scans at once slowed each other down (0.95-1.13 s against 0.81-0.84 s one
    after the other)."""
    return engine.dialect.name == "postgresql"


@dataclass(frozen=True)
class RatingArrays:
    """The current ratings of a study as stored (duplicate slots included, the stored
    value text, annotators by id), one NumPy array per column, in the order the database
    returned them. Text columns are codes into small lookup arrays: ``pair_ids[pair_code]``,
    ``values[value_code]``, ``kinds[kind_code]``, ``comments[comment_code]`` (object arrays
    of ``str``). Not the statistics' coded ratings
    (:class:`medsim_annot.stats.CodedRatings`, values on the scale, built from the frame
    the services make of these arrays)."""

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
    rating_id: np.ndarray  # int64, the current rating's id
    slot_id: np.ndarray  # int64, its assignment's id
    #: Ratings of the study in the same snapshot, superseded ones included (with the highest
    #: ``rating_id``, the version a kept read is checked against).
    total: int

    def __len__(self) -> int:
        return len(self.annotator_id)

    def take(self, rows: np.ndarray) -> RatingArrays:
        """These ratings at *rows* (indices or a boolean mask): the per-rating arrays
        taken, the lookup arrays and ``total`` kept."""
        return replace(self, **{f: getattr(self, f)[rows] for f in PER_RATING})


#: The code arrays of :class:`RatingArrays`, each with the lookup array it indexes.
LOOKUPS = {
    "pair_code": "pair_ids",
    "value_code": "values",
    "kind_code": "kinds",
    "comment_code": "comments",
}
#: The fields of :class:`RatingArrays` with one entry per rating (the others are the
#: lookup arrays and the study's count).
PER_RATING = tuple(
    f.name for f in fields(RatingArrays) if f.name not in (*LOOKUPS.values(), "total")
)


def current_rating_arrays(source: Source, study_id: int) -> RatingArrays | None:
    """The current ratings of study *study_id* (every slot kind) as :class:`RatingArrays`,
    or None when they do not fit the integer form (see the module's docstring)."""
    engine = engine_of(source)
    if engine.dialect.name == "postgresql":
        return _postgres(source, study_id)
    if engine.dialect.name == "sqlite":
        try:
            return _sqlite(source, study_id)
        except sqlite3.DataError:  # a concatenation over SQLite's length limit (1 GB)
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


@contextmanager
def _adbc(source: Source) -> Iterator[Any]:
    """An ADBC cursor on PostgreSQL (the engine's URL, with its password, given to libpq)
    inside one REPEATABLE READ transaction: every query through it sees one snapshot — the
    snapshot of *source* when it is a transaction (:func:`~medsim_annot.storage.read_snapshot`)."""
    engine = engine_of(source)
    if engine.dialect.name != "postgresql":
        raise ValueError(f"ADBC reads are for PostgreSQL, not {engine.dialect.name}")
    # the PostgreSQL-only ADBC driver: loaded only when a PostgreSQL store is read
    import adbc_driver_postgresql.dbapi as driver

    conn = driver.connect(engine.url.set(drivername="postgresql").render_as_string(False))
    try:
        with conn.cursor() as cur:
            # Not autocommit: the driver has opened a transaction; set it before any query.
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            if not isinstance(source, Engine):  # the id is checked: hex digits and dashes
                cur.execute(f"SET TRANSACTION SNAPSHOT '{exported_snapshot(source)}'")
            yield cur
        conn.rollback()
    finally:
        conn.close()


def _arrow(cur: Any, engine: Engine, query: Any, names: tuple[str, ...]) -> pa.Table:
    cur.execute(_sql(engine, query))
    return cur.fetch_arrow_table().rename_columns(list(names))


def fetch_arrow(source: Source, query: Select[Any], names: tuple[str, ...]) -> pa.Table:
    """The result of *query* as an Arrow table with columns *names*, read through ADBC on
    PostgreSQL. One statement, so one snapshot (*source*'s when it is a transaction)."""
    with _adbc(source) as cur:
        return _arrow(cur, engine_of(source), query, names)


def _codes(column: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """Codes and distinct values (object array of str) of a text column without NULLs."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    enc = column.dictionary_encode()
    codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    return codes, np.asarray(enc.dictionary.to_pylist(), dtype=object)


def _int(column: pa.ChunkedArray) -> np.ndarray:
    return column.to_numpy().astype(np.int64, copy=False)


def _postgres(source: Source, study_id: int) -> RatingArrays | None:
    """Three queries in one snapshot, none with a join (as on SQLite, and for a second
    reason: right after a study is imported the planner's statistics do not know its rows
    yet, and the anti-join became three nested loops, 1.9 s at 300,000 ratings instead of
    a 0.1 s index scan): every rating of the study, its slots, its items; the current
    rating per slot and the joins in NumPy."""
    rating_names = ("id", "slot", "item", "ann", "value", "comment", "unclear", "ms", "at")
    r = select(
        Rating.id,
        Rating.assignment_id,
        Rating.item_id,
        Rating.annotator_id,
        Rating.value,
        Rating.comment,
        Rating.unclear,
        Rating.elapsed_ms,
        Rating.rated_at,
    ).where(Rating.study_id == study_id)
    a = select(Assignment.id, Assignment.position, Assignment.kind).where(
        Assignment.study_id == study_id
    )
    i = select(Item.id, Item.position, Item.pair_id).where(Item.study_id == study_id)
    engine = engine_of(source)
    with _adbc(source) as cur:
        t = _arrow(cur, engine, r, rating_names)
        if not t.num_rows:
            return _empty()
        slots = _arrow(cur, engine, a, ("id", "position", "kind"))
        items = _arrow(cur, engine, i, ("id", "position", "pair"))
    total = t.num_rows
    latest = _latest(_int(t.column("id")), _int(t.column("slot")))
    t = t.take(pa.array(latest))
    joined = _joined(
        _int(t.column("slot")),
        _int(t.column("item")),
        (_int(slots.column("id")), _int(slots.column("position")), slots.column("kind")),
        (_int(items.column("id")), _int(items.column("position")), items.column("pair")),
    )
    if joined is None:
        return None
    value_code, values = _codes(t.column("value"))
    comment_code, comments = _codes(t.column("comment"))
    ms = t.column("ms")
    return RatingArrays(
        annotator_id=_int(t.column("ann")),
        **joined,
        value_code=value_code,
        values=values,
        comment_code=comment_code,
        comments=comments,
        unclear=t.column("unclear").to_numpy().astype(bool),
        elapsed_ms=ms.fill_null(0).to_numpy().astype(np.int64, copy=False),
        elapsed_missing=ms.is_null().to_numpy(zero_copy_only=False).astype(bool),
        rated_at=t.column("at").cast(pa.timestamp("us")).to_numpy().astype("datetime64[us]"),
        rating_id=_int(t.column("id")),
        slot_id=_int(t.column("slot")),
        total=total,
    )


def _joined(
    slot: np.ndarray,
    item: np.ndarray,
    slots: tuple[np.ndarray, np.ndarray, Any],
    items: tuple[np.ndarray, np.ndarray, Any],
) -> dict[str, np.ndarray] | None:
    """The join of the current ratings (their *slot* and *item* ids) to the study's slots
    and items (each: ids, positions and an Arrow text column, kind or pair id, in the order
    read): the :class:`RatingArrays` fields ``position``, ``kind_code``, ``kinds``,
    ``item_position``, ``pair_code`` and ``pair_ids``; None when a rating's slot or item is
    not among them."""
    slot_ids, slot_pos, kind = slots
    item_ids, item_pos, pair = items
    slot_at = _lookup(slot_ids, slot)
    item_at = _lookup(item_ids, item)
    if slot_at is None or item_at is None:
        return None
    kind_code, kinds = _codes(kind.take(pa.array(slot_at)))
    return {
        "position": slot_pos[slot_at],
        "kind_code": kind_code,
        "kinds": kinds,
        "item_position": item_pos[item_at],
        "pair_code": item_at.astype(np.int64),
        "pair_ids": np.asarray(pair.to_pylist(), dtype=object),
    }


# --------------------------------------------------------------------------- SQLite
#: Bytes of the database file the dashboard's read may map into memory (SQLite's
#: ``mmap_size``): the whole-study scans then read pages in place instead of copying each
#: through ``pread`` (about a fifth of the ratings query). Only for this read: the
#: connection goes back to ordinary I/O afterwards.
_MMAP_BYTES = 1 << 30


@contextmanager
def _snapshot(source: Source) -> Iterator[Any]:
    """A raw ``sqlite3`` cursor of the engine's own connection inside one read transaction
    (``BEGIN``; pysqlite would run each SELECT in its own), so every query through it sees
    the same snapshot; rolled back afterwards (nothing is written). Given an open transaction
    (:func:`~medsim_annot.storage.read_snapshot`), its connection's, in that transaction
    (left open for the transaction's other reads)."""
    own = isinstance(source, Engine)
    with connection_of(source) as conn:
        dbapi = conn.connection.dbapi_connection
        cursor = conn.connection.cursor()
        try:
            cursor.execute(f"PRAGMA mmap_size={_MMAP_BYTES}")
            if own:
                cursor.execute("BEGIN")
            yield cursor
        finally:
            try:
                if own and dbapi is not None and dbapi.in_transaction:
                    cursor.execute("ROLLBACK")
            finally:
                cursor.execute("PRAGMA mmap_size=0")
                cursor.close()


def _one(cursor: Any, engine: Engine, query: Any) -> tuple[Any, ...]:
    """The single row of *query* (bound parameters, no SQLAlchemy row processing)."""
    _execute(cursor, engine, query)
    return tuple(cursor.fetchone())


def _execute(cursor: Any, engine: Engine, query: Any) -> None:
    compiled = query.compile(dialect=engine.dialect)
    params = compiled.construct_params()
    cursor.execute(str(compiled), tuple(params[k] for k in compiled.positiontup or []))


#: The separator of concatenated texts: ASCII unit separator (a text holding it, or a NULL,
#: sends the read to the DBAPI path, see :func:`_texts`).
_SEP = 31


def _text_column(column: Any) -> Any:
    """The ``group_concat`` of *column* (a NOT NULL text) as UTF-8 bytes, for :func:`_texts`."""
    return sa_cast(func.group_concat(column, func.char(_SEP)), LargeBinary)


def _texts(blob: bytes | None, n: int) -> pa.StringArray | None:
    """*n* texts joined by the separator as an Arrow string array built straight from the
    bytes (no Python object per value); None when the count does not match (a text holding
    the separator; the columns read this way are NOT NULL, so none is skipped)."""
    if n == 0:
        return pa.array([], pa.string())
    data = np.frombuffer(blob or b"", dtype=np.uint8)
    cuts = np.flatnonzero(data == _SEP)
    if len(cuts) != n - 1:
        return None
    # Value i spans data[starts[i]:ends[i]]; with the separators dropped every offset moves
    # left by the number of separators before it, and value i then ends where i + 1 starts.
    offsets = np.empty(n + 1, dtype=np.int64)
    offsets[0] = 0
    offsets[1:-1] = cuts - np.arange(n - 1)
    offsets[-1] = len(data) - (n - 1)
    kept = np.delete(data, cuts)
    large = pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(kept))
    return large.cast(pa.string()) if len(kept) < 2**31 - 1 else large


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


def _lookup(ids: np.ndarray, keys: np.ndarray) -> np.ndarray | None:
    """The index in *ids* (distinct) of each of *keys*, or None when one is missing. Ids
    read in one run (a study's rows, created together) are found by subtraction."""
    if not len(ids):
        return None if len(keys) else np.zeros(0, dtype=np.int64)
    first = int(ids[0])
    if int(ids[-1]) - first == len(ids) - 1 and (np.diff(ids) == 1).all():
        at = keys - first
        if len(at) and (at.min() < 0 or at.max() >= len(ids)):
            return None
        return at
    order = np.argsort(ids, kind="stable")
    at = np.searchsorted(ids, keys, sorter=order).clip(0, len(ids) - 1)
    if (ids[order[at]] != keys).any():
        return None
    return order[at]


def _ids_positions_texts(model: Any, text: Any, study_id: int) -> Any:
    """One row: the count, ids, positions and one text column of *model*'s rows of a
    study (slots or items), each a ``group_concat``."""
    return select(
        func.count(),
        func.group_concat(model.id),
        func.group_concat(model.position),
        _text_column(text),
    ).where(model.study_id == study_id)


def _sqlite(source: Source, study_id: int) -> RatingArrays | None:
    """Three single-row queries in one snapshot, none with a join: every rating of the study
    (superseded ones included), the study's slots and its items, each column one
    ``group_concat`` (the aggregates of one SELECT see the rows in the same order, so the
    columns stay aligned) parsed by NumPy's C parser or cut into an Arrow string array.
    The current rating of a slot (its highest id) and the joins are then done in NumPy:
    SQLite's anti-join and two joins per rating cost more than the whole read. The
    annotator and the flags share one integer (``annotator_id * 8 + flags``)."""
    r = Rating.__table__.c
    # Booleans and comparisons are 0 or 1 in SQLite: cheaper than CASE expressions.
    packed: Any = literal_column(
        f"{r.annotator_id} * 8 + {r.unclear} + 2 * ({r.elapsed_ms} IS NULL)"
        f" + 4 * ({r.comment} != '')"
    )
    ratings = select(
        func.count(),
        func.group_concat(r.id),
        func.group_concat(r.assignment_id),
        func.group_concat(r.item_id),
        func.group_concat(packed),
        func.group_concat(func.coalesce(r.elapsed_ms, 0)),
        func.group_concat(r.rated_at, ""),
        _text_column(r.value),
    ).where(r.study_id == study_id)
    slots = _ids_positions_texts(Assignment, Assignment.kind, study_id)
    items = _ids_positions_texts(Item, Item.pair_id, study_id)
    engine = engine_of(source)
    with _snapshot(source) as cursor:
        n, rids, slot_of, item_of, packs, mss, times, value_text = _one(cursor, engine, ratings)
        n = int(n)
        if not n:
            return _empty()
        n_slots, slot_ids, slot_pos, kind_text = _one(cursor, engine, slots)
        n_items, item_ids, item_pos, pair_text = _one(cursor, engine, items)
        rid, slot = _ints(rids, n), _ints(slot_of, n)
        latest = _latest(rid, slot)
        rid, slot = rid[latest], slot[latest]
        code = _ints(packs, n)[latest]
        comments, comment_code = _comments(cursor, engine, study_id, rid, (code & 4) > 0)
    rated_at = _times(times, n)
    values = _texts(value_text, n)
    kinds = _texts(kind_text, int(n_slots))
    pair_ids = _texts(pair_text, int(n_items))
    if rated_at is None or values is None or kinds is None or pair_ids is None:
        return None  # a date-time in another form, a text holding the separator: DBAPI path
    joined = _joined(
        slot,
        _ints(item_of, n)[latest],
        (_ints(slot_ids, int(n_slots)), _ints(slot_pos, int(n_slots)), kinds),
        (_ints(item_ids, int(n_items)), _ints(item_pos, int(n_items)), pair_ids),
    )
    if joined is None:
        return None
    value_code, value_list = _codes(values.take(pa.array(latest)))
    return RatingArrays(
        annotator_id=code >> 3,
        **joined,
        value_code=value_code,
        values=value_list,
        comment_code=comment_code,
        comments=comments,
        unclear=(code & 1).astype(bool),
        elapsed_ms=_ints(mss, n)[latest],
        elapsed_missing=(code & 2).astype(bool),
        rated_at=rated_at[latest],
        rating_id=rid,
        slot_id=slot,
        total=n,
    )


#: Characters of a date-time as SQLAlchemy stores it in SQLite: 'YYYY-MM-DD HH:MM:SS.ffffff'
#: (naive UTC), and where its separators are.
_TIME_WIDTH = 26
_TIME_MARKS = {4: b"-", 7: b"-", 10: b" ", 13: b":", 16: b":", 19: b"."}


def _times(text: str | None, n: int) -> np.ndarray | None:
    """*n* date-times concatenated without a separator as ``datetime64[us]``; None when
    they are not all in SQLAlchemy's 26-character form (checked character by character at
    every separator's place, so a shorter or longer value cannot shift the rest unseen)."""
    try:
        data = (text or "").encode("ascii")
    except UnicodeEncodeError:
        return None
    if len(data) != n * _TIME_WIDTH:
        return None
    grid = np.frombuffer(data, dtype=np.uint8).reshape(n, _TIME_WIDTH)
    for at, mark in _TIME_MARKS.items():
        if (grid[:, at] != mark[0]).any():
            return None
    try:
        return np.frombuffer(data, dtype=f"S{_TIME_WIDTH}").astype("datetime64[us]")
    except ValueError:
        return None


def _latest(rid: np.ndarray, slot: np.ndarray) -> np.ndarray:
    """Indices of the current rating of each slot: the one with the highest id (ratings
    are append-only), in the order read. Slots are indexed by their id's offset when the
    ids span a range not much wider than their number (a study's slots, created together),
    else by their rank (slots added years later would otherwise ask for a table as wide
    as every slot created in between)."""
    if not len(rid):
        return np.zeros(0, dtype=np.int64)
    base = int(slot.min())
    span = int(slot.max()) - base + 1
    if span <= 4 * len(slot) + 1024:
        index, width = slot - base, span
    else:
        distinct, index = np.unique(slot, return_inverse=True)
        width = len(distinct)
    top = np.full(width, -1, dtype=np.int64)
    np.maximum.at(top, index, rid)
    return np.flatnonzero(top[index] == rid)


def _comments(
    cursor: Any, engine: Engine, study_id: int, rid: np.ndarray, has_comment: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The distinct non-empty comments of the ratings *rid* where *has_comment*, and each
    rating's code into them (0: no comment)."""
    comments = [""]
    comment_code = np.zeros(len(rid), dtype=np.int64)
    if has_comment.any():
        wanted = rid[has_comment]
        q = select(Rating.id, Rating.comment).where(
            Rating.study_id == study_id, Rating.comment != ""
        )
        _execute(cursor, engine, q)
        found: dict[int, str] = dict(cursor.fetchall())
        distinct = sorted({found[int(r)] for r in wanted})
        comments += distinct
        index = {c: i + 1 for i, c in enumerate(distinct)}
        comment_code[has_comment] = [index[found[int(r)]] for r in wanted]
    return np.array(comments, dtype=object), comment_code


def _empty() -> RatingArrays:
    none = np.zeros(0, dtype=np.int64)
    text = np.zeros(0, dtype=object)
    return RatingArrays(
        none, none, none, none, text, none, text, none, text, none, text,
        none.astype(bool), none, none.astype(bool), none.astype("datetime64[us]"),
        none, none, 0,
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


def item_columns(source: Source, study_id: int) -> ItemColumns | None:
    """The items of study *study_id* column-wise (:class:`ItemColumns`): through ADBC on
    PostgreSQL (half the DBAPI read's CPU at 100,000 pairs); on SQLite one row of
    ``group_concat`` columns cut into Arrow string arrays (no Python ``str`` per text).
    None when a text is NULL, or on SQLite holds the separator (callers then read through
    the DBAPI)."""
    cols = [getattr(Item, c) for c in ITEM_TEXT]
    label = Item.auto_label
    engine = engine_of(source)
    if engine.dialect.name == "postgresql":
        q = (
            select(*cols, func.coalesce(label, 0), label.is_(None))
            .where(Item.study_id == study_id)
            .order_by(Item.position)
        )
        t = fetch_arrow(source, q, (*ITEM_TEXT, "label", "missing"))
        if any(t.column(c).null_count for c in ITEM_TEXT):
            return None
        return ItemColumns(
            {c: t.column(c).combine_chunks() for c in ITEM_TEXT},
            _int(t.column("label")),
            t.column("missing").to_numpy().astype(bool),
        )
    if engine.dialect.name == "sqlite":
        try:
            return _sqlite_items(source, study_id)
        except sqlite3.DataError:  # a concatenation over SQLite's length limit (1 GB)
            return None
    return None


def _sqlite_items(source: Source, study_id: int) -> ItemColumns | None:
    texts = [_text_column(getattr(Item, c)) for c in ITEM_TEXT]
    label = Item.auto_label
    q = select(
        func.count(),
        func.group_concat(Item.position),
        func.group_concat(func.coalesce(label, 0)),
        func.group_concat(case((label.is_(None), 1), else_=0)),
        *texts,
    ).where(Item.study_id == study_id)
    with _snapshot(source) as cursor:
        n, positions, labels, missing, *joined = _one(cursor, engine_of(source), q)
    n = int(n)
    arrays = [_texts(blob, n) for blob in joined]
    if any(a is None for a in arrays):
        return None
    order = pa.array(np.argsort(_ints(positions, n), kind="stable"))
    return ItemColumns(
        {c: a.take(order) for c, a in zip(ITEM_TEXT, arrays, strict=True) if a is not None},
        _ints(labels, n)[order.to_numpy()],
        _ints(missing, n)[order.to_numpy()].astype(bool),
    )
