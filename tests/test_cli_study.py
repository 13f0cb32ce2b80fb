"""The CLI forms users' scripts rely on: create -> export round trip, imports, demo, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from data_schemas import columns as C
from medsim_annot.io import read_table
from medsim_annot.services import studies as svc
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import session_scope
from medsim_annot.storage.annotation import insert_ratings
from medsim_annot.storage.models import utcnow
from tests import published as P

EXAMPLES = Path(__file__).resolve().parents[1] / "data_schemas" / "examples"


def test_create_json_and_export_round_trip(db_url, cli, tmp_path):
    r = cli(
        "study",
        "create",
        "audit-1",
        "--pairs",
        EXAMPLES / "pairs.csv",
        "--scale",
        "binary",
        "--annotators",
        "dr_a,dr_b,dr_c",
        "--file-order",
        "--json",
    )
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert {"study", "items", "annotators"} <= set(out)
    assert out["study"] == "audit-1" and out["items"] == 4
    assert [a["name"] for a in out["annotators"]] == ["dr_a", "dr_b", "dr_c"]
    assert all(len(a["access_code"]) >= 26 for a in out["annotators"])
    # Ratings arrive (as the app saves them), then the export holds the current values.
    from sqlalchemy import select

    from medsim_annot.storage.models import Annotator, Assignment

    info = open_study("audit-1")
    with session_scope() as s:
        slots = s.execute(
            select(Assignment.id, Assignment.item_id, Assignment.annotator_id)
            .join(Annotator, Annotator.id == Assignment.annotator_id)
            .where(Annotator.name == "dr_a")
            .order_by(Assignment.position)
        ).all()
        for (sid, iid, aid), value in zip(slots, ["same", "not_same", "dont_know"]):
            insert_ratings(
                s,
                [
                    {
                        "study_id": info.id,
                        "annotator_id": aid,
                        "item_id": iid,
                        "assignment_id": sid,
                        "value": value,
                        "rated_at": utcnow(),
                    }
                ],
            )
    dest = tmp_path / "ratings.csv"
    r = cli("study", "export", "audit-1", "--out", dest)
    assert r.exit_code == 0, r.stderr
    back = read_table(dest)
    assert list(back.columns) == [
        C.PAIR_ID,
        C.ANNOTATOR,
        C.RATING,
        C.RATED_AT,
        C.COMMENT,
        C.UNCLEAR,
    ]
    assert list(back[C.RATING]) == ["same", "not_same", "dont_know"]
    assert all(t.endswith("Z") for t in back[C.RATED_AT])
    # The export is a valid ratings file: it imports as a completed study.
    r = cli(
        "import",
        "ratings",
        dest,
        "--pairs",
        EXAMPLES / "pairs.csv",
        "--scale",
        "binary",
        "--study",
        "audit-1-copy",
    )
    assert r.exit_code == 0, r.stderr
    again = svc.export_ratings(open_study("audit-1-copy"))
    assert list(again[C.RATING]) == list(back[C.RATING])
    assert list(again[C.RATED_AT]) == list(back[C.RATED_AT])


def test_list_json(db_url, cli):
    r = cli("study", "create", "s", "--pairs", EXAMPLES / "pairs.csv", "--annotators", "a")
    assert r.exit_code == 0
    rows = json.loads(cli("study", "list", "--json").stdout)
    assert rows[0]["study"] == "s" and rows[0]["items"] == 4 and rows[0]["scale"] == "binary"


def test_import_ehr_rel_cli(db_url, cli, ehr_rel_a, tmp_path):
    r = cli("import", "ehr-rel", ehr_rel_a, "--study", "ehr-a", "--json")
    assert r.exit_code == 0, r.stderr
    shape = P.EHR_REL_A_SHAPE.value
    assert json.loads(r.stdout)["ratings"] == shape["items"] * shape["annotators"]
    r = cli("import", "ehr-rel", ehr_rel_a, "--study", "ehr-a")
    assert r.exit_code == 2 and "already exists" in r.stderr


def test_custom_scale_file(db_url, cli, tmp_path):
    pairs = tmp_path / "p.csv"
    pairs.write_text("term_1,term_2\nmild asthma,severe asthma\n")
    r = cli(
        "study",
        "create",
        "sev",
        "--pairs",
        pairs,
        "--scale",
        EXAMPLES / "scale.yaml",
        "--annotators",
        "a",
    )
    assert r.exit_code == 0, r.stderr
    assert open_study("sev").scale.name == "severity-1-5"


def test_unknown_scale_and_study(db_url, cli, tmp_path):
    r = cli("study", "create", "x", "--pairs", EXAMPLES / "pairs.csv", "--scale", "likert-9")
    assert r.exit_code == 2 and "neither a built-in scale" in r.stderr
    r = cli("study", "export", "nope", "--out", tmp_path / "x.csv")
    assert r.exit_code == 2 and "no study named 'nope'" in r.stderr
    assert not (tmp_path / "x.csv").exists()


def test_demo_seeds_once(db_url, cli, tmp_path, monkeypatch):
    monkeypatch.delenv("MEDSIM_ADMIN_PASSWORD", raising=False)
    creds = tmp_path / "creds.txt"
    r = cli("demo", "--credentials", creds)
    assert r.exit_code == 0, r.stderr
    assert "admin password: demo-" in r.stdout and "dr_ahmed" in r.stdout
    assert oct(creds.stat().st_mode)[-3:] == "600"
    listing = {s.study: s for s in svc.list_studies()}
    assert listing["demo-binary"].items == 120 and listing["demo-relatedness"].items == 40
    assert 0 < listing["demo-binary"].rated < listing["demo-binary"].assigned
    pairs = svc.pairs_frame(open_study("demo-binary"))
    groups = pairs.groupby([C.DATASET, C.DIFFICULTY, C.NEGATIVE_STRATEGY]).size()
    assert len(groups) == 8 and set(pairs[C.AUTO_LABEL]) == {0, 1}
    r = cli("demo", "--credentials", creds)  # second run: nothing new, the same sign-in shown
    assert r.exit_code == 0 and "dr_ahmed" in r.stdout
    assert len(svc.list_studies()) == 2


def test_entry_point_exit_code_2(db_url, tmp_path, python):
    """The installed entry point turns input errors into one sentence on stderr and exit 2."""
    import subprocess

    bad = tmp_path / "bad.csv"
    bad.write_text("term_1\nfever\n")
    proc = subprocess.run(
        [python, "-m", "medsim_annot", "study", "create", "x", "--pairs", str(bad)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"error: {bad}, column 'term_2': required column is missing"
    assert proc.stdout == ""


@pytest.mark.parametrize("backend_url", ["postgres"], indirect=True)
def test_demo_is_not_seeded_into_a_database_server(backend_url, cli, tmp_path, monkeypatch):
    """`make run` with a production PostgreSQL URL seeds no demo studies, makes no admin and
    leaves an earlier demo's credentials file alone; `medsim migrate` (make serve) creates
    the schema only."""
    from medsim_annot.services.people import admins

    monkeypatch.delenv("MEDSIM_ADMIN_PASSWORD", raising=False)
    creds = tmp_path / "demo-credentials.txt"
    creds.write_text("an earlier laptop demo\n")
    r = cli("migrate")
    assert r.exit_code == 0 and "is at schema" in r.stdout and "secret" not in r.stdout
    r = cli("demo", "--credentials", creds)
    assert r.exit_code == 0 and "not seeded" in r.stdout and "make serve" in r.stdout
    assert svc.list_studies() == []
    assert admins.list_admins() == []
    assert creds.read_text() == "an earlier laptop demo\n"
    r = cli("demo", "--server-store", "--credentials", creds)  # asked for: seeded
    assert r.exit_code == 0 and len(svc.list_studies()) == 2


def test_make_serve_migrates_and_seeds_nothing():
    """The production target runs `medsim migrate` and never the demo."""
    import re

    makefile = (Path(__file__).resolve().parents[1] / "Makefile").read_text()
    serve = re.search(r"^serve:(.*?)(?=^\S)", makefile, re.S | re.M)
    assert serve, "no serve target"
    body = serve.group(0)
    assert "medsim_annot migrate" in body and "demo" not in body
    assert "streamlit run serve.py" in body


def test_create_shuffles_by_default_with_a_recorded_seed(db_url, cli, tmp_path):
    """Without --seed the CLI serves a shuffled order (as the browser does), records the
    fresh seed in the study and prints it; --file-order is the explicit exception."""
    from medsim_annot.services import annotation as A
    from medsim_annot.services.people.annotators import authenticate_annotator

    n = 40
    pairs = tmp_path / "sorted.csv"  # all "same" pairs first, as in the trial's file
    pairs.write_text("pair_id,term_1,term_2\n" + "".join(f"p{i:02d},a{i},b{i}\n" for i in range(n)))
    r = cli("study", "create", "blind", "--pairs", pairs, "--annotators", "a,b", "--json")
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    seed = open_study("blind").config["seed"]
    assert isinstance(seed, int) and seed == out["config"]["seed"]
    served = []
    for ann in out["annotators"]:
        ident = authenticate_annotator(ann["access_code"])
        order = [
            A.get_pair(ident.annotator_id, pos, credential=ident.credential_version).term_1
            for pos in range(n)
        ]
        served.append(order)
        assert sorted(order) == sorted(f"a{i}" for i in range(n))
    file_order = [f"a{i}" for i in range(n)]
    assert all(order != file_order for order in served)
    r = cli("study", "create", "blind-2", "--pairs", pairs, "--annotators", "a")
    assert r.exit_code == 0
    assert f"seed {open_study('blind-2').config['seed']}" in r.stdout
    r = cli("study", "create", "ordered", "--pairs", pairs, "--annotators", "a", "--file-order")
    assert r.exit_code == 0
    assert open_study("ordered").config.get("order") == "file"
    r = cli(
        "study", "create", "x", "--pairs", pairs, "--annotators", "a", "--file-order", "--seed", "3"
    )
    assert r.exit_code == 2 and "--file-order" in r.stderr


def test_create_without_annotators_is_refused(db_url, cli):
    r = cli("study", "create", "empty", "--pairs", EXAMPLES / "pairs.csv")
    assert r.exit_code == 2 and "--annotators" in r.stderr
    assert svc.list_studies() == []
