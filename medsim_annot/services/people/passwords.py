"""Admin passwords: hashing, checking, re-hashing and the rules a password must meet.

Passwords are stored as ``scrypt$N$r$p$SALT$HASH`` with N=2^17, r=8, p=1 (128 MiB, the
OWASP recommendation for scrypt) and an explicit ``maxmem``; hashes made with older
parameters are still accepted and re-hashed at the next successful sign-in. At most
:data:`MAX_CONCURRENT_HASHES` hashes run at once in a process, so a burst of sign-ins cannot
exhaust memory or CPU. ``MEDSIM_ADMIN_PASSWORD`` (at least 12 characters) is the password of
the admin named ``admin`` and wins over a stored one.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import threading

from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import fmt_int, t
from medsim_annot.services.people.throttle import ThrottledError

MIN_PASSWORD_CHARS = 12
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**17, 8, 1
SCRYPT_MAXMEM = 256 * 1024 * 1024  # twice the 128*N*r bytes scrypt needs
MAX_CONCURRENT_HASHES = max(1, int(os.environ.get("MEDSIM_MAX_CONCURRENT_HASHES", "2")))
HASH_WAIT_S = 10.0
_HASHES = threading.BoundedSemaphore(MAX_CONCURRENT_HASHES)


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    if not _HASHES.acquire(timeout=HASH_WAIT_S):
        raise ThrottledError(1.0, busy=True)
    try:
        return hashlib.scrypt(
            password.encode("utf-8"), salt=salt, n=n, r=r, p=p, maxmem=SCRYPT_MAXMEM, dklen=32
        )
    finally:
        _HASHES.release()


def hash_password(password: str) -> str:
    """``scrypt$N$r$p$SALT$HASH`` of *password* with the current parameters."""
    salt = secrets.token_bytes(16)
    digest = _scrypt(password, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P)
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${salt.hex()}${digest.hex()}"


def verify_password(password: str, stored: str) -> bool:
    """Whether *password* matches *stored* (constant-time comparison)."""
    try:
        tag, n, r, p, salt_hex, digest_hex = stored.split("$")
        if tag != "scrypt":
            return False
        digest = _scrypt(password, bytes.fromhex(salt_hex), int(n), int(r), int(p))
    except ValueError:
        return False
    return hmac.compare_digest(digest.hex(), digest_hex)


def needs_rehash(stored: str) -> bool:
    return not stored.startswith(f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}$")


DUMMY_HASH = "scrypt${}${}${}${}${}".format(SCRYPT_N, SCRYPT_R, SCRYPT_P, "00" * 16, "00" * 32)


def check_password_rules(password: str, what: str | None = None) -> None:
    if len(password) < MIN_PASSWORD_CHARS:
        if what is None:
            raise UsageProblem(
                t(
                    "an admin password must have at least {n} characters",
                    n=fmt_int(MIN_PASSWORD_CHARS),
                )
            )
        raise UsageProblem(
            t(
                "{what} must have at least {n} characters",
                what=what,
                n=fmt_int(MIN_PASSWORD_CHARS),
            )
        )


def env_password_problem() -> str | None:
    """Why MEDSIM_ADMIN_PASSWORD cannot be used (too short), or ``None``."""
    env = os.environ.get("MEDSIM_ADMIN_PASSWORD")
    if env and len(env) < MIN_PASSWORD_CHARS:
        return t(
            "`MEDSIM_ADMIN_PASSWORD` has fewer than {n} characters and is refused; set a "
            "longer one",
            n=fmt_int(MIN_PASSWORD_CHARS),
        )
    return None
