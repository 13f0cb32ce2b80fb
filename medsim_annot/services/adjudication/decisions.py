"""Adjudicators' decisions: the final label of a pair, append-only and versioned.

A decision (:func:`decide`) is a final label on the study's scale, a reason from
:data:`~data_schemas.gold.ADJUDICATION_REASONS` (``other`` with a text) and an optional flag
for the guideline. Decisions are append-only: changing one stores a new revision; each names
its adjudicator, time and the event that recorded it. Two adjudicators saving on the same
pair: the save carries the version it saw, and the second one to arrive is refused with the
current decision (:class:`StaleDecision`), as for ratings.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from data_schemas import columns as C
from data_schemas.errors import InputError, Problem, UnknownOptionError
from data_schemas.gold import (
    ADJUDICATION_REASONS,
    FALSE_TEXT,
    TRUE_TEXT,
    cell_text,
)
from data_schemas.limits import COMMENT_MAX_CHARS
from data_schemas.scales import Scale
from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import t
from medsim_annot.io import read_table
from medsim_annot.services.people.adjudicators import adjudicator_id
from medsim_annot.services.studies import pairs_frame
from medsim_annot.services.study_handle import Study
from medsim_annot.storage import Transaction, session_scope, utcnow, with_retry
from medsim_annot.storage import adjudication as store
from medsim_annot.storage import events as events_store

#: The key that picks each reason in the adjudication widget (digits pick the label).
REASON_KEYS = {
    "rater_error": "r",
    "ambiguous_term": "a",
    "guideline_gap": "g",
    "auto_label_wrong": "w",
    "other": "o",
}
#: Columns of :func:`decisions_frame` (the decision history, one row per decision).
DECISION_COLUMNS = store.DECISION_COLUMNS
#: The columns a scripted decisions file (``medsim adjudicate``) may have; ``pair_id``,
#: ``label`` and ``reason`` are required.
FILE_COLUMNS = ("pair_id", "label", "reason", "reason_text", "flag_guideline", "version")


class StaleDecision(UsageProblem):
    """A decision carried the version of a pair's decision that is no longer current: another
    adjudicator decided meanwhile. ``current`` holds the pair's current decision."""

    def __init__(self, pair_id: str, current: dict[str, object] | None):
        super().__init__(
            t(
                "pair '{pair_id}' was decided by someone else meanwhile; here is the current "
                "decision",
                pair_id=pair_id,
            )
        )
        self.current = current


def decisions_frame(study: Study, *, tx: Transaction | None = None) -> pd.DataFrame:
    """Every decision of *study* (the history, oldest first): :data:`DECISION_COLUMNS`.
    *tx*: read in this transaction (:func:`medsim_annot.storage.read_snapshot`)."""
    if tx is not None:
        return history_frame(store.decisions(tx, study.id))
    with session_scope(study.engine) as s:
        rows = store.decisions(s, study.id)
    return history_frame(rows)


def history_frame(rows: list[tuple]) -> pd.DataFrame:
    """Decision rows of the store (:func:`medsim_annot.storage.adjudication.decisions`) as
    :func:`decisions_frame` gives them."""
    frame = pd.DataFrame(rows, columns=list(DECISION_COLUMNS))
    frame["flag_guideline"] = frame["flag_guideline"].astype(bool)
    return frame


def current_decisions(history: pd.DataFrame) -> pd.DataFrame:
    """The newest decision per pair of a decision history (one row per decided pair).

    >>> h = pd.DataFrame({"pair_id": ["a", "a", "b"], "revision": [1, 2, 1],
    ...                   "label": ["same", "not_same", "same"]})
    >>> current_decisions(h)[["pair_id", "label"]].values.tolist()
    [['a', 'not_same'], ['b', 'same']]
    """
    if history.empty:
        return history.copy()
    return (
        history.sort_values(["pair_id", "revision"])
        .drop_duplicates("pair_id", keep="last")
        .reset_index(drop=True)
    )


