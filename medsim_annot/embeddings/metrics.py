r"""Similarity of two terms from their word vectors: the ten metrics of Schulz & Juric (2020).

With :math:`X \in \mathbb{R}^{n \times d}` and :math:`Y \in \mathbb{R}^{m \times d}` the
vectors of the known words of the two terms (out-of-vocabulary words dropped, repeated words
kept) and :math:`\bar x, \bar y` their means:

=============  ==========================================================================
``avg_cos``    :math:`\cos(\bar x, \bar y)`
``avg_r``      Pearson's :math:`r(\bar x, \bar y)` over the :math:`d` coordinates
``avg_rho``    Spearman's :math:`\rho(\bar x, \bar y)` (average ranks for ties)
``avg_tau``    Kendall's :math:`\tau_b(\bar x, \bar y)`
``pair_cos``   :math:`\frac{1}{nm}\sum_{i,j} \cos(x_i, y_j)`
``pair_r``     :math:`\frac{1}{nm}\sum_{i,j} r(x_i, y_j)`
``pair_rho``   :math:`\frac{1}{nm}\sum_{i,j} \rho(x_i, y_j)`
``pair_tau``   :math:`\frac{1}{nm}\sum_{i,j} \tau_b(x_i, y_j)`
``fj``         DynaMax-Jaccard: :math:`U = [X; Y]`,
               :math:`\mu_X[k] = \max(0, \max_i \langle x_i, u_k\rangle)`, likewise
               :math:`\mu_Y`, and :math:`\sum_k \min(\mu_X, \mu_Y) / \sum_k \max(\mu_X, \mu_Y)`
``mj``         Max-Jaccard: :math:`\mu_X[j] = \max(0, \max_i X_{ij})` per dimension, same ratio
=============  ==========================================================================

Contextual embeddings give one vector per term; :func:`vector_pair_scores` computes ``cos``,
``r``, ``rho`` and ``tau`` between them.

Ill-defined cases give NaN, never a silent number: a term with no known word (every metric);
a zero vector (cosine); a constant vector (all three correlations, as in SciPy); a zero
denominator in ``fj``/``mj`` (e.g. ``mj`` of two terms whose vectors are negative in every
coordinate). A ``pair_*`` metric is NaN when any of its word pairs is.

Two implementations are kept side by side. :func:`word_pair_scores` is the fast one: pairs
are grouped by their shape ``(n, m)`` and every group is computed with batched array
operations; Pearson and Spearman are dot products of centred, normalised (rank) vectors
computed once per distinct word; Kendall's :math:`\tau_b` counts concordant minus discordant
coordinate pairs with bit sets (one bit per coordinate pair :math:`a < b` meaning
:math:`x_a > x_b`), so that for two vectors without ties
:math:`n_c - n_d = P - 2\,\mathrm{popcount}(g_x \oplus g_y)` with :math:`P = d(d-1)/2`, and
in general :math:`n_c - n_d = |g_x \wedge g_y| + |l_x \wedge l_y| - |g_x \wedge l_y| -
|l_x \wedge g_y|` (``l`` the bits of :math:`x_a < x_b`), divided by
:math:`\sqrt{(P - t_x)(P - t_y)}` with :math:`t` the tied coordinate pairs (tau-b).
Bit sets are computed once per distinct word (those of the most frequent words once for the
whole run); for ``avg_tau``, whose averaged vectors rarely repeat, the second vector is put
in the order of the first and its inversions counted instead (same numbers).
:func:`word_pair_scores_reference` is the straightforward one (NumPy per pair, SciPy per
pair and per word pair); tests and ``make bench`` check that both agree to 1e-9.

References
----------
Schulz, C., & Juric, D. (2020). Can embeddings adequately represent medical terminology? New
large-scale medical term similarity datasets have the answer! AAAI 2020, 34(05), 8775-8782.
https://doi.org/10.1609/aaai.v34i05.6404

Zhelezniak, V., Savkov, A., Shen, A., Moramarco, F., Flann, J., & Hammerla, N. Y. (2019).
Don't settle for average, go for the max: fuzzy sets and max-pooled word vectors. ICLR 2019.
https://openreview.net/forum?id=SkxXg2C5FX

Zhelezniak, V., Savkov, A., Shen, A., & Hammerla, N. Y. (2019). Correlation coefficients and
semantic textual similarity. NAACL-HLT 2019, 951-962. https://doi.org/10.18653/v1/N19-1100
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats

WORD_METRICS = (
    "avg_cos",
    "avg_r",
    "avg_rho",
    "avg_tau",
    "pair_cos",
    "pair_r",
    "pair_rho",
    "pair_tau",
    "fj",
    "mj",
)
VECTOR_METRICS = ("cos", "r", "rho", "tau")
_KINDS = {"cos": "cos", "r": "r", "rho": "rho", "tau": "tau"}

Progress = Callable[[int, int], None]


# ---------------------------------------------------------------------------------------
# Straightforward reference implementation
# ---------------------------------------------------------------------------------------


def _ref_vector(x: np.ndarray, y: np.ndarray, kind: str) -> float:
    """One similarity between two vectors with NumPy/SciPy, NaN where SciPy gives NaN."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if kind == "cos":
            return float(np.dot(x, y) / (np.linalg.norm(x) * np.linalg.norm(y)))
        if len(x) < 2:  # a correlation needs two coordinates
            return float("nan")
        if kind == "r":
            return float(stats.pearsonr(x, y).statistic)
        if kind == "rho":
            return float(stats.spearmanr(x, y).statistic)
        if kind == "tau":
            return float(stats.kendalltau(x, y).statistic)  # tau-b
    raise ValueError(f"unknown similarity {kind!r}")


