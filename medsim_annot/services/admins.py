"""Named study admins, their passwords and SSO identities, and the throttled sign-ins.

Passwords are stored as ``scrypt$N$r$p$SALT$HASH`` with N=2^17, r=8, p=1 (128 MiB, the
OWASP recommendation for scrypt) and an explicit ``maxmem``; hashes made with older
parameters are still accepted and re-hashed at the next successful sign-in. At most
:data:`MAX_CONCURRENT_HASHES` hashes run at once in a process, so a burst of sign-ins cannot
exhaust memory or CPU. ``MEDSIM_ADMIN_PASSWORD`` (at least 12 characters) is the password of
the admin named ``admin`` and wins over a stored one.

Single sign-on: an SSO user is an admin when one of their identities is in the configured
``admins`` list or is the SSO identity of a named admin; otherwise an annotator when an
admin linked that identity to an annotator of a study that allows SSO sign-in; otherwise
refused. The identities are the e-mail address (lower-cased) only when the provider says it
is verified (``email_verified`` true, as a boolean or the string ``"true"``: some providers,
Microsoft Entra ID among them, send no such claim and let users edit the address), and the
subject id. The two are separate namespaces: a configured identity with an ``@`` is an
e-mail address and matches only a verified ``email`` claim; one without, or written
``sub:ID``, is a subject id and matches only the ``sub`` claim.
"""

from __future__ import annotations

import getpass
import hashlib
import hmac
import os
import secrets
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from medsim_annot.errors import UsageProblem
from medsim_annot.services.auth import AnnotatorIdentity, authenticate_annotator
from medsim_annot.services.people.adjudicators import (
    AdjudicatorIdentity,
    adjudicators_by_sso,
    authenticate_adjudicator,
)
from medsim_annot.services.throttle import ADMIN_SIGNINS, CODE_SIGNINS, ThrottledError
from medsim_annot.storage import Engine, get_engine, session_scope
from medsim_annot.storage import admins as store
from medsim_annot.storage import events as events_store

_T = TypeVar("_T")

MIN_PASSWORD_CHARS = 12
ENV_ADMIN = "admin"  # the admin whose password MEDSIM_ADMIN_PASSWORD gives
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**17, 8, 1
SCRYPT_MAXMEM = 256 * 1024 * 1024  # twice the 128*N*r bytes scrypt needs
MAX_CONCURRENT_HASHES = max(1, int(os.environ.get("MEDSIM_MAX_CONCURRENT_HASHES", "2")))
HASH_WAIT_S = 10.0
_HASHES = threading.BoundedSemaphore(MAX_CONCURRENT_HASHES)


# ---------------------------------------------------------------------------- hashing
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


_DUMMY = "scrypt${}${}${}${}${}".format(SCRYPT_N, SCRYPT_R, SCRYPT_P, "00" * 16, "00" * 32)


def check_password_rules(password: str, what: str = "an admin password") -> None:
    if len(password) < MIN_PASSWORD_CHARS:
        raise UsageProblem(f"{what} must have at least {MIN_PASSWORD_CHARS} characters")


def env_password_problem() -> str | None:
    """Why MEDSIM_ADMIN_PASSWORD cannot be used (too short), or ``None``."""
    env = os.environ.get("MEDSIM_ADMIN_PASSWORD")
    if env and len(env) < MIN_PASSWORD_CHARS:
        return (
            f"MEDSIM_ADMIN_PASSWORD has fewer than {MIN_PASSWORD_CHARS} characters and is "
            "refused; set a longer one"
        )
    return None


# ------------------------------------------------------------------------------ admins
@dataclass(frozen=True)
class AdminIdentity:
    """A signed-in study admin: *via* ``named`` (a row of the admins table, by password or
    by its SSO identity) or ``sso`` (an identity of the configured ``admins`` list).

    *admin_id* (the row; ``None`` for ``MEDSIM_ADMIN_PASSWORD`` and the ``admins`` list) and
    *credential* (a keyed fingerprint of the row's password and SSO identity at sign-in) let
    :func:`admin_session_valid` end a session once the admin is removed or given a new
    password. They take no part in comparisons: the name says who the admin is."""

    name: str
    via: str
    admin_id: int | None = field(default=None, compare=False)
    credential: str = field(default="", compare=False, repr=False)

    @property
    def actor(self) -> str:
        """How the event log names this admin."""
        return f"admin:{self.name}" if self.via == "named" else f"sso:{self.name}"


SUB_PREFIX = "sub:"  # a subject id written explicitly (needed when it contains an "@")


def normalise_identity(identity: str) -> str:
    """E-mail addresses compare case-insensitively; subject ids (``sub:ID`` or a bare id
    without ``@``) exactly."""
    identity = (identity or "").strip()
    if identity.startswith(SUB_PREFIX):
        return identity
    return identity.lower() if "@" in identity else identity


