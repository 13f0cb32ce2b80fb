"""Page logic with streamlit's AppTest: sign-in, role guards, Annotate, Study setup."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from data_schemas.limits import MIN_VIEW_MS
from data_schemas.scales import BINARY
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.studies import create_study, export_ratings, list_studies
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all
from tests.conftest import ROOT

SECRET = "ZZAPPTESTDATASETZZ"
TIMEOUT = 30


def _pairs(n=6):
    return pd.DataFrame(
        {
            "pair_id": [f"ZZPID{i}" for i in range(n)],
            "term_1": [f"first {i}" for i in range(n)],
            "term_2": [f"second {i}" for i in range(n)],
            "auto_label": pd.array([i % 2 for i in range(n)], dtype="Int64"),
            "dataset": [SECRET] * n,
            "concept_id_1": ["ZZCUI1"] * n,
        }
    )


@pytest.fixture
def db(db_url):
    dispose_all()
    yield db_url
    dispose_all()


def _annotator(name="s", scale=BINARY, n=6):
    res = create_study(name, _pairs(n), scale, ["ann"])
    return authenticate_annotator(res["annotators"][0]["access_code"]), res


def _page(path, role=None, identity=None):
    at = AppTest.from_file(str(ROOT / path), default_timeout=TIMEOUT)
    at.session_state["auth_routed"] = True  # as when app.py hands over to the page
    if role:
        at.session_state["auth_role"] = role
    if identity is not None:
        at.session_state["auth_identity"] = identity
    return at.run()


def _all_text(at) -> str:
    parts = []
    for kind in (
        "markdown",
        "caption",
        "title",
        "header",
        "subheader",
        "text",
        "info",
        "success",
        "error",
        "warning",
        "code",
    ):
        parts += [str(e.value) for e in getattr(at, kind)]
    parts += [b.label for b in at.button] + [t.value or "" for t in at.text_input]
    parts += [p.proto.text for p in at.get("progress")]
    return "\n".join(parts)


def _widget(at) -> dict:
    """The boot data the page hands to the annotation widget (what crosses the websocket)."""
    return json.loads(at.get("bidi_component")[0].proto.json)


def _tokens() -> int:
    from sqlalchemy import text

    from medsim_annot.storage import get_engine

    with get_engine().connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM rating_tokens")).scalar_one())


def test_annotate_boots_the_widget_blind_with_a_token_and_the_limits(db):
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    from data_schemas.widget import RATINGS_PATH, WidgetBoot, WidgetLimits
    from medsim_annot.ratings_api import routes

    ident, _ = _annotator(n=6)
    at = _page("pages/annotate.py", "annotator", ident)
    assert not at.exception
    raw = at.get("bidi_component")[0].proto.json
    for secret in (SECRET, "ZZPID", "ZZCUI1", "auto_label", "dataset", "pair_id", "first 0"):
        assert secret not in raw  # no pair at all: pairs come from the endpoint
    boot = WidgetBoot.model_validate(_widget(at))
    assert boot.endpoint == RATINGS_PATH and boot.total == 6 and boot.token_serial == 1
    assert boot.limits == WidgetLimits() and boot.limits.min_view_ms == MIN_VIEW_MS
    assert [o.key for o in boot.scale.options] == ["1", "2", "3"]
    # The token opens the endpoint for this annotator (once the slot was served to it).
    client = TestClient(Starlette(routes=routes()))
    auth = {"Authorization": f"Bearer {boot.token}"}
    client.post(RATINGS_PATH, json={"need": -1}, headers=auth)
    reply = client.post(
        RATINGS_PATH,
        json={
            "pending": [
                {"seq": 1, "position": 0, "value": "same", "version": 0, "elapsed_ms": 900}
            ],
            "need": -1,
        },
        headers={"Authorization": f"Bearer {boot.token}"},
    ).json()
    assert reply["ack"] == 1 and reply["start"] == 1
    assert export_ratings(open_study("s"))["rating"].tolist() == ["same"]
    # Reruns keep the token; the widget asking for a new one (its serial) gets one.
    assert _widget(at.run())["token"] == boot.token and _tokens() == 1
    at.session_state["annotate_widget"] = {"token_wanted": 1}
    again = WidgetBoot.model_validate(_widget(at.run()))
    assert again.token != boot.token and again.token_serial == 2 and _tokens() == 2


def test_annotate_store_unavailable_says_so_and_offers_a_retry(db, monkeypatch):
    from medsim_annot.errors import StoreUnavailable
    from medsim_annot.services import rating_queue

    ident, _ = _annotator(n=3)

    def down(*args, **kwargs):
        raise StoreUnavailable("database is locked")

    monkeypatch.setattr(rating_queue, "widget_setup", down)
    at = _page("pages/annotate.py", "annotator", ident)
    assert not at.exception
    assert "cannot be reached" in at.warning[0].value and at.button[0].label == "Try again"


def test_annotate_revoked_code_stops_the_page(db):
    from medsim_annot.services.people.annotators import revoke_code

    ident, _ = _annotator(n=3)
    revoke_code(open_study("s"), "ann")
    at = _page("pages/annotate.py", "annotator", ident)
    assert "replaced or revoked" in at.error[0].value
    assert not at.get("bidi_component") and _tokens() == 0


def test_sign_out_ends_the_ratings_token(db):
    from pages import _ui

    ident, _ = _annotator(n=3)
    at = _page("pages/annotate.py", "annotator", ident)
    assert _tokens() == 1 and at.session_state[_ui.RATINGS_TOKEN]["token"]
    at2 = AppTest.from_function(_sign_out_script, default_timeout=TIMEOUT)
    at2.session_state[_ui.RATINGS_TOKEN] = at.session_state[_ui.RATINGS_TOKEN]
    at2.run()
    assert not at2.exception and _tokens() == 0


def _sign_out_script():
    from pages import _ui

    _ui.sign_out()


def test_annotator_sign_out_goes_through_the_widget_and_sessions_are_bound(db):
    """The page mints its tokens for one page session and names it to the widget; a sign-out
    asked by the annotator is handed to the widget (it sends or asks, clears the browser,
    then reports ``signed_out``); an earlier session that was served pairs is listed so that
    its kept ratings are offered, not sent unasked."""
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    from data_schemas.widget import RATINGS_PATH, WidgetBoot
    from medsim_annot.ratings_api import routes
    from pages import _ui

    ident, _ = _annotator(n=3)
    first = _page("pages/annotate.py", "annotator", ident)
    boot = WidgetBoot.model_validate(_widget(first))
    assert boot.session and boot.earlier == [] and boot.sign_out is False
    client = TestClient(Starlette(routes=routes()))
    client.post(RATINGS_PATH, json={"need": -1}, headers={"Authorization": f"Bearer {boot.token}"})
    again = WidgetBoot.model_validate(_widget(first.run()))
    assert again.session == boot.session and again.earlier == []
    second = _page("pages/annotate.py", "annotator", ident)  # a new sign-in
    later = WidgetBoot.model_validate(_widget(second))
    assert later.session != boot.session and later.earlier == [boot.session]
    second.session_state[_ui.SIGN_OUT_ASKED] = {"sso": False}
    asked = WidgetBoot.model_validate(_widget(second.run()))
    assert asked.sign_out is True and asked.token == later.token


def test_guards_refuse_wrong_roles(db):
    ident, _ = _annotator()
    # Listed explicitly: a renamed or missing page fails here instead of dropping out.
    admin_pages = [
        "pages/setup.py",
        "pages/dashboard.py",
        "pages/activity.py",
        "pages/export.py",
        "pages/scoring.py",
    ]
    admin_files = {f.name for f in (ROOT / "pages").glob("*.py") if not f.name.startswith("_")} - {
        "annotate.py",
        "adjudicate.py",
    }
    assert {p.removeprefix("pages/") for p in admin_pages} == admin_files  # a new page is listed
    for path in admin_pages:
        for role, who in ((None, None), ("annotator", ident)):
            at = _page(path, role, who)
            assert [e.value for e in at.error][0].startswith("This page is for the study admin")
            assert not at.text_input
    at = _page("pages/annotate.py", "admin")
    assert "Sign in with your access code" in at.error[0].value
    assert not at.button
    for role, who in ((None, None), ("annotator", ident), ("admin", None)):
        at = _page("pages/adjudicate.py", role, who)
        assert "This page is for the study's adjudicators" in at.error[0].value
        assert not at.get("bidi_component")


def test_landing_sign_in(db, monkeypatch):
    monkeypatch.setenv("MEDSIM_ADMIN_PASSWORD", "apptest-admin-pw")
    ident, res = _annotator()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    # The admin form shows once the "Study admin" switch is on.
    assert [t.label for t in at.text_input] == ["Access code"]
    assert [t.label for t in at.toggle] == ["Study admin"]
    at.text_input(key="login_code").input("WRONG-CODE-0000-0000-0000-00")
    at.button[0].click().run()
    assert "not valid" in at.error[0].value
    at.text_input(key="login_code").input(res["annotators"][0]["access_code"])
    at.button[0].click().run()
    assert at.session_state["auth_role"] == "annotator"
    at2 = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    at2.toggle(key="login_admin_open").set_value(True).run()
    assert [t.label for t in at2.text_input] == ["Access code", "Admin name", "Admin password"]
    at2.text_input(key="login_password").input("apptest-admin-pw")
    at2.button[1].click().run()
    assert at2.session_state["auth_role"] == "admin"


def test_setup_creates_study_with_design(db, tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    pd.DataFrame(
        {
            "term_1": [f"a{i}" for i in range(20)],
            "term_2": [f"b{i}" for i in range(20)],
            "auto_label": [i % 2 for i in range(20)],
            "dataset": ["X"] * 10 + ["Y"] * 10,
        }
    ).to_csv(data / "pairs.csv", index=False)
    (data / "bad.csv").write_text("term_1,term_2,auto_label\nfever,,1\nflu,influenza,7\n")
    monkeypatch.chdir(tmp_path)
    at = _page("pages/setup.py", "admin")
    assert not at.exception
    at.radio(key="setup_source").set_value("Choose a file in data/").run()
    at.selectbox(key="setup_file").set_value("data/bad.csv").run()
    problems = at.dataframe[0].value
    rows = problems["row"].astype(int)  # line numbers, shown as text (blank for the file)
    assert set(zip(rows, problems["column"])) == {(2, "term_2"), (3, "auto_label")}
    assert at.button(key="setup_create").disabled
    at.selectbox(key="setup_file").set_value("data/pairs.csv").run()
    at.text_input(key="setup_name").input("via-page").run()
    at.radio(key="setup_sampling").set_value("Stratified sample per group").run()
    at.number_input(key="setup_pos").set_value(2).run()
    at.number_input(key="setup_neg").set_value(3).run()
    at.multiselect(key="setup_group_by").set_value(["dataset"]).run()
    at.number_input(key="setup_seed").set_value(42).run()
    at.radio(key="setup_design").set_value(
        "Each pair rated by k of the n annotators (balanced)"
    ).run()
    at.number_input(key="setup_k").set_value(2).run()
    at.number_input(key="setup_calibration").set_value(2).run()
    at.text_area(key="setup_annotators").input("d1\nd2\nd3").run()
    assert not at.button(key="setup_create").disabled
    at.button(key="setup_create").click().run()
    assert not at.exception
    codes = at.code[0].value
    assert codes.count(": ") == 3
    row = [s for s in list_studies() if s.study == "via-page"][0]
    assert row.items == 10 and row.annotators == 3
    from medsim_annot.services.study_handle import open_study

    cfg = open_study("via-page").config
    assert cfg["seed"] == 42 and cfg["per_item"] == 2 and cfg["positives"] == 2
    # Annotator management: add one and revoke them.
    at.text_input(key="setup_add_name").input("d4").run()
    at.button(key="setup_add").click().run()
    assert any("Added d4" in s.value for s in at.success)


def test_app_routes_by_role(db):
    ident, _ = _annotator()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.session_state["auth_role"] = "annotator"
    at.session_state["auth_identity"] = ident
    at.run()
    assert not at.exception
    assert _widget(at)["total"] == 6 and _widget(at)["token"]
    # An annotator's Sign out is handed to the widget (it saves or asks and clears the
    # browser first); the session ends when the widget reports back.
    at.button(key="signout").click().run()
    assert at.session_state["auth_role"] == "annotator" and _widget(at)["sign_out"] is True
    from medsim_annot.services.people import admins, signin

    admins.add_admin("alice", password="alice's long password")
    alice = signin.sign_in_admin("alice", "alice's long password", client="test")
    admin = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    admin.session_state["auth_role"] = "admin"
    admin.session_state["auth_admin"] = alice  # a session keeps the admin it signed in as
    admin.run()
    assert not admin.exception
    assert [t.value for t in admin.title] == ["Study setup"]
    admin.button(key="signout").click().run()
    assert "auth_role" not in admin.session_state
    assert "Study name" not in [t.label for t in admin.text_input]
