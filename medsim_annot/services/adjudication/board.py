"""The adjudication board: which pairs need a decision, and everything an adjudicator sees.

:func:`board` lists the pairs that need a decision, each with its needs
(:data:`~data_schemas.gold.ADJUDICATION_NEEDS`) and sorted by how much it needs one: the
weight of its strongest need first, then how many needs, then the share of raters who gave
the commonest answer (lowest first), then file order. :meth:`Board.pair` gives an
adjudicator both terms, every rater's answer with its unclear flag, comment and time on the
pair, the automatic label and the Dawid–Skene label. None of this goes through the
annotators' code path (:class:`~medsim_annot.services.annotation.PairView`).
:func:`summary` gives the dashboard's adjudication section.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from data_schemas import columns as C
from data_schemas.gold import ADJUDICATION_NEEDS, ADJUDICATION_REASONS, cell_text
from data_schemas.scales import Scale
from medsim_annot.errors import UsageProblem
from medsim_annot.services.adjudication.decisions import current_decisions, decisions_frame
from medsim_annot.services.gold import table as gold_svc
from medsim_annot.services.studies import get_study
from medsim_annot.stats.aggregate import model_gold
from medsim_annot.storage import Engine, get_engine

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
