"""Annotator administration: list with progress, add, rename, issue and revoke access codes.

Every change is one transaction and leaves an event in the study's log. Access codes are
returned once and stored only hashed; revoking keeps the annotator's ratings.
"""

from __future__ import annotations

import pandas as pd

from medsim_annot.errors import UsageProblem
from medsim_annot.services.people.auth import hash_code, new_access_code
from medsim_annot.services.people.names import check_annotator_name
from medsim_annot.services.studies import Slot, StudyInfo, get_study
from medsim_annot.storage import Engine, Transaction, get_engine, session_scope, utcnow
from medsim_annot.storage import events as events_store
from medsim_annot.storage import studies as store
from medsim_annot.storage.credentials import bump_credential_version


def annotators(study: str, *, engine: Engine | None = None) -> pd.DataFrame:
    """Annotators of *study* with progress: name, active, has_code, done, total."""
    engine = engine or get_engine()
    info = get_study(study, engine=engine)
    with session_scope(engine) as s:
        rows = store.annotator_progress(s, info.id)
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


def add_annotator(study: str, name: str, *, engine: Engine | None = None) -> dict:
    """Add annotator *name* to *study* with a queue of every pair (file order) and a new code."""
    engine = engine or get_engine()
    info = get_study(study, engine=engine)
    name = check_annotator_name(name)
    code = new_access_code()
    with session_scope(engine) as s:
        if store.annotator_id(s, info.id, name) is not None:
            raise UsageProblem(f"study '{study}' already has an annotator named '{name}'")
        ann_id = store.insert_annotator(
            s,
            study_id=info.id,
            name=name,
            code_hash=hash_code(code),
            active=True,
            created_at=utcnow(),
        )
        item_ids = store.item_ids(s, info.id)
        store.insert_queue(s, info.id, ann_id, item_ids, [Slot(i) for i in range(len(item_ids))])
        events_store.add_event(
            s, "annotator_added", study_id=info.id, annotator_id=ann_id, detail={"name": name}
        )
    return {"name": name, "access_code": code}


def _annotator_id(s: Transaction, info: StudyInfo, name: str) -> int:
    ann_id = store.annotator_id(s, info.id, name)
    if ann_id is None:
        raise UsageProblem(f"study '{info.name}' has no annotator named '{name}'")
    return ann_id


def rename_annotator(study: str, old: str, new: str, *, engine: Engine | None = None) -> None:
    engine = engine or get_engine()
    info = get_study(study, engine=engine)
    new = check_annotator_name(new)
    with session_scope(engine) as s:
        if store.annotator_id(s, info.id, new) is not None:
            raise UsageProblem(f"study '{study}' already has an annotator named '{new}'")
        ann_id = _annotator_id(s, info, old)
        store.rename_annotator(s, ann_id, new)
        events_store.add_event(
            s,
            "annotator_renamed",
            study_id=info.id,
            annotator_id=ann_id,
            detail={"from": old, "to": new},
        )


def issue_code(study: str, name: str, *, engine: Engine | None = None) -> str:
    """A new access code for *name* (the old one stops working); re-activates the annotator."""
    engine = engine or get_engine()
    info = get_study(study, engine=engine)
    code = new_access_code()
    with session_scope(engine) as s:
        ann_id = _annotator_id(s, info, name)
        store.set_annotator_code(s, ann_id, hash_code(code), active=True)
        bump_credential_version(s, ann_id)  # sessions opened with the old code end
        events_store.add_event(s, "code_issued", study_id=info.id, annotator_id=ann_id)
    return code


def revoke_code(study: str, name: str, *, engine: Engine | None = None) -> None:
    """Revoke *name*'s access code; their ratings are kept."""
    engine = engine or get_engine()
    info = get_study(study, engine=engine)
    with session_scope(engine) as s:
        ann_id = _annotator_id(s, info, name)
        store.set_annotator_code(s, ann_id, None, active=False)
        bump_credential_version(s, ann_id)  # sessions opened with the code end
        events_store.add_event(s, "code_revoked", study_id=info.id, annotator_id=ann_id)
