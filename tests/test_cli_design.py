"""``medsim study create`` design options and the annotator commands."""

from __future__ import annotations

import json
from collections import Counter

import pandas as pd

from medsim_annot.services import studies as svc
from medsim_annot.services.people import annotators as asvc
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.study_handle import open_study


def _pairs_file(tmp_path, per_group=4):
    rows = []
    for ds in ("A", "B"):
        for diff in ("easy", "hard"):
            for label in (0, 1):
                for i in range(per_group):
                    rows.append(
                        {
                            "pair_id": f"{ds}{diff}{label}{i}",
                            "term_1": f"x{ds}{diff}{label}{i}",
                            "term_2": f"y{i}",
                            "auto_label": label,
                            "dataset": ds,
                            "difficulty": diff,
                            "negative_strategy": "random",
                        }
                    )
    path = tmp_path / "pairs.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_create_with_sample_k_of_n_calibration_duplicates(db_url, cli, tmp_path):
    path = _pairs_file(tmp_path)
    r = cli(
        "study",
        "create",
        "d1",
        "--pairs",
        path,
        "--annotators",
        "a,b,c,d,e",
        "--sample-per-group",
        "2,3",
        "--group-by",
        "dataset,difficulty",
        "--seed",
        "5",
        "--per-item",
        "3",
        "--calibration",
        "2",
        "--duplicates",
        "0.1",
        "--json",
    )
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["items"] == 4 * 5
    cfg = open_study("d1").config
    assert cfg["seed"] == 5 and cfg["per_item"] == 3 and cfg["calibration"] == 2
    assert cfg["group_by"] == ["dataset", "difficulty"] and cfg["pairs_file"] == "pairs.csv"
    pairs = svc.pairs_frame(open_study("d1"))
    assert pairs.groupby(["dataset", "difficulty", "auto_label"]).size().tolist() == [3, 2] * 4
    table = asvc.annotators(open_study("d1"))
    # 2 calibration + 18 * 3 / 5 main (10 or 11) + 10% duplicates
    assert table["total"].between(12, 15).all()
    # Same seed, same design.
    r2 = cli(
        "study",
        "create",
        "d2",
        "--pairs",
        path,
        "--annotators",
        "a,b,c,d,e",
        "--sample-per-group",
        "2,3",
        "--group-by",
        "dataset,difficulty",
        "--seed",
        "5",
        "--per-item",
        "3",
        "--calibration",
        "2",
        "--duplicates",
        "0.1",
    )
    assert r2.exit_code == 0 and "seed 5" in r2.stdout
    assert asvc.annotators(open_study("d2"))["total"].tolist() == table["total"].tolist()


def test_create_short_group_fails_and_writes_nothing(db_url, cli, tmp_path):
    path = _pairs_file(tmp_path, per_group=2)
    r = cli(
        "study", "create", "d3", "--pairs", path, "--annotators", "a", "--sample-per-group", "3,3"
    )
    assert r.exit_code == 2 and "wanted" in r.stderr
    assert svc.list_studies() == []
    r = cli(
        "study", "create", "d3", "--pairs", path, "--annotators", "a", "--sample-per-group", "x"
    )
    assert r.exit_code == 2 and "P,N" in r.stderr


def test_annotator_commands(db_url, cli, tmp_path):
    path = _pairs_file(tmp_path, per_group=1)
    assert cli("study", "create", "s", "--pairs", path, "--annotators", "a").exit_code == 0
    r = cli("annotator", "add", "s", "bob")
    assert r.exit_code == 0
    code = r.stdout.splitlines()[0].split(": ")[1]
    assert authenticate_annotator(code).name == "bob"
    assert cli("annotator", "rename", "s", "bob", "robert").exit_code == 0
    r = cli("annotator", "issue-code", "s", "robert")
    new_code = r.stdout.strip().split(": ")[1]
    assert authenticate_annotator(code) is None
    assert authenticate_annotator(new_code).name == "robert"
    assert cli("annotator", "revoke", "s", "robert").exit_code == 0
    assert authenticate_annotator(new_code) is None
    rows = json.loads(cli("study", "annotators", "s", "--json").stdout)
    assert Counter(r["active"] for r in rows) == Counter({True: 1, False: 1})
    assert cli("annotator", "rename", "s", "nobody", "x").exit_code == 2
