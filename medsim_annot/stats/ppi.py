"""Prediction-powered intervals (PPI++) for the audit: a small doctor-labelled sample plus a
cheap prediction on every pair of the group.

- :func:`ppi_mean_interval` — the PPI++ interval of a mean (power-tuned λ) next to the
  classical one, from labelled outcomes, their predictions and the predictions on the
  unlabelled pairs; ``interval="wald"`` is the interval of ``ppi_py.ppi_mean_ci``,
  ``interval="score"`` its score (Wilson-type) form for 0/1 outcomes.
- :func:`ppi_from_sums` — the same from sufficient statistics, over any batch shape (the
  simulation benchmark and the sequential rule evaluate it after every rating at once).
- :func:`power_tuning_lambda` — λ of PPI++ (Angelopoulos, Duchi & Zrnic 2023, eq. (5)).
- :func:`calibrate_scores` — a raw score turned into P(same) (or the expected rating) by a
  model fitted on the labelled pairs with cross-fitting.
- :func:`ppi_group_stopping` — the sequential stopping rule with the PPI interval.

Everything is numpy over arrays; nothing here reads files or the database.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
import pandas as pd
from scipy.stats import norm

from data_schemas import columns as C
from data_schemas.options import AUDIT_METHODS, CONFIDENCE, TARGET_CI, AuditMethod, StrOptions
from data_schemas.pairs import group_columns
from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import fmt_decimal, fmt_int, t

from ._frame import group_index
from .audit import audit_labels

Interval = Literal["score", "wald"]
INTERVALS = StrOptions.of(
    Interval,
    "interval",
    {"score": "the score (Wilson-type) form, for 0/1 outcomes", "wald": "the Wald interval"},
)
#: Below this λ the predictions carried (almost) nothing: the interval is the classical one.
NO_GAIN_LAMBDA = 0.05
#: Level of the interval the sequential stopping check uses (see :func:`ppi_group_stopping`).
STOP_CONFIDENCE = 0.975


def _z(confidence: float) -> float:
    CONFIDENCE.check(confidence)
    return float(norm.ppf(0.5 + confidence / 2))


@dataclass(frozen=True)
class PPIEstimate:
    """A PPI++ estimate and interval next to the classical one from the same labelled pairs.

    ``n`` labelled pairs, ``n_unlabelled`` pairs with a prediction only; ``lam`` the power
    tuning λ (0: the predictions were not used); ``effective_n`` how many labelled pairs the
    classical interval would need for the same variance (``n`` when the predictions add
    nothing); ``note`` says so in words."""

    estimate: float
    low: float
    high: float
    classical_estimate: float
    classical_low: float
    classical_high: float
    lam: float
    n: int
    n_unlabelled: int
    effective_n: float
    confidence: float
    interval: str
    note: str

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    @property
    def classical_half_width(self) -> float:
        return (self.classical_high - self.classical_low) / 2

    def to_dict(self) -> dict:
        out = asdict(self)
        out["half_width"] = self.half_width
        out["classical_half_width"] = self.classical_half_width
        return out


def power_tuning_lambda(n, sy, sf, syf, sff, n_u, sf_u, sff_u) -> np.ndarray:
    """The power-tuning λ of PPI++ for a mean, from sums, clipped to [0, 1].

    Notes
    -----
    .. math:: \\hat\\lambda = \\frac{\\widehat{\\mathrm{Cov}}_n(Y, f)}
              {(1 + n/n_u)\\,\\widehat{\\mathrm{Var}}_{n+n_u}(f)}

    with the covariance over the *n* labelled pairs (divisor *n*) and the variance of the
    predictions over all *n + n_u* pairs (divisor *n + n_u - 1*), as ``ppi_py`` computes it. A
    prediction that does not vary gives λ = 0.
    """
    n, sy, sf, syf, sff, n_u, sf_u, sff_u = (
        np.asarray(a, dtype=np.float64) for a in (n, sy, sf, syf, sff, n_u, sf_u, sff_u)
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = syf / n - (sy / n) * (sf / n)
        tot = n + n_u
        var_all = (sff + sff_u - (sf + sf_u) ** 2 / tot) / (tot - 1)
        lam = cov / ((1 + n / n_u) * var_all)
    lam = np.where((var_all > 1e-15) & (n_u > 0) & (n > 1), lam, 0.0)
    return np.clip(np.nan_to_num(lam, nan=0.0), 0.0, 1.0)


def ppi_from_sums(
    n,
    sy,
    syy,
    sf,
    syf,
    sff,
    n_u,
    sf_u,
    sff_u,
    *,
    confidence: float = 0.95,
    lam=None,
    interval: Interval = "wald",
    bounds: tuple[float, float] = (0.0, 1.0),
    floor: bool = False,
) -> dict[str, np.ndarray]:
    """PPI++ and classical estimates and intervals from sufficient statistics (arrays of any
    common shape: one entry per audit, group or step of a sequential audit).

    Parameters
    ----------
    n, sy, syy, sf, syf, sff : array
        Labelled pairs: count, sums of Y, Y², f, Y·f, f².
    n_u, sf_u, sff_u : array
        Unlabelled pairs: count, sums of f and f².
    lam : array or None
        λ; ``None``: :func:`power_tuning_lambda`.
    interval : {"wald", "score"}
        ``wald``: estimate ± z·SE (``ppi_py.ppi_mean_ci``; classical: ``classical_mean_ci``).
        ``score``: for 0/1 outcomes, the set of θ whose null variance covers the estimate
        (λ = 0 gives the Wilson interval).
    bounds : (low, high)
        The range of the mean; intervals are clipped to it (the score form searches it).
    floor : bool
        ``score`` only, the sequential rule's form (:func:`ppi_group_stopping`): the null
        variance V(θ) of the PPI++ score interval never falls below its value at the
        estimate (see :func:`_score_interval`). The classical (λ = 0) interval is unchanged.
        Off (the default) the interval is the plain PPI++ score form.

    Returns
    -------
    dict of arrays
        ``estimate``, ``low``, ``high``, ``classical_estimate``, ``classical_low``,
        ``classical_high``, ``lam``, ``var_ppi``, ``var_classical`` (variances of the two
        estimators) and ``effective_n`` (``n · var_classical / var_ppi``: below ``n`` when the
        PPI variance is the larger; never above ``n + n_u``, every pair labelled).
    """
    n, sy, syy, sf, syf, sff, n_u, sf_u, sff_u = np.broadcast_arrays(
        *(np.asarray(a, dtype=np.float64) for a in (n, sy, syy, sf, syf, sff, n_u, sf_u, sff_u))
    )
    INTERVALS.check(interval)
    z = _z(confidence)
    lam_a = (
        power_tuning_lambda(n, sy, sf, syf, sff, n_u, sf_u, sff_u)
        if lam is None
        else np.broadcast_to(np.asarray(lam, dtype=np.float64), n.shape)
    )
    lo_b, hi_b = bounds
    with np.errstate(invalid="ignore", divide="ignore"):
        ybar = sy / n
        fbar = sf / n
        fbar_u = np.where(n_u > 0, sf_u / np.maximum(n_u, 1), 0.0)
        var_y = np.maximum(syy / n - ybar**2, 0.0)
        var_f = np.maximum(sff / n - fbar**2, 0.0)
        cov = syf / n - ybar * fbar
        var_fu = np.where(n_u > 0, np.maximum(sff_u / np.maximum(n_u, 1) - fbar_u**2, 0.0), 0.0)
        lam_a = np.where(n_u > 0, lam_a, 0.0)
        est = lam_a * fbar_u + ybar - lam_a * fbar
        imputed = np.where(n_u > 0, lam_a**2 * var_fu / np.maximum(n_u, 1), 0.0)
        rect = np.maximum(var_y - 2 * lam_a * cov + lam_a**2 * var_f, 0.0) / n
        var_ppi = rect + imputed
        var_cl = var_y / n
        eff = np.where(var_ppi > 0, n * var_cl / var_ppi, n)
    # Never more labels than there are pairs: the predictions cannot be worth more than
    # labelling every pair of the group.
    eff = np.where(np.isfinite(eff), np.clip(eff, 0.0, n + n_u), n)
    if interval == "wald":
        low, high = est - z * np.sqrt(var_ppi), est + z * np.sqrt(var_ppi)
        cl_low, cl_high = ybar - z * np.sqrt(var_cl), ybar + z * np.sqrt(var_cl)
    elif interval == "score":
        sd_y = np.sqrt(var_y)
        sd_f = np.sqrt(var_f)
        with np.errstate(invalid="ignore", divide="ignore"):
            rho = np.where((sd_y > 0) & (sd_f > 0), cov / (sd_y * sd_f), 0.0)
        rho = np.clip(np.nan_to_num(rho), -1.0, 1.0)
        low, high = _score_interval(
            est, n, lam_a * rho * sd_f, lam_a * sd_f, rho, imputed, z, floor=floor
        )
        zero = np.zeros_like(est)
        cl_low, cl_high = _score_interval(ybar, n, zero, zero, zero, zero, z)
    else:
        raise AssertionError(interval)  # checked above
    empty = n < 1
    out = {
        "estimate": np.where(empty, np.nan, est),
        "low": np.where(empty, lo_b, np.clip(low, lo_b, hi_b)),
        "high": np.where(empty, hi_b, np.clip(high, lo_b, hi_b)),
        "classical_estimate": np.where(empty, np.nan, ybar),
        "classical_low": np.where(empty, lo_b, np.clip(cl_low, lo_b, hi_b)),
        "classical_high": np.where(empty, hi_b, np.clip(cl_high, lo_b, hi_b)),
        "lam": lam_a,
        "var_ppi": var_ppi,
        "var_classical": var_cl,
        "effective_n": np.where(empty, 0.0, eff),
    }
    return out


def _score_interval(
    est, n, shift, lam_sd_f, rho, imputed, z, iterations: int = 34, floor: bool = False
):
    """The θ in [0, 1] with (est - θ)² ≤ z² (V(θ)/n + imputed), where
    V(θ) = (√(θ(1-θ)) - λρ s_f)² + λ² s_f² (1 - ρ²) is the variance of Y - λf when the
    mean of the 0/1 outcome Y is θ (its covariance with f kept at the observed correlation).
    Bisection on each side of the estimate, vectorised over the batch.

    *floor*: V(θ) is replaced by max(V(θ), V(est)). The form above lets the whole
    Bernoulli variance θ(1 - θ) move with θ; with a good prediction most of it sits on the
    pairs the model is unsure of, whose variance moves the other way (an accuracy of 0.87
    made of sure pairs at 0.99 and unsure ones at 0.4: raising θ raises the unsure pairs'
    p(1 - p)). Towards 1 the plain form then shrinks the interval the data do not shrink, and
    a rule checked after every label stops when the unsure pairs so far happened to be
    wrong, with an interval below the truth. The floor keeps the score form's widening
    towards 1/2 and never narrows below the Wald interval."""
    est = np.clip(np.nan_to_num(est, nan=0.5), 0.0, 1.0)
    n = np.maximum(n, 1.0)
    z2 = z * z
    resid = lam_sd_f**2 * (1 - rho**2)
    v_est = (np.sqrt(est * (1 - est)) - shift) ** 2 + resid

    def g(theta):
        v = (np.sqrt(theta * (1 - theta)) - shift) ** 2 + resid
        if floor:
            v = np.maximum(v, v_est)
        return (est - theta) ** 2 - z2 * (v / n + imputed)

    def side(edge):
        a = np.full_like(est, edge)  # outside (g > 0) unless the edge itself is inside
        b = est.copy()  # inside: g(est) <= 0
        inside_edge = g(a) <= 0
        for _ in range(iterations):
            m = (a + b) / 2
            gm = g(m)
            a = np.where(gm > 0, m, a)
            b = np.where(gm > 0, b, m)
        return np.where(inside_edge, edge, b)

    return side(0.0), side(1.0)


def ppi_mean_interval(
    y,
    yhat,
    yhat_unlabelled,
    *,
    confidence: float = 0.95,
    lam: float | None = None,
    interval: Interval = "wald",
    bounds: tuple[float, float] = (0.0, 1.0),
    floor: bool = False,
) -> PPIEstimate:
    """The PPI++ interval of a mean from *n* labelled outcomes, their predictions and the
    predictions on *N* unlabelled items, next to the classical interval of the labelled
    outcomes alone.

    Parameters
    ----------
    y : array (n,)
        Labelled outcomes: 1/0 (the automatic label was right / the pair is the same) or a
        rating (the mean of the doctors' ratings for a 0–3 scale).
    yhat : array (n,)
        Predictions of *y* on the labelled items (cross-fitted: see :func:`calibrate_scores`).
    yhat_unlabelled : array (N,)
        Predictions on the items no doctor labelled.
    confidence : float
        Level of both intervals (default 95 %).
    lam : float, optional
        λ; ``None`` (default): power-tuned (:func:`power_tuning_lambda`); 1 is plain PPI and
        0 the classical interval.
    interval : {"wald", "score"}
        See :func:`ppi_from_sums`. The audit uses ``score`` for 0/1 outcomes (it is the
        Wilson interval when λ = 0, and keeps its coverage near 0 and 1 and at small *n*).
    bounds : (low, high)
        The range of the mean (0–1 for proportions, 0–3 for a relatedness scale).
    floor : bool
        The sequential rule's score form (see :func:`ppi_from_sums`); off by default, so the
        fixed-*n* interval is PPI++'s own (``ppi_py``'s for ``wald``).

    Returns
    -------
    PPIEstimate

    Notes
    -----
    PPI++ (Angelopoulos, Duchi & Zrnic 2023, the mean case):

    .. math:: \\hat\\theta_\\lambda = \\lambda\\,\\bar f_N + \\frac1n\\sum_{i=1}^n
              (Y_i - \\lambda f_i), \\qquad
              \\widehat{\\mathrm{Var}} = \\frac{\\lambda^2 \\hat\\sigma^2_{f,N}}{N}
              + \\frac{\\hat\\sigma^2_{Y-\\lambda f,\\,n}}{n}

    and the Wald interval :math:`\\hat\\theta_\\lambda \\pm z_{1-\\alpha/2}
    \\sqrt{\\widehat{\\mathrm{Var}}}` (λ = 0: the classical
    :math:`\\bar Y \\pm z\\,\\hat\\sigma_Y/\\sqrt n`). The effective number of labels is
    :math:`n\\,\\hat\\sigma^2_Y / (n\\,\\widehat{\\mathrm{Var}})`: how many labelled items the
    classical interval would need for the same width. The interval stays valid whatever the
    predictions are worth; when they are worth nothing λ → 0 and it is the classical one.

    References
    ----------
    Angelopoulos, A. N., Bates, S., Fannjiang, C., Jordan, M. I., & Zrnic, T. (2023).
    Prediction-powered inference. *Science* 382(6671), 669–674.
    https://doi.org/10.1126/science.adi6000

    Angelopoulos, A. N., Duchi, J. C., & Zrnic, T. (2023). PPI++: Efficient
    prediction-powered inference. arXiv:2311.01453. https://doi.org/10.48550/arXiv.2311.01453

    Examples
    --------
    Predictions that equal the labels, on 20 labelled and 80 unlabelled items: the 20 labels
    are worth 100, as many as there are items (``ppi_py.ppi_mean_ci(y, y, f_u, alpha=0.05)``
    gives the same interval).

    >>> import numpy as np
    >>> y = np.array([1.0] * 16 + [0.0] * 4)
    >>> f_u = np.array([1.0] * 64 + [0.0] * 16)
    >>> e = ppi_mean_interval(y, y, f_u)
    >>> round(e.lam, 2), round(e.estimate, 2), round(e.effective_n, 1)
    (0.79, 0.8, 100.0)
    """
    y = np.asarray(y, dtype=np.float64).ravel()
    f = np.asarray(yhat, dtype=np.float64).ravel()
    fu = np.asarray(yhat_unlabelled, dtype=np.float64).ravel()
    if len(y) != len(f):
        raise UsageProblem(
            f"{len(y)} labelled outcomes but {len(f)} predictions for them: give one each"
        )
    for name, a in (("outcomes", y), ("predictions", f), ("unlabelled predictions", fu)):
        if np.isnan(a).any():
            raise UsageProblem(f"the {name} contain missing values")
    r = ppi_from_sums(
        len(y),
        y.sum(),
        (y * y).sum(),
        f.sum(),
        (y * f).sum(),
        (f * f).sum(),
        len(fu),
        fu.sum(),
        (fu * fu).sum(),
        confidence=confidence,
        lam=lam,
        interval=interval,
        bounds=bounds,
        floor=floor,
    )
    return _estimate(r, len(y), len(fu), confidence, interval)


def _estimate(r: dict, n: int, n_u: int, confidence: float, interval: str) -> PPIEstimate:
    v = {k: float(np.asarray(a)) for k, a in r.items()}
    return PPIEstimate(
        estimate=v["estimate"],
        low=v["low"],
        high=v["high"],
        classical_estimate=v["classical_estimate"],
        classical_low=v["classical_low"],
        classical_high=v["classical_high"],
        lam=v["lam"],
        n=int(n),
        n_unlabelled=int(n_u),
        effective_n=v["effective_n"],
        confidence=confidence,
        interval=interval,
        note=gain_note(v["lam"], n, v["effective_n"], n_u),
    )


def gain_note(lam: float, n: int, effective_n: float, n_unlabelled: int) -> str:
    """One sentence on what the predictions were worth; it never claims a gain that the
    variances do not show.

    >>> gain_note(0.0, 50, 50.0, 400)
    'no gain: the predictions carry no usable information here (λ = 0.00), so the interval is the classical one'
    >>> gain_note(0.7, 50, 80.0, 400)
    'the predictions were worth 30 extra labelled pairs (λ = 0.70; 80 effective from 50)'
    """
    if n_unlabelled == 0:
        return t("no gain: every pair is labelled, so the interval is the classical one")
    if n < 2:
        return t("no gain: too few labelled pairs to weigh the predictions")
    extra = effective_n - n
    if lam < NO_GAIN_LAMBDA or extra < 0.5:
        return t(
            "no gain: the predictions carry no usable information here (λ = {lam}), so the "
            "interval is the classical one",
            lam=fmt_decimal(lam),
        )
    return t(
        "the predictions were worth {extra} extra labelled pairs (λ = {lam}; {effective} "
        "effective from {n})",
        extra=fmt_int(extra),
        lam=fmt_decimal(lam),
        effective=fmt_int(effective_n),
        n=fmt_int(n),
    )


# ---- calibration --------------------------------------------------------------------------------
def calibrate_scores(
    scores,
    truth,
    *,
    kind: Literal["probability", "mean"] = "probability",
    folds: int = 5,
    seed: int = 0,
) -> np.ndarray:
    """Turn a raw score per item into a prediction of the doctors' verdict, fitted on the
    labelled items with cross-fitting.

    Parameters
    ----------
    scores : array (M,)
        Any score per item (cosine similarity, char-n-gram overlap, another builder's 0/1
        label); larger should mean "more similar", but the fit finds the direction.
    truth : array (M,)
        The doctors' verdict where there is one (1 same / 0 not same, or the mean rating for
        ``kind="mean"``), NaN elsewhere.
    kind : {"probability", "mean"}
        ``probability``: logistic regression of the verdict on the score, giving P(same);
        ``mean``: linear regression giving the expected rating.
    folds : int
        Cross-fitting folds (at most the number of labelled items).

    Returns
    -------
    array (M,)
        For a labelled item, the prediction of the model fitted on the *other* folds; for an
        unlabelled item, the mean of the fold models' predictions.

    Notes
    -----
    A model fitted on the same labels it then predicts would make those predictions look
    better than they are on the unlabelled items, and the PPI rectifier would be too small.
    Cross-fitting (each labelled item predicted by a model that never saw it; the
    unlabelled ones by the average of the fold models) keeps the rectifier honest: the
    cross-prediction-powered inference of Zrnic & Candès (2024). With fewer than two labelled
    items of each class (or two distinct ratings) the prediction is the constant labelled
    mean, which makes λ = 0.

    References
    ----------
    Zrnic, T., & Candès, E. J. (2024). Cross-prediction-powered inference. *PNAS* 121(15),
    e2322083121. https://doi.org/10.1073/pnas.2322083121

    Examples
    --------
    >>> import numpy as np
    >>> s = np.linspace(0, 1, 40)
    >>> t = np.where(np.arange(40) % 2 == 0, (s > 0.5).astype(float), np.nan)
    >>> p = calibrate_scores(s, t, folds=4)
    >>> bool(p[39] > 0.5 > p[0])
    True
    """
    # scikit-learn: ~0.3 s, loaded only when scores are calibrated (CLI start-up)
    from sklearn.linear_model import LinearRegression, LogisticRegression
    from sklearn.model_selection import KFold

    x = np.asarray(scores, dtype=np.float64).ravel()
    t = np.asarray(truth, dtype=np.float64).ravel()
    if len(x) != len(t):
        raise UsageProblem(f"{len(x)} scores but {len(t)} verdicts: give one per item")
    if np.isnan(x).any():
        raise UsageProblem("the scores contain missing values")
    lab = np.flatnonzero(~np.isnan(t))
    unl = np.flatnonzero(np.isnan(t))
    out = np.full(len(x), np.nan)
    if len(lab) == 0:
        return np.full(len(x), 0.5 if kind == "probability" else np.nan)
    mean = float(t[lab].mean())

    def usable(idx: np.ndarray) -> bool:
        if kind == "probability":
            return len(idx) >= 2 and 0 < t[idx].sum() < len(idx) and np.ptp(x[idx]) > 0
        return len(idx) >= 2 and np.ptp(t[idx]) > 0 and np.ptp(x[idx]) > 0

    def fit_predict(train: np.ndarray, test: np.ndarray) -> np.ndarray:
        if not usable(train):
            return np.full(len(test), float(t[train].mean()) if len(train) else mean)
        xs = x[train, None]
        if kind == "probability":
            m = LogisticRegression(C=1e4).fit(xs, t[train].astype(int))
            return m.predict_proba(x[test, None])[:, 1]
        lm = LinearRegression().fit(xs, t[train])
        return lm.predict(x[test, None])

    k = min(int(folds), len(lab))
    if k < 2 or not usable(lab):
        out[:] = mean
        return out
    unl_preds = np.zeros(len(unl))
    for train_i, test_i in KFold(k, shuffle=True, random_state=seed).split(lab):
        train, test = lab[train_i], lab[test_i]
        out[test] = fit_predict(train, test)
        if len(unl):
            unl_preds += fit_predict(train, unl) / k
    out[unl] = unl_preds
    return out


# ---- sequential rule ----------------------------------------------------------------------------
@dataclass(frozen=True)
class PPIStopping:
    """One group's PPI stopping decision (see :func:`ppi_group_stopping`)."""

    estimate: PPIEstimate
    check_half_width: float
    stop: bool
    reason: str

    def to_dict(self) -> dict:
        return {
            **self.estimate.to_dict(),
            "check_half_width": self.check_half_width,
            "stop": self.stop,
            "reason": self.reason,
        }


