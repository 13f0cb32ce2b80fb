"""The headers of the tables the QA pages show, in the page's language.

A table's columns keep their names (the CSV download, the CLI and the tests read them); only
the copy a page shows is renamed, by :func:`header`. In English a header is the column's
own name, so an English page shows exactly what it showed before. A column whose name holds
a person's name (``rater_<name>``, ``comment_<name>``, the pairwise matrix's annotators) keeps
the name as typed. Numbers of a shown table are written the way the language writes them by
:func:`number_text`.
"""

from __future__ import annotations

import math

import pandas as pd

from medsim_annot.i18n import DASH, N_, fmt_decimal, fmt_int, t

#: Column name → its header (English: the name itself). Translators: these are the
#: headers of the dashboard's tables; keep them short (a table has many columns).
HEADERS: dict[str, str] = {
    # completion, activity
    "annotator": N_("annotator"),
    "done": N_("done"),
    "total": N_("total"),
    "share": N_("share"),
    "rated": N_("rated"),
    "access": N_("access"),
    "active": N_("active"),
    "imported": N_("imported"),
    "at": N_("at"),
    "at (UTC)": N_("at (UTC)"),
    "actor": N_("actor"),
    "action": N_("action"),
    "study": N_("study"),
    "detail": N_("detail"),
    # audit, confusion, sequential audit
    "group": N_("group"),
    "items": N_("items"),
    "no_majority": N_("no_majority"),
    "alpha": N_("alpha"),
    "accuracy": N_("accuracy"),
    "recall": N_("recall"),
    "precision": N_("precision"),
    "tp": N_("tp"),
    "fp": N_("fp"),
    "fn": N_("fn"),
    "tn": N_("tn"),
    "alpha_ci_low": N_("alpha_ci_low"),
    "alpha_ci_high": N_("alpha_ci_high"),
    "accuracy_ci_low": N_("accuracy_ci_low"),
    "accuracy_ci_high": N_("accuracy_ci_high"),
    "recall_ci_low": N_("recall_ci_low"),
    "recall_ci_high": N_("recall_ci_high"),
    "precision_ci_low": N_("precision_ci_low"),
    "precision_ci_high": N_("precision_ci_high"),
    "majority: similar": N_("majority: similar"),
    "majority: not similar": N_("majority: not similar"),
    "no majority": N_("no majority"),
    "auto: similar (1)": N_("auto: similar (1)"),
    "auto: not similar (0)": N_("auto: not similar (0)"),
    # agreement
    "level": N_("level"),
    "annotators": N_("annotators"),
    "ratings": N_("ratings"),
    "coefficient": N_("coefficient"),
    "value": N_("value"),
    "se": N_("se"),
    "ci_low": N_("ci_low"),
    "ci_high": N_("ci_high"),
    "weights": N_("weights"),
    "pa": N_("pa"),
    "pe": N_("pe"),
    "annotator_a": N_("annotator_a"),
    "annotator_b": N_("annotator_b"),
    "n_items": N_("n_items"),
    "krippendorff_alpha": N_("krippendorff_alpha"),
    "cohen_kappa": N_("cohen_kappa"),
    "cohen_kappa_quadratic": N_("cohen_kappa_quadratic"),
    "spearman_rho": N_("spearman_rho"),
    "mean_alpha": N_("mean_alpha"),
    "mean_kappa": N_("mean_kappa"),
    "mean_kappa_quadratic": N_("mean_kappa_quadratic"),
    "mean_rho": N_("mean_rho"),
    "iaa_1": N_("iaa_1"),
    "iaa_2": N_("iaa_2"),
    # rater quality, checks and pace
    "n_ratings": N_("n_ratings"),
    "n_no_decision": N_("n_no_decision"),
    "dont_know_share": N_("dont_know_share"),
    "outlier": N_("outlier"),
    "n_duplicates": N_("n_duplicates"),
    "exact_agreement": N_("exact_agreement"),
    "longest_run": N_("longest_run"),
    "reading": N_("reading"),
    "n_checks": N_("n_checks"),
    "n_correct": N_("n_correct"),
    "check_accuracy": N_("check_accuracy"),
    "check_warning": N_("check_warning"),
    "n_timed": N_("n_timed"),
    "n_rushed": N_("n_rushed"),
    "rushed_rate": N_("rushed_rate"),
    "median_seconds": N_("median_seconds"),
    "pairs_per_hour": N_("pairs_per_hour"),
    "rating": N_("rating"),
    "length": N_("length"),
    "first_pair_id": N_("first_pair_id"),
    "last_pair_id": N_("last_pair_id"),
    # quality over time
    "window": N_("window"),
    "start": N_("start"),
    "end": N_("end"),
    "day": N_("day"),
    "judged": N_("judged"),
    "n_agree": N_("n_agree"),
    "majority_agreement": N_("majority_agreement"),
    "agreement_ci_low": N_("agreement_ci_low"),
    "agreement_ci_high": N_("agreement_ci_high"),
    "check_ci_low": N_("check_ci_low"),
    "check_ci_high": N_("check_ci_high"),
    "guideline_version": N_("guideline_version"),
    "metric": N_("metric"),
    "baseline": N_("baseline"),
    "evidence": N_("evidence"),
    "drop": N_("drop"),
    # disagreements, model of the doctors, adjudication
    "pair_id": N_("pair_id"),
    "term_1": N_("term_1"),
    "term_2": N_("term_2"),
    "dataset": N_("dataset"),
    "difficulty": N_("difficulty"),
    "negative_strategy": N_("negative_strategy"),
    "auto_label": N_("auto_label"),
    "why": N_("why"),
    "majority": N_("majority"),
    "n_with_majority": N_("n_with_majority"),
    "true": N_("true"),
    "given": N_("given"),
    "probability": N_("probability"),
    "competence": N_("competence"),
    "skill": N_("skill"),
    "reason": N_("reason"),
    "decisions": N_("decisions"),
    "n_pairs": N_("n_pairs"),
    "agreement": N_("agreement"),
    "status": N_("status"),
    "positives": N_("positives"),
    "negatives": N_("negatives"),
    "needed": N_("needed"),
    "pairs": N_("pairs"),
    "accuracy_low": N_("accuracy_low"),
    "accuracy_high": N_("accuracy_high"),
    "precision_low": N_("precision_low"),
    "precision_high": N_("precision_high"),
    "pairs_needed": N_("pairs_needed"),
    "open_slots": N_("open_slots"),
    "withdrawn_slots": N_("withdrawn_slots"),
    # the predictions panel
    "n": N_("n"),
    "unlabelled": N_("unlabelled"),
    "estimate": N_("estimate"),
    "lambda": N_("lambda"),
    "effective n": N_("effective n"),
    "gain from label": N_("gain from label"),
    "gain from score": N_("gain from score"),
    "within target": N_("within target"),
    "more needed": N_("more needed"),
    "note": N_("note"),
    "rater": N_("rater"),
    "leave-one-out rho": N_("leave-one-out rho"),
    "alt-test p": N_("alt-test p"),
    "model beats this doctor": N_("model beats this doctor"),
}

