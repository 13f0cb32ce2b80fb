"""Krippendorff's alpha: the public coefficient (wrapping the ``krippendorff`` package) and a
vectorised coincidence-matrix path for many groups or bootstrap resamples at once.

The coincidence contributions of a unit are additive, so the coincidence matrix of any
multiset of units (a group, a bootstrap resample) is a weighted sum of per-unit matrices:
``O = w @ o`` with ``o`` of shape (n_units, V*V). This is what makes 1,000 resamples cheap.
"""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd

from data_schemas import columns as C
from data_schemas.scales import Scale
from medsim_annot.i18n import t

from ._frame import CodedRatings, Estimate, coded, encode, group_index, level_of, nan
from .bootstrap import bootstrap_ci


def unit_coincidences(counts: np.ndarray) -> np.ndarray:
    """Per-unit coincidence contributions.

    Parameters
    ----------
    counts : ndarray, shape (n_units, V)
        Number of pairable values ``c`` in unit ``u``.

    Returns
    -------
    ndarray, shape (n_units, V, V)
        :math:`o_{u,ck} = (n_{uc} n_{uk} - [c=k] n_{uc}) / (m_u - 1)`, zero for units with
        fewer than two values (not pairable).
    """
    counts = np.asarray(counts, dtype=np.float64)
    m = counts.sum(axis=1)
    o = counts[:, :, None] * counts[:, None, :]
    idx = np.arange(counts.shape[1])
    o[:, idx, idx] -= counts
    scale = np.zeros_like(m)
    pairable = m >= 2
    scale[pairable] = 1.0 / (m[pairable] - 1.0)
    return o * scale[:, None, None]


def _distance(values: np.ndarray, level: str, n_c: np.ndarray) -> np.ndarray:
    """Squared difference function δ²(c, k); shape (..., V, V) broadcast over the leading
    dimensions of *n_c* (the ordinal metric depends on the marginal frequencies)."""
    v = np.asarray(values, dtype=np.float64)
    if level == "nominal":
        d = 1.0 - np.eye(len(v))
        return np.broadcast_to(d, n_c.shape[:-1] + d.shape)
    if level == "interval":
        d = (v[:, None] - v[None, :]) ** 2
        return np.broadcast_to(d, n_c.shape[:-1] + d.shape)
    if level == "ratio":
        with np.errstate(divide="ignore", invalid="ignore"):
            s = v[:, None] + v[None, :]
            d = np.where(s == 0, 0.0, ((v[:, None] - v[None, :]) / np.where(s == 0, 1, s)) ** 2)
        return np.broadcast_to(d, n_c.shape[:-1] + d.shape)
    if level == "ordinal":
        cs = np.cumsum(n_c, axis=-1)
        # sum_{g=c..k} n_g for c <= k: cs[k] - cs[c] + n_c
        between = cs[..., None, :] - cs[..., :, None] + n_c[..., :, None]
        lo_hi = np.triu(np.ones((len(v), len(v)), dtype=bool))
        between = np.where(lo_hi, between, np.swapaxes(between, -1, -2))
        return (between - (n_c[..., :, None] + n_c[..., None, :]) / 2.0) ** 2
    raise ValueError(f"unknown level {level!r}")


def alpha_from_coincidence(o: np.ndarray, values: np.ndarray, level: str) -> np.ndarray:
    """Alpha from coincidence matrices of shape (..., V, V); NaN where undefined.

    :math:`\\alpha = 1 - (n-1)\\,\\frac{\\sum_{ck} o_{ck}\\delta^2_{ck}}
    {\\sum_{ck} n_c n_k \\delta^2_{ck}}`.
    """
    o = np.asarray(o, dtype=np.float64)
    n_c = o.sum(axis=-1)
    n = n_c.sum(axis=-1)
    d = _distance(values, level, n_c)
    d_o = (o * d).sum(axis=(-2, -1))
    d_e = (n_c[..., :, None] * n_c[..., None, :] * d).sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 1.0 - (n - 1.0) * d_o / d_e
    return np.where((d_e > 0) & (n > 1), out, np.nan)


def grouped_alpha(
    counts: np.ndarray, group: np.ndarray, n_groups: int, values: np.ndarray, level: str
) -> np.ndarray:
    """Alpha per group in one pass (shape (n_groups,)); *group* gives each unit's group index
    (-1 = in no group). Equals :func:`krippendorff_alpha` on each group's units."""
    o = unit_coincidences(counts).reshape(len(counts), -1)
    v = len(values)
    ok = group >= 0
    g = group[ok]
    o = o[ok]
    summed = (
        np.stack(
            [np.bincount(g, weights=o[:, j], minlength=n_groups) for j in range(v * v)], axis=-1
        )
        if v
        else np.zeros((n_groups, 0))
    )
    return alpha_from_coincidence(summed.reshape(n_groups, v, v), values, level)


