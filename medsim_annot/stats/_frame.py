"""Private helpers shared by the statistics: result types, level names and the encoding of a
ratings frame into integer arrays (items, annotators, values) without loops over items."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from data_schemas import columns as C
from data_schemas.scales import LEVELS as LEVEL_OPTIONS
from data_schemas.scales import Scale

LEVELS: tuple[str, ...] = LEVEL_OPTIONS.values

#: Statistics computed together on one frame (:func:`medsim_annot.stats.agreement_report`,
#: the gold table's majority) encode its pair ids and annotators once and hand the
#: :class:`Encoded` on, instead of each factorizing 100,000s of strings again. False makes
#: every statistic encode its own frame: the independent expectation of
#: ``tests/test_dashboard_fast_paths.py``.
REUSE_CODES = True


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


@dataclass(frozen=True)
class Encoded:
    """A ratings frame as integer arrays (one entry per rating row).

    ``item`` indexes ``items``, ``annotator`` indexes ``annotators`` (both sorted), ``value``
    is the float code (NaN for no decision), ``value_index`` indexes ``values`` (sorted
    distinct decisive codes; -1 for no decision).
    """

    item: np.ndarray
    annotator: np.ndarray
    value: np.ndarray
    value_index: np.ndarray
    items: pd.Index
    annotators: pd.Index
    values: np.ndarray

    @property
    def n_items(self) -> int:
        return len(self.items)

    @property
    def n_annotators(self) -> int:
        return len(self.annotators)

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

    def with_values(self, values=None) -> Encoded:
        """The same rows with the value domain *values* (default: the decisive codes
        present), as ``encode(ratings, values=values)`` gives them."""
        values, vidx = _value_index(self.value, values)
        return Encoded(
            self.item, self.annotator, self.value, vidx, self.items, self.annotators, values
        )


def compact(codes: np.ndarray, uniques):
    """*codes* renumbered over the *uniques* they use (in order), and those uniques."""
    used = np.bincount(codes, minlength=len(uniques)) > 0
    if used.all():
        return codes, uniques
    return (np.cumsum(used) - 1)[codes], uniques[used]


def of_codes(item, items, annotator, annotators, value: np.ndarray) -> Encoded:
    """The :class:`Encoded` of rows whose pair and annotator codes the caller has already
    (codes into sorted distinct values, e.g. from one factorize per dashboard), equal to
    :func:`encode` of the frame: the codes are renumbered over the values present."""
    item, items = compact(np.asarray(item, dtype=np.int64), items)
    annotator, annotators = compact(np.asarray(annotator, dtype=np.int64), annotators)
    values, vidx = _value_index(value, None)
    return Encoded(
        item,
        annotator,
        value,
        vidx,
        pd.Index(items),
        pd.Index(np.asarray(annotators, dtype=object)),
        values,
    )


def reuse(ratings: pd.DataFrame, enc: Encoded | None, *, values=None) -> Encoded:
    """``encode(ratings, values=values)``, from *enc* (``encode(ratings)`` of the same
    frame, computed by the caller) when given and :data:`REUSE_CODES` is on."""
    if enc is None or not REUSE_CODES:
        return encode(ratings, values=values)
    return enc if values is None else enc.with_values(values)


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


def encode(ratings: pd.DataFrame, *, items=None, values=None) -> Encoded:
    """Encode a ratings frame (``pair_id``, ``annotator``, ``value``).

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
    if not keep.all():
        item, ann, value = item[keep], ann[keep], value[keep]
    values, vidx = _value_index(value, values)
    return Encoded(
        item.astype(np.int64),
        ann.astype(np.int64),
        value,
        vidx,
        items,
        pd.Index(np.asarray(anns, dtype=object)),
        values,
    )


def positions(keys: pd.Series, items: pd.Index) -> np.ndarray:
    """Position of each key in *items* (-1 when absent), by Arrow's hash join for strings
    (several times faster than ``Index.get_indexer`` on millions of Python strings)."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc

        arr = pa.array(keys, from_pandas=True)
        vs = pa.array(pd.Series(items), from_pandas=True)
        if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
            if not (pa.types.is_string(vs.type) or pa.types.is_large_string(vs.type)):
                raise TypeError("mixed key types")
            arr = arr.cast(pa.large_string())
            vs = vs.cast(pa.large_string())
            found = pc.fill_null(pc.index_in(arr, value_set=vs), -1)
            return found.to_numpy(zero_copy_only=False).astype(np.int64)
    except (ImportError, TypeError, ValueError, NotImplementedError, ArithmeticError):
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


def slot_matrix(ratings: pd.DataFrame, enc: Encoded | None = None) -> SlotMatrix:
    """The complete items x k matrix that ICC and Kendall's W need.

    Rule (documented in docs/stats.md): only decisive ratings count. When every item has a
    decisive rating from every annotator, the raters are the annotators (sorted by name).
    Otherwise (k-of-n designs such as EHR-RelB, 3 of 5) the *k rating slots* of each item
    are the raters: *k* is the most common number of decisive ratings per item (ties: the
    larger), slot *j* of an item holds its *j*-th rating in annotator-name order, items with
    fewer than *k* decisive ratings are dropped and items with more keep their first *k*.
    *enc*: ``encode(ratings)`` when the caller has it (see :func:`reuse`).
    """
    enc = reuse(ratings, enc)
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
