"""AppTest of the dashboard's practice section: the practice report is shown for a study with
practice pairs (never for one without), and the admin unlocks and sends back a doctor by
name through it, as the services do (recorded as events)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from data_schemas.pairs import validate_pairs
from data_schemas.scales import BINARY
from medsim_annot.services import dashboard as dsvc
from medsim_annot.services import studies as svc
from medsim_annot.services.activity import activity
from medsim_annot.services.practice.report import practice_report
from medsim_annot.services.study_handle import open_study

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def app_db(db_url, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    dsvc.clear_cache()
    return db_url


def _pairs(practice: bool) -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "term_1": ["x", "y", "fever"],
            "term_2": ["z", "w", "pyrexia"],
            "practice_answer": ["", "", "same" if practice else ""],
            "explanation": ["", "", "Synonyms." if practice else ""],
        }
    )
    return validate_pairs(frame)


def _practice_table(at: AppTest):
    for df in at.dataframe:
        if "answered_all_rounds" in df.value.columns:
            return df.value
    return None


def test_practice_section_unlock_and_send_back(app_db):
    svc.create_study("plain", _pairs(False), BINARY, ["A"])
    svc.create_study("prac", _pairs(True), BINARY, ["A", "B"])
    at = AppTest.from_file(str(ROOT / "pages" / "dashboard.py"), default_timeout=120)
    at.session_state["auth_role"] = "admin"
    at.run()
    at.selectbox(key="dashboard_study").select("plain").run()
    assert not at.exception and _practice_table(at) is None
    at.selectbox(key="dashboard_study").select("prac").run()
    assert not at.exception, at.exception
    table = _practice_table(at)
    assert table is not None and list(table["state"]) == ["practising", "practising"]
    # Inside a form the choices travel with the submit (one run).
    at.selectbox(key="dashboard_practice_unlock_who").select("B")
    next(b for b in at.button if b.label == "Unlock the real pairs").click().run()
    assert not at.exception, at.exception
    states = {a.annotator: a.state for a in practice_report(open_study("prac")).annotators}
    assert states == {"A": "practising", "B": "unlocked"}
    at.selectbox(key="dashboard_practice_back_who").select("B")
    at.text_input(key="dashboard_practice_back_why").input("drift on window 3")
    next(b for b in at.button if b.label == "Send back to practice").click().run()
    assert not at.exception, at.exception
    rep = practice_report(open_study("prac"))
    assert {a.annotator: (a.state, a.round) for a in rep.annotators}["B"] == ("practising", 1)
    kinds = set(activity(study=open_study("prac"))["action"])
    assert {"practice_unlocked", "practice_sent_back"} <= kinds


def test_setup_page_splits_practice_pairs_off(app_db, tmp_path, monkeypatch):
    from medsim_annot.services.people.admins import AdminIdentity

    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    frame = pd.DataFrame(
        {
            "term_1": [f"x{i}" for i in range(5)] + ["fever"],
            "term_2": [f"y{i}" for i in range(5)] + ["pyrexia"],
            "practice_answer": [""] * 5 + ["same"],
            "explanation": [""] * 5 + ["Synonyms."],
        }
    )
    frame.to_csv(tmp_path / "data" / "pairs.csv", index=False)
    at = AppTest.from_file(str(ROOT / "pages" / "setup.py"), default_timeout=120)
    at.session_state["auth_role"] = "admin"
    at.session_state["auth_admin"] = AdminIdentity("alice", "named")
    at.run()
    at.radio(key="setup_source").set_value("Choose a file in data/").run()
    at.selectbox(key="setup_file").select("data/pairs.csv").run()
    at.text_input(key="setup_name").input("trained").run()
    at.text_area(key="setup_annotators").input("ann").run()
    assert any("5 pairs" in c.value and "1 practice pair," in c.value for c in at.caption)
    at.button(key="setup_create").click().run()
    assert not at.exception, at.exception
    rep = practice_report(open_study("trained"))
    assert rep.pairs == 1 and [a.state for a in rep.annotators] == ["practising"]
