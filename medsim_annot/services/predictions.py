"""Use cases of predictions (any model score per pair): the prediction-powered audit, the
model as a blinded extra rater, and the plan of a study with predictions.

``medsim audit --predictions``, ``medsim agreement --model``, ``medsim study plan
--predictions`` and the dashboard call these functions, so they report the same numbers.
Predictions never reach an annotator: nothing here is served by the annotation pages or the
rating endpoint.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from data_schemas import columns as C
from data_schemas.ehr_rel import split_ehr_rel
from data_schemas.errors import InputError, Problem
from data_schemas.options import (
    AUDIT_METHODS,
    COST_PER_RATING,
    EPSILON,
    MAJORITY_RULES,
    SAMPLINGS,
    TARGET_CI,
)
from data_schemas.ratings import to_ratings_frame
from data_schemas.scales import Scale
from medsim_annot.embeddings.installed import model_packages
from medsim_annot.i18n import N_, fmt_decimal, fmt_int, t
from medsim_annot.io import read_table
from medsim_annot.services import studies as studies_svc
from medsim_annot.services.agreement import load_ratings_file
from medsim_annot.services.design import plan_budget
from medsim_annot.services.scoring import read_scores, score_pairs
from medsim_annot.services.study_handle import Study
from medsim_annot.stats import audit_labels
from medsim_annot.stats.active import plan_labels, sampling_probabilities, uncertainty
from medsim_annot.stats.alpha import krippendorff_alpha
from medsim_annot.stats.ppi import (
    PPIAudit,
    calibrate_scores,
    labels_needed,
    pilot_correlation,
    ppi_audit,
    ppi_mean_interval,
)
from medsim_annot.stats.rater_model import AltTestResult, ModelRater, alt_test, model_as_rater

#: Default alt-test margin: the authors' value for expert annotators (doctors).
DEFAULT_EPSILON = 0.2
#: Below this Krippendorff's α among the doctors the default margin is too generous: a model
#: need only be "almost as good" as doctors who disagree with one another.
LOW_AGREEMENT_ALPHA = 0.5
METHODS = AUDIT_METHODS.values


def load_predictions(
    path: str | os.PathLike,
    *,
    score_column: str | None = None,
) -> pd.Series:
    """A scores file (``medsim score`` output or any file with ``pair_id`` and numeric
    columns) as one Series ``pair_id -> score``.

    *score_column* picks the column; without it the file must have exactly one score
    column. Raises :class:`InputError` naming the file (and row/column) otherwise."""
    frame = read_scores(path)
    cols = [c for c in frame.columns if c != C.PAIR_ID]
    if score_column is None:
        if len(cols) != 1:
            raise InputError.single(
                f"has {len(cols)} score columns ({', '.join(map(str, cols))}): "
                "choose one as the score column (score_column)",
                file=str(path),
            )
        score_column = str(cols[0])
    elif score_column not in cols:
        raise InputError.single(
            f"has no score column '{score_column}' (columns: {', '.join(map(str, cols))})",
            file=str(path),
            column=score_column,
        )
    return pd.Series(
        frame[score_column].to_numpy(dtype=np.float64),
        index=frame[C.PAIR_ID].astype(str).to_numpy(),
        name=score_column,
    )


def align_predictions(
    predictions: pd.Series, pair_ids, *, file: str | None = None, column: str | None = None
) -> np.ndarray:
    """The prediction of every pair of *pair_ids*, in order; every pair needs a finite one
    (the prediction-powered interval uses the predictions of all pairs)."""
    ids = pd.Index(pd.Series(pair_ids).astype(str))
    got = predictions.reindex(ids)
    missing = ids[got.isna().to_numpy() | ~np.isfinite(got.to_numpy(dtype=np.float64))]
    if len(missing):
        shown = ", ".join(map(str, missing[:5])) + (" ..." if len(missing) > 5 else "")
        raise InputError(
            [
                Problem(
                    f"has no score for {len(missing)} of the {len(ids)} pairs ({shown}); "
                    "the prediction-powered interval needs a score for every pair",
                    column=column,
                )
            ],
            file,
        )
    return got.to_numpy(dtype=np.float64)


def prediction_audit_report(
    pairs: pd.DataFrame,
    ratings: pd.DataFrame,
    scale: Scale,
    predictions: pd.Series,
    *,
    by: list[str] | None = None,
    majority: str = "strict",
    method: str = "ppi",
    confidence: float = 0.95,
    target_ci: float | None = None,
    seed: int = 0,
    file: str | None = None,
) -> PPIAudit:
    """``medsim audit --predictions``: per group, accuracy and precision of the automatic
    labels (binary scales) or the mean rating (graded scales) with the PPI++ interval next
    to the classical one, λ and the effective number of labelled pairs
    (:func:`medsim_annot.stats.ppi.ppi_audit`); with *target_ci*, whether each group is
    within ±target_ci at the sequential rule's level and how many more pairs it needs. *file*
    names the scores file in messages."""
    if target_ci is not None:
        TARGET_CI.check(target_ci)
    method = AUDIT_METHODS.check(method)
    majority = MAJORITY_RULES.check(majority)
    binary = scale.positive is not None and scale.negative is not None
    if binary and C.AUTO_LABEL not in pairs.columns:
        raise InputError.single(
            "required column is missing (the audit compares automatic labels with the "
            "majority vote)",
            column=C.AUTO_LABEL,
        )
    if by is not None:
        missing = [c for c in by if c not in pairs.columns]
        if missing:
            raise InputError(
                [Problem(f"group column '{c}' is not in the pairs file", column=c) for c in missing]
            )
    scores = align_predictions(
        predictions, pairs[C.PAIR_ID], file=file, column=str(predictions.name or "")
    )
    return ppi_audit(
        pairs,
        ratings,
        scale,
        scores,
        by=by,
        rule=majority,
        method=method,  # type: ignore[arg-type]
        confidence=confidence,
        target=target_ci,
        seed=seed,
    )


@dataclass(frozen=True)
class ModelRaterReport:
    """The model as a blinded extra rater: its Spearman figures beside the doctors
    (``rater``), the alternative-annotator test (``alt_test``) and why a figure is missing
    (``reasons``). :meth:`to_dict` is the ``model`` entry of ``medsim agreement --json``."""

    rater: ModelRater
    alt_test: AltTestResult
    reasons: dict[str, str]

    def to_dict(self) -> dict:
        return {
            **self.rater.to_dict(),
            "alt_test": self.alt_test.to_dict(),
            "reasons": dict(self.reasons),
        }


@dataclass(frozen=True)
class StudyPredictions:
    """The dashboard's predictions panel: ``audit`` (the :func:`prediction_audit_table`, or
    None when there is nothing to audit) and its ``audit_notes``; ``model`` (the
    :func:`model_rater_table`, or None with fewer than two doctors), ``model_sentence``
    (:func:`alt_test_sentence`) and ``model_notes``."""

    audit: pd.DataFrame | None = None
    audit_notes: list[str] = field(default_factory=list)
    model: pd.DataFrame | None = None
    model_sentence: str | None = None
    model_notes: list[str] = field(default_factory=list)


def model_rater_report(
    ratings: pd.DataFrame,
    scale: Scale,
    predictions: pd.Series,
    *,
    epsilon: float = DEFAULT_EPSILON,
    seed: int = 0,
) -> ModelRaterReport:
    """``medsim agreement --model`` and the dashboard: the model's scores as a blinded extra
    rater (its :meth:`~ModelRaterReport.to_dict` is ``{"model_rho", "model_loo_rho",
    "model_rank", "n_items", "doctors": [...], "alt_test": {...}, "reasons": {...}}``).
    Spearman figures use the raw score. For the
    alt-test the score becomes an annotation on the scale by a cross-fitted calibration on
    the doctors (each pair's annotation comes from a model fitted without that pair's
    ratings): P(same) >= 0.5 on a binary scale (scored by accuracy), the expected mean rating
    on a graded one (scored by minus the RMSE)."""
    EPSILON.check(epsilon)
    rater = model_as_rater(ratings, predictions)
    r = ratings.dropna(subset=[C.VALUE])
    ids = pd.Index(sorted(r[C.PAIR_ID].astype(str).unique()))
    score = predictions.reindex(ids)
    keep = score.notna().to_numpy()
    ids, x = ids[keep], score.to_numpy(dtype=np.float64)[keep]
    binary = scale.positive is not None and scale.negative is not None
    reasons = dict(rater.reasons)
    if binary:
        pos = float(scale.code(scale.positive) or 0.0)
        neg = float(scale.code(scale.negative) or 0.0)
        rr = r[r[C.VALUE].isin([pos, neg])]
        share = (rr[C.VALUE] == pos).groupby(rr[C.PAIR_ID].astype(str)).mean().reindex(ids)
        truth = np.where(share.isna(), np.nan, (share.to_numpy() > 0.5) * 1.0)
        truth = np.where(share.to_numpy() == 0.5, np.nan, truth)  # ties: no verdict to learn
        p = calibrate_scores(x, truth, kind="probability", seed=seed)
        label = np.where(p >= 0.5, pos, neg)
        test = alt_test(ratings, pd.Series(label, index=ids), scoring="accuracy", epsilon=epsilon)
    else:
        mean = r.groupby(r[C.PAIR_ID].astype(str))[C.VALUE].mean().reindex(ids).to_numpy()
        pred = calibrate_scores(x, mean, kind="mean", seed=seed)
        codes = [o.code for o in scale.options if o.code is not None]
        if codes:
            pred = np.clip(pred, min(codes), max(codes))
        test = alt_test(ratings, pd.Series(pred, index=ids), scoring="neg_rmse", epsilon=epsilon)
    reasons.update(test.reasons)
    warn = low_agreement_warning(ratings, scale, epsilon)
    if warn:
        reasons["epsilon"] = warn
    return ModelRaterReport(rater, test, reasons)


def low_agreement_warning(ratings: pd.DataFrame, scale: Scale, epsilon: float) -> str | None:
    """A warning when the doctors agree little among themselves (Krippendorff's α below
    :data:`LOW_AGREEMENT_ALPHA`, at the scale's level of measurement): the alt-test's margin
    ε of expert annotators then lets a weak model pass, so a smaller one should be used (the
    authors give 0.2 for experts, 0.15 for skilled annotators, 0.1 for crowd workers)."""
    a = krippendorff_alpha(ratings, scale).value
    if not np.isfinite(a) or a >= LOW_AGREEMENT_ALPHA:
        return None
    return (
        f"the doctors agree little among themselves (Krippendorff's alpha {a:.2f} < "
        f"{LOW_AGREEMENT_ALPHA:g}): the alt-test margin (epsilon) of {epsilon:g} lets a model "
        "pass by matching doctors who disagree; use a smaller margin (e.g. 0.1)"
    )


def ehr_rel_predictors(
    path: str | os.PathLike, *, labelled_share: float = 0.5, seed: int = 0
) -> dict[str, dict]:
    """For the benchmark: an EHR-Rel wide file scored by the char-n-gram metric and, when
    the embeddings extra is installed, the packaged MiniLM; per predictor the PPI++ interval
    of the doctors' mean rating with *labelled_share* of the pairs (a random half) labelled,
    and the model-as-rater figures on every pair."""
    pairs, _ = split_ehr_rel(read_table(path), str(path))
    loaded = load_ratings_file(Path(path))
    ratings, scale = loaded.ratings, loaded.scale
    predictors: dict[str, pd.Series] = {}
    chars = score_pairs(pairs, None, "char-ngram")
    predictors["char-ngram"] = pd.Series(
        chars.iloc[:, 1].to_numpy(), index=chars[C.PAIR_ID].to_numpy()
    )
    minilm = _packaged_minilm()
    if minilm is not None:
        emb = score_pairs(pairs, minilm, "sentence-transformers")
        predictors["MiniLM (packaged)"] = pd.Series(
            emb.iloc[:, 1].to_numpy(), index=emb[C.PAIR_ID].to_numpy()
        )
    r = ratings.dropna(subset=[C.VALUE])
    mean = r.groupby(r[C.PAIR_ID].astype(str))[C.VALUE].mean()
    ids = mean.index
    rng = np.random.default_rng(seed)
    labelled = np.zeros(len(ids), bool)
    labelled[rng.choice(len(ids), int(round(labelled_share * len(ids))), replace=False)] = True
    codes = [o.code for o in scale.options if o.code is not None]
    bounds = (float(min(codes)), float(max(codes)))
    out = {}
    for name, s in predictors.items():
        x = s.reindex(ids).to_numpy(dtype=np.float64)
        x = np.nan_to_num(x, nan=float(np.nanmean(x)))
        y = np.where(labelled, mean.to_numpy(), np.nan)
        pred = np.clip(calibrate_scores(x, y, kind="mean", seed=seed), *bounds)
        e = ppi_mean_interval(y[labelled], pred[labelled], pred[~labelled], bounds=bounds)
        out[name] = {
            "interval": e.to_dict(),
            "rater": model_rater_report(ratings, scale, s, seed=seed).to_dict(),
        }
    return out


def _packaged_minilm() -> str | None:
    try:
        rows = [r for r in model_packages() if "minilm" in r["name"].lower()]
    except ImportError:
        return None
    if not rows:
        return None
    try:
        # Lazy: heavy and optional (the embeddings extra); only whether it is installed.
        import sentence_transformers  # noqa: F401
    except ImportError:
        return None
    return str(Path(rows[0]["path"]))


# ---- tables for the CLI and the dashboard ----------------------------------------------------------
def _interval_text(low, high) -> str:
    def num(v) -> str:
        return "NaN" if v is None or v != v else f"{v:.3f}"

    return f"[{num(low)}, {num(high)}]"


def prediction_audit_table(res: PPIAudit) -> pd.DataFrame:
    """One row per metric and group (``overall`` first): the estimate, the classical and the
    PPI++ interval as text, λ, labelled and unlabelled pairs, the effective number of
    labelled pairs, and — with a target — whether the group is within it and the pairs it
    still needs; the ``note`` says what the predictions were worth."""
    level = f"{res.confidence:.0%}"
    rows = []
    records = [("overall", res.overall)] + [
        (" / ".join(str(rec[c]) for c in res.by), rec)
        for rec in res.by_group.to_dict(orient="records")
    ]
    targeted = any(f"{m}_within_target" in res.overall for m in res.metrics)
    for metric in res.metrics:
        for name, rec in records:
            row = {
                "metric": metric.replace("_", " "),
                "group": name,
                "n": int(rec[f"{metric}_n"]),
                "unlabelled": int(rec[f"{metric}_n_unlabelled"]),
                "estimate": rec[f"{metric}_estimate"],
                f"classical {level}": _interval_text(
                    rec[f"{metric}_classical_low"], rec[f"{metric}_classical_high"]
                ),
                f"PPI++ {level}": _interval_text(rec[f"{metric}_low"], rec[f"{metric}_high"]),
                "lambda": round(float(rec[f"{metric}_lam"]), 3),
                "effective n": round(float(rec[f"{metric}_effective_n"]), 1),
                "gain from label": round(float(rec.get(f"{metric}_label_gain", 0.0)), 1),
                "gain from score": round(float(rec.get(f"{metric}_score_gain", 0.0)), 1),
            }
            if targeted:
                within = rec.get(f"{metric}_within_target")
                row["within target"] = "" if within is None else ("yes" if within else "no")
                more = rec.get(f"{metric}_more_needed")
                row["more needed"] = "" if more is None else str(int(more))
            row["note"] = rec[f"{metric}_note"]
            rows.append(row)
    return pd.DataFrame(rows)


def model_rater_table(report: ModelRaterReport) -> pd.DataFrame:
    """The doctors and the model by leave-one-out rho (highest first), the model's row
    marked; the alt-test per doctor beside each doctor."""
    per = {d["annotator"]: d for d in report.alt_test.per_annotator.to_dict(orient="records")}
    rows = []
    for d in report.rater.doctors.to_dict(orient="records"):
        alt = per.get(d["annotator"], {})
        rows.append(
            {
                "rater": d["annotator"],
                "leave-one-out rho": d["loo_rho"],
                "items": d["n_items"],
                "alt-test p": alt.get("p_value", float("nan")),
                "model beats this doctor": (
                    ("yes" if alt["rejected"] else "no") if "rejected" in alt else "skipped"
                ),
            }
        )
    rows.append(
        {
            "rater": "model",
            "leave-one-out rho": report.rater.model_loo_rho,
            "items": report.rater.n_items,
            "alt-test p": float("nan"),
            "model beats this doctor": "",
        }
    )
    return pd.DataFrame(rows).sort_values("leave-one-out rho", ascending=False, na_position="last")


def alt_test_sentence(report: ModelRaterReport) -> str:
    """The alt-test's verdict in one sentence."""
    alt, m = report.alt_test, report.rater
    wr, ap = alt.winning_rate, alt.advantage_probability
    if wr != wr:
        return t(
            "Alternative-annotator test: not computed ({reason}).",
            reason=report.reasons.get("alt_test", t("too few items")),
        )
    if alt.inconclusive:
        verdict = t(
            "inconclusive ({reason})",
            reason=report.reasons.get("alt_test", t("too few doctors")),
        )
    elif alt.passed:
        verdict = t("passed: the model may replace a doctor")
    else:
        verdict = t("failed")
    return t(
        "Alternative-annotator test (epsilon {epsilon}, {scoring}, Benjamini-Yekutieli q "
        "{q}): {verdict}; over {tested} of {doctors} doctors ({skipped} skipped); winning "
        "rate {wr}, advantage probability {ap}. Model rank by leave-one-out rho: {rank} of "
        "{raters}; rho with the doctors' mean {rho}.",
        epsilon=_g(alt.epsilon),
        scoring=t(SCORING_NAMES.get(str(alt.scoring), str(alt.scoring))),
        q=_g(alt.q),
        verdict=verdict,
        tested=fmt_int(alt.tested),
        doctors=fmt_int(alt.doctors),
        skipped=fmt_int(len(alt.skipped)),
        wr=fmt_decimal(wr),
        ap=fmt_decimal(ap),
        rank=fmt_int(m.model_rank),
        raters=fmt_int(len(m.doctors) + 1),
        rho=fmt_decimal(m.model_rho, 3),
    )


#: The alt-test's scorings as a sentence names them.
SCORING_NAMES = {"accuracy": N_("accuracy"), "neg_rmse": N_("negative RMSE")}


def _g(x: float) -> str:
    """*x* as ``:g`` writes it, with the current language's decimal mark."""
    text = f"{x:g}"
    return text.replace(".", fmt_decimal(0.5, 1)[1]) if "." in text else text


# ---- planning --------------------------------------------------------------------------------------
def plan_with_predictions(
    pairs: pd.DataFrame,
    annotators: int,
    predictions: pd.Series,
    *,
    pilot: Study,
    target_ci: float,
    group_by: list[str] | None = None,
    file: str | None = None,
    sampling: str = "uniform",
    cost_per_rating: float = 1.0,
    **plan_options,
) -> dict:
    """``medsim study plan --predictions``: the plan of
    :func:`medsim_annot.services.design.plan_budget` (from *pilot*) plus
    ``with_predictions``: per group the pairs and ratings the sequential audit needs when
    its interval is the PPI++ one, from the pilot's accuracy and the correlation of the
    (cross-fitted) prediction with whether the automatic label was right.

    Each group's classical pairs are scaled by the ratio of the labels the PPI++ rule needs
    to those :func:`medsim_annot.stats.ppi.labels_needed` gives without predictions (never
    below the minimum positives + negatives), and its ratings in proportion. When the
    planned pairs carry automatic labels, the PPI++ figure is
    :func:`medsim_annot.stats.active.plan_labels` of the rule's own interval (the floored
    score form the sequential audit checks) on the scores calibrated on the pilot's
    verdicts; otherwise the closed form of ``labels_needed`` at the pilot's correlation. The group is finite:
    its predictions average over its own unrated pairs (a group of 400 pairs at ±0.05 with a
    correlation of 0.8 needs ~240 labelled pairs, not the ~120 of an endless pool).

    *sampling* ``active`` adds per group what active serving needs
    (:func:`medsim_annot.stats.active.plan_labels` with the draw probabilities of
    :func:`medsim_annot.stats.active.sampling_probabilities`): the scores are calibrated on
    the pilot's verdicts into P(same) for every planned pair, whose uncertainty sets its
    draw probability. *cost_per_rating* (a doctor rating's cost, in any unit: minutes,
    money) turns ratings into the ``cost`` of each plan, as ``ppi_mean_power`` budgets
    labels by cost. The predictions must score every pilot pair (for the correlation) and
    every pair of *pairs* (for the audit)."""
    TARGET_CI.check(target_ci)
    SAMPLINGS.check(sampling)
    COST_PER_RATING.check(cost_per_rating)
    align_predictions(predictions, pairs[C.PAIR_ID], file=file)
    base = plan_budget(
        pairs,
        annotators,
        group_by=group_by,
        target_ci=target_ci,
        pilot=pilot,
        **plan_options,
    )
    info = pilot
    ppairs = studies_svc.pairs_frame(pilot)

    cur = to_ratings_frame(studies_svc.current_ratings(pilot), info.scale)
    if info.scale.positive is None or info.scale.negative is None:
        raise InputError.single(
            f"the pilot '{pilot}' is on the {info.scale.name} scale: planning with predictions "
            "needs a binary audit (positive and negative values)"
        )
    scores = align_predictions(predictions, ppairs[C.PAIR_ID], file=file)
    gb = [c for c in (group_by or []) if c in pairs.columns and c in ppairs.columns]
    items = audit_labels(ppairs, cur, info.scale, by=[]).items
    truth, label = items["truth"].to_numpy(), items["auto_label"].to_numpy()
    overall = pilot_correlation(truth, label, scores)
    per_group: dict[str, dict] = {}
    if gb:
        keys = ppairs[gb].astype(str).agg(" / ".join, axis=1).to_numpy()
        for g in np.unique(keys):
            sel = keys == g
            per_group[str(g)] = pilot_correlation(truth[sel], label[sel], scores[sel])
    floor = int(plan_options.get("min_positives", 10)) + int(plan_options.get("min_negatives", 10))
    by = [c for c in (group_by or []) if c in pairs.columns]
    active = (
        _needs_from_scores(pairs, by, scores, truth, predictions, target_ci, file, active=True)
        if sampling == "active"
        else None
    )
    # Uniform serving stops on the floored score interval: planned from the calibrated scores
    # of the planned pairs when they carry automatic labels (else the closed form below).
    uniform = (
        _needs_from_scores(pairs, by, scores, truth, predictions, target_ci, file, active=False)
        if C.AUTO_LABEL in pairs.columns
        else {}
    )
    active_total = 0
    groups = {}
    total = 0
    for g, row in base["groups"].items():
        src = per_group.get(g) or overall
        if src["n"] < 20:  # too few pilot pairs in the group: the pilot's overall figure
            src = overall
        acc = base["assumptions"]["accuracy"].get(g, src["accuracy"])
        classical, with_pred = labels_needed(
            acc, src["correlation"], target=target_ci, pairs=int(row["pairs"])
        )
        with_pred = uniform.get(g, with_pred)
        ratio = with_pred / classical if classical else 1.0
        rated = min(row["pairs"], max(int(np.ceil(row["pairs_rated"] * ratio)), floor))
        rated = min(rated, row["pairs_rated"])
        per_pair = row["ratings"] / row["pairs_rated"] if row["pairs_rated"] else 0.0
        ratings = int(np.ceil(rated * per_pair))
        groups[g] = {
            "pairs": row["pairs"],
            "pairs_rated": rated,
            "ratings": ratings,
            "correlation": round(src["correlation"], 4),
            "pilot_pairs": src["n"],
        }
        total += ratings
        if active is not None:
            need = active.get(g)
            if need is not None:
                a_rated = min(
                    row["pairs_rated"],
                    max(
                        int(np.ceil(row["pairs_rated"] * need / classical)) if classical else rated,
                        floor,
                    ),
                )
                a_ratings = int(np.ceil(a_rated * per_pair))
                groups[g]["active_pairs_rated"] = a_rated
                groups[g]["active_ratings"] = a_ratings
                active_total += a_ratings
    base["cost"] = base["ratings"] * cost_per_rating
    base["with_predictions"] = {
        "groups": groups,
        "ratings": total,
        "cost": total * cost_per_rating,
        "saving_vs_classical": 1 - total / base["ratings"] if base["ratings"] else 0.0,
        "correlation": round(overall["correlation"], 4),
        "note": (
            "pairs the sequential audit needs when its interval is the PPI++ one "
            "(prediction-powered); the correlation is that of the cross-fitted prediction with "
            "whether the automatic label was right, on the pilot"
        ),
    }
    if active is not None:
        w = base["with_predictions"]
        w["active"] = {
            "ratings": active_total,
            "cost": active_total * cost_per_rating,
            "saving_vs_classical": 1 - active_total / base["ratings"] if base["ratings"] else 0.0,
            "saving_vs_uniform": 1 - active_total / total if total else 0.0,
            "note": (
                "active serving: pairs drawn with a probability growing with the model's "
                "uncertainty (uniform floor 0.2), the estimate inverse-probability weighted"
            ),
        }
    return base


def _needs_from_scores(
    pairs: pd.DataFrame,
    group_by: list[str],
    pilot_scores: np.ndarray,
    pilot_truth: np.ndarray,
    predictions: pd.Series,
    target_ci: float,
    file: str | None,
    *,
    active: bool,
) -> dict[str, int]:
    """Per group of *pairs*: the labelled pairs the sequential audit needs, from the scores
    calibrated on the pilot's verdicts (cross-fitted fold models) into P(same) — under
    active serving (*active*), or under uniform serving with the rule's own interval (the
    floored score form of :func:`medsim_annot.stats.ppi.ppi_group_stopping`)."""
    if C.AUTO_LABEL not in pairs.columns:
        raise InputError.single(
            "required column is missing (active serving is planned on the automatic labels)",
            column=C.AUTO_LABEL,
        )
    x = align_predictions(predictions, pairs[C.PAIR_ID], file=file)
    both = np.r_[pilot_scores, x]
    truth = np.r_[pilot_truth, np.full(len(x), np.nan)]
    p = calibrate_scores(both, truth, kind="probability")[len(pilot_scores) :]
    label = pd.to_numeric(pairs[C.AUTO_LABEL], errors="coerce").to_numpy(dtype=np.float64)
    f = np.where(label == 1, p, 1 - p)
    keys = (
        pairs[group_by].astype(str).agg(" / ".join, axis=1).to_numpy()
        if group_by
        else np.full(len(pairs), "all")
    )
    out = {}
    for g in np.unique(keys):
        sel = (keys == g) & ~np.isnan(label)
        if not sel.any():
            continue
        if active:
            pi = sampling_probabilities(uncertainty(p[sel]))
            out[str(g)] = plan_labels(
                f[sel], f[sel] * (1 - f[sel]), pi, target=target_ci, adjust=True, active=True
            )
        else:
            out[str(g)] = plan_labels(
                f[sel],
                f[sel] * (1 - f[sel]),
                np.ones(int(sel.sum())),
                target=target_ci,
                active=False,
                score=True,
            )
    return out


# ---- the dashboard ---------------------------------------------------------------------------------
def score_columns(path: str | os.PathLike) -> list[str]:
    """The score columns of a scores file (for the dashboard's column picker)."""
    return [str(c) for c in read_scores(path).columns if c != C.PAIR_ID]


def study_predictions(
    study: Study,
    predictions: pd.Series,
    *,
    method: str = "ppi",
    epsilon: float = DEFAULT_EPSILON,
    target_ci: float | None = None,
    file: str | None = None,
) -> StudyPredictions:
    """The dashboard's predictions panel for a stored study (the audit is None when the
    study's scale has no automatic labels to audit and no numeric mean). The scores are
    read by the admin page only; nothing is stored."""
    info = study
    pairs = studies_svc.pairs_frame(study)
    cur = to_ratings_frame(studies_svc.current_ratings(study), info.scale)
    audit, audit_notes = None, []
    binary = info.scale.positive is not None and info.scale.negative is not None
    if not binary or C.AUTO_LABEL in pairs.columns:
        res = prediction_audit_report(
            pairs,
            cur,
            info.scale,
            predictions,
            method=method,
            target_ci=target_ci,
            file=file,
        )
        audit = prediction_audit_table(res)
        audit_notes = [f"{k}: {v}" for k, v in res.reasons.items()]
    else:
        audit_notes = [t("the pairs have no automatic labels to audit")]
    if cur[C.ANNOTATOR].nunique() < 2:
        return StudyPredictions(
            audit,
            audit_notes,
            model_notes=[t("the model is compared with the doctors: it needs two or more")],
        )
    rep = model_rater_report(cur, info.scale, predictions, epsilon=epsilon)
    return StudyPredictions(
        audit,
        audit_notes,
        model_rater_table(rep),
        alt_test_sentence(rep),
        [f"{k}: {v}" for k, v in rep.reasons.items()],
    )
