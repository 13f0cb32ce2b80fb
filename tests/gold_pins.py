"""The gold exports whose bytes are pinned by ``tests/test_gold_contract.py``.

Every export format (csv, tsv, jsonl, parquet with its manifest, and the Hugging Face
folder) of EHR-RelA and of both demo studies, with and without filters, under a fixed clock:
the rating times (``utcnow`` of the import and of the demo's simulated ratings) and the
manifest's export time are fixed, so the SHA-256 of every file is a function of the code
alone. A reshaping of the export code must leave every hash unchanged.

Run as a script to (re)write the pinned hashes, only when a change of the gold files is
intended::

    PYTHONPATH=$PWD .venv/bin/python tests/gold_pins.py [EHR-RelA.tsv]
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

PINS = Path(__file__).parent / "data" / "gold_export_hashes.json"
#: The fixed clock: rating times and the manifests' export time.
FIXED_NOW = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
FILE_FORMATS = ("csv", "tsv", "jsonl", "parquet")
#: (label, filters) exported for every study; the second set runs every filter that applies.
VARIANTS: dict[str, dict] = {
    "plain": {},
    "filtered": {"min_ratings": 2, "require_majority": True, "exclude_all_different": True},
}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _fix_clock(patch) -> None:
    """Fix the rating times through *patch(target, name, value)* (monkeypatch.setattr)."""
    from medsim_annot.services import demo, studies

    def fixed() -> dt.datetime:
        return FIXED_NOW

    patch(demo, "utcnow", fixed)
    patch(studies, "utcnow", fixed)


def _exports(study: str, folder: Path, *, hf: bool = True) -> dict[str, str]:
    from data_schemas.gold import manifest_path
    from medsim_annot.services.gold.export import export_gold
    from medsim_annot.services.interop import export_gold_hf
    from medsim_annot.services.study_handle import open_study

    out: dict[str, str] = {}
    for label, filters in VARIANTS.items():
        for fmt in FILE_FORMATS:
            path = folder / f"{study}-{label}.{fmt}"
            export_gold(open_study(study), path, now=FIXED_NOW, **filters)
            out[path.name] = _sha(path)
            out[manifest_path(path).name] = _sha(manifest_path(path))
        if hf:
            target = folder / f"{study}-{label}-hf"
            export_gold_hf(open_study(study), target, split=label == "filtered", **filters)
            for f in sorted(target.rglob("*")):
                if f.is_file():
                    out[f"{target.name}/{f.relative_to(target).as_posix()}"] = _sha(f)
    return out


def produce(ehr_rel_a: Path, folder: Path) -> dict[str, str]:
    """Every pinned export of EHR-RelA and the demo studies, written under *folder*; returns
    file name → SHA-256. The database must be empty (``MEDSIM_DATABASE_URL``) and the clock
    fixed (:func:`_fix_clock`)."""
    from medsim_annot.services import studies
    from medsim_annot.services.demo import BINARY_STUDY, RELATEDNESS_STUDY, seed_demo

    studies.import_ehr_rel(ehr_rel_a, "ehr-rel-a")
    seed_demo(only_if_empty=False)
    hashes: dict[str, str] = {}
    for study in ("ehr-rel-a", BINARY_STUDY, RELATEDNESS_STUDY):
        hashes.update(_exports(study, folder))
    # The model aggregate (nominal scales only) on the demo's binary study.
    path = folder / f"{BINARY_STUDY}-dawid-skene.csv"
    from data_schemas.gold import manifest_path
    from medsim_annot.services.gold.export import export_gold
    from medsim_annot.services.study_handle import open_study

    export_gold(open_study(BINARY_STUDY), path, aggregate="dawid-skene", now=FIXED_NOW)
    hashes[path.name] = _sha(path)
    hashes[manifest_path(path).name] = _sha(manifest_path(path))
    return dict(sorted(hashes.items()))


def main(argv: list[str]) -> None:
    ehr = Path(argv[0]) if argv else Path("../shared/data/ehr-rel/EHR-RelA.tsv")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["MEDSIM_DATABASE_URL"] = f"sqlite:///{Path(tmp) / 'medsim.db'}"
        _fix_clock(setattr)
        hashes = produce(ehr.resolve(), Path(tmp))
    PINS.parent.mkdir(parents=True, exist_ok=True)
    PINS.write_text(json.dumps(hashes, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(hashes)} hashes to {PINS}")


if __name__ == "__main__":
    main(sys.argv[1:])
