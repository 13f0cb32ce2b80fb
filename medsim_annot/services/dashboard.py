"""The QA dashboard's figures and tables, computed by the agreement services (never by
statistics of its own), so ``medsim agreement``/``medsim audit``, the dashboard page and
the HTML report always show the same numbers.

Entry points:

* :func:`completion` — annotators' progress (never cached: it is a cheap query);
* :func:`study_dashboard` — every table of a study, cached per (database, study,
  ratings version, options): a new rating changes :func:`ratings_version` and so the key,
  which makes the result never stale after a save;
* :func:`compute_dashboard` — the same from frames (no database), for tests and benchmarks;
* :func:`html_report` — the whole dashboard as one self-contained HTML file.

Tables follow the published layouts: Schulz & Juric (AAAI 2020) Table 3 for binary studies
with automatic labels, Schulz et al. (COLING 2020) Tables 2 and 3 and Figure 1 for graded
studies.
"""

from __future__ import annotations

import datetime as dt
import html as _html
import threading
from collections import OrderedDict
from collections.abc import Collection
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

import medsim_annot
from data_schemas import columns as C
from data_schemas.pairs import group_columns
from data_schemas.scales import Scale
from medsim_annot.services import agreement as agreement_svc
from medsim_annot.services import annotators as annotators_svc
from medsim_annot.services import studies as studies_svc
from medsim_annot.services.gold import FLAGS, GoldTable, code_ratings, gold_table, rater_column
from medsim_annot.stats import AgreementReport, AuditResult, RaterQuality
from medsim_annot.storage import Engine, get_engine

#: Disagreement kinds of the explorer and the flag column each one reads.
DISAGREEMENT_KINDS = {
    "no majority": "no_majority",
    "all different": "all_different",
    "auto-label ≠ majority": "auto_label_disagrees",
}
#: Thresholds of the plain-language rater readings.
DONT_KNOW_CONCERN = 0.10
CONSISTENCY_CONCERN = 0.80
CACHE_SIZE = 8
BOOTSTRAP_SEED = 20200207


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
    # Fitted models per method, kept with the dashboard (and so in the one dashboard cache).
    _models: dict[str, dict] = field(default_factory=dict, repr=False, compare=False)

    # ------------------------------------------------------------------ model of the doctors
    def model_quality(self, method: str = "dawid-skene") -> dict:
        """Each doctor's estimated competence (and, for Dawid–Skene, confusion matrix) from a
        crowd-kit model of the current ratings, next to the agreement-based figures, and how
        many pairs the model labels differently from the majority (issue 15 §3).

        Returns ``{"method", "raters", "confusion", "differs", "reason"}``; on a scale that
        is not nominal, ``reason`` says why and the frames are empty. Fitted once per method
        and dashboard (a cached dashboard keeps its fits)."""
        if method not in self._models:
            self._models[method] = self._model_quality(method)
        return self._models[method]

    def _model_quality(self, method: str) -> dict:
        from medsim_annot.services.gold import add_model_columns
        from medsim_annot.stats.aggregate import check_method, model_gold

        check_method(method)
        empty = {"method": method, "raters": pd.DataFrame(), "confusion": pd.DataFrame()}
        if self.scale.level != "nominal":
            return {
                **empty,
                "differs": 0,
                "reason": f"models need a nominal scale, not {self.scale.level}",
            }
        if self.gold.ratings.empty:
            return {**empty, "differs": 0, "reason": "no ratings yet"}
        fit = model_gold(self.gold.ratings, method)
        gt = GoldTable(
            self.gold.table.copy(),
            self.gold.ratings,
            self.gold.current,
            self.scale,
            self.gold.annotators,
        )
        differs = add_model_columns(gt, method)
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
        per["reading"] = [_reading(r, per, self.quality) for r in per.to_dict(orient="records")]
        return per

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
    def headline(self) -> dict:
        """The few numbers a QA lead reads first."""
        t = self.gold.table
        rated = int((t["n_ratings"] > 0).sum())
        out = {
            "study": self.study,
            "scale": self.scale.name,
            "pairs": int(len(t)),
            "rated_pairs": rated,
            "ratings": int(self.agreement.n_ratings),
            "annotators": int(self.agreement.n_annotators),
            "krippendorff_alpha": float(self.agreement.krippendorff_alpha),
            "no_majority": int(t["no_majority"].sum()),
        }
        if self.audit is not None:
            out["accuracy"] = float(self.audit.overall["accuracy"])
        return out