#: Columns named after a person: prefix → the header with the name kept as typed.
NAMED: dict[str, str] = {
    "rater_": N_("rater_{name}"),
    "comment_": N_("comment_{name}"),
}
#: Columns named with a confidence level (``classical 95%``): prefix → the header.
LEVELS: dict[str, str] = {
    "classical ": N_("classical {level}"),
    "PPI++ ": N_("PPI++ {level}"),
}


#: Cells of a shown table that are words of ours, not data: column → value → its label
#: (the coefficients' names, the weights of AC2, the metrics, the audit's rows that are not
#: a group, the scale's level).
CELLS: dict[str, dict[str, str]] = {
    "coefficient": {
        "Gwet's AC1": N_("Gwet's AC1"),
        "Gwet's AC2": N_("Gwet's AC2"),
        "Fleiss' kappa": N_("Fleiss' kappa"),
        "Brennan-Prediger (Bennett's S)": N_("Brennan-Prediger (Bennett's S)"),
        "Conger's kappa": N_("Conger's kappa"),
    },
    "weights": {
        "identity": N_("identity"),
        "linear": N_("linear"),
        "quadratic": N_("quadratic"),
        "ordinal": N_("ordinal"),
    },
    "metric": {
        "majority_agreement": N_("majority_agreement"),
        "check_accuracy": N_("check_accuracy"),
        "accuracy": N_("accuracy"),
        "precision": N_("precision"),
        "recall": N_("recall"),
    },
    "group": {"overall": N_("overall"), "all": N_("all")},
    # the predictions panel: the model's row, the alt-test's verdict per doctor, the target
    "rater": {"model": N_("model")},
    "model beats this doctor": {"yes": N_("yes"), "no": N_("no"), "skipped": N_("skipped")},
    "within target": {"yes": N_("yes"), "no": N_("no")},
    "status": {"serving": N_("serving"), "stopped": N_("stopped")},
    "level": {
        "nominal": N_("nominal"),
        "ordinal": N_("ordinal"),
        "interval": N_("interval"),
        "ratio": N_("ratio"),
    },
}


#: The tables' names in their download buttons ("Download agreement (CSV)"), by the stem of
#: the file (which stays as it is).
TABLES: dict[str, str] = {
    "sequential-audit": N_("sequential audit"),
    "dawid-skene-raters": N_("Dawid–Skene raters"),
    "mace-raters": N_("MACE raters"),
    "dawid-skene-confusion": N_("Dawid–Skene confusion"),
    "adjudicated-agreement": N_("agreement with the adjudication"),
    "disagreements": N_("disagreements"),
    "drift-alerts": N_("drift alerts"),
    "quality-windows": N_("quality windows"),
    "quality-days": N_("quality per day"),
    "rater-quality": N_("rater quality"),
    "rater-checks": N_("rater checks"),
    "straight-lining-runs": N_("straight-lining runs"),
    "audit": N_("audit"),
    "confusion": N_("confusion matrix"),
    "agreement": N_("agreement"),
    "coefficients": N_("coefficients"),
    "pairwise-alpha": N_("pairwise alpha"),
    "per-annotator": N_("per annotator"),
    "pairwise": N_("every pair of annotators"),
    "activity": N_("activity log"),
    "practice": N_("practice"),
}


