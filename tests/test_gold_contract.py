"""The gold file contract: the bytes of every gold export (csv, tsv, jsonl, parquet, their
manifests and the Hugging Face folder) of EHR-RelA and the demo studies are pinned, so the
export code can be reshaped without changing a single byte; and the one definition of the
gold file's columns, empty and true values and manifest."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from data_schemas import gold as G
from data_schemas.errors import InputError
from data_schemas.ratings import validate_ratings
from data_schemas.scales import BINARY
from medsim_annot.errors import UsageProblem
from medsim_annot.io import atomic_target, write_atomic, write_table
from medsim_annot.services import agreement as agreement_svc
from medsim_annot.services import studies as svc
from medsim_annot.services.activity import activity
from medsim_annot.services.gold import files as gold_files
from medsim_annot.services.gold import snapshot as snapshot_svc
from medsim_annot.services.gold.export import export_gold
from medsim_annot.services.study_handle import open_study
from tests.gold_pins import PINS, _fix_clock, produce
from tests.qa_data import make_tiny

ROOT = Path(__file__).resolve().parent.parent


def test_gold_exports_are_byte_identical_to_the_pinned_hashes(
    db_url, ehr_rel_a, tmp_path, monkeypatch
):
    _fix_clock(monkeypatch.setattr)
    got = produce(ehr_rel_a, tmp_path)
    pinned = json.loads(PINS.read_text(encoding="utf-8"))
    assert sorted(got) == sorted(pinned)
    changed = [name for name in pinned if got[name] != pinned[name]]
    assert changed == [], f"gold export bytes changed: {changed}"


# ---- one definition of the gold file -----------------------------------------------------------
def test_agreement_reads_gold_files_without_importing_the_gold_service(python):
    """The agreement <-> gold import circle is gone: reading a gold file needs only the
    contract in data_schemas.gold."""
    code = (
        "import sys, medsim_annot.services.agreement as a; "
        "print('medsim_annot.services.gold' in sys.modules, a.CALIBRATION_COLUMN)"
    )
    out = subprocess.run(
        [python, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.split()
    assert out == ["False", G.CALIBRATION_COLUMN]


@pytest.mark.parametrize("empty", ["", "NA", "<NA>", "nan", "None", "null", "n/a"])
def test_every_reader_reads_the_same_empty_cells(tmp_path, empty):
    frame = pd.DataFrame(
        {
            "pair_id": ["a", "b", "c"],
            "rater_A": ["same", "not_same", empty],
            "rater_B": ["same", "not_same", "same"],
            "majority": ["same", "not_same", empty],
        }
    )
    path = tmp_path / "gold.csv"
    write_table(frame, path)
    loaded = agreement_svc.load_ratings_file(path)
    assert sorted(map(tuple, loaded.ratings[["pair_id", "annotator"]].values)) == [
        ("a", "A"),
        ("a", "B"),
        ("b", "A"),
        ("b", "B"),
        ("c", "B"),
    ]
    gold = gold_files.read_gold(path)
    assert gold.task == "binary" and gold.values.to_dict() == {"a": 1.0, "b": 0.0}


@pytest.mark.parametrize("text", sorted(G.TRUE_TEXT | G.FALSE_TEXT))
def test_calibration_and_unclear_take_the_same_truth_words(text):
    g = G.read_gold_frame(
        pd.DataFrame({"pair_id": ["a"], "rater_A": ["same"], "calibration": [text.upper()]})
    )
    assert g.problems == []
    assert bool(g.calibration.iloc[0]) is (text in G.TRUE_TEXT)
    rated = validate_ratings(
        pd.DataFrame({"pair_id": ["a"], "annotator": ["A"], "rating": ["same"], "unclear": [text]}),
        BINARY,
    )
    assert bool(rated["unclear"].iloc[0]) is (text in G.TRUE_TEXT)


def test_a_word_that_is_neither_true_nor_false_is_refused_by_both():
    g = G.read_gold_frame(
        pd.DataFrame({"pair_id": ["a"], "rater_A": ["same"], "calibration": ["maybe"]})
    )
    assert [(p.row, p.column) for p in g.problems] == [(2, "calibration")]
    with pytest.raises(InputError, match="unclear"):
        validate_ratings(
            pd.DataFrame(
                {"pair_id": ["a"], "annotator": ["A"], "rating": ["same"], "unclear": ["maybe"]}
            ),
            BINARY,
        )


# ---- one export -------------------------------------------------------------------------------
@pytest.fixture
def tiny(db_url, tmp_path):
    return make_tiny(tmp_path / "in")


def test_file_and_hf_manifests_share_one_shape(tiny, tmp_path):
    file_m = export_gold(open_study(tiny), tmp_path / "g.csv", require_majority=True)
    hf_m = export_gold(
        open_study(tiny), tmp_path / "hf", "hf", filters=G.GoldFilters(require_majority=True)
    )
    common = [
        "study",
        "scale",
        "filters",
        "filter_steps",
        "counts",
        "krippendorff_alpha",
        "ratings_version",
        "columns",
        "software",
        "software_version",
    ]
    for m in (file_m.manifest, hf_m.manifest):
        assert [k for k in m if k in common] == common
    for key in ("study", "scale", "filters", "filter_steps", "ratings_version"):
        assert file_m.manifest[key] == hf_m.manifest[key], key
    assert json.loads((tmp_path / "hf" / G.HF_MANIFEST).read_text()) == hf_m.manifest


def test_hf_refuses_a_model_aggregate_and_writes_nothing(tiny, tmp_path, cli):
    out = tmp_path / "hf"
    with pytest.raises(
        UsageProblem, match="aggregation \\(aggregate\\) 'dawid-skene' applies to the file formats"
    ):
        export_gold(open_study(tiny), out, "hf", aggregate="dawid-skene")
    res = cli("export", "gold", tiny, "--out", out, "--format", "hf", "--aggregate", "mace")
    assert res.exit_code == 2 and "(--aggregate) 'mace'" in res.stderr
    assert not out.exists()


def test_every_export_is_an_event(tiny, tmp_path):
    export_gold(open_study(tiny), tmp_path / "g.parquet")
    m = export_gold(open_study(tiny), tmp_path / "hf", "hf")
    events = activity(study=open_study(tiny))
    done = events[events["action"] == "gold_exported"]["detail"].map(json.loads).tolist()
    assert [d["format"] for d in done] == ["hf", "parquet"]
    hf_digest = hashlib.sha256((tmp_path / "hf" / G.HF_MANIFEST).read_bytes()).hexdigest()
    assert done[0] == {
        "file": "hf",
        "format": "hf",
        "pairs": m.manifest["counts"]["exported"],
        "sha256": hf_digest,
    }
    assert m.sha256 == hf_digest and m.is_folder
    assert m.manifest_path == tmp_path / "hf" / G.HF_MANIFEST


def test_the_export_reads_in_one_transaction(tiny, tmp_path, monkeypatch):
    """The pairs, the current ratings, the decisions and the ratings version are read in one
    read transaction (a rating saved meanwhile is in none of them: tests/test_store.py)."""
    entered: list[object] = []
    real = snapshot_svc.read_snapshot

    def counted(engine):
        entered.append(engine)
        return real(engine)

    monkeypatch.setattr(snapshot_svc, "read_snapshot", counted)
    m = export_gold(open_study(tiny), tmp_path / "g.csv")
    assert len(entered) == 1
    assert m.manifest["ratings_version"]["count"] == svc.ratings_version(open_study(tiny))[0]


def test_write_atomic_leaves_nothing_half_written(tmp_path):
    target = tmp_path / "f.txt"
    write_atomic(target, "first")
    with pytest.raises(RuntimeError), atomic_target(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("disk full")
    assert target.read_text() == "first" and sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]


@pytest.mark.parametrize("fmt", ["tsv", "parquet"])
def test_export_page_file_equals_the_service_file(db_url, monkeypatch, tmp_path, fmt):
    """The Export page and the CLI call the one export_gold: the page's file is the
    service's, byte for byte, for a file format as for the hf folder."""
    from streamlit.testing.v1 import AppTest

    from medsim_annot.services.demo import seed_demo

    monkeypatch.syspath_prepend(str(ROOT))
    seed_demo()
    at = AppTest.from_file(str(ROOT / "pages" / "export.py"), default_timeout=120)
    at.session_state["auth_role"] = "admin"
    at.run()
    assert not at.exception, at.exception
    at.selectbox(key="export_format").select(fmt)
    at.checkbox(key="export_exclude_all_different").check()
    at.button[0].click().run()
    assert not at.exception, at.exception
    res = at.session_state["export_result"]
    out = tmp_path / f"gold.{fmt}"
    # The page's default minimum is 1 rating (the service's: none).
    m = export_gold(open_study("demo-binary"), out, exclude_all_different=True, min_ratings=1)
    assert res["data"] == out.read_bytes()
    assert res["manifest_name"] == res["name"] + ".manifest.json"
    page_m = json.loads(res["manifest"])
    assert (
        page_m["sha256"] == m.manifest["sha256"]
        and page_m["filter_steps"] == m.manifest["filter_steps"]
    )
