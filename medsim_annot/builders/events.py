"""The events input of the co-occurrence builder: its columns and :class:`EventsSource`, a
checked events file or folder (:func:`medsim_annot.builders.cooccurrence.events_source`)
that the engines (:mod:`medsim_annot.builders.engines`) load."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PATIENT_ID = "patient_id"
CONCEPT_ID = "concept_id"
CONCEPT_LABEL = "concept_label"
CATEGORY = "category"
EVENT_REQUIRED = (PATIENT_ID, CONCEPT_ID, CONCEPT_LABEL)


@dataclass(frozen=True)
class EventsSource:
    """An events file or folder, checked: its format, its files and their columns."""

    path: Path
    kind: str  # "parquet" | "csv" | "tsv"
    files: tuple[Path, ...]
    columns: tuple[str, ...]

    @property
    def delimiter(self) -> str:
        return "\t" if self.kind == "tsv" else ","

    @property
    def has_category(self) -> bool:
        return CATEGORY in self.columns