def _valid_name(name: str) -> str:
    name = (name or "").strip()
    if not name or len(name) > 200 or any(ord(ch) < 32 for ch in name):
        raise UsageProblem("an admin needs a name of 1 to 200 printable characters")
    return name


def _tx(engine: Engine | None, query: Callable[..., _T], *args, **kwargs) -> _T:
    """Run one storage *query* in a transaction of its own: each admin use case is one
    statement, and none may hold a transaction open across a password hash (a deliberately
    slow step)."""
    with session_scope(engine or get_engine()) as s:
        return query(s, *args, **kwargs)


def add_admin(
    name: str,
    *,
    password: str | None = None,
    sso_identity: str | None = None,
    engine: Engine | None = None,
) -> None:
    """Add a named admin with a password, an SSO identity, or both."""
    name = _valid_name(name)
    if not password and not sso_identity:
        raise UsageProblem(f"admin '{name}' needs a password or an SSO identity")
    if password is not None:
        check_password_rules(password)
    ident = normalise_identity(sso_identity) if sso_identity else None
    pw_hash = hash_password(password) if password is not None else None
    if not _tx(engine, store.insert_admin, name, password_hash=pw_hash, sso_identity=ident):
        raise UsageProblem(f"an admin named '{name}' or with SSO identity '{ident}' exists")


def remove_admin(name: str, *, engine: Engine | None = None) -> None:
    if not _tx(engine, store.delete_admin, name):
        raise UsageProblem(f"there is no admin named '{name}'")


def set_password(name: str, password: str, *, engine: Engine | None = None) -> None:
    """Set *name*'s password; creates the admin when it does not exist yet."""
    name = _valid_name(name)
    check_password_rules(password)
    if _tx(engine, store.get_admin, name) is None:
        add_admin(name, password=password, engine=engine)
    else:
        _tx(engine, store.update_admin_password, name, hash_password(password))


def list_admins(*, engine: Engine | None = None) -> list[dict]:
    """Admins with how they sign in (never a hash)."""
    rows = [
        {
            "name": a.name,
            "password": a.password_hash is not None,
            "sso_identity": a.sso_identity or "",
            "created_at": a.created_at,
        }
        for a in _tx(engine, store.list_admins)
    ]
    if os.environ.get("MEDSIM_ADMIN_PASSWORD") and not any(r["name"] == ENV_ADMIN for r in rows):
        rows.insert(
            0, {"name": ENV_ADMIN, "password": True, "sso_identity": "", "created_at": None}
        )
    return rows


def admin_password_configured(*, engine: Engine | None = None) -> bool:
    """Whether any admin can sign in with a password."""
    if os.environ.get("MEDSIM_ADMIN_PASSWORD") and env_password_problem() is None:
        return True
    return _tx(engine, store.count_admins_with_password) > 0


def check_admin_password(name: str, password: str, *, engine: Engine | None = None) -> bool:
    """Whether *password* is admin *name*'s (no throttling: see :func:`sign_in_admin`)."""
    name = (name or "").strip() or ENV_ADMIN
    if not password:
        return False
    env = os.environ.get("MEDSIM_ADMIN_PASSWORD")
    if env and name == ENV_ADMIN:
        if env_password_problem():
            return False
        return hmac.compare_digest(env.encode("utf-8"), password.encode("utf-8"))
    row = _tx(engine, store.get_admin, name)
    if row is None or not row.active or row.password_hash is None:
        verify_password(password, _DUMMY)  # same time as a wrong password: names not probed
        return False
    if not verify_password(password, row.password_hash):
        return False
    if needs_rehash(row.password_hash):
        _tx(engine, store.update_admin_password, name, hash_password(password), record=False)
    return True


# Fingerprints are keyed per process: the session keeps no value derived from a password
# alone. A session lives in one process, so the key never needs to be shared.
_FINGERPRINT_KEY = secrets.token_bytes(32)


def _fingerprint(*parts: object) -> str:
    msg = "\x1f".join("" if p is None else str(p) for p in parts).encode("utf-8")
    return hmac.new(_FINGERPRINT_KEY, msg, hashlib.sha256).hexdigest()


def _named_identity(name: str, *, engine: Engine | None = None) -> AdminIdentity | None:
    """Admin *name* as a session keeps it (id and credential fingerprint), or ``None`` when
    there is no such active admin."""
    env = os.environ.get("MEDSIM_ADMIN_PASSWORD")
    if env and name == ENV_ADMIN:
        if env_password_problem():
            return None
        return AdminIdentity(name, "named", None, _fingerprint("env", env))
    row = _tx(engine, store.get_admin, name)
    if row is None or not row.active:
        return None
    credential = _fingerprint(row.id, row.name, row.created_at, row.password_hash, row.sso_identity)
    return AdminIdentity(row.name, "named", row.id, credential)


