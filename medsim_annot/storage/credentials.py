"""Queries of annotators' credentials: sign-in by access-code hash or SSO identity, credential
versions, new codes.

Typed functions taking the caller's session; the annotator role of
:mod:`medsim_annot.services.people.annotators` names them and never builds a query.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from .models import Adjudicator, Annotator, Study


@dataclass(frozen=True)
class AnnotatorRow:
    """The sign-in facts of one annotator."""

    annotator_id: int
    name: str
    study_id: int
    study_name: str
    credential_version: int


def _identity_query():
    return select(
        Annotator.id, Annotator.name, Study.id, Study.name, Annotator.credential_version
    ).join(Study, Study.id == Annotator.study_id)


def active_annotator_by_code_hash(s: Session, code_hash: str) -> AnnotatorRow | None:
    """The active annotator whose access code hashes to *code_hash*, or ``None``."""
    row = s.execute(
        _identity_query().where(Annotator.code_hash == code_hash, Annotator.active.is_(True))
    ).first()
    return AnnotatorRow(*row) if row else None


def annotators_by_sso(s: Session, identities: list[str]) -> list[AnnotatorRow]:
    """Active annotators linked to one of *identities* in studies that allow SSO sign-in, by
    study name."""
    if not identities:
        return []
    rows = s.execute(
        _identity_query()
        .where(
            Annotator.sso_identity.in_(identities),
            Annotator.active.is_(True),
            Study.annotator_sso.is_(True),
        )
        .order_by(Study.name)
    ).all()
    return [AnnotatorRow(*r) for r in rows]


def credential_version(s: Session, annotator_id: int) -> tuple[int, bool] | None:
    """``(credential version, active)`` of an annotator, ``None`` when unknown."""
    row = s.execute(
        select(Annotator.credential_version, Annotator.active).where(Annotator.id == annotator_id)
    ).first()
    return (int(row[0]), bool(row[1])) if row else None


def set_code(s: Session, annotator_id: int, code_hash: str | None, *, active: bool) -> int:
    """Store a new access-code hash (``None``: revoked) and the active flag inside transaction
    *s*, and add one to the annotator's credential version: every session opened with the
    previous code ends. Returns the new version."""
    return int(
        s.execute(
            update(Annotator)
            .where(Annotator.id == annotator_id)
            .values(
                code_hash=code_hash,
                active=active,
                credential_version=Annotator.credential_version + 1,
            )
            .returning(Annotator.credential_version)
        ).scalar_one()
    )


def bump_identity(s: Session, identity: str | None) -> None:
    """Move on the credential version of every annotator and adjudicator linked to SSO
    *identity* (any study) inside transaction *s*: the person's role changed (an admin or
    adjudicator role given or taken), so the sessions and ratings tokens they opened under
    the old role end."""
    if not identity:
        return
    for model in (Annotator, Adjudicator):
        s.execute(
            update(model)
            .where(model.sso_identity == identity)
            .values(credential_version=model.credential_version + 1)
        )