def ppi_group_stopping(
    y,
    yhat,
    yhat_unlabelled,
    *,
    target: float = 0.05,
    positives: int = 0,
    negatives: int = 0,
    min_positives: int = 10,
    min_negatives: int = 10,
    confidence: float = 0.95,
    stop_confidence: float = STOP_CONFIDENCE,
) -> PPIStopping:
    """The sequential audit's stopping rule with the PPI++ interval: a group stops when it
    has the minimum of positives and negatives and the half-width of its accuracy's PPI++
    score interval at *stop_confidence* is at most *target*; the interval reported is at
    *confidence*.

    Notes
    -----
    The rule stops on the *width* of the interval, never on where the estimate lies: a
    fixed-width sequential interval (Chow & Robbins 1965), whose coverage tends to the
    nominal level as the target shrinks. Checked after every rating at a finite target the
    coverage falls a little below it (Frey 2010), so the check uses the 97.5 % interval while
    the figure shown is the 95 % one, as the classical rule does. Both are the score form
    with its variance floor (``floor=True``, see :func:`_score_interval`): the plain score
    form covered 92.6 % with a strong score (benchmarks/bench_active.py, binary, 5,000 pairs,
    4,000 studies), the floored one ≥ 94.6 % in every binary setting. The fixed-*n* interval
    of :func:`ppi_mean_interval` is unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> y = np.array([1.0] * 190 + [0.0] * 10)
    >>> f_u = np.array([1.0] * 760 + [0.0] * 40)
    >>> s = ppi_group_stopping(y, y, f_u, positives=100, negatives=100)
    >>> s.stop, round(s.estimate.estimate, 3)
    (True, 0.95)
    """
    e = ppi_mean_interval(
        y, yhat, yhat_unlabelled, confidence=confidence, interval="score", floor=True
    )
    check = ppi_mean_interval(
        y,
        yhat,
        yhat_unlabelled,
        confidence=stop_confidence,
        interval="score",
        lam=e.lam,
        floor=True,
    )
    hw = check.half_width
    enough = positives >= min_positives and negatives >= min_negatives
    narrow = e.n > 0 and hw <= target + 1e-12
    if not enough:
        reason = f"needs {min_positives} positives and {min_negatives} negatives first"
    elif narrow:
        reason = f"accuracy interval within ±{target:g} ({stop_confidence:.1%} PPI++)"
    else:
        reason = f"accuracy interval wider than ±{target:g} ({stop_confidence:.1%} PPI++)"
    return PPIStopping(e, hw, bool(enough and narrow), reason)


