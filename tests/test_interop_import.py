"""Importers of other tools' exports (Label Studio, Prodigy, Argilla disk and hub formats).

The fixtures in tests/data/interop/ are written by hand from each tool's documented export
format. Each import is checked against an independent count of the fixture: the ratings
listed here by reading the files, and Krippendorff's alpha computed from them with the
``krippendorff`` package (Castro's implementation, independent of ours), not with the
importer or our statistics.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import krippendorff
import numpy as np
import pytest

from data_schemas.errors import InputError
from medsim_annot.services import agreement as agreement_svc
from medsim_annot.services import studies as studies_svc
from medsim_annot.services.gold.table import study_gold_table
from medsim_annot.services.interop import import_from_tool
from medsim_annot.services.study_handle import open_study

DATA = Path(__file__).parent / "data" / "interop"

# Independent counts: (pair, annotator, rating) read off the fixture files by hand.
LABELSTUDIO = [
    ("101", "dr_a", "same"),
    ("101", "dr_b", "same"),
    ("101", "dr_c", "same"),
    ("102", "dr_a", "same"),
    ("102", "dr_b", "not_same"),
    ("102", "dr_c", "same"),
    ("103", "dr_a", "not_same"),
    ("103", "dr_b", "not_same"),  # dr_c cancelled task 103
    ("104", "dr_a", "dont_know"),
    ("104", "dr_b", "not_same"),
    ("104", "dr_c", "same"),  # "Identical", through the mapping file
    ("106", "dr_b", "same"),  # dr_a's annotation of 106 has an empty result
]
PRODIGY = [
    ("1111", "alex", 3),  # "Very related", through the mapping file
    ("1111", "sam", 3),
    ("1111", "kim", 2),
    ("2222", "alex", 1),  # _session_id only
    ("2222", "sam", 2),  # kim ignored 2222
    ("3333", "alex", 2),  # sam rejected 3333
    ("3333", "kim", 1),
    ("4444", "alex", 3),
    ("4444", "sam", 2),  # kim accepted 4444 with no option chosen
]
ARGILLA = [
    ("rec-1", "dr_ito", 3),
    ("rec-1", "dr_lund", 3),
    ("rec-1", "dr_okafor", 2),
    ("rec-2", "dr_ito", 1),
    ("rec-2", "dr_lund", 2),  # dr_okafor discarded rec-2
    ("rec-3", "dr_ito", 2),  # dr_lund's rec-3 is a draft
    ("rec-3", "dr_okafor", 1),
    ("rec-4", "dr_ito", 3),
    ("rec-4", "dr_lund", 2),
    ("rec-4", "dr_okafor", 3),
]


def _alpha_by_hand(rows, codes: dict, level: str) -> float:
    """Krippendorff's alpha of *rows* with the independent ``krippendorff`` package."""
    units = sorted({p for p, _, _ in rows})
    raters = sorted({a for _, a, _ in rows})
    m = np.full((len(raters), len(units)), np.nan)
    for p, a, v in rows:
        m[raters.index(a), units.index(p)] = codes.get(v, np.nan) if codes else float(v)
    return float(krippendorff.alpha(reliability_data=m, level_of_measurement=level))


def _stored(study: str):
    frame, scale = studies_svc.ratings_frame(open_study(study))
    rows = sorted(
        (str(p), str(a), r)
        for p, a, r in frame[["pair_id", "annotator", "rating"]].itertuples(index=False)
    )
    return frame, scale, rows


def _same_rows(stored, expected) -> None:
    norm = sorted((p, a, str(v)) for p, a, v in expected)
    assert [
        (p, a, str(v) if not isinstance(v, float) else str(int(v))) for p, a, v in stored
    ] == norm