def _label_text(scale: Scale, label: object) -> str:
    """The stored text of a final label: a decisive value of *scale* (``ValueError`` else)."""
    value = scale.canonical(label if not isinstance(label, str) else label.strip())
    if scale.is_no_decision(value):
        raise ValueError(
            t("'{label}' is a no-decision answer; a final label must be decisive", label=label)
        )
    return str(Scale.display(value))


def _check_reason(reason: str, text: str) -> tuple[str, str]:
    reason = ADJUDICATION_REASONS.check(cell_text(reason))
    text = cell_text(text)
    if reason == "other" and not text:
        raise ValueError(t("reason 'other' needs a text saying why"))
    if len(text) > COMMENT_MAX_CHARS:
        raise ValueError(t("the reason text is longer than {n} characters", n=COMMENT_MAX_CHARS))
    return reason, text


@dataclass(frozen=True)
class Decision:
    """One stored decision (what :func:`decide` returns)."""

    pair_id: str
    label: str
    reason: str
    reason_text: str
    flag_guideline: bool
    adjudicator: str
    version: int
    event_id: int
    decided_at: dt.datetime


def _current_of(s, study_id: int, pair_id: str) -> dict | None:
    rows = [r for r in store.decisions(s, study_id) if r[1] == pair_id]
    if not rows:
        return None
    row = dict(zip(DECISION_COLUMNS, rows[-1], strict=True))
    return {
        k: row[k] for k in ("label", "reason", "reason_text", "flag_guideline", "adjudicator")
    } | {"version": row["revision"]}


def decide(
    study: Study,
    pair_id: str,
    *,
    label: object,
    reason: str,
    adjudicator: str,
    seen_version: int,
    reason_text: str = "",
    flag_guideline: bool = False,
) -> Decision:
    """Store a decision on *pair_id* by *adjudicator* (a name), made on decision version
    *seen_version* (0: the pair had none). Raises :class:`StaleDecision` when another
    decision was stored since, ``UsageProblem`` for an unknown pair, adjudicator, label or
    reason; nothing is stored then."""
    try:
        text = _label_text(study.scale, label)
        reason, reason_text = _check_reason(reason, reason_text)
    except (ValueError, UnknownOptionError) as exc:
        raise UsageProblem(str(exc)) from exc

    def run() -> Decision:
        with session_scope(study.engine) as s:
            return _store_decision(
                s,
                study,
                pair_id,
                adjudicator=adjudicator,
                label=text,
                reason=reason,
                reason_text=reason_text,
                flag_guideline=bool(flag_guideline),
                seen_version=int(seen_version),
            )

    # A busy store is retried (each attempt one transaction); a retry that finds the
    # pair decided meanwhile is refused as stale like any other late save.
    return with_retry(run)


def _store_decision(
    s: Transaction,
    study: Study,
    pair_id: str,
    *,
    adjudicator: str,
    label: str,
    reason: str,
    reason_text: str,
    flag_guideline: bool,
    seen_version: int,
) -> Decision:
    study_id = study.id
    adj_id = adjudicator_id(s, study_id, study.name, adjudicator)
    item_id = store.item_by_pair(s, study_id, pair_id)
    if item_id is None:
        raise UsageProblem(
            t("study '{study}' has no pair '{pair_id}'", study=study.name, pair_id=pair_id)
        )
    store.lock_item(s, item_id)
    version = store.decision_version(s, item_id)
    if version != seen_version:
        raise StaleDecision(pair_id, _current_of(s, study_id, pair_id))
    now = utcnow()
    event_id = events_store.add_event_id(
        s,
        "pair_adjudicated",
        study_id=study_id,
        detail={
            "pair_id": pair_id,
            "label": label,
            "reason": reason,
            "flag_guideline": flag_guideline,
            "version": version + 1,
            "adjudicator": adjudicator,
        },
        at=now,
        actor=f"adjudicator:{adjudicator}",
    )
    ok = store.insert_decision(
        s,
        study_id=study_id,
        item_id=item_id,
        adjudicator_id=adj_id,
        revision=version + 1,
        label=label,
        reason=reason,
        reason_text=reason_text,
        flag_guideline=flag_guideline,
        decided_at=now,
        event_id=event_id,
    )
    if not ok:
        raise StaleDecision(pair_id, None)
    return Decision(
        pair_id, label, reason, reason_text, flag_guideline, adjudicator, version + 1, event_id, now
    )


