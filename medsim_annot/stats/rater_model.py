"""A model as a blinded extra rater: where its scores would rank among the doctors, and the
alternative-annotator test (can it replace one of them?). Pure numpy/pandas/scipy.

- :func:`model_as_rater` — Spearman rho of the model with the doctors' mean rating next to
  each doctor's leave-one-out rho (the doctor against the mean of the others).
- :func:`alt_test` — the alt-test of Calderon, Reichart & Dror (ACL 2025).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd
from scipy.stats import ttest_1samp
from statsmodels.stats.multitest import multipletests

from data_schemas import columns as C
from data_schemas.options import EPSILON, StrOptions
from medsim_annot.i18n import fmt_int, t, tn

from .pairwise import spearman_rho

Scoring = Literal["accuracy", "neg_rmse"]
SCORINGS = StrOptions.of(
    Scoring,
    "scoring",
    {"accuracy": "share of matching labels (binary)", "neg_rmse": "minus the RMSE (graded)"},
)


def _matrix(ratings: pd.DataFrame) -> pd.DataFrame:
    """items x annotators of decisive values (NaN: not rated or no decision); an annotator's
    latest row wins when a pair appears twice."""
    r = ratings.dropna(subset=[C.VALUE])
    return r.pivot_table(index=C.PAIR_ID, columns=C.ANNOTATOR, values=C.VALUE, aggfunc="last")


def _model_series(model, items: pd.Index) -> pd.Series:
    s = model if isinstance(model, pd.Series) else pd.Series(model)
    s = pd.to_numeric(s, errors="coerce")
    s.index = s.index.astype(str)
    return s.reindex(items.astype(str))


@dataclass
class ModelRater:
    """``model_rho``: Spearman rho of the model with the mean of every doctor; ``model_loo_rho``:
    the mean over doctors *j* of its rho with the mean of the doctors other than *j* (the same
    reference each doctor gets); ``doctors``: per doctor ``loo_rho`` (rho with the mean of the
    others) and ``n_items``; ``model_rank``: 1 + the doctors whose leave-one-out rho exceeds
    the model's ``model_loo_rho``."""

    model_rho: float
    model_loo_rho: float
    model_rank: int
    n_items: int
    doctors: pd.DataFrame
    reasons: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "model_rho": self.model_rho,
            "model_loo_rho": self.model_loo_rho,
            "model_rank": self.model_rank,
            "n_items": self.n_items,
            "doctors": self.doctors.to_dict(orient="records"),
        }


def model_as_rater(ratings: pd.DataFrame, model) -> ModelRater:
    """Spearman rho of a model's scores with the doctors' mean rating, beside each doctor's
    leave-one-out rho.

    Parameters
    ----------
    ratings : DataFrame
        Ratings frame (``pair_id``, ``annotator``, ``value``; NaN = no decision).
    model : Series or mapping pair_id -> score
        The model's score per pair (pairs without a score are left out).

    Returns
    -------
    ModelRater

    Notes
    -----
    A doctor's leave-one-out rho is :math:`\\rho(r_j, \\bar r_{-j})` over the items *j* rated
    with at least one other decisive rating (IAA-2 of Chiu et al. 2018); the model's
    comparable figure is :math:`\\frac1m\\sum_j \\rho(f, \\bar r_{-j})` over the same items, so
    the model is ranked against a reference of the same size each doctor had. Its rho with
    the full mean :math:`\\rho(f, \\bar r)` is the figure papers report for embeddings.

    Examples
    --------
    >>> import pandas as pd
    >>> r = pd.DataFrame({"pair_id": list("abcdabcdabcd"), "annotator": list("XXXXYYYYZZZZ"),
    ...                   "value": [0, 1, 2, 3, 0, 1, 3, 2, 1, 0, 2, 3]})
    >>> m = model_as_rater(r, {"a": 0.1, "b": 0.3, "c": 0.6, "d": 0.9})
    >>> round(m.model_rho, 3), m.model_rank
    (1.0, 1)
    """
    mat = _matrix(ratings)
    f = _model_series(model, mat.index)
    keep = f.notna()
    mat, f = mat[keep.to_numpy()], f[keep]
    reasons: dict[str, str] = {}
    if (~keep).any():
        missing = int((~keep).sum())
        reasons["model"] = tn(
            "{n} rated pair has no model score and is left out",
            "{n} rated pairs have no model score and are left out",
            missing,
            n=fmt_int(missing),
        )
    mean_all = mat.mean(axis=1)
    model_rho = spearman_rho(f.to_numpy(), mean_all.to_numpy()).value
    rows = []
    model_loo = []
    for a in mat.columns:
        own = mat[a]
        others = mat.drop(columns=[a])
        ref = others.mean(axis=1)
        sel = own.notna() & ref.notna()
        rho = spearman_rho(own[sel].to_numpy(), ref[sel].to_numpy())
        mrho = spearman_rho(f[sel].to_numpy(), ref[sel].to_numpy())
        rows.append({C.ANNOTATOR: str(a), "loo_rho": rho.value, "n_items": int(sel.sum())})
        model_loo.append(mrho.value)
    doctors = pd.DataFrame(rows, columns=[C.ANNOTATOR, "loo_rho", "n_items"])
    mloo = float(np.nanmean(model_loo)) if np.isfinite(model_loo).any() else float("nan")
    if not np.isfinite(mloo):
        reasons["model_loo_rho"] = t("no doctor shares two or more items with another doctor")
    rank = 1 + int((doctors["loo_rho"] > mloo).sum()) if np.isfinite(mloo) else 0
    return ModelRater(float(model_rho), mloo, rank, int(len(mat)), doctors, reasons)


