"""Quality over time of a study: each doctor's windowed figures (every *n* ratings and per
day), the drift alert with its evidence, the guideline's versions marked on the timeline,
and the admin's "pause" of a doctor (an event).

The statistics are :mod:`medsim_annot.stats.drift`; this module reads the study's rating
history, check answers, guideline versions and settings, and writes the settings, guideline
revisions and pauses (one transaction each, with an event). The settings live in the study's
config under ``drift``: ``window`` (ratings per window, default 50), ``drift_margin``
(default 0.15) and ``baseline_windows`` (default 2).

Recalibration (sending a doctor back to practice) is the practice round's service
(``send_back_to_practice(study, annotator_name, *, by, reason)``, issue 39 item 1); the
dashboard's button beside "Pause" calls it. :func:`pause_annotator` records only the pause.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from data_schemas import columns as C
from data_schemas.options import BASELINE_WINDOWS, DRIFT_MARGIN, QUALITY_WINDOW
from data_schemas.ratings import code_ratings
from data_schemas.scales import Scale
from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import current_language
from medsim_annot.services.quality import check_answers
from medsim_annot.services.studies import HISTORY_COLUMNS, rating_history, ratings_version
from medsim_annot.services.study_handle import Study
from medsim_annot.stats import drift as drift_stats
from medsim_annot.storage import arrow as arrow_store
from medsim_annot.storage import events as events_store
from medsim_annot.storage import guidelines as guideline_store
from medsim_annot.storage import history_arrow, session_scope
from medsim_annot.storage import studies as store

#: Event kinds this module records.
PAUSED = "annotator_paused"
SETTINGS_CHANGED = "drift_settings_changed"
GUIDELINE_REVISED = "guideline_revised"

REVISION_COLUMNS = ["version", "at", "note"]


@dataclass(frozen=True)
class DriftSettings:
    """A study's quality-over-time settings (see the module docstring)."""

    window: int = drift_stats.WINDOW
    margin: float = drift_stats.MARGIN
    baseline_windows: int = drift_stats.BASELINE

    def __post_init__(self) -> None:
        QUALITY_WINDOW.check(self.window)
        DRIFT_MARGIN.check(self.margin)
        BASELINE_WINDOWS.check(self.baseline_windows)

    @classmethod
    def of(cls, config: dict) -> DriftSettings:
        d = dict(config.get("drift") or {})
        return cls(
            window=d.get("window", drift_stats.WINDOW),
            margin=d.get("drift_margin", drift_stats.MARGIN),
            baseline_windows=d.get("baseline_windows", drift_stats.BASELINE),
        )

    def to_config(self) -> dict:
        return {
            "window": int(self.window),
            "drift_margin": float(self.margin),
            "baseline_windows": int(self.baseline_windows),
        }


def study_settings(study: Study) -> DriftSettings:
    """The quality-over-time settings of *study*."""
    return DriftSettings.of(study.config)


def set_settings(
    study: Study,
    *,
    window: int | None = None,
    margin: float | None = None,
    baseline_windows: int | None = None,
) -> DriftSettings:
    """Change the quality-over-time settings of *study* (only those given; a value out of
    range is refused before anything is written); records an event."""
    info = study.reloaded()
    changes: dict = {}
    if window is not None:
        changes["window"] = window
    if margin is not None:
        changes["margin"] = margin
    if baseline_windows is not None:
        changes["baseline_windows"] = baseline_windows
    new = replace(DriftSettings.of(info.config), **changes)  # validates
    config = dict(info.config)
    config["drift"] = new.to_config()
    with session_scope(study.engine) as s:
        store.set_config(s, info.id, config)
        events_store.add_event(s, SETTINGS_CHANGED, study_id=info.id, detail=new.to_config())
    return new


