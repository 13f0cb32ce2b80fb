"""Members of a study: the people who sign in with an access code or a linked SSO identity
(annotators and adjudicators), as one model.

Both roles do the same things: a member is added with a new access code, gets a new code, is
revoked, is linked to an SSO identity, signs in by code or by SSO, and has their session
checked. The roles differ only in where their rows are stored and which events they write.
Each role declares that once, in a :class:`Role` record
(:data:`~medsim_annot.services.people.annotators.ANNOTATORS`,
:data:`~medsim_annot.services.people.adjudicators.ADJUDICATORS`). The functions here do the
work for both; :mod:`.annotators` and :mod:`.adjudicators` keep their public names as thin
entry points.

The rules, the same for both roles:

* a member's name is checked like an annotator's (:func:`~.names.check_annotator_name`) and is
  unique among the role's members of the study;
* an access code is returned once and stored hashed (:mod:`.auth`); issuing a new code or
  revoking moves the member's credential version on, which ends the sessions opened before
  (:func:`check_session`);
* an SSO identity is normalised and checked the same way (:func:`~.names.check_identity`); a
  role with ``sso_taken`` also refuses an identity that another member of the study holds;
* every change is one transaction and leaves the role's event in the study's log.

Functions that work on a study take the :class:`~medsim_annot.services.study_handle.Study`
handle. A sign-in (by code or SSO) and a session check come before any study is known, so they
take an engine (the configured database when not given).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import asdict, astuple, dataclass
from typing import Any, Generic, Protocol, TypeVar

from medsim_annot.errors import SessionEnded, UsageProblem
from medsim_annot.i18n import t
from medsim_annot.services.people.auth import code_key, hash_code, new_access_code
from medsim_annot.services.people.names import check_annotator_name, check_identity
from medsim_annot.services.study_handle import Study
from medsim_annot.storage import Engine, Transaction, get_engine, session_scope, utcnow
from medsim_annot.storage import credentials as credentials_store
from medsim_annot.storage import events as events_store

IdentityT = TypeVar("IdentityT")


class InsertMember(Protocol):
    """Storage call: add a member row (active, credential version 1); its id."""

    def __call__(
        self,
        s: Transaction,
        /,
        *,
        study_id: int,
        name: str,
        code_hash: str,
        created_at: dt.datetime,
    ) -> int: ...


class SetCode(Protocol):
    """Storage call: store a code hash (``None``: none) and the active flag, and move the
    credential version on."""

    def __call__(
        self, s: Transaction, member_id: int, code_hash: str | None, /, *, active: bool
    ) -> object: ...


@dataclass(frozen=True)
class EventKind:
    """An event a role writes: its ``kind`` and which facts its detail holds, among ``name``
    (the member's name), ``sso`` (whether an SSO identity was given when adding), ``identity``
    (the identity linked) and ``linked`` (whether one is linked now)."""

    kind: str
    detail: tuple[str, ...] = ()


@dataclass(frozen=True)
class Role(Generic[IdentityT]):
    """What one kind of member is: its ``noun`` (in messages), the ``identity`` class built
    from a sign-in row (the five fields of the storage row, in order), the storage calls (each
    inside the caller's transaction) and the events it writes. ``keyed``: the events name the
    member in the event's annotator column (annotators only)."""

    noun: str
    identity: Callable[..., IdentityT]
    find: Callable[[Transaction, int, str], int | None]
    insert: InsertMember
    set_code: SetCode
    set_sso: Callable[[Transaction, int, str | None], None]
    #: Whether another member of the study holds an identity (``None``: not checked).
    sso_taken: Callable[[Transaction, int, str, int], bool] | None
    by_code_hash: Callable[[Transaction, str], Any]
    by_sso: Callable[[Transaction, list[str]], Sequence[Any]]
    credential: Callable[[Transaction, int], tuple[int, bool] | None]
    keyed: bool
    added: EventKind
    code_issued: EventKind
    revoked: EventKind
    sso_linked: EventKind
    sso_unlinked: EventKind


def _log(
    role: Role, s: Transaction, event: EventKind, study: Study, member: int, **facts: object
) -> None:
    events_store.add_event(
        s,
        event.kind,
        study_id=study.id,
        annotator_id=member if role.keyed else None,
        detail={k: facts[k] for k in event.detail},
    )


def member_id(role: Role, s: Transaction, study_id: int, study_name: str, name: str) -> int:
    """The id of the *role* member *name* of the study in transaction *s*
    (:class:`UsageProblem` when there is none)."""
    found = role.find(s, study_id, name)
    if found is None:
        raise UsageProblem(
            t("study '{study}' has no adjudicator named '{name}'", study=study_name, name=name)
            if role.noun == "adjudicator"
            else t("study '{study}' has no annotator named '{name}'", study=study_name, name=name)
        )
    return found


def _set_sso(role: Role, s: Transaction, study: Study, member: int, ident: str | None) -> None:
    if (
        ident is not None
        and role.sso_taken is not None
        and role.sso_taken(s, study.id, ident, member)
    ):
        raise UsageProblem(
            t(
                "another adjudicator of study '{study}' is linked to '{identity}'",
                study=study.name,
                identity=ident,
            )
            if role.noun == "adjudicator"
            else t(
                "another annotator of study '{study}' is linked to '{identity}'",
                study=study.name,
                identity=ident,
            )
        )
    role.set_sso(s, member, ident)


@dataclass(frozen=True)
class NewMember:
    """A member just added: their ``name`` and ``access_code`` (shown once).
    :meth:`to_dict` is ``{"name", "access_code"}``."""

    name: str
    access_code: str

    def to_dict(self) -> dict:
        return asdict(self)


def add(role: Role, study: Study, name: str, *, sso_identity: str | None = None) -> NewMember:
    """Add *name* to *study* as a *role* member with a new access code, linked to
    *sso_identity* when one is given. Returns the name and the access code (shown once)."""
    name = check_annotator_name(name)
    ident = check_identity(sso_identity)
    code = new_access_code()
    with session_scope(study.engine) as s:
        if role.find(s, study.id, name) is not None:
            raise UsageProblem(
                t(
                    "study '{study}' already has an adjudicator named '{name}'",
                    study=study.name,
                    name=name,
                )
                if role.noun == "adjudicator"
                else t(
                    "study '{study}' already has an annotator named '{name}'",
                    study=study.name,
                    name=name,
                )
            )
        member = role.insert(
            s, study_id=study.id, name=name, code_hash=hash_code(code), created_at=utcnow()
        )
        if ident is not None:
            # The person behind the identity may hold another role: it changes now.
            credentials_store.bump_identity(s, ident)
            _set_sso(role, s, study, member, ident)
        _log(role, s, role.added, study, member, name=name, sso=bool(sso_identity))
    return NewMember(name=name, access_code=code)


def issue_code(role: Role, study: Study, name: str) -> str:
    """A new access code for member *name* (the old one stops working, sessions opened with
    it end); re-activates a revoked member."""
    code = new_access_code()
    with session_scope(study.engine) as s:
        member = member_id(role, s, study.id, study.name, name)
        role.set_code(s, member, hash_code(code), active=True)
        _log(role, s, role.code_issued, study, member, name=name)
    return code


def revoke(role: Role, study: Study, name: str) -> None:
    """Revoke member *name*: no sign-in by code or SSO, sessions end; their work is kept."""
    with session_scope(study.engine) as s:
        member = member_id(role, s, study.id, study.name, name)
        role.set_code(s, member, None, active=False)
        _log(role, s, role.revoked, study, member, name=name)


def link_sso(role: Role, study: Study, name: str, identity: str | None) -> None:
    """Link member *name* to an SSO identity (``None`` or "" unlinks)."""
    ident = check_identity(identity)
    with session_scope(study.engine) as s:
        member = member_id(role, s, study.id, study.name, name)
        _set_sso(role, s, study, member, ident)
        event = role.sso_linked if ident else role.sso_unlinked
        _log(role, s, event, study, member, name=name, identity=ident, linked=bool(ident))


def authenticate(
    role: Role[IdentityT], code: str, *, engine: Engine | None = None
) -> IdentityT | None:
    """The active *role* member holding access code *code*, or ``None``."""
    key = code_key(code)
    if key is None:
        return None
    with session_scope(engine or get_engine()) as s:
        row = role.by_code_hash(s, key)
    return role.identity(*astuple(row)) if row is not None else None


def by_sso(
    role: Role[IdentityT], identities: list[str], *, engine: Engine | None = None
) -> list[IdentityT]:
    """The active *role* members linked to one of *identities* (one per study, by study
    name)."""
    with session_scope(engine or get_engine()) as s:
        rows = role.by_sso(s, identities)
    return [role.identity(*astuple(r)) for r in rows]


def check_session(
    role: Role, member: int, credential_version: int, *, engine: Engine | None = None
) -> None:
    """Raise :class:`SessionEnded` when *member* was revoked or got a new code since a sign-in
    at *credential_version*."""
    with session_scope(engine or get_engine()) as s:
        now = role.credential(s, member)
    if now is None or not now[1] or now[0] != credential_version:
        raise SessionEnded(
            t("your adjudicator access was changed; sign in again")
            if role.noun == "adjudicator"
            else t("your annotator access was changed; sign in again")
        )
