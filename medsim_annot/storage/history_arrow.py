"""Column-wise read of a study's whole rating history (superseded ratings included, the
append-only record quality over time is computed from), the way :mod:`.arrow` reads the
current ratings: no Python object per value.

:func:`medsim_annot.storage.studies.rating_history` joins each rating to its pair, doctor
and slot and returns one tuple per rating; at 300,000 ratings building those tuples (and a
tz-aware ``datetime`` per rating) is most of the time quality over time takes. Here:

* **SQLite**: one single-row query on the ratings, each column one ``group_concat`` parsed
  by NumPy or cut into an Arrow string array, through the engine's own ``sqlite3``
  connection, in one read transaction with three small queries (the study's slots, items
  and annotators); the few non-empty comments come from a query by rating id.
* **PostgreSQL**: the same four join-free queries through ADBC, in one REPEATABLE READ
  snapshot.

The joins (pair id, doctor's name, slot kind) are done in NumPy. :func:`rating_history_arrays`
returns None when the stored values do not fit that form (a date-time not in the form
SQLAlchemy writes, a text holding the separator, a rating whose pair, slot or doctor is not
the study's): callers then read the ORM rows.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from sqlalchemy import func, literal_column, select

from medsim_annot.storage import arrow
from medsim_annot.storage.db import Source, engine_of
from medsim_annot.storage.models import Annotator, Assignment, Item, Rating

#: Stands for a rating without a guideline version (versions start at 1).
_NO_VERSION = -1


@dataclass(frozen=True)
class HistoryArrays:
    """Every saved rating of a study, oldest (lowest id) first, one NumPy array per column.
    Texts are codes into small lookup arrays (object arrays of ``str``):
    ``pair_ids[pair_code]``, ``names[annotator_code]``, ``values[value_code]``,
    ``comments[comment_code]``, ``sources[source_code]``, ``kinds[kind_code]``."""

    rating_id: np.ndarray  # int64, ascending
    pair_code: np.ndarray
    pair_ids: np.ndarray
    annotator_code: np.ndarray
    names: np.ndarray
    value_code: np.ndarray
    values: np.ndarray
    unclear: np.ndarray  # bool
    comment_code: np.ndarray
    comments: np.ndarray
    rated_at: np.ndarray  # datetime64[us], naive UTC
    elapsed_ms: np.ndarray  # int64, 0 where missing
    elapsed_missing: np.ndarray  # bool
    source_code: np.ndarray
    sources: np.ndarray
    kind_code: np.ndarray
    kinds: np.ndarray
    guideline_version: np.ndarray  # int64, 0 where missing
    guideline_missing: np.ndarray  # bool

    def __len__(self) -> int:
        return len(self.rating_id)


def rating_history_arrays(source: Source, study_id: int) -> HistoryArrays | None:
    """Every saved rating of study *study_id* as :class:`HistoryArrays`, or None when they
    do not fit the column-wise form (see the module's docstring)."""
    engine = engine_of(source)
    if engine.dialect.name == "postgresql":
        return _postgres(source, study_id)
    if engine.dialect.name == "sqlite":
        try:
            return _sqlite(source, study_id)
        except sqlite3.DataError:  # a concatenation over SQLite's length limit (1 GB)
            return None
    raise ValueError(f"no column-wise read for {engine.dialect.name} databases")


def _small_tables(study_id: int) -> tuple[Any, Any, Any]:
    """The study's slots (id, kind), items (id, pair id) and annotators (id, name)."""
    return (
        select(Assignment.id, Assignment.kind).where(Assignment.study_id == study_id),
        select(Item.id, Item.pair_id).where(Item.study_id == study_id),
        select(Annotator.id, Annotator.name).where(Annotator.study_id == study_id),
    )


def _joined(
    ids: tuple[np.ndarray, np.ndarray, np.ndarray],
    slots: tuple[np.ndarray, pa.Array],
    items: tuple[np.ndarray, pa.Array],
    annotators: tuple[np.ndarray, pa.Array],
) -> dict[str, np.ndarray] | None:
    """Each rating's slot kind, pair id and doctor's name (*ids*: the ratings' slot, item
    and annotator ids) as codes into lookup arrays; None when one is not the study's."""
    out: dict[str, np.ndarray] = {}
    for (code, lookup), rating_ids, (table_ids, text) in zip(
        (("kind_code", "kinds"), ("pair_code", "pair_ids"), ("annotator_code", "names")),
        ids,
        (slots, items, annotators),
    ):
        at = arrow._lookup(table_ids, rating_ids)
        if at is None:
            return None
        out[code] = at.astype(np.int64, copy=False)
        out[lookup] = np.asarray(text.to_pylist(), dtype=object)
    return out


def _sorted(h: HistoryArrays) -> HistoryArrays:
    """*h* in rating id order (the order the ORM read gives)."""
    order = np.argsort(h.rating_id, kind="stable")
    if len(order) and (np.diff(order) == 1).all():
        return h
    kept = {f: getattr(h, f) for f in _LOOKUP_FIELDS}
    per = {f: getattr(h, f)[order] for f in _PER_RATING}
    return HistoryArrays(**per, **kept)


_LOOKUP_FIELDS = ("pair_ids", "names", "values", "comments", "sources", "kinds")
_PER_RATING = tuple(f for f in HistoryArrays.__dataclass_fields__ if f not in _LOOKUP_FIELDS)


# --------------------------------------------------------------------------- SQLite
def _ids_texts(model: Any, text: Any, study_id: int) -> Any:
    """One row: the count, ids and one text column of *model*'s rows of a study, each a
    ``group_concat`` (no Python object per row)."""
    return select(func.count(), func.group_concat(model.id), arrow._text_column(text)).where(
        model.study_id == study_id
    )


def _sqlite(source: Source, study_id: int) -> HistoryArrays | None:
    r = Rating.__table__.c
    # Booleans and comparisons are 0 or 1 in SQLite (as in arrow._sqlite).
    packed: Any = literal_column(
        f"{r.annotator_id} * 16 + {r.unclear} + 2 * ({r.elapsed_ms} IS NULL)"
        f" + 4 * ({r.comment} != '') + 8 * ({r.guideline_version} IS NULL)"
    )
    ratings = select(
        func.count(),
        func.group_concat(r.id),
        func.group_concat(r.assignment_id),
        func.group_concat(r.item_id),
        func.group_concat(packed),
        func.group_concat(func.coalesce(r.elapsed_ms, 0)),
        func.group_concat(func.coalesce(r.guideline_version, 0)),
        func.group_concat(r.rated_at, ""),
        arrow._text_column(r.value),
        arrow._text_column(r.source),
    ).where(r.study_id == study_id)
    engine = engine_of(source)
    with arrow._snapshot(source) as cursor:
        row = arrow._one(cursor, engine, ratings)
        n = int(row[0])
        rids, slot_of, item_of, packs, mss, gvs, times, value_text, source_text = row[1:]
        rid = arrow._ints(rids, n)
        code = arrow._ints(packs, n)
        comments, comment_code = arrow._comments(cursor, engine, study_id, rid, (code & 4) > 0)
        small = []
        for model, text in (
            (Assignment, Assignment.kind),
            (Item, Item.pair_id),
            (Annotator, Annotator.name),
        ):
            count, ids, texts = arrow._one(cursor, engine, _ids_texts(model, text, study_id))
            small.append((arrow._ints(ids, int(count)), arrow._texts(texts, int(count))))
    rated_at = arrow._times(times, n)
    values = arrow._texts(value_text, n)
    sources = arrow._texts(source_text, n)
    if rated_at is None or values is None or sources is None:
        return None
    joined = _joined((arrow._ints(slot_of, n), arrow._ints(item_of, n), code >> 4), *small)
    if joined is None:
        return None
    value_code, value_list = arrow._codes(values)
    source_code, source_list = arrow._codes(sources)
    return _sorted(
        HistoryArrays(
            rating_id=rid,
            **joined,
            value_code=value_code,
            values=value_list,
            unclear=(code & 1).astype(bool),
            comment_code=comment_code,
            comments=comments,
            rated_at=rated_at,
            elapsed_ms=arrow._ints(mss, n),
            elapsed_missing=(code & 2).astype(bool),
            source_code=source_code,
            sources=source_list,
            guideline_version=arrow._ints(gvs, n),
            guideline_missing=(code & 8).astype(bool),
        )
    )


# --------------------------------------------------------------------------- PostgreSQL
def _postgres(source: Source, study_id: int) -> HistoryArrays | None:
    names = ("id", "slot", "item", "ann", "value", "comment", "unclear", "ms", "at", "src", "gv")
    r = (
        select(
            Rating.id,
            Rating.assignment_id,
            Rating.item_id,
            Rating.annotator_id,
            Rating.value,
            Rating.comment,
            Rating.unclear,
            Rating.elapsed_ms,
            Rating.rated_at,
            Rating.source,
            Rating.guideline_version,
        )
        .where(Rating.study_id == study_id)
        .order_by(Rating.id)
    )
    q_slots, q_items, q_anns = _small_tables(study_id)
    engine = engine_of(source)
    with arrow._adbc(source) as cur:
        t = arrow._arrow(cur, engine, r, names)
        small = [arrow._arrow(cur, engine, q, ("id", "text")) for q in (q_slots, q_items, q_anns)]
    if any(t.column(c).null_count for c in ("value", "comment", "unclear", "at", "src")):
        return None  # not in the NOT NULL form the codes stand for: the ORM read
    joined = _joined(
        (arrow._int(t.column("slot")), arrow._int(t.column("item")), arrow._int(t.column("ann"))),
        *(
            (arrow._int(s.column("id")), s.column("text").combine_chunks().cast(pa.string()))
            for s in small
        ),
    )
    if joined is None:
        return None
    value_code, values = arrow._codes(t.column("value"))
    comment_code, comments = arrow._codes(t.column("comment"))
    source_code, sources = arrow._codes(t.column("src"))
    ms, gv = t.column("ms"), t.column("gv")
    return _sorted(
        HistoryArrays(
            rating_id=arrow._int(t.column("id")),
            **joined,
            value_code=value_code,
            values=values,
            unclear=t.column("unclear").to_numpy().astype(bool),
            comment_code=comment_code,
            comments=comments,
            rated_at=t.column("at").cast(pa.timestamp("us")).to_numpy().astype("datetime64[us]"),
            elapsed_ms=ms.fill_null(0).to_numpy().astype(np.int64, copy=False),
            elapsed_missing=ms.is_null().to_numpy(zero_copy_only=False).astype(bool),
            source_code=source_code,
            sources=sources,
            guideline_version=gv.fill_null(0).to_numpy().astype(np.int64, copy=False),
            guideline_missing=gv.is_null().to_numpy(zero_copy_only=False).astype(bool),
        )
    )
