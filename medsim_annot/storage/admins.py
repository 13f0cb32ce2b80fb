"""Queries for named admins, SSO identities and the per-study SSO switch.

Services call these typed functions; no other module builds these queries. Each change is
logged through :mod:`.events` in the same transaction.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import func, or_, select, update
from sqlalchemy.orm import Session

from .credentials import bump_identity
from .events import add_event
from .models import Admin, Annotator, Study, utcnow


# ------------------------------------------------------------------------------- admins
@dataclass(frozen=True)
class AdminRow:
    id: int
    name: str
    password_hash: str | None
    sso_identity: str | None
    active: bool
    created_at: dt.datetime


def _row(a: Admin) -> AdminRow:
    return AdminRow(a.id, a.name, a.password_hash, a.sso_identity, a.active, a.created_at)


def list_admins(s: Session) -> list[AdminRow]:
    return [_row(a) for a in s.scalars(select(Admin).order_by(Admin.name))]


def get_admin(s: Session, name: str) -> AdminRow | None:
    a = s.scalar(select(Admin).where(Admin.name == name))
    return _row(a) if a is not None else None


def admin_by_sso(s: Session, identities: list[str]) -> AdminRow | None:
    """The active admin whose SSO identity is one of *identities* (normalised)."""
    if not identities:
        return None
    a = s.scalar(
        select(Admin)
        .where(Admin.sso_identity.in_(identities), Admin.active.is_(True))
        .order_by(Admin.id)
    )
    return _row(a) if a is not None else None


def count_admins_with_password(s: Session) -> int:
    return int(
        s.scalar(
            select(func.count(Admin.id)).where(
                Admin.password_hash.is_not(None), Admin.active.is_(True)
            )
        )
        or 0
    )


def insert_admin(
    s: Session,
    name: str,
    *,
    password_hash: str | None,
    sso_identity: str | None,
) -> bool:
    """Add an admin; ``False`` when the name or SSO identity is taken (nothing written)."""
    clash = [Admin.name == name]
    if sso_identity:
        clash.append(Admin.sso_identity == sso_identity)
    taken = s.scalar(select(func.count(Admin.id)).where(or_(*clash)))
    if taken:
        return False
    s.add(
        Admin(
            name=name,
            password_hash=password_hash,
            sso_identity=sso_identity,
            active=True,
            created_at=utcnow(),
        )
    )
    bump_identity(s, sso_identity)
    add_event(
        s,
        "admin_added",
        detail={"name": name, "password": password_hash is not None, "sso": sso_identity},
    )
    return True


def delete_admin(s: Session, name: str) -> bool:
    """Remove admin *name* (their past events keep naming them); ``False`` if unknown."""
    a = s.scalar(select(Admin).where(Admin.name == name))
    if a is None:
        return False
    bump_identity(s, a.sso_identity)
    s.delete(a)
    add_event(s, "admin_removed", detail={"name": name})
    return True


def update_admin_password(
    s: Session, name: str, password_hash: str, *, record: bool = True
) -> bool:
    """Store a new hash for *name*; ``record=False`` for a silent re-hash at sign-in."""
    admin = s.scalar(select(Admin).where(Admin.name == name))
    done = admin is not None
    if admin is not None:
        admin.password_hash = password_hash
    if done and record:
        add_event(s, "admin_password_set", detail={"name": name})
    return bool(done)


# ------------------------------------------------------------------ annotator SSO links
def sso_taken(s: Session, study_id: int, identity: str, annotator_id: int) -> bool:
    """Whether another annotator of *study_id* than *annotator_id* is linked to *identity*."""
    return (
        s.scalar(
            select(Annotator.id).where(
                Annotator.study_id == study_id,
                Annotator.sso_identity == identity,
                Annotator.id != annotator_id,
            )
        )
        is not None
    )


def set_sso(s: Session, annotator_id: int, identity: str | None) -> None:
    """Set (or clear, with ``None``) the SSO identity of an annotator and move their
    credential version on, so every session and ratings token opened before ends (the
    caller logs it: :mod:`medsim_annot.services.people.members`)."""
    s.execute(
        update(Annotator)
        .where(Annotator.id == annotator_id)
        .values(sso_identity=identity, credential_version=Annotator.credential_version + 1)
    )


def sso_links(s: Session, study_id: int) -> dict[str, str | None]:
    """Annotator name -> linked SSO identity (or ``None``) for one study."""
    rows = s.execute(
        select(Annotator.name, Annotator.sso_identity)
        .where(Annotator.study_id == study_id)
        .order_by(Annotator.id)
    ).all()
    return {n: i for n, i in rows}


def study_annotator_sso(s: Session, study_id: int) -> bool:
    return bool(s.scalar(select(Study.annotator_sso).where(Study.id == study_id)))


def set_study_annotator_sso(s: Session, study_id: int, enabled: bool) -> None:
    """Allow or stop SSO sign-in for the study's linked annotators; every annotator of the
    study gets a new credential version (their open sessions and ratings tokens end)."""
    s.execute(update(Study).where(Study.id == study_id).values(annotator_sso=enabled))
    s.execute(
        update(Annotator)
        .where(Annotator.study_id == study_id)
        .values(credential_version=Annotator.credential_version + 1)
    )
    add_event(
        s,
        "annotator_sso_enabled" if enabled else "annotator_sso_disabled",
        study_id=study_id,
    )
