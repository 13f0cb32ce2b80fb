"""The :class:`Dashboard`: the engine's results for one study and the methods that shape
them into the published table layouts (Schulz & Juric, AAAI 2020, Table 3 for binary
studies with automatic labels; Schulz et al., COLING 2020, Tables 2 and 3 and Figure 1 for
graded studies). No statistics of its own: every number comes from the agreement services.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from data_schemas import columns as C
from data_schemas.gold import rater_column
from data_schemas.scales import Scale
from medsim_annot.i18n import N_, t
from medsim_annot.services.dashboard.readings import reading
from medsim_annot.services.gold.table import GoldTable, add_model_columns
from medsim_annot.services.quality import QualitySettings
from medsim_annot.stats import AgreementReport, AuditResult, RaterQuality, aggregate

#: Said of every annotator whose ratings were imported (:attr:`Dashboard.imported`).
IMPORTED_NOTE = N_(
    "Imported ratings: straight-lining, rushed answers and pace are not checked (the order "
    "is the file's and the times are the import's)."
)

#: The headline's auto-label accuracy counts the pairs with at least this many decisive
#: ratings (and a majority): with one rating, the "majority" is one doctor's answer.
ACCURACY_MIN_DECISIVE = 2

#: Disagreement kinds of the explorer and the flag column each one reads.
DISAGREEMENT_KINDS = {
    "no majority": "no_majority",
    "all different": "all_different",
    "auto-label ≠ majority": "auto_label_disagrees",
}


#: The rater-check columns added to :meth:`Dashboard.quality_table`.
CHECK_SHOWN = (
    C.ANNOTATOR,
    "n_checks",
    "check_accuracy",
    "check_warning",
    "rushed_rate",
    "median_seconds",
    "pairs_per_hour",
)


@dataclass
class Dashboard:
    """Every table of the QA dashboard for one study (or one set of frames).

    Attributes hold the engine's results (``agreement``, ``audit``, ``quality``) and the
    per-pair ``gold`` table; the methods shape them into the published layouts. ``kind`` is
    ``"binary"`` (a scale with positive/negative values) or ``"graded"`` (numeric scales).
    ``notes`` say how the study's data was read when it was imported (e.g. an EHR-Rel pair on
    two rows: each row is its own item), for the page to show.
    """

    study: str
    scale: Scale
    kind: str
    version: tuple[int, int]
    agreement: AgreementReport
    audit: AuditResult | None
    quality: RaterQuality
    gold: GoldTable
    bootstrap: int = 0
    reasons: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    #: What α, κ, ICC and W are computed on, when not every rated pair (2 + 1 designs: the
    #: calibration pairs); "" = all pairs. Shown next to the agreement figures.
    agreement_basis: str = ""
    #: Per doctor: accuracy on check pairs, rushed answers and pace
    #: (:func:`medsim_annot.services.quality.rater_checks`).
    rater_checks: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: One sentence per doctor below the study's minimum accuracy on check pairs.
    check_warnings: tuple[str, ...] = ()
    #: The rushed threshold and the minimum accuracy the checks used.
    quality_settings: QualitySettings | None = None
    #: Annotators whose ratings were imported: the order- and time-based checks
    #: (straight-lining, rushed answers, pace) are left out for them.
    imported: tuple[str, ...] = ()
    # Fitted models per method, kept with the dashboard (and so in the one dashboard cache).
    _models: dict[str, dict] = field(default_factory=dict, repr=False, compare=False)

    # ------------------------------------------------------------------ model of the doctors
    def model_quality(self, method: str = "dawid-skene") -> dict:
        """Each doctor's estimated competence (and, for Dawid–Skene, confusion matrix) from a
        crowd-kit model of the current ratings, next to the agreement-based figures, and how
        many pairs the model labels differently from the majority (the majority stays the
        verdict; the model is a second opinion).

        Returns ``{"method", "raters", "confusion", "differs", "reason"}`` and, when fitted,
        ``"fit"`` (the :class:`~medsim_annot.stats.aggregate.ModelGold`: the adjudication
        board takes its labels); on a scale that is not nominal, ``reason`` says why and the
        frames are empty. Fitted once per method
        and dashboard (a cached dashboard keeps its fits)."""
        if method not in self._models:
            self._models[method] = self._model_quality(method)
        return self._models[method]

    def _model_quality(self, method: str) -> dict:
        aggregate.check_method(method)
        empty = {"method": method, "raters": pd.DataFrame(), "confusion": pd.DataFrame()}
        if self.scale.level != "nominal":
            return {
                **empty,
                "differs": 0,
                "reason": t("models need a nominal scale, not {level}", level=self.scale.level),
            }
        if self.gold.ratings.empty:
            return {**empty, "differs": 0, "reason": t("no ratings yet")}
        # One fit gives the doctors' figures and the per-pair labels; the gold table is
        # copied so the cached dashboard's own table keeps the columns it was built with.
        fit = aggregate.model_gold(self.gold.ratings, method)
        gt = GoldTable(
            self.gold.table.copy(),
            self.gold.ratings,
            self.gold.current,
            self.scale,
            self.gold.annotators,
        )
        differs = add_model_columns(gt, method, fit=fit)
        raters = fit.raters
        per = self.per_annotator()
        if C.ANNOTATOR in per.columns:
            raters = raters.merge(per, on=C.ANNOTATOR, how="left")
        names: dict[float, str] = {}
        for o in self.scale.options:
            if o.code is not None and not self.scale.is_no_decision(o.value):
                names.setdefault(float(o.code), str(Scale.display(o.value)))
        conf = fit.confusion
        if len(conf):
            conf = conf.assign(
                true=conf["true"].map(lambda c: names.get(float(c), c)),
                given=conf["given"].map(lambda c: names.get(float(c), c)),
            )
        return {
            "method": method,
            "raters": raters,
            "confusion": conf,
            "differs": differs,
            "reason": None,
            "fit": fit,
        }

    # ------------------------------------------------------------------ binary (AAAI 2020)
    def audit_table(self) -> pd.DataFrame:
        """AAAI 2020 Table 3 layout, one row per group plus the ``overall`` row: ``group``,
        the group columns, ``items``, ``no_majority`` (share of rated pairs without a
        majority, the paper's NaN row), ``alpha``, ``accuracy``, ``recall``, ``precision``
        (and ``*_ci`` intervals when bootstrapped), ``tp``, ``fp``, ``fn``, ``tn``."""
        if self.audit is None:
            return pd.DataFrame()
        by = list(self.audit.by)
        g = self.audit.by_group.copy() if by else self.audit.by_group.iloc[0:0].copy()
        g.insert(
            0,
            "group",
            [" / ".join(str(v) for v in r) if by else "all" for r in g[by].itertuples(index=False)]
            if by
            else "all",
        )
        over = {"group": "overall", **{c: "" for c in by}, **self.audit.overall}
        rows = pd.concat([g, pd.DataFrame([over])], ignore_index=True)
        cols = [
            "group",
            *by,
            "n_items",
            "nan_fraction",
            "krippendorff_alpha",
            "accuracy",
            "recall",
            "precision",
        ]
        cis = [
            f"{m}_ci"
            for m in ("krippendorff_alpha", "accuracy", "recall", "precision")
            if f"{m}_ci" in rows.columns
        ]
        out = rows[cols + cis + ["tp", "fp", "fn", "tn"]].rename(
            columns={
                "n_items": "items",
                "nan_fraction": "no_majority",
                "krippendorff_alpha": "alpha",
                "krippendorff_alpha_ci": "alpha_ci",
            }
        )
        for c in [c for c in out.columns if c.endswith("_ci")]:
            out[c.replace("_ci", "_ci_low")] = [
                v[0] if isinstance(v, (list, tuple)) else np.nan for v in out[c]
            ]
            out[c.replace("_ci", "_ci_high")] = [
                v[1] if isinstance(v, (list, tuple)) else np.nan for v in out[c]
            ]
            out = out.drop(columns=c)
        return out

    def confusion(self) -> pd.DataFrame:
        """Automatic label (rows) vs majority (columns: similar, not similar, no majority),
        over rated pairs with an automatic label."""
        if self.audit is None:
            return pd.DataFrame()
        it = self.audit.items
        rated = it["n_ratings"].to_numpy() > 0
        lab = it["auto_label"].to_numpy(dtype=float)
        tru = it["truth"].to_numpy(dtype=float)
        rows = {}
        for name, lv in (("auto: similar (1)", 1.0), ("auto: not similar (0)", 0.0)):
            sel = rated & (lab == lv)
            rows[name] = {
                "majority: similar": int((sel & (tru == 1)).sum()),
                "majority: not similar": int((sel & (tru == 0)).sum()),
                "no majority": int((sel & np.isnan(tru)).sum()),
            }
        return pd.DataFrame(rows).T

    # ------------------------------------------------------------------ graded (EHR-Rel)
    def pairwise_alpha(self) -> pd.DataFrame:
        """EHR-Rel Table 2 upper triangle as a symmetric annotator x annotator matrix of
        pairwise Krippendorff's alpha (diagonal NaN)."""
        pw = self.agreement.pairwise
        names = (
            sorted(set(pw["annotator_a"]) | set(pw["annotator_b"]))
            if len(pw)
            else list(self.agreement.per_annotator[C.ANNOTATOR])
        )
        m = pd.DataFrame(np.nan, index=names, columns=names, dtype=float)
        for a, b, v in zip(pw["annotator_a"], pw["annotator_b"], pw["krippendorff_alpha"]):
            m.loc[a, b] = m.loc[b, a] = v
        m.index.name = C.ANNOTATOR
        return m

    def pairwise_table(self) -> pd.DataFrame:
        """Every pair of annotators: items both rated, alpha, kappa, quadratic kappa, rho."""
        return self.agreement.pairwise.copy()

    def per_annotator(self) -> pd.DataFrame:
        """EHR-Rel Table 2 right part: per annotator the mean alpha, mean quadratic kappa
        and mean Spearman rho over their pairings (plus IAA-1, IAA-2)."""
        return self.agreement.per_annotator.rename(
            columns={
                "krippendorff_alpha": "mean_alpha",
                "cohen_kappa": "mean_kappa",
                "cohen_kappa_quadratic": "mean_kappa_quadratic",
                "spearman_rho": "mean_rho",
            }
        )

    def summary(self) -> pd.DataFrame:
        """EHR-Rel Table 3 layout (one row): items, annotators, ratings, level, then the
        coefficients of :data:`medsim_annot.stats.report.SUMMARY_FIGURES` (alpha at the
        scale's level, ICC(C,1), ICC(C,k), Kendall's W, mean pairwise rho, human upper bound
        inclusive and exclusive), one column each."""
        return pd.DataFrame([self.agreement.summary()])

    def coefficients(self) -> pd.DataFrame:
        """The chance-corrected coefficients (Gwet's AC1 and AC2, Fleiss' kappa,
        Brennan-Prediger, Conger's kappa) with standard error and 95% interval, one row each
        (:mod:`medsim_annot.stats.chance_corrected`)."""
        return self.agreement.coefficients.copy()

    def agreement_notes(self) -> list[str]:
        """Plain sentences that help read the agreement figures (the kappa paradox)."""
        return list(self.agreement.notes)

    def mean_scores(self) -> pd.Series:
        """Mean rating of every rated pair (EHR-Rel Figure 1); empty for non-numeric scales."""
        t = self.gold.table
        if "mean" not in t.columns:
            return pd.Series(dtype=float, name="mean")
        s = pd.Series(t["mean"].to_numpy(dtype=float), index=t[C.PAIR_ID], name="mean")
        return s[t["n_ratings"].to_numpy() > 0].dropna()

    # ------------------------------------------------------------------ rater quality
    def quality_table(self) -> pd.DataFrame:
        """Per annotator: ratings, don't-know share, IAA-1, outlier flag, duplicates and
        their exact agreement, longest run of identical ratings, and ``reading`` — a
        plain-language sentence naming the annotator."""
        per = self.quality.per_annotator.copy()
        per["reading"] = [
            reading(r, per, self.quality)
            + (" " + t(IMPORTED_NOTE) if r[C.ANNOTATOR] in self.imported else "")
            for r in per.to_dict(orient="records")
        ]
        if len(self.rater_checks):
            shown = [c for c in CHECK_SHOWN if c in self.rater_checks.columns]
            per = per.merge(self.rater_checks[shown], on=C.ANNOTATOR, how="left")
        return per

    def imported_note(self) -> str:
        """What the page and the report say when some ratings were imported ("" when none)."""
        if not self.imported:
            return ""
        return t(
            "Order- and time-based checks (straight-lining, rushed answers, pace) are skipped "
            "for imported ratings ({names}): their order is the file's and their times are "
            "the import's.",
            names=", ".join(self.imported),
        )

    def pace_table(self) -> pd.DataFrame:
        """Per doctor: check pairs answered and correct (with the Wilson interval and the
        warning), rushed answers, median seconds per pair and pairs per hour."""
        return self.rater_checks.copy()

    def runs(self) -> pd.DataFrame:
        """Straight-lining runs (10 or more identical consecutive ratings)."""
        return self.quality.runs.copy()

    # ------------------------------------------------------------------ disagreement explorer
    def disagreements(self, kinds=None, groups: dict | None = None) -> pd.DataFrame:
        """Pairs the doctors disagree on: no majority, all ratings different, automatic
        label ≠ majority (*kinds*: names of :data:`DISAGREEMENT_KINDS`; default all), each
        with the terms, every annotator's rating and comment; *groups* keeps pairs whose
        group columns equal the given values (e.g. ``{"dataset": "SAME-AS"}``)."""
        kinds = list(DISAGREEMENT_KINDS) if kinds is None else list(kinds)
        unknown = [k for k in kinds if k not in DISAGREEMENT_KINDS]
        if unknown:
            raise ValueError(
                f"unknown disagreement kind(s) {unknown}; use {list(DISAGREEMENT_KINDS)}"
            )
        t = self.gold.table
        sel = np.zeros(len(t), dtype=bool)
        why: list[list[str]] = [[] for _ in range(len(t))]
        for k in kinds:
            flag = t[DISAGREEMENT_KINDS[k]].to_numpy(dtype=bool)
            sel |= flag
            for i in np.flatnonzero(flag):
                why[i].append(k)
        for col, value in (groups or {}).items():
            if col in t.columns and value not in (None, "", "(all)"):
                sel &= (t[col].astype(str) == str(value)).to_numpy()
        idx = np.flatnonzero(sel)
        raters = [rater_column(a) for a in self.gold.annotators]
        base = [
            C.PAIR_ID,
            C.TERM_1,
            C.TERM_2,
            *[c for c in (*C.GROUP_COLUMNS, C.AUTO_LABEL) if c in t.columns],
        ]
        out = t.iloc[idx][base + raters + ["majority"]].reset_index(drop=True)
        out.insert(3, "why", ["; ".join(why[i]) for i in idx])
        cur = self.gold.current
        if C.COMMENT in cur.columns and len(cur):
            com = cur[cur[C.COMMENT].astype(str).str.strip() != ""]
            for a in self.gold.annotators:
                mine = com[com[C.ANNOTATOR] == a].drop_duplicates(C.PAIR_ID, keep="last")
                m = dict(zip(mine[C.PAIR_ID].astype(str), mine[C.COMMENT].astype(str)))
                out[f"comment_{a}"] = [m.get(p, "") for p in out[C.PAIR_ID].astype(str)]
        return out

    def group_options(self) -> dict[str, list[str]]:
        """The values of every group column (for the explorer's filter)."""
        t = self.gold.table
        return {
            c: sorted(v for v in t[c].astype(str).unique() if v)
            for c in C.GROUP_COLUMNS
            if c in t.columns
        }

    # ------------------------------------------------------------------ headline
    def headline(self, planned: Mapping[str, int] | None = None) -> dict:
        """The few numbers a QA lead reads first.

        ``rated_pairs``: pairs with at least one rating; ``two_rated_pairs``: with at least two
        (where a majority can first mean more than one doctor); with *planned* (``pair_id`` to the
        annotators whose queue holds it, :func:`~medsim_annot.services.dashboard.store.planned_ratings`;
        read fresh, never cached) also ``complete_pairs``: pairs rated by all of them (a pair
        without a planned slot counts once it has a rating).

        ``accuracy`` (binary scales with automatic labels) is computed on
        ``accuracy_pairs``: the pairs with at least :data:`ACCURACY_MIN_DECISIVE` decisive
        ratings and a majority — a "majority" of one doctor says little about an automatic
        label. ``accuracy_any_majority`` is the audit's, over every pair with a majority.
        """
        t = self.gold.table
        rated = int((t["n_ratings"] > 0).sum())
        out = {
            "study": self.study,
            "scale": self.scale.name,
            "pairs": int(len(t)),
            "rated_pairs": rated,
            "two_rated_pairs": int((t["n_ratings"] >= 2).sum()),
            "ratings": int(self.agreement.n_ratings),
            "annotators": int(self.agreement.n_annotators),
            "krippendorff_alpha": float(self.agreement.krippendorff_alpha),
            "no_majority": int(t["no_majority"].sum()),
        }
        if planned is not None:
            want = t[C.PAIR_ID].astype(str).map(dict(planned)).fillna(0).clip(lower=1).to_numpy()
            out["complete_pairs"] = int((t["n_ratings"].to_numpy() >= want).sum())
        if self.audit is not None:
            enough = t["n_decisive"].to_numpy() >= ACCURACY_MIN_DECISIVE
            right = int((t["verified"].to_numpy(dtype=bool) & enough).sum())
            wrong = int((t["auto_label_disagrees"].to_numpy(dtype=bool) & enough).sum())
            out["accuracy"] = right / (right + wrong) if right + wrong else float("nan")
            out["accuracy_pairs"] = right + wrong
            out["accuracy_any_majority"] = float(self.audit.overall["accuracy"])
        return out