# ---- the alt-test -------------------------------------------------------------------------------
@dataclass
class AltTestResult:
    """``winning_rate``: share of doctors the model beats (null rejected after
    Benjamini–Yekutieli); ``passed``: ``winning_rate >= 0.5``; ``advantage_probability``:
    mean over doctors of the share of items where the model aligns with the others at least
    as well as the excluded doctor; ``per_annotator``: ``annotator``, ``n_items``,
    ``rho_model``, ``rho_human``, ``p_value``, ``rejected``; ``skipped``: doctors with too few
    items; ``doctors``: every doctor with a decisive rating (tested or skipped);
    ``inconclusive``: the test cannot decide (fewer than :data:`MIN_DOCTORS` doctors, or no
    doctor tested) — then ``passed`` is False and ``reasons["alt_test"]`` says why."""

    winning_rate: float
    advantage_probability: float
    passed: bool
    epsilon: float
    q: float
    scoring: str
    per_annotator: pd.DataFrame
    skipped: list[str] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)
    doctors: int = 0
    inconclusive: bool = False

    @property
    def tested(self) -> int:
        """Doctors the model was tested against (not skipped)."""
        return int(len(self.per_annotator))

    @property
    def verdict(self) -> str:
        """``passed``, ``failed`` or ``inconclusive``."""
        if self.inconclusive:
            return "inconclusive"
        return "passed" if self.passed else "failed"

    def to_dict(self) -> dict:
        return {
            "winning_rate": self.winning_rate,
            "advantage_probability": self.advantage_probability,
            "passed": self.passed,
            "verdict": self.verdict,
            "doctors": self.doctors,
            "tested": self.tested,
            "inconclusive": self.inconclusive,
            "epsilon": self.epsilon,
            "q": self.q,
            "scoring": self.scoring,
            "per_annotator": self.per_annotator.to_dict(orient="records"),
            "skipped": list(self.skipped),
        }


#: The alt-test leaves one doctor out and compares the model and that doctor with the
#: others; with two doctors "the others" is one person, whose idiosyncrasies decide the test
#: (Calderon, Reichart & Dror 2025 require at least three annotators).
MIN_DOCTORS = 3


def _align(pred: np.ndarray, others: np.ndarray, scoring: Scoring) -> np.ndarray:
    """Alignment of one prediction per row with the other annotators' values of that row
    (NaN = absent): the share equal (accuracy) or minus the root mean squared difference."""
    present = ~np.isnan(others)
    cnt = present.sum(axis=1)
    if scoring == "accuracy":
        hits = np.where(present, others == pred[:, None], False).sum(axis=1)
        return hits / cnt
    sq = np.where(present, (others - pred[:, None]) ** 2, 0.0).sum(axis=1)
    return -np.sqrt(sq / cnt)


