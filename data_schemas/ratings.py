"""The **ratings** contract (long format): one row per saved judgement.

Columns: ``pair_id``, ``annotator``, ``rating`` (a value of the study's scale: ``same``,
``not_same``, ``dont_know`` for the binary scale, the number for numeric scales), optional
``rated_at`` (ISO 8601), ``comment``, ``unclear`` (true/false/1/0/yes/no).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import columns as C
from ._text import N_, tr
from ._validate import CONTROL_EXPLANATION, no_control_chars, pa, run_schema
from .errors import InputError, Problem
from .gold import FALSE_TEXT, TRUE_TEXT
from .scales import Scale

# The same words mean true and false in every file the project reads (the gold contract's).
_TRUE = TRUE_TEXT
_FALSE = FALSE_TEXT

_non_empty = pa.Check(lambda s: s.str.strip().str.len() > 0, name="non_empty")

SCHEMA = pa.DataFrameSchema(
    {
        C.PAIR_ID: pa.Column(str, checks=[_non_empty, no_control_chars]),
        C.ANNOTATOR: pa.Column(str, checks=[_non_empty, no_control_chars]),
        C.RATING: pa.Column(str),
        C.UNCLEAR: pa.Column(str, checks=pa.Check.isin(sorted(_TRUE | _FALSE)), required=False),
    },
    strict=False,
)

_EXPLAIN = {
    "non_empty": N_("is empty"),
    "no_control_chars": CONTROL_EXPLANATION,
    f"{C.UNCLEAR}:isin": N_("unclear must be true/false (or 1/0, yes/no), not '{value}'"),
}


def validate_ratings(
    frame: pd.DataFrame,
    scale: Scale,
    file: str | None = None,
    *,
    known_pairs: set[str] | None = None,
) -> pd.DataFrame:
    """Check a long ratings frame against *scale* and return it typed.

    ``rating`` becomes the scale's canonical value, empty ratings are "not rated" and dropped,
    ``rated_at`` becomes a UTC timestamp (``NaT`` when absent), ``unclear`` a bool.
    With *known_pairs*, a ``pair_id`` not among them is an error.
    """
    df = frame.copy()
    missing = [c for c in C.RATING_REQUIRED if c not in df.columns]
    if missing:
        raise InputError(
            [Problem(tr("required column is missing"), column=c) for c in missing], file
        )
    for col in df.columns:
        df[col] = df[col].map(lambda v: "" if v is None else str(v)).str.strip()
    if C.UNCLEAR in df.columns:
        df[C.UNCLEAR] = df[C.UNCLEAR].str.lower()
    df = run_schema(SCHEMA, df, file, _EXPLAIN)
    problems: list[Problem] = []
    values: list[object] = []
    keep = []
    for i, (pid, raw) in enumerate(zip(df[C.PAIR_ID], df[C.RATING])):
        if raw == "":
            keep.append(False)
            values.append(None)
            continue
        try:
            values.append(scale.canonical(raw))
            keep.append(True)
        except ValueError as exc:
            problems.append(Problem(str(exc), row=i + 2, column=C.RATING))
            values.append(None)
            keep.append(False)
        if known_pairs is not None and pid not in known_pairs:
            problems.append(
                Problem(
                    tr("pair_id '{pair_id}' is not in the pairs file", pair_id=pid),
                    row=i + 2,
                    column=C.PAIR_ID,
                )
            )
    rated = pd.Series([pd.NaT] * len(df), dtype="datetime64[ns, UTC]")
    if C.RATED_AT in df.columns:
        for i, raw in enumerate(df[C.RATED_AT]):
            if raw == "":
                continue
            try:
                rated.iloc[i] = (
                    pd.Timestamp(raw).tz_localize("UTC")
                    if pd.Timestamp(raw).tzinfo is None
                    else pd.Timestamp(raw).tz_convert("UTC")
                )
            except (ValueError, TypeError):
                problems.append(
                    Problem(
                        tr("rated_at '{value}' is not an ISO 8601 date-time", value=raw),
                        row=i + 2,
                        column=C.RATED_AT,
                    )
                )
    if problems:
        raise InputError(problems, file)
    out = pd.DataFrame(
        {
            C.PAIR_ID: df[C.PAIR_ID].to_numpy(),
            C.ANNOTATOR: df[C.ANNOTATOR].to_numpy(),
            C.RATING: pd.Series(values, dtype=object).to_numpy(),
            C.RATED_AT: rated.to_numpy(),
            C.COMMENT: (
                df[C.COMMENT] if C.COMMENT in df.columns else pd.Series([""] * len(df))
            ).to_numpy(),
            C.UNCLEAR: (
                df[C.UNCLEAR].isin(_TRUE)
                if C.UNCLEAR in df.columns
                else pd.Series([False] * len(df))
            ).to_numpy(dtype=bool),
        }
    )
    out = out[pd.Series(keep, dtype=bool).to_numpy()].reset_index(drop=True)
    out[C.RATED_AT] = pd.to_datetime(out[C.RATED_AT], utc=True)
    dup = out.duplicated([C.PAIR_ID, C.ANNOTATOR], keep=False) & out[C.RATED_AT].isna()
    if dup.any():
        first = out[dup].iloc[0]
        raise InputError.single(
            tr(
                "annotator '{annotator}' rates pair '{pair_id}' more than once without "
                "rated_at: add rated_at so the latest rating can be told apart",
                annotator=first[C.ANNOTATOR],
                pair_id=first[C.PAIR_ID],
            ),
            file=file,
            column=C.RATING,
        )
    return out


def per_distinct(values: pd.Series, fn) -> list:
    """``[fn(v) for v in values]``, calling *fn* once per distinct value (the scale's
    lookups on 100,000s of ratings that take a handful of values).

    Values are grouped by ``pd.factorize`` (Python equality) only when that cannot merge
    values *fn* may tell apart — a column of strings, of integers, of booleans, or of floats
    without a negative zero; any other column (e.g. ``1`` and ``1.0`` and ``"1"`` mixed,
    which a scale compares by their text) is mapped row by row. Missing values are mapped
    row by row too (``None`` and ``NaN`` would be one group).

    >>> from data_schemas.scales import BINARY
    >>> r = pd.Series(["same", "dont_know", "same", "not_same"])
    >>> per_distinct(r, BINARY.code) == [BINARY.code(v) for v in r]
    True
    >>> per_distinct(pd.Series([1, 1.0, "1"], dtype=object), repr)
    ['1', '1.0', "'1'"]
    """
    groups = _distinct(values)
    if groups is None:
        return [fn(v) for v in values.to_numpy(dtype=object)]
    codes, uniques = groups
    mapped = [fn(v) for v in uniques]
    return [mapped[c] for c in codes]


def _distinct(values: pd.Series) -> tuple[np.ndarray, np.ndarray] | None:
    """``pd.factorize`` of *values* when grouping by Python equality cannot merge values a
    scale tells apart (see :func:`per_distinct`), else ``None``.

    A text column (pandas' ``str`` dtype) without missing values holds only ``str``: it is
    factorized as it is (Arrow's dictionary encoding, no Python object per value), with the
    same codes, in order of first appearance, as the object array gives."""
    if len(values) and isinstance(values.dtype, pd.StringDtype) and not values.hasnans:
        codes, uniques = pd.factorize(values, use_na_sentinel=False)
        return np.asarray(codes), np.asarray(uniques, dtype=object)
    arr = values.to_numpy(dtype=object) if len(values) else np.zeros(0, dtype=object)
    kind = pd.api.types.infer_dtype(arr, skipna=False) if len(arr) else "empty"
    exact = kind in ("string", "integer", "boolean", "empty")
    if kind == "floating":
        num = arr.astype(np.float64)
        exact = not ((num == 0) & np.signbit(num)).any() and not np.isnan(num).any()
    if not exact:
        return None
    codes, uniques = pd.factorize(arr, use_na_sentinel=False)
    return codes, uniques


def code_ratings(frame: pd.DataFrame, scale: Scale) -> pd.DataFrame:
    """*frame* (with a ``rating`` column of scale values) plus ``value`` (the scale's code,
    NaN for no decision) and ``no_decision``; the scale is consulted once per distinct
    rating (:func:`per_distinct`). Every rating is kept (no latest-per-pair selection: see
    :func:`to_ratings_frame`).

    >>> from data_schemas.scales import BINARY
    >>> code_ratings(pd.DataFrame({"rating": ["same", "dont_know"]}), BINARY)["value"].tolist()
    [1.0, nan]
    """
    df = frame.copy()
    value = scale.rating_code
    groups = _distinct(df[C.RATING])
    if groups is None:
        df[C.VALUE] = pd.array(per_distinct(df[C.RATING], value), dtype="float64")
        df[C.NO_DECISION] = per_distinct(df[C.RATING], scale.is_no_decision)
        return df
    codes, uniques = groups
    values = np.array([value(v) for v in uniques], dtype=np.float64)
    nd = np.array([scale.is_no_decision(v) for v in uniques], dtype=bool)
    df[C.VALUE] = values[codes] if len(codes) else np.zeros(0, dtype=np.float64)
    df[C.NO_DECISION] = nd[codes] if len(codes) else np.zeros(0, dtype=bool)
    return df


def to_ratings_frame(ratings: pd.DataFrame, scale: Scale) -> pd.DataFrame:
    """The frame the statistics take (docs/architecture.md): ``pair_id``, ``annotator``,
    ``value`` (numeric code, NaN for a no-decision rating), ``rated_at``, ``no_decision``, plus the raw
    ``rating`` and ``unclear``/``comment`` when present. Only the latest rating per
    (pair, annotator) is kept. The scale is consulted once per distinct rating value
    (:func:`per_distinct`), which gives the same frame as once per row:

    >>> from data_schemas.scales import BINARY
    >>> cur = pd.DataFrame({"pair_id": ["b", "a", "a"], "annotator": ["X", "X", "Y"],
    ...                     "rating": ["dont_know", "same", "same"]})
    >>> rf = to_ratings_frame(cur, BINARY)
    >>> rf[["pair_id", "annotator", "value", "no_decision"]].values.tolist()
    [['a', 'X', 1.0, False], ['a', 'Y', 1.0, False], ['b', 'X', nan, True]]
    >>> row_by_row = [np.nan if BINARY.code(v) is None else float(BINARY.code(v))
    ...               for v in rf["rating"]]
    >>> rf["value"].equals(pd.Series(row_by_row, dtype="float64"))
    True
    """
    df = ratings.copy()
    if C.RATED_AT in df.columns and len(df):
        df = df.sort_values(C.RATED_AT, kind="stable", na_position="first")
        df = df.drop_duplicates([C.PAIR_ID, C.ANNOTATOR], keep="last")
    df = code_ratings(df, scale)
    if C.RATED_AT not in df.columns:
        df[C.RATED_AT] = pd.NaT
    cols = [C.PAIR_ID, C.ANNOTATOR, C.VALUE, C.RATED_AT, C.NO_DECISION, C.RATING]
    cols += [c for c in (C.UNCLEAR, C.COMMENT) if c in df.columns]
    return df[cols].sort_values([C.PAIR_ID, C.ANNOTATOR], kind="stable").reset_index(drop=True)


def _text_column(values: pd.Series) -> bool:
    """Only ``str`` values, none missing (grouping and sorting them as integer codes gives
    what pandas gives on the strings)."""
    return pd.api.types.is_string_dtype(values) and not values.isna().any()


def latest_coded(
    ratings: pd.DataFrame, scale: Scale
) -> tuple[pd.DataFrame, np.ndarray, pd.Index, np.ndarray, pd.Index] | None:
    """:func:`to_ratings_frame` computed on integer codes: the pair ids and annotators are
    factorized once (sorted), and the latest rating per (pair, annotator) and the
    (pair, annotator) order are found by sorting integers, not strings.

    Returns the frame (equal to ``to_ratings_frame(ratings, scale)``), each of its rows'
    pair code and annotator code, and the sorted distinct pair ids and annotators the codes
    index (those of *ratings*: a pair or annotator whose every rating was superseded keeps
    its code) — or None when a column does not fit (pair ids or annotators not all text,
    missing ones, ``rated_at`` not a date-time column, no rows).

    >>> from data_schemas.scales import BINARY
    >>> cur = pd.DataFrame({"pair_id": ["b", "a", "a"], "annotator": ["X", "X", "Y"],
    ...                     "rating": ["dont_know", "same", "same"]})
    >>> frame, item, items, who, names = latest_coded(cur, BINARY)
    >>> frame.equals(to_ratings_frame(cur, BINARY)), item.tolist(), who.tolist()
    (True, [0, 0, 1], [0, 1, 0])
    """
    if not len(ratings) or not all(
        _text_column(ratings[c]) for c in (C.PAIR_ID, C.ANNOTATOR) if c in ratings.columns
    ):
        return None
    if C.PAIR_ID not in ratings.columns or C.ANNOTATOR not in ratings.columns:
        return None
    item, items = pd.factorize(ratings[C.PAIR_ID], sort=True)
    who, names = pd.factorize(ratings[C.ANNOTATOR], sort=True)
    item, who = np.asarray(item, dtype=np.int64), np.asarray(who, dtype=np.int64)
    if C.RATED_AT in ratings.columns:
        at = ratings[C.RATED_AT]
        if not pd.api.types.is_datetime64_any_dtype(at):
            return None
        # Stable by time with missing times (the smallest int64) first, then the last row
        # of each (pair, annotator): the sort and drop_duplicates of to_ratings_frame.
        by_time = np.argsort(np.asarray(at.array.asi8), kind="stable")
        key = (item * len(names) + who)[by_time]
        if len(items) * len(names) <= 4 * len(key):  # a table per (pair, annotator)
            last = np.full(len(items) * len(names), -1, dtype=np.int64)
            np.maximum.at(last, key, np.arange(len(key)))
            rows = by_time[last[last >= 0]]  # in (pair, annotator) order
        else:
            _, first = np.unique(key[::-1], return_index=True)  # sorted by (pair, annotator)
            rows = by_time[len(key) - 1 - first]
    else:
        rows = np.lexsort((who, item))  # stable: repeated ratings keep their order
    df = code_ratings(ratings.take(rows), scale)
    if C.RATED_AT not in df.columns:
        df[C.RATED_AT] = pd.NaT
    cols = [C.PAIR_ID, C.ANNOTATOR, C.VALUE, C.RATED_AT, C.NO_DECISION, C.RATING]
    cols += [c for c in (C.UNCLEAR, C.COMMENT) if c in df.columns]
    return df[cols].reset_index(drop=True), item[rows], pd.Index(items), who[rows], pd.Index(names)


def sorted_coded(
    ratings: pd.DataFrame,
) -> tuple[pd.DataFrame, np.ndarray, pd.Index, np.ndarray, pd.Index] | None:
    """``ratings.sort_values([pair_id, annotator], kind="stable")`` by integer codes, with
    each row's pair code and annotator code and the sorted distinct pair ids and annotators
    they index (as :func:`latest_coded`), or None when the pair ids or annotators are not
    all text.

    >>> r = pd.DataFrame({"pair_id": ["b", "a", "b"], "annotator": ["X", "Y", "W"]})
    >>> frame, item, items, who, names = sorted_coded(r)
    >>> frame.equals(r.sort_values(["pair_id", "annotator"], kind="stable")), who.tolist()
    (True, [2, 0, 1])
    """
    cols = (C.PAIR_ID, C.ANNOTATOR)
    if not len(ratings) or not all(c in ratings.columns and _text_column(ratings[c]) for c in cols):
        return None
    item, items = pd.factorize(ratings[C.PAIR_ID], sort=True)
    who, names = pd.factorize(ratings[C.ANNOTATOR], sort=True)
    item, who = np.asarray(item, dtype=np.int64), np.asarray(who, dtype=np.int64)
    rows = np.lexsort((who, item))  # stable
    return ratings.take(rows), item[rows], pd.Index(items), who[rows], pd.Index(names)
