"""Gold as a Hugging Face dataset folder: ``datasets.load_dataset`` loads it offline,
``mlcroissant`` validates croissant.json and reads the same records, the card carries the
hub's YAML header, the manifest the SHA-256 of every file, and a re-export is byte-identical."""

from __future__ import annotations

import hashlib
import json

import pandas as pd
import pytest
import yaml

from medsim_annot.services.interop import export_gold_hf
from medsim_annot.services.study_handle import open_study
from tests.qa_data import make_tiny


@pytest.fixture
def tiny(db_url, tmp_path):
    return make_tiny(tmp_path / "in")


def _bytes(folder) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_folder_loads_with_datasets_offline(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    out = tmp_path / "hf"
    export_gold_hf(open_study(tiny), out, license="cc-by-4.0")
    import datasets

    ds = datasets.load_dataset(str(out), cache_dir=str(tmp_path / "hf-cache"))
    assert list(ds) == ["train"]
    train = ds["train"]
    assert train.num_rows == 5
    assert train["pair_id"] == ["p1", "p2", "p3", "p4", "p5"]
    assert train["rater_C"][:3] == ["same", "same", "dont_know"]
    assert train["majority"][2] is None and train["verified"][0] is True
    assert train.features["n_ratings"].dtype == "int64"


def test_card_header_and_body(tiny, tmp_path):
    out = tmp_path / "hf"
    export_gold_hf(open_study(tiny), out, license="cc-by-4.0", require_majority=True)
    card = (out / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\n")
    header = yaml.safe_load(card.split("---\n")[1])
    assert header["license"] == "cc-by-4.0"
    assert header["task_categories"] == ["sentence-similarity"]
    assert header["size_categories"] == ["n<1K"]
    assert header["configs"] == [
        {"config_name": "default", "data_files": [{"split": "train", "path": "data/train.parquet"}]}
    ]
    body = card.split("---\n", 2)[2]
    for text in (
        "3 doctors",
        "binary scale",
        "Don't know",  # the scale's options
        "interchangeably in consultation notes",  # the guideline
        "| require_majority | 5 | 4 |",  # filter counts before/after
        "bootstrap interval",
        "Krippendorff",
        "Schulz, C. & Juric, D. (2020)",
        "imported from",  # the design of an imported study
    ):
        assert text in body, text


def test_croissant_validates_and_reads_the_same_records(tiny, tmp_path):
    import mlcroissant as mlc

    out = tmp_path / "hf"
    export_gold_hf(open_study(tiny), out, license="cc-by-4.0", split=True, seed=7, test_size=0.4)
    meta = json.loads((out / "croissant.json").read_text(encoding="utf-8"))
    assert meta["conformsTo"] == "http://mlcommons.org/croissant/1.0"
    dataset = mlc.Dataset(jsonld=out / "croissant.json")  # raises on validation errors
    for split in ("train", "test"):
        records = list(dataset.records(split))
        frame = pd.read_parquet(out / "data" / f"{split}.parquet")
        assert [r[f"{split}/pair_id"].decode() for r in records] == frame["pair_id"].tolist()
        assert [r[f"{split}/n_ratings"] for r in records] == frame["n_ratings"].tolist()
    types = {f["name"]: f["dataType"] for f in meta["recordSet"][0]["field"]}
    assert types["term_1"] == "sc:Text" and types["n_ratings"] == "sc:Integer"
    assert types["verified"] == "sc:Boolean" and types["auto_label"] == "sc:Integer"


def test_split_is_seeded_and_stratified(tiny, tmp_path):
    a = export_gold_hf(open_study(tiny), tmp_path / "a", split=True, seed=7, test_size=0.4)
    export_gold_hf(open_study(tiny), tmp_path / "b", split=True, seed=7, test_size=0.4)
    assert a.manifest["counts"]["split_train"] + a.manifest["counts"]["split_test"] == 5
    test = pd.read_parquet(tmp_path / "a" / "data" / "test.parquet")
    assert sorted(test["dataset"]) == ["A", "B"]  # one per group: round(0.4 * 2), round(0.4 * 3)
    assert _bytes(tmp_path / "a") == _bytes(tmp_path / "b")


def test_manifest_hashes_and_byte_identical_reexport(tiny, tmp_path):
    out = tmp_path / "hf"
    result = export_gold_hf(open_study(tiny), out)
    first = _bytes(out)
    for f in result.manifest["files"]:
        assert hashlib.sha256((out / f["path"]).read_bytes()).hexdigest() == f["sha256"]
    assert {f["path"] for f in result.manifest["files"]} == {
        "README.md",
        "croissant.json",
        "data/train.parquet",
    }
    assert "exported_at" not in result.manifest
    export_gold_hf(open_study(tiny), out)
    assert _bytes(out) == first


def test_cli_hf_export(tiny, tmp_path, cli):
    out = tmp_path / "hf"
    r = cli(
        "export",
        "gold",
        tiny,
        "--out",
        out,
        "--format",
        "hf",
        "--license",
        "cc-by-4.0",
        "--split",
        "train/test",
        "--seed",
        "3",
    )
    assert r.exit_code == 0, r.stderr
    assert "5 of 5 pairs" in r.stdout and "croissant.json" in r.stdout
    assert (out / "data" / "test.parquet").exists()
    bad = cli("export", "gold", tiny, "--out", tmp_path / "g.csv", "--split", "train/test")
    assert bad.exit_code == 2 and "hf format (--format)" in bad.stderr
    worse = cli("export", "gold", tiny, "--out", out, "--format", "hf", "--split", "70/30")
    assert worse.exit_code == 2 and "train/test" in worse.stderr


def test_card_describes_a_designed_study(db_url, tmp_path):
    from data_schemas.scales import load_scale
    from medsim_annot.services.design import DesignOptions, create_designed_study

    pairs = pd.DataFrame(
        {
            "pair_id": [f"d{i}" for i in range(12)],
            "term_1": [f"term {i}" for i in range(12)],
            "term_2": [f"other {i}" for i in range(12)],
        }
    )
    options = DesignOptions(per_item=2, calibration=2, duplicates=0.1, seed=11)
    create_designed_study("designed", pairs, load_scale("binary"), ["a", "b", "c"], options)
    export_gold_hf(open_study("designed"), tmp_path / "hf")
    card = (tmp_path / "hf" / "README.md").read_text(encoding="utf-8")
    assert "2 of the 3 doctors (balanced k-of-n design)" in card
    assert "calibration pairs (rated by every doctor): 2" in card
    assert "terms swapped: 0.1" in card and "seed: 11" in card
    assert "undefined (no ratings)" in card  # nothing rated yet: alpha has no value
