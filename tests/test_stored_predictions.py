"""Predictions stored with a study (issue 36b), on SQLite and PostgreSQL: ``medsim study
predictions add|list|adjudicators``; versions and events; bad files refused whole (file, row
and column named, nothing stored); listed in the gold manifest; never sent to an annotator
(the pair views, the widget's JSON and the rating endpoint's responses are scanned); shown
to adjudicators only when the admin allows it; migration 0013 up and down."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from starlette.applications import Starlette
from starlette.testclient import TestClient
from streamlit.testing.v1 import AppTest

from data_schemas.scales import BINARY
from data_schemas.widget import RATINGS_PATH
from medsim_annot import ratings_api
from medsim_annot.services import annotation as A
from medsim_annot.services import stored_predictions as P
from medsim_annot.services.activity import activity
from medsim_annot.services.gold.export import export_gold
from medsim_annot.services.people import tokens
from medsim_annot.services.people.admins import AdminIdentity
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.rating_queue import widget_pair
from medsim_annot.services.studies import create_study
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all, get_engine
from medsim_annot.storage.db import MIGRATIONS

MODEL = "ZZMODELNAME"
N = 8


def _score(i: int) -> float:
    # Distinctive digits: any leak of a score into a response shows up in a text scan.
    return round(0.1 + i * 0.1 + 0.0987654, 7)


@pytest.fixture
def study(backend_url, tmp_path):
    dispose_all()
    pairs = pd.DataFrame(
        {
            "pair_id": [f"p{i}" for i in range(N)],
            "term_1": [f"first {i}" for i in range(N)],
            "term_2": [f"second {i}" for i in range(N)],
            "auto_label": pd.array([i % 2 for i in range(N)], dtype="Int64"),
        }
    )
    res = create_study("pred", pairs, BINARY, ["doc", "other"], engine=get_engine(backend_url))
    scores = tmp_path / "scores.csv"
    pd.DataFrame(
        {"pair_id": [f"p{i}" for i in range(N)], "cosine": [_score(i) for i in range(N)]}
    ).to_csv(scores, index=False)
    codes = {a["name"]: a["access_code"] for a in res["annotators"]}
    yield {"scores": scores, "codes": codes, "tmp": tmp_path}
    dispose_all()


def test_cli_adds_versions_lists_them_and_records_events(study, cli):
    r = cli("study", "predictions", "add", "pred", study["scores"], "--name", MODEL)
    assert r.exit_code == 0, r.stderr
    assert f"'{MODEL}' version 1" in r.stdout and f"{N} pairs" in r.stdout
    r2 = cli("study", "predictions", "add", "pred", study["scores"], "--name", MODEL, "--json")
    assert r2.exit_code == 0 and json.loads(r2.stdout)["version"] == 2
    listed = json.loads(cli("study", "predictions", "list", "pred", "--json").stdout)
    assert [v["version"] for v in listed["versions"]] == [1, 2]
    assert listed["versions"][0]["score_column"] == "cosine"
    assert len(listed["versions"][0]["sha256"]) == 64
    assert listed["show_to_adjudicators"] is False
    s = P.stored_predictions(open_study("pred"))
    assert s is not None and s.name == MODEL and s.attrs["version"] == 2
    assert s.reindex([f"p{i}" for i in range(N)]).tolist() == [_score(i) for i in range(N)]
    events = activity(study=open_study("pred"))
    added = events[events["action"] == "predictions_added"]
    assert len(added) == 2


def test_default_name_is_the_score_column(study):
    row = P.add_predictions(open_study("pred"), study["scores"])
    assert (row.name, row.version, row.pairs) == ("cosine", 1, N)


@pytest.mark.parametrize(
    "rows, says",
    [
        ([("p0", "0.5"), ("nope", "0.1")], ["row 3", "pair_id", "'nope' is not a pair"]),
        ([("p0", "0.5"), ("p1", "high")], ["row 3", "cosine", "'high' is not a number"]),
        ([("p0", "0.5"), ("p1", "")], ["row 3", "cosine", "missing"]),
    ],
)
def test_bad_files_are_refused_whole(study, cli, rows, says):
    bad = study["tmp"] / "bad.csv"
    full = [(f"p{i}", str(_score(i))) for i in range(2, N)] + rows
    pd.DataFrame(full, columns=["pair_id", "cosine"]).to_csv(bad, index=False)
    r = cli("study", "predictions", "add", "pred", bad)
    assert r.exit_code == 2
    text = r.stderr
    assert "bad.csv" in text
    # the rows of the bad entries are the last two data rows: header is row 1
    last = len(full) + 1
    for s in says:
        assert s.replace("row 3", f"row {last}") in text, text
    assert P.prediction_versions(open_study("pred")) == []


def test_a_file_missing_pairs_or_with_two_columns_is_refused(study, cli):
    part = study["tmp"] / "part.csv"
    pd.DataFrame({"pair_id": ["p0"], "cosine": [0.3]}).to_csv(part, index=False)
    r = cli("study", "predictions", "add", "pred", part)
    assert r.exit_code == 2 and f"no score for {N - 1} of the study's {N} pairs" in r.stderr
    two = study["tmp"] / "two.csv"
    pd.DataFrame({"pair_id": ["p0"], "a": [0.3], "b": [0.1]}).to_csv(two, index=False)
    r = cli("study", "predictions", "add", "pred", two)
    assert r.exit_code == 2 and "score column (--score-column)" in r.stderr
    assert P.prediction_versions(open_study("pred")) == []


def test_predictions_never_reach_an_annotator(study):
    """Scan what an annotator's browser gets: every pair view, the widget's JSON and the
    rating endpoint's responses (resume and commit) carry neither the model's name nor any
    score."""
    P.add_predictions(open_study("pred"), study["scores"], name=MODEL)
    P.set_show_to_adjudicators(open_study("pred"), True)  # adjudicators only
    secrets = [MODEL, "cosine", *(repr(_score(i)) for i in range(N)), "predict", "score"]
    texts = []
    for who in ("doc", "other"):
        ident = authenticate_annotator(study["codes"][who])
        assert ident is not None
        total = A.queue_state(ident.annotator_id).total
        for p in range(total):
            view = A.get_pair(ident.annotator_id, p)
            texts.append(repr(view))
            texts.append(json.dumps(widget_pair(view)))
        tok = tokens.mint_token(ident.annotator_id, ident.credential_version).token
        client = TestClient(Starlette(routes=ratings_api.routes()))
        headers = {"Authorization": f"Bearer {tok}", "Content-Type": "application/json"}
        resume = client.post(RATINGS_PATH, content=json.dumps({"need": -1}), headers=headers)
        assert resume.status_code == 200
        texts.append(resume.text)
        entry = {"seq": 1, "position": 0, "value": "same", "version": 0, "elapsed_ms": 900}
        commit = client.post(
            RATINGS_PATH, content=json.dumps({"pending": [entry], "at": 1}), headers=headers
        )
        assert commit.status_code == 200
        texts.append(commit.text)
    blob = "\n".join(texts)
    for s in secrets:
        assert s not in blob, s


def test_adjudicators_see_the_score_only_when_allowed(study, cli):
    P.add_predictions(open_study("pred"), study["scores"], name=MODEL)
    assert P.adjudicator_score(open_study("pred"), "p3") is None
    r = cli("study", "predictions", "adjudicators", "pred", "on")
    assert r.exit_code == 0
    line = P.adjudicator_score(open_study("pred"), "p3")
    assert line == f"model {MODEL} (v1): {_score(3):.3f}"
    cli("study", "predictions", "adjudicators", "pred", "off")
    assert P.adjudicator_score(open_study("pred"), "p3") is None


def test_gold_manifest_lists_the_stored_versions(study, tmp_path):
    P.add_predictions(open_study("pred"), study["scores"], name=MODEL)
    out = export_gold(open_study("pred"), tmp_path / "gold.csv")
    listed = out.manifest["predictions"]
    assert [(p["name"], p["version"], p["pairs"]) for p in listed] == [(MODEL, 1, N)]
    assert listed[0]["source"] == "scores.csv"  # the file's name, not where it was
    assert not any(repr(_score(i)) in json.dumps(listed) for i in range(N))
    assert (
        list(out.manifest).index("predictions") == list(out.manifest).index("ratings_version") + 2
    )  # right after the adjudication entry


def test_migration_0013_adds_the_tables_and_goes_back(tmp_path):
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'm.db'}")
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0013")
        tables = set(sa.inspect(conn).get_table_names())
        assert {"predictions", "prediction_scores"} <= tables
        cols = {c["name"] for c in sa.inspect(conn).get_columns("assignments")}
        assert "draw_probability" in cols
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0012")
        tables = set(sa.inspect(conn).get_table_names())
        assert "predictions" not in tables and "prediction_scores" not in tables
        cols = {c["name"] for c in sa.inspect(conn).get_columns("assignments")}
        assert "draw_probability" not in cols
    engine.dispose()


def test_setup_page_stores_an_upload_and_names_a_bad_one(db_url):
    """The Predictions tab of Study setup: an upload is stored as a version (named as
    uploaded, never by the server's temporary path); a bad file is refused with its row and
    nothing is stored; the adjudicators' checkbox sets the study setting."""
    dispose_all()
    pairs = pd.DataFrame({"pair_id": ["p0", "p1"], "term_1": ["a", "b"], "term_2": ["c", "d"]})
    create_study("s", pairs, BINARY, ["ann"])
    root = Path(__file__).resolve().parents[1]
    at = AppTest.from_file(str(root / "pages" / "setup.py"), default_timeout=60)
    at.session_state["auth_role"] = "admin"
    at.session_state["auth_admin"] = AdminIdentity("alice", "named")
    at.run()
    bad = b"pair_id,cosine\np0,0.5\np1,high\n"
    at.file_uploader(key="setup_pred_file").set_value(("my scores.csv", bad, "text/csv")).run()
    at.button(key="setup_pred_add").click().run()
    assert not at.exception
    shown = " ".join(e.value for e in at.error).replace("\\", "")
    assert "my scores.csv" in shown and "row 3" in shown and "Nothing was stored" in shown
    assert "medsim-upload" not in shown
    assert P.prediction_versions(open_study("s")) == []
    good = b"pair_id,cosine\np0,0.5\np1,0.25\n"
    at.file_uploader(key="setup_pred_file").set_value(("my scores.csv", good, "text/csv")).run()
    at.button(key="setup_pred_add").click().run()
    assert not at.exception
    rows = P.prediction_versions(open_study("s"))
    assert [(r.name, r.version, r.source) for r in rows] == [("cosine", 1, "my scores.csv")]
    at.checkbox(key="setup_pred_adjudicators").check().run()
    assert P.adjudicators_see_predictions(open_study("s"))
    dispose_all()
