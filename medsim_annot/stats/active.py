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

from .ppi import STOP_CONFIDENCE, PPIEstimate, PPIStopping, gain_note, ppi_from_sums

#: Default share of a group's uniform mixture: every pair keeps at least this weight
#: relative to the mean (the "floor" of the mixture).
DEFAULT_FLOOR = 0.2
#: Default least expected share of a group's pairs drawn into the sample.
DEFAULT_DRAW_SHARE = 0.25


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
        Weight of the uniform mixture: :math:`q_i = (1-\\eta)\\,u_i/\bar u + \\eta`; 1 is
        uniform sampling.
    share : float in (0, 1]
        The least expected share of the group drawn.

    Returns
    -------
    array (N,)
        :math:`\\pi_i = \\min(1, c\\,q_i)` with :math:`c = \\max(1/\\max_j q_j,\\ \text{share}
        / \bar q)`: the most uncertain pair is drawn surely and the others in proportion to
        their *q* (so the weights keep the sampling rule's proportions), unless that would
        draw fewer than share · N pairs in expectation, when *c* grows (by bisection, once
        pairs are capped at 1) until share · N are. Every pair keeps a known probability of at least
        :math:`c\\,\\eta > 0`, so the inverse-probability weights are bounded.

    Examples
    --------
    >>> p = sampling_probabilities([0.0, 0.0, 0.5, 0.5], floor=0.2, share=0.25)
    >>> p.round(3).tolist()
    [0.111, 0.111, 1.0, 1.0]
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
    c = max(1.0 / float(q.max()), share / float(q.mean()))
    want = share * n
    if np.minimum(1.0, c * q).sum() < want:  # capped pairs lost mass: grow c (bisection)
        lo, hi = c, 1.0 / float(q.min())  # at hi every pair is drawn surely
        for _ in range(100):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if np.minimum(1.0, mid * q).sum() < want else (lo, mid)
        c = hi
    return np.minimum(1.0, c * q)


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
    adjust: bool = False,
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
    adjust : bool
        For a 0/1 outcome: the Agresti–Coull adjusted interval (see
        :func:`active_from_sums`); the estimate is unchanged.

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
    big_n = len(y)
    n = int(lab.sum())
    w = 1.0 / p[lab]
    yl, fl = y[lab], f[lab]
    w2 = w * w
    r = active_from_sums(
        n,
        w.sum(),
        w @ yl,
        w @ fl,
        w @ (yl * yl),
        w2.sum(),
        w2 @ yl,
        w2 @ fl,
        w2 @ (yl * yl),
        w2 @ (fl * fl),
        w2 @ (yl * fl),
        big_n=big_n,
        f_bar=float(f.mean()),
        var_f=float(f.var()),
        confidence=confidence,
        lam=lam,
        bounds=bounds,
        adjust=adjust,
    )
    v = {k: float(np.asarray(a)) for k, a in r.items()}
    return PPIEstimate(
        estimate=v["estimate"],
        low=v["low"],
        high=v["high"],
        classical_estimate=v["classical_estimate"],
        classical_low=v["classical_low"],
        classical_high=v["classical_high"],
        lam=v["lam"],
        n=n,
        n_unlabelled=big_n - n,
        effective_n=v["effective_n"],
        confidence=confidence,
        interval="wald",
        note=gain_note(v["lam"], n, v["effective_n"], big_n - n),
    )


def active_from_sums(
    n,
    sw,
    swy,
    swf,
    swyy,
    sw2,
    sw2y,
    sw2f,
    sw2yy,
    sw2ff,
    sw2yf,
    *,
    big_n: int,
    f_bar: float,
    var_f: float,
    confidence: float = 0.95,
    lam=None,
    bounds: tuple[float, float] = (0.0, 1.0),
    adjust: bool = False,
) -> dict[str, np.ndarray]:
    r""":func:`active_mean` from weighted sums over the labelled pairs (arrays of any common
    shape: the sequential rule and the benchmark evaluate every step at once). With
    :math:`w = 1/\pi`: ``sw`` = Σw, ``swy`` = Σwy, ``swf`` = Σwf, ``swyy`` = Σwy²,
    ``sw2`` = Σw², ``sw2y`` = Σw²y, ``sw2f`` = Σw²f, ``sw2yy``, ``sw2ff``, ``sw2yf`` the
    same with y², f², yf; *big_n*, *f_bar*, *var_f*: the group's pairs and the mean and
    variance of the predictions over all of them. Returns ``estimate``, ``low``, ``high``,
    ``classical_*``, ``lam``, ``var``, ``var_classical`` and ``effective_n``.

    *adjust* (0/1 outcomes): the interval is computed with :math:`z^2` pseudo-labels, half
    1 and half 0, each of the mean weight and the mean prediction (Agresti & Coull 1998,
    Approximate is better than "exact" for interval estimation of binomial proportions,
    *Am. Stat.* 52(2), 119–126): its centre moves toward 1/2 and its width never collapses
    when the labels so far agree; the estimate stays the plain one."""
    z = _z(confidence)
    n, sw, swy, swf, swyy, sw2, sw2y, sw2f, sw2yy, sw2ff, sw2yf = np.broadcast_arrays(
        *(
            np.asarray(a, dtype=np.float64)
            for a in (n, sw, swy, swf, swyy, sw2, sw2y, sw2f, sw2yy, sw2ff, sw2yf)
        )
    )
    lo_b, hi_b = bounds
    with np.errstate(invalid="ignore", divide="ignore"):
        y_hat = swy / sw
        f_hat = swf / sw
        if adjust:
            # Agresti–Coull for the 0/1 outcome: z²/2 pseudo-labels of 1 and of 0, each
            # with the mean weight and the mean prediction, give the interval (not the
            # estimate) its centre and spread. A plug-in variance checked after every label
            # stops too early when the labels so far happen to agree (p̂ near 0 or 1).
            k = z * z
            wb = np.where(n > 0, sw / np.maximum(n, 1), 1.0)
            sw_a, swy_a, swf_a = sw + k * wb, swy + k / 2 * wb, swf + k * wb * f_hat
            sw2_a = sw2 + k * wb**2
            sw2y_a, sw2f_a = sw2y + k / 2 * wb**2, sw2f + k * wb**2 * f_hat
            sw2yy_a, sw2ff_a = sw2yy + k / 2 * wb**2, sw2ff + k * wb**2 * f_hat**2
            sw2yf_a = sw2yf + k / 2 * wb**2 * f_hat
        else:
            sw_a, swy_a, swf_a, sw2_a = sw, swy, swf, sw2
            sw2y_a, sw2f_a, sw2yy_a, sw2ff_a, sw2yf_a = sw2y, sw2f, sw2yy, sw2ff, sw2yf
        y_plain, f_plain, sw_plain = y_hat, f_hat, sw
        y_hat, f_hat = swy_a / sw_a, swf_a / sw_a
        sw, sw2, sw2y, sw2f, sw2yy, sw2ff, sw2yf = (
            sw_a,
            sw2_a,
            sw2y_a,
            sw2f_a,
            sw2yy_a,
            sw2ff_a,
            sw2yf_a,
        )
        # Σ w² (y - ŷ)(f - f̂) and friends, from the raw sums
        s_yy = sw2yy - 2 * y_hat * sw2y + y_hat**2 * sw2
        s_ff = sw2ff - 2 * f_hat * sw2f + f_hat**2 * sw2
        s_yf = sw2yf - y_hat * sw2f - f_hat * sw2y + y_hat * f_hat * sw2
        s_yy = np.maximum(s_yy, 0.0)
        s_ff = np.maximum(s_ff, 0.0)
        extra = sw**2 * var_f / big_n
        if lam is None:
            denom = s_ff + extra
            lam_a = np.where((n > 1) & (denom > 1e-15), s_yf / denom, 0.0)
            lam_a = np.clip(np.nan_to_num(lam_a, nan=0.0), 0.0, 1.0)
        else:
            lam_a = np.broadcast_to(np.asarray(lam, dtype=np.float64), n.shape)
        centre = lam_a * f_bar + y_hat - lam_a * f_hat
        est = lam_a * f_bar + y_plain - lam_a * f_plain
        var = (s_yy - 2 * lam_a * s_yf + lam_a**2 * s_ff) / sw**2 + lam_a**2 * var_f / big_n
        var = np.maximum(var, 0.0)
        var_cl = s_yy / sw**2
        spread = np.maximum(swyy / sw_plain - y_plain**2, 0.0)
        eff = np.where(var > 0, spread / var, n)
    eff = np.clip(np.nan_to_num(eff, nan=0.0), 0.0, big_n)
    half, half_cl = z * np.sqrt(var), z * np.sqrt(var_cl)
    empty = n < 1
    return {
        "estimate": np.where(empty, np.nan, est),
        "low": np.where(empty, lo_b, np.clip(centre - half, lo_b, hi_b)),
        "high": np.where(empty, hi_b, np.clip(centre + half, lo_b, hi_b)),
        "classical_estimate": np.where(empty, np.nan, y_plain),
        "classical_low": np.where(empty, lo_b, np.clip(y_hat - half_cl, lo_b, hi_b)),
        "classical_high": np.where(empty, hi_b, np.clip(y_hat + half_cl, lo_b, hi_b)),
        "lam": lam_a,
        "var": var,
        "var_classical": var_cl,
        "effective_n": np.where(empty, 0.0, eff),
    }


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
    e = active_mean(y, f, labelled=lab, pi=pi, confidence=confidence, adjust=True)
    check = active_mean(
        y, f, labelled=lab, pi=pi, confidence=stop_confidence, lam=e.lam, adjust=True
    )
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


def plan_labels(
    f,
    v,
    pi,
    *,
    target: float,
    confidence: float = STOP_CONFIDENCE,
    min_labels: int = 20,
    adjust: bool = False,
    active: bool | None = None,
    score: bool = False,
) -> int:
    """Labelled pairs a group needs for a half-width of *target*, from the predictions of
    its pairs: uniform PPI++ when every π is equal, active serving otherwise.

    Parameters
    ----------
    f : array (N,)
        The (calibrated) prediction of every pair of the group.
    v : array (N,)
        The variance of the outcome given the prediction (binary: f(1 − f)).
    pi : array (N,)
        Draw probabilities (:func:`sampling_probabilities`); all equal: uniform serving.
    active : bool, optional
        Plan :func:`active_mean` (True: f̄ over all N pairs) or uniform PPI++ (False: f̄
        over the unlabelled ones); ``None``: active when the π differ.
    score : bool
        Uniform serving of a 0/1 outcome: plan the sequential rule's own interval (the
        floored score form of :func:`medsim_annot.stats.ppi.ppi_group_stopping`) evaluated
        at the expected sums after *n* labels, instead of the Wald variance below.
    target, confidence :
        The half-width and the level it is checked at (the rule's 97.5 %).

    Returns
    -------
    int
        The smallest *n* whose expected half-width is within *target*, at least
        *min_labels*; at most the pairs that can be served (N, or the expected drawn
        Σπ when the π differ).

    Notes
    -----
    With pairs labelled with probability ∝ π_i and a calibrated prediction
    (E[Y | f] = f), the variance of :func:`active_mean` after *n* labels is

    .. math:: V(n, \\lambda) = \\frac{\\sum_j \\pi_j}{n N^2}\\sum_i
              \\frac{v_i + (1-\\lambda)^2 (f_i - \\bar f)^2}{\\pi_i} +
              \\frac{\\lambda^2 \\sigma^2_f}{N'}

    with N' = N for active serving and N − n (the unlabelled pairs) for uniform PPI++,
    the finite group's own size rather than an infinite pool: a group of 400 pairs gives
    its predictions only 400 − n pairs to average. With *adjust* (0/1 outcomes under active
    serving) the Agresti–Coull pseudo-labels of :func:`active_from_sums` enter as
    :math:`(n A + z^2/4)/(n + z^2)^2` in place of *A/n*. *n* is the least with
    :math:`z\\sqrt{\\min_\\lambda V(n, \\lambda)} \\le` *target* (λ on a grid of 101 values).
    With equal π and v = f(1 − f) it is :func:`medsim_annot.stats.ppi.labels_needed` at
    the correlation of the calibrated prediction.

    Examples
    --------
    >>> import numpy as np
    >>> f = np.full(400, 0.8)  # a prediction that knows nothing: the classical size
    >>> plan_labels(f, f * (1 - f), np.ones(400), target=0.05, confidence=0.95)
    246
    """
    f = np.asarray(f, dtype=np.float64).ravel()
    v = np.asarray(v, dtype=np.float64).ravel()
    p = np.asarray(pi, dtype=np.float64).ravel()
    big_n = len(f)
    if big_n == 0:
        return 0
    z = _z(confidence)
    uniform = bool(np.ptp(p) < 1e-12) if active is None else not active
    cap = big_n if uniform else max(int(math.floor(p.sum())), 1)
    lam = np.linspace(0.0, 1.0, 101)[:, None]
    dev2 = (f - f.mean()) ** 2
    var_f = float(f.var())
    # A(λ) = Σπ/N² Σ (v + (1-λ)² dev²)/π
    a = p.sum() / big_n**2 * ((v / p).sum() + (1 - lam) ** 2 * (dev2 / p).sum())
    n = np.arange(1, cap + 1, dtype=np.float64)[None, :]
    pool = np.maximum(big_n - n, 1.0) if uniform else np.full_like(n, float(big_n))
    if score and uniform:
        return _plan_uniform_score(
            f, v, z=z, confidence=confidence, target=target, min_labels=min_labels
        )
    if adjust and not uniform:
        # the Agresti–Coull pseudo-labels of active_from_sums(adjust=True): z² of them, of
        # the mean weight (W grows from n w̄ to (n + z²) w̄), half 1 and half 0 — the
        # variance 1/4 of such a label
        k = z * z
        var = (a * n + k / 4) / (n + k) ** 2 + lam**2 * var_f / pool
    else:
        var = a / n + lam**2 * var_f / pool
    ok = np.flatnonzero(z * np.sqrt(var.min(axis=0)) <= target + 1e-12)
    need = int(n[0, ok[0]]) if len(ok) else cap
    return int(min(max(need, min_labels), cap))


def _plan_uniform_score(
    f: np.ndarray, v: np.ndarray, *, z: float, confidence: float, target: float, min_labels: int
) -> int:
    """:func:`plan_labels` for uniform serving of a 0/1 outcome: the least *n* whose
    sequential-rule interval (:func:`~medsim_annot.stats.ppi.ppi_from_sums`, score form with
    its floor, power-tuned λ) at the expected sums of *n* labelled pairs (calibrated: E[Y] =
    f̄, E[Y²] = mean(v + f²), E[Yf] = mean(f²)) is within *target*."""
    big_n = len(f)
    n = np.arange(1, big_n + 1, dtype=np.float64)
    mf, mff = float(f.mean()), float((f * f).mean())
    myy = float((v + f * f).mean())
    nu = big_n - n
    r = ppi_from_sums(
        n,
        n * mf,
        n * myy,
        n * mf,
        n * mff,
        n * mff,
        nu,
        nu * mf,
        nu * mff,
        confidence=confidence,
        interval="score",
        floor=True,
    )
    ok = np.flatnonzero((r["high"] - r["low"]) / 2 <= target + 1e-12)
    need = int(n[ok[0]]) if len(ok) else big_n
    return int(min(max(need, min_labels), big_n))
