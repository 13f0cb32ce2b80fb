"""What one gold export is built from, read as one consistent state of the study
(:class:`GoldSnapshot`: the table, the adjudicators' decisions and the ratings version), and
the design entry of its manifest (:func:`design_manifest`).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from data_schemas.gold import (
    CALIBRATION_COLUMN,
)
from medsim_annot.errors import UsageProblem
from medsim_annot.services import studies as studies_svc
from medsim_annot.services.adjudication import decisions as decisions_svc
from medsim_annot.services.gold.table import GoldTable, add_provenance, study_gold_table
from medsim_annot.services.tiebreak import tiebreak_pair_ids
from medsim_annot.storage import Engine

#: How often the export reads the study again when a rating is saved while it reads.
SNAPSHOT_ATTEMPTS = 5


@dataclass
class GoldSnapshot:
    """What one export is built from, read as one consistent state of the study: the study,
    its per-pair table and the ratings version (count, highest rating id) the table was built
    from, so the manifest never disagrees with the file."""

    study: str
    info: studies_svc.StudyInfo
    gt: GoldTable
    version: tuple[int, int]
    #: The adjudicators' decisions (history; :func:`decisions_svc.decisions_frame`).
    decisions: pd.DataFrame | None = None

    def provenance(self, audit_label: str = "majority") -> dict:
        """Add the provenance columns to the table (:func:`add_provenance`); returns the
        manifest's ``adjudication`` entry (the decisions the labels were built from)."""
        history = self.decisions if self.decisions is not None else pd.DataFrame()
        current = decisions_svc.current_decisions(history) if len(history) else history
        add_provenance(
            self.gt,
            current,
            tiebreak_pairs=tiebreak_pair_ids(self.gt.current),
            audit_label=audit_label,
        )
        return {
            "decisions": int(len(history)),
            "decided_pairs": int(len(current)),
            "max_decision_id": int(history["decision_id"].max()) if len(history) else None,
            "audit_label": audit_label,
            "agreement_basis": "raters' own answers (decisions are not ratings)",
        }


def gold_snapshot(
    study: str,
    *,
    majority: str = "strict",
    engine: Engine | None = None,
    exclude_rushed_ms: int | None = None,
) -> GoldSnapshot:
    """:func:`study_gold_table` of *study* with the ratings version it was built from.

    Ratings are append-only, so an unchanged version before and after the read means no
    rating was saved in between; otherwise the study is read again (at most
    :data:`SNAPSHOT_ATTEMPTS` times)."""
    for _ in range(SNAPSHOT_ATTEMPTS):
        before = studies_svc.ratings_version(studies_svc.get_study(study, engine=engine))
        gt = study_gold_table(
            study, majority=majority, engine=engine, exclude_rushed_ms=exclude_rushed_ms
        )
        decisions = decisions_svc.decisions_frame(study, engine=engine)
        after = studies_svc.ratings_version(studies_svc.get_study(study, engine=engine))
        if before == after:
            info = studies_svc.get_study(study, engine=engine)
            return GoldSnapshot(study, info, gt, after, decisions)
    raise UsageProblem(
        f"ratings of '{study}' were saved throughout the export's {SNAPSHOT_ATTEMPTS} reads; "
        "export again when annotation pauses"
    )


def design_manifest(config: dict, table: pd.DataFrame) -> dict:
    """The design entry of a gold manifest: k of n, the 2 + 1 tiebreak, calibration pairs,
    and what agreement on the file is computed on.

    >>> t = pd.DataFrame({"pair_id": ["a", "b"], "calibration": [True, False]})
    >>> d = design_manifest({"per_item": 2, "annotators": 3, "tiebreak": {"tolerance": 0}}, t)
    >>> d["tiebreak"], d["calibration_pairs"], d["agreement_basis"]
    ({'tolerance': 0}, 1, 'calibration')
    """
    col = CALIBRATION_COLUMN
    n_calib = int(table[col].sum()) if col in table.columns else None
    return {
        "per_item": config.get("per_item"),
        "annotators": config.get("annotators"),
        "tiebreak": config.get("tiebreak"),
        "calibration_pairs": n_calib if n_calib is not None else config.get("calibration"),
        "agreement_basis": "calibration" if n_calib else "all",
    }
