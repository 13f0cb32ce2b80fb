"""Rater checks of a study: check pairs (pairs with a known answer, served blind among the
others), rushed answers and the pace of work. The statistics are
:mod:`medsim_annot.stats.checks`; this module reads the study's settings and check answers,
writes them (one transaction each, with an event), and joins the per-doctor figures the
dashboard and ``medsim report`` show.

The settings live in the study's config under ``quality``: ``rushed_ms`` (an answer faster
than this is rushed; default :data:`~medsim_annot.stats.checks.RUSHED_MS`),
``check_min_accuracy`` (a doctor below this accuracy on check pairs gets a warning; none
by default) and ``check_tolerance`` (graded scales: how far from the known answer still
counts as correct).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np
import pandas as pd

from data_schemas import columns as C
from data_schemas.errors import InputError, Problem
from data_schemas.options import CHECK_MIN_ACCURACY, CHECK_TOLERANCE, RUSHED_THRESHOLD
from data_schemas.ratings import code_ratings
from data_schemas.scales import Scale
from medsim_annot.i18n import fmt_int, fmt_percent, tn
from medsim_annot.io import read_table
from medsim_annot.services.studies import check_answer_values, current_ratings
from medsim_annot.services.study_handle import Study
from medsim_annot.stats.checks import (
    RUSHED_MS,
    below_threshold,
    check_accuracy,
    pace,
    rushed,
    rushed_rate,
)
from medsim_annot.storage import events as events_store
from medsim_annot.storage import session_scope
from medsim_annot.storage import studies as store

#: Per-doctor columns of :func:`rater_checks`, in order.
RATER_CHECK_COLUMNS = [
    C.ANNOTATOR,
    "n_checks",
    "n_correct",
    "check_accuracy",
    "ci_low",
    "ci_high",
    "check_warning",
    "n_timed",
    "n_rushed",
    "rushed_rate",
    "median_seconds",
    "pairs_per_hour",
]


@dataclass(frozen=True)
class QualitySettings:
    """A study's rater-check settings (see the module docstring)."""

    rushed_ms: int = RUSHED_MS
    check_min_accuracy: float | None = None
    check_tolerance: float = 0.0

    def __post_init__(self) -> None:
        RUSHED_THRESHOLD.check(self.rushed_ms)
        if self.check_min_accuracy is not None:
            CHECK_MIN_ACCURACY.check(self.check_min_accuracy)
        CHECK_TOLERANCE.check(self.check_tolerance)

    @classmethod
    def of(cls, config: dict) -> QualitySettings:
        """The settings stored in a study's *config* (defaults where absent)."""
        q = dict(config.get("quality") or {})
        return cls(
            rushed_ms=int(q.get("rushed_ms", RUSHED_MS)),
            check_min_accuracy=(
                None if q.get("check_min_accuracy") is None else float(q["check_min_accuracy"])
            ),
            check_tolerance=float(q.get("check_tolerance", 0.0)),
        )

    def to_config(self) -> dict:
        return {
            "rushed_ms": int(self.rushed_ms),
            "check_min_accuracy": self.check_min_accuracy,
            "check_tolerance": float(self.check_tolerance),
        }


def study_settings(study: Study) -> QualitySettings:
    """The rater-check settings of *study* (from its config as the handle holds it)."""
    return QualitySettings.of(study.config)


def set_settings(
    study: Study,
    *,
    rushed_ms: int | None = None,
    check_min_accuracy: float | None = None,
    clear_min_accuracy: bool = False,
    check_tolerance: float | None = None,
) -> QualitySettings:
    """Change the rater-check settings of *study* (only those given); records an event.
    The rest of the config is kept as stored now (the handle may be older)."""
    engine = study.engine
    info = study.reloaded()
    now = QualitySettings.of(info.config)
    changes: dict = {}
    if rushed_ms is not None:
        changes["rushed_ms"] = rushed_ms
    if check_min_accuracy is not None:
        changes["check_min_accuracy"] = check_min_accuracy
    if clear_min_accuracy:
        changes["check_min_accuracy"] = None
    if check_tolerance is not None:
        changes["check_tolerance"] = check_tolerance
    new = replace(now, **changes)
    config = dict(info.config)
    config["quality"] = new.to_config()
    with session_scope(engine) as s:
        store.set_config(s, info.id, config)
        events_store.add_event(
            s, "quality_settings_changed", study_id=info.id, detail=new.to_config()
        )
    return new


# --------------------------------------------------------------------------- check pairs


def with_check_answers(
    pairs: pd.DataFrame, checks: pd.DataFrame, file: str | None = None
) -> pd.DataFrame:
    """*pairs* with the ``check_answer`` of a checks file (``pair_id``, ``check_answer``)
    set on the pairs it names; an id that is not among the pairs is an error naming the
    row. The answers are checked against the scale when the study is created."""
    missing = [c for c in (C.PAIR_ID, C.CHECK_ANSWER) if c not in checks.columns]
    if missing:
        raise InputError([Problem("required column is missing", column=c) for c in missing], file)
    ids = pairs[C.PAIR_ID].astype(str)
    known = set(ids)
    given = [str(p).strip() for p in checks[C.PAIR_ID].tolist()]
    problems = [
        Problem(f"pair_id '{p}' is not in the pairs file", row=i + 2, column=C.PAIR_ID)
        for i, p in enumerate(given)
        if p not in known
    ]
    if problems:
        raise InputError(problems, file)
    answer = dict(zip(given, checks[C.CHECK_ANSWER].astype(str).str.strip()))
    out = pairs.copy()
    before = (
        out[C.CHECK_ANSWER].astype("string").fillna("").to_numpy(dtype=object)
        if C.CHECK_ANSWER in out.columns
        else np.full(len(out), "", dtype=object)
    )
    out[C.CHECK_ANSWER] = [answer.get(p, b) for p, b in zip(ids, before)]
    return out


