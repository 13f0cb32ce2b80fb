"""Access codes: the code a member (annotator or adjudicator) signs in with.

Access codes carry 130 random bits (26 base32 characters, shown in groups of four
and accepted with or without the dashes, in any case); only their SHA-256 is stored, which
is safe for codes of that entropy. Admins and their passwords: :mod:`.admins`.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass

from medsim_annot.storage import Engine, get_engine
from medsim_annot.storage import credentials as store


def new_access_code() -> str:
    """A fresh access code: 130 bits, e.g. ``ABCD-EFGH-...`` (7 groups)."""
    raw = base64.b32encode(secrets.token_bytes(17)).decode("ascii").rstrip("=")[:26]
    return "-".join(raw[i : i + 4] for i in range(0, len(raw), 4))


def normalise_code(code: str) -> str:
    return "".join(ch for ch in (code or "").upper() if ch.isalnum())


def hash_code(code: str) -> str:
    return hashlib.sha256(normalise_code(code).encode("ascii", "ignore")).hexdigest()


#: Fewer letters and digits than this cannot be an access code (they have 26): such input is
#: refused before any lookup.
MIN_CODE_CHARS = 20


def code_key(code: str) -> str | None:
    """The stored form of *code* (its hash) to look a member up by, or ``None`` when it
    cannot be an access code: the one check of every sign-in by code (annotators',
    adjudicators')."""
    return hash_code(code) if len(normalise_code(code)) >= MIN_CODE_CHARS else None


@dataclass(frozen=True)
class AnnotatorIdentity:
    """A signed-in annotator. ``credential_version`` is the annotator's credential version
    at sign-in: the pages keep it in the session and pass it as ``credential=`` to every
    annotation read and save, which end the session (:class:`~medsim_annot.errors.SessionEnded`)
    once a new code was issued or the code revoked, so a leaked or replaced code stops
    working in sessions already open."""

    annotator_id: int
    name: str
    study_id: int
    study_name: str
    credential_version: int = 1


def authenticate_annotator(code: str, *, engine: Engine | None = None) -> AnnotatorIdentity | None:
    """The active annotator holding *code* with their credential version, or ``None``."""
    key = code_key(code)
    if key is None:
        return None
    row = store.active_annotator_by_code_hash(engine or get_engine(), key)
    if row is None:
        return None
    return AnnotatorIdentity(
        row.annotator_id, row.name, row.study_id, row.study_name, row.credential_version
    )
