"""AppTest: the dashboard's "Sequential audit" panel (per group n, accuracy and precision with
Wilson intervals, pairs still needed, serving/stopped, the stopping switch) and the Study
setup options for 2 + 1 and the sequential audit (the same service as the CLI)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from data_schemas.scales import BINARY
from medsim_annot.services import activity
from medsim_annot.services import dashboard as dsvc
from medsim_annot.services import stopping as S
from medsim_annot.services import studies as svc
from medsim_annot.services.people.admins import AdminIdentity
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all
from tests.conftest import ROOT
from tests.test_stopping import PER_GROUP, _create, _pairs, _rate_all

TIMEOUT = 120


@pytest.fixture
def db(db_url, monkeypatch):
    monkeypatch.delenv("MEDSIM_ADMIN_PASSWORD", raising=False)
    monkeypatch.syspath_prepend(str(ROOT))
    dispose_all()
    dsvc.clear_cache()
    yield db_url
    dispose_all()


def _page(path: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / path), default_timeout=TIMEOUT)
    at.session_state["auth_role"] = "admin"
    at.session_state["auth_admin"] = AdminIdentity("alice", "named")
    return at.run()


def _status_table(at: AppTest):
    for df in at.dataframe:
        if "status" in df.value.columns and "pairs_needed" in df.value.columns:
            return df.value
    raise AssertionError("no sequential audit table")


def test_dashboard_panel_and_switch(db):
    ids = _create()
    _rate_all(ids)
    at = _page("pages/dashboard.py")
    assert not at.exception, at.exception
    assert any(h.value == "Sequential audit" for h in at.header)
    assert any("Wilson score interval, 95%" in c.value for c in at.caption)
    table = _status_table(at).set_index("group")
    want = S.audit_status(open_study("seq")).groups.set_index("group")
    assert table["status"].to_dict() == {"easy": "stopped", "hard": "serving"}
    assert table.loc["easy", "accuracy"] == 1.0 and table.loc["easy", "pairs_needed"] == 0
    assert table.loc["easy", "withdrawn_slots"] > 0
    for col in ("n", "accuracy_low", "accuracy_high", "precision", "pairs_needed"):
        assert table[col].tolist() == want[col].tolist()
    # The hard group (accuracy 0.5) still needs pairs to reach ±TARGET.
    assert table.loc["hard", "pairs_needed"] > 0 and table.loc["hard", "n"] == PER_GROUP
    assert any(c.proto.spec and "Sequential audit" in c.proto.spec for c in at.get("plotly_chart"))
    # The switch: off restores the withdrawn slots, with the admin named in the log.
    at.toggle(key="dashboard_stopping:seq").set_value(False).run()
    assert not at.exception, at.exception
    after = S.audit_status(open_study("seq"))
    assert not after.enabled and after.groups["withdrawn_slots"].sum() == 0
    log = activity.activity()
    assert log["action"].tolist()[0] == "stopping_off"
    assert log["actor"].tolist()[0] == "admin:alice"
    assert _status_table(at).set_index("group")["status"].to_dict() == {
        "easy": "serving",
        "hard": "serving",
    }


def test_dashboard_without_target_has_no_panel(db):
    svc.create_study("plain", _pairs(4), BINARY, ["a"])
    at = _page("pages/dashboard.py")
    assert not at.exception, at.exception
    assert not any(h.value == "Sequential audit" for h in at.header)


def test_setup_creates_a_two_plus_one_study_with_a_sequential_audit(db, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    _pairs(10).to_csv(tmp_path / "data" / "pairs.csv", index=False)
    at = _page("pages/setup.py")
    assert not at.exception, at.exception
    at.radio(key="setup_source").set_value("Choose a file in data/").run()
    at.selectbox(key="setup_file").select("data/pairs.csv").run()
    at.text_input(key="setup_name").input("audited").run()
    at.radio(key="setup_design").set_value(
        "Each pair rated by k of the n annotators (balanced)"
    ).run()
    at.number_input(key="setup_k").set_value(2).run()
    at.checkbox(key="setup_tiebreak").check().run()
    at.checkbox(key="setup_sequential").check().run()
    at.number_input(key="setup_target_ci").set_value(0.1).run()
    at.multiselect(key="setup_seq_group_by").set_value(["dataset"]).run()
    at.text_area(key="setup_annotators").input("ann\nbob\ncyd").run()
    assert not at.error, [e.value for e in at.error]
    at.button(key="setup_create").click().run()
    assert not at.exception, at.exception
    cfg = open_study("audited").config
    assert cfg["tiebreak"] == {"tolerance": 0.0} and cfg["per_item"] == 2
    assert cfg["stopping"]["target"] == 0.1 and cfg["stopping"]["group_by"] == ["dataset"]
    assert S.audit_status(open_study("audited")).groups["group"].tolist() == ["easy", "hard"]


def test_setup_refuses_a_group_column_the_file_lacks(db, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    _pairs(4).drop(columns="auto_label").to_csv(tmp_path / "data" / "pairs.csv", index=False)
    at = _page("pages/setup.py")
    at.radio(key="setup_source").set_value("Choose a file in data/").run()
    at.selectbox(key="setup_file").select("data/pairs.csv").run()
    at.text_input(key="setup_name").input("x").run()
    at.checkbox(key="setup_sequential").check().run()
    at.text_area(key="setup_annotators").input("ann").run()
    assert any("auto_label" in e.value.replace("\\", "") for e in at.error)
    assert at.button(key="setup_create").disabled
