"""Queries of the predictions stored with a study (0013): versions of a model's scores and
the score of each pair. Nothing here is read by the serving queries or the rating
endpoint: predictions never reach an annotator.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import func, insert, select, update
from sqlalchemy.orm import Session

from medsim_annot.storage.models import Assignment, Item, Prediction, PredictionScore


@dataclass(frozen=True)
class PredictionRow:
    """One stored version of a study's predictions (no scores)."""

    id: int
    name: str
    version: int
    score_column: str
    source: str
    sha256: str
    pairs: int
    created_at: dt.datetime | None
    actor: str | None

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "version": self.version,
            "score_column": self.score_column,
            "source": self.source,
            "sha256": self.sha256,
            "pairs": self.pairs,
            "created_at": None if self.created_at is None else self.created_at.isoformat(),
            "actor": self.actor,
        }


def item_ids_by_pair(s: Session, study_id: int) -> dict[str, int]:
    """``pair_id -> item id`` of the study's pairs."""
    q = select(Item.pair_id, Item.id).where(Item.study_id == study_id)
    return {str(p): int(i) for p, i in s.execute(q).all()}


def insert_version(
    s: Session,
    *,
    study_id: int,
    name: str,
    score_column: str,
    source: str,
    sha256: str,
    scores: Mapping[int, float],
    actor: str | None,
    at: dt.datetime,
) -> PredictionRow:
    """Store a new version of *name* (the next number for this study and name) with the
    *scores* ``item id -> score``; the unique (study, name, version) makes two concurrent
    adds of the same name fail rather than share a number."""
    last = s.scalar(
        select(func.max(Prediction.version)).where(
            Prediction.study_id == study_id, Prediction.name == name
        )
    )
    row = Prediction(
        study_id=study_id,
        name=name,
        version=int(last or 0) + 1,
        score_column=score_column,
        source=source,
        sha256=sha256,
        pairs=len(scores),
        created_at=at,
        actor=actor,
    )
    s.add(row)
    s.flush()
    if scores:
        s.execute(
            insert(PredictionScore),
            [{"prediction_id": row.id, "item_id": i, "score": float(v)} for i, v in scores.items()],
        )
    return _row(row)


def _row(p: Prediction) -> PredictionRow:
    return PredictionRow(
        int(p.id),
        p.name,
        int(p.version),
        p.score_column,
        p.source,
        p.sha256,
        int(p.pairs),
        p.created_at,
        p.actor,
    )


def versions(s: Session, study_id: int) -> list[PredictionRow]:
    """Every stored version of the study's predictions, oldest first."""
    q = select(Prediction).where(Prediction.study_id == study_id).order_by(Prediction.id)
    return [_row(p) for p in s.scalars(q).all()]


def latest(s: Session, study_id: int, name: str | None = None) -> PredictionRow | None:
    """The latest version of *name* (any name: the latest stored), or ``None``."""
    q = select(Prediction).where(Prediction.study_id == study_id)
    if name is not None:
        q = q.where(Prediction.name == name)
    p = s.scalars(q.order_by(Prediction.id.desc()).limit(1)).first()
    return None if p is None else _row(p)


def scores(s: Session, prediction_id: int) -> dict[str, float]:
    """``pair_id -> score`` of one stored version."""
    q = (
        select(Item.pair_id, PredictionScore.score)
        .join(Item, Item.id == PredictionScore.item_id)
        .where(PredictionScore.prediction_id == prediction_id)
    )
    return {str(p): float(v) for p, v in s.execute(q).all()}


@dataclass(frozen=True)
class GroupItem:
    """One pair of a group of the sequential audit with its score in the latest stored
    predictions and, under active serving, the probability it was drawn with (``None``: it
    has no drawn slot, or the study serves uniformly)."""

    item_id: int
    group: str
    auto_label: int | None
    score: float
    draw_probability: float | None


def group_items(
    s: Session, study_id: int, prediction_id: int, group: str | None = None
) -> list[GroupItem]:
    """The pairs of the study's audit groups (of *group* only when given) with their score
    in version *prediction_id* and their slots' draw probability (the largest, should two
    slots of a pair differ)."""
    drawn = (
        select(func.max(Assignment.draw_probability))
        .where(Assignment.item_id == Item.id, Assignment.kind == "main")
        .correlate(Item)
        .scalar_subquery()
    )
    q = (
        select(Item.id, Item.audit_group, Item.auto_label, PredictionScore.score, drawn)
        .select_from(Item)
        .join(
            PredictionScore,
            (PredictionScore.item_id == Item.id) & (PredictionScore.prediction_id == prediction_id),
        )
        .where(
            Item.study_id == study_id,
            Item.audit_group.is_not(None) if group is None else Item.audit_group == group,
        )
        .order_by(Item.position)
    )
    return [
        GroupItem(
            int(i),
            str(g),
            None if lab is None else int(lab),
            float(v),
            None if p is None else float(p),
        )
        for i, g, lab, v, p in s.execute(q).all()
    ]


def set_draw_probabilities(s: Session, study_id: int, by_item: Mapping[int, float]) -> int:
    """Record on the main slots of each item of *by_item* the probability its pair was drawn
    with (active serving, at creation); returns the slots updated."""
    changed = 0
    for item_id, p in by_item.items():
        res = s.execute(
            update(Assignment)
            .where(
                Assignment.study_id == study_id,
                Assignment.item_id == item_id,
                Assignment.kind == "main",
            )
            .values(draw_probability=float(p))
        )
        changed += int(getattr(res, "rowcount", 0) or 0)
    return changed
