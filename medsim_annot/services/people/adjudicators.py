"""Adjudicators: the named people who settle the pairs the raters could not.

An admin makes a named person an adjudicator of a study (:func:`add_adjudicator`); they
sign in with an access code or a linked SSO identity, like annotators, but are not blind
(see :mod:`medsim_annot.services.adjudication.board`).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from medsim_annot.errors import SessionEnded, UsageProblem
from medsim_annot.services.people.auth import code_key, hash_code, new_access_code
from medsim_annot.services.people.names import check_annotator_name, normalise_identity
from medsim_annot.services.studies import get_study
from medsim_annot.storage import Engine, get_engine, session_scope, utcnow
from medsim_annot.storage import adjudication as store
from medsim_annot.storage import events as events_store


@dataclass(frozen=True)
class AdjudicatorIdentity:
    """A signed-in adjudicator; ``credential_version`` as at sign-in (see
    :func:`check_session`)."""

    adjudicator_id: int
    name: str
    study_id: int
    study_name: str
    credential_version: int = 1


def adjudicators(study: str, *, engine: Engine | None = None) -> pd.DataFrame:
    """The adjudicators of *study*: name, active, has_code, sso_identity."""
    engine = engine or get_engine()
    info = get_study(study, engine=engine)
    with session_scope(engine) as s:
        rows = store.adjudicators(s, info.id)
    return pd.DataFrame(
        [(n, a, h, sso or "") for _i, n, a, h, sso in rows],
        columns=["adjudicator", "active", "has_code", "sso_identity"],
    )


def add_adjudicator(
    study: str, name: str, *, sso_identity: str | None = None, engine: Engine | None = None
) -> dict:
    """Make *name* an adjudicator of *study*; returns ``name`` and a new ``access_code``
    (shown once, stored hashed). *sso_identity* links an SSO identity at once."""
    engine = engine or get_engine()
    info = get_study(study, engine=engine)
    name = check_annotator_name(name)
    code = new_access_code()
    with session_scope(engine) as s:
        if store.adjudicator_id(s, info.id, name) is not None:
            raise UsageProblem(f"study '{study}' already has an adjudicator named '{name}'")
        adj_id = store.insert_adjudicator(
            s, study_id=info.id, name=name, code_hash=hash_code(code), created_at=utcnow()
        )
        if sso_identity and sso_identity.strip():
            store.set_sso(s, adj_id, normalise_identity(sso_identity))
        events_store.add_event(
            s,
            "adjudicator_added",
            study_id=info.id,
            detail={"name": name, "sso": bool(sso_identity)},
        )
    return {"name": name, "access_code": code}


def adjudicator_id(s, study_id: int, study: str, name: str) -> int:
    """The id of adjudicator *name* of *study* in session *s* (``UsageProblem`` if none)."""
    adj_id = store.adjudicator_id(s, study_id, name)
    if adj_id is None:
        raise UsageProblem(f"study '{study}' has no adjudicator named '{name}'")
    return adj_id


def issue_adjudicator_code(study: str, name: str, *, engine: Engine | None = None) -> str:
    """A new access code for adjudicator *name* (sessions opened with the old one end)."""
    engine = engine or get_engine()
    info = get_study(study, engine=engine)
    code = new_access_code()
    with session_scope(engine) as s:
        adj_id = adjudicator_id(s, info.id, study, name)
        store.set_code(s, adj_id, hash_code(code), active=True)
        events_store.add_event(
            s, "adjudicator_code_issued", study_id=info.id, detail={"name": name}
        )
    return code


def revoke_adjudicator(study: str, name: str, *, engine: Engine | None = None) -> None:
    """Take the adjudicator role away (code and SSO sign-in); their decisions are kept."""
    engine = engine or get_engine()
    info = get_study(study, engine=engine)
    with session_scope(engine) as s:
        adj_id = adjudicator_id(s, info.id, study, name)
        store.set_code(s, adj_id, None, active=False)
        events_store.add_event(s, "adjudicator_revoked", study_id=info.id, detail={"name": name})


def link_adjudicator_sso(
    study: str, name: str, identity: str | None, *, engine: Engine | None = None
) -> None:
    """Link adjudicator *name* to an SSO identity (``None`` or "" unlinks)."""
    engine = engine or get_engine()
    info = get_study(study, engine=engine)
    ident = normalise_identity(identity) if identity and identity.strip() else None
    with session_scope(engine) as s:
        adj_id = adjudicator_id(s, info.id, study, name)
        store.set_sso(s, adj_id, ident)
        events_store.add_event(
            s,
            "adjudicator_sso_linked",
            study_id=info.id,
            detail={"name": name, "linked": bool(ident)},
        )


def authenticate_adjudicator(
    code: str, *, engine: Engine | None = None
) -> AdjudicatorIdentity | None:
    """The active adjudicator holding access code *code*, or ``None``."""
    key = code_key(code)
    if key is None:
        return None
    with session_scope(engine or get_engine()) as s:
        row = store.by_code_hash(s, key)
    return AdjudicatorIdentity(*row.__dict__.values()) if row else None


def adjudicators_by_sso(
    identities: list[str], *, engine: Engine | None = None
) -> list[AdjudicatorIdentity]:
    """The active adjudicators linked to one of *identities* (one per study)."""
    with session_scope(engine or get_engine()) as s:
        rows = store.by_sso(s, identities)
    return [AdjudicatorIdentity(*r.__dict__.values()) for r in rows]


def check_session(ident: AdjudicatorIdentity, *, engine: Engine | None = None) -> None:
    """Raise :class:`SessionEnded` when the adjudicator was revoked or got a new code since
    *ident* signed in."""
    with session_scope(engine or get_engine()) as s:
        now = store.credential_version(s, ident.adjudicator_id)
    if now is None or not now[1] or now[0] != ident.credential_version:
        raise SessionEnded("your adjudicator access was changed; sign in again")