def admin_session_valid(admin: AdminIdentity | None, *, engine: Engine | None = None) -> bool:
    """Whether a session signed in as *admin* may go on: the admin still exists (the same
    row, not a new one of the same name) with the password and SSO identity it signed in
    with. Admins of the configured ``admins`` list are checked by the SSO role mapping."""
    if admin is None:
        return False
    if admin.via != "named":
        return True
    now = _named_identity(admin.name, engine=engine)
    return (
        now is not None
        and now.admin_id == admin.admin_id
        and hmac.compare_digest(now.credential, admin.credential)
    )


def sign_in_admin(
    name: str, password: str, *, client: str, engine: Engine | None = None
) -> AdminIdentity | None:
    """ThrottledError admin sign-in from *client*: the admin, ``None`` (wrong), or raises
    :class:`~medsim_annot.services.throttle.ThrottledError` (wait first)."""
    engine = engine or get_engine()
    ADMIN_SIGNINS.check(client, engine=engine)
    name = (name or "").strip() or ENV_ADMIN
    if check_admin_password(name, password, engine=engine):
        ident = _named_identity(name, engine=engine)
        if ident is not None:  # (removed between the check and now: a failure)
            ADMIN_SIGNINS.success(client, engine=engine)
            return ident
    known = (name == ENV_ADMIN and bool(os.environ.get("MEDSIM_ADMIN_PASSWORD"))) or (
        _tx(engine, store.get_admin, name) is not None
    )
    # Only a known admin's name is logged: a password typed into the name field is not.
    ADMIN_SIGNINS.failure(
        client, detail=f"admin={name!r}" if known else "admin=<unknown>", engine=engine
    )
    return None


def sign_in_with_code(
    code: str, *, client: str, engine: Engine | None = None
) -> AnnotatorIdentity | AdjudicatorIdentity | None:
    """Throttled access-code sign-in from *client* (see :func:`sign_in_admin`): an
    annotator's code, else an adjudicator's (the caller routes by the identity's type)."""
    engine = engine or get_engine()
    CODE_SIGNINS.check(client, engine=engine)
    ident: AnnotatorIdentity | AdjudicatorIdentity | None = authenticate_annotator(
        code, engine=engine
    )
    if ident is None:
        ident = authenticate_adjudicator(code, engine=engine)
    if ident is not None:
        CODE_SIGNINS.success(client, engine=engine)
        return ident
    CODE_SIGNINS.failure(client, engine=engine)
    return None


# ---------------------------------------------------------------------- single sign-on
@dataclass(frozen=True)
class SsoOutcome:
    """Where an SSO user may go: ``admin`` (with *admin*), ``adjudicator`` (with the
    *adjudicators* it is, one per study; the first is used), ``annotator`` (with one or more
    *studies* to choose from) or ``refused``."""

    role: str
    identity: str
    admin: AdminIdentity | None = None
    annotators: tuple[AnnotatorIdentity, ...] = ()
    adjudicators: tuple[AdjudicatorIdentity, ...] = ()


def email_verified(claims: dict) -> bool:
    """Whether the provider vouches for the ``email`` claim (missing means no)."""
    flag = claims.get("email_verified")
    return flag is True or (isinstance(flag, str) and flag.strip().lower() == "true")


def sso_identities(claims: dict) -> list[str]:
    """The stored forms an ID token's *claims* may match, each in its own namespace: the
    e-mail address (lower-cased) only when verified, and the subject id as ``sub:ID`` and,
    when it has no ``@`` (which would make it read as an e-mail address), as ``ID``."""
    out = []
    email = str(claims.get("email") or "").strip()
    if email and "@" in email and not email.startswith(SUB_PREFIX) and email_verified(claims):
        out.append(email.lower())
    sub = str(claims.get("sub") or "").strip()
    if sub:
        if "@" not in sub:
            out.append(sub)
        out.append(SUB_PREFIX + sub)
    return out


def shown_identity(claims: dict) -> str:
    """How the app names an SSO user: the verified e-mail address, else the subject id."""
    email = str(claims.get("email") or "").strip()
    if email and email_verified(claims):
        return email.lower()
    return str(claims.get("sub") or "").strip()


