"""Adjudicators: the named people who settle the pairs the raters could not; the adjudicator
role of :mod:`.members` (:data:`ADJUDICATORS`) and its entry points.

An admin makes a named person an adjudicator of a study (:func:`add_adjudicator`); they
sign in with an access code or a linked SSO identity, like annotators, but are not blind
(see :mod:`medsim_annot.services.adjudication.board`).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from medsim_annot.services.people import members
from medsim_annot.services.people.members import EventKind, NewMember, Role
from medsim_annot.services.people.names import check_annotator_name
from medsim_annot.services.study_handle import Study
from medsim_annot.storage import Engine, Transaction, session_scope, utcnow
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


#: Adjudicators: stored in their own table, their events name them in the detail, and an SSO
#: identity may be linked to more than one adjudicator of a study (the first by study name
#: signs in).
ADJUDICATORS: Role[AdjudicatorIdentity] = Role(
    noun="adjudicator",
    identity=AdjudicatorIdentity,
    find=store.adjudicator_id,
    insert=store.insert_adjudicator,
    set_code=store.set_code,
    set_sso=store.set_sso,
    sso_taken=None,
    by_code_hash=store.by_code_hash,
    by_sso=store.by_sso,
    credential=store.credential_version,
    keyed=False,
    added=EventKind("adjudicator_added", ("name", "sso")),
    code_issued=EventKind("adjudicator_code_issued", ("name",)),
    revoked=EventKind("adjudicator_revoked", ("name",)),
    sso_linked=EventKind("adjudicator_sso_linked", ("name", "linked")),
    sso_unlinked=EventKind("adjudicator_sso_linked", ("name", "linked")),
)


def adjudicators(study: Study) -> pd.DataFrame:
    """The adjudicators of *study*: name, active, has_code, sso_identity."""
    with session_scope(study.engine) as s:
        rows = store.adjudicators(s, study.id)
    return pd.DataFrame(
        [(n, a, h, sso or "") for _i, n, a, h, sso in rows],
        columns=["adjudicator", "active", "has_code", "sso_identity"],
    )


def add_adjudicator(study: Study, name: str, *, sso_identity: str | None = None) -> NewMember:
    """Make *name* an adjudicator of *study*; returns ``name`` and a new ``access_code``
    (shown once, stored hashed). *sso_identity* links an SSO identity at once, checked like
    any other (:func:`.members.add`)."""
    return members.add(ADJUDICATORS, study, name, sso_identity=sso_identity)


def admin_adjudicator(study: Study, admin_name: str) -> AdjudicatorIdentity:
    """The adjudicator seat of a signed-in study admin in *study*: the admin decides pairs
    from their own session, named as themselves (*admin_name*) in every decision and its
    event, with no access code of their own.

    The seat is the study's adjudicator of that name, added without a code (so nobody can
    sign in with it) the first time the admin decides there (an ``adjudicator_added`` event
    with ``admin: true``). An adjudicator of the same name already in the study is taken
    to be the same person: names are people in this project."""
    name = check_annotator_name(admin_name)
    with session_scope(study.engine) as s:
        member = store.adjudicator_id(s, study.id, name)
        if member is None:
            member = store.insert_adjudicator(
                s, study_id=study.id, name=name, code_hash=None, created_at=utcnow()
            )
            events_store.add_event(
                s,
                ADJUDICATORS.added.kind,
                study_id=study.id,
                detail={"name": name, "sso": False, "admin": True},
            )
        held = store.credential_version(s, member)
    return AdjudicatorIdentity(member, name, study.id, study.name, held[0] if held else 1)


def adjudicator_id(s: Transaction, study_id: int, study: str, name: str) -> int:
    """The id of adjudicator *name* of *study* in session *s* (``UsageProblem`` if none)."""
    return members.member_id(ADJUDICATORS, s, study_id, study, name)


def issue_adjudicator_code(study: Study, name: str) -> str:
    """A new access code for adjudicator *name* (sessions opened with the old one end)."""
    return members.issue_code(ADJUDICATORS, study, name)


def revoke_adjudicator(study: Study, name: str) -> None:
    """Take the adjudicator role away (code and SSO sign-in); their decisions are kept."""
    members.revoke(ADJUDICATORS, study, name)


def link_adjudicator_sso(study: Study, name: str, identity: str | None) -> None:
    """Link adjudicator *name* to an SSO identity (``None`` or "" unlinks), checked like an
    annotator's (:func:`.members.link_sso`)."""
    members.link_sso(ADJUDICATORS, study, name, identity)


def authenticate_adjudicator(
    code: str, *, engine: Engine | None = None
) -> AdjudicatorIdentity | None:
    """The active adjudicator holding access code *code*, or ``None``."""
    return members.authenticate(ADJUDICATORS, code, engine=engine)


def check_session(ident: AdjudicatorIdentity, *, engine: Engine | None = None) -> None:
    """Raise :class:`~medsim_annot.errors.SessionEnded` when the adjudicator was revoked or
    got a new code since *ident* signed in."""
    members.check_session(
        ADJUDICATORS, ident.adjudicator_id, ident.credential_version, engine=engine
    )