def similarity_reference(X: np.ndarray, Y: np.ndarray, metric: str) -> float:
    """One word metric for one pair, computed the straightforward way.

    Parameters
    ----------
    X, Y : ndarray, shape (n, d) and (m, d)
        Vectors of the known words of each term (rows may repeat). ``n == 0`` or ``m == 0``
        (a term with no known word) gives NaN.
    metric : str
        One of :data:`WORD_METRICS`.

    Examples
    --------
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]]); Y = np.array([[1.0, 1.0]])
    >>> round(similarity_reference(X, Y, "avg_cos"), 6)
    1.0
    >>> round(similarity_reference(X, Y, "pair_cos"), 6)   # cos 45 degrees, twice
    0.707107
    >>> similarity_reference(X, Y, "mj")                   # mu_X = (1, 1), mu_Y = (1, 1)
    1.0
    """
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    if metric not in WORD_METRICS:
        raise ValueError(f"unknown metric {metric!r}; use one of {', '.join(WORD_METRICS)}")
    if len(X) == 0 or len(Y) == 0:
        return float("nan")
    family, _, kind = metric.partition("_")
    if family == "avg":
        return _ref_vector(X.mean(axis=0), Y.mean(axis=0), kind)
    if family == "pair":
        values = [[_ref_vector(x, y, kind) for y in Y] for x in X]
        return float(np.mean(values))
    with np.errstate(all="ignore"):
        if metric == "fj":
            U = np.vstack([X, Y])
            mu_x = np.maximum((X @ U.T).max(axis=0), 0.0)
            mu_y = np.maximum((Y @ U.T).max(axis=0), 0.0)
        else:  # mj
            mu_x = np.maximum(X.max(axis=0), 0.0)
            mu_y = np.maximum(Y.max(axis=0), 0.0)
        den = np.maximum(mu_x, mu_y).sum()
        return float(np.minimum(mu_x, mu_y).sum() / den) if den > 0 else float("nan")


def word_pair_scores_reference(
    vectors: np.ndarray,
    terms_1: Sequence[Sequence[int]],
    terms_2: Sequence[Sequence[int]],
    metrics: Sequence[str] = WORD_METRICS,
    *,
    progress: Progress | None = None,
) -> dict[str, np.ndarray]:
    """The straightforward counterpart of :func:`word_pair_scores` (a loop over pairs)."""
    vectors = np.asarray(vectors, dtype=np.float64)
    _check_metrics(metrics, WORD_METRICS)
    out = {m: np.full(len(terms_1), np.nan) for m in metrics}
    for p, (a, b) in enumerate(zip(terms_1, terms_2)):
        X = vectors[np.asarray(a, dtype=np.int64)]
        Y = vectors[np.asarray(b, dtype=np.int64)]
        for m in metrics:
            out[m][p] = similarity_reference(X, Y, m)
        if progress is not None and (p + 1) % 1000 == 0:
            progress(p + 1, len(terms_1))
    if progress is not None:
        progress(len(terms_1), len(terms_1))
    return out