def alt_test(
    ratings: pd.DataFrame,
    model,
    *,
    scoring: Scoring = "accuracy",
    epsilon: float = 0.2,
    q: float = 0.05,
    min_raters_per_item: int = 2,
    min_items_per_rater: int = 30,
) -> AltTestResult:
    """The alternative-annotator test: can the model replace one of the doctors?

    Parameters
    ----------
    ratings : DataFrame
        Ratings frame (``pair_id``, ``annotator``, ``value``); no-decision ratings (NaN) are
        not annotations.
    model : Series or mapping pair_id -> value
        The model's annotation per pair, on the scale's codes (a label for ``accuracy``, a
        rating for ``neg_rmse``).
    scoring : {"accuracy", "neg_rmse"}
        Alignment of an annotation with the other doctors' annotations of the pair: the share
        equal (nominal scales) or minus the RMSE (graded scales).
    epsilon : float
        The cost-benefit margin: the model must align at most *epsilon* less often than the
        excluded doctor. The authors suggest 0.2 for experts, 0.15 for skilled annotators,
        0.1 for crowd workers.
    q : float
        False discovery rate of the Benjamini–Yekutieli procedure.
    min_raters_per_item, min_items_per_rater : int
        Items need this many doctors; a doctor with fewer items is skipped (the authors
        advise 50–100 items and at least 30 per doctor).

    Returns
    -------
    AltTestResult

    Notes
    -----
    For each doctor *j* and each item *i* they annotated (with the model), the alignment
    :math:`S(\\cdot, i, j)` of the model's annotation and of doctor *j*'s with the doctors
    other than *j*; indicators :math:`W^f_{ij} = 1[S(f) \\ge S(h_j)]` and
    :math:`W^h_{ij} = 1[S(h_j) \\ge S(f)]`, their means :math:`\\rho^f_j, \\rho^h_j`. A
    one-sided one-sample *t*-test of :math:`d_{ij} = W^h_{ij} - W^f_{ij}` tests
    :math:`H_{0j}: \\rho^h_j - \\rho^f_j \\ge \\varepsilon` against
    :math:`H_{1j}: \\rho^f_j > \\rho^h_j - \\varepsilon`. The *m* p-values go through
    Benjamini–Yekutieli at level *q*; the winning rate :math:`\\omega` is the share of
    doctors whose null is rejected, and the model passes when :math:`\\omega \\ge 0.5`. The
    advantage probability :math:`\\rho = \\frac1m \\sum_j \\rho^f_j` compares models. A doctor
    whose differences are all equal (zero variance) gets p = 0 when their mean is below
    *epsilon* and 1 otherwise (the *t* statistic is then ±∞). With fewer than
    :data:`MIN_DOCTORS` doctors the test is *inconclusive* (each doctor would be judged
    against a single colleague): the per-doctor figures are still computed, ``passed`` is
    False and the reason is given.

    References
    ----------
    Calderon, N., Reichart, R., & Dror, R. (2025). The Alternative Annotator Test for
    LLM-as-a-Judge: How to Statistically Justify Replacing Human Annotators with LLMs.
    ACL 2025, 16051–16081. https://doi.org/10.18653/v1/2025.acl-long.782

    Benjamini, Y., & Yekutieli, D. (2001). The control of the false discovery rate in multiple
    testing under dependency. *Ann. Statist.* 29(4), 1165–1188.
    https://doi.org/10.1214/aos/1013699998
    """
    SCORINGS.check(scoring)
    EPSILON.check(epsilon)
    mat = _matrix(ratings)
    f = _model_series(model, mat.index)
    mat = mat[(f.notna() & (mat.notna().sum(axis=1) >= min_raters_per_item)).to_numpy()]
    f = f.reindex(mat.index.astype(str))
    vals = mat.to_numpy(dtype=np.float64)
    pred = f.to_numpy(dtype=np.float64)
    rows, pvals, skipped = [], [], []
    for j, name in enumerate(mat.columns):
        own = vals[:, j]
        others = np.delete(vals, j, axis=1)
        sel = ~np.isnan(own) & (~np.isnan(others)).any(axis=1)
        if sel.sum() < min_items_per_rater:
            skipped.append(str(name))
            continue
        s_h = _align(own[sel], others[sel], scoring)
        s_f = _align(pred[sel], others[sel], scoring)
        w_f = (s_f >= s_h).astype(np.float64)
        w_h = (s_h >= s_f).astype(np.float64)
        d = w_h - w_f
        if np.ptp(d) == 0:
            p = 0.0 if d[0] < epsilon else 1.0
        else:
            p = float(ttest_1samp(d, epsilon, alternative="less").pvalue)
        pvals.append(p)
        rows.append(
            {
                C.ANNOTATOR: str(name),
                "n_items": int(sel.sum()),
                "rho_model": float(w_f.mean()),
                "rho_human": float(w_h.mean()),
                "p_value": p,
            }
        )
    per = pd.DataFrame(rows, columns=[C.ANNOTATOR, "n_items", "rho_model", "rho_human", "p_value"])
    reasons: dict[str, str] = {}
    doctors = int(len(mat.columns))
    if not rows:
        per["rejected"] = pd.Series(dtype=bool)
        reasons["alt_test"] = tn(
            "no doctor has {n} item shared with another doctor and the model",
            "no doctor has {n} items shared with another doctor and the model",
            min_items_per_rater,
            n=fmt_int(min_items_per_rater),
        )
        return AltTestResult(
            float("nan"),
            float("nan"),
            False,
            epsilon,
            q,
            scoring,
            per,
            skipped,
            reasons,
            doctors=doctors,
            inconclusive=True,
        )
    rejected = multipletests(pvals, alpha=q, method="fdr_by")[0]
    per["rejected"] = rejected.astype(bool)
    wr = float(rejected.mean())
    inconclusive = doctors < MIN_DOCTORS
    if inconclusive:
        reasons["alt_test"] = tn(
            "inconclusive: the test needs {needed} or more doctors and there is {n}; leaving "
            "one out leaves a single colleague to compare with, so one person's habits would "
            "decide whether the model may replace a doctor",
            "inconclusive: the test needs {needed} or more doctors and there are {n}; leaving "
            "one out leaves a single colleague to compare with, so one person's habits would "
            "decide whether the model may replace a doctor",
            doctors,
            needed=fmt_int(MIN_DOCTORS),
            n=fmt_int(doctors),
        )
    return AltTestResult(
        wr,
        float(per["rho_model"].mean()),
        bool(wr >= 0.5 and not inconclusive),
        epsilon,
        q,
        scoring,
        per,
        skipped,
        reasons,
        doctors=doctors,
        inconclusive=inconclusive,
    )