def _fmt(x, digits=2) -> str:
    return "n/a" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.{digits}f}"


def _reading(r: dict, per: pd.DataFrame, q: RaterQuality) -> str:
    """One plain-language sentence (or a few) about annotator ``r["annotator"]``."""
    name = r[C.ANNOTATOR]
    notes = []
    share = r.get("dont_know_share", np.nan)
    others = per.loc[per[C.ANNOTATOR] != name, "dont_know_share"]
    if share is not None and not np.isnan(share) and share > DONT_KNOW_CONCERN:
        notes.append(
            f'{name} answered "don\'t know" (or no decision) for {share:.0%} of their '
            f"pairs (others: {others.mean():.0%} on average)."
            if len(others)
            else f'{name} answered "don\'t know" for {share:.0%} of their pairs.'
        )
    if r.get("outlier"):
        mu = per.loc[per[C.ANNOTATOR] != name, "iaa_1"].mean()
        notes.append(
            f"{name} agrees clearly less with the others than they do with each other "
            f"(IAA-1 {_fmt(r.get('iaa_1'))} vs {_fmt(mu)}): worth a word about the "
            "guideline."
        )
    run = int(r.get("longest_run") or 0)
    if run:
        rr = q.runs[q.runs[C.ANNOTATOR] == name].sort_values("length", ascending=False).iloc[0]
        notes.append(
            f"{name} gave the same rating ('{rr[C.RATING]}') to {run} pairs in a row "
            f"(from pair {rr['first_pair_id']}): check for straight-lining."
        )
    nd = int(r.get("n_duplicates") or 0)
    if nd:
        agree = r.get("exact_agreement")
        if agree is not None and not np.isnan(agree) and agree < CONSISTENCY_CONCERN:
            notes.append(
                f"{name} rated {nd} pairs twice and gave the same answer only "
                f"{agree:.0%} of the time."
            )
        else:
            notes.append(
                f"{name} rated {nd} pairs twice and was consistent "
                f"({_fmt(agree, 0) if agree is None else f'{agree:.0%}'} identical)."
            )
    if not notes or (nd and len(notes) == 1 and "consistent" in notes[0]):
        notes.insert(0, f"{name}: no concerns.")
    return " ".join(notes)


