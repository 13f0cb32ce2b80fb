"""Queries of adjudication: adjudicators (add, codes, SSO links, sign-in) and their
append-only decisions with the versioned insert.

A pair's *decision version* is the number of decisions stored for it (0 = none); each row
carries its ``revision`` and the unique index ``uq_adjudications_item_revision`` lets exactly
one of two adjudicators who saw the same version store the next (:func:`insert_decision`
reports the loser instead of raising). Every function takes an open session (the caller's
transaction) unless it says otherwise.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import exc as sa_exc
from sqlalchemy import func, insert, select, update
from sqlalchemy.orm import Session

from .models import Adjudication, Adjudicator, Item, Study


@dataclass(frozen=True)
class AdjudicatorRow:
    """The sign-in facts of one adjudicator."""

    adjudicator_id: int
    name: str
    study_id: int
    study_name: str
    credential_version: int


def _identity_query():
    return select(
        Adjudicator.id, Adjudicator.name, Study.id, Study.name, Adjudicator.credential_version
    ).join(Study, Study.id == Adjudicator.study_id)


def adjudicator_id(s: Session, study_id: int, name: str) -> int | None:
    return s.scalar(
        select(Adjudicator.id).where(Adjudicator.study_id == study_id, Adjudicator.name == name)
    )


def insert_adjudicator(
    s: Session, *, study_id: int, name: str, code_hash: str | None, created_at: dt.datetime
) -> int:
    row = Adjudicator(
        study_id=study_id,
        name=name,
        code_hash=code_hash,
        active=True,
        credential_version=1,
        created_at=created_at,
    )
    s.add(row)
    s.flush()
    return int(row.id)


def set_code(s: Session, adjudicator_id: int, code_hash: str | None, *, active: bool) -> int:
    """Set (or clear) the code hash and bump the credential version (sessions opened with an
    older code end). Returns the new version."""
    return int(
        s.execute(
            update(Adjudicator)
            .where(Adjudicator.id == adjudicator_id)
            .values(
                code_hash=code_hash,
                active=active,
                credential_version=Adjudicator.credential_version + 1,
            )
            .returning(Adjudicator.credential_version)
        ).scalar_one()
    )


def set_sso(s: Session, adjudicator_id: int, identity: str | None) -> None:
    """Set (or clear) the SSO identity and move the credential version on (sessions opened
    before end)."""
    s.execute(
        update(Adjudicator)
        .where(Adjudicator.id == adjudicator_id)
        .values(sso_identity=identity, credential_version=Adjudicator.credential_version + 1)
    )


def adjudicators(s: Session, study_id: int) -> list[tuple[int, str, bool, bool, str | None]]:
    """``(id, name, active, has_code, sso identity)`` of the study's adjudicators by name."""
    rows = s.execute(
        select(
            Adjudicator.id,
            Adjudicator.name,
            Adjudicator.active,
            Adjudicator.code_hash.is_not(None),
            Adjudicator.sso_identity,
        )
        .where(Adjudicator.study_id == study_id)
        .order_by(Adjudicator.name)
    ).all()
    return [(int(i), str(n), bool(a), bool(h), sso) for i, n, a, h, sso in rows]


def by_code_hash(s: Session, code_hash: str) -> AdjudicatorRow | None:
    row = s.execute(
        _identity_query().where(Adjudicator.code_hash == code_hash, Adjudicator.active.is_(True))
    ).first()
    return AdjudicatorRow(*row) if row else None


def by_sso(s: Session, identities: list[str]) -> list[AdjudicatorRow]:
    """Active adjudicators linked to one of *identities*, by study name."""
    if not identities:
        return []
    rows = s.execute(
        _identity_query()
        .where(Adjudicator.sso_identity.in_(identities), Adjudicator.active.is_(True))
        .order_by(Study.name)
    ).all()
    return [AdjudicatorRow(*r) for r in rows]


def credential_version(s: Session, adjudicator_id: int) -> tuple[int, bool] | None:
    """``(credential version, active)`` of an adjudicator, ``None`` when unknown."""
    row = s.execute(
        select(Adjudicator.credential_version, Adjudicator.active).where(
            Adjudicator.id == adjudicator_id
        )
    ).first()
    return (int(row[0]), bool(row[1])) if row else None


def item_by_pair(s: Session, study_id: int, pair_id: str) -> int | None:
    return s.scalar(select(Item.id).where(Item.study_id == study_id, Item.pair_id == pair_id))


def lock_item(s: Session, item_id: int) -> None:
    """Serialise decisions on one pair on PostgreSQL (SQLite writers are serial anyway)."""
    if s.get_bind().dialect.name == "postgresql":
        s.execute(select(Item.id).where(Item.id == item_id).with_for_update())


def decision_version(s: Session, item_id: int) -> int:
    return int(
        s.scalar(select(func.max(Adjudication.revision)).where(Adjudication.item_id == item_id))
        or 0
    )


def insert_decision(
    s: Session,
    *,
    study_id: int,
    item_id: int,
    adjudicator_id: int,
    revision: int,
    label: str,
    reason: str,
    reason_text: str,
    flag_guideline: bool,
    decided_at: dt.datetime,
    event_id: int,
) -> bool:
    """Insert revision *revision* of the pair's decision. ``False`` when another adjudicator
    stored that revision first: the transaction is then unusable, the caller rolls back."""
    try:
        s.execute(
            insert(Adjudication).values(
                study_id=study_id,
                item_id=item_id,
                adjudicator_id=adjudicator_id,
                revision=revision,
                label=label,
                reason=reason,
                reason_text=reason_text,
                flag_guideline=flag_guideline,
                decided_at=decided_at,
                event_id=event_id,
            )
        )
    except sa_exc.IntegrityError as exc:
        text = str(exc.orig).lower()
        if "revision" in text or "uq_adjudications_item_revision" in text:
            return False
        raise
    return True


#: Columns of :func:`decisions`, in order.
DECISION_COLUMNS = (
    "decision_id",
    "pair_id",
    "revision",
    "adjudicator",
    "label",
    "reason",
    "reason_text",
    "flag_guideline",
    "decided_at",
    "event_id",
)


def decisions_version(s: Session, study_id: int) -> tuple[int, int]:
    """(number of decisions, highest decision id) of the study, in one statement: changes
    with every decision (decisions are append-only), so it keys what is kept of them."""
    of_study = Adjudication.study_id == study_id
    n, top = s.execute(
        select(
            select(func.count()).select_from(Adjudication).where(of_study).scalar_subquery(),
            select(func.coalesce(func.max(Adjudication.id), 0)).where(of_study).scalar_subquery(),
        )
    ).one()
    return int(n), int(top)


def decisions(s: Session, study_id: int, *, after: int = 0) -> list[tuple]:
    """Every decision of the study (history) whose id is above *after*, in insertion order:
    the rows of :data:`DECISION_COLUMNS`."""
    return [
        tuple(r)
        for r in s.execute(
            select(
                Adjudication.id,
                Item.pair_id,
                Adjudication.revision,
                Adjudicator.name,
                Adjudication.label,
                Adjudication.reason,
                Adjudication.reason_text,
                Adjudication.flag_guideline,
                Adjudication.decided_at,
                Adjudication.event_id,
            )
            .join(Item, Item.id == Adjudication.item_id)
            .join(Adjudicator, Adjudicator.id == Adjudication.adjudicator_id)
            .where(Adjudication.study_id == study_id, Adjudication.id > after)
            .order_by(Adjudication.id)
        ).all()
    ]
