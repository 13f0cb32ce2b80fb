"""Every dashboard table from frames (no database): :func:`compute_dashboard` calls the
agreement services once each and keeps their results in a :class:`Dashboard`."""

from __future__ import annotations

from collections.abc import Callable, Collection
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import pandas as pd

from data_schemas import columns as C
from data_schemas.pairs import group_columns
from data_schemas.ratings import sorted_coded
from data_schemas.scales import Scale
from medsim_annot.services import agreement as agreement_svc
from medsim_annot.services.dashboard.tables import Dashboard
from medsim_annot.services.gold import code_ratings, gold_table
from medsim_annot.services.quality import QualitySettings, rater_checks, warnings_of
from medsim_annot.stats import _frame

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


#: Seed of the audit's bootstrap intervals, so a report can be reproduced.
BOOTSTRAP_SEED = 20200207


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
    check_answers: dict[str, str] | None = None,
    check_settings: QualitySettings | None = None,
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
    check_answers : dict, optional
        ``pair_id`` to the known answer of the study's check pairs.
    check_settings : QualitySettings, optional
        The rushed threshold and the minimum accuracy on check pairs (default: the
        defaults of :class:`~medsim_annot.services.quality.QualitySettings`).
    """
    gt = gold_table(pairs, current, scale, majority=majority)
    ratings = gt.ratings
    reasons: dict[str, str] = {}
    binary = scale.has_polarity
    hist = ratings
    # Pair and annotator codes of the rows of *hist* (the runs and repeats use them).
    hist_codes = None if gt.codes is None else (gt.codes.item, gt.codes.annotator)
    if history is not None and len(history):
        coded = sorted_coded(history) if _frame.REUSE_CODES else None
        if coded is None:
            hist, hist_codes = history.sort_values([C.PAIR_ID, C.ANNOTATOR], kind="stable"), None
        else:
            hist, hist_codes = coded[0], (coded[1], coded[2])
        if C.VALUE not in hist.columns:
            hist = code_ratings(hist, scale)
    if C.RATED_AT in hist.columns:
        if isinstance(hist[C.RATED_AT].dtype, pd.DatetimeTZDtype):
            # Naive UTC: the engine orders by time, and naive datetime64 avoids an object
            # array of Timestamps (runs' start/end are UTC).
            hist = hist.assign(
                **{C.RATED_AT: hist[C.RATED_AT].dt.tz_convert("UTC").dt.tz_localize(None)}
            )
    settings = check_settings or QualitySettings()
    # The audit and the rater checks need nothing of the agreement report: a second thread
    # computes them meanwhile (NumPy and pandas release the GIL in their large operations;
    # 0.60 s -> 0.41-0.46 s for the three at 100,000 pairs x 3 on two cores). Every input is
    # only read, and each result is the same as one after the other. With bootstrap
    # intervals the audit stays in this thread: the bootstrap silences scipy's warnings
    # with ``warnings.catch_warnings``, which changes process-wide state.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="dashboard") as pool:
        audit_later = None
        if binary and C.AUTO_LABEL in pairs.columns and pairs[C.AUTO_LABEL].notna().any():
            audit_later = (InLine() if bootstrap else pool).submit(
                agreement_svc.audit_report,
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
        # Every answer counts for the checks: the duplicates' too (each showing is an answer).
        checks_later = pool.submit(
            rater_checks,
            hist if history is not None and len(history) else current,
            scale,
            check_answers or {},
            settings,
        )
        report, basis = agreement_svc.design_agreement(
            ratings, scale, agreement_pairs=agreement_pairs, enc=gt.codes
        )
        # IAA-1 per annotator is in the agreement report already: the outlier check reuses it.
        quality = agreement_svc.rater_quality_report(
            ratings,
            scale,
            history=hist,
            iaa=report.per_annotator,
            history_codes=hist_codes,
            enc=gt.codes,
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
