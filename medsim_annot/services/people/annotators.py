"""Annotators: the annotator role of :mod:`.members` (:data:`ANNOTATORS`) and its entry
points: list with progress, add, rename, issue and revoke access codes, link SSO, sign in.

Every change is one transaction and leaves an event in the study's log. Access codes are
returned once and stored only hashed; revoking keeps the annotator's ratings. An annotator
added later gets a queue built by the study's design, as at creation
(:func:`medsim_annot.design.added.added_queue`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pandas as pd

from medsim_annot.design.added import added_queue
from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import t
from medsim_annot.seeds import new_seed
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
    """An active annotator with a queue built from the study's design
    (:func:`medsim_annot.design.added.added_queue`: file order for a study created in file
    order; else shuffled with the study's seed, or a new one, on a stream of its own, with
    the calibration, check and duplicate slots and the k-of-n share). How it was built is
    recorded in the config's ``added_annotators`` (seed included), in the same transaction."""
    state = store.design_state(s, study_id)
    config = store.study_config(s, study_id)
    seed = config.get("seed")
    plan = added_queue(
        len(state.item_ids),
        config,
        stream=state.annotators,
        seed=int(seed) if seed is not None else new_seed(),
        calibration=state.calibration,
        checks=state.checks,
        planned=state.planned,
        groups=state.groups if config.get("stopping") else None,
    )
    ann_id = store.insert_annotator(
        s, study_id=study_id, name=name, code_hash=code_hash, active=True, created_at=created_at
    )
    store.insert_queue(s, study_id, ann_id, state.item_ids, plan.slots)
    config["added_annotators"] = [*config.get("added_annotators", []), plan.to_config(name)]
    store.set_config(s, study_id, config)
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
    """Add annotator *name* to *study* with a new code: its ``name`` and ``access_code``
    (:func:`.members.add`). The queue is built by the study's design, as at creation
    (:func:`_insert_with_queue`); :func:`added_queue_facts` says how."""
    return members.add(ANNOTATORS, study, name)


def added_queue_facts(study: Study, name: str) -> dict | None:
    """How the queue of annotator *name*, added after the study was created, was built
    (the config's ``added_annotators`` entry: order, seed, stream, main pairs and share,
    calibration, duplicate and check slots); ``None`` for an annotator of the creation."""
    entries = study.reloaded().config.get("added_annotators", [])
    return next((dict(e) for e in reversed(entries) if e.get("name") == name), None)


def describe_added_queue(facts: dict) -> str:
    """The facts of :func:`added_queue_facts` in one line.

    >>> describe_added_queue({"order": "file", "seed": None, "stream": 2, "main": 5,
    ...     "main_pairs": 5, "share": "every pair, in file order", "calibration": 0,
    ...     "duplicates": 0, "checks": 0})
    'queue: 5 slots; every pair, in file order'
    """
    slots = facts["main"] + facts["calibration"] + facts["duplicates"] + facts["checks"]
    parts = [f"queue: {slots} slots; {facts['share']}"]
    extra = [
        f"{facts[k]} {label}"
        for k, label in (
            ("calibration", "calibration"),
            ("duplicates", "duplicate"),
            ("checks", "check"),
        )
        if facts[k]
    ]
    if extra:
        parts.append(", ".join(extra) + " slots as the study's design")
    if facts["order"] == "shuffled":
        parts.append(f"shuffled with seed {facts['seed']} (stream {facts['stream']})")
    return "; ".join(parts)


def rename_annotator(study: Study, old: str, new: str) -> None:
    """Rename annotator *old* of *study* to *new*; their ratings stay with them."""
    new = check_annotator_name(new)
    with session_scope(study.engine) as s:
        if store.annotator_id(s, study.id, new) is not None:
            raise UsageProblem(
                t(
                    "study '{study}' already has an annotator named '{name}'",
                    study=study.name,
                    name=new,
                )
            )
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
