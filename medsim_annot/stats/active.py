"""Active statistical inference for the audit: doctors label the pairs the model is least
sure about more often, and the estimate is reweighted by the probability each pair was drawn
with, so the interval stays valid (Zrnic & Candès 2024).

- :func:`uncertainty` — how unsure the model is that a pair's automatic label is right.
- :func:`sampling_probabilities` — each pair's probability of being drawn: growing with the
  uncertainty, mixed with a uniform floor, scaled to an expected share of the group.
- :func:`active_mean` — the prediction-powered estimate of a group's mean from the drawn and
  labelled pairs, inverse-probability weighted (Hájek form), with a power-tuned λ and its
  Wald interval.
- :func:`active_group_stopping` — the sequential audit's rule on it (97.5 % checked, 95 %
  reported).

Everything is numpy over arrays; nothing here reads files or the database.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import norm

from data_schemas.options import CONFIDENCE
from medsim_annot.errors import UsageProblem

from .ppi import STOP_CONFIDENCE, PPIEstimate, PPIStopping, gain_note

#: Default share of a group's uniform mixture: every pair keeps at least this weight
#: relative to the mean (the "floor" of the mixture).
DEFAULT_FLOOR = 0.2
#: Default expected share of a group's pairs drawn into the sample.
DEFAULT_DRAW_SHARE = 0.5


def _z(confidence: float) -> float:
    CONFIDENCE.check(confidence)
    return float(norm.ppf(0.5 + confidence / 2))


def score_probabilities(scores) -> np.ndarray:
    """A stored score as a probability that the pair is the same: the score itself when
    every score lies in [0, 1] (a model's P(same)), otherwise its mid-rank in (0, 1) (a
    cosine or any monotone score; a tie shares its rank).

    >>> score_probabilities([0.2, 0.9]).tolist()
    [0.2, 0.9]
    >>> score_probabilities([-1.0, 3.0, 7.0]).tolist()
    [0.16666666666666666, 0.5, 0.8333333333333334]
    """
    x = np.asarray(scores, dtype=np.float64).ravel()
    if np.isnan(x).any():
        raise UsageProblem("the scores contain missing values")
    if len(x) and x.min() >= 0.0 and x.max() <= 1.0:
        return x.copy()
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(len(x), dtype=np.float64)
    # ties share their mean rank
    uniq, inv = np.unique(x, return_inverse=True)
    mean_rank = np.bincount(inv, weights=ranks) / np.bincount(inv)
    return (mean_rank[inv] + 0.5) / max(len(x), 1)


def uncertainty(p, auto_label=None) -> np.ndarray:
    """How unsure the model is whether the automatic label is right: with *p* = P(same),
    the label is right with probability *f* = *p* (label 1) or 1 − *p* (label 0), and the
    standard deviation of that outcome is :math:`\\sqrt{f(1-f)} = \\sqrt{p(1-p)}` whatever the
    label (Zrnic & Candès: the optimal sampling rule draws a unit with probability
    proportional to the root of its conditional error variance). *auto_label* is accepted
    for clarity and not needed.

    >>> uncertainty([0.5, 0.9, 1.0]).round(3).tolist()
    [0.5, 0.3, 0.0]
    """
    q = np.clip(np.asarray(p, dtype=np.float64).ravel(), 0.0, 1.0)
    return np.sqrt(q * (1 - q))


def sampling_probabilities(
    u,
    *,
    floor: float = DEFAULT_FLOOR,
    share: float = DEFAULT_DRAW_SHARE,
) -> np.ndarray:
    """Each pair's probability of being drawn into its group's sample.

    Parameters
    ----------
    u : array (N,)
        The model's uncertainty per pair (:func:`uncertainty`), ≥ 0.
    floor : float in (0, 1]
        Weight of the uniform mixture: :math:`q_i = (1-\\eta)\\,u_i/\\bar u + \\eta`; 1 is
        uniform sampling.
    share : float in (0, 1]
        Expected share of the group drawn: :math:`\\sum_i \\pi_i = \\text{share}\\cdot N`.

    Returns
    -------
    array (N,)
        :math:`\\pi_i = \\min(1, c\\,q_i)` with *c* found by bisection so that the expected
        number drawn is share · N. Every pair keeps a known probability of at least
        :math:`\\min(1, c\\,\\eta)` > 0, so the inverse-probability weights are bounded.

    Examples
    --------
    >>> p = sampling_probabilities([0.0, 0.0, 0.5, 0.5], floor=0.2, share=0.5)
    >>> p.round(3).tolist(), round(float(p.sum()), 6)
    ([0.1, 0.1, 0.9, 0.9], 2.0)
    """
    u = np.asarray(u, dtype=np.float64).ravel()
    if not 0 < floor <= 1:
        raise UsageProblem(f"the uniform floor must be in (0, 1], not {floor}")
    if not 0 < share <= 1:
        raise UsageProblem(f"the drawn share must be in (0, 1], not {share}")
    n = len(u)
    if n == 0:
        return u.copy()
    if np.isnan(u).any() or (u < 0).any():
        raise UsageProblem("uncertainties must be numbers >= 0")
    mean = float(u.mean())
    q = (1 - floor) * (u / mean if mean > 0 else np.ones(n)) + floor
    want = share * n
    lo, hi = 0.0, 1.0 / float(q.min())  # at hi every pair is drawn surely
    for _ in range(100):
        c = (lo + hi) / 2
        if np.minimum(1.0, c * q).sum() < want:
            lo = c
        else:
            hi = c
    return np.minimum(1.0, hi * q)


def draw(pi, rng: np.random.Generator) -> np.ndarray:
    """Independent draws: pair *i* is in the sample with probability ``pi[i]``."""
    p = np.asarray(pi, dtype=np.float64)
    return rng.random(p.shape) < p


def active_mean(
    y,
    f,
    *,
    labelled,
    pi,
    confidence: float = 0.95,
    lam: float | None = None,
    bounds: tuple[float, float] = (0.0, 1.0),
) -> PPIEstimate:
    """The active (inverse-probability weighted) PPI++ estimate of a group's mean.

    Parameters
    ----------
    y : array (N,)
        The outcome of every pair of the group (only the labelled entries are read).
    f : array (N,)
        The prediction of the outcome on every pair (cross-fitted on the labelled ones).
    labelled : bool array (N,)
        The pairs with a doctors' verdict.
    pi : array (N,)
        The probability each pair was drawn with (> 0 where labelled).
    lam : float, optional
        λ; ``None``: power-tuned (see Notes).

    Returns
    -------
    PPIEstimate
        ``n`` labelled pairs, ``n_unlabelled`` the others of the group, ``effective_n`` the
        labelled pairs a uniform classical sample would need for the same variance (capped
        at N), ``classical_*`` the inverse-probability weighted mean of the labels alone
        (λ = 0) with its interval.

    Notes
    -----
    The labelled pairs are the drawn ones (pair *i* with probability π_i) that the doctors
    reached, in a uniformly random order among the drawn, so each is labelled with
    probability ∝ π_i; with weights :math:`w_i = 1/\\pi_i` the Hájek (self-normalised)
    estimator of the group's mean of :math:`r = Y - \\lambda f` is
    :math:`\\hat R = \\sum_L w_i r_i / \\sum_L w_i`, and

    .. math:: \\hat\\theta_\\lambda = \\lambda\\,\\bar f_N + \\hat R,\\qquad
              \\widehat{\\mathrm{Var}} = \\frac{\\lambda^2 \\hat\\sigma^2_{f,N}}{N} +
              \\frac{\\sum_L w_i^2 (r_i - \\hat R)^2}{(\\sum_L w_i)^2}

    (the linearised variance of a Hájek mean under Poisson sampling). λ minimises it:
    :math:`\\lambda = S_{yf} / (S_{ff} + W^2 \\hat\\sigma^2_{f,N}/N)` with
    :math:`S_{ab} = \\sum_L w_i^2 (a_i - \\hat a)(b_i - \\hat b)`, :math:`W = \\sum_L w_i`,
    clipped to [0, 1]. With every π equal it is the PPI++ estimate of
    :func:`~medsim_annot.stats.ppi.ppi_mean_interval` with :math:`\\bar f` over the whole
    group. The self-normalised form keeps the variance of the rectifier that of
    :math:`r - \\hat R`, not of *r* itself, which a plain inverse-probability (Horvitz–
    Thompson) sum would carry when the mean of *r* is far from 0.

    References
    ----------
    Zrnic, T., & Candès, E. J. (2024). Active statistical inference. *Proceedings of the 41st
    International Conference on Machine Learning* (ICML), PMLR 235, 62993–63010.
    arXiv:2403.03208.

    Angelopoulos, A. N., Duchi, J. C., & Zrnic, T. (2023). PPI++: Efficient
    prediction-powered inference. arXiv:2311.01453.

    Examples
    --------
    Equal probabilities: the estimate is PPI++ with the group's mean prediction.

    >>> import numpy as np
    >>> y = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0])
    >>> lab = np.array([True] * 4 + [False] * 4)
    >>> e = active_mean(y, y, labelled=lab, pi=np.full(8, 0.5), lam=1.0)
    >>> round(e.estimate, 3)
    0.75
    """
    y = np.asarray(y, dtype=np.float64).ravel()
    f = np.asarray(f, dtype=np.float64).ravel()
    lab = np.asarray(labelled, dtype=bool).ravel()
    p = np.asarray(pi, dtype=np.float64).ravel()
    if not (len(y) == len(f) == len(lab) == len(p)):
        raise UsageProblem("give y, f, labelled and pi for every pair of the group")
    if np.isnan(f).any():
        raise UsageProblem("the predictions contain missing values")
    if (p[lab] <= 0).any() or np.isnan(p[lab]).any():
        raise UsageProblem("every labelled pair needs a draw probability above 0")
    if np.isnan(y[lab]).any():
        raise UsageProblem("a labelled pair has no outcome")
    z = _z(confidence)
    big_n = len(y)
    n = int(lab.sum())
    lo_b, hi_b = bounds
    if n == 0:
        nan = float("nan")
        return PPIEstimate(
            nan, lo_b, hi_b, nan, lo_b, hi_b, 0.0, 0, big_n, 0.0, confidence, "wald", ""
        )
    w = 1.0 / p[lab]
    yl, fl = y[lab], f[lab]
    big_w = float(w.sum())
    y_hat = float(w @ yl) / big_w
    f_hat = float(w @ fl) / big_w
    dy, df = yl - y_hat, fl - f_hat
    w2 = w * w
    s_yy, s_yf, s_ff = float(w2 @ (dy * dy)), float(w2 @ (dy * df)), float(w2 @ (df * df))
    var_f = float(f.var(ddof=1)) if big_n > 1 else 0.0
    if lam is None:
        denom = s_ff + big_w**2 * var_f / big_n
        lam_v = s_yf / denom if n > 1 and denom > 1e-15 else 0.0
        lam_v = float(min(max(lam_v, 0.0), 1.0))
    else:
        lam_v = float(lam)
    f_bar = float(f.mean())
    est = lam_v * f_bar + (y_hat - lam_v * f_hat)
    var = (s_yy - 2 * lam_v * s_yf + lam_v**2 * s_ff) / big_w**2 + lam_v**2 * var_f / big_n
    var = max(var, 0.0)
    var_cl = max(s_yy, 0.0) / big_w**2
    # what a uniform sample would need: n p(1-p) / var (for a mean: the weighted variance)
    spread = float(w @ (dy * dy)) / big_w
    eff = spread / var if var > 0 else float(n)
    eff = float(min(max(eff, 0.0), big_n))
    half, half_cl = z * math.sqrt(var), z * math.sqrt(var_cl)
    return PPIEstimate(
        estimate=est,
        low=float(np.clip(est - half, lo_b, hi_b)),
        high=float(np.clip(est + half, lo_b, hi_b)),
        classical_estimate=y_hat,
        classical_low=float(np.clip(y_hat - half_cl, lo_b, hi_b)),
        classical_high=float(np.clip(y_hat + half_cl, lo_b, hi_b)),
        lam=lam_v,
        n=n,
        n_unlabelled=big_n - n,
        effective_n=eff,
        confidence=confidence,
        interval="wald",
        note=gain_note(lam_v, n, eff, big_n - n),
    )


def active_group_stopping(
    y,
    f,
    *,
    labelled,
    drawn,
    pi,
    target: float = 0.05,
    positives: int = 0,
    negatives: int = 0,
    min_positives: int = 10,
    min_negatives: int = 10,
    confidence: float = 0.95,
    stop_confidence: float = STOP_CONFIDENCE,
) -> PPIStopping:
    """The sequential audit's stopping rule under active serving: a group stops when it has
    the minimum of positives and negatives and the half-width of :func:`active_mean`'s
    interval at *stop_confidence* is at most *target*; the interval reported is at
    *confidence* (the classical rule's 97.5 %-checked, 95 %-reported logic). *drawn*: the
    pairs drawn into the sample (a group whose drawn pairs are all labelled has nothing more
    to serve and says so).
    """
    lab = np.asarray(labelled, dtype=bool)
    e = active_mean(y, f, labelled=lab, pi=pi, confidence=confidence)
    check = active_mean(y, f, labelled=lab, pi=pi, confidence=stop_confidence, lam=e.lam)
    hw = (check.high - check.low) / 2 if e.n else float("inf")
    enough = positives >= min_positives and negatives >= min_negatives
    narrow = e.n > 0 and hw <= target + 1e-12
    exhausted = bool(np.all(lab[np.asarray(drawn, dtype=bool)]))
    if not enough:
        reason = f"needs {min_positives} positives and {min_negatives} negatives first"
    elif narrow:
        reason = f"accuracy interval within ±{target:g} ({stop_confidence:.1%} active PPI++)"
    else:
        reason = f"accuracy interval wider than ±{target:g} ({stop_confidence:.1%} active PPI++)"
        if exhausted:
            reason += "; every drawn pair is labelled"
    return PPIStopping(e, hw, bool(enough and narrow), reason)
