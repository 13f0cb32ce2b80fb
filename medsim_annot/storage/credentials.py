"""Queries of sign-in: annotators by access-code hash, credential versions, settings.

Typed functions; :mod:`medsim_annot.services.people.auth` calls them and never builds a query.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from .db import session_scope
from .models import Annotator, Study


@dataclass(frozen=True)
class AnnotatorRow:
    """The sign-in facts of one annotator."""

    annotator_id: int
    name: str
    study_id: int
    study_name: str
    credential_version: int


def active_annotator_by_code_hash(engine: Engine, code_hash: str) -> AnnotatorRow | None:
    """The active annotator whose access code hashes to *code_hash*, or ``None``."""
    with session_scope(engine) as s:
        row = s.execute(
            select(
                Annotator.id,
                Annotator.name,
                Study.id,
                Study.name,
                Annotator.credential_version,
            )
            .join(Study, Study.id == Annotator.study_id)
            .where(Annotator.code_hash == code_hash, Annotator.active.is_(True))
        ).first()
    return AnnotatorRow(*row) if row else None


def credential_version(engine: Engine, annotator_id: int) -> int | None:
    """The annotator's current credential version (``None``: no such annotator)."""
    with session_scope(engine) as s:
        return s.scalar(select(Annotator.credential_version).where(Annotator.id == annotator_id))


def bump_credential_version(s: Session, annotator_id: int) -> int:
    """Add one to the annotator's credential version inside transaction *s* (issue-code and
    revoke): every session opened with the previous code ends. Returns the new version."""
    return int(
        s.execute(
            update(Annotator)
            .where(Annotator.id == annotator_id)
            .values(credential_version=Annotator.credential_version + 1)
            .returning(Annotator.credential_version)
        ).scalar_one()
    )