def sso_role(
    claims: dict, *, admins: Iterable[str] = (), engine: Engine | None = None
) -> SsoOutcome:
    """Map a signed-in SSO user to a role (see the module docstring)."""
    ids = sso_identities(claims)
    shown = shown_identity(claims)
    configured = {normalise_identity(a) for a in admins if str(a).strip()}
    configured |= {
        normalise_identity(a)
        for a in os.environ.get("MEDSIM_SSO_ADMINS", "").split(",")
        if a.strip()
    }
    hit = next((i for i in ids if i in configured), None)
    if hit is not None:
        return SsoOutcome("admin", shown, admin=AdminIdentity(name=hit, via="sso"))
    row = _tx(engine, store.admin_by_sso, ids)
    if row is not None:
        named = _named_identity(row.name, engine=engine)
        if named is not None:
            return SsoOutcome("admin", shown, admin=named)
    judges = adjudicators_by_sso(ids, engine=engine)
    if judges:
        return SsoOutcome("adjudicator", shown, adjudicators=tuple(judges))
    found = _tx(engine, store.annotators_by_sso, ids)
    if found:
        return SsoOutcome(
            "annotator",
            shown,
            annotators=tuple(
                AnnotatorIdentity(
                    a.annotator_id, a.name, a.study_id, a.study_name, a.credential_version
                )
                for a in found
            ),
        )
    return SsoOutcome("refused", shown)


def link_annotator_sso(
    study: str, name: str, identity: str | None, *, engine: Engine | None = None
) -> None:
    """Link annotator *name* of *study* to an SSO identity (``None`` or "" unlinks)."""
    from medsim_annot.services.studies import get_study

    info = get_study(study, engine=engine)
    ident = normalise_identity(identity) if identity and identity.strip() else None
    if ident is not None and (len(ident) > 320 or any(ord(ch) < 32 for ch in ident)):
        raise UsageProblem("an SSO identity is an e-mail address or subject id (≤ 320 chars)")
    status = _tx(engine, store.link_annotator_sso, info.id, name, ident)
    if status == "no-annotator":
        raise UsageProblem(f"study '{study}' has no annotator named '{name}'")
    if status == "taken":
        raise UsageProblem(f"another annotator of study '{study}' is linked to '{ident}'")


def sso_links(study: str, *, engine: Engine | None = None) -> dict[str, str | None]:
    from medsim_annot.services.studies import get_study

    return _tx(engine, store.sso_links, get_study(study, engine=engine).id)


def annotator_sso_enabled(study: str, *, engine: Engine | None = None) -> bool:
    from medsim_annot.services.studies import get_study

    return _tx(engine, store.study_annotator_sso, get_study(study, engine=engine).id)


def set_annotator_sso(study: str, enabled: bool, *, engine: Engine | None = None) -> None:
    """Allow (or stop) SSO sign-in for the linked annotators of *study*."""
    from medsim_annot.services.studies import get_study

    _tx(engine, store.set_study_annotator_sso, get_study(study, engine=engine).id, enabled)


# ---------------------------------------------------------------------- event log
acting_as = events_store.acting_as
set_actor = events_store.set_actor
set_actor_provider = events_store.set_actor_provider


def cli_actor() -> str:
    """How the event log names a command-line user."""
    try:
        return f"cli:{getpass.getuser()}"
    except Exception:
        return "cli"


def record_event(
    kind: str, *, study: str | None = None, detail: dict | None = None, engine=None
) -> None:
    """Append *kind* (e.g. ``exported``) for *study* to the event log, naming the actor."""
    from medsim_annot.services.studies import get_study

    study_id = get_study(study, engine=engine).id if study else None
    _tx(engine, events_store.add_event, kind, study_id=study_id, detail=detail)


def readable_detail(detail: object) -> str:
    """An event's JSON detail as a line people read: ``key: value · key: value`` (lists
    joined with commas); text that is not a JSON object is returned as it is.

    >>> readable_detail('{"name": "bob", "annotators": ["a", "b"], "items": 4}')
    'name: bob · annotators: a, b · items: 4'
    """
    import json

    text = "" if detail is None else str(detail)
    try:
        data = json.loads(text)
    except ValueError:
        return text
    if not isinstance(data, dict):
        return text

    def show(value: object) -> str:
        if isinstance(value, list):
            return ", ".join(show(v) for v in value)
        if isinstance(value, dict):
            return ", ".join(f"{k}={show(v)}" for k, v in value.items())
        return "—" if value is None else str(value)

    return " · ".join(f"{k}: {show(v)}" for k, v in data.items())


def activity(*, study: str | None = None, actor: str | None = None, limit: int = 500, engine=None):
    """The event log, newest first, as a frame (at, actor, action, study, annotator, detail)."""
    import pandas as pd

    from medsim_annot.services.studies import get_study

    study_id = get_study(study, engine=engine).id if study else None
    rows = _tx(engine, events_store.activity, study_id=study_id, actor=actor, limit=limit)
    return pd.DataFrame(rows, columns=["at", "actor", "action", "study", "annotator", "detail"])