def vector_pair_scores_reference(
    vectors: np.ndarray,
    index_1: Sequence[int],
    index_2: Sequence[int],
    metrics: Sequence[str] = VECTOR_METRICS,
) -> dict[str, np.ndarray]:
    """The straightforward counterpart of :func:`vector_pair_scores`."""
    vectors = np.asarray(vectors, dtype=np.float64)
    _check_metrics(metrics, VECTOR_METRICS)
    out = {m: np.full(len(index_1), np.nan) for m in metrics}
    for p, (i, j) in enumerate(zip(index_1, index_2)):
        if i < 0 or j < 0:
            continue
        for m in metrics:
            out[m][p] = _ref_vector(vectors[i], vectors[j], _KINDS[m])
    return out


# ---------------------------------------------------------------------------------------
# Fast implementation
# ---------------------------------------------------------------------------------------


def _check_metrics(metrics: Sequence[str], allowed: Sequence[str]) -> None:
    unknown = [m for m in metrics if m not in allowed]
    if unknown:
        raise ValueError(
            f"unknown metric {', '.join(map(repr, unknown))}; use one of {', '.join(allowed)}"
        )


def _unit(A: np.ndarray) -> np.ndarray:
    """Rows divided by their norm; NaN rows where the norm is 0. Shape (k, d)."""
    with np.errstate(all="ignore"):
        norm = np.sqrt(np.einsum("kd,kd->k", A, A))
        out = A / norm[:, None]
    out[norm == 0] = np.nan
    return out


def _pearson_unit(A: np.ndarray) -> np.ndarray:
    """Centred, normalised rows so that a row-wise dot product is Pearson's r.

    Rows constant (every value equal to the first, SciPy's test) become NaN.
    """
    constant = (A[:, :1] == A).all(axis=1)
    C = A - A.mean(axis=1, keepdims=True)
    out = _unit(C)
    out[constant] = np.nan
    return out


class _Ranks:
    """Ranks of every row of ``A`` (k, d), computed once for Spearman and Kendall.

    ``average`` holds SciPy's average ranks (1-based, float64); ``order`` int16 ranks that
    compare like the values (0-based ordinal ranks for rows without ties, "min" ranks for
    rows with ties, so equal values get equal ranks); ``ties`` flags rows with ties.
    """

    def __init__(self, A: np.ndarray) -> None:
        k, d = A.shape
        order = np.argsort(A, axis=1)
        S = np.take_along_axis(A, order, axis=1)
        self.ties = (S[:, 1:] == S[:, :-1]).any(axis=1) if d > 1 else np.zeros(k, dtype=bool)
        ranks = np.empty((k, d), dtype=np.int16)
        np.put_along_axis(
            ranks, order, np.broadcast_to(np.arange(d, dtype=np.int16), (k, d)), axis=1
        )
        average = ranks.astype(np.float64) + 1.0
        if self.ties.any():
            tied = A[self.ties]
            average[self.ties] = stats.rankdata(tied, axis=1, method="average")
            ranks[self.ties] = (stats.rankdata(tied, axis=1, method="min") - 1).astype(np.int16)
        self.average = average
        self.order = ranks


