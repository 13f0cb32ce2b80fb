"""Use cases of :mod:`medsim_annot.interop`: import another tool's export as a completed
study, and publish a study's gold subset as a Hugging Face dataset folder.

Imports go through the same contracts and the same completed-study import as
``medsim import ratings``: one transaction, nothing written when any row is bad.
"""

from __future__ import annotations

from pathlib import Path

from data_schemas import columns as C
from data_schemas.scales import Scale, load_scale
from medsim_annot.interop import load_mapping, read_export
from medsim_annot.interop.hf import zip_folder  # noqa: F401  (the Export page's download)
from medsim_annot.services import studies as studies_svc
from medsim_annot.services.gold import export as gold_svc
from medsim_annot.services.study_handle import Study
from medsim_annot.storage import Engine


def import_from_tool(
    tool: str,
    path: str | Path,
    scale: str | Scale,
    study: str,
    *,
    term_fields: tuple[str, str] | None = None,
    mapping: str | Path | None = None,
    engine: Engine | None = None,
) -> dict:
    """Import *tool*'s export (``labelstudio``, ``prodigy``, ``argilla``) as study *study*.

    Returns what the CLI prints: ``study``, ``tool``, ``file``, ``term_fields``, ``tasks``
    (tasks or records read), ``items`` (pairs stored), ``annotators`` (names), ``ratings``,
    ``skipped`` (reason → count), ``mapped`` (each distinct answer → scale value, with its
    count). Raises :class:`~data_schemas.errors.InputError` naming file, row and field for
    input that cannot be mapped; nothing is written then.
    """
    sc = scale if isinstance(scale, Scale) else load_scale(scale)
    mp = load_mapping(mapping)
    parsed, matcher = read_export(tool, path, sc, term_fields=term_fields, mapping=mp)
    pairs, ratings = parsed.validated(sc)
    config = {
        "imported_from": Path(path).name,
        "format": tool,
        "term_fields": list(parsed.term_fields or ()),
    }
    if mapping is not None:
        config["mapping_file"] = Path(mapping).name
    result = studies_svc.import_completed(study, pairs, ratings, sc, config, engine=engine)
    return {
        "study": study,
        "tool": parsed.tool,
        "file": parsed.file,
        "term_fields": list(parsed.term_fields or ()),
        "tasks": parsed.n_tasks,
        "items": result["items"],
        "annotators": [a["name"] for a in result["annotators"]],
        "ratings": result["ratings"],
        "skipped": parsed.skipped_counts(),
        "mapped": [
            {"answer": answer, "value": value, "count": n}
            for (answer, value), n in sorted(matcher.used.items())
        ],
        "columns": [c for c in pairs.columns if c not in (C.PAIR_ID, C.TERM_1, C.TERM_2)],
    }


# --------------------------------------------------------------------------- HF export
def export_gold_hf(
    study: Study,
    out: str | Path,
    *,
    license: str = gold_svc.HF_LICENSE_DEFAULT,
    split: bool = False,
    seed: int = 0,
    test_size: float = 0.2,
    **filters,
) -> gold_svc.GoldExport:
    """Write *study*'s gold subset as a Hugging Face dataset folder *out*: the gold export
    (:func:`medsim_annot.services.gold.export.export_gold`) in the ``hf`` format, with the filters
    of the file export (as keywords) in the same order. Returns what was written (the manifest
    is :meth:`~medsim_annot.services.gold.export.GoldExport.to_dict`)."""
    return gold_svc.export_gold(
        study,
        out,
        "hf",
        hf=gold_svc.HfOptions(license=license, split=split, seed=seed, test_size=test_size),
        **filters,
    )
