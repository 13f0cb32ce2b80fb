"""Queries for named admins, SSO identities, the per-study SSO switch and the event log.

Services call these typed functions; no other module builds these queries. The *actor* of
an event (who did it) comes from :func:`acting_as`, set once per request by the app (the
signed-in admin) or the CLI (the operating-system user), so every service that records an
event names its actor without passing it through every signature.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from sqlalchemy import event as sa_event
from sqlalchemy import func, or_, select, update
from sqlalchemy.engine import Engine

from .db import get_engine, session_scope
from .models import Admin, Annotator, Event, Study, utcnow

_ACTOR: contextvars.ContextVar[str | None] = contextvars.ContextVar("medsim_actor", default=None)


@contextlib.contextmanager
def acting_as(actor: str | None) -> Iterator[None]:
    """Events recorded inside this block name *actor* (e.g. ``admin:alice``)."""
    token = _ACTOR.set(actor)
    try:
        yield
    finally:
        _ACTOR.reset(token)


def set_actor(actor: str | None) -> None:
    """Set the actor for the rest of this thread's context (one Streamlit script run)."""
    _ACTOR.set(actor)


_PROVIDER: list[Callable[[], str | None]] = []


def set_actor_provider(provider: Callable[[], str | None] | None) -> None:
    """Ask *provider* for the actor when :func:`acting_as` set none: the app registers one
    that reads the signed-in admin of the current Streamlit session (widget callbacks run
    before the page script, so a per-run setting would miss them)."""
    _PROVIDER[:] = [provider] if provider is not None else []


def current_actor() -> str | None:
    actor = _ACTOR.get()
    if actor is None and _PROVIDER:
        actor = _PROVIDER[0]()
    return actor


@sa_event.listens_for(Event, "before_insert")
def _fill_actor(_mapper, _connection, target: Event) -> None:
    if target.actor is None:
        target.actor = current_actor()


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


def list_admins(*, engine: Engine | None = None) -> list[AdminRow]:
    with session_scope(engine or get_engine()) as s:
        return [_row(a) for a in s.scalars(select(Admin).order_by(Admin.name))]


def get_admin(name: str, *, engine: Engine | None = None) -> AdminRow | None:
    with session_scope(engine or get_engine()) as s:
        a = s.scalar(select(Admin).where(Admin.name == name))
        return _row(a) if a is not None else None


def admin_by_sso(identities: list[str], *, engine: Engine | None = None) -> AdminRow | None:
    """The active admin whose SSO identity is one of *identities* (normalised)."""
    if not identities:
        return None
    with session_scope(engine or get_engine()) as s:
        a = s.scalar(
            select(Admin)
            .where(Admin.sso_identity.in_(identities), Admin.active.is_(True))
            .order_by(Admin.id)
        )
        return _row(a) if a is not None else None


def count_admins_with_password(*, engine: Engine | None = None) -> int:
    with session_scope(engine or get_engine()) as s:
        return int(
            s.scalar(
                select(func.count(Admin.id)).where(
                    Admin.password_hash.is_not(None), Admin.active.is_(True)
                )
            )
            or 0
        )


def insert_admin(
    name: str,
    *,
    password_hash: str | None,
    sso_identity: str | None,
    engine: Engine | None = None,
) -> bool:
    """Add an admin; ``False`` when the name or SSO identity is taken (nothing written)."""
    with session_scope(engine or get_engine()) as s:
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
        s.add(
            Event(
                kind="admin_added",
                at=utcnow(),
                detail_json=json.dumps(
                    {"name": name, "password": password_hash is not None, "sso": sso_identity}
                ),
            )
        )
    return True


def delete_admin(name: str, *, engine: Engine | None = None) -> bool:
    """Remove admin *name* (their past events keep naming them); ``False`` if unknown."""
    with session_scope(engine or get_engine()) as s:
        a = s.scalar(select(Admin).where(Admin.name == name))
        if a is None:
            return False
        s.delete(a)
        s.add(Event(kind="admin_removed", at=utcnow(), detail_json=json.dumps({"name": name})))
    return True


def update_admin_password(
    name: str, password_hash: str, *, record: bool = True, engine: Engine | None = None
) -> bool:
    """Store a new hash for *name*; ``record=False`` for a silent re-hash at sign-in."""
    with session_scope(engine or get_engine()) as s:
        admin = s.scalar(select(Admin).where(Admin.name == name))
        done = admin is not None
        if admin is not None:
            admin.password_hash = password_hash
        if done and record:
            s.add(
                Event(
                    kind="admin_password_set",
                    at=utcnow(),
                    detail_json=json.dumps({"name": name}),
                )
            )
    return bool(done)


