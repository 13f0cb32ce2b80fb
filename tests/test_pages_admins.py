"""AppTest: the Activity page, the SSO tab of Study setup, named-admin and throttled sign-in."""

from __future__ import annotations

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from data_schemas.scales import BINARY
from medsim_annot.services import activity
from medsim_annot.services.people import admins, sso
from medsim_annot.services.people.admins import AdminIdentity
from medsim_annot.services.studies import create_study
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all
from tests.conftest import ROOT

TIMEOUT = 60


@pytest.fixture
def db(db_url, monkeypatch):
    monkeypatch.delenv("MEDSIM_ADMIN_PASSWORD", raising=False)
    dispose_all()
    yield db_url
    dispose_all()


BEA = {"sub": "x", "email": "bea@hospital.example", "email_verified": True}


def _study():
    pairs = pd.DataFrame({"pair_id": ["p1", "p2"], "term_1": ["a", "b"], "term_2": ["c", "d"]})
    return create_study("s", pairs, BINARY, ["ann", "bea"])


def _page(path, role=None, admin=None):
    at = AppTest.from_file(str(ROOT / path), default_timeout=TIMEOUT)
    if role:
        at.session_state["auth_role"] = role
    if admin is not None:
        at.session_state["auth_admin"] = admin
    return at.run()


def test_activity_page_is_admin_only_and_lists_events(db):
    with activity.acting_as("admin:alice"):
        _study()
    at = _page("pages/activity.py")
    assert at.error[0].value.startswith("This page is for the study admin")
    assert not at.dataframe
    at = _page("pages/activity.py", "annotator")
    assert at.error[0].value.startswith("This page is for the study admin")
    at = _page("pages/activity.py", "admin", AdminIdentity("alice", "named"))
    frame = at.dataframe[0].value
    assert frame["actor"].tolist() == ["admin:alice"]
    assert frame["action"].tolist() == ["study_created"]
    assert not at.markdown or all("admin:alice" not in m.value for m in at.markdown)


def test_setup_links_annotators_and_enables_sso(db):
    _study()
    at = _page("pages/setup.py", "admin", AdminIdentity("alice", "named"))
    at.selectbox(key="setup_sso_who").select("bea")
    at.text_input(key="setup_sso_identity").input("Bea@Hospital.example")
    at.button(key="setup_sso_link").click().run()
    # messages are shown as plain text: markdown characters arrive escaped, so a name cannot become a link
    assert "Linked bea to bea@hospital.example" in at.success[0].value.replace("\\", "")
    assert sso.sso_links(open_study("s")) == {"ann": None, "bea": "bea@hospital.example"}
    assert sso.sso_role(BEA).role == "refused"
    at.toggle(key="setup_sso_enabled:s").set_value(True).run()
    assert sso.annotator_sso_enabled(open_study("s"))
    assert sso.sso_role(BEA).role == "annotator"
    at.text_input(key="setup_sso_identity").input("bea@hospital.example")
    at.selectbox(key="setup_sso_who").select("ann")
    at.button(key="setup_sso_link").click().run()
    assert "another annotator" in at.error[0].value
    log = activity.activity()  # the switch (a widget callback) and the link name their admin
    assert log["action"].tolist()[:2] == ["annotator_sso_enabled", "sso_linked"]
    assert log["actor"].tolist()[:2] == ["admin:alice", "admin:alice"]


def test_landing_named_admin_and_throttled_guessing(db, monkeypatch):
    from medsim_annot.services.people.throttle import CODE_SIGNINS, Policy

    # A 30 s first delay: the paused attempt below comes well within it however slowly a
    # loaded machine runs the pages (the failures live in the store: a few writes each).
    monkeypatch.setattr(CODE_SIGNINS, "policy", Policy(base_delay_s=30.0))
    res = _study()
    admins.add_admin("alice", password="alice's long password")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    assert not [b for b in at.button if b.label == "Sign in with SSO"]  # not configured
    for _ in range(3):
        at.text_input(key="login_code").input("WRONG-CODE-0000-0000-0000-00")
        at.button[0].click().run()
        assert "not valid" in at.error[0].value
    at.text_input(key="login_code").input(res["annotators"][0]["access_code"])
    at.button[0].click().run()
    assert "Sign-in paused" in at.error[0].value and "try again in" in at.error[0].value
    assert "auth_role" not in at.session_state  # the right code, but not checked yet

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    at.toggle(key="login_admin_open").set_value(True).run()  # the "Study admin" switch
    at.text_input(key="login_admin_name").input("alice")
    at.text_input(key="login_password").input("alice's long password")
    at.button[1].click().run()
    assert at.session_state["auth_role"] == "admin"
    assert at.session_state["auth_admin"] == AdminIdentity("alice", "named")
    assert any("study admin alice" in c.value for c in at.caption)


def test_activity_detail_is_readable_not_json(db):
    with activity.acting_as("admin:alice"):
        _study()
    at = _page("pages/activity.py", "admin", AdminIdentity("alice", "named"))
    detail = at.dataframe[0].value["detail"].tolist()[0]
    assert not detail.startswith("{") and '"' not in detail
    assert "annotators: ann, bea" in detail
