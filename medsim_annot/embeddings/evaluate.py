r"""How well do similarity scores match the doctors, and is one method really better?

The methods of Schulz & Juric (2020, §5) and Schulz et al. (2020, EHR-Rel §6):

* **binary gold** (verified similar / dissimilar pairs): ROC AUC; accuracy at the threshold
  that maximises it (each method gets its own threshold, which is reported); McNemar's test
  between the right/wrong decisions of every two methods, Bonferroni-corrected;
* **graded gold** (mean ratings): Spearman's :math:`\rho` with a BCa bootstrap interval; the
  difference of two methods' :math:`\rho` on the same pairs with a paired BCa bootstrap,
  significant when the Bonferroni-corrected interval excludes 0;
* for each method the number of methods it is significantly better / worse than (the
  superscripts of the papers' Tables 4 and 5);
* **category separation**: the relative overlap error :math:`O` (Schulz & Juric 2020, §5.3).

All comparisons are made on the *common subset*: the pairs every method covers
(:func:`common_subset`), as in the papers.

References
----------
Schulz, C., & Juric, D. (2020). Can embeddings adequately represent medical terminology? New
large-scale medical term similarity datasets have the answer! AAAI 2020, 34(05), 8775-8782.
https://doi.org/10.1609/aaai.v34i05.6404

Schulz, C., Levy-Kramer, J., Van Assel, C., Kepes, M., & Hammerla, N. (2020). Biomedical
concept relatedness - a large EHR-based benchmark. COLING 2020, 6565-6575.
https://doi.org/10.18653/v1/2020.coling-main.577

McNemar, Q. (1947). Note on the sampling error of the difference between correlated
proportions or percentages. Psychometrika, 12(2), 153-157. https://doi.org/10.1007/BF02295996

Efron, B. (1987). Better bootstrap confidence intervals. Journal of the American Statistical
Association, 82(397), 171-185. https://doi.org/10.1080/01621459.1987.10478410
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar

# ---------------------------------------------------------------------------------------
# Coverage and the common subset
# ---------------------------------------------------------------------------------------


def coverage(scores: pd.Series, pair_ids: Sequence[str]) -> tuple[int, int]:
    """``(covered, total)``: pairs of *pair_ids* with a non-NaN score in *scores* (by pair id)."""
    values = scores.reindex(pd.Index(pair_ids))
    return int(values.notna().sum()), len(pair_ids)


def common_subset(methods: Mapping[str, pd.Series], pair_ids: Sequence[str]) -> list[str]:
    """The pairs of *pair_ids* (in order) that every method scores (no NaN).

    >>> a = pd.Series([0.1, np.nan, 0.3], index=["p1", "p2", "p3"])
    >>> b = pd.Series([0.2, 0.5, np.nan], index=["p1", "p2", "p3"])
    >>> common_subset({"a": a, "b": b}, ["p1", "p2", "p3", "p4"])
    ['p1']
    """
    keep = np.ones(len(pair_ids), dtype=bool)
    index = pd.Index(pair_ids)
    for s in methods.values():
        keep &= s.reindex(index).notna().to_numpy()
    return [p for p, k in zip(pair_ids, keep) if k]


# ---------------------------------------------------------------------------------------
# Binary gold
# ---------------------------------------------------------------------------------------


def roc_auc(gold: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve (scikit-learn); NaN when the gold has only one class.

    >>> roc_auc(np.array([0, 0, 1, 1]), np.array([0.1, 0.4, 0.35, 0.8]))
    0.75
    """
    # scikit-learn: heavy (~0.3 s), loaded only when this metric runs (CLI start-up)
    from sklearn.metrics import roc_auc_score

    gold = np.asarray(gold)
    if len(np.unique(gold)) < 2:
        return float("nan")
    return float(roc_auc_score(gold, np.asarray(scores, dtype=np.float64)))


