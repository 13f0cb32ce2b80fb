"""Every dashboard table from frames (no database): :func:`compute_dashboard` calls the
agreement services once each and keeps their results in a :class:`Dashboard`."""

from __future__ import annotations

from collections.abc import Callable, Collection
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from data_schemas import columns as C
from data_schemas.pairs import group_columns
from data_schemas.ratings import sorted_coded
from data_schemas.scales import Scale
from medsim_annot.services import agreement as agreement_svc
from medsim_annot.services.dashboard.tables import Dashboard
from medsim_annot.services.gold.table import code_ratings, gold_table, latest_ratings
from medsim_annot.services.quality import QualitySettings, rater_checks, warnings_of
from medsim_annot.stats import _frame
from medsim_annot.stats.quality import history_checks

T = TypeVar("T")


class InLine:
    """An executor that runs each task at once, in the calling thread: a stand-in for
    ``ThreadPoolExecutor`` (same constructor, context manager and ``submit``)."""

    def __init__(self, *args: Any, **kwargs: Any):
        pass

    def __enter__(self) -> InLine:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        done: Future[T] = Future()
        done.set_result(fn(*args, **kwargs))
        return done


def _naive_times(hist: pd.DataFrame) -> pd.DataFrame:
    """*hist* with ``rated_at`` as naive UTC: the engine orders by time, and naive
    datetime64 avoids an object array of Timestamps (runs' start/end are UTC)."""
    if C.RATED_AT in hist.columns and isinstance(hist[C.RATED_AT].dtype, pd.DatetimeTZDtype):
        return hist.assign(
            **{C.RATED_AT: hist[C.RATED_AT].dt.tz_convert("UTC").dt.tz_localize(None)}
        )
    return hist


def _prepared_history(
    history: pd.DataFrame, scale: Scale
) -> tuple[pd.DataFrame, tuple[np.ndarray, np.ndarray] | None]:
    """The history sorted by (pair, annotator), coded and with naive UTC times, and its
    rows' pair and annotator codes (None when the codes are not shared)."""
    coded = sorted_coded(history) if _frame.REUSE_CODES else None
    if coded is None:
        hist, codes = history.sort_values([C.PAIR_ID, C.ANNOTATOR], kind="stable"), None
    else:
        hist, codes = coded[0], (coded[1], coded[2])
    if C.VALUE not in hist.columns:
        hist = code_ratings(hist, scale)
    return _naive_times(hist), codes


def _history_parts(
    prepared: Future[tuple[pd.DataFrame, tuple[np.ndarray, np.ndarray] | None]], scale: Scale
) -> tuple[pd.DataFrame, pd.DataFrame]:
    hist, codes = prepared.result()
    return history_checks(hist, scale, codes=codes)


def _checks(
    prepared: Future[tuple[pd.DataFrame, Any]],
    scale: Scale,
    answers: dict[str, str],
    settings: QualitySettings,
) -> pd.DataFrame:
    """The rater checks of every answer (the duplicates' too: each showing is an answer)."""
    return rater_checks(prepared.result()[0], scale, answers, settings)


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
    """
    reasons: dict[str, str] = {}
    binary = scale.has_polarity
    settings = check_settings or QualitySettings()
    saved = history if history is not None and len(history) else None
    # Work in a second thread beside the gold table and the agreement report, which is most
    # of the time (NumPy and pandas release the GIL in their large operations): the
    # history's coding, its rater-quality checks and the rater checks (none needs the
    # current ratings' statistics), and the audit once the gold table is there. Every input
    # is only read, and each result is the same as one after the other (a hypothesis test
    # compares them; at 100,000 pairs x 3 on two cores the computation took 0.52 s with
    # only the audit and the rater checks beside). With bootstrap intervals the audit stays
    # in this thread: the bootstrap silences scipy's warnings with
    # ``warnings.catch_warnings``, which changes process-wide state.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="dashboard") as pool:
        if saved is not None:
            hist_later = pool.submit(_prepared_history, saved, scale)
            parts_later = pool.submit(_history_parts, hist_later, scale)
            # Every answer counts for the checks: the duplicates' too (each is an answer).
            checks_later = pool.submit(_checks, hist_later, scale, check_answers or {}, settings)
        early = report = None
        if isinstance(pairs, Future):
            if not pairs.done():
                # The pairs are still being read: the agreement statistics, on the latest
                # ratings as if every rated pair is in the study (so in a stored study),
                # start meanwhile; they are computed again below if a pair was not.
                early = latest_ratings(current, scale)
                if early is not None:
                    report, basis = agreement_svc.design_agreement(
                        early.frame, scale, agreement_pairs=agreement_pairs, enc=early.codes
                    )
            pairs = pairs.result()
        has_labels = C.AUTO_LABEL in pairs.columns and pairs[C.AUTO_LABEL].notna().any()

        def audit_of(frame: pd.DataFrame) -> Future[Any]:
            return (InLine() if bootstrap else pool).submit(
                agreement_svc.audit_report,
                pairs,
                frame,
                scale,
                by=group_columns(pairs),
                majority=majority,
                bootstrap=bootstrap,
                seed=seed,
            )

        # With the early ratings, the audit need not wait for the gold table either.
        audit_later = audit_of(early.frame) if binary and has_labels and early else None
        gt = gold_table(pairs, current, scale, majority=majority, early=early)
        ratings = gt.ratings
        # Whether the figures started early stand: every rated pair is a pair of the study.
        stands = early is not None and gt.codes is early.codes
        if saved is None:
            # The current ratings are the history: their codes are the gold table's.
            codes = None if gt.codes is None else (gt.codes.item, gt.codes.annotator)
            hist_later = InLine().submit(lambda: (_naive_times(ratings), codes))
            parts_later = pool.submit(_history_parts, hist_later, scale)
            checks_later = pool.submit(rater_checks, current, scale, check_answers or {}, settings)
        if binary and has_labels:
            if audit_later is None or not stands:
                audit_later = audit_of(ratings)
        elif binary:
            reasons["audit"] = "the pairs have no automatic labels"
        else:
            reasons["audit"] = f"the {scale.name} scale has no positive/negative values"
        if report is None or not stands:
            report, basis = agreement_svc.design_agreement(
                ratings, scale, agreement_pairs=agreement_pairs, enc=gt.codes
            )
        hist, hist_codes = hist_later.result()
        # IAA-1 per annotator is in the agreement report already: the outlier check reuses it.
        quality = agreement_svc.rater_quality_report(
            ratings,
            scale,
            history=hist,
            iaa=report.per_annotator,
            history_codes=hist_codes,
            enc=gt.codes,
            checked=parts_later.result(),
        )
        audit = audit_later.result() if audit_later is not None else None
        checks = checks_later.result()
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
        rater_checks=checks,
        check_warnings=tuple(warnings_of(checks, settings)),
        quality_settings=settings,
    )
