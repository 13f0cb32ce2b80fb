"""Intraclass correlation for consistency, ICC(C,1) and ICC(C,k) (McGraw & Wong 1996),
computed by ``pingouin.intraclass_corr`` on a complete items x raters matrix."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._frame import CodedRatings, coded

#: Up to this many ratings (items x raters) the ICC is pingouin's; beyond it the same
#: two-way ANOVA in closed form (:func:`closed_form`). 50,000 covers every published
#: figure the tests reproduce; the dashboard of a 100,000-pair study is above it.
PINGOUIN_MAX = 50_000


def closed_form(m: np.ndarray) -> tuple[float, float] | None:
    """ICC(C,1) and ICC(C,k) of a complete n x k matrix from its two-way ANOVA mean
    squares (see :func:`intraclass_corr`), or None when there is no variance between items.

    >>> c1, ck = closed_form(np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8],
    ...                                [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]], float))
    >>> round(c1, 3), round(ck, 3)
    (0.715, 0.909)
    """
    n, k = m.shape
    grand = m.mean()
    row = m.mean(axis=1, keepdims=True)
    resid = m - row - m.mean(axis=0, keepdims=True) + grand
    ms_r = k * ((row - grand) ** 2).sum() / (n - 1)
    ms_e = (resid**2).sum() / ((n - 1) * (k - 1))
    if ms_r <= 0 or ms_r + (k - 1) * ms_e <= 0:
        return None
    return float((ms_r - ms_e) / (ms_r + (k - 1) * ms_e)), float((ms_r - ms_e) / ms_r)


@dataclass(frozen=True)
class ICCResult:
    """ICC(C,1) (``C1``), ICC(C,k) (``Ck``), the items and raters used, the design rule and,
    when the values are NaN, the reason."""

    C1: float
    Ck: float
    n_items: int
    k: int
    n_dropped: int
    rule: str
    reason: str | None = None


def intraclass_corr(ratings: pd.DataFrame | CodedRatings) -> ICCResult:
    """Two-way consistency ICC for a single rater and for the mean of k raters.

    Parameters
    ----------
    ratings : DataFrame or CodedRatings
        Ratings frame (``pair_id``, ``annotator``, ``value``) or its codes; no-decision
        ratings (NaN) are not used. k-of-n designs are reduced to a complete matrix by the
        slot rule of :func:`medsim_annot.stats._frame.slot_matrix` (kept on the codes:
        Kendall's W of the same codes uses the same matrix).

    Returns
    -------
    ICCResult

    Notes
    -----
    From the two-way ANOVA of the n x k matrix (items = rows, raters = columns):

    .. math:: ICC(C,1) = \\frac{MS_R - MS_E}{MS_R + (k-1) MS_E}, \\qquad
              ICC(C,k) = \\frac{MS_R - MS_E}{MS_R}

    :math:`MS_R` the mean square between items, :math:`MS_E` the residual mean square. These
    are Shrout & Fleiss's ICC(3,1) and ICC(3,k); systematic rater offsets cancel out.
    Computed by ``pingouin.intraclass_corr`` (the reference) up to :data:`PINGOUIN_MAX`
    ratings; for fewer than 5 ratings in all (pingouin's minimum) and beyond
    :data:`PINGOUIN_MAX` by the formulas above directly (:func:`closed_form`, equal to
    pingouin to 1e-9: ``tests/test_icc_closed_form.py``), which avoids pingouin's long-format
    ANOVA on a frame of every rating (a few tenths of a second at 300,000 ratings).

    References
    ----------
    McGraw, K. O., & Wong, S. P. (1996). Forming inferences about some intraclass correlation
    coefficients. Psychological Methods, 1(1), 30-46. https://doi.org/10.1037/1082-989X.1.1.30
    Shrout, P. E., & Fleiss, J. L. (1979). Intraclass correlations: uses in assessing rater
    reliability. Psychological Bulletin, 86(2), 420-428. https://doi.org/10.1037/0033-2909.86.2.420

    Examples
    --------
    Shrout & Fleiss (1979), Table 2, 6 targets x 4 judges: ICC(3,1) = 0.715, ICC(3,4) = 0.909
    (R: ``psych::ICC`` gives ICC3 0.71 and ICC3k 0.91):

    >>> from medsim_annot.stats import ratings_from_matrix
    >>> sf = [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]]
    >>> r = intraclass_corr(ratings_from_matrix(sf))
    >>> round(r.C1, 3), round(r.Ck, 3)
    (0.715, 0.909)
    """
    sm = coded(ratings).slots
    n, k = sm.matrix.shape if sm.matrix.size else (0, sm.k)

    def fail(reason: str) -> ICCResult:
        return ICCResult(float("nan"), float("nan"), n, k, sm.n_dropped, sm.rule, reason)

    if k < 2:
        return fail("fewer than two raters per item (one annotator only?)")
    if n < 2:
        return fail("fewer than two items with a complete set of ratings")
    m = sm.matrix
    closed = closed_form(m)
    if closed is None:
        return fail("no variance between items (every item has the same mean rating)")
    c1, ck = closed
    if 5 <= n * k <= PINGOUIN_MAX:  # pingouin's own minimum; outside, the closed form
        long = pd.DataFrame(
            {
                "item": np.repeat(np.arange(n), k),
                "rater": np.tile(np.arange(k), n),
                "value": m.ravel(),
            }
        )
        # pingouin: its plotting imports cost ~1.5 s; loaded only when an ICC is computed
        import pingouin as pg

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            table = pg.intraclass_corr(long, targets="item", raters="rater", ratings="value")
        icc = dict(zip(table["Type"], table["ICC"]))
        c1 = float(icc["ICC(C,1)"] if "ICC(C,1)" in icc else icc["ICC3"])
        ck = float(icc["ICC(C,k)"] if "ICC(C,k)" in icc else icc["ICC3k"])
    return ICCResult(float(c1), float(ck), n, k, sm.n_dropped, sm.rule, None)
