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
from medsim_annot.services import studies as studies_svc
from medsim_annot.services.adjudication import decisions as decisions_svc
from medsim_annot.services.adjudication import rater_names
from medsim_annot.services.gold.table import GoldTable, add_provenance, study_gold_table
from medsim_annot.services.study_handle import Study
from medsim_annot.services.tiebreak import tiebreak_pair_ids
from medsim_annot.storage import guidelines as guideline_store
from medsim_annot.storage import read_snapshot


@dataclass
class GoldSnapshot:
    """What one export is built from, read as one consistent state of the study: the study
    (its config and scale as read with the rest), its per-pair table and the ratings version
    (count, highest rating id) the table was built from, so the manifest never disagrees with
    the file."""

    study: Study
    gt: GoldTable
    version: tuple[int, int]
    #: The adjudicators' decisions (history; :func:`decisions_svc.decisions_frame`).
    decisions: pd.DataFrame | None = None
    #: The manifest's ``guideline`` entry: the version in force and every revision.
    guideline: dict | None = None

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
            # What the adjudicators saw of the raters: pseudonyms or names.
            "rater_names": rater_names.rater_names(self.study.config),
        }


def gold_snapshot(
    study: Study,
    *,
    majority: str = "strict",
    exclude_rushed_ms: int | None = None,
) -> GoldSnapshot:
    """:func:`study_gold_table` of *study* with the ratings version it was built from and
    the decisions, all read in one read transaction
    (:func:`medsim_annot.storage.read_snapshot`: repeatable read on PostgreSQL, one read
    transaction on SQLite), so a rating or a decision saved meanwhile is in none of them.
    The study's config and scale are read in it too."""
    with read_snapshot(study.engine) as tx:
        version = studies_svc.ratings_version(study, tx=tx)  # the first read: the snapshot
        now = study.reloaded(tx=tx)
        gt = study_gold_table(now, majority=majority, exclude_rushed_ms=exclude_rushed_ms, tx=tx)
        decisions = decisions_svc.decisions_frame(now, tx=tx)
        revisions = guideline_store.versions(tx, now.id)
    guideline = {
        "version": revisions[-1][0] if revisions else guideline_store.FIRST_VERSION,
        "revisions": [
            {"version": v, "at": at.isoformat(), "note": note} for v, at, note, _ in revisions
        ],
    }
    return GoldSnapshot(now, gt, version, decisions, guideline)


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
