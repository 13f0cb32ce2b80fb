"""Queries for a person's language (0018: ``annotators``, ``adjudicators`` and ``admins``
each have a ``language`` column) and the study's own texts per language (``study_texts``,
append-only). Services call these inside their transaction."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from .events import current_actor
from .models import Adjudicator, Admin, Annotator, StudyText, utcnow

#: Who has a language: a member of a study (annotator, adjudicator) or an admin.
Kind = Literal["annotator", "adjudicator", "admin"]
_MEMBERS: dict[str, type[Annotator] | type[Adjudicator]] = {
    "annotator": Annotator,
    "adjudicator": Adjudicator,
}


def member_language(s: Session, kind: Kind, member_id: int) -> str | None:
    """The stored language of annotator or adjudicator *member_id* (``None``: none)."""
    model = _MEMBERS[kind]
    return s.scalar(select(model.language).where(model.id == member_id))


def set_member_language(s: Session, kind: Kind, member_id: int, language: str | None) -> None:
    """Store *language* (``None`` clears it) for annotator or adjudicator *member_id*."""
    model = _MEMBERS[kind]
    s.execute(update(model).where(model.id == member_id).values(language=language))


def member_languages(s: Session, kind: Kind, study_id: int) -> dict[str, str | None]:
    """Name -> stored language of every annotator or adjudicator of a study, in id order."""
    model = _MEMBERS[kind]
    rows = s.execute(
        select(model.name, model.language).where(model.study_id == study_id).order_by(model.id)
    ).all()
    return {str(n): lang for n, lang in rows}


def admin_language(s: Session, name: str) -> str | None:
    """The stored language of admin *name* (``None``: none, or no such admin)."""
    return s.scalar(select(Admin.language).where(Admin.name == name))


def set_admin_language(s: Session, name: str, language: str | None) -> bool:
    """Store *language* for admin *name*; ``False`` when there is no such admin."""
    found = s.scalar(select(Admin.id).where(Admin.name == name))
    if found is None:
        return False
    s.execute(update(Admin).where(Admin.id == found).values(language=language))
    return True


# ------------------------------------------------------------------ the study's own texts
@dataclass(frozen=True)
class TextsRow:
    """The current texts of a study in one language."""

    language: str
    texts_json: str
    guideline_version: int | None
    created_at: dt.datetime
    actor: str | None


def add_texts(
    s: Session, study_id: int, language: str, texts_json: str, guideline_version: int | None
) -> None:
    """Store new texts of the study in *language* (they replace the previous ones)."""
    s.add(
        StudyText(
            study_id=study_id,
            language=language,
            texts_json=texts_json,
            guideline_version=guideline_version,
            created_at=utcnow(),
            actor=current_actor(),
        )
    )
    s.flush()


def current_texts(s: Session, study_id: int, language: str) -> TextsRow | None:
    """The study's texts in *language* as last stored, or ``None``."""
    row = s.execute(
        select(
            StudyText.language,
            StudyText.texts_json,
            StudyText.guideline_version,
            StudyText.created_at,
            StudyText.actor,
        )
        .where(StudyText.study_id == study_id, StudyText.language == language)
        .order_by(StudyText.id.desc())
        .limit(1)
    ).first()
    return TextsRow(*row) if row is not None else None


def text_languages(s: Session, study_id: int) -> list[str]:
    """The languages the study has texts in, sorted."""
    rows = s.scalars(
        select(StudyText.language).where(StudyText.study_id == study_id).distinct()
    ).all()
    return sorted(str(r) for r in rows)
