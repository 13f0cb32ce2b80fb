"""Access codes for annotators and the admin password.

Annotator access codes carry 130 random bits (26 base32 characters, shown in groups of four
and accepted with or without the dashes, in any case); only their SHA-256 is stored, which
is safe for codes of that entropy. The admin password is stored as a salted scrypt hash in
the ``settings`` table, or given by ``MEDSIM_ADMIN_PASSWORD`` (which then wins).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass

from sqlalchemy.engine import Engine

from medsim_annot.errors import UsageProblem
from medsim_annot.storage import credentials as store
from medsim_annot.storage import get_engine

ADMIN_KEY = "admin_password_scrypt"


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
    """A signed-in annotator. ``credential_version`` is the annotator's credential version
    at sign-in: the pages keep it in the session and pass it as ``credential=`` to every
    annotation read and save, which end the session (:class:`~medsim_annot.errors.SessionEnded`)
    once a new code was issued or the code revoked (security finding 1)."""

    annotator_id: int
    name: str
    study_id: int
    study_name: str
    credential_version: int = 1


def authenticate_annotator(code: str, *, engine: Engine | None = None) -> AnnotatorIdentity | None:
    """The active annotator holding *code* with their credential version, or ``None``."""
    if len(normalise_code(code)) < 20:
        return None
    row = store.active_annotator_by_code_hash(engine or get_engine(), hash_code(code))
    if row is None:
        return None
    return AnnotatorIdentity(
        row.annotator_id, row.name, row.study_id, row.study_name, row.credential_version
    )


def _scrypt(password: str, salt: bytes) -> bytes:
    return hashlib.scrypt(password.encode("utf-8"), salt=salt, n=2**14, r=8, p=1, dklen=32)


def set_admin_password(password: str, *, engine: Engine | None = None) -> None:
    """Store a salted scrypt hash of *password* (at least 8 characters)."""
    if len(password) < 8:
        raise UsageProblem("the admin password must have at least 8 characters")
    salt = secrets.token_bytes(16)
    value = salt.hex() + "$" + _scrypt(password, salt).hex()
    store.put_setting(engine or get_engine(), ADMIN_KEY, value)


def admin_password_configured(*, engine: Engine | None = None) -> bool:
    if os.environ.get("MEDSIM_ADMIN_PASSWORD"):
        return True
    return store.get_setting(engine or get_engine(), ADMIN_KEY) is not None


def check_admin_password(password: str, *, engine: Engine | None = None) -> bool:
    """Whether *password* is the admin password (constant-time comparisons)."""
    if not password:
        return False
    env = os.environ.get("MEDSIM_ADMIN_PASSWORD")
    if env:
        return hmac.compare_digest(env.encode("utf-8"), password.encode("utf-8"))
    stored = store.get_setting(engine or get_engine(), ADMIN_KEY)
    if stored is None:
        return False
    salt_hex, digest_hex = stored.split("$", 1)
    return hmac.compare_digest(_scrypt(password, bytes.fromhex(salt_hex)).hex(), digest_hex)