def labels_needed(
    accuracy: float,
    correlation: float,
    *,
    target: float,
    pairs: int,
    confidence: float = STOP_CONFIDENCE,
) -> tuple[int, int]:
    """Labelled pairs (of a group of *pairs*) needed for a half-width of *target*:
    classically and with a predictor of the given correlation with the outcome (PPI++ at the
    optimal λ, the predictor scoring every pair of the group). Both are capped at *pairs*.

    Notes
    -----
    Classical: :math:`n = z^2 p(1-p)/h^2`. With predictions on the *N = pairs - n* others and the
    optimal λ, the variance is :math:`\\sigma^2_Y (1 - \\rho^2 \\frac{N}{n+N}) / n`
    (the PPI++ variance at its minimising λ = Cov(Y, f) / ((1 + n/N) Var f); Angelopoulos,
    Duchi & Zrnic 2023), solved for *n* by
    bisection. Both use the Wald variance; the plan's pilot figures feed them.

    Examples
    --------
    >>> labels_needed(0.8, 0.0, target=0.05, pairs=5000, confidence=0.95)
    (246, 246)
    >>> labels_needed(0.8, 0.7, target=0.05, pairs=5000, confidence=0.95)[1] < 150
    True
    """
    TARGET_CI.check(target)
    p = min(max(float(accuracy), 0.0), 1.0)
    rho2 = min(max(float(correlation), 0.0), 1.0) ** 2
    z = _z(confidence)
    var = max(p * (1 - p), 1e-6)
    m = max(int(pairs), 1)
    classical = min(math.ceil(z * z * var / target**2 - 1e-9), m)

    def hw(n: int) -> float:
        frac = max(m - n, 0) / m
        return z * math.sqrt(var * (1 - rho2 * frac) / n)

    lo, hi = 1, max(classical, 1)
    while lo < hi:
        mid = (lo + hi) // 2
        if hw(mid) <= target + 1e-12:
            hi = mid
        else:
            lo = mid + 1
    return classical, lo


