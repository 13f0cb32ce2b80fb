"""Access codes: the code a member (annotator or adjudicator) signs in with.

Access codes carry 130 random bits (26 base32 characters, shown in groups of four
and accepted with or without the dashes, in any case); only their SHA-256 is stored, which
is safe for codes of that entropy. Who holds a code and signs in with it: :mod:`.members`;
admins and their passwords: :mod:`.admins`.
"""

from __future__ import annotations

import base64
import hashlib
import secrets


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