@dataclass(frozen=True)
class QualityOverTime:
    """Every doctor's windows (``windows`` every *n* ratings, ``days`` per day), the
    ``alerts`` (:data:`~medsim_annot.stats.drift.ALERT_COLUMNS`, over the count windows),
    the guideline ``revisions`` (:data:`REVISION_COLUMNS`) and plain ``notes``."""

    windows: pd.DataFrame
    days: pd.DataFrame
    alerts: pd.DataFrame
    revisions: pd.DataFrame
    settings: DriftSettings
    notes: tuple[str, ...] = field(default=())

    @property
    def flagged(self) -> list[str]:
        """The doctors with a drift alert."""
        return drift_stats.flagged(self.alerts)

    def readings(self) -> list[str]:
        """One sentence per doctor with an alert: their first alert's evidence."""
        if not len(self.alerts):
            return []
        first = self.alerts.drop_duplicates(C.ANNOTATOR, keep="first")
        return [str(e) for e in first["evidence"]]


def quality_over_time_of(
    history: pd.DataFrame,
    scale: Scale,
    *,
    answers: dict[str, str] | None = None,
    settings: DriftSettings | None = None,
    revisions: pd.DataFrame | None = None,
    tolerance: float = 0.0,
) -> QualityOverTime:
    """:class:`QualityOverTime` from frames: *history* is every saved rating (``pair_id``,
    ``annotator``, ``rating`` or ``value``, ``rated_at``, optional ``elapsed_ms``,
    ``source``, ``guideline_version``); *answers* the known answers of the check pairs."""
    st = settings or DriftSettings()
    frame = history if C.VALUE in history.columns else code_ratings(history, scale)
    codes = {
        str(pid): code
        for pid, code in ((pid, scale.rating_code(v)) for pid, v in (answers or {}).items())
        if not np.isnan(code)
    }
    counted = drift_stats.quality_windows(
        frame,
        window=st.window,
        answers=codes,
        tolerance=tolerance,
        baseline_windows=st.baseline_windows,
    )
    daily = drift_stats.quality_windows(
        frame, by="day", answers=codes, tolerance=tolerance, baseline_windows=st.baseline_windows
    )
    alerts = drift_stats.drift_alerts(
        counted, margin=st.margin, baseline_windows=st.baseline_windows
    )
    revs = revisions if revisions is not None else pd.DataFrame(columns=REVISION_COLUMNS)
    return QualityOverTime(counted.table, daily.table, alerts, revs, st, counted.notes)


def history_of(study: Study) -> pd.DataFrame:
    """The frame of :func:`~medsim_annot.services.studies.rating_history` (every saved
    rating, oldest first, the same columns, types and values), read column-wise
    (:mod:`medsim_annot.storage.history_arrow`) on SQLite and PostgreSQL: at 300,000
    ratings the ORM rows cost most of quality over time. Any other store, or values that do
    not fit the column-wise form, read the ORM rows."""
    h = None
    if arrow_store.supports_arrow(study.engine):
        h = history_arrow.rating_history_arrays(study.engine, study.id)
    if h is None:
        return rating_history(study)
    if not len(h):
        return pd.DataFrame([], columns=HISTORY_COLUMNS)

    def text(lookup: np.ndarray, codes: np.ndarray) -> pd.Series:
        return pd.Series(pd.array(lookup, dtype="str").take(codes))

    def whole(values: np.ndarray, missing: np.ndarray) -> pd.Series:
        # as pandas infers a column of ints and Nones: int64, float64 with NaN, or Nones
        if not missing.any():
            return pd.Series(values)
        if missing.all():
            return pd.Series([None] * len(values), dtype=object)
        return pd.Series(np.where(missing, np.nan, values.astype(np.float64)))

    return pd.DataFrame(
        {
            "rating_id": pd.Series(h.rating_id),
            C.PAIR_ID: text(h.pair_ids, h.pair_code),
            C.ANNOTATOR: text(h.names, h.annotator_code),
            C.RATING: text(h.values, h.value_code),
            C.UNCLEAR: pd.Series(h.unclear),
            C.COMMENT: text(h.comments, h.comment_code),
            C.RATED_AT: pd.Series(h.rated_at).dt.tz_localize("UTC"),
            "elapsed_ms": whole(h.elapsed_ms, h.elapsed_missing),
            "source": text(h.sources, h.source_code),
            "slot": text(h.kinds, h.kind_code),
            "guideline_version": whole(h.guideline_version, h.guideline_missing),
        }
    )