def check_answers(study: Study) -> dict[str, str]:
    """``pair_id`` to the known answer of each check pair of *study* (admin side only)."""
    with session_scope(study.engine) as s:
        return dict(store.check_answers(s, study.id))


@dataclass(frozen=True)
class CheckPairsMarked:
    """What :func:`mark_check_pairs` did to *study*: pairs ``marked`` and ``unmarked``, and
    the ``checks`` (check pairs) the study has now. :meth:`to_dict` gives them by name."""

    study: str
    marked: int
    unmarked: int
    checks: int

    def to_dict(self) -> dict:
        return asdict(self)


def mark_check_pairs(
    study: Study, frame: pd.DataFrame, *, file: str | None = None
) -> CheckPairsMarked:
    """Mark pairs of an existing study as check pairs from a frame with ``pair_id`` and
    ``check_answer`` (an empty answer unmarks the pair). Every id must be a pair of the
    study and every answer a decisive value of its scale; nothing is written otherwise.
    The pairs stay where they are in the queues: their ratings, past and future, count
    toward the accuracy on check pairs."""
    missing = [c for c in (C.PAIR_ID, C.CHECK_ANSWER) if c not in frame.columns]
    if missing:
        raise InputError([Problem("required column is missing", column=c) for c in missing], file)
    ids = [str(p).strip() for p in frame[C.PAIR_ID].tolist()]
    with session_scope(study.engine) as s:
        known = set(store.pair_ids(s, study.id))
        problems = [
            Problem(
                f"pair_id '{p}' is not a pair of study '{study.name}'", row=i + 2, column=C.PAIR_ID
            )
            for i, p in enumerate(ids)
            if p not in known
        ]
        try:
            answers = check_answer_values(frame, study.scale, file)
        except InputError as exc:
            problems += exc.problems
        if problems:
            raise InputError(sorted(problems, key=lambda p: p.row or 0), file)
        change = {p: answers.get(i) for i, p in enumerate(ids)}
        store.set_check_answers(s, study.id, change)
        marked = sum(v is not None for v in change.values())
        events_store.add_event(
            s,
            "check_pairs_marked",
            study_id=study.id,
            detail={"marked": marked, "unmarked": len(change) - marked},
        )
        total = len(store.check_answers(s, study.id))
    return CheckPairsMarked(
        study=study.name, marked=marked, unmarked=len(change) - marked, checks=total
    )


# --------------------------------------------------------------------------- the figures
def rater_checks(
    current: pd.DataFrame,
    scale: Scale,
    answers: dict[str, str],
    settings: QualitySettings,
) -> pd.DataFrame:
    """Per doctor: accuracy on check pairs (with its Wilson interval and ``check_warning``
    below the study's minimum), rushed answers and pace (:data:`RATER_CHECK_COLUMNS`).

    *current*: the current ratings of every slot (duplicates included: each showing is an
    answer), long, with ``rating`` and ``elapsed_ms``; *answers*: ``pair_id`` to the known
    answer (:func:`check_answers`)."""
    if current.empty:
        return pd.DataFrame(columns=RATER_CHECK_COLUMNS)
    # Coded once: a frame that has its codes already (the dashboard's) is used as it is.
    frame = current if C.VALUE in current.columns else code_ratings(current, scale)
    codes = {
        str(pid): code
        for pid, code in ((pid, scale.rating_code(v)) for pid, v in answers.items())
        if not np.isnan(code)
    }
    acc = check_accuracy(frame, codes, tolerance=settings.check_tolerance)
    acc["check_warning"] = below_threshold(acc, settings.check_min_accuracy)
    out = acc.merge(rushed_rate(frame, settings.rushed_ms), on=C.ANNOTATOR, how="outer").merge(
        pace(frame)[[C.ANNOTATOR, "median_seconds", "pairs_per_hour"]], on=C.ANNOTATOR, how="outer"
    )
    out["check_warning"] = out["check_warning"].fillna(False).astype(bool)
    return out[RATER_CHECK_COLUMNS].sort_values(C.ANNOTATOR, kind="stable").reset_index(drop=True)


def warnings_of(table: pd.DataFrame, settings: QualitySettings) -> list[str]:
    """One sentence per doctor below the minimum accuracy on check pairs."""
    out = []
    for r in table[table["check_warning"]].to_dict(orient="records"):
        out.append(
            tn(
                "{name} answered {k} of {n} check pair correctly ({share}), below the "
                "study's minimum of {minimum}",
                "{name} answered {k} of {n} check pairs correctly ({share}), below the "
                "study's minimum of {minimum}",
                int(r["n_checks"]),
                name=r[C.ANNOTATOR],
                k=fmt_int(r["n_correct"]),
                n=fmt_int(r["n_checks"]),
                share=fmt_percent(r["check_accuracy"]),
                minimum=fmt_percent(settings.check_min_accuracy),
            )
        )
    return out


def drop_rushed(current: pd.DataFrame, rushed_ms: int) -> tuple[pd.DataFrame, int]:
    """*current* without the ratings made faster than *rushed_ms*, and how many went."""
    flag = rushed(current, rushed_ms)
    return current[~flag].reset_index(drop=True), int(flag.sum())


def study_rater_checks(study: Study) -> pd.DataFrame:
    """:func:`rater_checks` of a stored study (its current ratings, duplicates included)."""
    current = current_ratings(study, include_duplicates=True)
    return rater_checks(
        current, study.scale, check_answers(study), QualitySettings.of(study.config)
    )


def load_checks(path) -> pd.DataFrame:
    """Read a checks file (``pair_id``, ``check_answer``; any supported table format)."""
    return read_table(path)
