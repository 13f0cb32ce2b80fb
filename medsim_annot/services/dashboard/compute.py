"""Every dashboard table from frames (no database): :func:`compute_dashboard` declares the
dashboard as named steps over the agreement services (:func:`dashboard_steps`), which
:mod:`~medsim_annot.services.dashboard.schedule` runs, and keeps their results in a
:class:`Dashboard`. The current ratings are coded once (:func:`coded_ratings`) and every
statistic takes those codes."""

from __future__ import annotations

from collections.abc import Collection
from concurrent.futures import Future
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from data_schemas import columns as C
from data_schemas.pairs import group_columns
from data_schemas.ratings import code_ratings, sorted_coded
from data_schemas.scales import Scale
from medsim_annot.i18n import t
from medsim_annot.services import agreement as agreement_svc
from medsim_annot.services.dashboard.schedule import Step, run
from medsim_annot.services.dashboard.tables import Dashboard
from medsim_annot.services.gold.table import GoldTable, gold_table
from medsim_annot.services.quality import QualitySettings, rater_checks, warnings_of
from medsim_annot.stats import CodedRatings, RaterQuality, coded_ratings
from medsim_annot.stats._frame import encode
from medsim_annot.stats.quality import history_checks


def _naive_times(hist: pd.DataFrame) -> pd.DataFrame:
    """*hist* with ``rated_at`` as naive UTC: the engine orders by time, and naive
    datetime64 avoids an object array of Timestamps (runs' start/end are UTC)."""
    if C.RATED_AT in hist.columns and isinstance(hist[C.RATED_AT].dtype, pd.DatetimeTZDtype):
        return hist.assign(
            **{C.RATED_AT: hist[C.RATED_AT].dt.tz_convert("UTC").dt.tz_localize(None)}
        )
    return hist


def _saved_history(history: pd.DataFrame, scale: Scale) -> CodedRatings:
    """Every saved rating (duplicates included), sorted by (pair, annotator), coded, with
    naive UTC times."""
    ordered = sorted_coded(history)
    if ordered is None:  # pair ids or annotators not all text
        hist = history.sort_values([C.PAIR_ID, C.ANNOTATOR], kind="stable")
        return encode(_naive_times(_coded_values(hist, scale)), scale=scale)
    hist, item, items, who, names = ordered
    hist = _naive_times(_coded_values(hist, scale))
    return CodedRatings.from_codes(hist, item, items, who, names, scale=scale)


def _coded_values(hist: pd.DataFrame, scale: Scale) -> pd.DataFrame:
    return hist if C.VALUE in hist.columns else code_ratings(hist, scale)


def _gold_history(gold: GoldTable) -> CodedRatings:
    """The current ratings as the history (no duplicates saved): the gold table's codes,
    with naive UTC times."""
    codes = gold.codes
    assert codes is not None
    return replace(codes, frame=_naive_times(codes.frame))


def _pairs(pairs: pd.DataFrame | Future[pd.DataFrame]) -> pd.DataFrame:
    return pairs.result() if isinstance(pairs, Future) else pairs


def _agreement(every_rated: tuple, gold: GoldTable, scale: Scale, agreement_pairs) -> tuple:
    """The agreement report of the gold table's ratings: the one computed on every rated
    pair before the pairs were read when those are the same ratings (every rated pair is a
    pair of the study, as in a stored study), else computed again."""
    if gold.codes is not None and gold.codes is every_rated[2]:
        return every_rated[:2]
    return agreement_svc.design_agreement(gold.codes, scale, agreement_pairs=agreement_pairs)


#: Seed of the audit's bootstrap intervals, so a report can be reproduced.
BOOTSTRAP_SEED = 20200207


