"""Predictions stored with a study: ``medsim study predictions add|list|adjudicators`` and
the Study setup page's upload call these functions.

A scores file (``pair_id`` and numeric score columns, as ``medsim score`` writes) becomes a
new *version* of the study's predictions named after the model (default: the score
column), with the file's SHA-256, in one transaction with a ``predictions_added`` event;
a bad file (a pair the study does not have, a score that is not a number or is missing, a
pair of the study without a score) is refused with every problem named by file, row and
column, and nothing is stored. The gold export's manifest lists every stored version.

Predictions never reach an annotator: the serving queries and the rating endpoint never
read these tables, and an adjudicator sees a pair's score only when the admin turned
"adjudicators see the model's score" (``show_to_adjudicators``) on for the study.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import pandas as pd

from data_schemas import columns as C
from data_schemas.errors import InputError, Problem
from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import fmt_decimal, fmt_int, t
from medsim_annot.services.scoring import read_scores
from medsim_annot.services.study_handle import Study
from medsim_annot.storage import events as events_store
from medsim_annot.storage import predictions as store
from medsim_annot.storage import session_scope, utcnow, with_retry
from medsim_annot.storage import studies as studies_store
from medsim_annot.storage import tiebreak as tiebreak_store
from medsim_annot.storage.predictions import PredictionRow

#: The study config key of the predictions' settings.
CONFIG_KEY = "predictions"
#: Setting: adjudicators see the model's score of a pair (off by default).
SHOW_TO_ADJUDICATORS = "show_to_adjudicators"
#: Longest prediction name stored.
MAX_NAME = 200


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def pick_column(frame: pd.DataFrame, score_column: str | None, file: str) -> str:
    cols = [str(c) for c in frame.columns if c != C.PAIR_ID]
    if score_column is None:
        if len(cols) != 1:
            raise InputError.single(
                t(
                    "has {n} score columns ({columns}): choose one as the score column "
                    "(score_column)",
                    n=fmt_int(len(cols)),
                    columns=", ".join(cols),
                ),
                file=file,
            )
        return cols[0]
    if score_column not in cols:
        raise InputError.single(
            t(
                "has no score column '{column}' (columns: {columns})",
                column=score_column,
                columns=", ".join(cols),
            ),
            file=file,
            column=score_column,
        )
    return score_column


def check_scores(
    frame: pd.DataFrame, column: str, study_pairs: list[str], *, file: str
) -> dict[str, float]:
    """``pair_id -> score`` of a typed scores frame, or :class:`InputError` listing every
    problem: a pair the study does not have (its row), a missing or non-finite score (its row
    and column), pairs of the study without a score (how many, the first few)."""
    known = set(study_pairs)
    ids = frame[C.PAIR_ID].astype(str).to_numpy()
    values = frame[column].to_numpy(dtype=np.float64)
    problems = []
    for i, (pid, v) in enumerate(zip(ids, values, strict=True)):
        if pid not in known:
            problems.append(
                Problem(
                    t("pair_id '{pair_id}' is not a pair of the study", pair_id=pid),
                    row=i + 2,
                    column=C.PAIR_ID,
                )
            )
        elif not np.isfinite(v):
            problems.append(Problem(t("the score is missing"), row=i + 2, column=column))
    covered = set(ids)
    missing = [p for p in study_pairs if p not in covered]
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        problems.append(
            Problem(
                t(
                    "has no score for {missing} of the study's {n} pairs ({shown}); the "
                    "prediction-powered audit needs a score for every pair",
                    missing=fmt_int(len(missing)),
                    n=fmt_int(len(study_pairs)),
                    shown=shown,
                ),
                column=column,
            )
        )
    if problems:
        raise InputError(problems, file)
    return {str(p): float(v) for p, v in zip(ids, values, strict=True)}


def add_predictions(
    study: Study,
    path: str | os.PathLike,
    *,
    score_column: str | None = None,
    name: str | None = None,
    source_name: str | None = None,
) -> PredictionRow:
    """Store the scores of *path* as the next version of *study*'s predictions *name*
    (default: the score column); returns the stored version. *source_name* is the file name
    recorded (an upload's original name; default the file's name)."""
    path = Path(path)
    file = source_name or str(path)
    try:
        frame = read_scores(path)
    except InputError as e:
        raise e.renamed(str(path), file) if source_name else e from None
    column = pick_column(frame, score_column, file)
    label = (name if name is not None else column).strip()
    if not label or len(label) > MAX_NAME:
        raise UsageProblem(
            t("a prediction name (name) has 1 to {n} characters", n=fmt_int(MAX_NAME))
        )
    digest = _sha256(path)

    def run() -> PredictionRow:
        with session_scope(study.engine) as s:
            items = store.item_ids_by_pair(s, study.id)
            by_pair = check_scores(frame, column, studies_store.pair_ids(s, study.id), file=file)
            at = utcnow()
            row = store.insert_version(
                s,
                study_id=study.id,
                name=label,
                score_column=column,
                source=source_name or path.name,
                sha256=digest,
                scores={items[p]: v for p, v in by_pair.items()},
                actor=events_store.current_actor(),
                at=at,
            )
            detail = {k: v for k, v in row.to_dict().items() if k not in ("created_at", "actor")}
            events_store.add_event(s, "predictions_added", study_id=study.id, detail=detail, at=at)
            return row

    return with_retry(run)


def prediction_versions(study: Study) -> list[PredictionRow]:
    """Every stored version of *study*'s predictions, oldest first."""
    with session_scope(study.engine) as s:
        return store.versions(s, study.id)


