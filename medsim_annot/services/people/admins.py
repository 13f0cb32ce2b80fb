"""Named study admins: add, remove, list, their passwords and the session check.

An admin signs in with a password (:mod:`.passwords`, :mod:`.signin`) or an SSO identity
(:mod:`.sso`); a session keeps an :class:`AdminIdentity` that :func:`admin_session_valid`
checks on every page, so a removed admin or one given a new password is signed out.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import t
from medsim_annot.services.people.names import normalise_identity
from medsim_annot.services.people.passwords import (
    DUMMY_HASH,
    check_password_rules,
    env_password_problem,
    hash_password,
    needs_rehash,
    verify_password,
)
from medsim_annot.storage import Engine, get_engine, session_scope
from medsim_annot.storage import admins as store

_T = TypeVar("_T")

ENV_ADMIN = "admin"  # the admin whose password MEDSIM_ADMIN_PASSWORD gives


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


def _valid_name(name: str) -> str:
    name = (name or "").strip()
    if not name or len(name) > 200 or any(ord(ch) < 32 for ch in name):
        raise UsageProblem(t("an admin needs a name of 1 to 200 printable characters"))
    return name


def in_transaction(engine: Engine | None, query: Callable[..., _T], *args, **kwargs) -> _T:
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
        raise UsageProblem(t("admin '{name}' needs a password or an SSO identity", name=name))
    if password is not None:
        check_password_rules(password)
    ident = normalise_identity(sso_identity) if sso_identity else None
    pw_hash = hash_password(password) if password is not None else None
    if not in_transaction(
        engine, store.insert_admin, name, password_hash=pw_hash, sso_identity=ident
    ):
        raise UsageProblem(
            t(
                "an admin named '{name}' or with SSO identity '{identity}' exists",
                name=name,
                identity=ident,
            )
        )


def remove_admin(name: str, *, engine: Engine | None = None) -> None:
    if not in_transaction(engine, store.delete_admin, name):
        raise UsageProblem(t("there is no admin named '{name}'", name=name))


def set_password(name: str, password: str, *, engine: Engine | None = None) -> None:
    """Set *name*'s password; creates the admin when it does not exist yet."""
    name = _valid_name(name)
    check_password_rules(password)
    if in_transaction(engine, store.get_admin, name) is None:
        add_admin(name, password=password, engine=engine)
    else:
        in_transaction(engine, store.update_admin_password, name, hash_password(password))


def list_admins(*, engine: Engine | None = None) -> list[dict]:
    """Admins with how they sign in (never a hash)."""
    rows = [
        {
            "name": a.name,
            "password": a.password_hash is not None,
            "sso_identity": a.sso_identity or "",
            "created_at": a.created_at,
        }
        for a in in_transaction(engine, store.list_admins)
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
    return in_transaction(engine, store.count_admins_with_password) > 0


def check_admin_password(name: str, password: str, *, engine: Engine | None = None) -> bool:
    """Whether *password* is admin *name*'s (no throttling: see :func:`.signin.sign_in_admin`)."""
    name = (name or "").strip() or ENV_ADMIN
    if not password:
        return False
    env = os.environ.get("MEDSIM_ADMIN_PASSWORD")
    if env and name == ENV_ADMIN:
        if env_password_problem():
            return False
        return hmac.compare_digest(env.encode("utf-8"), password.encode("utf-8"))
    row = in_transaction(engine, store.get_admin, name)
    if row is None or not row.active or row.password_hash is None:
        verify_password(password, DUMMY_HASH)  # same time as a wrong password: names not probed
        return False
    if not verify_password(password, row.password_hash):
        return False
    if needs_rehash(row.password_hash):
        in_transaction(
            engine, store.update_admin_password, name, hash_password(password), record=False
        )
    return True


# Fingerprints are keyed per process: the session keeps no value derived from a password
# alone. A session lives in one process, so the key never needs to be shared.
_FINGERPRINT_KEY = secrets.token_bytes(32)


def _fingerprint(*parts: object) -> str:
    msg = "\x1f".join("" if p is None else str(p) for p in parts).encode("utf-8")
    return hmac.new(_FINGERPRINT_KEY, msg, hashlib.sha256).hexdigest()


def named_identity(name: str, *, engine: Engine | None = None) -> AdminIdentity | None:
    """Admin *name* as a session keeps it (id and credential fingerprint), or ``None`` when
    there is no such active admin."""
    env = os.environ.get("MEDSIM_ADMIN_PASSWORD")
    if env and name == ENV_ADMIN:
        if env_password_problem():
            return None
        return AdminIdentity(name, "named", None, _fingerprint("env", env))
    row = in_transaction(engine, store.get_admin, name)
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
    now = named_identity(admin.name, engine=engine)
    return (
        now is not None
        and now.admin_id == admin.admin_id
        and hmac.compare_digest(now.credential, admin.credential)
    )
