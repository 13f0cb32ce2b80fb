"""Queries of the practice round: practice pairs, practice answers and each annotator's gate
status (tables ``practice_pairs``, ``practice_ratings``, ``practice_status``, 0015).

Practice lives apart from ``items`` and ``ratings``: nothing here joins them, and nothing that
reads them (the queue, gold, agreement, audits, exports) reads these tables. Every function
takes an open session (the caller's transaction) and returns plain values.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import delete, exists, func, insert, select
from sqlalchemy import exc as sa_exc
from sqlalchemy.orm import Session

from .models import Annotator, PracticePair, PracticeRating, PracticeStatus, Study

#: The states of :class:`~.models.PracticeStatus` (no row: ``practising`` in round 0).
PRACTISING = "practising"
PASSED = "passed"
UNLOCKED = "unlocked"
OPEN_STATES = (PASSED, UNLOCKED)


@dataclass(frozen=True)
class PracticePairRow:
    id: int
    position: int
    pair_id: str
    term_1: str
    term_2: str
    answer: str
    explanation: str


@dataclass(frozen=True)
class PracticeAnswerRow:
    """One stored practice answer with its pair's reference answer."""

    annotator_id: int
    round: int
    serial: int
    practice_pair_id: int
    pair_id: str
    value: str
    answer: str
    rated_at: dt.datetime
    elapsed_ms: int | None


@dataclass(frozen=True)
class StatusRow:
    round: int
    state: str


def has_practice(s: Session, study_id: int) -> bool:
    """Whether the study has practice pairs (one index lookup)."""
    return bool(s.scalar(select(exists().where(PracticePair.study_id == study_id))))


def practice_pairs(s: Session, study_id: int) -> list[PracticePairRow]:
    rows = s.execute(
        select(
            PracticePair.id,
            PracticePair.position,
            PracticePair.pair_id,
            PracticePair.term_1,
            PracticePair.term_2,
            PracticePair.answer,
            PracticePair.explanation,
        )
        .where(PracticePair.study_id == study_id)
        .order_by(PracticePair.position)
    ).all()
    return [PracticePairRow(*r) for r in rows]


def replace_practice_pairs(s: Session, study_id: int, pairs: list[dict]) -> None:
    """Set the study's practice pairs to *pairs* (dicts of the columns, in order). Pairs
    that already have practice answers are kept (the answers name them) and renumbered
    after the new ones; they are no longer served."""
    answered = set(
        s.scalars(
            select(PracticeRating.practice_pair_id).where(PracticeRating.study_id == study_id)
        ).all()
    )
    s.execute(
        delete(PracticePair).where(
            PracticePair.study_id == study_id, PracticePair.id.not_in(answered)
        )
    )
    old = s.scalars(select(PracticePair).where(PracticePair.study_id == study_id)).all()
    base = len(pairs)
    for k, row in enumerate(sorted(old, key=lambda r: r.position)):
        # Retired pairs sit at negative positions: never served, still reported.
        row.position = -(base + k + 1)
    s.flush()
    for pos, p in enumerate(pairs):
        s.add(PracticePair(study_id=study_id, position=pos, **p))


def annotator_study(s: Session, annotator_id: int) -> int | None:
    return s.scalar(select(Annotator.study_id).where(Annotator.id == annotator_id))


def status(s: Session, annotator_id: int) -> StatusRow:
    row = s.execute(
        select(PracticeStatus.round, PracticeStatus.state).where(
            PracticeStatus.annotator_id == annotator_id
        )
    ).first()
    return StatusRow(int(row[0]), str(row[1])) if row else StatusRow(0, PRACTISING)


def statuses(s: Session, study_id: int) -> dict[int, StatusRow]:
    rows = s.execute(
        select(PracticeStatus.annotator_id, PracticeStatus.round, PracticeStatus.state).where(
            PracticeStatus.study_id == study_id
        )
    ).all()
    return {int(a): StatusRow(int(r), str(st)) for a, r, st in rows}


def set_status(
    s: Session, study_id: int, annotator_id: int, *, round: int, state: str, at: dt.datetime
) -> None:
    row = s.get(PracticeStatus, annotator_id)
    if row is None:
        s.add(
            PracticeStatus(
                annotator_id=annotator_id,
                study_id=study_id,
                round=round,
                state=state,
                changed_at=at,
            )
        )
    else:
        row.round, row.state, row.changed_at = round, state, at
    s.flush()


def is_locked(s: Session, study_id: int, annotator_id: int) -> bool:
    """Whether the real queue of *annotator_id* is closed: the study has practice pairs and
    the annotator has neither passed the gate nor been unlocked (two index lookups)."""
    if not has_practice(s, study_id):
        return False
    state = s.scalar(
        select(PracticeStatus.state).where(PracticeStatus.annotator_id == annotator_id)
    )
    return state not in OPEN_STATES


def answers(
    s: Session, study_id: int, annotator_id: int | None = None, round: int | None = None
) -> list[PracticeAnswerRow]:
    """Stored practice answers (oldest first), of one annotator and round when given."""
    q = (
        select(
            PracticeRating.annotator_id,
            PracticeRating.round,
            PracticeRating.serial,
            PracticeRating.practice_pair_id,
            PracticePair.pair_id,
            PracticeRating.value,
            PracticePair.answer,
            PracticeRating.rated_at,
            PracticeRating.elapsed_ms,
        )
        .join(PracticePair, PracticePair.id == PracticeRating.practice_pair_id)
        .where(PracticeRating.study_id == study_id)
        .order_by(PracticeRating.annotator_id, PracticeRating.round, PracticeRating.serial)
    )
    if annotator_id is not None:
        q = q.where(PracticeRating.annotator_id == annotator_id)
    if round is not None:
        q = q.where(PracticeRating.round == round)
    return [PracticeAnswerRow(*r) for r in s.execute(q).all()]


def answered_in_round(s: Session, annotator_id: int, round: int) -> int:
    return int(
        s.scalar(
            select(func.count())
            .select_from(PracticeRating)
            .where(PracticeRating.annotator_id == annotator_id, PracticeRating.round == round)
        )
        or 0
    )


def insert_answer(
    s: Session,
    *,
    study_id: int,
    annotator_id: int,
    practice_pair_id: int,
    round: int,
    serial: int,
    value: str,
    at: dt.datetime,
    elapsed_ms: int | None,
) -> bool:
    """Store one practice answer; ``False`` when the (annotator, round, serial) is taken
    (a concurrent tab stored it first): the transaction is then unusable and the caller
    rolls it back and reads again."""
    try:
        s.execute(
            insert(PracticeRating).values(
                study_id=study_id,
                annotator_id=annotator_id,
                practice_pair_id=practice_pair_id,
                round=round,
                serial=serial,
                value=value,
                rated_at=at,
                elapsed_ms=elapsed_ms,
            )
        )
    except sa_exc.IntegrityError as exc:
        if "serial" in str(exc.orig).lower():
            return False
        raise
    return True


def study_setup(s: Session, study_id: int) -> tuple[str, str, str]:
    """The study's scale JSON, config JSON and guideline (one primary-key read)."""
    row = s.execute(
        select(Study.scale_json, Study.config_json, Study.guideline).where(Study.id == study_id)
    ).one()
    return str(row[0]), str(row[1] or "{}"), str(row[2] or "")