def test_labelstudio_round_trip(db_url):
    result = import_from_tool(
        "labelstudio",
        DATA / "labelstudio-export.json",
        "binary",
        "ls",
        mapping=DATA / "labelstudio-mapping.yaml",
    )
    assert result["tasks"] == 6 and result["items"] == 6 and result["ratings"] == 12
    assert result["annotators"] == ["dr_a", "dr_b", "dr_c"]
    assert result["skipped"] == {
        "cancelled (skipped) annotation": 1,
        "task without annotations": 1,
        "annotation without a choice or rating": 1,
    }
    assert {"answer": "Identical", "value": "same", "count": 1} in result["mapped"]
    assert result["term_fields"] == ["term_1", "term_2"]
    assert result["columns"] == ["auto_label", "dataset"]
    frame, scale, rows = _stored("ls")
    _same_rows(rows, LABELSTUDIO)
    report = agreement_svc.agreement_report(frame, scale)
    expected = _alpha_by_hand(LABELSTUDIO, {"same": 1.0, "not_same": 0.0}, "nominal")
    assert report.krippendorff_alpha == pytest.approx(expected, abs=1e-12)
    assert report.n_ratings == 12
    gold = study_gold_table(open_study("ls")).table.set_index("pair_id")
    assert gold.loc["102", "majority"] == "same" and gold.loc["104", "no_majority"]
    comments = studies_svc.current_ratings(open_study("ls"))
    assert (
        "lay term" in comments.set_index(["pair_id", "annotator"]).loc[("102", "dr_b"), "comment"]
    )


def test_prodigy_choice_round_trip(db_url):
    result = import_from_tool(
        "prodigy",
        DATA / "prodigy-db-out.jsonl",
        "relatedness-0-3",
        "pg",
        mapping=DATA / "prodigy-mapping.json",
    )
    assert result["tasks"] == 12 and result["items"] == 4 and result["ratings"] == 9
    assert sorted(result["annotators"]) == ["alex", "kim", "sam"]
    assert result["skipped"] == {
        "ignored answer": 1,
        "rejected choice task": 1,
        "accepted with no option chosen": 1,
    }
    assert result["term_fields"] == ["text_1", "text_2"]
    frame, scale, rows = _stored("pg")
    _same_rows(rows, PRODIGY)
    report = agreement_svc.agreement_report(frame, scale)
    assert report.krippendorff_alpha == pytest.approx(
        _alpha_by_hand(PRODIGY, {}, "ordinal"), abs=1e-12
    )


def test_prodigy_binary_accept_reject(db_url):
    result = import_from_tool("prodigy", DATA / "prodigy-binary.jsonl", "binary", "pb")
    assert result["ratings"] == 5 and result["skipped"] == {"ignored answer": 1}
    assert {"answer": "accept", "value": "same", "count": 4} in result["mapped"]
    assert sorted(result["annotators"]) == ["bin-ana", "bin-ben"]  # bin-ben: _session_id
    _, _, rows = _stored("pb")
    assert ("72", "bin-ana", "not_same") in rows


def test_prodigy_binary_needs_mapping_on_a_scale_without_positive(db_url, tmp_path):
    with pytest.raises(InputError) as err:
        import_from_tool("prodigy", DATA / "prodigy-binary.jsonl", "relatedness-0-3", "x")
    assert "row 1" in str(err.value) and "'answer'" in str(err.value)
    assert studies_svc.list_studies() == []