def stored_predictions(study: Study, name: str | None = None) -> pd.Series | None:
    """The latest stored version of *name* (any name: the latest added) as a Series
    ``pair_id -> score`` named after it (``attrs["version"]`` its version); ``None`` when
    the study has none."""
    with session_scope(study.engine) as s:
        row = store.latest(s, study.id, name)
        if row is None:
            return None
        got = store.scores(s, row.id)
    out = pd.Series(got, name=row.name, dtype=np.float64)
    out.attrs["version"] = row.version
    return out


def manifest_entry(study: Study) -> list[dict]:
    """The predictions stored with *study*, for the gold manifest (name, version, score
    column, source file, SHA-256, pairs scored, when added; never the scores)."""
    return [
        {k: v for k, v in r.to_dict().items() if k != "actor"} for r in prediction_versions(study)
    ]


def adjudicators_see_predictions(study: Study) -> bool:
    """Whether *study*'s admin lets adjudicators see the model's score of a pair."""
    return bool((study.config.get(CONFIG_KEY) or {}).get(SHOW_TO_ADJUDICATORS, False))


def set_show_to_adjudicators(study: Study, show: bool) -> Study:
    """Turn "adjudicators see the model's score" (show_to_adjudicators) on or off for
    *study* (event ``predictions_shown_to_adjudicators``); returns the fresh handle."""

    def run() -> None:
        with session_scope(study.engine) as s:
            config, _ = tiebreak_store.study_design(s, study.id)
            config[CONFIG_KEY] = {**(config.get(CONFIG_KEY) or {}), SHOW_TO_ADJUDICATORS: show}
            studies_store.set_config(s, study.id, config)
            events_store.add_event(
                s,
                "predictions_shown_to_adjudicators",
                study_id=study.id,
                detail={SHOW_TO_ADJUDICATORS: bool(show)},
            )

    with_retry(run)
    return study.reloaded()


def adjudicator_score(study: Study, pair_id: str) -> str | None:
    """What an adjudicator is told of the model about *pair_id*: "model NAME (vK): SCORE"
    when the admin turned show_to_adjudicators on and the study has predictions; ``None``
    otherwise (the default: adjudicators decide without the model)."""
    if not adjudicators_see_predictions(study):
        return None
    scores = stored_predictions(study)
    if scores is None or pair_id not in scores.index:
        return None
    return t(
        "model {name} (v{version}): {score}",
        name=scores.name,
        version=str(scores.attrs["version"]),
        score=fmt_decimal(float(scores[pair_id]), 3),
    )