def compute_dashboard(
    pairs: pd.DataFrame,
    current: pd.DataFrame,
    scale: Scale,
    *,
    history: pd.DataFrame | None = None,
    study: str = "",
    version: tuple[int, int] = (0, 0),
    bootstrap: int = 0,
    majority: str = "strict",
    seed: int = BOOTSTRAP_SEED,
    agreement_pairs: Collection[str] | None = None,
) -> Dashboard:
    """Every dashboard table from frames, by calling the agreement services.

    Parameters
    ----------
    pairs : DataFrame
        The study's pairs (file order).
    current : DataFrame
        Current ratings (``pair_id``, ``annotator``, ``rating``, optional ``rated_at``,
        ``unclear``, ``comment``), main slots only.
    scale : Scale
    history : DataFrame, optional
        Current ratings including duplicate slots (for intra-rater consistency and runs).
    bootstrap : int
        Bootstrap resamples for the audit's intervals (0 = none); seeded for reproducibility.
    majority : {"strict", "decisive"}
    agreement_pairs : collection of str, optional
        Compute α, κ, ICC and W on these pairs only (a 2 + 1 design's calibration pairs); the
        audit and the gold table still use every pair's majority.
    """
    gt = gold_table(pairs, current, scale, majority=majority)
    ratings = gt.ratings
    reasons: dict[str, str] = {}
    report, basis = agreement_svc.design_agreement(ratings, scale, agreement_pairs=agreement_pairs)
    binary = scale.positive is not None and scale.negative is not None
    audit = None
    if binary and C.AUTO_LABEL in pairs.columns and pairs[C.AUTO_LABEL].notna().any():
        audit = agreement_svc.audit_report(
            pairs,
            ratings,
            scale,
            by=group_columns(pairs),
            majority=majority,
            bootstrap=bootstrap,
            seed=seed,
        )
    elif binary:
        reasons["audit"] = "the pairs have no automatic labels"
    else:
        reasons["audit"] = f"the {scale.name} scale has no positive/negative values"
    hist = ratings
    if history is not None and len(history):
        hist = history.sort_values([C.PAIR_ID, C.ANNOTATOR], kind="stable")
        if C.VALUE not in hist.columns:
            hist = code_ratings(hist, scale)
    if C.RATED_AT in hist.columns:
        if isinstance(hist[C.RATED_AT].dtype, pd.DatetimeTZDtype):
            # Naive UTC: the engine orders by time, and naive datetime64 avoids an object
            # array of Timestamps (runs' start/end are UTC).
            hist = hist.assign(
                **{C.RATED_AT: hist[C.RATED_AT].dt.tz_convert("UTC").dt.tz_localize(None)}
            )
    # IAA-1 per annotator is in the agreement report already: the outlier check reuses it.
    quality = agreement_svc.rater_quality_report(
        ratings, scale, history=hist, iaa=report.per_annotator
    )
    return Dashboard(
        study,
        scale,
        "binary" if binary else "graded",
        (int(version[0]), int(version[1])),
        report,
        audit,
        quality,
        gt,
        bootstrap,
        reasons,
        agreement_basis=basis,
    )


# ---------------------------------------------------------------------- store + cache
_CACHE: OrderedDict = OrderedDict()
_PAIRS: OrderedDict = OrderedDict()
_READERS: OrderedDict = OrderedDict()
_LOCK = threading.Lock()
CACHE_STATS = {"hits": 0, "misses": 0}


def clear_cache() -> None:
    """Forget every cached dashboard."""
    with _LOCK:
        _CACHE.clear()
        _PAIRS.clear()
        _READERS.clear()


def study_pairs(study: str, *, engine: Engine | None = None) -> pd.DataFrame:
    """The pairs of *study* (:func:`medsim_annot.services.studies.pairs_frame`)."""
    return studies_svc.pairs_frame(study, engine=engine)


def _pairs(study: str, info, url: str, engine: Engine) -> pd.DataFrame:
    """The study's pairs, kept per (database, study id, creation time): pairs are written
    once, when the study is created or imported, so a new rating re-reads only ratings."""
    key = (url, info.id, str(info.created_at))
    with _LOCK:
        if key in _PAIRS:
            _PAIRS.move_to_end(key)
            return _PAIRS[key]
    pairs = study_pairs(study, engine=engine)
    with _LOCK:
        _PAIRS[key] = pairs
        while len(_PAIRS) > 4:
            _PAIRS.popitem(last=False)
    return pairs


def _reader(info, url: str, engine: Engine) -> studies_svc.CurrentRatingsReader:
    """The study's :class:`~medsim_annot.services.studies.CurrentRatingsReader`, kept per
    (database, study id, creation time) like the pairs: after a new rating only the ratings
    saved since are read."""
    key = (url, info.id, str(info.created_at))
    with _LOCK:
        if key not in _READERS:
            _READERS[key] = studies_svc.CurrentRatingsReader(info.id, info.scale, engine)
        _READERS.move_to_end(key)
        while len(_READERS) > 4:
            _READERS.popitem(last=False)
        return _READERS[key]