# ---- the audit ------------------------------------------------------------------------------------
PPI_COLUMNS = (
    "estimate",
    "low",
    "high",
    "classical_estimate",
    "classical_low",
    "classical_high",
    "lam",
    "n",
    "n_unlabelled",
    "effective_n",
    "note",
)
#: Columns added per metric: extra labelled pairs owed to stratifying by the automatic label
#: and to the score beyond it (see :func:`split_gain`).
GAIN_COLUMNS = ("label_gain", "score_gain")


def split_gain(e: PPIEstimate, e_label: PPIEstimate | None) -> tuple[float, float, str]:
    """The extra labelled pairs of *e* split into what the automatic label alone gives
    (*e_label*: the same PPI++ estimate with a constant score, whose prediction of "the label
    is right" then depends on the label only — a stratification by it) and what the score adds
    beyond it; and a note that credits each with its own share.

    A pure-noise score calibrates to a constant, so its whole gain is the label's: the note
    says so rather than crediting the score.

    >>> e = PPIEstimate(0.8, 0.7, 0.9, 0.8, 0.7, 0.9, 0.3, 50, 400, 60.0, 0.95, "score", "")
    >>> split_gain(e, e)[:2]
    (10.0, 0.0)
    """
    total = max(e.effective_n - e.n, 0.0)
    if e_label is None:
        return 0.0, total, e.note
    label = min(max(e_label.effective_n - e.n, 0.0), total)
    score = total - label
    if e.n_unlabelled == 0 or e.n < 2 or total < 0.5:
        return label, score, e.note
    lam = t(
        "λ = {lam}; {effective} effective from {n}",
        lam=fmt_decimal(e.lam),
        effective=fmt_int(e.effective_n),
        n=fmt_int(e.n),
    )
    if score < 0.5:
        return (
            label,
            score,
            t(
                "no gain from the score: the {label} extra labelled pairs come from "
                "stratifying by the automatic label ({lam})",
                label=fmt_int(label),
                lam=lam,
            ),
        )
    if label < 0.5:
        return (
            label,
            score,
            t(
                "the score was worth {score} extra labelled pairs ({lam})",
                score=fmt_int(score),
                lam=lam,
            ),
        )
    return (
        label,
        score,
        t(
            "stratifying by the automatic label was worth {label} extra labelled pairs and "
            "the score {score} more ({lam})",
            label=fmt_int(label),
            score=fmt_int(score),
            lam=lam,
        ),
    )