def quality_over_time(study: Study, *, settings: DriftSettings | None = None) -> QualityOverTime:
    """Quality over time of *study* (its history, check answers, guideline revisions and
    settings)."""
    # Local name: the quality module's settings are the rater checks'.
    tolerance = float(dict(study.config.get("quality") or {}).get("check_tolerance", 0.0))
    return quality_over_time_of(
        history_of(study),
        study.scale,
        answers=check_answers(study),
        settings=settings or study_settings(study),
        revisions=guideline_revisions(study),
        tolerance=tolerance,
    )


#: Quality over time of the studies looked at lately, keyed by (database, study, ratings
#: version, guideline version, settings, language): a new rating, revision or setting is a new key,
#: so nothing is ever stale; the oldest entry goes when a fifth arrives.
_CACHE: dict[tuple, QualityOverTime] = {}
CACHE_SIZE = 4


def clear_cache() -> None:
    """Forget every cached quality over time (benchmarks: a cold first load)."""
    _CACHE.clear()


def study_quality_over_time(study: Study) -> QualityOverTime:
    """:func:`quality_over_time` of *study*, computed once per ratings version (the
    dashboard and the report share it)."""
    settings = study_settings(study)
    key = (
        str(study.engine.url),
        study.id,
        ratings_version(study),
        guideline_version(study),
        settings,
        repr(sorted(dict(study.config.get("quality") or {}).items())),
        tuple(sorted(check_answers(study).items())),
        # its evidence and notes are sentences: one language's are never another's
        current_language(),
    )
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    out = quality_over_time(study, settings=settings)
    while len(_CACHE) >= CACHE_SIZE:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = out
    return out


# --------------------------------------------------------------------------- guideline versions
def guideline_revisions(study: Study) -> pd.DataFrame:
    """The study's guideline revisions (version 2 on), oldest first: ``version``, ``at``
    (UTC), ``note``."""
    with session_scope(study.engine) as s:
        rows = guideline_store.versions(s, study.id)
    return pd.DataFrame(
        [(v, at, note) for v, at, note, _ in rows], columns=REVISION_COLUMNS
    ).astype({"version": "int64"})


def guideline_version(study: Study) -> int:
    """The guideline version in force (1 until the first revision)."""
    with session_scope(study.engine) as s:
        return guideline_store.current_version(s, study.id)


def revise_guideline(study: Study, text: str, *, note: str = "") -> int:
    """Make *text* the study's guideline as its next version (ratings saved from now on
    record it) and return the version; records an event. An empty text is refused."""
    if not str(text).strip():
        raise UsageProblem("the new guideline is empty: nothing was changed")
    with session_scope(study.engine) as s:
        version = guideline_store.add_version(s, study.id, str(text), note=str(note))
        events_store.add_event(
            s, GUIDELINE_REVISED, study_id=study.id, detail={"version": version, "note": note}
        )
    return version


# --------------------------------------------------------------------------- pause
def pause_annotator(
    study: Study, annotator_name: str, *, by: str, reason: str, evidence: str = ""
) -> None:
    """Record that the admin *by* paused *annotator_name* of *study* for *reason* (with the
    drift alert's *evidence*): an ``annotator_paused`` event. An unknown name is refused,
    nothing written. Sending the doctor back to practice is the practice round's
    ``send_back_to_practice``."""
    if not str(reason).strip():
        raise UsageProblem("a pause needs a reason")
    with session_scope(study.engine) as s:
        aid = store.annotator_id(s, study.id, annotator_name)
        if aid is None:
            raise UsageProblem(f"study {study.name!r} has no annotator {annotator_name!r}")
        events_store.add_event(
            s,
            PAUSED,
            study_id=study.id,
            annotator_id=aid,
            detail={"annotator": annotator_name, "by": by, "reason": reason, "evidence": evidence},
        )
