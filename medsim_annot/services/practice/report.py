"""The practice report: the only place practice answers are shown (``medsim study
practice-report`` and the Dashboard's practice section). Gold files, agreement, audits and
exports read the real ratings only and never see practice."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from data_schemas.practice import within_one_defined
from medsim_annot.services.practice.gate import standing
from medsim_annot.services.practice.setup import PracticeSettings
from medsim_annot.services.study_handle import Study
from medsim_annot.storage import practice as store
from medsim_annot.storage import session_scope
from medsim_annot.storage import studies as studies_store


@dataclass(frozen=True)
class PracticeRow:
    """One annotator: state (``practising``, ``passed``, ``unlocked``), round, answers in
    the round and in all rounds, and agreement over the gate's last ``needed`` answers
    (exact, and within one on a numeric-level scale; ``None`` before any answer)."""

    annotator: str
    state: str
    round: int
    answered: int
    answered_all_rounds: int
    needed: int
    exact: float | None
    within_one: float | None
    real_queue_open: bool

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class PracticeReport:
    """The practice round of a study: its settings, pairs and every annotator's standing.
    ``gate_measure`` names the figure the threshold applies to (``exact``)."""

    study: str
    pairs: int
    needed: int
    threshold: float
    gate_measure: str
    within_one_reported: bool
    annotators: list[PracticeRow]

    def to_dict(self) -> dict:
        return {**asdict(self), "annotators": [a.to_dict() for a in self.annotators]}


def practice_report(study: Study) -> PracticeReport:
    """Every annotator's practice standing in *study* (one read)."""
    settings = PracticeSettings.of(study.reloaded().config)
    with session_scope(study.engine) as s:
        pairs = [p for p in store.practice_pairs(s, study.id) if p.position >= 0]
        names = studies_store.annotators_by_name(s, study.id)
        every = store.answers(s, study.id)
        rows = []
        for aid, name in names:
            g = standing(s, study.id, aid)
            rows.append(
                PracticeRow(
                    annotator=name,
                    state=g.state if g.has_practice else "no practice",
                    round=g.round,
                    answered=g.answered,
                    answered_all_rounds=sum(1 for r in every if r.annotator_id == aid),
                    needed=g.needed,
                    exact=g.exact,
                    within_one=g.within_one if within_one_defined(study.scale) else g.exact,
                    real_queue_open=g.open,
                )
            )
    return PracticeReport(
        study=study.name,
        pairs=len(pairs),
        needed=settings.needed(len(pairs)) if pairs else 0,
        threshold=settings.threshold,
        gate_measure="exact",
        within_one_reported=within_one_defined(study.scale),
        annotators=rows,
    )