@dataclass
class PPIAudit:
    """A prediction-powered audit: ``kind`` is ``labels`` (accuracy and precision of the
    automatic labels against the doctors' majority) or ``mean_rating`` (the doctors' mean
    rating per group, graded scales); ``by_group`` has the group columns then, per metric,
    ``<metric>_<column>`` for each of :data:`PPI_COLUMNS` and :data:`GAIN_COLUMNS`;
    ``overall`` the same for all pairs; ``method`` which interval is *the* interval (``<metric>_ci``)."""

    kind: str
    method: str
    by: list[str]
    metrics: tuple[str, ...]
    overall: dict
    by_group: pd.DataFrame
    confidence: float
    reasons: dict[str, str]

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "method": self.method,
            "confidence": self.confidence,
            "overall": dict(self.overall),
            "by_group": [dict(r) for r in self.by_group.to_dict(orient="records")],
        }


def _metric_row(
    prefix: str, e: PPIEstimate, method: str, e_label: PPIEstimate | None = None
) -> dict:
    d = {f"{prefix}_{k}": getattr(e, k) for k in PPI_COLUMNS}
    label_gain, score_gain, note = split_gain(e, e_label)
    d[f"{prefix}_label_gain"] = label_gain
    d[f"{prefix}_score_gain"] = score_gain
    d[f"{prefix}_note"] = note
    lo, hi = (e.low, e.high) if method == "ppi" else (e.classical_low, e.classical_high)
    d[f"{prefix}_ci"] = [lo, hi]
    if method == "classical":
        d[f"{prefix}_estimate"] = e.classical_estimate
    return d


