"""Access codes for annotators.

Annotator access codes carry 130 random bits (26 base32 characters, shown in groups of four
and accepted with or without the dashes, in any case); only their SHA-256 is stored, which
is safe for codes of that entropy. Admins and their passwords: :mod:`.admins`.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.engine import Engine

from medsim_annot.storage import Annotator, Study, get_engine, session_scope


def new_access_code() -> str:
    """A fresh access code: 130 bits, e.g. ``ABCD-EFGH-...`` (7 groups)."""
    raw = base64.b32encode(secrets.token_bytes(17)).decode("ascii").rstrip("=")[:26]
    return "-".join(raw[i : i + 4] for i in range(0, len(raw), 4))


def normalise_code(code: str) -> str:
    return "".join(ch for ch in (code or "").upper() if ch.isalnum())


def hash_code(code: str) -> str:
    return hashlib.sha256(normalise_code(code).encode("ascii", "ignore")).hexdigest()


@dataclass(frozen=True)
class AnnotatorIdentity:
    annotator_id: int
    name: str
    study_id: int
    study_name: str


def authenticate_annotator(code: str, *, engine: Engine | None = None) -> AnnotatorIdentity | None:
    """The active annotator holding *code*, or ``None``."""
    if len(normalise_code(code)) < 20:
        return None
    with session_scope(engine or get_engine()) as s:
        row = s.execute(
            select(Annotator.id, Annotator.name, Study.id, Study.name)
            .join(Study, Study.id == Annotator.study_id)
            .where(Annotator.code_hash == hash_code(code), Annotator.active.is_(True))
        ).first()
    return AnnotatorIdentity(*row) if row else None