def _hub_folder(tmp_path: Path) -> Path:
    """The layout of an Argilla to_hub repository, from the hand-written rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "argilla-hub"
    (folder / "data").mkdir(parents=True)
    shutil.copytree(DATA / "argilla-disk" / ".argilla", folder / ".argilla")
    rows = json.loads((DATA / "argilla-hub-rows.json").read_text(encoding="utf-8"))
    pq.write_table(pa.Table.from_pylist(rows), folder / "data" / "train-00000-of-00001.parquet")
    return folder


@pytest.mark.parametrize("layout", ["disk", "hub"])
def test_argilla_round_trip(db_url, tmp_path, layout):
    source = DATA / "argilla-disk" if layout == "disk" else _hub_folder(tmp_path)
    result = import_from_tool(
        "argilla", source, "relatedness-0-3", "ar", mapping=DATA / "argilla-mapping.yaml"
    )
    assert result["tasks"] == 5 and result["items"] == 5 and result["ratings"] == 10
    assert result["annotators"] == ["dr_ito", "dr_lund", "dr_okafor"]
    assert result["skipped"] == {
        "discarded response": 1,
        "draft response": 1,
        "record without responses": 1,
    }
    frame, scale, rows = _stored("ar")
    _same_rows(rows, ARGILLA)
    report = agreement_svc.agreement_report(frame, scale)
    assert report.krippendorff_alpha == pytest.approx(
        _alpha_by_hand(ARGILLA, {}, "ordinal"), abs=1e-12
    )
    assert studies_svc.pairs_frame(open_study("ar"))["dataset"].tolist() == ["demo"] * 5


def test_unmappable_choice_names_file_row_field_and_writes_nothing(db_url, tmp_path):
    tasks = json.loads((DATA / "labelstudio-export.json").read_text(encoding="utf-8"))
    bad = tmp_path / "ls.json"
    bad.write_text(json.dumps(tasks), encoding="utf-8")  # no mapping: "Identical" is unknown
    with pytest.raises(InputError) as err:
        import_from_tool("labelstudio", bad, "binary", "ls")
    text = str(err.value)
    assert str(bad) in text and "row 4" in text and "annotations[2].result" in text
    assert "Identical" in text and "'Same' (same)" in text
    assert studies_svc.list_studies() == []


def test_contract_problem_is_reported_at_the_tool_row(db_url, tmp_path):
    tasks = json.loads((DATA / "labelstudio-export.json").read_text(encoding="utf-8"))
    tasks[2]["data"]["auto_label"] = 7
    bad = tmp_path / "ls.json"
    bad.write_text(json.dumps(tasks), encoding="utf-8")
    with pytest.raises(InputError) as err:
        import_from_tool(
            "labelstudio", bad, "binary", "ls", mapping=DATA / "labelstudio-mapping.yaml"
        )
    assert "row 3" in str(err.value) and "auto_label" in str(err.value)
    assert studies_svc.list_studies() == []


def test_missing_term_fields_are_named(db_url):
    with pytest.raises(InputError) as err:
        import_from_tool("argilla", DATA / "argilla-disk", "relatedness-0-3", "ar")
    assert "--term-fields" in str(err.value) and "term_a" in str(err.value)
    result = import_from_tool(
        "argilla",
        DATA / "argilla-disk",
        "relatedness-0-3",
        "ar",
        term_fields=("term_a", "term_b"),
    )
    assert "5f0c0d1e-aaaa-4bbb-8ccc-000000000001" in result["annotators"]


def test_cli_prints_mapped_and_skipped(db_url, cli):
    r = cli(
        "import",
        "labelstudio",
        DATA / "labelstudio-export.json",
        "--scale",
        "binary",
        "--study",
        "ls",
        "--mapping",
        DATA / "labelstudio-mapping.yaml",
    )
    assert r.exit_code == 0, r.stderr
    assert "6 tasks, 6 pairs, 3 annotators" in r.stdout and "12 ratings" in r.stdout
    assert "mapped 'Identical' -> same (1)" in r.stdout
    assert "skipped 1: cancelled (skipped) annotation" in r.stdout
    again = cli(
        "import", "prodigy", DATA / "prodigy-binary.jsonl", "--scale", "binary", "--study", "ls"
    )
    assert again.exit_code == 2 and "already exists" in again.stderr
    bad = cli(
        "import",
        "prodigy",
        DATA / "prodigy-db-out.jsonl",
        "--scale",
        "binary",
        "--study",
        "p",
        "--term-fields",
        "text_1",
    )
    assert bad.exit_code == 2 and "--term-fields" in bad.stderr


# --------------------------------------------------------------------------- bad exports
def _refused(tool, path, *fragments, scale="binary", **kw) -> None:
    """*tool*'s import of *path* fails with one clear error naming the file and each of
    *fragments*, and writes no study."""
    with pytest.raises(InputError) as err:
        import_from_tool(tool, path, scale, "bad", **kw)
    text = str(err.value)
    assert str(path) in text, text
    for f in fragments:
        assert f in text, text
    assert studies_svc.list_studies() == []


def test_invalid_json_is_refused(db_url, tmp_path):
    bad = tmp_path / "ls.json"
    bad.write_text('[{"id": 1, "data": ', encoding="utf-8")
    _refused("labelstudio", bad, "is not a JSON file")


def test_a_file_that_is_not_an_array_is_refused(db_url, tmp_path):
    bad = tmp_path / "ls.json"
    bad.write_text('{"id": 1}', encoding="utf-8")
    _refused("labelstudio", bad, "expected a JSON array of tasks")
    rows = tmp_path / "argilla.json"
    rows.write_text('{"records": []}', encoding="utf-8")
    _refused("argilla", rows, "must be a JSON array", scale="relatedness-0-3")


def test_a_record_that_is_not_an_object_is_refused_at_its_row(db_url, tmp_path):
    tasks = json.loads((DATA / "labelstudio-export.json").read_text(encoding="utf-8"))
    bad = tmp_path / "ls.json"
    bad.write_text(json.dumps([tasks[0], "task two"]), encoding="utf-8")
    _refused("labelstudio", bad, "row 2", "must be a JSON object")


def test_a_response_without_user_id_is_refused_at_its_row(db_url, tmp_path):
    folder = tmp_path / "argilla-disk"
    shutil.copytree(DATA / "argilla-disk", folder)
    records = json.loads((folder / "records.json").read_text(encoding="utf-8"))
    responses = next(iter(records[1]["responses"].values()))
    del responses[0]["user_id"]
    (folder / "records.json").write_text(json.dumps(records), encoding="utf-8")
    _refused(
        "argilla",
        folder,
        "row 2",
        "has no user_id",
        scale="relatedness-0-3",
        term_fields=("term_a", "term_b"),
    )


def test_a_missing_mapping_file_is_refused(db_url, tmp_path):
    with pytest.raises(InputError) as err:
        import_from_tool(
            "labelstudio",
            DATA / "labelstudio-export.json",
            "binary",
            "bad",
            mapping=tmp_path / "mapping.yaml",
        )
    assert str(tmp_path / "mapping.yaml") in str(err.value)
    assert "mapping file not found" in str(err.value)
    assert studies_svc.list_studies() == []


def test_text_that_is_not_utf8_is_refused(db_url, tmp_path):
    bad = tmp_path / "ls.json"
    bad.write_bytes('[{"data": {"term_1": "Pyrexie \u00e9"}}]'.encode("latin-1"))
    _refused("labelstudio", bad, "is not UTF-8 text")


@pytest.mark.parametrize(
    ("tool", "name", "text", "fragment"),
    [
        ("labelstudio", "ls.json", "[]", "holds no Label Studio tasks"),
        ("prodigy", "db-out.jsonl", "", "holds no Prodigy tasks"),
    ],
)
def test_an_empty_export_is_refused(db_url, tmp_path, tool, name, text, fragment):
    bad = tmp_path / name
    bad.write_text(text, encoding="utf-8")
    _refused(tool, bad, fragment)


def test_malformed_prodigy_jsonl_is_refused_at_its_line(db_url, tmp_path):
    lines = (DATA / "prodigy-binary.jsonl").read_text(encoding="utf-8").splitlines()
    bad = tmp_path / "db-out.jsonl"
    bad.write_text("\n".join([lines[0], lines[1], '{"text": "fever", '] + lines[2:]) + "\n")
    _refused("prodigy", bad, "row 3", "is not valid JSON")