# ------------------------------------------------------------------ annotator SSO links
@dataclass(frozen=True)
class SsoAnnotator:
    annotator_id: int
    name: str
    study_id: int
    study_name: str
    credential_version: int = 1


def annotators_by_sso(identities: list[str], *, engine: Engine | None = None) -> list[SsoAnnotator]:
    """Active annotators linked to one of *identities* in studies that allow SSO sign-in."""
    if not identities:
        return []
    with session_scope(engine or get_engine()) as s:
        rows = s.execute(
            select(
                Annotator.id,
                Annotator.name,
                Study.id,
                Study.name,
                Annotator.credential_version,
            )
            .join(Study, Study.id == Annotator.study_id)
            .where(
                Annotator.sso_identity.in_(identities),
                Annotator.active.is_(True),
                Study.annotator_sso.is_(True),
            )
            .order_by(Study.name)
        ).all()
    return [SsoAnnotator(*r) for r in rows]


def link_annotator_sso(
    study_id: int, name: str, identity: str | None, *, engine: Engine | None = None
) -> str:
    """Set (or clear, with ``None``) the SSO identity of annotator *name* of *study_id*.

    Returns ``"ok"``, ``"no-annotator"`` or ``"taken"`` (another annotator of the study has
    it); nothing is written unless ``"ok"``.
    """
    with session_scope(engine or get_engine()) as s:
        ann = s.scalar(
            select(Annotator).where(Annotator.study_id == study_id, Annotator.name == name)
        )
        if ann is None:
            return "no-annotator"
        if identity is not None:
            other = s.scalar(
                select(Annotator.id).where(
                    Annotator.study_id == study_id,
                    Annotator.sso_identity == identity,
                    Annotator.id != ann.id,
                )
            )
            if other is not None:
                return "taken"
        ann.sso_identity = identity
        s.add(
            Event(
                study_id=study_id,
                annotator_id=ann.id,
                kind="sso_linked" if identity else "sso_unlinked",
                at=utcnow(),
                detail_json=json.dumps({"identity": identity} if identity else {}),
            )
        )
    return "ok"


def sso_links(study_id: int, *, engine: Engine | None = None) -> dict[str, str | None]:
    """Annotator name -> linked SSO identity (or ``None``) for one study."""
    with session_scope(engine or get_engine()) as s:
        rows = s.execute(
            select(Annotator.name, Annotator.sso_identity)
            .where(Annotator.study_id == study_id)
            .order_by(Annotator.id)
        ).all()
    return {n: i for n, i in rows}


def study_annotator_sso(study_id: int, *, engine: Engine | None = None) -> bool:
    with session_scope(engine or get_engine()) as s:
        return bool(s.scalar(select(Study.annotator_sso).where(Study.id == study_id)))


def set_study_annotator_sso(study_id: int, enabled: bool, *, engine: Engine | None = None) -> None:
    with session_scope(engine or get_engine()) as s:
        s.execute(update(Study).where(Study.id == study_id).values(annotator_sso=enabled))
        s.add(
            Event(
                study_id=study_id,
                kind="annotator_sso_enabled" if enabled else "annotator_sso_disabled",
                at=utcnow(),
            )
        )


# ----------------------------------------------------------------------------- events
def record_event(
    kind: str,
    *,
    study_id: int | None = None,
    annotator_id: int | None = None,
    detail: dict | None = None,
    engine: Engine | None = None,
) -> None:
    """Append one event (e.g. an export) to the log."""
    with session_scope(engine or get_engine()) as s:
        s.add(
            Event(
                study_id=study_id,
                annotator_id=annotator_id,
                kind=kind,
                at=utcnow(),
                detail_json=json.dumps(detail or {}, sort_keys=True, default=str),
            )
        )


def activity(
    *,
    study_id: int | None = None,
    actor: str | None = None,
    limit: int = 500,
    engine: Engine | None = None,
) -> list[dict]:
    """The newest *limit* events (optionally of one study or one actor), newest first."""
    q = (
        select(
            Event.at,
            Event.actor,
            Event.kind,
            Study.name,
            Annotator.name,
            Event.detail_json,
        )
        .outerjoin(Study, Study.id == Event.study_id)
        .outerjoin(Annotator, Annotator.id == Event.annotator_id)
        .order_by(Event.id.desc())
        .limit(limit)
    )
    if study_id is not None:
        q = q.where(Event.study_id == study_id)
    if actor is not None:
        q = q.where(Event.actor == actor)
    with session_scope(engine or get_engine()) as s:
        rows = s.execute(q).all()
    return [
        {
            "at": at,
            "actor": who or "",
            "action": kind,
            "study": study or "",
            "annotator": ann or "",
            "detail": detail or "{}",
        }
        for at, who, kind, study, ann, detail in rows
    ]
