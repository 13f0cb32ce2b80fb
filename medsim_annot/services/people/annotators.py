"""Annotators: the annotator role of :mod:`.members` (:data:`ANNOTATORS`) and its entry
points: list with progress, add, rename, issue and revoke access codes, link SSO, sign in.

Every change is one transaction and leaves an event in the study's log. Access codes are
returned once and stored only hashed; revoking keeps the annotator's ratings. An annotator
added later gets a queue of every pair of the study in file order.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pandas as pd

from medsim_annot.design.assignment import Slot
from medsim_annot.errors import UsageProblem
from medsim_annot.services.people import members
from medsim_annot.services.people.members import EventKind, NewMember, Role
from medsim_annot.services.people.names import check_annotator_name
from medsim_annot.services.study_handle import Study
from medsim_annot.storage import Engine, Transaction, session_scope
from medsim_annot.storage import admins as sso_store
from medsim_annot.storage import credentials as credentials_store
from medsim_annot.storage import events as events_store
from medsim_annot.storage import studies as store


@dataclass(frozen=True)
class AnnotatorIdentity:
    """A signed-in annotator. ``credential_version`` is the annotator's credential version
    at sign-in: the pages keep it in the session and pass it as ``credential=`` to every
    annotation read and save, which end the session (:class:`~medsim_annot.errors.SessionEnded`)
    once a new code was issued or the code revoked, so a leaked or replaced code stops
    working in sessions already open."""

    annotator_id: int
    name: str
    study_id: int
    study_name: str
    credential_version: int = 1


def _insert_with_queue(
    s: Transaction, *, study_id: int, name: str, code_hash: str, created_at: dt.datetime
) -> int:
    """An active annotator with a queue of every pair of the study, in file order."""
    ann_id = store.insert_annotator(
        s, study_id=study_id, name=name, code_hash=code_hash, active=True, created_at=created_at
    )
    item_ids = store.item_ids(s, study_id)
    store.insert_queue(s, study_id, ann_id, item_ids, [Slot(i) for i in range(len(item_ids))])
    return ann_id


#: Annotators: stored in the study tables, their events name the annotator, an SSO identity
#: belongs to at most one annotator of a study, and SSO sign-in needs the study to allow it
#: (:func:`~medsim_annot.storage.credentials.annotators_by_sso`).
ANNOTATORS: Role[AnnotatorIdentity] = Role(
    noun="annotator",
    identity=AnnotatorIdentity,
    find=store.annotator_id,
    insert=_insert_with_queue,
    set_code=credentials_store.set_code,
    set_sso=sso_store.set_sso,
    sso_taken=sso_store.sso_taken,
    by_code_hash=credentials_store.active_annotator_by_code_hash,
    by_sso=credentials_store.annotators_by_sso,
    credential=credentials_store.credential_version,
    keyed=True,
    added=EventKind("annotator_added", ("name",)),
    code_issued=EventKind("code_issued"),
    revoked=EventKind("code_revoked"),
    sso_linked=EventKind("sso_linked", ("identity",)),
    sso_unlinked=EventKind("sso_unlinked"),
)


def annotators(study: Study) -> pd.DataFrame:
    """Annotators of *study* with progress: name, active, has_code, done, total."""
    with session_scope(study.engine) as s:
        rows = store.annotator_progress(s, study.id)
    return pd.DataFrame(
        [
            {
                "annotator": n,
                "active": a,
                "has_code": h,
                "done": d,
                "total": t,
            }
            for _i, n, a, h, d, t in rows
        ],
        columns=["annotator", "active", "has_code", "done", "total"],
    )


def add_annotator(study: Study, name: str) -> NewMember:
    """Add annotator *name* to *study* with a queue of every pair (file order) and a new
    code: its ``name`` and ``access_code`` (:func:`.members.add`)."""
    return members.add(ANNOTATORS, study, name)


def rename_annotator(study: Study, old: str, new: str) -> None:
    """Rename annotator *old* of *study* to *new*; their ratings stay with them."""
    new = check_annotator_name(new)
    with session_scope(study.engine) as s:
        if store.annotator_id(s, study.id, new) is not None:
            raise UsageProblem(f"study '{study.name}' already has an annotator named '{new}'")
        ann_id = members.member_id(ANNOTATORS, s, study.id, study.name, old)
        store.rename_annotator(s, ann_id, new)
        events_store.add_event(
            s,
            "annotator_renamed",
            study_id=study.id,
            annotator_id=ann_id,
            detail={"from": old, "to": new},
        )


def issue_code(study: Study, name: str) -> str:
    """A new access code for *name* (the old one stops working); re-activates the annotator
    (:func:`.members.issue_code`)."""
    return members.issue_code(ANNOTATORS, study, name)


def revoke_code(study: Study, name: str) -> None:
    """Revoke *name*'s access code; their ratings are kept (:func:`.members.revoke`)."""
    members.revoke(ANNOTATORS, study, name)


def link_annotator_sso(study: Study, name: str, identity: str | None) -> None:
    """Link annotator *name* of *study* to an SSO identity (``None`` or "" unlinks); refused
    when another annotator of the study has it (:func:`.members.link_sso`)."""
    members.link_sso(ANNOTATORS, study, name, identity)


def authenticate_annotator(code: str, *, engine: Engine | None = None) -> AnnotatorIdentity | None:
    """The active annotator holding *code* with their credential version, or ``None``."""
    return members.authenticate(ANNOTATORS, code, engine=engine)
