"""Helpers shared by the statistics: result types, level names and :class:`CodedRatings`,
the ratings as integer arrays (items, annotators, values) that every statistic takes.

A statistic accepts a ratings frame or a :class:`CodedRatings`; a frame is coded first
(:func:`encode`), so each statistic has one code path, on the codes. Statistics computed
together on the same ratings (the agreement report, the dashboard) share one
:class:`CodedRatings`, built once per read of the ratings (:func:`coded_ratings`)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from data_schemas import columns as C
from data_schemas.ratings import latest_coded, to_ratings_frame
from data_schemas.scales import LEVELS as LEVEL_OPTIONS
from data_schemas.scales import Scale

LEVELS: tuple[str, ...] = LEVEL_OPTIONS.values


@dataclass(frozen=True)
class Estimate:
    """A coefficient with the number of items it rests on and, when it is NaN, the reason.

    ``value`` is NaN exactly when ``reason`` is set (degenerate input is never an exception).
    """

    value: float
    n_items: int = 0
    reason: str | None = None

    def __float__(self) -> float:
        return float(self.value)


def nan(reason: str, n_items: int = 0) -> Estimate:
    return Estimate(float("nan"), n_items, reason)


def level_of(scale_or_level: Scale | str) -> str:
    """The level of measurement named by *scale_or_level* (a :class:`Scale` or a level name)."""
    if isinstance(scale_or_level, Scale):
        return scale_or_level.level
    if isinstance(scale_or_level, str) and scale_or_level in LEVELS:
        return scale_or_level
    raise ValueError(f"level must be one of {', '.join(LEVELS)} or a Scale, not {scale_or_level!r}")


@dataclass(frozen=True, eq=False)
class CodedRatings:
    """Ratings as integer arrays, one entry per row of ``frame``: what every statistic takes.

    ``frame`` is the ratings frame (``pair_id``, ``annotator``, ``value``, and ``rated_at``,
    ``no_decision``, ``rating``... when present), row *r* of which is coded by entry *r* of
    the arrays; built by :func:`coded_ratings` from current ratings it holds the latest
    rating per (pair, annotator), in (pair, annotator) order. ``item`` indexes ``items``,
    ``annotator`` indexes ``annotators`` (both sorted unless the caller fixed the items),
    ``value`` is the float code (NaN for no decision), ``value_index`` indexes ``values``
    (sorted distinct decisive codes, or the value domain asked for; -1 for no decision).
    ``scale``: the scale the ratings were coded with, when known.
    """

    frame: pd.DataFrame = field(repr=False, compare=False)
    item: np.ndarray
    annotator: np.ndarray
    value: np.ndarray
    value_index: np.ndarray
    items: pd.Index
    annotators: pd.Index
    values: np.ndarray
    scale: Scale | None = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.item)

    @property
    def n_items(self) -> int:
        return len(self.items)

    @property
    def n_annotators(self) -> int:
        return len(self.annotators)

    @functools.cached_property
    def slots(self) -> SlotMatrix:
        """:func:`slot_matrix` of these ratings (ICC and Kendall's W share it)."""
        return slot_matrix(self)

    def counts(self) -> np.ndarray:
        """Value counts per item, shape (n_items, n_values): ``counts[u, c]`` = number of
        decisive ratings of item ``u`` with value ``values[c]``."""
        v = len(self.values)
        ok = self.value_index >= 0
        flat = np.bincount(self.item[ok] * v + self.value_index[ok], minlength=self.n_items * v)
        return flat.reshape(self.n_items, v).astype(np.float64)

    def matrix(self) -> np.ndarray:
        """The items x annotators matrix of codes, NaN where not rated or no decision."""
        out = np.full((self.n_items, self.n_annotators), np.nan)
        out[self.item, self.annotator] = self.value
        return out

    def with_values(self, values=None) -> CodedRatings:
        """The same rows with the value domain *values* (default: the decisive codes
        present), as ``encode(frame, values=values)`` gives them."""
        if values is None and self.values is not None and _is_present_domain(self):
            return self
        values, vidx = _value_index(self.value, values)
        return replace(self, value_index=vidx, values=values)

    def rows(self, keep: np.ndarray) -> CodedRatings:
        """The rows where *keep* is true, with the items, annotators and values renumbered
        over those present: ``encode(frame[keep])``."""
        keep = np.asarray(keep, dtype=bool)
        if keep.all():
            return self
        frame = self.frame[keep].reset_index(drop=True)
        return CodedRatings.from_codes(
            frame,
            self.item[keep],
            self.items,
            self.annotator[keep],
            self.annotators,
            scale=self.scale,
        )

    def on_items(self, items) -> CodedRatings:
        """The rows whose pair is among *items*, with *items* (in their order) as the item
        index: ``encode(frame, items=items, values=...)`` with the same value domain (items
        without ratings stay, with no row)."""
        items = pd.Index(items)
        where = items.get_indexer(np.asarray(self.items, dtype=object))  # the distinct ids
        item = where[self.item] if len(self.item) else np.zeros(0, dtype=np.int64)
        keep = item >= 0
        out = self if keep.all() else self.rows(keep).with_values(self.values)
        return replace(out, item=item[keep].astype(np.int64), items=items)

    @classmethod
    def from_codes(
        cls, frame: pd.DataFrame, item, items, annotator, annotators, *, scale: Scale | None = None
    ) -> CodedRatings:
        """The codes of *frame* from pair and annotator codes the caller has already (codes
        into sorted distinct values, e.g. from one factorize per read), equal to
        :func:`encode` of the frame: the codes are renumbered over the values present."""
        item, items = compact(np.asarray(item, dtype=np.int64), items)
        annotator, annotators = compact(np.asarray(annotator, dtype=np.int64), annotators)
        value = frame[C.VALUE].to_numpy(dtype=np.float64, na_value=np.nan)
        values, vidx = _value_index(value, None)
        return cls(
            frame,
            item,
            annotator,
            value,
            vidx,
            pd.Index(items),
            pd.Index(np.asarray(annotators, dtype=object)),
            values,
            scale,
        )


def _is_present_domain(coded: CodedRatings) -> bool:
    """Whether ``coded.values`` are exactly the decisive codes present."""
    present = np.unique(coded.value[~np.isnan(coded.value)])
    return len(present) == len(coded.values) and np.array_equal(present, coded.values)


def compact(codes: np.ndarray, uniques):
    """*codes* renumbered over the *uniques* they use (in order), and those uniques."""
    used = np.bincount(codes, minlength=len(uniques)) > 0
    if used.all():
        return codes, uniques
    return (np.cumsum(used) - 1)[codes], uniques[used]


def coded(data: pd.DataFrame | CodedRatings, *, values=None) -> CodedRatings:
    """*data* as :class:`CodedRatings` (a frame is coded by :func:`encode`), with the value
    domain *values* when given: how every statistic starts."""
    if isinstance(data, CodedRatings):
        return data if values is None else data.with_values(values)
    return encode(data, values=values)


def frame_of(data: pd.DataFrame | CodedRatings) -> pd.DataFrame:
    """The ratings frame of *data* (a frame or :class:`CodedRatings`)."""
    return data.frame if isinstance(data, CodedRatings) else data


def coded_ratings(current: pd.DataFrame, scale: Scale) -> CodedRatings:
    """The latest rating per (pair, annotator) of *current* (long current ratings with the
    scale's ``rating`` values), coded once: the frame is
    :func:`~data_schemas.ratings.to_ratings_frame` of *current*, and its pair ids and
    annotators are factorized once (:func:`~data_schemas.ratings.latest_coded`, sorting
    integers; a frame whose columns do not fit is coded from the ratings frame)."""
    cur = current.reset_index(drop=True)
    fast = latest_coded(cur, scale)
    if fast is not None:
        frame, item, items, who, names = fast
        return CodedRatings.from_codes(frame, item, items, who, names, scale=scale)
    if len(cur):
        return encode(to_ratings_frame(cur, scale), scale=scale)
    empty = pd.DataFrame(
        {
            C.PAIR_ID: pd.Series(dtype=object),
            C.ANNOTATOR: pd.Series(dtype=object),
            C.VALUE: pd.Series(dtype="float64"),
            C.RATED_AT: pd.Series(dtype="datetime64[ns, UTC]"),
            C.NO_DECISION: pd.Series(dtype=bool),
            C.RATING: pd.Series(dtype=object),
        }
    )
    return encode(empty, scale=scale)


def _value_index(value: np.ndarray, values) -> tuple[np.ndarray, np.ndarray]:
    ok = ~np.isnan(value)
    if values is None:
        values = np.unique(value[ok])
    values = np.asarray(values, dtype=np.float64)
    vidx = np.full(len(value), -1, dtype=np.int64)
    if len(values):
        pos = np.searchsorted(values, value[ok])
        pos = np.clip(pos, 0, len(values) - 1)
        if not np.array_equal(values[pos], value[ok]):
            raise ValueError("a rating value is not in the value domain")
        vidx[ok] = pos
    return values, vidx


def check_frame(ratings: pd.DataFrame) -> None:
    missing = [c for c in (C.PAIR_ID, C.ANNOTATOR, C.VALUE) if c not in ratings.columns]
    if missing:
        raise ValueError(
            f"the ratings frame lacks the column(s) {', '.join(missing)} "
            "(build it with data_schemas.ratings.to_ratings_frame)"
        )


def encode(
    ratings: pd.DataFrame, *, items=None, values=None, scale: Scale | None = None
) -> CodedRatings:
    """Code a ratings frame (``pair_id``, ``annotator``, ``value``).

    *items*: an index of pair ids fixing the item order (ratings of other pairs are dropped);
    *values*: the value domain (sorted codes); by default the decisive codes present.
    """
    check_frame(ratings)
    if items is None:
        item, uniq = pd.factorize(ratings[C.PAIR_ID], sort=True)
        items = pd.Index(uniq)
    else:
        items = pd.Index(items)
        item = positions(ratings[C.PAIR_ID], items)
    ann, anns = pd.factorize(ratings[C.ANNOTATOR], sort=True)
    value = ratings[C.VALUE].to_numpy(dtype=np.float64, na_value=np.nan)
    keep = item >= 0
    frame = ratings
    if not keep.all():
        item, ann, value = item[keep], ann[keep], value[keep]
        frame = ratings[keep]
    values, vidx = _value_index(value, values)
    return CodedRatings(
        frame,
        item.astype(np.int64),
        ann.astype(np.int64),
        value,
        vidx,
        items,
        pd.Index(np.asarray(anns, dtype=object)),
        values,
        scale,
    )


def positions(keys: pd.Series, items: pd.Index) -> np.ndarray:
    """Position of each key in *items* (-1 when absent), by Arrow's hash join for strings
    (several times faster than ``Index.get_indexer`` on millions of Python strings)."""
    try:
        arr = pa.array(keys, from_pandas=True)
        vs = pa.array(pd.Series(items), from_pandas=True)
        if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
            if not (pa.types.is_string(vs.type) or pa.types.is_large_string(vs.type)):
                raise TypeError("mixed key types")
            arr = arr.cast(pa.large_string())
            vs = vs.cast(pa.large_string())
            found = pc.fill_null(pc.index_in(arr, value_set=vs), -1)
            return found.to_numpy(zero_copy_only=False).astype(np.int64)
    except (TypeError, ValueError, NotImplementedError, ArithmeticError):
        pass
    except Exception as exc:  # pyarrow.ArrowException subclasses
        if exc.__class__.__module__.split(".")[0] != "pyarrow":
            raise
    return items.get_indexer(keys.to_numpy())


def group_index(pairs: pd.DataFrame, by: list[str]) -> tuple[np.ndarray, pd.DataFrame]:
    """Group number of every pair (every combination of the *by* columns present, sorted)
    and the frame of group keys; missing values form their own group ("")."""
    if not by:
        return np.zeros(len(pairs), dtype=np.int64), pd.DataFrame(index=[0])
    codes = np.zeros(len(pairs), dtype=np.int64)
    uniques = []
    for col in by:
        c, u = pd.factorize(pairs[col], sort=True)
        u = np.asarray(u, dtype=object)
        c = np.where(c < 0, len(u), c)  # missing values form their own group ("")
        u = np.append(u, "")
        codes = codes * len(u) + c
        uniques.append(u)
    present, group = np.unique(codes, return_inverse=True)
    keys = {}
    rest = present.copy()
    for col, u in reversed(list(zip(by, uniques))):
        keys[col] = u[rest % len(u)]
        rest = rest // len(u)
    return group.astype(np.int64), pd.DataFrame({col: keys[col] for col in by})


def ratings_from_matrix(matrix, *, annotators=None, items=None) -> pd.DataFrame:
    """A ratings frame from an items x annotators array (NaN = not rated).

    Handy for published tables and tests.

    >>> ratings_from_matrix([[1, 2], [3, float("nan")]], annotators=["A", "B"])
      pair_id annotator  value  no_decision
    0      i1         A    1.0        False
    1      i1         B    2.0        False
    2      i2         A    3.0        False
    """
    m = np.asarray(matrix, dtype=np.float64)
    n, k = m.shape
    annotators = list(annotators) if annotators is not None else [f"r{j + 1}" for j in range(k)]
    items = list(items) if items is not None else [f"i{i + 1}" for i in range(n)]
    ii, jj = np.nonzero(~np.isnan(m))
    return pd.DataFrame(
        {
            C.PAIR_ID: np.asarray(items, dtype=object)[ii],
            C.ANNOTATOR: np.asarray(annotators, dtype=object)[jj],
            C.VALUE: m[ii, jj],
            C.NO_DECISION: np.zeros(len(ii), dtype=bool),
        }
    )


@dataclass(frozen=True)
class SlotMatrix:
    """A complete items x raters matrix for ICC and Kendall's W (see :func:`slot_matrix`)."""

    matrix: np.ndarray
    items: pd.Index
    k: int
    n_dropped: int
    rule: str


def slot_matrix(ratings: pd.DataFrame | CodedRatings) -> SlotMatrix:
    """The complete items x k matrix that ICC and Kendall's W need.

    Rule (documented in docs/stats.md): only decisive ratings count. When every item has a
    decisive rating from every annotator, the raters are the annotators (sorted by name).
    Otherwise (k-of-n designs such as EHR-RelB, 3 of 5) the *k rating slots* of each item
    are the raters: *k* is the most common number of decisive ratings per item (ties: the
    larger), slot *j* of an item holds its *j*-th rating in annotator-name order, items with
    fewer than *k* decisive ratings are dropped and items with more keep their first *k*.
    """
    enc = coded(ratings)
    m = enc.matrix()
    mask = ~np.isnan(m)
    per_item = mask.sum(axis=1)
    if m.size and mask.all():
        return SlotMatrix(m, enc.items, m.shape[1], 0, "annotators as raters (complete design)")
    if not len(per_item) or per_item.max() == 0:
        return SlotMatrix(np.zeros((0, 0)), pd.Index([]), 0, int(len(per_item)), "no ratings")
    freq = np.bincount(per_item)
    freq[0] = 0
    k = int(len(freq) - 1 - np.argmax(freq[::-1]))
    keep = per_item >= k
    order = np.argsort(~mask[keep], axis=1, kind="stable")[:, :k]
    out = np.take_along_axis(m[keep], order, axis=1)
    return SlotMatrix(
        out,
        enc.items[keep],
        k,
        int((~keep).sum()),
        f"the {k} rating slots of each item as raters (annotator-name order)",
    )
