"""Reading RF2: file discovery, current state of Full files, exact strings, clear errors."""

from __future__ import annotations

import pytest

from data_schemas.errors import InputError
from medsim_annot.builders.rf2 import find_release_files, read_release
from medsim_annot.builders.synthetic_rf2 import (
    SyntheticRelease,
    sctid,
    verhoeff_check_digit,
    verhoeff_valid,
)


def _small() -> SyntheticRelease:
    r = SyntheticRelease()
    c = r.concept('Ploxin "sterile" marn (finding)', 'Marn "sterile" ploxin', "Café lerixia")
    r.add_description(
        c, "Marn ploxin", "syn", (("20180131", True), ("20200131", False), ("20220131", True))
    )
    r.add_concept(c, (("20210131", False, "900000000000207008"),))
    return r


def test_verhoeff_known_values_and_error_detection():
    assert verhoeff_check_digit("236") == "3"  # Verhoeff's worked example
    for metadata in (
        "900000000000012004",
        "900000000000003001",
        "900000000000013009",
        "900000000000523009",
        "900000000000526001",
        "900000000000527005",
    ):
        assert verhoeff_valid(metadata)  # the RF2 identifiers our constants name
    number = sctid(4711, "10")
    assert verhoeff_valid(number)
    for i in range(len(number)):  # every single-digit error is caught
        for k in range(1, 10):
            wrong = number[:i] + str((int(number[i]) + k) % 10) + number[i + 1 :]
            assert not verhoeff_valid(wrong)
    for i in range(len(number) - 1):  # every adjacent transposition too
        if number[i] != number[i + 1]:
            assert not verhoeff_valid(number[:i] + number[i + 1] + number[i] + number[i + 2 :])


def test_files_found_by_pattern_in_sub_folders_snapshot_preferred(tmp_path):
    _small().write(tmp_path / "release", "both")
    found = find_release_files(tmp_path)
    assert {k: v[0] for k, v in found.items()} == {
        "concept": "Snapshot",
        "description": "Snapshot",
        "association": "Snapshot",
    }
    assert found["description"][1][0].name == "sct2_Description_Snapshot-en_INT_20250131.txt"


def test_full_file_current_state_is_latest_row(tmp_path):
    _small().write(tmp_path, "full")
    release = read_release(tmp_path)
    assert release.release_type["concept"] == "Full"
    assert release.concepts["active"].tolist() == ["0"]  # latest row: inactivated
    syn = release.descriptions.set_index("term")
    assert syn.loc["Marn ploxin", "active"] == "1"  # reactivated in 2022
    assert syn.loc["Marn ploxin", "effectiveTime"] == "20220131"


def test_terms_read_exactly_quotes_and_non_ascii(tmp_path):
    _small().write(tmp_path, "snapshot")
    release = read_release(tmp_path)
    terms = set(release.descriptions["term"])
    assert 'Ploxin "sterile" marn (finding)' in terms
    assert "Café lerixia" in terms
    assert all(not t.endswith("\r") for t in terms)
    assert release.concepts["id"].iloc[0].isdigit()  # ids stay strings


def test_several_files_of_one_kind_are_read_together(tmp_path):
    _small().write(tmp_path / "int", "snapshot", edition="INT")
    other = SyntheticRelease(next_item=5000)
    other.concept("Quorvan tesk (disorder)", "Tesk quorvan")
    other.write(tmp_path / "ext", "snapshot", edition="XX1000000")
    release = read_release(tmp_path)
    assert len(release.files["concept"]) == 2
    assert "Tesk quorvan" in set(release.descriptions["term"])


def test_folder_without_rf2_files_is_a_clear_error(tmp_path):
    (tmp_path / "notes.txt").write_text("nothing here")
    with pytest.raises(InputError) as err:
        read_release(tmp_path)
    lines = err.value.lines()
    assert any("no RF2 concept file" in l and "sct2_Concept_Snapshot_*.txt" in l for l in lines)
    assert any("no RF2 description file" in l for l in lines)
    with pytest.raises(InputError, match="folder not found"):
        read_release(tmp_path / "missing")


def test_missing_association_file_only_matters_when_needed(tmp_path):
    _small().write(tmp_path, "snapshot")
    for p in tmp_path.rglob("der2_*"):
        p.unlink()
    with pytest.raises(InputError, match="no RF2 association file"):
        read_release(tmp_path)
    assert len(read_release(tmp_path, need_associations=False).associations) == 0


def _description_file(folder):
    return next(folder.rglob("sct2_Description_*"))


def test_missing_required_column_names_file_row_and_column(tmp_path):
    _small().write(tmp_path, "snapshot")
    path = _description_file(tmp_path)
    text = path.read_bytes().decode("utf-8").replace("\tterm\t", "\twording\t", 1)
    path.write_bytes(text.encode("utf-8"))
    with pytest.raises(InputError) as err:
        read_release(tmp_path)
    assert err.value.lines() == [
        f"{path}, row 1, column 'term': required RF2 column is missing from the header"
    ]


@pytest.mark.parametrize(
    "mutate,fragment,row,column",
    [
        (
            lambda lines: lines[:2] + [lines[2].replace("\t1\t", "\tyes\t", 1)] + lines[3:],
            "active must be 0 or 1, not 'yes'",
            3,
            "active",
        ),
        (
            lambda lines: lines[:1] + [lines[1].replace("2020", "20x0", 1)] + lines[2:],
            "effectiveTime must be YYYYMMDD",
            2,
            "effectiveTime",
        ),
        (
            lambda lines: lines + ["123\t20200131\t1"],
            "has 3 tab-separated fields but the header has 9",
            6,
            None,
        ),
    ],
)
def test_bad_values_are_clear_errors(tmp_path, mutate, fragment, row, column):
    _small().write(tmp_path, "snapshot")
    path = _description_file(tmp_path)
    lines = path.read_bytes().decode("utf-8").split("\r\n")[:-1]
    path.write_bytes(("\r\n".join(mutate(lines)) + "\r\n").encode("utf-8"))
    with pytest.raises(InputError) as err:
        read_release(tmp_path)
    problem = err.value.problems[0]
    assert fragment in problem.message and err.value.file == str(path)
    assert problem.row == row and problem.column == column


def test_non_utf8_file_is_a_clear_error(tmp_path):
    _small().write(tmp_path, "snapshot")
    path = _description_file(tmp_path)
    path.write_bytes(path.read_bytes().replace("é".encode(), b"\xe9"))
    with pytest.raises(InputError, match="not UTF-8") as err:
        read_release(tmp_path)
    assert err.value.problems[0].row == 4  # header, FSN, quoted synonym, then this line