def compute_dashboard(
    pairs: pd.DataFrame | Future[pd.DataFrame],
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
    check_answers: dict[str, str] | None = None,
    check_settings: QualitySettings | None = None,
    workers: int | None = None,
    imported: Collection[str] = (),
) -> Dashboard:
    """Every dashboard table from frames, by calling the agreement services.

    Parameters
    ----------
    pairs : DataFrame or Future of one
        The study's pairs (file order); a Future while they are still being read, and then
        the agreement statistics, which need no pairs, start meanwhile.
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
    check_answers : dict, optional
        ``pair_id`` to the known answer of the study's check pairs.
    check_settings : QualitySettings, optional
        The rushed threshold and the minimum accuracy on check pairs (default: the
        defaults of :class:`~medsim_annot.services.quality.QualitySettings`).
    workers : int, optional
        Threads beside the calling one (default :data:`WORKERS`; 0: every step in line,
        one after the other, with the same results).
    imported : collection of str, optional
        Annotators whose ratings were imported from another tool: their order is the file's
        and their times the import's, so the checks that read order or time
        (straight-lining, rushed answers, pace) are left out for them
        (:func:`without_order_checks`); the dashboard lists them.
    """
    settings = check_settings or QualitySettings()
    saved = history if history is not None and len(history) else None
    steps = dashboard_steps(
        scale,
        saved=saved is not None,
        pairs_read=not isinstance(pairs, Future) or pairs.done(),
        bootstrap=bootstrap,
        majority=majority,
        seed=seed,
        agreement_pairs=agreement_pairs,
    )
    given = {
        "pairs_read": pairs,
        "current": current,
        "saved": saved,
        "answers": check_answers or {},
        "settings": settings,
    }
    done = run(steps, given, workers=WORKERS if workers is None else workers)
    report, basis = done["agreement"]
    audit, reasons = done["audit"]
    quality, checks = without_order_checks(done["quality"], done["rater_checks"], imported)
    return Dashboard(
        study,
        scale,
        "binary" if scale.has_polarity else "graded",
        (int(version[0]), int(version[1])),
        report,
        audit,
        quality,
        done["gold"],
        bootstrap,
        reasons,
        agreement_basis=basis,
        rater_checks=checks,
        check_warnings=tuple(warnings_of(checks, settings)),
        quality_settings=settings,
        imported=tuple(sorted(set(imported))),
    )


#: The per-doctor columns of the rater checks that read the time on a pair or the order of
#: the ratings; empty for imported ratings.
ORDER_TIME_COLUMNS = ("n_timed", "n_rushed", "rushed_rate", "median_seconds", "pairs_per_hour")


def without_order_checks(
    quality: RaterQuality, checks: pd.DataFrame, imported: Collection[str]
) -> tuple[RaterQuality, pd.DataFrame]:
    """*quality* and *checks* without the order- and time-based checks of the *imported*
    annotators: no straight-lining runs (their order is the file's), longest run 0, and no
    rushed answers or pace (their times are the import's; the columns are left empty).

    >>> q = RaterQuality(pd.DataFrame({"annotator": ["E", "F"], "longest_run": [18, 0]}),
    ...                  pd.DataFrame({"annotator": ["E"], "length": [18]}), pd.DataFrame())
    >>> c = pd.DataFrame({"annotator": ["E", "F"], "n_rushed": [3.0, 1.0]})
    >>> q2, c2 = without_order_checks(q, c, {"E"})
    >>> len(q2.runs), q2.per_annotator["longest_run"].tolist(), c2["n_rushed"].tolist()[1]
    (0, [0, 0], 1.0)
    """
    names = set(imported)
    if not names:
        return quality, checks
    runs = quality.runs
    if len(runs):
        runs = runs[~runs[C.ANNOTATOR].isin(names)].reset_index(drop=True)
    per = quality.per_annotator.copy()
    if "longest_run" in per.columns:
        per.loc[per[C.ANNOTATOR].isin(names), "longest_run"] = 0
    out = checks.copy()
    if len(out):
        hit = out[C.ANNOTATOR].isin(names)
        for col in ORDER_TIME_COLUMNS:
            if col in out.columns:
                out[col] = out[col].astype("float64")
                out.loc[hit, col] = np.nan
    return replace(quality, per_annotator=per, runs=runs), out


#: Threads beside the calling one (:func:`~medsim_annot.services.dashboard.schedule.run`).
#: One: at 100,000 pairs x 3 on two cores the computation took 0.52 s with only the audit
#: and the rater checks beside.
WORKERS = 1