def table_name(stem: str) -> str:
    """The name of the table downloaded as *stem*.csv, in the current language."""
    return t(TABLES[stem]) if stem in TABLES else stem


#: The activity log's actions (event kinds) as the Activity page names them; the log keeps
#: the kinds as recorded (its CSV too). Translators: an event of the log, e.g. "study
#: created" for ``study_created``.
ACTIONS: dict[str, str] = {
    "study_created": N_("study_created"),
    "study_imported": N_("study_imported"),
    "annotator_added": N_("annotator_added"),
    "annotator_renamed": N_("annotator_renamed"),
    "annotator_paused": N_("annotator_paused"),
    "annotator_sso_enabled": N_("annotator_sso_enabled"),
    "annotator_sso_disabled": N_("annotator_sso_disabled"),
    "code_issued": N_("code_issued"),
    "code_revoked": N_("code_revoked"),
    "adjudicator_added": N_("adjudicator_added"),
    "adjudicator_revoked": N_("adjudicator_revoked"),
    "adjudicator_sso_linked": N_("adjudicator_sso_linked"),
    "admin_added": N_("admin_added"),
    "admin_removed": N_("admin_removed"),
    "admin_password_set": N_("admin_password_set"),
    "gold_exported": N_("gold_exported"),
    "ratings_exported": N_("ratings_exported"),
    "check_pairs_marked": N_("check_pairs_marked"),
    "quality_settings_changed": N_("quality_settings_changed"),
    "drift_settings_changed": N_("drift_settings_changed"),
    "guideline_revised": N_("guideline_revised"),
    "practice_set": N_("practice_set"),
    "practice_passed": N_("practice_passed"),
    "practice_unlocked": N_("practice_unlocked"),
    "practice_sent_back": N_("practice_sent_back"),
    "predictions_added": N_("predictions_added"),
    "predictions_shown_to_adjudicators": N_("predictions_shown_to_adjudicators"),
    "adjudication_rater_names": N_("adjudication_rater_names"),
    "stopping_on": N_("stopping_on"),
    "stopping_off": N_("stopping_off"),
}


def action(kind: object) -> str:
    """An activity log's event kind as the page names it (an unknown kind as recorded)."""
    text = str(kind)
    return t(ACTIONS[text]) if text in ACTIONS else text


#: The disagreement explorer's kinds (:data:`~medsim_annot.services.dashboard.tables.DISAGREEMENT_KINDS`).
KINDS: dict[str, str] = {
    "no majority": N_("no majority"),
    "all different": N_("all different"),
    "auto-label ≠ majority": N_("auto-label ≠ majority"),
}

#: The sequential audit's intervals as a sentence names them
#: (:data:`medsim_annot.services.stopping.INTERVAL_METHOD`, or a prediction method's).
INTERVALS: dict[str, str] = {
    "Wilson score interval, 95%": N_("Wilson score interval, 95%"),
    "ppi, 95%": N_("PPI++ interval, 95%"),
    "classical, 95%": N_("classical interval, 95%"),
}


def interval(method: str) -> str:
    """The name of the sequential audit's interval *method* in the current language."""
    return t(INTERVALS[method]) if method in INTERVALS else method


def cells(frame: pd.DataFrame) -> pd.DataFrame:
    """*frame* with the cells of :data:`CELLS` in the current language (a copy when any
    changes; other cells as they are)."""
    known = [c for c in frame.columns if str(c) in CELLS or str(c) == "why"]
    if not known or frame.columns.has_duplicates:
        return frame
    out = frame.copy()
    for c in known:
        if str(c) == "why":  # the disagreement kinds of a pair, joined by "; "
            out[c] = [
                "; ".join(t(KINDS.get(k, k)) for k in v.split("; ")) if isinstance(v, str) else v
                for v in frame[c]
            ]
            continue
        words = CELLS[str(c)]
        out[c] = [t(words[v]) if isinstance(v, str) and v in words else v for v in frame[c]]
    return out


def header(column: object, names: frozenset[str] = frozenset()) -> str:
    """The header of *column* in the current language (a person's name in *names*, or a
    column not known here, as it is)."""
    text = str(column)
    if text in names:
        return text
    known = HEADERS.get(text)
    if known is not None:
        return t(known)
    for prefix, message in NAMED.items():
        if text.startswith(prefix) and len(text) > len(prefix):
            return t(message, name=text[len(prefix) :])
    for prefix, message in LEVELS.items():
        if text.startswith(prefix) and text.endswith("%"):
            return t(message, level=text[len(prefix) :])
    return text


def number_text(value: object, whole: bool, digits: int = 3) -> str:
    """A number as a shown table writes it in the current language: a count (*whole*) with
    its grouping (``1.200``), else with *digits* decimals (``0,870``); missing → ``—``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return DASH
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(number):
        return DASH
    return fmt_int(number) if whole else fmt_decimal(number, digits)
