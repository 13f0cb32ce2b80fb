"""An annotator's practice round and the gate before the real queue.

While a study has practice pairs, an annotator's real queue is closed until they *pass* (the
last ``N`` practice answers of their current round agree exactly with the reference answers
at a share of at least the threshold, :class:`~.setup.PracticeSettings`) or an admin
*unlocks* them by name. Practice pairs are served in the order of the practice file and
again from the first when the doctor has answered them all ("more practice"). The closed
queue is enforced in :mod:`medsim_annot.services.annotation` (nothing real is served or
stored) and by the ratings endpoint (:func:`medsim_annot.services.rating_queue.exchange`).

An admin may send a doctor back to practice (recalibration, :func:`send_back_to_practice`):
their real queue closes again and a new round starts, so only answers given after the
send-back count. Passing, unlocking and sending back are events.

A practice answer's feedback holds the reference answer and explanation of that practice
pair only; practice pairs are never real pairs, so practice never reveals a real label.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from data_schemas.practice import agreement, within_one_defined
from data_schemas.scales import Scale
from medsim_annot.errors import SessionEnded, UsageProblem
from medsim_annot.i18n import t
from medsim_annot.services.practice.setup import PracticeSettings
from medsim_annot.services.study_handle import Study
from medsim_annot.storage import Engine, Transaction, get_engine, session_scope, utcnow
from medsim_annot.storage import annotation as annotation_store
from medsim_annot.storage import events as events_store
from medsim_annot.storage import practice as store
from medsim_annot.storage import studies as studies_store

PRACTISING, PASSED, UNLOCKED = store.PRACTISING, store.PASSED, store.UNLOCKED


@dataclass(frozen=True)
class PracticePairView:
    """A practice pair as the doctor sees it before answering: its terms and the serial of
    the answer it waits for (no reference answer, no explanation)."""

    serial: int
    term_1: str
    term_2: str


@dataclass(frozen=True)
class Feedback:
    """What the doctor sees after a practice answer: their answer, the reference answer,
    the explanation, and whether it agrees (exactly; within one on a numeric-level scale)."""

    serial: int
    term_1: str
    term_2: str
    value: str
    reference: str
    explanation: str
    exact: bool
    within_one: bool


@dataclass(frozen=True)
class Gate:
    """An annotator's standing. ``open``: the real queue is served (``state`` ``passed`` or
    ``unlocked``; always open in a study without practice pairs, ``has_practice`` false).
    ``answered``: practice answers in the current ``round``; ``needed``: how many the gate
    looks at; ``exact``/``within_one``: agreement over the last ``needed`` answers
    (``None`` before any); ``next_pair``: the practice pair to serve while closed."""

    has_practice: bool
    open: bool
    state: str
    round: int
    answered: int
    needed: int
    threshold: float
    exact: float | None
    within_one: float | None
    next_pair: PracticePairView | None


def _access(s: Transaction, annotator_id: int, credential: int | None) -> int:
    access = annotation_store.annotator_access(s, annotator_id)
    if access is None:
        raise UsageProblem(t("there is no annotator with id {id}", id=annotator_id))
    if not access.active:
        raise SessionEnded(
            t("this access code has been revoked; ask the study admin for a new one")
        )
    if credential is not None and int(credential) != access.credential_version:
        raise SessionEnded(
            t("this session has ended: the access code was replaced or revoked — sign in again")
        )
    return access.study_id


def _figures(scale: Scale, rows: list[store.PracticeAnswerRow]) -> tuple[float | None, ...]:
    if not rows:
        return None, None
    marks = [agreement(scale, r.value, r.answer) for r in rows]
    return (
        sum(e for e, _ in marks) / len(marks),
        sum(w for _, w in marks) / len(marks),
    )


def standing(s: Transaction, study_id: int, annotator_id: int) -> Gate:
    """*annotator_id*'s :class:`Gate` read inside the caller's transaction *s*."""
    scale_json, config_json, _ = store.study_setup(s, study_id)
    scale = Scale.from_json(scale_json)
    settings = PracticeSettings.of(json.loads(config_json))
    pairs = [p for p in store.practice_pairs(s, study_id) if p.position >= 0]
    if not pairs:
        return Gate(False, True, PASSED, 0, 0, 0, settings.threshold, None, None, None)
    st = store.status(s, annotator_id)
    rows = store.answers(s, study_id, annotator_id, st.round)
    needed = settings.needed(len(pairs))
    exact, within = _figures(scale, rows[-needed:])
    is_open = st.state in store.OPEN_STATES
    nxt = None
    if not is_open:
        p = pairs[len(rows) % len(pairs)]
        nxt = PracticePairView(len(rows), p.term_1, p.term_2)
    return Gate(
        True, is_open, st.state, st.round, len(rows), needed, settings.threshold, exact, within, nxt
    )


def gate(annotator_id: int, *, credential: int | None = None, engine: Engine | None = None) -> Gate:
    """*annotator_id*'s standing with the practice gate (one short read). Raises
    :class:`SessionEnded` for a revoked annotator or (with *credential*) a replaced code."""
    with session_scope(engine or get_engine()) as s:
        study_id = _access(s, annotator_id, credential)
        return standing(s, study_id, annotator_id)


def _passes(g: Gate) -> bool:
    return g.answered >= g.needed and g.exact is not None and g.exact >= g.threshold


def answer(
    annotator_id: int,
    serial: int,
    value,
    *,
    elapsed_ms: int | None = None,
    credential: int | None = None,
    engine: Engine | None = None,
) -> tuple[Feedback, Gate]:
    """Store *value* as the *serial*-th practice answer of the current round and return its
    feedback and the gate after it. A resent answer (that serial already stored) stores
    nothing and returns the stored answer's feedback. When the answer meets the gate, the
    annotator passes (a ``practice_passed`` event) in the same transaction.

    Raises :class:`UsageProblem` for a value off the scale, a serial that is not the next
    one, or an annotator who is not practising; :class:`SessionEnded` like :func:`gate`.
    """
    if isinstance(serial, bool) or not isinstance(serial, int) or serial < 0:
        raise UsageProblem(
            t("a practice answer's serial must be 0 or more, not {serial}", serial=repr(serial))
        )
    eng = engine or get_engine()
    for _ in range(3):
        with session_scope(eng) as s:
            study_id = _access(s, annotator_id, credential)
            scale_json, _, _ = store.study_setup(s, study_id)
            scale = Scale.from_json(scale_json)
            try:
                canon = scale.canonical(value)
            except ValueError as exc:
                raise UsageProblem(str(exc)) from None
            before = standing(s, study_id, annotator_id)
            if not before.has_practice:
                raise UsageProblem(t("this study has no practice pairs"))
            rows = store.answers(s, study_id, annotator_id, before.round)
            pairs = {p.id: p for p in store.practice_pairs(s, study_id)}
            if serial < len(rows):
                # A resend: the answer is stored; show its feedback again.
                return _feedback(scale, rows[serial], pairs), before
            if before.open:
                raise UsageProblem(t("the practice round is over: the real pairs are open"))
            if serial > len(rows):
                raise UsageProblem(
                    t(
                        "practice answer {serial} arrived before answer {expected}; reload the "
                        "page",
                        serial=serial,
                        expected=len(rows),
                    )
                )
            active = [p for p in pairs.values() if p.position >= 0]
            active.sort(key=lambda p: p.position)
            pair = active[serial % len(active)]
            stored = store.insert_answer(
                s,
                study_id=study_id,
                annotator_id=annotator_id,
                practice_pair_id=pair.id,
                round=before.round,
                serial=serial,
                value=str(Scale.display(canon)),
                at=utcnow(),
                elapsed_ms=None if elapsed_ms is None else max(0, min(int(elapsed_ms), 2**31 - 1)),
            )
            if not stored:
                s.rollback()
                continue  # a concurrent tab stored this serial: read again
            after = standing(s, study_id, annotator_id)
            if _passes(after):
                store.set_status(
                    s, study_id, annotator_id, round=after.round, state=PASSED, at=utcnow()
                )
                events_store.add_event(
                    s,
                    "practice_passed",
                    study_id=study_id,
                    annotator_id=annotator_id,
                    detail={
                        "round": after.round,
                        "answered": after.answered,
                        "needed": after.needed,
                        "exact": after.exact,
                        "within_one": after.within_one,
                        "threshold": after.threshold,
                    },
                )
                after = standing(s, study_id, annotator_id)
            rows = store.answers(s, study_id, annotator_id, before.round)
            return _feedback(scale, rows[serial], pairs), after
    raise UsageProblem(t("this practice answer could not be stored; press again"))


def _feedback(scale: Scale, row: store.PracticeAnswerRow, pairs: dict) -> Feedback:
    pair = pairs[row.practice_pair_id]
    exact, within = agreement(scale, row.value, row.answer)
    return Feedback(
        serial=row.serial,
        term_1=pair.term_1,
        term_2=pair.term_2,
        value=row.value,
        reference=row.answer,
        explanation=pair.explanation,
        exact=exact,
        within_one=within if within_one_defined(scale) else exact,
    )


# --------------------------------------------------------------------------- admin actions
def _annotator(s: Transaction, study: Study, annotator_name: str) -> int:
    aid = studies_store.annotator_id(s, study.id, annotator_name)
    if aid is None:
        raise UsageProblem(
            t(
                "study '{study}' has no annotator named '{name}'",
                study=study.name,
                name=annotator_name,
            )
        )
    return aid


def unlock(study: Study, annotator_name: str, *, by: str, reason: str = "") -> Gate:
    """Open *annotator_name*'s real queue without passing practice (an admin's decision by
    name, recorded as a ``practice_unlocked`` event with *by* and *reason*)."""
    with session_scope(study.engine) as s:
        aid = _annotator(s, study, annotator_name)
        if not store.has_practice(s, study.id):
            raise UsageProblem(
                t("study '{study}' has no practice pairs: nothing to unlock", study=study.name)
            )
        st = store.status(s, aid)
        if st.state in store.OPEN_STATES:
            raise UsageProblem(
                t(
                    "'{name}' already has the real pairs open ({state})",
                    name=annotator_name,
                    state=st.state,
                )
            )
        store.set_status(s, study.id, aid, round=st.round, state=UNLOCKED, at=utcnow())
        events_store.add_event(
            s,
            "practice_unlocked",
            study_id=study.id,
            annotator_id=aid,
            detail={"by": by, "reason": reason, "round": st.round},
        )
        return standing(s, study.id, aid)


def send_back_to_practice(study: Study, annotator_name: str, *, by: str, reason: str) -> Gate:
    """Recalibration: close *annotator_name*'s real queue and start a new practice round
    (only answers given from now on count towards the gate). Recorded as a
    ``practice_sent_back`` event with *by* and *reason*; their real ratings are kept."""
    if not reason.strip():
        raise UsageProblem(t("say why the doctor is sent back to practice (reason)"))
    with session_scope(study.engine) as s:
        aid = _annotator(s, study, annotator_name)
        if not store.has_practice(s, study.id):
            raise UsageProblem(
                t(
                    "study '{study}' has no practice pairs: give a practice file first",
                    study=study.name,
                )
            )
        st = store.status(s, aid)
        answered = store.answered_in_round(s, aid, st.round)
        new_round = st.round + 1 if (answered or st.state != PRACTISING) else st.round
        store.set_status(s, study.id, aid, round=new_round, state=PRACTISING, at=utcnow())
        events_store.add_event(
            s,
            "practice_sent_back",
            study_id=study.id,
            annotator_id=aid,
            detail={"by": by, "reason": reason.strip(), "round": new_round},
        )
        return standing(s, study.id, aid)