def dashboard_steps(
    scale: Scale,
    *,
    saved: bool,
    pairs_read: bool = True,
    bootstrap: int = 0,
    majority: str = "strict",
    seed: int = BOOTSTRAP_SEED,
    agreement_pairs: Collection[str] | None = None,
) -> dict[str, Step]:
    """The dashboard as named steps (name -> function and the names it takes), declared in
    the order the calling thread runs its own ("here").

    Given: ``pairs_read`` (the pairs, or a Future while they are still being read),
    ``current``, ``saved`` (the history, or None), ``answers`` and ``settings`` (the rater
    checks'). Beside the calling thread (NumPy and pandas release the GIL in their large
    operations) run the history's coding and checks, the rater checks and the audit, which
    need neither the gold table nor the agreement report. With the pairs read
    (*pairs_read*), the calling thread builds the gold table first, so that the history's
    checks and the audit run beside the agreement report. While they are still being read
    the agreement statistics, which need no pairs, start on the latest ratings of every
    rated pair; they stand when every rated pair is a pair of the study. With bootstrap intervals the
    audit stays in the calling thread: the bootstrap silences scipy's warnings with
    ``warnings.catch_warnings``, which changes process-wide state.
    """
    binary = scale.has_polarity

    def audit(pairs: pd.DataFrame, every_rated: CodedRatings) -> tuple[Any, dict[str, str]]:
        if not binary:
            return None, {
                "audit": t("the {scale} scale has no positive/negative values", scale=scale.name)
            }
        if C.AUTO_LABEL not in pairs.columns or not pairs[C.AUTO_LABEL].notna().any():
            return None, {"audit": t("the pairs have no automatic labels")}
        # The audit reads the ratings of the study's pairs only: those of every rated pair
        # give the gold table's.
        return agreement_svc.audit_report(
            pairs,
            every_rated.frame,
            scale,
            by=group_columns(pairs),
            majority=majority,
            bootstrap=bootstrap,
            seed=seed,
        ), {}

    def agreement_early(every_rated: CodedRatings) -> tuple:
        report, basis = agreement_svc.design_agreement(
            every_rated, scale, agreement_pairs=agreement_pairs
        )
        return report, basis, every_rated

    def quality(gold: GoldTable, agreement: tuple, hist: CodedRatings, checked) -> Any:
        # IAA-1 per annotator is in the agreement report already: the outlier check reuses it.
        return agreement_svc.rater_quality_report(
            gold.codes if gold.codes is not None else gold.ratings,
            scale,
            history=hist.frame,
            iaa=agreement[0].per_annotator,
            checked=checked,
        )

    steps: dict[str, Step] = {}
    if saved:
        steps["history"] = Step(lambda h: _saved_history(h, scale), ("saved",), "beside")
        steps["history_checks"] = Step(lambda h: history_checks(h, scale), ("history",), "beside")
        # Every answer counts for the checks: the duplicates' too (each is an answer).
        steps["rater_checks"] = Step(
            lambda h, a, s: rater_checks(h.frame, scale, a, s),
            ("history", "answers", "settings"),
            "beside",
        )
    else:
        steps["rater_checks"] = Step(
            lambda c, a, s: rater_checks(c, scale, a, s),
            ("current", "answers", "settings"),
            "beside",
        )
    steps["every_rated"] = Step(lambda c: coded_ratings(c, scale), ("current",))
    if not pairs_read:
        steps["agreement_early"] = Step(agreement_early, ("every_rated",))
    steps["pairs"] = Step(_pairs, ("pairs_read",))
    steps["audit"] = Step(audit, ("pairs", "every_rated"), "here" if bootstrap else "beside")
    steps["gold"] = Step(
        lambda p, c, e: gold_table(p, c, scale, majority=majority, coded=e),
        ("pairs", "current", "every_rated"),
    )
    if not saved:
        # The current ratings are the history: their codes are the gold table's.
        steps["history"] = Step(_gold_history, ("gold",))
        steps["history_checks"] = Step(lambda h: history_checks(h, scale), ("history",), "beside")
    if pairs_read:  # on the gold table's codes: those of every rated pair, or fewer
        steps["agreement_early"] = Step(lambda g: agreement_early(g.codes), ("gold",))
    steps["agreement"] = Step(
        lambda early, gold: _agreement(early, gold, scale, agreement_pairs),
        ("agreement_early", "gold"),
    )
    steps["quality"] = Step(quality, ("gold", "agreement", "history", "history_checks"))
    return steps
