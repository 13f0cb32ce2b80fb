"""Adjudication: a named person settles the pairs the raters could not.

**Who.** An admin makes a named person an adjudicator of a study
(:func:`add_adjudicator`); they sign in with an access code or a linked SSO identity, like
annotators, but are not blind: :meth:`Board.pair` gives them both terms, every rater's
answer with its unclear flag, comment and time on the pair, the automatic label and the
Dawid–Skene label. None of this goes through the annotators' code path
(:class:`~medsim_annot.services.annotation.PairView`).

**Which pairs.** :func:`board` lists the pairs that need a decision, each with its needs
(:data:`~data_schemas.gold.ADJUDICATION_NEEDS`) and sorted by how much it needs one: the
weight of its strongest need first, then how many needs, then the share of raters who gave
the commonest answer (lowest first), then file order.

**A decision** (:func:`decide`) is a final label on the study's scale, a reason from
:data:`~data_schemas.gold.ADJUDICATION_REASONS` (``other`` with a text) and an optional flag
for the guideline. Decisions are append-only: changing one stores a new revision; each names
its adjudicator, time and the event that recorded it. Two adjudicators saving on the same
pair: the save carries the version it saw, and the second one to arrive is refused with the
current decision (:class:`StaleDecision`), as for ratings.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from data_schemas import columns as C
from data_schemas.errors import InputError, Problem, UnknownOptionError
from data_schemas.gold import (
    ADJUDICATION_NEEDS,
    ADJUDICATION_REASONS,
    FALSE_TEXT,
    TRUE_TEXT,
    cell_text,
)
from data_schemas.limits import COMMENT_MAX_CHARS
from data_schemas.scales import Scale
from medsim_annot.errors import SessionEnded, UsageProblem
from medsim_annot.io import read_table
from medsim_annot.services.people.auth import hash_code, new_access_code, normalise_code
from medsim_annot.services.people.names import check_annotator_name
from medsim_annot.services.studies import get_study, pairs_frame
from medsim_annot.storage import Engine, get_engine, session_scope, utcnow, with_retry
from medsim_annot.storage import adjudication as store
from medsim_annot.storage import events as events_store

#: Weight of each need in the queue's order (the strongest need of a pair counts first).
NEED_WEIGHT = {
    need: len(ADJUDICATION_NEEDS.values) - i for i, need in enumerate(ADJUDICATION_NEEDS)
}
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
            f"pair '{pair_id}' was decided by someone else meanwhile; here is the current decision"
        )
        self.current = current


@dataclass(frozen=True)
class AdjudicatorIdentity:
    """A signed-in adjudicator; ``credential_version`` as at sign-in (see
    :func:`check_session`)."""

    adjudicator_id: int
    name: str
    study_id: int
    study_name: str
    credential_version: int = 1


# ---------------------------------------------------------------------- adjudicators
def adjudicators(study: str, *, engine: Engine | None = None) -> pd.DataFrame:
    """The adjudicators of *study*: name, active, has_code, sso_identity."""
    engine = engine or get_engine()
    info = get_study(study, engine=engine)
    with session_scope(engine) as s:
        rows = store.adjudicators(s, info.id)
    return pd.DataFrame(
        [(n, a, h, sso or "") for _i, n, a, h, sso in rows],
        columns=["adjudicator", "active", "has_code", "sso_identity"],
    )


def add_adjudicator(
    study: str, name: str, *, sso_identity: str | None = None, engine: Engine | None = None
) -> dict:
    """Make *name* an adjudicator of *study*; returns ``name`` and a new ``access_code``
    (shown once, stored hashed). *sso_identity* links an SSO identity at once."""
    from medsim_annot.services.people.names import normalise_identity

    engine = engine or get_engine()
    info = get_study(study, engine=engine)
    name = check_annotator_name(name)
    code = new_access_code()
    with session_scope(engine) as s:
        if store.adjudicator_id(s, info.id, name) is not None:
            raise UsageProblem(f"study '{study}' already has an adjudicator named '{name}'")
        adj_id = store.insert_adjudicator(
            s, study_id=info.id, name=name, code_hash=hash_code(code), created_at=utcnow()
        )
        if sso_identity and sso_identity.strip():
            store.set_sso(s, adj_id, normalise_identity(sso_identity))
        events_store.add_event(
            s,
            "adjudicator_added",
            study_id=info.id,
            detail={"name": name, "sso": bool(sso_identity)},
        )
    return {"name": name, "access_code": code}


def _adjudicator_id(s, study_id: int, study: str, name: str) -> int:
    adj_id = store.adjudicator_id(s, study_id, name)
    if adj_id is None:
        raise UsageProblem(f"study '{study}' has no adjudicator named '{name}'")
    return adj_id


def issue_adjudicator_code(study: str, name: str, *, engine: Engine | None = None) -> str:
    """A new access code for adjudicator *name* (sessions opened with the old one end)."""
    engine = engine or get_engine()
    info = get_study(study, engine=engine)
    code = new_access_code()
    with session_scope(engine) as s:
        adj_id = _adjudicator_id(s, info.id, study, name)
        store.set_code(s, adj_id, hash_code(code), active=True)
        events_store.add_event(
            s, "adjudicator_code_issued", study_id=info.id, detail={"name": name}
        )
    return code


def revoke_adjudicator(study: str, name: str, *, engine: Engine | None = None) -> None:
    """Take the adjudicator role away (code and SSO sign-in); their decisions are kept."""
    engine = engine or get_engine()
    info = get_study(study, engine=engine)
    with session_scope(engine) as s:
        adj_id = _adjudicator_id(s, info.id, study, name)
        store.set_code(s, adj_id, None, active=False)
        events_store.add_event(s, "adjudicator_revoked", study_id=info.id, detail={"name": name})


def link_adjudicator_sso(
    study: str, name: str, identity: str | None, *, engine: Engine | None = None
) -> None:
    """Link adjudicator *name* to an SSO identity (``None`` or "" unlinks)."""
    from medsim_annot.services.people.names import normalise_identity

    engine = engine or get_engine()
    info = get_study(study, engine=engine)
    ident = normalise_identity(identity) if identity and identity.strip() else None
    with session_scope(engine) as s:
        adj_id = _adjudicator_id(s, info.id, study, name)
        store.set_sso(s, adj_id, ident)
        events_store.add_event(
            s,
            "adjudicator_sso_linked",
            study_id=info.id,
            detail={"name": name, "linked": bool(ident)},
        )


def authenticate_adjudicator(
    code: str, *, engine: Engine | None = None
) -> AdjudicatorIdentity | None:
    """The active adjudicator holding access code *code*, or ``None``."""
    if len(normalise_code(code)) < 20:
        return None
    with session_scope(engine or get_engine()) as s:
        row = store.by_code_hash(s, hash_code(code))
    return AdjudicatorIdentity(*row.__dict__.values()) if row else None


def adjudicators_by_sso(
    identities: list[str], *, engine: Engine | None = None
) -> list[AdjudicatorIdentity]:
    """The active adjudicators linked to one of *identities* (one per study)."""
    with session_scope(engine or get_engine()) as s:
        rows = store.by_sso(s, identities)
    return [AdjudicatorIdentity(*r.__dict__.values()) for r in rows]


def check_session(ident: AdjudicatorIdentity, *, engine: Engine | None = None) -> None:
    """Raise :class:`SessionEnded` when the adjudicator was revoked or got a new code since
    *ident* signed in."""
    with session_scope(engine or get_engine()) as s:
        now = store.credential_version(s, ident.adjudicator_id)
    if now is None or not now[1] or now[0] != ident.credential_version:
        raise SessionEnded("your adjudicator access was changed; sign in again")


# ---------------------------------------------------------------------- decisions
def decisions_frame(study: str, *, engine: Engine | None = None) -> pd.DataFrame:
    """Every decision of *study* (the history, oldest first): :data:`DECISION_COLUMNS`."""
    engine = engine or get_engine()
    info = get_study(study, engine=engine)
    with session_scope(engine) as s:
        rows = store.decisions(s, info.id)
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
        raise ValueError(f"'{label}' is a no-decision answer; a final label must be decisive")
    return str(Scale.display(value))


def _check_reason(reason: str, text: str) -> tuple[str, str]:
    reason = ADJUDICATION_REASONS.check(cell_text(reason))
    text = cell_text(text)
    if reason == "other" and not text:
        raise ValueError("reason 'other' needs a text saying why")
    if len(text) > COMMENT_MAX_CHARS:
        raise ValueError(f"the reason text is longer than {COMMENT_MAX_CHARS} characters")
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
    study: str,
    pair_id: str,
    *,
    label: object,
    reason: str,
    adjudicator: str,
    seen_version: int,
    reason_text: str = "",
    flag_guideline: bool = False,
    engine: Engine | None = None,
) -> Decision:
    """Store a decision on *pair_id* by *adjudicator* (a name), made on decision version
    *seen_version* (0: the pair had none). Raises :class:`StaleDecision` when another
    decision was stored since, ``UsageProblem`` for an unknown pair, adjudicator, label or
    reason; nothing is stored then."""
    engine = engine or get_engine()
    info = get_study(study, engine=engine)
    try:
        text = _label_text(info.scale, label)
        reason, reason_text = _check_reason(reason, reason_text)
    except (ValueError, UnknownOptionError) as exc:
        raise UsageProblem(str(exc)) from exc

    def run() -> Decision:
        with session_scope(engine) as s:
            return _store_decision(
                s,
                info.id,
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
    s,
    study_id: int,
    study: str,
    pair_id: str,
    *,
    adjudicator: str,
    label: str,
    reason: str,
    reason_text: str,
    flag_guideline: bool,
    seen_version: int,
) -> Decision:
    adj_id = _adjudicator_id(s, study_id, study, adjudicator)
    item_id = store.item_by_pair(s, study_id, pair_id)
    if item_id is None:
        raise UsageProblem(f"study '{study}' has no pair '{pair_id}'")
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
        return Problem(f"pair_id '{pid}' is not a pair of the study", row=line, column="pair_id")
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
            f"flag_guideline must be true or false, not '{flag_text}'",
            row=line,
            column="flag_guideline",
        )
    version_text = cell_text(rec.get("version"))
    if version_text and not version_text.isdigit():
        return Problem(
            f"version must be a whole number, not '{version_text}'", row=line, column="version"
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


def decide_from_file(
    study: str, path: str | Path, *, adjudicator: str, engine: Engine | None = None
) -> list[Decision]:
    """Store the decisions of a file (columns :data:`FILE_COLUMNS`; CSV, TSV, JSONL or
    Parquet) by *adjudicator*, all or none: every problem is reported by row and column
    before anything is stored. Without a ``version`` column a row is decided on the version
    the pair had when the file was checked, so a decision stored by someone else in between
    is not overwritten."""
    engine = engine or get_engine()
    info = get_study(study, engine=engine)
    name = str(path)
    frame = read_table(path)
    problems: list[Problem] = []
    for col in ("pair_id", "label", "reason"):
        if col not in frame.columns:
            problems.append(Problem("required column is missing", column=col))
    unknown = [c for c in frame.columns if c not in FILE_COLUMNS]
    for c in unknown:
        problems.append(Problem(f"unknown column (allowed: {', '.join(FILE_COLUMNS)})", column=c))
    if problems:
        raise InputError(problems, name)
    history = decisions_frame(study, engine=engine)
    versions = history.groupby("pair_id")["revision"].max().to_dict() if len(history) else {}
    known = set(pairs_frame(study, engine=engine)[C.PAIR_ID].astype(str))
    rows: list[dict] = []
    seen: set[str] = set()
    for i, rec in enumerate(frame.to_dict(orient="records")):
        pid = cell_text(rec.get("pair_id"))
        if pid in seen:
            problems.append(Problem(f"pair '{pid}' is decided twice", row=i + 2, column="pair_id"))
            continue
        seen.add(pid)
        row = _file_row(rec, i + 2, info.scale, known, versions)
        if isinstance(row, Problem):
            problems.append(row)
        else:
            rows.append(row)
    if problems:
        raise InputError(problems, name)
    out: list[Decision] = []
    with session_scope(engine) as s:
        for r in rows:
            line = r.pop("line")
            try:
                out.append(_store_decision(s, info.id, study, adjudicator=adjudicator, **r))
            except StaleDecision as exc:
                raise InputError.single(str(exc), file=name, row=line, column="pair_id") from exc
    return out


# ---------------------------------------------------------------------- the queue
@dataclass
class Board:
    """What an adjudicator works from: the per-pair table of the study (raters' answers,
    majority, flags, the Dawid–Skene label where it could be fitted), the current ratings
    with their unclear flags, comments and times, the decisions, and :attr:`queue`."""

    study: str
    scale: Scale
    table: pd.DataFrame
    current: pd.DataFrame
    history: pd.DataFrame
    queue: pd.DataFrame
    model: str | None = None
    groups: list[str] = field(default_factory=list)

    def pair(self, pair_id: str) -> dict:
        """Everything an adjudicator sees of one pair (never shown to annotators)."""
        row = self.table[self.table[C.PAIR_ID].astype(str) == pair_id]
        if row.empty:
            raise UsageProblem(f"study '{self.study}' has no pair '{pair_id}'")
        r = row.iloc[0]
        cur = self.current[self.current[C.PAIR_ID].astype(str) == pair_id]
        raters = [
            {
                "annotator": str(c[C.ANNOTATOR]),
                "rating": str(Scale.display(c[C.RATING])),
                "unclear": bool(c.get(C.UNCLEAR, False)),
                "comment": cell_text(c.get(C.COMMENT)),
                "seconds": None
                if pd.isna(c.get("elapsed_ms"))
                else round(float(c["elapsed_ms"]) / 1000.0, 1),
                "slot": str(c.get("slot", "")),
            }
            for c in cur.sort_values(C.ANNOTATOR).to_dict(orient="records")
        ]
        hist = self.history[self.history[C.PAIR_ID].astype(str) == pair_id]
        decided = current_decisions(hist)
        q = self.queue[self.queue[C.PAIR_ID] == pair_id]
        auto = r.get(C.AUTO_LABEL) if C.AUTO_LABEL in self.table.columns else None
        return {
            "pair_id": pair_id,
            "term_1": str(r[C.TERM_1]),
            "term_2": str(r[C.TERM_2]),
            "auto_label": None if auto is None or pd.isna(auto) else int(auto),
            "model_label": None
            if "model_label" not in self.table.columns or r["model_label"] is None
            else str(r["model_label"]),
            "model_posterior": None
            if "model_posterior" not in self.table.columns or pd.isna(r["model_posterior"])
            else float(r["model_posterior"]),
            "majority": None if pd.isna(r["majority"]) else str(Scale.display(r["majority"])),
            "raters": raters,
            "needs": list(q["needs"].iloc[0]) if len(q) else [],
            "version": int(hist["revision"].max()) if len(hist) else 0,
            "decision": None if decided.empty else _plain(decided.iloc[0].to_dict()),
            "history": [_plain(h) for h in hist.to_dict(orient="records")],
            "options": [
                str(Scale.display(o.value))
                for o in self.scale.options
                if not self.scale.is_no_decision(o.value)
            ],
        }


def _plain(decision: dict) -> dict:
    """A decision row as plain JSON values (the widget and ``--json`` get it)."""
    return {
        "label": str(decision["label"]),
        "reason": str(decision["reason"]),
        "reason_text": str(decision["reason_text"] or ""),
        "flag_guideline": bool(decision["flag_guideline"]),
        "adjudicator": str(decision["adjudicator"]),
        "version": int(decision["revision"]),
        "event_id": int(decision["event_id"]),
        "decided_at": pd.Timestamp(decision["decided_at"]).isoformat(),
    }


def _needs(table: pd.DataFrame, tiebreak_pairs: set[str], model: bool) -> list[list[str]]:
    ids = table[C.PAIR_ID].astype(str).tolist()
    no_major = table["no_majority"].to_numpy(dtype=bool)
    all_diff = table["all_different"].to_numpy(dtype=bool)
    auto = table["auto_label_disagrees"].to_numpy(dtype=bool)
    differs = (
        table["model_label"].notna().to_numpy()
        & table["majority"].notna().to_numpy()
        & (table["model_label"].astype(object) != table["majority"].astype(object)).to_numpy()
        if model
        else np.zeros(len(table), dtype=bool)
    )
    out = []
    for i, pid in enumerate(ids):
        needs = []
        if all_diff[i]:
            needs.append("all_different")
        if no_major[i] and pid in tiebreak_pairs:
            needs.append("tiebreak_disagrees")
        if no_major[i]:
            needs.append("no_majority")
        if differs[i]:
            needs.append("against_model")
        if auto[i]:
            needs.append("against_auto_label")
        out.append(needs)
    return out


def tiebreak_pair_ids(current: pd.DataFrame) -> set[str]:
    """The pairs of a current-ratings frame that got a tie-break (third) rating."""
    if current.empty or "slot" not in current.columns:
        return set()
    return set(current.loc[current["slot"] == "tiebreak", C.PAIR_ID].astype(str))


def group_label(table: pd.DataFrame) -> pd.Series:
    """A pair's group as shown in the queue's filter: its group column values joined by
    " / " (empty when the study has no group columns)."""
    cols = [c for c in C.GROUP_COLUMNS if c in table.columns]
    if not cols:
        return pd.Series([""] * len(table), index=table.index, dtype=object)
    return table[cols].astype("string").fillna("").agg(" / ".join, axis=1).astype(object)


def board(study: str, *, engine: Engine | None = None) -> Board:
    """The adjudication board of *study*: every pair's facts and the queue (every pair with
    at least one need, decided or not, most needed first; columns ``pair_id``, ``term_1``,
    ``term_2``, ``group``, ``needs`` (tuple), ``top_need``, ``modal_share``, ``n_ratings``,
    ``decided`` (bool), ``label`` (the current decision), ``flag_guideline``, ``version``)."""
    from medsim_annot.services.gold import table as gold_svc
    from medsim_annot.stats.aggregate import model_gold

    engine = engine or get_engine()
    info = get_study(study, engine=engine)
    gt = gold_svc.study_gold_table(study, engine=engine)
    cur = gt.current
    tiebreak_pairs = tiebreak_pair_ids(cur)
    model = None
    if info.scale.level == "nominal" and len(gt.annotators) >= 2 and len(gt.ratings):
        try:
            fit = model_gold(gt.ratings, "dawid-skene")
        except (ValueError, ZeroDivisionError, np.linalg.LinAlgError):
            fit = None  # too few ratings for the model: the queue goes without its need
        if fit is not None:
            gold_svc.add_model_columns(gt, "dawid-skene", fit=fit)
            model = "dawid-skene"
    table = gt.table
    history = decisions_frame(study, engine=engine)
    current = current_decisions(history).set_index(C.PAIR_ID) if len(history) else None
    needs = _needs(table, tiebreak_pairs, model is not None)
    # Share of the commonest answer among the ratings cast (lower: more disagreement).
    if len(gt.ratings):
        counts = gt.ratings.groupby([C.PAIR_ID, C.RATING], dropna=False).size()
        modal = (counts.groupby(level=0).max() / counts.groupby(level=0).sum()).to_dict()
    else:
        modal = {}
    ids = table[C.PAIR_ID].astype(str)
    q = pd.DataFrame(
        {
            C.PAIR_ID: ids.to_numpy(),
            C.TERM_1: table[C.TERM_1].astype(str).to_numpy(),
            C.TERM_2: table[C.TERM_2].astype(str).to_numpy(),
            "group": group_label(table).to_numpy(),
            "needs": [tuple(n) for n in needs],
            "top_need": [n[0] if n else "" for n in needs],
            "weight": [max((NEED_WEIGHT[x] for x in n), default=0) for n in needs],
            "n_needs": [len(n) for n in needs],
            "modal_share": [float(modal.get(p, np.nan)) for p in ids],
            "n_ratings": table["n_ratings"].to_numpy(),
            "order": np.arange(len(table)),
        }
    )
    q["decided"] = ids.isin(current.index if current is not None else []).to_numpy()
    q["label"] = [
        current.at[p, "label"] if current is not None and p in current.index else None for p in ids
    ]
    q["flag_guideline"] = [
        bool(current.at[p, "flag_guideline"])
        if current is not None and p in current.index
        else False
        for p in ids
    ]
    q["version"] = [
        int(current.at[p, "revision"]) if current is not None and p in current.index else 0
        for p in ids
    ]
    q = q[q["n_needs"] > 0].sort_values(
        ["weight", "n_needs", "modal_share", "order"],
        ascending=[False, False, True, True],
        na_position="last",
        kind="mergesort",
    )
    q = q.drop(columns=["weight", "n_needs", "order"]).reset_index(drop=True)
    groups = sorted({g for g in group_label(table) if g})
    return Board(study, info.scale, table, cur, history, q, model, groups)


def filter_queue(
    queue: pd.DataFrame,
    *,
    needs: list[str] | None = None,
    group: str | None = None,
    include_decided: bool = False,
) -> pd.DataFrame:
    """The queue limited to pairs with one of *needs*, in *group*, and (unless
    *include_decided*) not decided yet; the order is kept."""
    keep = np.ones(len(queue), dtype=bool)
    if needs:
        wanted = {ADJUDICATION_NEEDS.check(n) for n in needs}
        keep &= np.array([bool(wanted & set(n)) for n in queue["needs"]], dtype=bool)
    if group:
        keep &= (queue["group"] == group).to_numpy()
    if not include_decided:
        keep &= ~queue["decided"].to_numpy(dtype=bool)
    return queue[keep].reset_index(drop=True)


# ---------------------------------------------------------------------- dashboard figures
def progress(b: Board) -> dict:
    """``needed`` (pairs in the queue), ``decided`` (of those, with a decision),
    ``decided_total`` (every decided pair), ``flagged`` (current decisions flagged for the
    guideline) and ``decisions`` (history rows)."""
    cur = current_decisions(b.history)
    return {
        "needed": int(len(b.queue)),
        "decided": int(b.queue["decided"].sum()),
        "decided_total": int(len(cur)),
        "flagged": int(cur["flag_guideline"].sum()) if len(cur) else 0,
        "decisions": int(len(b.history)),
    }


def rater_agreement_with_decisions(b: Board) -> pd.DataFrame:
    """Per rater: the decided pairs they rated (``pairs``), how many of their answers equal
    the adjudicated label (``same``) and the share (``agreement``). The raters' own answers
    are compared with the decisions; the study's agreement figures do not use decisions."""
    cur = current_decisions(b.history)
    cols = ["annotator", "pairs", "same", "agreement"]
    if cur.empty or b.current.empty:
        return pd.DataFrame(columns=cols)
    final = cur.set_index(C.PAIR_ID)["label"].astype(str)
    r = b.current[[C.PAIR_ID, C.ANNOTATOR, C.RATING]].copy()
    r = r[r[C.PAIR_ID].astype(str).isin(final.index)]
    if r.empty:
        return pd.DataFrame(columns=cols)
    shown = r[C.RATING].map(lambda v: str(Scale.display(v)))
    r["same"] = shown.to_numpy() == final.reindex(r[C.PAIR_ID].astype(str)).to_numpy()
    out = r.groupby(C.ANNOTATOR).agg(pairs=("same", "size"), same=("same", "sum")).reset_index()
    out["agreement"] = out["same"] / out["pairs"]
    return out.rename(columns={C.ANNOTATOR: "annotator"})[cols]


def reason_counts(b: Board) -> pd.DataFrame:
    """Current decisions per reason (every reason of the taxonomy, zeros included)."""
    cur = current_decisions(b.history)
    counts = cur["reason"].value_counts() if len(cur) else pd.Series(dtype=int)
    return pd.DataFrame(
        {
            "reason": list(ADJUDICATION_REASONS.values),
            "decisions": [int(counts.get(r, 0)) for r in ADJUDICATION_REASONS],
        }
    )


@dataclass(frozen=True)
class AdjudicationSummary:
    """The dashboard's adjudication section: :func:`progress`, each rater's agreement with the
    adjudicated labels (:func:`rater_agreement_with_decisions`) and :func:`reason_counts`."""

    progress: dict
    raters: pd.DataFrame
    reasons: pd.DataFrame


def summary(study: str, *, engine: Engine | None = None) -> AdjudicationSummary:
    b = board(study, engine=engine)
    return AdjudicationSummary(progress(b), rater_agreement_with_decisions(b), reason_counts(b))
