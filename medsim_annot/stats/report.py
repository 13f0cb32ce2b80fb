"""The full agreement report: every coefficient of the agreement tables in one dataclass whose
:meth:`AgreementReport.to_dict` gives exactly the JSON keys of ``medsim agreement --json``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pandas as pd

from data_schemas import columns as C
from data_schemas.scales import Scale
from medsim_annot.i18n import N_

from ._frame import CodedRatings, Estimate, check_frame, coded, level_of
from .alpha import krippendorff_alpha
from .chance_corrected import TABLE_KEYS as COEFFICIENT_KEYS
from .chance_corrected import ChanceCorrected, chance_corrected
from .icc import ICCResult, intraclass_corr
from .kendall import kendall_w
from .pairwise import pairwise_agreement, per_annotator_means
from .simlex import simlex_agreement

PER_ANNOTATOR_KEYS = (
    "annotator",
    "krippendorff_alpha",
    "cohen_kappa_quadratic",
    "spearman_rho",
    "iaa_1",
    "iaa_2",
)
PAIRWISE_KEYS = (
    "annotator_a",
    "annotator_b",
    "n_items",
    "krippendorff_alpha",
    "cohen_kappa",
    "cohen_kappa_quadratic",
    "spearman_rho",
)


class Figure(NamedTuple):
    """One figure of the report's summary table, described once for every reader.

    ``path`` is where the value lives on :class:`AgreementReport`: an attribute
    (``"kendall_w"``), an attribute of an attribute (``"icc.C1"``) or a key of a dict
    attribute (``"human_upper_bound.inclusive"``). ``column`` names it in the dashboard's
    summary table (and its CSV download), ``label`` in the CLI table (and the dashboard's
    column help), ``fmt`` is the format spec the CLI prints it with, ``short`` the dashboard's
    column header (narrow columns: the full ``label`` is its help).

    ``statistic``: for a coefficient that is not a field of :class:`AgreementReport`, the
    function computing it from the report's codes and level of measurement (an
    :class:`~medsim_annot.stats._frame.Estimate` or a float); :func:`agreement_report`
    keeps its value under ``path`` (a plain name) in ``AgreementReport.figures``. A new
    coefficient is then its module and one ``Figure(...)`` in :data:`SUMMARY_FIGURES`: the
    CLI table, the JSON keys (:data:`REPORT_KEYS`), the dashboard's column, its CSV and the
    HTML report follow.
    """

    path: str
    column: str
    label: str
    fmt: str = ".3f"
    short: str = ""
    statistic: Callable[[CodedRatings, str], Estimate | float] | None = None


COUNT_FIGURES = (
    Figure("n_items", "items", "items", "d"),
    Figure("n_annotators", "annotators", "annotators", "d"),
    Figure("n_ratings", "ratings", "ratings", "d"),
    Figure("level", "level", "level", "s"),
)
"""What the report was computed on (the CLI prints them on its first line)."""

SUMMARY_FIGURES = (
    Figure("krippendorff_alpha", "alpha", N_("Krippendorff's alpha"), short=N_("α")),
    Figure("icc.C1", "icc_c1", N_("ICC(C,1)"), short=N_("ICC(C,1)")),
    Figure("icc.Ck", "icc_ck", N_("ICC(C,k)"), short=N_("ICC(C,k)")),
    Figure("kendall_w", "kendall_w", N_("Kendall's W (tie-corrected)"), short=N_("W")),
    Figure(
        "mean_pairwise_spearman", "mean_rho", N_("mean pairwise Spearman rho"), short=N_("mean ρ")
    ),
    Figure(
        "human_upper_bound.inclusive",
        "hub_inclusive",
        N_("human upper bound (inclusive)"),
        short=N_("HUB incl."),
    ),
    Figure(
        "human_upper_bound.exclusive",
        "hub_exclusive",
        N_("human upper bound (exclusive)"),
        short=N_("HUB excl."),
    ),
    # Chance-corrected coefficients (Gwet 2014): beside alpha, with their standard errors
    # and intervals in the report's ``coefficients`` table.
    Figure("chance_corrected.ac1", "ac1", N_("Gwet's AC1"), short=N_("AC1")),
    Figure("chance_corrected.ac2", "ac2", N_("Gwet's AC2 (weights of the level)"), short=N_("AC2")),
    Figure(
        "chance_corrected.fleiss_kappa", "fleiss_kappa", N_("Fleiss' kappa"), short=N_("Fleiss κ")
    ),
    Figure(
        "chance_corrected.brennan_prediger",
        "brennan_prediger",
        N_("Brennan-Prediger (Bennett's S)"),
        short=N_("B-P"),
    ),
    Figure(
        "chance_corrected.conger_kappa", "conger_kappa", N_("Conger's kappa"), short=N_("Conger κ")
    ),
    Figure(
        "chance_corrected.prevalence_index",
        "prevalence_index",
        N_("prevalence index"),
        short=N_("PI"),
    ),
    Figure("chance_corrected.bias_index", "bias_index", N_("bias index"), short=N_("BI")),
)
"""The coefficients of the summary, in the order of EHR-Rel Table 3 (Schulz et al. 2020),
then the chance-corrected coefficients (:mod:`medsim_annot.stats.chance_corrected`):
the dashboard's agreement table, the HTML report and the ``medsim agreement`` table are
built from this tuple, so a coefficient added here appears in all of them."""

TABLES = {
    "pairwise": PAIRWISE_KEYS,
    "per_annotator": PER_ANNOTATOR_KEYS,
    "coefficients": COEFFICIENT_KEYS,
}
"""The report's tables (a frame attribute each) and the keys of their JSON records."""