def _target_check(name, yl, fl, fu, e, target, interval, bounds, method) -> dict:
    check = ppi_mean_interval(
        yl,
        fl,
        fu,
        lam=e.lam if method == "ppi" else 0.0,
        interval=interval,
        bounds=bounds,
        confidence=STOP_CONFIDENCE,
    )
    hw = check.half_width if method == "ppi" else check.classical_half_width
    within = e.n > 0 and hw <= target + 1e-12
    if e.n > 1 and bounds == (0.0, 1.0):
        p = e.classical_estimate
        need_cl = math.ceil(_z(STOP_CONFIDENCE) ** 2 * max(p * (1 - p), 1e-6) / target**2)
    elif e.n > 1:
        need_cl = math.ceil(
            _z(STOP_CONFIDENCE) ** 2
            * (e.classical_half_width / _z(e.confidence)) ** 2
            * e.n
            / target**2
        )
    else:
        need_cl = 0
    ratio = e.n / e.effective_n if method == "ppi" and e.effective_n > 0 else 1.0
    more = 0 if within else max(math.ceil(need_cl * min(ratio, 1.0)) - e.n, 1)
    return {f"{name}_within_target": bool(within), f"{name}_more_needed": int(more)}


def ppi_audit(
    pairs: pd.DataFrame,
    ratings: pd.DataFrame,
    scale,
    scores,
    *,
    by: list[str] | None = None,
    rule: str = "strict",
    method: AuditMethod = "ppi",
    confidence: float = 0.95,
    target: float | None = None,
    folds: int = 5,
    seed: int = 0,
) -> PPIAudit:
    """Prediction-powered audit per group: the doctors' verdicts on the rated pairs plus a
    prediction (any score, or another builder's 0/1 label) on every pair.

    Parameters
    ----------
    pairs : DataFrame
        Validated pairs (``pair_id``, group columns; ``auto_label`` for a binary scale).
    ratings : DataFrame
        Ratings frame (``pair_id``, ``annotator``, ``value``).
    scale : Scale
        A binary scale (positive/negative values): accuracy and precision of ``auto_label``
        against the majority. Any numeric scale without them: the mean rating.
    scores : array (len(pairs),)
        One score per pair, in the order of *pairs* (no missing values).
    by, rule :
        Group columns and majority rule, as :func:`~medsim_annot.stats.audit_labels`.
    method : {"ppi", "classical"}
        Which interval is reported as ``<metric>_ci``; both are always computed.
    confidence, folds, seed :
        Interval level; cross-fitting folds and seed of the calibration.
    target : float, optional
        Target half-width of the sequential audit (``--target-ci``): adds, for the first
        metric, ``<metric>_within_target`` (the interval of *method* at
        :data:`STOP_CONFIDENCE` is within ±target, the check of :func:`ppi_group_stopping`)
        and ``<metric>_more_needed`` (labelled pairs still needed: the classical sample size
        at the current estimate, scaled by ``n / effective_n`` for PPI, minus ``n``).

    Returns
    -------
    PPIAudit

    Notes
    -----
    The score is calibrated once over all labelled pairs (:func:`calibrate_scores`,
    cross-fitted) into P(same) (binary) or the expected mean rating (graded). Labelled pairs
    are those with a verdict (strict majority, or for a graded scale at least one decisive
    rating); unlabelled pairs are those nobody rated; rated pairs without a verdict belong to
    neither, as in the classical audit. Accuracy: :math:`Y = 1[\\text{auto} = \\text{majority}]`,
    :math:`f = p` when the automatic label is 1 and :math:`1-p` when it is 0; precision: the
    pairs labelled 1, :math:`Y = 1[\\text{majority} = \\text{same}]`, :math:`f = p`; both with
    the score form of :func:`ppi_mean_interval` (the Wilson interval when λ = 0). Mean
    rating: the Wald form, bounded by the scale's range. The interval assumes the rated pairs
    of a group are a random sample of it (as group-interleaved random serving gives); a
    sample stratified by automatic label is flagged in ``reasons``.
    """
    AUDIT_METHODS.check(method)
    x = np.asarray(scores, dtype=np.float64)
    if len(x) != len(pairs):
        raise UsageProblem(f"{len(x)} scores for {len(pairs)} pairs: give one per pair")
    by = list(group_columns(pairs)) if by is None else list(by)
    group, keys = group_index(pairs, by)
    reasons: dict[str, str] = {}
    binary = scale.positive is not None and scale.negative is not None
    specs: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, Interval, tuple[float, float]]]
    strata: dict[str, np.ndarray]
    if binary:
        base = audit_labels(pairs, ratings, scale, by=by, rule=rule)  # type: ignore[arg-type]
        items = base.items
        truth = items["truth"].to_numpy()
        label = items["auto_label"].to_numpy()
        rated = items["n_ratings"].to_numpy() > 0
        p = calibrate_scores(
            x, np.where(rated, truth, np.nan), kind="probability", folds=folds, seed=seed
        )
        correct = np.where(np.isnan(truth) | np.isnan(label), np.nan, (truth == label) * 1.0)
        f_acc = np.where(label == 1, p, 1 - p)
        # The same with a constant score: "the label is right" predicted from the label
        # alone (a stratification by it), to tell its gain from the score's.
        p0 = calibrate_scores(
            np.zeros(len(x)), np.where(rated, truth, np.nan), kind="probability", folds=folds
        )
        strata = {"accuracy": np.where(label == 1, p0, 1 - p0)}
        specs = {
            "accuracy": (correct, f_acc, ~np.isnan(label), "score", (0.0, 1.0)),
            "precision": (truth, p, label == 1, "score", (0.0, 1.0)),
        }
        kind = "labels"
    else:
        codes = [o.code for o in scale.options if o.code is not None]
        if not codes:
            raise UsageProblem(f"the {scale.name} scale has no numeric values to average")
        r = ratings.dropna(subset=[C.VALUE])
        ids = pairs[C.PAIR_ID].astype(str)
        mean = r.groupby(r[C.PAIR_ID].astype(str))[C.VALUE].mean().reindex(ids).to_numpy()
        cast = ratings.groupby(ratings[C.PAIR_ID].astype(str)).size().reindex(ids).fillna(0)
        rated = cast.to_numpy() > 0
        pred = calibrate_scores(
            x, np.where(rated, mean, np.nan), kind="mean", folds=folds, seed=seed
        )
        lo_b, hi_b = float(min(codes)), float(max(codes))
        pred = np.clip(pred, lo_b, hi_b)
        specs = {"mean_rating": (mean, pred, np.ones(len(x), bool), "wald", (lo_b, hi_b))}
        strata = {}
        kind = "mean_rating"
    g = len(keys)
    rows: list[dict] = [{} for _ in range(g)]
    overall: dict = {}
    for name, (y, f, member, interval, bounds) in specs.items():
        lab = member & rated & ~np.isnan(y)
        unl = member & ~rated
        for gi in range(g + 1):
            sel = (group == gi) if gi < g else np.ones(len(x), bool)
            yl, fl, fu = y[lab & sel], f[lab & sel], f[unl & sel]
            e = ppi_mean_interval(
                yl, fl, fu, interval=interval, bounds=bounds, confidence=confidence
            )
            e_label = None
            if name in strata:
                f0 = strata[name]
                e_label = ppi_mean_interval(
                    yl, f0[lab & sel], f0[unl & sel], interval=interval, bounds=bounds
                )
            row = rows[gi] if gi < g else overall
            row.update(_metric_row(name, e, method, e_label))
            if target is not None and name == next(iter(specs)):
                row.update(_target_check(name, yl, fl, fu, e, target, interval, bounds, method))
        if binary and name == "accuracy":
            share_lab = float(np.mean(label[lab] == 1)) if lab.any() else np.nan
            share_unl = float(np.mean(label[unl] == 1)) if unl.any() else np.nan
            if abs(share_lab - share_unl) > 0.1:
                reasons["sample"] = (
                    f"the rated pairs are {share_lab:.0%} labelled positive, the unrated ones "
                    f"{share_unl:.0%}: a sample stratified by automatic label is not a random "
                    "sample of the group, so the PPI and classical intervals describe the "
                    "rated mix, not the group"
                )
    frame = pd.DataFrame(rows)
    by_group = pd.concat([keys.reset_index(drop=True), frame], axis=1) if by else frame.iloc[0:0]
    return PPIAudit(kind, method, by, tuple(specs), overall, by_group, confidence, reasons)


