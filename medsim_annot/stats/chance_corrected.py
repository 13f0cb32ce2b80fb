"""The chance-corrected agreement coefficients clinical papers report beside α: Gwet's AC1
(nominal) and AC2 (weighted), Fleiss' κ, Brennan–Prediger (Bennett's S) and Conger's κ, each
with its standard error and 95% interval, for any number of raters and missing ratings; and
the prevalence and bias indices that explain when κ and AC1 part ways (the "kappa paradox").

Every coefficient has the form :math:`(p_a - p_e) / (1 - p_e)` with the same weighted
percent agreement :math:`p_a` (over the items with two or more decisive ratings) and its own
chance agreement :math:`p_e`. The standard errors are Gwet's linearised variances
(Gwet 2008; Handbook of Inter-Rater Reliability, 4th ed., 2014, chapters 2-5), conditional
on the raters, with the interval :math:`\\hat c \\pm t_{n-1,0.975}\\,\\mathrm{se}` capped at 1
above — the formulas of Gwet's R package irrCAC and its Python port (irrCAC 0.4.4), which
the tests compare. Fleiss' κ and Brennan–Prediger on complete designs (every item the same
number of decisive ratings) come from statsmodels' ``fleiss_kappa`` (``method="fleiss"`` and
``"randolph"``); with missing ratings from the same formulas written out here.

The coefficients take the scale's whole value domain as the categories (a category nobody
chose still counts in :math:`q`), as Gwet recommends. No-decision ratings are missing.
Cost: one pass over the ratings plus (items x categories) arrays; Conger's κ adds a
(raters x categories) table, the bias index a sparse raters x raters product.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.stats import t as student_t
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from medsim_annot.i18n import fmt_decimal, t

from ._frame import CodedRatings, coded, level_of

#: The weights each level of measurement takes for AC2 (Gwet 2014, ch. 3): ordinal weights on
#: the ranks of the categories, quadratic weights on their values for interval (and ratio)
#: data; nominal data are unweighted, and AC2 is then AC1.
LEVEL_WEIGHTS = {
    "nominal": "identity",
    "ordinal": "ordinal",
    "interval": "quadratic",
    "ratio": "quadratic",
}

#: Names of the coefficients, in the order they are reported.
COEFFICIENTS = ("ac1", "ac2", "fleiss_kappa", "brennan_prediger", "conger_kappa")
LABELS = {
    "ac1": "Gwet's AC1",
    "ac2": "Gwet's AC2",
    "fleiss_kappa": "Fleiss' kappa",
    "brennan_prediger": "Brennan-Prediger (Bennett's S)",
    "conger_kappa": "Conger's kappa",
}

#: When Gwet's AC1 exceeds Fleiss' κ by at least this much while the prevalence index is at
#: least :data:`PARADOX_PREVALENCE`, the report says in one sentence that prevalence, not
#: disagreement, pulls κ down.
PARADOX_GAP = 0.2
PARADOX_PREVALENCE = 0.5


@dataclass(frozen=True)
class Coefficient:
    """A chance-corrected coefficient with its standard error and 95% interval.

    ``value`` is NaN exactly when ``reason`` is set; ``se``, ``ci_low``, ``ci_high`` are NaN
    when fewer than two items count. ``pa``/``pe``: percent and chance agreement.
    ``n_items``: items with at least one decisive rating (the variance's *n*).
    """

    name: str
    value: float
    se: float = float("nan")
    ci_low: float = float("nan")
    ci_high: float = float("nan")
    pa: float = float("nan")
    pe: float = float("nan")
    n_items: int = 0
    weights: str = "identity"
    reason: str | None = None

    def __float__(self) -> float:
        return float(self.value)


def agreement_weights(values, kind: str) -> np.ndarray:
    """The (q, q) agreement weights of Gwet (2014, ch. 3) for categories *values* (sorted).

    ``identity``: 1 on the diagonal; ``ordinal``: :math:`1 - \\binom{|k-l|+1}{2} /
    \\binom{q}{2}` on the ranks; ``quadratic``: :math:`1 - (x_k - x_l)^2 / (x_{max} -
    x_{min})^2`; ``linear``: :math:`1 - |x_k - x_l| / (x_{max} - x_{min})`.

    >>> agreement_weights([0, 1, 2, 3], "ordinal")[0].round(3).tolist()
    [1.0, 0.833, 0.5, 0.0]
    >>> agreement_weights([0, 1, 2, 3], "quadratic")[0].round(3).tolist()
    [1.0, 0.889, 0.556, 0.0]
    """
    x = np.asarray(values, dtype=np.float64)
    q = len(x)
    if kind == "identity" or q < 2:
        return np.eye(q)
    if kind == "ordinal":
        k = np.arange(q)
        n = np.abs(k[:, None] - k[None, :]) + 1.0
        w = n * (n - 1) / 2
        return 1.0 - w / w.max()
    span = x.max() - x.min()
    if kind == "quadratic":
        return 1.0 - ((x[:, None] - x[None, :]) / span) ** 2
    if kind == "linear":
        return 1.0 - np.abs(x[:, None] - x[None, :]) / span
    raise ValueError(f"unknown weights {kind!r}: identity, ordinal, quadratic or linear")


@dataclass(frozen=True)
class _Tally:
    """What every coefficient shares: the items with a decisive rating and their counts.

    ``counts`` (n, q): decisive ratings of item *i* in category *k*; ``ri`` (n,): ratings
    per item; ``pi`` (q,): mean over items of the share of each category (Gwet's
    :math:`\\pi_k`); ``sum_q`` (n,): :math:`\\sum_k r_{ik}(r^\\star_{ik} - 1)`, the weighted
    agreeing ordered pairs of each item.
    """

    counts: np.ndarray
    ri: np.ndarray
    pi: np.ndarray
    weights: np.ndarray
    sum_q: np.ndarray
    n2more: int
    pa: float
    item_keep: np.ndarray

    @property
    def n(self) -> int:
        return len(self.ri)

    @property
    def q(self) -> int:
        return self.counts.shape[1]

    @property
    def pa_i(self) -> np.ndarray:
        den = self.ri * (self.ri - 1)
        return np.where(den > 0, self.sum_q / np.where(den > 0, den, 1), 0.0)


def _tally(counts: np.ndarray, weights: np.ndarray) -> _Tally:
    ri_all = counts.sum(axis=1)
    keep = ri_all > 0
    c = counts[keep]
    ri = ri_all[keep]
    agree_w = c @ weights.T
    sum_q = (c * (agree_w - 1.0)).sum(axis=1)
    two = ri >= 2
    n2more = int(two.sum())
    pa = float((sum_q[two] / (ri[two] * (ri[two] - 1))).sum() / n2more) if n2more else np.nan
    pi = (c / ri[:, None]).mean(axis=0) if len(ri) else np.zeros(c.shape[1])
    return _Tally(c, ri, pi, weights, sum_q, n2more, pa, keep)


def _finish(
    name: str, tally: _Tally, pe: float, pe_i: np.ndarray | None, weights: str, *, value=None
) -> Coefficient:
    """The coefficient, Gwet's linearised variance and the t interval (irrCAC's forms)."""
    n, pa = tally.n, tally.pa
    base = Coefficient(name, np.nan, n_items=n, weights=weights, pa=pa, pe=pe)
    if tally.n2more == 0:
        return replace(base, reason=t("no item has two or more decisive ratings"))
    if not pe < 1.0 - 1e-12:
        return replace(
            base, reason=t("chance agreement is 1 (every rating in one category): undefined")
        )
    coef = (pa - pe) / (1.0 - pe) if value is None else float(value)
    if n < 2:
        return replace(base, value=float(coef))
    ci = (n / tally.n2more) * (tally.pa_i - pe * (tally.ri >= 2)) / (1.0 - pe)
    if pe_i is not None:
        ci = ci - 2.0 * (1.0 - coef) * (pe_i - pe) / (1.0 - pe)
    se = float(np.sqrt(((ci - coef) ** 2).sum() / (n * (n - 1))))
    half = float(student_t.ppf(0.975, n - 1)) * se
    return replace(
        base,
        value=float(coef),
        se=se,
        ci_low=float(coef - half),
        ci_high=float(min(1.0, coef + half)),
    )


class _Prepared:
    """Ratings coded on one value domain, with their counts and tallies computed once and
    shared by every coefficient of :func:`chance_corrected`."""

    def __init__(self, data, values) -> None:
        enc = data if isinstance(data, CodedRatings) else coded(data)
        if values is not None and not np.array_equal(
            np.asarray(enc.values, dtype=np.float64), np.asarray(values, dtype=np.float64)
        ):
            enc = enc.with_values(values)
        self.enc = enc
        self.values = np.asarray(enc.values, dtype=np.float64)
        self._counts: np.ndarray | None = None
        self._tallies: dict[str, _Tally] = {}

    @property
    def counts(self) -> np.ndarray:
        if self._counts is None:
            self._counts = self.enc.counts()
        return self._counts

    def tally(self, weights: str = "identity") -> _Tally:
        if weights not in self._tallies:
            w = agreement_weights(self.values, weights)
            self._tallies[weights] = _tally(self.counts, w)
        return self._tallies[weights]


def _prepare(data, values) -> _Prepared:
    return data if isinstance(data, _Prepared) else _Prepared(data, values)


def _complete(tally: _Tally) -> bool:
    """Every item has the same number (two or more) of decisive ratings: statsmodels'
    ``fleiss_kappa`` applies."""
    return tally.n > 0 and tally.ri.min() >= 2 and tally.ri.min() == tally.ri.max()


def gwet_ac(data, *, weights: str = "identity", value_domain=None) -> Coefficient:
    """Gwet's AC1 (``weights="identity"``) or AC2 (ordinal, quadratic or linear weights).

    Parameters
    ----------
    data : DataFrame or CodedRatings
        Ratings frame (``pair_id``, ``annotator``, ``value``; NaN = no decision) or its codes.
    weights : {"identity", "ordinal", "quadratic", "linear"}
    value_domain : sequence of float, optional
        The scale's codes (default: those observed): unused categories still count in *q*.

    Returns
    -------
    Coefficient

    Notes
    -----
    With :math:`r_{ik}` ratings of item *i* in category *k*, :math:`r_i = \\sum_k r_{ik}`,
    :math:`r^\\star_{ik} = \\sum_l w_{kl} r_{il}`, the :math:`n'` items with
    :math:`r_i \\ge 2` and :math:`\\pi_k = \\frac1n \\sum_i r_{ik}/r_i`:

    .. math:: p_a = \\frac1{n'} \\sum_{i: r_i \\ge 2}
              \\sum_k \\frac{r_{ik}(r^\\star_{ik} - 1)}{r_i (r_i - 1)}, \\quad
              p_e = \\frac{T_w}{q(q-1)} \\sum_k \\pi_k (1 - \\pi_k), \\quad
              AC = \\frac{p_a - p_e}{1 - p_e}

    with :math:`T_w = \\sum_{kl} w_{kl}`.

    References
    ----------
    Gwet, K. L. (2008). Computing inter-rater reliability and its variance in the presence of
    high agreement. Br J Math Stat Psychol 61(1), 29-48.
    https://doi.org/10.1348/000711006X126600
    Gwet, K. L. (2014). Handbook of Inter-Rater Reliability, 4th ed. Advanced Analytics.

    Examples
    --------
    Gwet's (2014) 4 raters x 12 units with missing ratings (irrCAC 0.4.4 gives 0.77544,
    se 0.14295):

    >>> from medsim_annot.stats import ratings_from_matrix
    >>> nan = float("nan")
    >>> m = [[1, 1, nan, 1], [2, 2, 3, 2], [3, 3, 3, 3], [3, 3, 3, 3], [2, 2, 2, 2],
    ...      [1, 2, 3, 4], [4, 4, 4, 4], [1, 1, 2, 1], [2, 2, 2, 2], [nan, 5, 5, 5],
    ...      [nan, nan, 1, 1], [nan, nan, 3, nan]]
    >>> ac1 = gwet_ac(ratings_from_matrix(m))
    >>> round(ac1.value, 5), round(ac1.se, 5)
    (0.77544, 0.14295)
    """
    tally = _prepare(data, value_domain).tally(weights)
    w = tally.weights
    name = "ac1" if weights == "identity" else "ac2"
    q = tally.q
    if q < 2:
        return Coefficient(
            name, np.nan, n_items=tally.n, weights=weights, reason=t("fewer than two categories")
        )
    tw = float(w.sum())
    pe = tw * float((tally.pi * (1.0 - tally.pi)).sum()) / (q * (q - 1))
    pe_i = (tw / (q * (q - 1))) * (tally.counts @ (1.0 - tally.pi)) / tally.ri
    return _finish(name, tally, pe, pe_i, weights)


def fleiss_kappa(data, *, value_domain=None) -> Coefficient:
    """Fleiss' κ (unweighted) with Gwet's standard error, for any number of raters per item.

    Complete designs (every item the same number of decisive ratings) take the value from
    statsmodels' ``fleiss_kappa``; with missing ratings :math:`p_e = \\sum_k \\pi_k^2` with
    Gwet's :math:`\\pi_k` (the mean over items of each item's shares), which is Fleiss' on a
    complete design.

    References
    ----------
    Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters. Psychological
    Bulletin 76(5), 378-382. https://doi.org/10.1037/h0031619

    Examples
    --------
    >>> from medsim_annot.stats import ratings_from_matrix
    >>> round(fleiss_kappa(ratings_from_matrix([[1, 1, 1], [1, 0, 1], [0, 0, 0], [0, 1, 0]])).value, 4)
    0.3333
    """
    tally = _prepare(data, value_domain).tally()
    pe = float((tally.pi**2).sum())
    pe_i = (tally.counts @ tally.pi) / tally.ri if tally.n else None
    value = None
    if _complete(tally) and pe < 1.0 - 1e-12:
        value = float(sm_fleiss_kappa(tally.counts, method="fleiss"))
    return _finish("fleiss_kappa", tally, pe, pe_i, "identity", value=value)


def brennan_prediger(data, *, value_domain=None) -> Coefficient:
    """Brennan–Prediger's coefficient (Bennett's S; free-marginal κ): :math:`p_e = 1/q`.

    Complete designs take the value from statsmodels' ``fleiss_kappa(method="randolph")``.

    References
    ----------
    Brennan, R. L., & Prediger, D. J. (1981). Coefficient kappa: some uses, misuses, and
    alternatives. Educ Psychol Meas 41(3), 687-699. https://doi.org/10.1177/001316448104100307
    Bennett, E. M., Alpert, R., & Goldstein, A. C. (1954). Communications through limited
    response questioning. Public Opinion Quarterly 18(3), 303-308.

    Examples
    --------
    Two raters, two categories, 3 of 4 agreements: (0.75 - 0.5) / 0.5.

    >>> from medsim_annot.stats import ratings_from_matrix
    >>> brennan_prediger(ratings_from_matrix([[1, 1], [0, 0], [1, 1], [1, 0]])).value
    0.5
    """
    tally = _prepare(data, value_domain).tally()
    q = tally.q
    if q < 2:
        return Coefficient(
            "brennan_prediger", np.nan, n_items=tally.n, reason=t("fewer than two categories")
        )
    value = None
    if _complete(tally):
        value = float(sm_fleiss_kappa(tally.counts, method="randolph"))
    return _finish("brennan_prediger", tally, 1.0 / q, None, "identity", value=value)


def conger_kappa(data, *, value_domain=None) -> Coefficient:
    """Conger's κ (unweighted): Fleiss' :math:`p_a` with the mean of the Cohen-type pairwise
    chance agreements, from each rater's own marginals.

    Notes
    -----
    With :math:`p_{gk}` the share of rater *g*'s decisive ratings in category *k*, over the
    *r* raters, :math:`\\bar p_k` their mean and :math:`s^2_{kl}` their covariance:
    :math:`p_e = \\sum_{kl} w_{kl} (\\bar p_k \\bar p_l - s^2_{kl}/r)`. Raters without a
    decisive rating do not count in *r*.

    References
    ----------
    Conger, A. J. (1980). Integration and generalization of kappas for multiple raters.
    Psychological Bulletin 88(2), 322-328. https://doi.org/10.1037/0033-2909.88.2.322
    """
    prep = _prepare(data, value_domain)
    enc = prep.enc
    tally = prep.tally()
    w = tally.weights
    ok = enc.value_index >= 0
    item_new = np.cumsum(tally.item_keep) - 1
    i = item_new[enc.item[ok]]
    g_raw = enc.annotator[ok]
    c = enc.value_index[ok]
    g, raters = pd.factorize(g_raw, sort=True)
    r = len(raters)
    q = tally.q
    if r < 2 or q < 2:
        why = t("one annotator only") if r < 2 else t("fewer than two categories")
        return Coefficient("conger_kappa", np.nan, n_items=tally.n, reason=why)
    classif = np.bincount(g * q + c, minlength=r * q).reshape(r, q).astype(np.float64)
    ng = classif.sum(axis=1)
    p = classif / ng[:, None]
    pbar = p.mean(axis=0)
    s2 = (p.T @ p - r * np.outer(pbar, pbar)) / (r - 1)
    pe = float((w * (np.outer(pbar, pbar) - s2 / r)).sum())
    n = tally.n
    d = r * pbar[None, :] - p  # (r, q)
    t_gc = d @ w  # sum_k w[k, c] d[g, k]
    s_g = ((p @ w.T) * d).sum(axis=1)
    per_rating = (n / ng[g]) * (t_gc[g, c] - s_g[g])
    lam = np.bincount(i, weights=per_rating, minlength=n) + s_g.sum()
    pe_i = lam / (r * (r - 1))
    return _finish("conger_kappa", tally, pe, pe_i, "identity")


def prevalence_index(data, *, value_domain=None) -> float:
    """How far the pooled category shares are from even: :math:`\\sqrt{(q \\sum_k \\pi_k^2 -
    1)/(q - 1)}`, 0 when every category is as common, 1 when one takes every rating.

    On two categories it is Byrt et al.'s :math:`|\\pi_1 - \\pi_2|` (for two raters
    :math:`|a - d|/n`). High prevalence lowers κ at a fixed percent agreement.

    References
    ----------
    Byrt, T., Bishop, J., & Carlin, J. B. (1993). Bias, prevalence and kappa. J Clin
    Epidemiol 46(5), 423-429. https://doi.org/10.1016/0895-4356(93)90018-V

    >>> from medsim_annot.stats import ratings_from_matrix
    >>> round(prevalence_index(ratings_from_matrix([[1, 1], [1, 1], [1, 0], [0, 0]])), 3)
    0.25
    """
    tally = _prepare(data, value_domain).tally()
    q = tally.q
    if q < 2 or tally.n == 0:
        return float("nan")
    return float(np.sqrt(max(0.0, (q * (tally.pi**2).sum() - 1.0) / (q - 1))))


def bias_index(data, *, value_domain=None) -> float:
    """How differently the raters use the categories: over every pair of raters, the total
    variation distance between their category shares on the items both rated, averaged with
    the number of shared items as weights.

    On two raters and two categories it is Byrt et al.'s :math:`|b - c|/n`.

    >>> from medsim_annot.stats import ratings_from_matrix
    >>> bias_index(ratings_from_matrix([[1, 1], [1, 0], [1, 0], [0, 0]]))
    0.5
    """
    prep = _prepare(data, value_domain)
    enc, values = prep.enc, prep.values
    ok = enc.value_index >= 0
    g, raters = pd.factorize(enc.annotator[ok], sort=True)
    r, q = len(raters), len(values)
    if r < 2 or q < 2:
        return float("nan")
    i = enc.item[ok]
    n = enc.n_items
    c = enc.value_index[ok]
    ones = np.ones(len(i))
    presence = sparse.csr_matrix((ones, (i, g)), shape=(n, r))
    onehot = sparse.csr_matrix((ones, (i, g * q + c)), shape=(n, r * q))
    shared = (presence.T @ presence).toarray()  # (r, r)
    # m[h, g, k]: items rated by h and by g, where g said k
    m = (presence.T @ onehot).toarray().reshape(r, r, q)
    tot, wsum = 0.0, 0.0
    for a in range(r):
        for b in range(a + 1, r):
            s = shared[a, b]
            if s <= 0:
                continue
            tv = 0.5 * np.abs(m[b, a] - m[a, b]).sum() / s
            tot += s * tv
            wsum += s
    return float(tot / wsum) if wsum else float("nan")


@dataclass(frozen=True)
class ChanceCorrected:
    """AC1, AC2, Fleiss' κ, Brennan–Prediger and Conger's κ of one set of ratings, the
    prevalence and bias indices, and, when κ and AC1 part ways because of prevalence, one
    plain sentence saying so (``note``)."""

    coefficients: tuple[Coefficient, ...]
    prevalence_index: float
    bias_index: float
    level: str
    note: str | None = None
    by_name: dict[str, Coefficient] = field(default_factory=dict, repr=False, compare=False)

    def __getattr__(self, name: str) -> float:
        # ``report.chance_corrected.ac1`` is the value (the report's figure paths).
        if name in COEFFICIENTS:
            return float(self.by_name[name].value)
        raise AttributeError(name)

    def table(self) -> pd.DataFrame:
        """One row per coefficient: value, standard error, 95% interval, pa, pe, items,
        weights, and the reason when undefined."""
        rows = [
            {
                "coefficient": LABELS[c.name],
                "value": c.value,
                "se": c.se,
                "ci_low": c.ci_low,
                "ci_high": c.ci_high,
                "pa": c.pa,
                "pe": c.pe,
                "n_items": c.n_items,
                "weights": c.weights,
                "reason": c.reason or "",
            }
            for c in self.coefficients
        ]
        return pd.DataFrame(rows, columns=list(TABLE_KEYS))

    def reasons(self) -> dict[str, str]:
        return {f"chance_corrected.{c.name}": c.reason for c in self.coefficients if c.reason}


TABLE_KEYS = (
    "coefficient",
    "value",
    "se",
    "ci_low",
    "ci_high",
    "pa",
    "pe",
    "n_items",
    "weights",
    "reason",
)


def paradox_note(ac1: float, kappa: float, prevalence: float) -> str | None:
    """The sentence shown when Fleiss' κ is far below AC1 because one answer dominates.

    >>> paradox_note(0.9, 0.4, 0.8)[:40]
    "Fleiss' kappa (0.40) is much lower than "
    >>> paradox_note(0.9, 0.85, 0.8) is None
    True
    """
    if not (np.isfinite(ac1) and np.isfinite(kappa) and np.isfinite(prevalence)):
        return None
    if ac1 - kappa < PARADOX_GAP or prevalence < PARADOX_PREVALENCE:
        return None
    return t(
        "Fleiss' kappa ({kappa}) is much lower than Gwet's AC1 ({ac1}) because most ratings "
        "fall in one category (prevalence index {prevalence}): kappa expects much agreement "
        "by chance when one answer dominates, so it is low although the raters mostly agree.",
        kappa=fmt_decimal(kappa),
        ac1=fmt_decimal(ac1),
        prevalence=fmt_decimal(prevalence),
    )


def chance_corrected(data, level="nominal", *, value_domain=None) -> ChanceCorrected:
    """Every coefficient of this module on *data* at *level* (a Scale or level name; AC2
    takes :data:`LEVEL_WEIGHTS` of the level), coded once.

    The kappa paradox by hand: two raters agree on 15 of 20 items, all "1"; on the other 5
    one says "0". :math:`p_a = 0.75`, :math:`\\pi_1 = 17.5/20 = 0.875`; AC1's
    :math:`p_e = 2 \\cdot 0.875 \\cdot 0.125 = 0.21875`, Fleiss'
    :math:`p_e = 0.875^2 + 0.125^2 = 0.78125`:

    >>> from medsim_annot.stats import ratings_from_matrix
    >>> cc = chance_corrected(ratings_from_matrix([[1, 1], [1, 1], [1, 1], [1, 0]] * 5))
    >>> round(cc.ac1, 4), round(cc.fleiss_kappa, 4), round(cc.prevalence_index, 2)
    (0.68, -0.1429, 0.75)
    >>> cc.note.split(":")[0]
    "Fleiss' kappa (-0.14) is much lower than Gwet's AC1 (0.68) because most ratings fall in one category (prevalence index 0.75)"
    """
    lv = level_of(level)
    prep = _Prepared(data, value_domain)
    coefs = (
        gwet_ac(prep),
        gwet_ac(prep, weights=LEVEL_WEIGHTS[lv]),
        fleiss_kappa(prep),
        brennan_prediger(prep),
        conger_kappa(prep),
    )
    coefs = (coefs[0], _renamed(coefs[1], "ac2"), *coefs[2:])
    pi = prevalence_index(prep)
    by_name = {c.name: c for c in coefs}
    note = paradox_note(by_name["ac1"].value, by_name["fleiss_kappa"].value, pi)
    return ChanceCorrected(coefs, pi, bias_index(prep), lv, note, by_name)


def _renamed(c: Coefficient, name: str) -> Coefficient:
    return c if c.name == name else replace(c, name=name)