REPORT_KEYS: tuple[str, ...] = tuple(
    dict.fromkeys(f.path.partition(".")[0] for f in (*COUNT_FIGURES, *SUMMARY_FIGURES))
) + tuple(TABLES)
"""The keys of :meth:`AgreementReport.to_dict` (the JSON of ``medsim agreement --json``):
the heads of the figures' paths (``"icc.C1"`` and ``"icc.Ck"`` are the keys ``C1`` and
``Ck`` of ``"icc"``), then the tables."""


@dataclass
class AgreementReport:
    """Agreement of a set of ratings.

    ``pairwise`` and ``per_annotator`` are frames (with a ``reason`` column where values can
    be NaN); ``reasons`` maps a figure's name to why it is NaN; ``icc`` keeps the design rule
    used for k-of-n data.
    """

    n_items: int
    n_annotators: int
    n_ratings: int
    level: str
    krippendorff_alpha: float
    pairwise: pd.DataFrame
    per_annotator: pd.DataFrame
    mean_pairwise_spearman: float
    icc: ICCResult
    kendall_w: float
    human_upper_bound: dict[str, float]
    reasons: dict[str, str] = field(default_factory=dict)
    #: The values of the figures computed by their ``statistic``, by path.
    figures: dict[str, float] = field(default_factory=dict)
    #: AC1, AC2, Fleiss' kappa, Brennan-Prediger, Conger's kappa, prevalence and bias.
    chance_corrected: ChanceCorrected | None = None
    #: One row per chance-corrected coefficient: value, se, 95% interval, pa, pe, ...
    coefficients: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=COEFFICIENT_KEYS)
    )

    @property
    def notes(self) -> list[str]:
        """Plain sentences that help read the figures (the kappa paradox)."""
        cc = self.chance_corrected
        return [cc.note] if cc is not None and cc.note else []

    def value(self, figure: Figure):
        """The value of *figure* (one of :data:`COUNT_FIGURES` / :data:`SUMMARY_FIGURES`)."""
        if figure.path in self.figures:
            return self.figures[figure.path]
        head, _, rest = figure.path.partition(".")
        v = getattr(self, head)
        if rest:
            v = v[rest] if isinstance(v, dict) else getattr(v, rest)
        return v

    def summary(self) -> dict:
        """The counts and coefficients of the summary table, keyed by their ``column``."""
        return {f.column: self.value(f) for f in (*COUNT_FIGURES, *SUMMARY_FIGURES)}

    def to_dict(self) -> dict:
        """Plain JSON-ready dict with exactly :data:`REPORT_KEYS`, from the figures and the
        tables (NaN stays NaN; the CLI writes it as null)."""
        out: dict = {}
        for f in (*COUNT_FIGURES, *SUMMARY_FIGURES):
            head, _, rest = f.path.partition(".")
            v = _plain(self.value(f), f.fmt)
            if rest:
                out.setdefault(head, {})[rest] = v
            else:
                out[head] = v
        if self.chance_corrected is not None:
            out.setdefault("chance_corrected", {})["note"] = self.chance_corrected.note
        for name, keys in TABLES.items():
            out[name] = _records(getattr(self, name), keys)
        return out


def _plain(v, fmt: str):
    """*v* as the JSON type its format spec names: ``d`` an int, ``s`` a str, else a float."""
    return int(v) if fmt == "d" else str(v) if fmt == "s" else float(v)


def _records(frame: pd.DataFrame, keys) -> list[dict]:
    out = []
    for rec in frame[list(keys)].to_dict(orient="records"):
        out.append(
            {
                k: (int(v) if k == "n_items" else v if isinstance(v, str) else float(v))
                for k, v in rec.items()
            }
        )
    return out


