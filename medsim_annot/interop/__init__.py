"""Interoperability with other annotation tools and with dataset hubs (no database here).

Importers (:func:`read_export`) turn a Label Studio, Prodigy or Argilla export into our
pairs and ratings contracts; the Hugging Face exporter (:mod:`medsim_annot.interop.hf`)
writes a gold table as a dataset folder with a dataset card and Croissant metadata.
The use cases that store or read studies live in :mod:`medsim_annot.services.interop`.
"""

from __future__ import annotations

from pathlib import Path

from data_schemas.options import StrOptions
from data_schemas.scales import Scale

from ._common import Mapping, ToolImport, ValueMatcher, load_mapping, parse_term_fields
from .argilla import read_argilla
from .labelstudio import read_labelstudio
from .prodigy import read_prodigy

#: ``medsim import TOOL``: the reader of each tool's export.
READERS = {"labelstudio": read_labelstudio, "prodigy": read_prodigy, "argilla": read_argilla}
TOOLS = StrOptions(
    "tool",
    {
        "labelstudio": "a Label Studio JSON export",
        "prodigy": "a Prodigy JSONL export",
        "argilla": "an Argilla export (JSON records or a hub dataset folder)",
    },
)


def read_export(
    tool: str,
    path: str | Path,
    scale: Scale,
    *,
    term_fields: tuple[str, str] | None = None,
    mapping: Mapping | None = None,
) -> tuple[ToolImport, ValueMatcher]:
    """Read *tool*'s export at *path* (see each reader's module for the format)."""
    return READERS[TOOLS.check(tool)](path, scale, term_fields=term_fields, mapping=mapping)


__all__ = [
    "READERS",
    "Mapping",
    "ToolImport",
    "ValueMatcher",
    "load_mapping",
    "parse_term_fields",
    "read_export",
]
