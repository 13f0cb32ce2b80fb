"""SimLex-style agreement (IAA-1, IAA-2) and the human upper bound (EHR-Rel section 6)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from data_schemas import columns as C

from ._frame import CodedRatings, coded
from .pairwise import spearman_rho


@dataclass(frozen=True)
class SimLexAgreement:
    """IAA-1, IAA-2 and the human upper bound, overall and per annotator.

    ``per_annotator`` has columns ``annotator``, ``iaa_1`` (mean pairwise rho with every other
    annotator), ``iaa_2`` (rho with the mean of the others), ``hub_inclusive`` (rho with the
    mean rating including the annotator) and ``hub_exclusive`` (= ``iaa_2``).
    """

    iaa_1: float
    iaa_2: float
    human_upper_bound_inclusive: float
    human_upper_bound_exclusive: float
    per_annotator: pd.DataFrame
    reasons: dict[str, str] = field(default_factory=dict)


def _rho_matrix(m: np.ndarray) -> np.ndarray:
    k = m.shape[1]
    out = np.full((k, k), np.nan)
    for i in range(k):
        for j in range(i + 1, k):
            out[i, j] = out[j, i] = spearman_rho(m[:, i], m[:, j]).value
    return out


def simlex_agreement(ratings: pd.DataFrame | CodedRatings) -> SimLexAgreement:
    """IAA-1, IAA-2 (Chiu et al. 2018) and the human upper bound (Schulz et al. 2020).

    Parameters
    ----------
    ratings : DataFrame or CodedRatings
        Ratings frame (or its codes); no-decision ratings (NaN) are left out. Each correlation uses the
        items both sides have (k-of-n designs need no special rule).

    Returns
    -------
    SimLexAgreement

    Notes
    -----
    With :math:`\\rho` Spearman's correlation over shared items, annotators :math:`a \\in A`
    and :math:`\\bar x_{-a}` the per-item mean of the other annotators' ratings:

    .. math:: \\mathrm{IAA\\text{-}1} = \\frac{1}{|A|}\\sum_a \\frac{1}{|A|-1}
              \\sum_{b \\ne a} \\rho(x_a, x_b), \\qquad
              \\mathrm{IAA\\text{-}2} = \\frac{1}{|A|}\\sum_a \\rho(x_a, \\bar x_{-a})

    The human upper bound is :math:`\\max_a \\rho(x_a, \\bar x)` (inclusive: the mean over
    all annotators including *a*) or :math:`\\max_a \\rho(x_a, \\bar x_{-a})` (exclusive).
    Pairings with an undefined rho (constant rater, fewer than two shared items) are skipped.

    References
    ----------
    Chiu, B., Pyysalo, S., Vulić, I., & Korhonen, A. (2018). Bio-SimVerb and Bio-SimLex:
    wide-coverage evaluation sets of word similarity in biomedicine. BMC Bioinformatics,
    19, 33. https://doi.org/10.1186/s12859-018-2039-z
    Schulz, C., et al. (2020). Biomedical Concept Relatedness - A large EHR-based benchmark.
    COLING 2020. https://doi.org/10.18653/v1/2020.coling-main.577

    Examples
    --------
    Perfectly concordant annotators give IAA-1 = IAA-2 = 1:

    >>> from medsim_annot.stats import ratings_from_matrix
    >>> a = simlex_agreement(ratings_from_matrix([[0, 1, 0], [2, 3, 2], [5, 6, 4]]))
    >>> a.iaa_1, a.iaa_2, a.human_upper_bound_exclusive
    (1.0, 1.0, 1.0)
    """
    enc = coded(ratings)
    m = enc.matrix()
    k = m.shape[1]
    reasons: dict[str, str] = {}
    if k < 2:
        reasons["iaa"] = "fewer than two annotators"
        per = pd.DataFrame(
            {
                C.ANNOTATOR: list(enc.annotators),
                "iaa_1": np.nan,
                "iaa_2": np.nan,
                "hub_inclusive": np.nan,
                "hub_exclusive": np.nan,
            }
        )
        return SimLexAgreement(np.nan, np.nan, np.nan, np.nan, per, reasons)
    rho = _rho_matrix(m)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        iaa1 = np.nanmean(rho, axis=1)
    mask = ~np.isnan(m)
    total = np.where(mask, m, 0.0).sum(axis=1)
    count = mask.sum(axis=1)
    iaa2 = np.full(k, np.nan)
    incl = np.full(k, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_all = total / count
        for a in range(k):
            others = np.where(
                mask[:, a] & (count > 1),
                (total - np.where(mask[:, a], m[:, a], 0.0)) / (count - 1),
                np.nan,
            )
            iaa2[a] = spearman_rho(m[:, a], others).value
            incl[a] = spearman_rho(m[:, a], np.where(mask[:, a], mean_all, np.nan)).value
    per = pd.DataFrame(
        {
            C.ANNOTATOR: list(enc.annotators),
            "iaa_1": iaa1,
            "iaa_2": iaa2,
            "hub_inclusive": incl,
            "hub_exclusive": iaa2,
        }
    )

    def agg(values: np.ndarray, fn, name: str) -> float:
        if np.isnan(values).all():
            reasons[name] = "no annotator has a defined correlation (constant raters or no overlap)"
            return float("nan")
        return float(fn(values))

    return SimLexAgreement(
        agg(iaa1, np.nanmean, "iaa_1"),
        agg(iaa2, np.nanmean, "iaa_2"),
        agg(incl, np.nanmax, "human_upper_bound"),
        agg(iaa2, np.nanmax, "human_upper_bound"),
        per,
        reasons,
    )
