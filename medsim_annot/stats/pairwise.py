"""Pairwise agreement: for every two annotators over the items both rated (decisively),
Krippendorff's alpha, Cohen's kappa (unweighted and quadratic), Spearman's rho."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from data_schemas import columns as C
from data_schemas.options import StrOptions
from data_schemas.scales import Scale
from medsim_annot.i18n import t

from ._frame import CodedRatings, Estimate, coded, level_of, nan
from .alpha import krippendorff_alpha

#: The disagreement weights of a weighted kappa (no weights: every disagreement counts 1).
WEIGHTS = StrOptions(
    "weights",
    {
        "linear": "disagreement grows with the distance between the positions",
        "quadratic": "disagreement grows with the squared distance",
    },
)

PAIRWISE_COLUMNS = (
    "annotator_a",
    "annotator_b",
    "n_items",
    "krippendorff_alpha",
    "cohen_kappa",
    "cohen_kappa_quadratic",
    "spearman_rho",
)
MEAN_COLUMNS = ("krippendorff_alpha", "cohen_kappa", "cohen_kappa_quadratic", "spearman_rho")


def _shared(a, b) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError("the two rating vectors must have the same length (one entry per item)")
    both = ~np.isnan(a) & ~np.isnan(b)
    return a[both], b[both]


def cohen_kappa(a, b, *, weights: str | None = None, labels=None) -> Estimate:
    """Cohen's kappa between two annotators over the items both rated.

    Parameters
    ----------
    a, b : array_like, shape (n_items,)
        Codes of the two annotators; NaN = not rated / no decision (the item is skipped).
    weights : {None, "linear", "quadratic"}
        Disagreement weights over the positions in *labels*.
    labels : sequence of float, optional
        The scale's codes in order (default: the codes either annotator used). For equally
        spaced codes the quadratic weight equals the squared difference of the codes.

    Returns
    -------
    Estimate
        NaN with a reason when fewer than two shared items or when chance agreement is 1
        (both annotators constant and equal).

    Notes
    -----
    .. math:: \\kappa = 1 - \\frac{\\sum_{ij} w_{ij} p_{ij}}{\\sum_{ij} w_{ij} p_{i\\cdot}
              p_{\\cdot j}}, \\qquad w_{ij} = [i \\ne j] \\text{ (unweighted) or }
              \\frac{(i-j)^2}{(K-1)^2} \\text{ (quadratic)}

    where :math:`p_{ij}` is the share of items rated *i* by A and *j* by B. Computed by
    ``sklearn.metrics.cohen_kappa_score``. Symmetric in A and B.

    References
    ----------
    Cohen, J. (1960). A coefficient of agreement for nominal scales. Educational and
    Psychological Measurement, 20(1), 37-46. https://doi.org/10.1177/001316446002000104
    Cohen, J. (1968). Weighted kappa. Psychological Bulletin, 70(4), 213-220.
    https://doi.org/10.1037/h0026256
    Artstein, R., & Poesio, M. (2008). Inter-coder agreement for computational linguistics.
    Computational Linguistics, 34(4), 555-596. https://doi.org/10.1162/coli.07-034-R2

    Examples
    --------
    Artstein & Poesio (2008), Table 1 (contingency [[20, 20], [10, 50]]), kappa = 0.348
    (R: ``irr::kappa2`` agrees):

    >>> a = [0] * 40 + [1] * 60
    >>> b = [0] * 20 + [1] * 20 + [0] * 10 + [1] * 50
    >>> round(cohen_kappa(a, b).value, 3)
    0.348
    """
    x, y = _shared(a, b)
    if len(x) < 2:
        return nan(t("fewer than two items rated by both annotators"), len(x))
    if labels is None:
        labels = np.unique(np.concatenate([x, y]))
    labels = np.sort(np.asarray(labels, dtype=np.float64))
    pos_x = np.searchsorted(labels, x)
    pos_y = np.searchsorted(labels, y)
    k = len(labels)
    if (
        (pos_x >= k).any()
        or (pos_y >= k).any()
        or not (
            np.array_equal(labels[np.minimum(pos_x, k - 1)], x)
            and np.array_equal(labels[np.minimum(pos_y, k - 1)], y)
        )
    ):
        raise ValueError("a rating is not among the labels")
    observed = np.bincount(pos_x * k + pos_y, minlength=k * k).reshape(k, k) / len(x)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    idx = np.arange(k, dtype=np.float64)
    if weights is None:
        w = 1.0 - np.eye(k)
    else:
        power = 2 if WEIGHTS.check(weights) == "quadratic" else 1
        w = np.abs(idx[:, None] - idx[None, :]) ** power
    d_e = float((w * expected).sum())
    if d_e <= 1e-15:
        return nan(t("chance agreement is 1 (both annotators gave one and the same value)"), len(x))
    return Estimate(1.0 - float((w * observed).sum()) / d_e, len(x), None)


def spearman_rho(a, b) -> Estimate:
    """Spearman's rank correlation over the items both annotators rated.

    Notes
    -----
    Pearson's correlation of the mid-ranks (ties get the average rank):
    :math:`\\rho = \\operatorname{corr}(\\operatorname{rank}(a), \\operatorname{rank}(b))`.
    Undefined (NaN with a reason) when either annotator is constant over the shared items.

    References
    ----------
    Spearman, C. (1904). The proof and measurement of association between two things.
    American Journal of Psychology, 15(1), 72-101. https://doi.org/10.2307/1412159

    Examples
    --------
    >>> round(spearman_rho([1, 2, 3, 4], [1, 3, 2, 4]).value, 3)
    0.8
    """
    x, y = _shared(a, b)
    if len(x) < 2:
        return nan(t("fewer than two items rated by both annotators"), len(x))
    if np.all(x == x[0]) or np.all(y == y[0]):
        return nan(t("an annotator is constant over the shared items"), len(x))
    # As scipy.stats.spearmanr computes it for two vectors (Pearson of the mid-ranks, by
    # np.corrcoef of the stacked ranks), with the ranks of rating codes found by counting.
    ranked = np.column_stack((midranks(x), midranks(y)))
    return Estimate(float(np.corrcoef(ranked, rowvar=False)[1, 0]), len(x), None)


#: Largest value :func:`midranks` ranks by counting (rating codes are 0..k-1).
_COUNTED_MAX = 1_000


def midranks(v: np.ndarray) -> np.ndarray:
    """Ranks 1..n with ties given their average rank: ``scipy.stats.rankdata(v)`` (the
    "average" method), value for value. Small non-negative integers (rating codes) are
    ranked by counting, without a sort: a value's ties hold ranks ``start + 1 .. end``,
    where *start* values are smaller and *end* are not larger, so its rank is
    ``(start + 1 + end) / 2``. Anything else goes to scipy.

    >>> midranks(np.array([2.0, 0.0, 2.0, 1.0])).tolist()
    [3.5, 1.0, 3.5, 2.0]
    """
    v = np.asarray(v, dtype=np.float64)
    if len(v) and v.min() >= 0 and v.max() <= _COUNTED_MAX:
        codes = v.astype(np.int64)
        if np.array_equal(codes, v):
            counts = np.bincount(codes)
            end = np.cumsum(counts)
            return (0.5 * (end + (end - counts) + 1))[codes]
    return np.asarray(rankdata(v), dtype=np.float64)


def pairwise_agreement(
    ratings: pd.DataFrame | CodedRatings, level: Scale | str, *, labels=None
) -> pd.DataFrame:
    """Agreement of every two annotators over the items both rated decisively.

    Parameters
    ----------
    ratings : DataFrame or CodedRatings
        Ratings frame (``pair_id``, ``annotator``, ``value``) or its codes.
    level : Scale or level name
        Level for alpha; a Scale also gives the *labels* (its codes) for the kappas.
    labels : sequence of float, optional
        Codes in scale order for the kappa weights.

    Returns
    -------
    DataFrame
        One row per pair of annotators (sorted by name) with ``annotator_a``,
        ``annotator_b``, ``n_items``, ``krippendorff_alpha``, ``cohen_kappa``,
        ``cohen_kappa_quadratic``, ``spearman_rho`` and ``reason`` (why a value is NaN).

    Notes
    -----
    Alpha for two annotators over their shared items; see :func:`krippendorff_alpha`,
    :func:`cohen_kappa`, :func:`spearman_rho`. This is the inter-annotator table of
    Schulz et al. (2020), Table 2, following Pakhomov et al. (2011).

    References
    ----------
    Schulz, C., Levy-Kramer, J., Van Assel, C., Kepes, M., & Hammerla, N. (2020). Biomedical
    Concept Relatedness - A large EHR-based benchmark. COLING 2020, 6565-6575.
    https://doi.org/10.18653/v1/2020.coling-main.577

    Examples
    --------
    >>> from medsim_annot.stats import ratings_from_matrix
    >>> r = ratings_from_matrix([[0, 0, 1], [1, 1, 1], [2, 3, 2], [3, 3, 3]], annotators="ABC")
    >>> pairwise_agreement(r, "ordinal")[["annotator_a", "annotator_b", "n_items"]].values.tolist()
    [['A', 'B', 4], ['A', 'C', 4], ['B', 'C', 4]]
    """
    lv = level_of(level)
    if labels is None and isinstance(level, Scale):
        codes = [
            o.code
            for o in level.options
            if o.code is not None and not level.is_no_decision(o.value)
        ]
        labels = sorted(set(codes)) if codes else None
    enc = coded(ratings)
    m = enc.matrix()
    if labels is None:
        labels = enc.values
    rows = []
    for i, j in itertools.combinations(range(enc.n_annotators), 2):
        x, y = _shared(m[:, i], m[:, j])
        reasons = []
        if len(x) == 0:
            ests = [nan(t("no overlap: the two annotators rated no item in common"))] * 4
        else:
            ests = [
                krippendorff_alpha(
                    np.vstack([x, y]), lv, value_domain=np.unique(np.concatenate([x, y]))
                )
                if len(x) >= 1
                else nan(t("no overlap")),
                cohen_kappa(x, y, labels=labels),
                cohen_kappa(x, y, labels=labels, weights="quadratic"),
                spearman_rho(x, y),
            ]
        for _name, e in zip(MEAN_COLUMNS, ests):
            if e.reason and e.reason not in reasons:
                reasons.append(e.reason)
        rows.append(
            (
                enc.annotators[i],
                enc.annotators[j],
                len(x),
                *(e.value for e in ests),
                "; ".join(reasons) or None,
            )
        )
    return pd.DataFrame(rows, columns=[*PAIRWISE_COLUMNS, "reason"]).astype(
        {"n_items": "int64", **{c: "float64" for c in MEAN_COLUMNS}}
    )


def per_annotator_means(pairwise: pd.DataFrame) -> pd.DataFrame:
    """Per annotator, the mean of each pairwise coefficient over that annotator's pairings
    (NaN pairings skipped), as in Schulz et al. (2020), Table 2.

    Examples
    --------
    >>> pw = pd.DataFrame({"annotator_a": ["A", "A", "B"], "annotator_b": ["B", "C", "C"],
    ...                    "krippendorff_alpha": [0.5, 0.7, 0.9], "cohen_kappa": [0.0] * 3,
    ...                    "cohen_kappa_quadratic": [0.0] * 3, "spearman_rho": [0.0] * 3})
    >>> per_annotator_means(pw)["krippendorff_alpha"].round(2).tolist()
    [0.6, 0.7, 0.8]
    """
    both = pd.concat(
        [
            pairwise.rename(columns={"annotator_a": C.ANNOTATOR})[[C.ANNOTATOR, *MEAN_COLUMNS]],
            pairwise.rename(columns={"annotator_b": C.ANNOTATOR})[[C.ANNOTATOR, *MEAN_COLUMNS]],
        ]
    )
    if both.empty:
        return pd.DataFrame(columns=[C.ANNOTATOR, *MEAN_COLUMNS])
    return both.groupby(C.ANNOTATOR, sort=True)[list(MEAN_COLUMNS)].mean().reset_index()