def completion(study: str, *, engine: Engine | None = None) -> pd.DataFrame:
    """Progress per annotator: ``annotator``, ``done``, ``total``, ``share`` (0..1)."""
    a = annotators_svc.annotators(study, engine=engine)
    out = a[[C.ANNOTATOR, "active", "done", "total"]].copy()
    out["share"] = np.where(
        out["total"] > 0, out["done"] / out["total"].where(out["total"] > 0, 1), 0.0
    )
    return out


def ratings_version(study: str, *, engine: Engine | None = None) -> tuple[int, int]:
    """The study's ratings version (count, highest rating id): the cache key."""
    return studies_svc.ratings_version(study, engine=engine)


def load_current(study: str, *, engine: Engine | None = None) -> pd.DataFrame:
    """Current ratings of *study* including duplicate slots
    (:func:`medsim_annot.services.studies.current_ratings`)."""
    return studies_svc.current_ratings(study, include_duplicates=True, engine=engine)


def study_dashboard(
    study: str,
    *,
    bootstrap: int = 0,
    majority: str = "strict",
    engine: Engine | None = None,
    use_cache: bool = True,
) -> Dashboard:
    """The dashboard of a stored study, cached per (database URL, study, ratings version,
    bootstrap, majority); at most :data:`CACHE_SIZE` entries are kept (least recently used
    out). A saved rating changes the version, so a cached result is never stale.

    With the cache, the pairs are kept per study (they never change) and the current
    ratings by a :class:`~medsim_annot.services.studies.CurrentRatingsReader`, which after a
    new rating reads only the ratings saved since; ``use_cache=False`` reads everything."""
    engine = engine or get_engine()
    version = ratings_version(study, engine=engine)
    key = (
        engine.url.render_as_string(hide_password=True),
        study,
        version,
        int(bootstrap),
        majority,
    )
    if use_cache:
        with _LOCK:
            if key in _CACHE:
                _CACHE.move_to_end(key)
                CACHE_STATS["hits"] += 1
                return _CACHE[key]
    CACHE_STATS["misses"] += 1
    info = studies_svc.get_study(study, engine=engine)
    if use_cache:
        pairs = _pairs(study, info, key[0], engine)
        history = _reader(info, key[0], engine).read(version)
    else:
        pairs = study_pairs(study, engine=engine)
        history = load_current(study, engine=engine)
    current = (
        history[history["slot"] != "duplicate"].reset_index(drop=True)
        if "slot" in history.columns
        else history
    )
    dash = compute_dashboard(
        pairs,
        current,
        info.scale,
        history=history,
        study=study,
        version=version,
        bootstrap=bootstrap,
        majority=majority,
        agreement_pairs=agreement_svc.design_agreement_pairs(info.config, current),
    )
    notes = list(info.config.get("notes", ()))
    if info.config.get("tiebreak") and not dash.agreement_basis:
        notes.append(agreement_svc.TIEBREAK_WITHOUT_CALIBRATION)
    dash.notes = tuple(notes)
    if use_cache:
        with _LOCK:
            _CACHE[key] = dash
            _CACHE.move_to_end(key)
            while len(_CACHE) > CACHE_SIZE:
                _CACHE.popitem(last=False)
    return dash


# ---------------------------------------------------------------------- HTML report
def _table_html(frame: pd.DataFrame, digits: int = 2) -> str:
    if frame is None or frame.empty:
        return "<p><em>nothing to show</em></p>"
    return frame.to_html(
        index=False,
        escape=True,
        na_rep="–",
        float_format=lambda x: f"{x:.{digits}f}",
        border=0,
        classes="tbl",
    )