def best_threshold(gold: np.ndarray, scores: np.ndarray) -> tuple[float, float]:
    r"""The threshold that maximises accuracy, and that accuracy.

    A pair is predicted similar when ``score >= threshold``. Candidates are every distinct
    score (and ``+inf``: predict every pair dissimilar); on a tie the highest threshold wins.

    Returns
    -------
    threshold : float
    accuracy : float

    Examples
    --------
    >>> best_threshold(np.array([0, 0, 1, 1, 0]), np.array([0.1, 0.2, 0.6, 0.9, 0.5]))
    (0.6, 1.0)
    >>> best_threshold(np.array([0, 1, 0]), np.array([0.1, 0.2, 0.3]))  # all dissimilar
    (inf, 0.6666666666666666)
    """
    y = np.asarray(gold, dtype=np.int64)
    s = np.asarray(scores, dtype=np.float64)
    n = len(y)
    if n == 0:
        return float("nan"), float("nan")
    order = np.argsort(-s, kind="stable")
    ss, yy = s[order], y[order]
    tp = np.cumsum(yy)
    fp = np.cumsum(1 - yy)
    last = np.r_[ss[1:] != ss[:-1], True]  # last index of each run of equal scores
    negatives = n - int(y.sum())
    acc = (tp[last] + negatives - fp[last]) / n
    candidates = np.r_[np.inf, ss[last]]
    acc = np.r_[negatives / n, acc]
    k = int(np.argmax(acc))
    return float(candidates[k]), float(acc[k])


def mcnemar_test(
    correct_a: np.ndarray, correct_b: np.ndarray, *, exact: bool | None = None
) -> tuple[float, float, np.ndarray]:
    r"""McNemar's test on the right/wrong decisions of two methods on the same pairs.

    Parameters
    ----------
    correct_a, correct_b : ndarray of bool, shape (n,)
    exact : bool, optional
        Exact binomial test (``True``) or :math:`\chi^2` with continuity correction
        (``False``). Default: exact when the discordant count :math:`b + c < 25`.

    Returns
    -------
    statistic, p_value, table
        ``table = [[both right, only a right], [only b right, both wrong]]``; the statistic is
        :math:`\min(b, c)` for the exact test and :math:`(|b - c| - 1)^2 / (b + c)` otherwise
        (statsmodels' ``mcnemar``).

    Examples
    --------
    >>> a = np.array([1, 1, 1, 1, 1, 1, 0, 0, 1, 1], dtype=bool)
    >>> b = np.array([0, 0, 0, 0, 0, 1, 0, 1, 1, 1], dtype=bool)
    >>> stat, p, table = mcnemar_test(a, b)
    >>> table.tolist(), stat, round(p, 4)   # binomial: 2 * P(X <= 1 | 6, 0.5)
    ([[3, 5], [1, 1]], 1.0, 0.2188)
    """
    a = np.asarray(correct_a, dtype=bool)
    b = np.asarray(correct_b, dtype=bool)
    table = np.array([[np.sum(a & b), np.sum(a & ~b)], [np.sum(~a & b), np.sum(~a & ~b)]])
    discordant = int(table[0, 1] + table[1, 0])
    if exact is None:
        exact = discordant < 25
    if discordant == 0:
        return 0.0, 1.0, table
    res = mcnemar(table, exact=exact, correction=True)
    return float(res.statistic), float(res.pvalue), table


# ---------------------------------------------------------------------------------------
# Graded gold: Spearman with BCa bootstrap
# ---------------------------------------------------------------------------------------


class _RankResampler:
    """Spearman's rho of resamples given as index arrays, without sorting any resample.

    A resample is summarised by how often it draws each original observation (a bincount).
    The average rank of an observation in tie group ``g`` (groups = distinct values in
    ascending order) within the resample is ``C_<g + (C_g + 1) / 2``, with ``C_g`` the count
    of the group and ``C_<g`` that of all smaller groups: a cumulative sum over the fixed
    sorted order. Spearman's rho is then the count-weighted Pearson correlation of those ranks
    over the original observations (the mean rank of a sample of size k is (k + 1) / 2). The
    numbers equal ``scipy.stats.spearmanr`` of the resampled values.
    """

    def __init__(self, values: np.ndarray) -> None:
        v = np.asarray(values, dtype=np.float64)
        n = len(v)
        self.n = n
        self.order = np.argsort(v, kind="stable")
        sv = v[self.order]
        self.starts = np.r_[0, np.flatnonzero(sv[1:] != sv[:-1]) + 1].astype(np.int64)
        self.has_ties = len(self.starts) < n
        sizes = np.diff(np.r_[self.starts, n])
        group_sorted = np.repeat(np.arange(len(self.starts)), sizes)
        self.group = np.empty(n, dtype=np.int64)
        self.group[self.order] = group_sorted
        self.inverse = np.argsort(self.order)  # sorted position of each observation

    def ranks_from_counts(self, counts: np.ndarray) -> np.ndarray:
        """Average rank (B, n) of each original observation within each resample, from the
        resample's counts (B, n) of every observation."""
        cs = counts.take(self.order, axis=1)
        gc = np.add.reduceat(cs, self.starts, axis=1) if self.has_ties else cs
        rank = np.cumsum(gc, axis=1) - gc + (gc + 1.0) / 2.0
        return rank.take(self.group if self.has_ties else self.inverse, axis=1)

    def ranks(self, idx: np.ndarray) -> np.ndarray:
        """Average ranks of the resampled values; *idx* shape (B, k) (for tests)."""
        c = _counts(idx, self.n)
        return np.take_along_axis(self.ranks_from_counts(c), idx, axis=1)