def pilot_correlation(truth, label, scores, *, folds: int = 5, seed: int = 0) -> dict:
    """From a pilot: the accuracy of the automatic labels and the correlation of the
    cross-fitted prediction of "the label is right" with whether it was, over the pairs with
    a verdict and a label — what :func:`labels_needed` needs to plan a study with
    predictions.

    Parameters
    ----------
    truth, label, scores : arrays (M,)
        The majority verdict (1 same, 0 not same, NaN none), the automatic label (1/0/NaN)
        and the score of every pilot pair.

    Returns
    -------
    dict
        ``n`` (pairs used), ``accuracy`` and ``correlation`` (0 when undefined: no gain is
        planned from a predictor the pilot cannot vouch for).

    Examples
    --------
    >>> import numpy as np
    >>> t = np.array([1, 0] * 40, dtype=float)
    >>> out = pilot_correlation(t, np.ones(80), t + np.linspace(0, 0.2, 80))
    >>> out["n"], out["accuracy"], out["correlation"] > 0.9
    (80, 0.5, True)
    """
    t = np.asarray(truth, dtype=np.float64)
    lab = np.asarray(label, dtype=np.float64)
    x = np.asarray(scores, dtype=np.float64)
    p = calibrate_scores(x, t, kind="probability", folds=folds, seed=seed)
    ok = ~np.isnan(t) & ~np.isnan(lab)
    y = (t[ok] == lab[ok]).astype(np.float64)
    f = np.where(lab[ok] == 1, p[ok], 1 - p[ok])
    n = int(ok.sum())
    if n < 3 or np.ptp(y) == 0 or np.ptp(f) == 0:
        rho = 0.0
    else:
        rho = float(max(np.corrcoef(y, f)[0, 1], 0.0))
    return {"n": n, "accuracy": float(y.mean()) if n else float("nan"), "correlation": rho}