def _degenerate(counts: np.ndarray) -> str | None:
    m = counts.sum(axis=1)
    pairable = m >= 2
    if not pairable.any():
        return "no pairable items (no item has two or more decisive ratings)"
    totals = counts[pairable].sum(axis=0)
    if (totals > 0).sum() < 2:
        return "no variation: every pairable rating has the same value"
    return None


def krippendorff_alpha(data, level: Scale | str = "interval", *, value_domain=None) -> Estimate:
    """Krippendorff's alpha reliability coefficient.

    Parameters
    ----------
    data : DataFrame, CodedRatings or array_like
        A ratings frame (``pair_id``, ``annotator``, ``value``; NaN values are missing data,
        as no-decision ratings are), its :class:`CodedRatings`, or reliability data of shape (n_annotators, n_units)
        with NaN for missing values, Krippendorff's orientation.
    level : Scale or {"nominal", "ordinal", "interval", "ratio"}
        Level of measurement (a scale's own level when a :class:`Scale` is given).
    value_domain : sequence of float, optional
        The codes the scale allows (default: those observed).

    Returns
    -------
    Estimate
        ``value`` (NaN with a ``reason`` when undefined: no pairable unit, no variation) and
        ``n_items``, the number of pairable units.

    Notes
    -----
    With the coincidence matrix :math:`o_{ck} = \\sum_u \\frac{n_{uc} n_{uk} - [c=k]\\,n_{uc}}
    {m_u - 1}` over pairable units (:math:`m_u \\ge 2` values), :math:`n_c = \\sum_k o_{ck}`,
    :math:`n = \\sum_c n_c`:

    .. math:: \\alpha = 1 - \\frac{D_o}{D_e} = 1 - (n - 1)
              \\frac{\\sum_{c,k} o_{ck}\\,\\delta^2_{ck}}{\\sum_{c,k} n_c n_k\\,\\delta^2_{ck}}

    with :math:`\\delta^2` nominal :math:`[c \\ne k]`, ordinal
    :math:`(\\sum_{g=c}^{k} n_g - \\frac{n_c + n_k}{2})^2`, interval :math:`(c-k)^2`, ratio
    :math:`(\\frac{c-k}{c+k})^2`. Units with a single value are not pairable and do not
    contribute; missing values need no imputation. Computed by ``krippendorff.alpha``.

    References
    ----------
    Krippendorff, K. (2011). Computing Krippendorff's Alpha-Reliability. Annenberg School for
    Communication, University of Pennsylvania. https://repository.upenn.edu/asc_papers/43
    Hayes, A. F., & Krippendorff, K. (2007). Answering the call for a standard reliability
    measure for coding data. Communication Methods and Measures, 1(1), 77-89.
    https://doi.org/10.1080/19312450709336664

    Examples
    --------
    Krippendorff's (2011) worked example, 4 observers x 12 units (R: ``irr::kripp.alpha``
    gives the same numbers):

    >>> nan = float("nan")
    >>> data = [[1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
    ...         [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
    ...         [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
    ...         [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan]]
    >>> [round(krippendorff_alpha(data, lv).value, 3)
    ...  for lv in ("nominal", "ordinal", "interval", "ratio")]
    [0.743, 0.815, 0.849, 0.797]
    """
    level = level_of(level)
    if isinstance(data, (pd.DataFrame, CodedRatings)):
        rows = coded(data, values=value_domain)
        counts, values = rows.counts(), rows.values
    else:
        arr = np.asarray(data, dtype=np.float64)
        if arr.ndim != 2:
            raise ValueError("reliability data must be 2-D (annotators x units)")
        values = (
            np.unique(arr[~np.isnan(arr)])
            if value_domain is None
            else np.asarray(value_domain, dtype=np.float64)
        )
        counts = (
            np.stack([(arr == v).sum(axis=0) for v in values], axis=1).astype(np.float64)
            if len(values)
            else np.zeros((arr.shape[1], 0))
        )
    if counts.shape[1] == 0:
        return nan(t("no decisive ratings"))
    reason = _degenerate(counts)
    n_pairable = int((counts.sum(axis=1) >= 2).sum())
    if reason:
        return nan(reason, n_pairable)
    pairable = counts.sum(axis=1) >= 2
    value = krippendorff.alpha(
        value_counts=counts[pairable],
        value_domain=values,
        # level is one of krippendorff's names (checked by level_of); typed str here
        level_of_measurement=level,  # type: ignore[arg-type]
    )
    return Estimate(float(value), n_pairable, None)