def _counts(idx: np.ndarray, n: int) -> np.ndarray:
    """How often each of the n observations appears in each resample: (B, n) float64."""
    B = idx.shape[0]
    flat = (idx + (np.arange(B, dtype=np.int64) * n)[:, None]).ravel()
    return np.bincount(flat, minlength=B * n).reshape(B, n).astype(np.float64)


def _weighted_spearman(counts: np.ndarray, ra: np.ndarray, rb: np.ndarray) -> np.ndarray:
    k = counts.sum(axis=1, keepdims=True)
    m = (k + 1.0) / 2.0
    da, db = ra - m, rb - m
    wa = counts * da
    with np.errstate(all="ignore"):
        r = np.einsum("ij,ij->i", wa, db) / np.sqrt(
            np.einsum("ij,ij->i", wa, da) * np.einsum("ij,ij->i", counts * db, db)
        )
    return np.clip(r, -1.0, 1.0)


def _as_rows(idx: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]]:
    idx = np.asarray(idx, dtype=np.int64)
    return idx.reshape(-1, idx.shape[-1]), idx.shape[:-1]


def spearman_rho(gold: np.ndarray, scores: np.ndarray) -> float:
    """Spearman's rho (SciPy), NaN for constant input."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(stats.spearmanr(gold, scores).statistic)


@dataclass
class Interval:
    """A statistic with its bootstrap confidence interval."""

    estimate: float
    low: float
    high: float
    confidence: float


def _bootstrap(statistic, n: int, *, confidence: float, n_resamples: int, seed, batch: int):
    estimate = float(statistic(np.arange(n)[None, :])[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.bootstrap(
            (np.arange(n),),
            lambda i, axis=-1: _apply(statistic, i),
            vectorized=True,
            n_resamples=n_resamples,
            batch=batch,
            confidence_level=confidence,
            method="BCa",
            rng=seed,
        )
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    dist = res.bootstrap_distribution
    if (np.isnan(low) or np.isnan(high)) and np.all(dist == dist[0]):
        low = high = float(dist[0])  # degenerate: every resample gives the same value
    return Interval(estimate, low, high, confidence)


def _apply(statistic, idx):
    rows, lead = _as_rows(idx)
    return statistic(rows).reshape(lead)


def spearman_ci(
    gold: np.ndarray,
    scores: np.ndarray,
    *,
    confidence: float = 0.95,
    n_resamples: int = 9999,
    seed=0,
    batch: int = 256,
) -> Interval:
    r"""Spearman's :math:`\rho` of *scores* with *gold* and its BCa bootstrap interval.

    Pairs are resampled with replacement (``scipy.stats.bootstrap``, ``method="BCa"``, the
    observations kept paired); the statistic of a resample is computed from the resample's
    indices (:class:`_RankResampler`), which gives the same numbers as
    ``bootstrap((gold, scores), spearman, paired=True)`` much faster.

    Examples
    --------
    >>> g = np.array([0, 1, 1, 2, 3, 3, 2, 0, 1, 3.0])
    >>> s = np.array([.1, .3, .2, .5, .9, .7, .4, .2, .6, .8])
    >>> ci = spearman_ci(g, s, n_resamples=999, seed=1)
    >>> round(ci.estimate, 4), ci.low < ci.estimate < ci.high
    (0.8938, True)
    """
    g, s = _RankResampler(gold), _RankResampler(scores)

    def stat(idx):
        c = _counts(idx, g.n)
        return _weighted_spearman(c, g.ranks_from_counts(c), s.ranks_from_counts(c))

    return _bootstrap(
        stat, g.n, confidence=confidence, n_resamples=n_resamples, seed=seed, batch=batch
    )


def spearman_difference_ci(
    gold: np.ndarray,
    scores_a: np.ndarray,
    scores_b: np.ndarray,
    *,
    confidence: float = 0.95,
    n_resamples: int = 9999,
    seed=0,
    batch: int = 256,
) -> Interval:
    r""":math:`\rho_a - \rho_b` on the same pairs, with a paired BCa bootstrap interval.

    Both methods are evaluated on the same resampled pairs, so the interval accounts for
    their correlation (Zhelezniak et al. 2019; Schulz & Juric 2020, §5.1). The difference
    is significant at level :math:`\alpha` when the :math:`1 - \alpha` interval excludes 0.
    """
    g, a, b = _RankResampler(gold), _RankResampler(scores_a), _RankResampler(scores_b)

    def stat(idx):
        c = _counts(idx, g.n)
        rg = g.ranks_from_counts(c)
        return _weighted_spearman(c, rg, a.ranks_from_counts(c)) - _weighted_spearman(
            c, rg, b.ranks_from_counts(c)
        )

    return _bootstrap(
        stat, g.n, confidence=confidence, n_resamples=n_resamples, seed=seed, batch=batch
    )


def bonferroni(p_values: np.ndarray, n_tests: int | None = None) -> np.ndarray:
    """Bonferroni-adjusted p-values ``min(1, p * n_tests)``.

    >>> bonferroni(np.array([0.01, 0.2]), 3).tolist()
    [0.03, 0.6000000000000001]
    """
    p = np.asarray(p_values, dtype=np.float64)
    n = len(p) if n_tests is None else n_tests
    return np.minimum(1.0, p * n)


#: Columns of :func:`mcnemar_comparisons`.
MCNEMAR_COLUMNS = [
    "method_a",
    "method_b",
    "statistic",
    "p_value",
    "p_adjusted",
    "table",
    "significant",
    "better",
]
#: Columns of :func:`spearman_difference_comparisons`.
DIFFERENCE_COLUMNS = [
    "method_a",
    "method_b",
    "difference",
    "low",
    "high",
    "confidence",
    "significant",
    "better",
]


def roc_points(gold: np.ndarray, scores: np.ndarray) -> pd.DataFrame | None:
    """The ROC curve (``fpr``, ``tpr``, ``threshold``) of *scores* against binary *gold*;
    ``None`` when the gold has one class only (no curve exists)."""
    # scikit-learn: heavy (~0.3 s), loaded only when this metric runs (CLI start-up)
    from sklearn.metrics import roc_curve

    if len(np.unique(gold)) != 2:
        return None
    fpr, tpr, th = roc_curve(gold, scores)
    return pd.DataFrame({"fpr": fpr, "tpr": tpr, "threshold": th})


def mcnemar_comparisons(
    correct: Mapping[str, np.ndarray],
    accuracy: Mapping[str, float],
    *,
    n_tests: int,
    alpha: float,
    exact: bool | None = None,
    on_pair: Callable[[], None] | None = None,
) -> pd.DataFrame:
    """McNemar's test between the right/wrong decisions (*correct*) of every two methods,
    in the order given, Bonferroni-corrected for *n_tests* tests; significant when the
    adjusted p-value is below *alpha*, and then ``better`` names the more accurate method.
    *on_pair* is called after each comparison (progress). Columns: :data:`MCNEMAR_COLUMNS`.
    """
    names = list(correct)
    rows = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            stat, p, table = mcnemar_test(correct[a], correct[b], exact=exact)
            p_adj = float(bonferroni(np.array([p]), n_tests)[0])
            sig = p_adj < alpha
            better = a if accuracy[a] > accuracy[b] else b if accuracy[b] > accuracy[a] else ""
            rows.append(
                {
                    "method_a": a,
                    "method_b": b,
                    "statistic": stat,
                    "p_value": p,
                    "p_adjusted": p_adj,
                    "table": table.tolist(),
                    "significant": bool(sig),
                    "better": better if sig else "",
                }
            )
            if on_pair is not None:
                on_pair()
    return pd.DataFrame(rows, columns=MCNEMAR_COLUMNS)


def spearman_difference_comparisons(
    gold: np.ndarray,
    scores: Mapping[str, np.ndarray],
    *,
    level: float,
    n_resamples: int = 9999,
    seed=0,
    on_pair: Callable[[], None] | None = None,
) -> pd.DataFrame:
    r"""The paired bootstrap difference :math:`\rho_a - \rho_b` of every two methods (in
    the order given) at the Bonferroni-corrected *level* (the interval has confidence
    ``1 - level``); significant when it excludes 0, and then ``better`` names the method
    with the higher :math:`\rho`. *on_pair* is called after each comparison (progress).
    Columns: :data:`DIFFERENCE_COLUMNS`."""
    names = list(scores)
    rows = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            ci = spearman_difference_ci(
                gold, scores[a], scores[b], confidence=1 - level, n_resamples=n_resamples, seed=seed
            )
            sig = bool(np.isfinite(ci.low) and (ci.low > 0 or ci.high < 0))
            rows.append(
                {
                    "method_a": a,
                    "method_b": b,
                    "difference": ci.estimate,
                    "low": ci.low,
                    "high": ci.high,
                    "confidence": ci.confidence,
                    "significant": sig,
                    "better": (a if ci.estimate > 0 else b) if sig else "",
                }
            )
            if on_pair is not None:
                on_pair()
    return pd.DataFrame(rows, columns=DIFFERENCE_COLUMNS)


def significance_counts(methods: Sequence[str], comparisons: pd.DataFrame) -> pd.DataFrame:
    """Per method: how many methods it is significantly better and worse than.

    *comparisons* has columns ``method_a``, ``method_b``, ``significant`` and ``better``
    (the name of the better method, or empty).
    """
    better: dict[str, list[str]] = {m: [] for m in methods}
    worse: dict[str, list[str]] = {m: [] for m in methods}
    for row in comparisons.itertuples(index=False):
        if not row.significant or not row.better:
            continue
        loser = row.method_b if row.better == row.method_a else row.method_a
        better[row.better].append(loser)
        worse[loser].append(row.better)
    return pd.DataFrame(
        {
            "method": list(methods),
            "better_than": [len(better[m]) for m in methods],
            "worse_than": [len(worse[m]) for m in methods],
            "better_than_methods": [", ".join(better[m]) for m in methods],
            "worse_than_methods": [", ".join(worse[m]) for m in methods],
        }
    )


# ---------------------------------------------------------------------------------------
# Category separation
# ---------------------------------------------------------------------------------------


def relative_overlap_error(
    sim_close: np.ndarray, sim_distant: np.ndarray
) -> tuple[float, int, tuple[int, int, int]]:
    r"""Relative overlap error :math:`O` of Schulz & Juric (2020, §5.3).

    With categories :math:`A, B` semantically close and :math:`C` distant,

    .. math::

        \#O = \sum_{t_i \in A,\, t_j \in B,\, t_k \in C}
              \mathbb{1}\left[\mathrm{sim}(t_i, t_j) \le \mathrm{sim}(t_i, t_k)\right],
        \qquad O = \frac{\#O}{|A| \, |B| \, |C|}

    counting only the terms the method can encode (ties count as errors).

    Parameters
    ----------
    sim_close : ndarray, shape (|A|, |B|)
        Similarities between the terms of A and of B; NaN for a term the method cannot encode.
    sim_distant : ndarray, shape (|A|, |C|)
        Similarities between the terms of A and of C.

    Returns
    -------
    O : float
    count : int
        :math:`\#O`.
    sizes : (int, int, int)
        The encoded :math:`|A|, |B|, |C|`.

    Examples
    --------
    >>> close = np.array([[0.9, 0.5], [0.8, 0.7]])
    >>> distant = np.array([[0.6], [0.1]])
    >>> relative_overlap_error(close, distant)   # only (t_0, b_1, c_0): 0.5 <= 0.6
    (0.25, 1, (2, 2, 1))
    """
    S1 = np.asarray(sim_close, dtype=np.float64)
    S2 = np.asarray(sim_distant, dtype=np.float64)
    if S1.shape[0] != S2.shape[0]:
        raise ValueError("sim_close and sim_distant need one row per term of the first category")
    cols_b = ~np.all(np.isnan(S1), axis=0)
    cols_c = ~np.all(np.isnan(S2), axis=0)
    S1, S2 = S1[:, cols_b], S2[:, cols_c]
    rows = ~(np.isnan(S1).any(axis=1) | np.isnan(S2).any(axis=1))
    S1, S2 = S1[rows], S2[rows]
    na, nb, nc = S1.shape[0], S1.shape[1], S2.shape[1]
    if na * nb * nc == 0:
        return float("nan"), 0, (na, nb, nc)
    S2s = np.sort(S2, axis=1)
    count = 0
    for i in range(na):
        # distant terms with sim >= sim(t_i, t_j), for every j at once
        count += int((nc - np.searchsorted(S2s[i], S1[i], side="left")).sum())
    return count / (na * nb * nc), count, (na, nb, nc)