def agreement_report(
    ratings: pd.DataFrame | CodedRatings,
    scale_or_level: Scale | str,
    *,
    level: str | None = None,
) -> AgreementReport:
    """Every agreement figure of a ratings frame (EHR-Rel Tables 2 and 3 and more).

    Parameters
    ----------
    ratings : DataFrame or CodedRatings
        Ratings frame (``pair_id``, ``annotator``, ``value``; NaN = no decision), or its
        codes (the dashboard's, built once per read and shared by every figure).
    scale_or_level : Scale or level name
        The scale (its level and codes) or just a level of measurement.
    level : str, optional
        Override the scale's level (e.g. analyse a 0-3 scale at the interval level).

    Returns
    -------
    AgreementReport

    Notes
    -----
    Overall alpha over all annotators at the level; pairwise alpha, Cohen's kappa
    (unweighted, quadratic) and Spearman's rho over the items both annotators rated, and per
    annotator their means; ICC(C,1), ICC(C,k) and Kendall's W (tie-corrected) on the complete
    items x raters matrix (k-of-n designs: the slot rule of docs/stats.md); IAA-1, IAA-2 and
    the human upper bound (max over annotators of rho with the mean rating, inclusive or
    exclusive of the annotator). See the functions of :mod:`medsim_annot.stats`.

    References
    ----------
    Schulz, C., et al. (2020). Biomedical Concept Relatedness - A large EHR-based benchmark.
    COLING 2020, sections 4 and 6. https://doi.org/10.18653/v1/2020.coling-main.577

    Examples
    --------
    Shrout & Fleiss (1979) Table 2 as an interval-level rating study:

    >>> from medsim_annot.stats import ratings_from_matrix
    >>> sf = [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]]
    >>> rep = agreement_report(ratings_from_matrix(sf), "interval")
    >>> round(rep.icc.C1, 3), round(rep.icc.Ck, 3), rep.n_items, rep.n_annotators
    (0.715, 0.909, 6, 4)
    """
    check_frame(ratings.frame if isinstance(ratings, CodedRatings) else ratings)
    lv = level_of(level) if level else level_of(scale_or_level)
    scale_arg = scale_or_level if isinstance(scale_or_level, Scale) else lv
    reasons: dict[str, str] = {}
    # Pair ids and annotators factorized once for every figure below (100,000s of strings).
    enc = coded(ratings)
    n_items = enc.n_items
    annotators = list(enc.annotators)
    domain = None
    if isinstance(scale_or_level, Scale):
        codes = sorted(
            {
                o.code
                for o in scale_or_level.options
                if o.code is not None and not scale_or_level.is_no_decision(o.value)
            }
        )
        observed = set(enc.values.tolist())
        domain = codes if observed <= set(codes) else None

    alpha = krippendorff_alpha(enc, lv, value_domain=domain)
    if alpha.reason:
        reasons["krippendorff_alpha"] = alpha.reason
    if isinstance(scale_arg, Scale) and lv != scale_arg.level:
        scale_arg = scale_arg.model_copy(update={"level": lv})
    pw = pairwise_agreement(enc, scale_arg)
    means = per_annotator_means(pw)
    sl = simlex_agreement(enc)
    per = pd.DataFrame({C.ANNOTATOR: pd.Series(annotators, dtype=object)})
    means = means.astype({C.ANNOTATOR: object})
    sl_per = sl.per_annotator[[C.ANNOTATOR, "iaa_1", "iaa_2"]].astype({C.ANNOTATOR: object})
    per = per.merge(means, on=C.ANNOTATOR, how="left").merge(sl_per, on=C.ANNOTATOR, how="left")
    rho = pw["spearman_rho"].to_numpy(dtype=float)
    if len(annotators) < 2:
        reasons["pairwise"] = "one annotator only: no pairs of annotators"
    if np.isnan(rho).all():
        mean_rho = float("nan")
        reasons["mean_pairwise_spearman"] = (
            "no pair of annotators has a defined Spearman rho" if len(rho) else "one annotator only"
        )
    else:
        mean_rho = float(np.nanmean(rho))
    for r in pw["reason"].dropna():
        reasons.setdefault("pairwise", r)
    icc = intraclass_corr(enc)
    if icc.reason:
        reasons["icc"] = icc.reason
    w = kendall_w(enc)
    if w.reason:
        reasons["kendall_w"] = w.reason
    for k, v in sl.reasons.items():
        reasons.setdefault(k, v)
    cc = chance_corrected(enc, lv, value_domain=domain)
    reasons.update(cc.reasons())
    figures: dict[str, float] = {}
    for f in SUMMARY_FIGURES:
        if f.statistic is not None:
            est = f.statistic(enc, lv)
            figures[f.path] = float(est)
            if isinstance(est, Estimate) and est.reason:
                reasons[f.path] = est.reason
    return AgreementReport(
        n_items=n_items,
        n_annotators=len(annotators),
        n_ratings=len(enc),
        level=lv,
        krippendorff_alpha=alpha.value,
        pairwise=pw,
        per_annotator=per,
        mean_pairwise_spearman=mean_rho,
        icc=icc,
        kendall_w=w.value,
        human_upper_bound={
            "inclusive": sl.human_upper_bound_inclusive,
            "exclusive": sl.human_upper_bound_exclusive,
        },
        reasons=reasons,
        figures=figures,
        chance_corrected=cc,
        coefficients=cc.table(),
    )