def alpha_by_group(
    ratings: pd.DataFrame, pairs: pd.DataFrame, level: Scale | str, *, by: list[str]
) -> pd.DataFrame:
    """Krippendorff's alpha per group of pairs (every combination of the *by* columns of
    *pairs* present), in one vectorised pass.

    Returns
    -------
    DataFrame
        The *by* columns, ``n_items`` (pairable items of the group) and
        ``krippendorff_alpha`` (NaN when undefined, e.g. no pairable item).

    Examples
    --------
    >>> from medsim_annot.stats import ratings_from_matrix
    >>> r = ratings_from_matrix([[1, 1], [0, 0], [1, 0], [0, 1]])
    >>> p = pd.DataFrame({"pair_id": ["i1", "i2", "i3", "i4"], "dataset": ["a", "a", "b", "b"]})
    >>> alpha_by_group(r, p, "nominal", by=["dataset"])["krippendorff_alpha"].round(3).tolist()
    [1.0, -0.5]
    """
    lv = level_of(level)
    ids = pairs[C.PAIR_ID]
    enc = encode(
        ratings, items=pd.Index(ids if pd.api.types.is_string_dtype(ids) else ids.astype(str))
    )
    counts = enc.counts()
    group, keys = group_index(pairs, list(by))
    n = len(keys)
    alpha = (
        grouped_alpha(counts, group, n, enc.values, lv) if len(enc.values) else np.full(n, np.nan)
    )
    pairable = np.bincount(group[counts.sum(axis=1) >= 2], minlength=n)
    out = keys.reset_index(drop=True).copy()
    out["n_items"] = pairable
    out["krippendorff_alpha"] = alpha
    return out


def alpha_statistic(values: np.ndarray, level: str):
    """Krippendorff's alpha of resampled totals of flattened unit coincidence matrices
    (shape ``(B, v*v)`` → ``B`` values): the statistic :func:`bootstrap_ci` resamples for an
    alpha interval over items."""
    v = len(values)

    def stat(t: np.ndarray) -> np.ndarray:
        return alpha_from_coincidence(t.reshape(-1, v, v), values, level)

    return stat


def alpha_with_interval(
    ratings: pd.DataFrame,
    scale: Scale,
    *,
    n_resamples: int = 1000,
    seed=0,
    bca_max_items: int | None = None,
) -> dict:
    """Krippendorff's alpha of *ratings* (the statistics' frame) with a 95% bootstrap interval
    over items, as a plain dict: ``value`` (``None`` with a ``reason`` when undefined),
    ``low``, ``high`` and ``method``, or ``interval_reason`` when the interval is undefined.

    BCa up to *bca_max_items* items (``None``: always), the percentile interval above:
    BCa's jackknife (one alpha per left-out item) dominates the time on large data.

    >>> import pandas as pd
    >>> from data_schemas.scales import RELATEDNESS_0_3
    >>> r = pd.DataFrame({"pair_id": list("aabbccdd"), "annotator": list("XYXYXYXY"),
    ...                   "value": [0, 0, 1, 1, 2, 2, 3, 2]})
    >>> out = alpha_with_interval(r, RELATEDNESS_0_3, n_resamples=200)
    >>> out["value"] == krippendorff_alpha(r, RELATEDNESS_0_3).value
    True
    >>> out["low"] <= out["value"] <= out["high"], out["method"] in ("BCa", "percentile")
    (True, True)
    """
    if ratings.empty:
        return {"value": None, "reason": t("no ratings")}
    est = krippendorff_alpha(ratings, scale)
    value = float(est.value)
    if np.isnan(value):
        return {"value": None, "reason": est.reason or t("undefined")}
    enc = encode(ratings)
    o_unit = unit_coincidences(enc.counts()).reshape(len(enc.items), -1)
    bca = bca_max_items is None or len(enc.items) <= bca_max_items
    ci = bootstrap_ci(
        o_unit,
        alpha_statistic(enc.values, scale.level),
        n_resamples=n_resamples,
        seed=seed,
        method="BCa" if bca else "percentile",
    )
    out: dict = {"value": value, "low": None, "high": None, "method": ci.method}
    if np.isfinite(ci.low) and np.isfinite(ci.high):
        out["low"], out["high"] = float(ci.low), float(ci.high)
    else:
        out["interval_reason"] = ci.reason or "the bootstrap distribution is degenerate"
    return out
