"""Guideline versions (0014): every revision of a study's guideline, and the version in
force, which each saved rating records. A study without a revision is on version 1, the
guideline it was created with."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from .models import GuidelineVersion, Study, utcnow

#: The version of a study that was never revised: the guideline it was created with.
FIRST_VERSION = 1


def version_in_force(study_id: Any):
    """The guideline version in force for *study_id* as a scalar SQL expression (a value or
    a column), so an INSERT records it in the same statement."""
    return (
        select(func.coalesce(func.max(GuidelineVersion.version), FIRST_VERSION))
        .where(GuidelineVersion.study_id == study_id)
        .scalar_subquery()
    )


def current_version(s: Session, study_id: int) -> int:
    """The guideline version in force for the study."""
    return int(s.scalar(select(version_in_force(study_id))) or FIRST_VERSION)


def add_version(
    s: Session, study_id: int, text: str, *, note: str = "", at: dt.datetime | None = None
) -> int:
    """Record a new guideline *text* as the next version, make it the study's guideline, and
    return its number (in the caller's transaction)."""
    version = current_version(s, study_id) + 1
    s.add(
        GuidelineVersion(
            study_id=study_id, version=version, text=text, note=note, created_at=at or utcnow()
        )
    )
    s.execute(update(Study).where(Study.id == study_id).values(guideline=text))
    s.flush()
    return version


def versions(s: Session, study_id: int) -> list[tuple[int, dt.datetime, str, str]]:
    """Every revision of the study's guideline, oldest first: ``(version, created_at, note,
    text)`` (version 1, the guideline the study was created with, has no row)."""
    q = (
        select(
            GuidelineVersion.version,
            GuidelineVersion.created_at,
            GuidelineVersion.note,
            GuidelineVersion.text,
        )
        .where(GuidelineVersion.study_id == study_id)
        .order_by(GuidelineVersion.version)
    )
    return [(int(v), at, str(note), str(text)) for v, at, note, text in s.execute(q).all()]