def _file_row(
    rec: dict, line: int, scale: Scale, known: set[str], versions: dict
) -> dict | Problem:
    """One row of a decisions file, checked: the keywords of :func:`_store_decision` (and
    ``line``), or the first problem of the row."""
    pid = cell_text(rec.get("pair_id"))
    if not pid or pid not in known:
        return Problem(
            t("pair_id '{pair_id}' is not a pair of the study", pair_id=pid),
            row=line,
            column="pair_id",
        )
    try:
        label = _label_text(scale, rec.get("label"))
    except ValueError as exc:
        return Problem(str(exc), row=line, column="label")
    try:
        reason, text = _check_reason(
            cell_text(rec.get("reason")), cell_text(rec.get("reason_text"))
        )
    except (ValueError, UnknownOptionError) as exc:
        return Problem(str(exc), row=line, column="reason")
    flag_text = cell_text(rec.get("flag_guideline")).lower()
    if flag_text not in TRUE_TEXT | FALSE_TEXT:
        return Problem(
            t("flag_guideline must be true or false, not '{value}'", value=flag_text),
            row=line,
            column="flag_guideline",
        )
    version_text = cell_text(rec.get("version"))
    if version_text and not version_text.isdigit():
        return Problem(
            t("version must be a whole number, not '{value}'", value=version_text),
            row=line,
            column="version",
        )
    return {
        "line": line,
        "pair_id": pid,
        "label": label,
        "reason": reason,
        "reason_text": text,
        "flag_guideline": flag_text in TRUE_TEXT,
        "seen_version": int(version_text) if version_text else int(versions.get(pid, 0)),
    }


def decide_from_file(study: Study, path: str | Path, *, adjudicator: str) -> list[Decision]:
    """Store the decisions of a file (columns :data:`FILE_COLUMNS`; CSV, TSV, JSONL or
    Parquet) by *adjudicator*, all or none: every problem is reported by row and column
    before anything is stored. Without a ``version`` column a row is decided on the version
    the pair had when the file was checked, so a decision stored by someone else in between
    is not overwritten."""
    name = str(path)
    frame = read_table(path)
    problems: list[Problem] = []
    for col in ("pair_id", "label", "reason"):
        if col not in frame.columns:
            problems.append(Problem(t("required column is missing"), column=col))
    unknown = [c for c in frame.columns if c not in FILE_COLUMNS]
    for c in unknown:
        problems.append(
            Problem(
                t("unknown column (allowed: {columns})", columns=", ".join(FILE_COLUMNS)),
                column=c,
            )
        )
    if problems:
        raise InputError(problems, name)
    history = decisions_frame(study)
    versions = history.groupby("pair_id")["revision"].max().to_dict() if len(history) else {}
    known = set(pairs_frame(study)[C.PAIR_ID].astype(str))
    rows: list[dict] = []
    seen: set[str] = set()
    for i, rec in enumerate(frame.to_dict(orient="records")):
        pid = cell_text(rec.get("pair_id"))
        if pid in seen:
            problems.append(
                Problem(
                    t("pair '{pair_id}' is decided twice", pair_id=pid), row=i + 2, column="pair_id"
                )
            )
            continue
        seen.add(pid)
        row = _file_row(rec, i + 2, study.scale, known, versions)
        if isinstance(row, Problem):
            problems.append(row)
        else:
            rows.append(row)
    if problems:
        raise InputError(problems, name)
    out: list[Decision] = []
    with session_scope(study.engine) as s:
        for r in rows:
            line = r.pop("line")
            try:
                out.append(_store_decision(s, study, adjudicator=adjudicator, **r))
            except StaleDecision as exc:
                raise InputError.single(str(exc), file=name, row=line, column="pair_id") from exc
    return out