def html_report(
    study: str, *, bootstrap: int = 0, engine: Engine | None = None, now: dt.datetime | None = None
) -> str:
    """The study's QA report as one self-contained HTML page (plotly.js inline, no
    internet needed): headline, completion, the published tables, the charts, rater
    quality and the disagreement list."""
    from medsim_annot.services import plots

    engine = engine or get_engine()
    dash = study_dashboard(study, bootstrap=bootstrap, engine=engine)
    comp = completion(study, engine=engine)
    when = (now or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%d %H:%M UTC")
    figs = []
    parts = [
        f"<h1>QA report: {_html.escape(study)}</h1>",
        f"<p>Scale <b>{_html.escape(dash.scale.name)}</b> ({dash.scale.level}); ratings "
        f"version {dash.version[0]} / {dash.version[1]}; medsim-annot "
        f"{medsim_annot.__version__}; generated {when}.</p>",
    ]
    head = dash.headline()
    parts.append(_table_html(pd.DataFrame([head])))
    parts.append("<h2>Completion</h2>")
    parts.append(_table_html(comp))
    figs.append(("Completion per annotator", plots.completion_figure(comp)))
    if dash.audit is not None:
        parts.append("<h2>Automatic labels vs majority (AAAI 2020 Table 3 layout)</h2>")
        parts.append(_table_html(dash.audit_table()))
        parts.append("<h3>Confusion matrix</h3>")
        parts.append(dash.confusion().to_html(escape=True, border=0, classes="tbl"))
        figs.append(("Audit per group", plots.audit_figure(dash.audit_table())))
        figs.append(("Automatic label vs majority", plots.confusion_figure(dash.confusion())))
    from medsim_annot.services.stopping import audit_status

    seq = audit_status(study, engine=engine)
    if seq is not None:
        parts.append("<h2>Sequential audit</h2>")
        parts.append(
            f"<p>Stopping {'on' if seq.enabled else 'off'}: a group stops being served when the "
            f"half-width of its accuracy interval is at most {seq.target:g}, after at least "
            f"{seq.min_positives} positive and {seq.min_negatives} negative verdicts. "
            f"Intervals: {_html.escape(seq.method)}.</p>"
        )
        parts.append(_table_html(seq.groups, digits=3))
        figs.append(
            ("Sequential audit per group", plots.sequential_audit_figure(seq.groups, seq.target))
        )
    parts.append("<h2>Agreement (EHR-Rel Table 3 layout)</h2>")
    parts.append(_table_html(dash.summary()))
    parts.append("<h2>Pairwise agreement (EHR-Rel Table 2 layout)</h2>")
    parts.append(
        dash.pairwise_alpha().to_html(
            escape=True, border=0, classes="tbl", na_rep="–", float_format=lambda x: f"{x:.2f}"
        )
    )
    parts.append(_table_html(dash.per_annotator()))
    figs.append(("Pairwise Krippendorff's alpha", plots.pairwise_heatmap(dash.pairwise_alpha())))
    ms = dash.mean_scores()
    if len(ms):
        figs.append(("Distribution of mean scores", plots.mean_score_histogram(ms, dash.scale)))
    parts.append("<h2>Rater quality</h2>")
    parts.append(_table_html(dash.quality_table()))
    parts.append("<h2>Disagreements</h2>")
    parts.append(_table_html(dash.disagreements()))
    fig_html = []
    for i, (title, fig) in enumerate(figs):
        fig_html.append(f"<h2>{_html.escape(title)}</h2>")
        fig_html.append(
            fig.to_html(
                full_html=False,
                include_plotlyjs="inline" if i == 0 else False,
                default_width="100%",
                default_height="420px",
            )
        )
    style = (
        "body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px}"
        ".tbl{border-collapse:collapse;font-size:13px}.tbl td,.tbl th{padding:3px 8px;"
        "border-bottom:1px solid #ddd;text-align:right}"
    )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>QA report {_html.escape(study)}</title><style>{style}</style></head><body>"
        + "\n".join(parts[:3])
        + "\n".join(fig_html)
        + "\n".join(parts[3:])
        + "</body></html>"
    )


__all__ = [
    "DISAGREEMENT_KINDS",
    "FLAGS",
    "Dashboard",
    "clear_cache",
    "completion",
    "compute_dashboard",
    "html_report",
    "ratings_version",
    "study_dashboard",
]