class _Bits:
    """Kendall bit sets of the rows of a matrix, from its :class:`_Ranks`.

    ``gt[r]`` has one bit per coordinate pair ``a < b`` (row-major upper triangle) set when
    ``A[r, a] > A[r, b]``; ``lt`` likewise for ``<`` (computed only when some row has ties);
    ``tot[r]`` the number of coordinate pairs not tied in row ``r``. Packed into uint64 words
    (``ceil(d(d-1)/2 / 64)`` per row, about 5.6 kB for d = 300).
    """

    def __init__(self, ranks: _Ranks) -> None:
        R = ranks.order
        k, d = R.shape
        self.P = d * (d - 1) // 2
        self.ties = ranks.ties
        self.gt = self._pack(R, np.greater)
        valid = np.zeros(self.gt.shape[1] * 64, dtype=bool)
        valid[: self.P] = True
        self.valid = np.packbits(valid).view(np.uint64)
        tot = np.full(k, self.P, dtype=np.int64)
        # explicit "less than" bits only for the (rare) rows with ties
        self.tied_pos = np.full(k, -1, dtype=np.int64)
        self.tied_lt = None
        if self.ties.any():
            rows = np.flatnonzero(self.ties)
            self.tied_pos[rows] = np.arange(len(rows))
            self.tied_lt = self._pack(R[rows], np.less)
            tot[rows] = _popcount(self.gt[rows] | self.tied_lt)
        self.tot = tot

    def _pack(self, R: np.ndarray, op) -> np.ndarray:
        k, d = R.shape
        nbytes = -(-self.P // 8)
        words = max(1, -(-nbytes // 8))
        out = np.zeros((k, words * 8), dtype=np.uint8)
        step = 64
        flags = np.empty((min(step, k), self.P), dtype=bool)
        for s in range(0, k, step):
            f = _upper_flags(R[s : s + step], op, flags)
            out[s : s + step, :nbytes] = np.packbits(f, axis=1)
        return out.view(np.uint64)

    @staticmethod
    def concat(a: _Bits, b: _Bits) -> _Bits:
        out = _Bits.__new__(_Bits)
        out.P, out.valid = a.P, a.valid
        out.ties = np.concatenate([a.ties, b.ties])
        out.gt = np.concatenate([a.gt, b.gt])
        out.tot = np.concatenate([a.tot, b.tot])
        na = 0 if a.tied_lt is None else len(a.tied_lt)
        out.tied_pos = np.concatenate([a.tied_pos, np.where(b.tied_pos >= 0, b.tied_pos + na, -1)])
        parts = [x.tied_lt for x in (a, b) if x.tied_lt is not None]
        out.tied_lt = np.concatenate(parts) if parts else None
        return out

    def lt_of(self, rows: np.ndarray) -> np.ndarray:
        """``lt`` bits of *rows*: explicit where the row has ties, else the complement of ``gt``."""
        out = ~self.gt[rows] & self.valid
        if self.tied_lt is not None:
            pos = self.tied_pos[rows]
            has = pos >= 0
            if has.any():
                out[has] = self.tied_lt[pos[has]]
        return out


def _upper_flags(block: np.ndarray, op, flags: np.ndarray) -> np.ndarray:
    """``op(block[:, a], block[:, b])`` for every coordinate pair ``a < b`` (row-major upper
    triangle), written into the first rows of *flags* (k, d(d-1)/2)."""
    d = block.shape[1]
    f = flags[: len(block)]
    pos = 0
    for a in range(d - 1):  # row a of the upper triangle: coordinates b > a
        width = d - 1 - a
        op(block[:, a : a + 1], block[:, a + 1 :], out=f[:, pos : pos + width])
        pos += width
    return f


def _avg_kendall(terms: _Stats, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """tau-b between rows ``i[k]`` and ``j[k]`` of the averaged term vectors.

    Each term vector is used by about one pair, so instead of a bit set per term (two per
    pair) the second vector is reordered by the ranks of the first and its inversions are
    counted: for vectors without ties these are the discordant pairs D, and
    :math:`\tau_b = (P - 2D) / P`. Pairs with a tie take the bit-set route.
    """
    ranks = terms.get("ranks")
    R = ranks.order
    d = R.shape[1]
    P = d * (d - 1) // 2
    tied = ranks.ties[i] | ranks.ties[j]
    vals = np.empty(len(i), dtype=np.float64)
    free = np.flatnonzero(~tied)
    step = 64
    flags = np.empty((min(step, len(free)), P), dtype=bool)
    full = np.full(step, P, dtype=np.int64)
    for s in range(0, len(free), step):
        f = free[s : s + step]
        Rx, Ry = R[i[f]], R[j[f]]
        y = np.take_along_axis(Ry, np.argsort(Rx, axis=1), axis=1)  # y in the order of x
        D = np.count_nonzero(_upper_flags(y, np.greater, flags), axis=1)
        vals[f] = _tau_from_counts(P - 2 * D.astype(np.int64), full[: len(f)], full[: len(f)])
    t = np.flatnonzero(tied)
    if len(t):
        sub = np.unique(np.concatenate([i[t], j[t]]))
        remap = np.full(len(terms.A), -1, dtype=np.int64)
        remap[sub] = np.arange(len(sub))
        bits = _Stats(terms.A[sub]).get("tau")
        vals[t] = _kendall_rows(bits, bits, remap[i[t]], remap[j[t]])
    return vals


def _popcount(a: np.ndarray) -> np.ndarray:
    """Set bits along the last axis, as int64."""
    return np.bitwise_count(a).sum(axis=-1, dtype=np.int64)


def _tau_from_counts(num: np.ndarray, tot_x: np.ndarray, tot_y: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        tau = num / np.sqrt(tot_x.astype(np.float64)) / np.sqrt(tot_y.astype(np.float64))
    return np.clip(tau, -1.0, 1.0)


def _kendall_rows(bx: _Bits, by: _Bits, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """tau-b between row ``i[k]`` of ``bx`` and row ``j[k]`` of ``by`` for every ``k``."""
    out = np.empty(len(i), dtype=np.float64)
    step = 4096
    for s in range(0, len(i), step):
        ii, jj = i[s : s + step], j[s : s + step]
        num = bx.P - 2 * _popcount(bx.gt[ii] ^ by.gt[jj])
        tied = bx.ties[ii] | by.ties[jj]
        if tied.any():
            ti, tj = ii[tied], jj[tied]
            gx, gy, lxx, lyy = bx.gt[ti], by.gt[tj], bx.lt_of(ti), by.lt_of(tj)
            num[tied] = (
                _popcount(gx & gy)
                + _popcount(lxx & lyy)
                - _popcount(gx & lyy)
                - _popcount(lxx & gy)
            )
        out[s : s + step] = _tau_from_counts(num, bx.tot[ii], by.tot[jj])
    return out


def _row_dot(U: np.ndarray, V: np.ndarray, i: np.ndarray, j: np.ndarray, clip: bool) -> np.ndarray:
    out = np.empty(len(i), dtype=np.float64)
    step = 8192
    for s in range(0, len(i), step):
        out[s : s + step] = np.einsum("kd,kd->k", U[i[s : s + step]], V[j[s : s + step]])
    return np.clip(out, -1.0, 1.0) if clip else out


class _Stats:
    """Per-row statistics of a matrix, computed on first use."""

    def __init__(self, A: np.ndarray) -> None:
        self.A = A
        self._cache: dict[str, object] = {}

    def get(self, kind: str):
        if kind not in self._cache:
            if kind == "cos":
                self._cache[kind] = _unit(self.A)
            elif kind == "r":
                self._cache[kind] = _pearson_unit(self.A)
            elif kind == "ranks":
                self._cache[kind] = _Ranks(self.A)
            elif kind == "rho":  # Spearman = Pearson of the average ranks
                self._cache[kind] = _pearson_unit(self.get("ranks").average)
            elif kind == "tau":
                self._cache[kind] = _Bits(self.get("ranks"))
        return self._cache[kind]

    @staticmethod
    def concat(a: _Stats, b: _Stats, kinds: Sequence[str]) -> _Stats:
        """Statistics of ``vstack([a.A, b.A])`` from those of the parts (no recomputation)."""
        out = _Stats(np.concatenate([a.A, b.A]))
        for kind in kinds:
            if kind == "tau":
                out._cache[kind] = _Bits.concat(a.get(kind), b.get(kind))
            else:
                out._cache[kind] = np.concatenate([a.get(kind), b.get(kind)])
        return out


def _rows_similarity(sx: _Stats, sy: _Stats, i: np.ndarray, j: np.ndarray, kind: str) -> np.ndarray:
    if kind == "tau":
        return _kendall_rows(sx.get("tau"), sy.get("tau"), i, j)
    return _row_dot(sx.get(kind), sy.get(kind), i, j, clip=kind != "cos")


def vector_pair_scores(
    vectors: np.ndarray,
    index_1: Sequence[int],
    index_2: Sequence[int],
    metrics: Sequence[str] = VECTOR_METRICS,
) -> dict[str, np.ndarray]:
    """``cos``, ``r``, ``rho``, ``tau`` between rows of *vectors* (one vector per term).

    Parameters
    ----------
    vectors : ndarray, shape (k, d)
        Term vectors (e.g. sentence-transformers encodings).
    index_1, index_2 : sequence of int, length p
        Row of each pair's two terms; ``-1`` for a term without a vector (gives NaN).
    metrics : subset of :data:`VECTOR_METRICS`

    Returns
    -------
    dict of metric name to ndarray of shape (p,)

    Examples
    --------
    >>> V = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 7.0], [3.0, 2.0, 1.0]])
    >>> s = vector_pair_scores(V, [0, 0, 0], [1, 2, -1])
    >>> [round(float(v), 4) for v in s["rho"]], [round(float(v), 4) for v in s["tau"]]
    ([1.0, -1.0, nan], [1.0, -1.0, nan])
    """
    _check_metrics(metrics, VECTOR_METRICS)
    vectors = np.asarray(vectors, dtype=np.float64)
    i = np.asarray(index_1, dtype=np.int64)
    j = np.asarray(index_2, dtype=np.int64)
    ok = (i >= 0) & (j >= 0)
    out = {m: np.full(len(i), np.nan) for m in metrics}
    if ok.any():
        used = np.unique(np.concatenate([i[ok], j[ok]]))
        remap = np.full(len(vectors), -1, dtype=np.int64)
        remap[used] = np.arange(len(used))
        st = _Stats(vectors[used])
        for m in metrics:
            out[m][ok] = _rows_similarity(st, st, remap[i[ok]], remap[j[ok]], _KINDS[m])
    return out


def _flatten(terms: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    lengths = np.fromiter((len(t) for t in terms), dtype=np.int64, count=len(terms))
    flat = (
        np.concatenate([np.asarray(t, dtype=np.int64) for t in terms])
        if lengths.sum()
        else np.zeros(0, dtype=np.int64)
    )
    offsets = np.zeros(len(terms) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return flat, offsets


def _chunks(
    flat1, off1, flat2, off2, max_words: int, hot: frozenset = frozenset()
) -> list[tuple[int, int]]:
    """Consecutive pair ranges whose distinct words (not counting *hot* ones) number at
    most ~max_words each."""
    bounds = [0]
    seen: set[int] = set(hot)
    budget = max_words + len(hot)
    f1, f2 = flat1.tolist(), flat2.tolist()
    o1, o2 = off1.tolist(), off2.tolist()
    for p in range(len(o1) - 1):
        words = f1[o1[p] : o1[p + 1]] + f2[o2[p] : o2[p + 1]]
        new = [w for w in words if w not in seen]
        if len(seen) + len(new) > budget and p > bounds[-1]:
            bounds.append(p)
            seen = set(hot)
        seen.update(words)
    bounds.append(len(o1) - 1)
    return list(zip(bounds[:-1], bounds[1:]))


def word_pair_scores(
    vectors: np.ndarray,
    terms_1: Sequence[Sequence[int]],
    terms_2: Sequence[Sequence[int]],
    metrics: Sequence[str] = WORD_METRICS,
    *,
    progress: Progress | None = None,
    chunk_words: int = 16384,
    chunk_pairs: int = 4096,
) -> dict[str, np.ndarray]:
    """The word metrics for many pairs at once (fast, vectorised).

    Parameters
    ----------
    vectors : ndarray, shape (V, d)
        Word vectors (converted to float64).
    terms_1, terms_2 : sequence (length p) of sequences of int
        For each pair, the rows of *vectors* of the known words of each term (repeats kept,
        out-of-vocabulary words already dropped). An empty term gives NaN for every metric.
    metrics : subset of :data:`WORD_METRICS`
    progress : callable ``(done, total)``, optional
        Called after each chunk of pairs.
    chunk_words : int
        Distinct words whose statistics are held at once (about 13 kB each for d = 300).
        The statistics of the most frequent words (up to a quarter of this) are computed
        once; pairs are processed in consecutive chunks whose other words fit the rest.
    chunk_pairs : int
        Pairs processed together inside a chunk (bounds the averaged-term statistics).

    Returns
    -------
    dict of metric name to ndarray of shape (p,), equal to
    :func:`word_pair_scores_reference` to about 1e-12.

    Examples
    --------
    >>> E = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    >>> s = word_pair_scores(E, [[0, 1], [0], []], [[2], [1], [2]], ["avg_cos", "fj"])
    >>> [round(float(v), 4) for v in s["avg_cos"]]
    [0.8165, 0.0, nan]
    >>> [round(float(v), 4) for v in s["fj"]]  # mu_X = (1, 1, 1), mu_Y = (1, 1, 3): 3 / 5
    [0.6, 0.0, nan]
    """
    _check_metrics(metrics, WORD_METRICS)
    if len(terms_1) != len(terms_2):
        raise ValueError("terms_1 and terms_2 must have the same length")
    E = np.asarray(vectors, dtype=np.float64)
    total = len(terms_1)
    out = {m: np.full(total, np.nan) for m in metrics}
    flat1, off1 = _flatten(terms_1)
    flat2, off2 = _flatten(terms_2)
    kinds = [m[5:] for m in metrics if m.startswith("pair_")]  # word-level statistics needed
    # the most frequent words: statistics computed once, shared by every chunk
    counts = (
        np.bincount(np.concatenate([flat1, flat2]), minlength=len(E))
        if total
        else np.zeros(len(E), dtype=np.int64)
    )
    n_hot = min(chunk_words // 4, int((counts >= 2).sum()))
    hot = np.sort(np.argsort(-counts, kind="stable")[:n_hot]) if kinds else np.zeros(0, np.int64)
    hot_stats = _Stats(E[hot])
    for kind in kinds:
        hot_stats.get(kind)
    for start, stop in _chunks(
        flat1, off1, flat2, off2, chunk_words - len(hot), frozenset(hot.tolist())
    ):
        _score_chunk(
            E,
            flat1,
            off1,
            flat2,
            off2,
            start,
            stop,
            metrics,
            out,
            chunk_pairs,
            progress,
            total,
            hot,
            hot_stats,
            kinds,
        )
    if progress is not None and total == 0:
        progress(0, 0)
    return out


def _score_chunk(
    E,
    flat1,
    off1,
    flat2,
    off2,
    start,
    stop,
    metrics,
    out,
    chunk_pairs,
    progress,
    total,
    hot,
    hot_stats,
    kinds,
) -> None:
    w1 = flat1[off1[start] : off1[stop]]
    w2 = flat2[off2[start] : off2[stop]]
    rest = np.setdiff1d(np.unique(np.concatenate([w1, w2])), hot, assume_unique=True)
    used = np.concatenate([hot, rest])
    remap = np.full(len(E), -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    W = E[used]  # the chunk's distinct words: the shared frequent ones first
    words = _Stats.concat(hot_stats, _Stats(E[rest]), kinds) if len(hot) else _Stats(W)
    avg = [mm for mm in metrics if mm.startswith("avg_")]
    pair = [mm for mm in metrics if mm.startswith("pair_")]
    jac = [mm for mm in metrics if mm in ("fj", "mj")]
    for s0 in range(start, stop, chunk_pairs):
        s1 = min(stop, s0 + chunk_pairs)
        n = off1[s0 + 1 : s1 + 1] - off1[s0:s1]
        m = off2[s0 + 1 : s1 + 1] - off2[s0:s1]
        pairs = np.arange(s0, s1)
        ok = (n > 0) & (m > 0)
        if ok.any():
            # group pairs by shape (n, m): every group is one batch of fixed-size arrays
            shapes: dict[tuple[int, int], list[int]] = {}
            for p, nn, mm_ in zip(pairs[ok].tolist(), n[ok].tolist(), m[ok].tolist()):
                shapes.setdefault((nn, mm_), []).append(p)
            term_rows = {}
            for (nn, mm_), plist in shapes.items():
                P = np.asarray(plist, dtype=np.int64)
                ix = remap[flat1[off1[P][:, None] + np.arange(nn)[None, :]]]  # (B, n)
                iy = remap[flat2[off2[P][:, None] + np.arange(mm_)[None, :]]]  # (B, m)
                term_rows[(nn, mm_)] = (ix, iy)
                if pair:
                    _pair_group(words, P, ix, iy, pair, out)
                if jac:
                    _jaccard_group(W, P, ix, iy, jac, out)
            if avg:
                _avg_chunk(W, shapes, term_rows, avg, out)
        if progress is not None:
            progress(s1, total)


def _pair_group(words: _Stats, P, ix, iy, pair_metrics, out) -> None:
    B, nn = ix.shape
    mm_ = iy.shape[1]
    step = max(1, 3000 // (nn * mm_))
    for mname in pair_metrics:
        kind = mname[5:]
        vals = np.empty(B, dtype=np.float64)
        if kind == "tau":
            bits = words.get("tau")
            for s in range(0, B, step):
                a, b = ix[s : s + step], iy[s : s + step]
                gx, gy = bits.gt[a], bits.gt[b]  # (b, n, W), (b, m, W)
                num = bits.P - 2 * _popcount(gx[:, :, None, :] ^ gy[:, None, :, :])
                tied = bits.ties[a][:, :, None] | bits.ties[b][:, None, :]
                if tied.any():
                    bb, ii, jj = np.nonzero(tied)
                    ra, rb = a[bb, ii], b[bb, jj]
                    g1, g2, l1, l2 = bits.gt[ra], bits.gt[rb], bits.lt_of(ra), bits.lt_of(rb)
                    num[bb, ii, jj] = (
                        _popcount(g1 & g2)
                        + _popcount(l1 & l2)
                        - _popcount(g1 & l2)
                        - _popcount(l1 & g2)
                    )
                tau = _tau_from_counts(num, bits.tot[a][:, :, None], bits.tot[b][:, None, :])
                vals[s : s + step] = tau.reshape(len(a), -1).mean(axis=1)
        else:
            U = words.get(kind)
            step2 = max(1, 20000 // (nn + mm_))
            for s in range(0, B, step2):
                X, Y = U[ix[s : s + step2]], U[iy[s : s + step2]]
                G = np.matmul(X, Y.transpose(0, 2, 1))
                if kind != "cos":
                    G = np.clip(G, -1.0, 1.0)
                vals[s : s + step2] = G.reshape(len(X), -1).mean(axis=1)
        out[mname][P] = vals


def _jaccard_group(W, P, ix, iy, jac_metrics, out) -> None:
    B, nn = ix.shape
    step = max(1, 20000 // (ix.shape[1] + iy.shape[1]))
    for s in range(0, B, step):
        X, Y = W[ix[s : s + step]], W[iy[s : s + step]]
        with np.errstate(all="ignore"):
            if "fj" in jac_metrics:
                Z = np.concatenate([X, Y], axis=1)  # (b, n+m, d)
                G = np.matmul(Z, Z.transpose(0, 2, 1))  # (b, n+m, n+m)
                mu_x = np.maximum(G[:, :nn, :].max(axis=1), 0.0)
                mu_y = np.maximum(G[:, nn:, :].max(axis=1), 0.0)
                out["fj"][P[s : s + step]] = _fuzzy_ratio(mu_x, mu_y)
            if "mj" in jac_metrics:
                mu_x = np.maximum(X.max(axis=1), 0.0)
                mu_y = np.maximum(Y.max(axis=1), 0.0)
                out["mj"][P[s : s + step]] = _fuzzy_ratio(mu_x, mu_y)


def _fuzzy_ratio(mu_x: np.ndarray, mu_y: np.ndarray) -> np.ndarray:
    den = np.maximum(mu_x, mu_y).sum(axis=1)
    num = np.minimum(mu_x, mu_y).sum(axis=1)
    with np.errstate(all="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _avg_chunk(W, shapes, term_rows, avg_metrics, out) -> None:
    """Averaged term vectors (grouped by length), then row-wise similarities."""
    by_len: dict[int, list[np.ndarray]] = {}
    for (nn, mm_), (ix, iy) in term_rows.items():
        by_len.setdefault(nn, []).append(ix)
        by_len.setdefault(mm_, []).append(iy)
    # distinct terms (as tuples of word rows) per length
    means, keys = [], {}
    base = 0
    for length, blocks in by_len.items():
        rows = np.unique(np.concatenate(blocks, axis=0), axis=0)
        means.append(W[rows].mean(axis=1))
        for r, key in enumerate(map(bytes, rows.astype(np.int64))):
            keys[(length, key)] = base + r
        base += len(rows)
    T = np.concatenate(means, axis=0)
    terms = _Stats(T)
    P_all, i_all, j_all = [], [], []
    for (nn, mm_), (ix, iy) in term_rows.items():
        P_all.append(np.asarray(shapes[(nn, mm_)], dtype=np.int64))
        i_all.append([keys[(nn, k)] for k in map(bytes, ix.astype(np.int64))])
        j_all.append([keys[(mm_, k)] for k in map(bytes, iy.astype(np.int64))])
    P = np.concatenate(P_all)
    i = np.concatenate([np.asarray(v, dtype=np.int64) for v in i_all])
    j = np.concatenate([np.asarray(v, dtype=np.int64) for v in j_all])
    for mname in avg_metrics:
        if mname == "avg_tau":
            out[mname][P] = _avg_kendall(terms, i, j)
        else:
            out[mname][P] = _rows_similarity(terms, terms, i, j, mname[4:])
