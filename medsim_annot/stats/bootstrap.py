"""Bootstrap confidence intervals over items (``scipy.stats.bootstrap``), vectorised.

Statistics are written as functions of a *weight matrix* ``W`` of shape (B, n_items):
``W[b, u]`` is how often item ``u`` is drawn in resample ``b``. Every statistic of the
project is a function of item-additive sums (coincidence matrices, confusion counts), so a
resample costs one matrix product ``W @ F`` instead of a recomputation.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.stats import bootstrap

#: Above this many items, BCa's jackknife (n evaluations of n-1 items) is too costly.
BCA_MAX_ITEMS = 20_000
_CELLS_PER_BATCH = 20_000_000


@dataclass(frozen=True)
class ConfidenceInterval:
    """A bootstrap interval: ``method`` is "BCa" or "percentile"; ``reason`` says why BCa
    was not used (or why the interval is NaN)."""

    low: float
    high: float
    method: str
    confidence: float
    n_resamples: int
    reason: str | None = None

    def pair(self) -> list[float]:
        return [self.low, self.high]


def weights_from_indices(idx: np.ndarray, n_items: int) -> np.ndarray:
    """Resample indices of shape (B, m) to a weight matrix (B, n_items) of draw counts."""
    idx = np.asarray(idx, dtype=np.int64)
    b = idx.shape[0]
    flat = (idx + (np.arange(b, dtype=np.int64) * n_items)[:, None]).ravel()
    return np.bincount(flat, minlength=b * n_items).reshape(b, n_items).astype(np.float64)


def bootstrap_ci(
    sums: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray],
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed=None,
    method: str = "BCa",
) -> ConfidenceInterval:
    """Bootstrap confidence interval, over items, of a statistic of item-additive sums.

    Parameters
    ----------
    sums : ndarray, shape (n_items, p)
        Each item's additive contribution (a flattened coincidence matrix for alpha, one-hot
        confusion cells for accuracy, ...). A resample's totals are ``W @ sums`` with ``W``
        the draw counts; a jackknife sample's totals are ``sums.sum(0) - sums[i]``.
    statistic : callable
        Maps totals of shape (B, p) to B values (NaN allowed).
    n_resamples, confidence, seed :
        Passed to ``scipy.stats.bootstrap`` (``seed`` as ``rng``).
    method : {"BCa", "percentile"}
        BCa where it is defined; it falls back to the percentile interval, with a reason,
        when the data are too large for the jackknife (> ``BCA_MAX_ITEMS`` items), when the
        bootstrap distribution is degenerate or when some resamples are undefined.

    Returns
    -------
    ConfidenceInterval

    Notes
    -----
    The percentile interval is
    :math:`[\\hat\\theta^*_{(\\alpha/2)}, \\hat\\theta^*_{(1-\\alpha/2)}]`;
    BCa adjusts the percentiles for bias :math:`\\hat z_0 = \\Phi^{-1}(\\#\\{\\hat\\theta^*_b <
    \\hat\\theta\\}/B)` and acceleration :math:`\\hat a` from the jackknife.

    References
    ----------
    Efron, B. (1987). Better bootstrap confidence intervals. Journal of the American
    Statistical Association, 82(397), 171-185. https://doi.org/10.1080/01621459.1987.10478410

    Examples
    --------
    The mean of 0..9 as a ratio of sums (value, count), BCa:

    >>> x = np.arange(10.0)
    >>> sums = np.column_stack([x, np.ones(10)])
    >>> ci = bootstrap_ci(sums, lambda t: t[:, 0] / t[:, 1], n_resamples=200, seed=1)
    >>> ci.method, ci.low < 4.5 < ci.high
    ('BCa', True)
    """
    sums = np.asarray(sums, dtype=np.float64)
    if sums.ndim == 1:
        sums = sums[:, None]
    n_items = len(sums)
    total = sums.sum(axis=0)
    if n_items < 2:
        return ConfidenceInterval(
            np.nan, np.nan, method, confidence, n_resamples, "fewer than two items to resample"
        )
    reason = None
    if method == "BCa" and n_items > BCA_MAX_ITEMS:
        method = "percentile"
        reason = (
            f"percentile interval: BCa needs a jackknife over {n_items:,} items "
            f"(used up to {BCA_MAX_ITEMS:,})"
        )

    def stat(idx, axis=-1):
        idx = np.asarray(idx)
        flat = idx.reshape(-1, idx.shape[-1]).astype(np.int64)
        if flat.shape[1] == n_items - 1:  # scipy's jackknife: item i left out of row i
            missing = n_items * (n_items - 1) // 2 - flat.sum(axis=1)
            totals = total[None, :] - sums[missing]
        else:
            totals = weights_from_indices(flat, n_items) @ sums
        return np.asarray(statistic(totals), dtype=np.float64).reshape(idx.shape[:-1])

    batch = max(1, min(n_resamples, _CELLS_PER_BATCH // n_items))
    rng = np.random.default_rng(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = bootstrap(
            (np.arange(n_items),),
            stat,
            vectorized=True,
            n_resamples=n_resamples,
            confidence_level=confidence,
            method=method,
            batch=batch,
            rng=rng,
        )
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    dist = np.asarray(res.bootstrap_distribution, dtype=np.float64)
    n_undefined = int(np.isnan(dist).sum())
    if np.isnan(low) or np.isnan(high):
        if n_undefined == len(dist):
            return ConfidenceInterval(
                np.nan,
                np.nan,
                method,
                confidence,
                n_resamples,
                "the statistic is undefined in every resample",
            )
        q = (1 - confidence) / 2
        low, high = (float(v) for v in np.nanpercentile(dist, [100 * q, 100 * (1 - q)]))
        if n_undefined:
            why = f"{n_undefined} of {len(dist)} resamples undefined (left out)"
        else:
            why = "the bootstrap distribution is degenerate (BCa undefined)"
        reason = f"percentile interval: {why}"
        method = "percentile"
    return ConfidenceInterval(low, high, method, confidence, n_resamples, reason)
