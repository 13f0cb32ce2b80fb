"""The adjudication board: which pairs need a decision, and everything an adjudicator sees.

:func:`board` lists the pairs that need a decision, each with its needs
(:data:`~data_schemas.gold.ADJUDICATION_NEEDS`) and sorted by how much it needs one: the
weight of its strongest need first, then how many needs, then the share of raters who gave
the commonest answer (lowest first), then file order. :meth:`Board.pair` gives an
adjudicator both terms, every rater's answer with its unclear flag, comment and time on the
pair, the automatic label and the Dawid–Skene label. None of this goes through the
annotators' code path (:class:`~medsim_annot.services.annotation.PairView`).
:func:`summary` gives the dashboard's adjudication section.

**Kept, not rebuilt.** The board is made from the study's cached dashboard
(:func:`~medsim_annot.services.dashboard.study_dashboard` with its default options: the
strict majority the needs are defined on, no bootstrap), from its gold table and its one
Dawid–Skene fit (:meth:`~medsim_annot.services.dashboard.Dashboard.model_quality`), and kept
in :data:`BOARDS`, keyed on the database (its URL), the study (its id, name and creation
time: never the handle object, which every page run and command makes anew) and its ratings
version (a new rating makes
a new board; old ones age out). The decisions are laid over it by their own version (count,
highest decision id, :func:`medsim_annot.storage.adjudication.decisions_version`), read on
every call: when it changed — a decision from this page, another adjudicator, the CLI or
another process — only the decisions stored since are read, and only their pairs' rows of
the queue change (a new :class:`Board`; one already handed out is never changed). Where a
decision with a lower id was committed after a higher one (concurrent saves), the count
tells, and the whole history is read again. :data:`BOARD_ENTRIES` = 4: the studies being
adjudicated at once in one server; a board of 20,000 pairs holds a few MB beside its
dashboard.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from data_schemas import columns as C
from data_schemas.gold import ADJUDICATION_NEEDS, ADJUDICATION_REASONS, cell_text
from data_schemas.scales import Scale
from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import t
from medsim_annot.services.adjudication.decisions import current_decisions, history_frame
from medsim_annot.services.dashboard import Dashboard, study_dashboard
from medsim_annot.services.dashboard.cache import LRUCache
from medsim_annot.services.gold.table import GoldTable, add_model_columns
from medsim_annot.services.study_handle import Study
from medsim_annot.services.tiebreak import tiebreak_pair_ids
from medsim_annot.storage import Engine, session_scope
from medsim_annot.storage import adjudication as store
from medsim_annot.storage import studies as studies_store

#: Weight of each need in the queue's order (the strongest need of a pair counts first).
NEED_WEIGHT = {
    need: len(ADJUDICATION_NEEDS.values) - i for i, need in enumerate(ADJUDICATION_NEEDS)
}


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
    #: The decisions version the board shows: (decisions read, highest decision id).
    decisions_version: tuple[int, int] = (0, 0)
    #: Row of :attr:`queue` by pair id (what a decision changes).
    _rows: dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    def pair(self, pair_id: str) -> dict:
        """Everything an adjudicator sees of one pair (never shown to annotators)."""
        row = self.table[self.table[C.PAIR_ID].astype(str) == pair_id]
        if row.empty:
            raise UsageProblem(
                t("study '{study}' has no pair '{pair_id}'", study=self.study, pair_id=pair_id)
            )
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


def group_label(table: pd.DataFrame) -> pd.Series:
    """A pair's group as shown in the queue's filter: its group column values joined by
    " / " (empty when the study has no group columns)."""
    cols = [c for c in C.GROUP_COLUMNS if c in table.columns]
    if not cols:
        return pd.Series([""] * len(table), index=table.index, dtype=object)
    parts = [table[c].astype("string").fillna("") for c in cols]
    out = parts[0]
    for part in parts[1:]:  # column-wise: a row-wise join took 1.8 s at 20,000 pairs
        out = out + " / " + part
    return out.astype(object)


#: Boards kept, by (database URL, study, ratings version); see the module's docstring.
BOARD_ENTRIES = 4
BOARDS: LRUCache[Board] = LRUCache("adjudication boards", BOARD_ENTRIES)
#: Why a Dawid–Skene fit may fail on few ratings: the queue then goes without its need.
FIT_ERRORS = (ValueError, ZeroDivisionError, np.linalg.LinAlgError)


def board(study: Study) -> Board:
    """The adjudication board of *study*: every pair's facts and the queue (every pair with
    at least one need, decided or not, most needed first; columns ``pair_id``, ``term_1``,
    ``term_2``, ``group``, ``needs`` (tuple), ``top_need``, ``modal_share``, ``n_ratings``,
    ``decided`` (bool), ``label`` (the current decision), ``flag_guideline``, ``version``).

    Kept in :data:`BOARDS` and brought up to the study's decisions (see the module's
    docstring): after a decision, the next call reads that decision only."""
    engine = study.engine
    with session_scope(engine) as s:
        ratings = studies_store.ratings_version(s, study.id)
        decided = store.decisions_version(s, study.id)
    url = engine.url.render_as_string(hide_password=True)
    study_key = (url, study.name, study.id, str(study.created_at))
    b = BOARDS.get((*study_key, ratings))
    if b is None:
        dash = study_dashboard(study)
        b = _without_decisions(study.name, study.scale, dash)
        ratings = dash.version
    if b.decisions_version != decided:
        b = _with_decisions(b, engine, study.id)
    BOARDS.put((*study_key, ratings), b)
    return b


def _fit(dash: Dashboard):
    """The dashboard's Dawid–Skene fit (fitted once per dashboard), or None where the scale
    is not nominal, fewer than two doctors rated or the model cannot be fitted."""
    gt = dash.gold
    if dash.scale.level != "nominal" or len(gt.annotators) < 2 or not len(gt.ratings):
        return None
    try:
        return dash.model_quality("dawid-skene").get("fit")
    except FIT_ERRORS:
        return None  # too few ratings for the model


def _without_decisions(study: str, scale: Scale, dash: Dashboard) -> Board:
    """The board of *dash*'s ratings before any decision: its gold table (a copy, with the
    model's columns), the needs and the queue's order."""
    gt = dash.gold
    cur = gt.current
    fit = _fit(dash)
    table = gt.table.copy()
    if fit is not None:
        add_model_columns(
            GoldTable(table, gt.ratings, cur, scale, gt.annotators), "dawid-skene", fit=fit
        )
    needs = _needs(table, tiebreak_pair_ids(cur), fit is not None)
    # Share of the commonest answer among the ratings cast (lower: more disagreement).
    if len(gt.ratings):
        counts = gt.ratings.groupby([C.PAIR_ID, C.RATING], dropna=False).size()
        modal = (counts.groupby(level=0).max() / counts.groupby(level=0).sum()).to_dict()
    else:
        modal = {}
    ids = table[C.PAIR_ID].astype(str)
    groups = group_label(table)
    q = pd.DataFrame(
        {
            C.PAIR_ID: ids.to_numpy(),
            C.TERM_1: table[C.TERM_1].astype(str).to_numpy(),
            C.TERM_2: table[C.TERM_2].astype(str).to_numpy(),
            "group": groups.to_numpy(),
            "needs": [tuple(n) for n in needs],
            "top_need": [n[0] if n else "" for n in needs],
            "weight": [max((NEED_WEIGHT[x] for x in n), default=0) for n in needs],
            "n_needs": [len(n) for n in needs],
            "modal_share": [float(modal.get(p, np.nan)) for p in ids],
            "n_ratings": table["n_ratings"].to_numpy(),
            "order": np.arange(len(table)),
        }
    )
    q["decided"] = False
    q["label"] = [None] * len(q)
    q["flag_guideline"] = False
    q["version"] = 0
    q = q[q["n_needs"] > 0].sort_values(
        ["weight", "n_needs", "modal_share", "order"],
        ascending=[False, False, True, True],
        na_position="last",
        kind="mergesort",
    )
    q = q.drop(columns=["weight", "n_needs", "order"]).reset_index(drop=True)
    return Board(
        study,
        scale,
        table,
        cur,
        history_frame([]),
        q,
        "dawid-skene" if fit is not None else None,
        sorted({g for g in groups if g}),
        _rows={p: i for i, p in enumerate(q[C.PAIR_ID].tolist())},
    )


def _with_decisions(b: Board, engine: Engine, study_id: int) -> Board:
    """*b* with the decisions stored since its :attr:`Board.decisions_version`: only those
    are read and only their pairs' rows of the queue change; the whole history is read again
    when a decision with a lower id was committed after *b* was made."""
    seen, last = b.decisions_version
    with session_scope(engine) as s:
        rows = store.decisions(s, study_id, after=last)
        total = store.decisions_version(s, study_id)[0]
    if seen + len(rows) < total:  # one was committed late, below the highest id: read all
        with session_scope(engine) as s:
            rows = store.decisions(s, study_id)
        b = dataclasses.replace(
            b, history=history_frame([]), queue=_cleared(b.queue), decisions_version=(0, 0)
        )
        seen = 0
    new = history_frame(rows)
    if b.history.empty or new.empty:
        history = new if b.history.empty else b.history
    else:
        history = pd.concat([b.history, new], ignore_index=True)
    queue = b.queue.copy()
    cur = current_decisions(new)
    if len(cur):
        at = [b._rows.get(str(p), -1) for p in cur[C.PAIR_ID]]
        cur = cur[[i >= 0 for i in at]]
        pos = np.array([i for i in at if i >= 0], dtype=np.int64)
        queue.loc[pos, "decided"] = True
        queue.loc[pos, "label"] = cur["label"].to_numpy(dtype=object)
        queue.loc[pos, "flag_guideline"] = cur["flag_guideline"].to_numpy(dtype=bool)
        queue.loc[pos, "version"] = cur["revision"].to_numpy(dtype=np.int64)
    if len(history):  # text once any pair of the study is decided (None before: object)
        queue["label"] = queue["label"].astype("str")
    top = int(new["decision_id"].max()) if len(new) else b.decisions_version[1]
    return dataclasses.replace(
        b, history=history, queue=queue, decisions_version=(seen + len(new), top)
    )


def _cleared(queue: pd.DataFrame) -> pd.DataFrame:
    """*queue* as before any decision."""
    q = queue.copy()
    q["decided"] = False
    q["label"] = [None] * len(q)
    q["flag_guideline"] = False
    q["version"] = 0
    return q


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
@dataclass(frozen=True)
class AdjudicationProgress:
    """``needed`` (pairs in the queue), ``decided`` (of those, with a decision),
    ``decided_total`` (every decided pair), ``flagged`` (current decisions flagged for the
    guideline) and ``decisions`` (history rows). :meth:`to_dict` gives them by name."""

    needed: int
    decided: int
    decided_total: int
    flagged: int
    decisions: int

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def progress(b: Board) -> AdjudicationProgress:
    """How far adjudication of board *b* has come (:class:`AdjudicationProgress`)."""
    cur = current_decisions(b.history)
    return AdjudicationProgress(
        needed=int(len(b.queue)),
        decided=int(b.queue["decided"].sum()),
        decided_total=int(len(cur)),
        flagged=int(cur["flag_guideline"].sum()) if len(cur) else 0,
        decisions=int(len(b.history)),
    )


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

    progress: AdjudicationProgress
    raters: pd.DataFrame
    reasons: pd.DataFrame


def summary(study: Study) -> AdjudicationSummary:
    """The dashboard's adjudication section of *study* (from its kept :func:`board`)."""
    b = board(study)
    return AdjudicationSummary(progress(b), rater_agreement_with_decisions(b), reason_counts(b))
