"""Page logic with streamlit's AppTest: sign-in, role guards, Annotate, Study setup."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from data_schemas.limits import MIN_VIEW_MS
from data_schemas.scales import BINARY
from medsim_annot.services.auth import authenticate_annotator
from medsim_annot.services.studies import create_study, export_ratings, list_studies, rating_history
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
    """The data the page hands to the annotation widget (what crosses the websocket)."""
    return json.loads(at.get("bidi_component")[0].proto.json)


def _send(at, pending, need=None, sent=1):
    """What the widget's JavaScript does on a key press: set its outbox state, rerun."""
    at.session_state["annotate_widget"] = {
        "outbox": {"epoch": "t", "pending": pending, "need": need, "sent": sent}
    }
    return at.run()


def test_annotate_sends_a_blind_window_and_resumes_at_first_unrated(db):
    ident, _ = _annotator(n=6)
    at = _page("pages/annotate.py", "annotator", ident)
    assert not at.exception
    data = _widget(at)
    raw = at.get("bidi_component")[0].proto.json
    for secret in (SECRET, "ZZPID", "ZZCUI1", "auto_label", "dataset", "pair_id"):
        assert secret not in raw
    assert data["start"] == 0 and data["total"] == 6 and data["done"] == 0
    assert [p["term_1"] for p in data["window"]] == [f"first {i}" for i in range(6)]
    assert set(data["window"][0]) == {
        "position",
        "index",
        "term_1",
        "term_2",
        "rating",
        "unclear",
        "comment",
        "version",
    }
    assert [o["key"] for o in data["scale"]["options"]] == ["1", "2", "3"]
    assert data["min_view_ms"] == MIN_VIEW_MS and data["comment_max"] == 2000
    _send(at, [{"seq": 1, "position": 0, "value": "same", "version": 0, "elapsed_ms": 900}])
    _send(
        at,
        [{"seq": 2, "position": 1, "value": "not_same", "version": 0, "comment": "typo"}],
        sent=2,
    )
    again = _page("pages/annotate.py", "annotator", ident)
    assert _widget(again)["start"] == 2 and _widget(again)["done"] == 2
    out = export_ratings("s")
    assert out["rating"].tolist() == ["same", "not_same"]
    assert out["comment"].tolist() == ["", "typo"]


def test_annotate_commits_in_order_acknowledges_and_ignores_resends(db):
    ident, _ = _annotator(n=6)
    at = _page("pages/annotate.py", "annotator", ident)
    pending = [
        {"seq": 1, "position": 0, "value": "same", "version": 0, "elapsed_ms": 700},
        {"seq": 2, "position": 1, "value": "not_same", "version": 0, "elapsed_ms": 800},
        # Back and change pair 1 before the first answer was acknowledged: chained.
        {"seq": 3, "position": 0, "value": "dont_know", "after": 1, "elapsed_ms": 400},
    ]
    _send(at, pending)
    data = _widget(at)
    assert data["ack"] == 3 and data["refused"] == [] and not data["unavailable"]
    assert set(data["versions"]) == {"1", "2", "3"}
    # The same list again (an acknowledgement lost on the way): nothing is stored twice.
    _send(at, pending, sent=2)
    assert _widget(at)["ack"] == 3
    hist = rating_history("s")
    assert hist["rating"].tolist() == ["same", "not_same", "dont_know"]
    assert hist["elapsed_ms"].tolist() == [700, 800, 400]
    # A window is read only when asked for, from two before the position asked.
    _send(at, [], need=3, sent=3)
    assert [p["position"] for p in _widget(at)["window"]] == [1, 2, 3, 4, 5]
    # Asking where to resume after the end of the window.
    _send(at, [], need=-1, sent=4)
    assert _widget(at)["resume"] is True and _widget(at)["start"] == 2


def test_annotate_refuses_bad_entries_and_caps_comments(db):
    ident, _ = _annotator(n=3)
    at = _page("pages/annotate.py", "annotator", ident)
    _send(
        at,
        [
            {"seq": 1, "position": 0, "value": "maybe", "version": 0},
            {"seq": 2, "position": 1, "value": "same", "version": 0, "comment": "x" * 2001},
            {"seq": 3, "position": 2, "value": "same", "version": 0, "comment": "x" * 2000},
        ],
    )
    data = _widget(at)
    assert data["ack"] == 3
    messages = {r["seq"]: r["message"] for r in data["refused"]}
    assert set(messages) == {1, 2}
    assert "not a value of the binary scale" in messages[1]
    assert "2000 characters" in messages[2]
    assert rating_history("s")["comment"].str.len().tolist() == [2000]


def test_annotate_store_unavailable_keeps_ratings_for_a_resend(db, monkeypatch):
    from medsim_annot.errors import StoreUnavailable
    from medsim_annot.services import annotation

    ident, _ = _annotator(n=3)
    at = _page("pages/annotate.py", "annotator", ident)
    real = annotation.submit_rating

    def down(*args, **kwargs):
        raise StoreUnavailable("database is locked")

    monkeypatch.setattr(annotation, "submit_rating", down)
    pending = [{"seq": 1, "position": 0, "value": "same", "version": 0}]
    _send(at, pending)
    assert not at.exception
    data = _widget(at)
    assert data["unavailable"] is True and data["ack"] == 0
    monkeypatch.setattr(annotation, "submit_rating", real)
    _send(at, pending, sent=2)
    assert _widget(at)["ack"] == 1 and not _widget(at)["unavailable"]
    assert len(rating_history("s")) == 1


def test_annotate_revoked_code_stops_the_widget(db):
    from medsim_annot.services.annotators import revoke_code

    ident, _ = _annotator(n=3)
    at = _page("pages/annotate.py", "annotator", ident)
    revoke_code("s", "ann")
    _send(at, [{"seq": 1, "position": 0, "value": "same", "version": 0}])
    data = _widget(at)
    assert "replaced or revoked" in data["ended"]
    assert len(rating_history("s")) == 0


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
        "annotate.py"
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


def test_landing_sign_in(db, monkeypatch):
    monkeypatch.setenv("MEDSIM_ADMIN_PASSWORD", "apptest-admin-pw")
    ident, res = _annotator()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    assert [t.label for t in at.text_input] == ["Access code", "Admin name", "Admin password"]
    at.text_input(key="login_code").input("WRONG-CODE-0000-0000-0000-00")
    at.button[0].click().run()
    assert "not valid" in at.error[0].value
    at.text_input(key="login_code").input(res["annotators"][0]["access_code"])
    at.button[0].click().run()
    assert at.session_state["auth_role"] == "annotator"
    at2 = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
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
    assert set(zip(problems["row"], problems["column"])) == {(2, "term_2"), (3, "auto_label")}
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
    row = [s for s in list_studies() if s["study"] == "via-page"][0]
    assert row["items"] == 10 and row["annotators"] == 3
    from medsim_annot.services.studies import get_study

    cfg = get_study("via-page").config
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
    assert _widget(at)["window"][0]["term_1"] == "first 0"
    assert _widget(at)["total"] == 6
    admin = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    admin.session_state["auth_role"] = "admin"
    admin.run()
    assert not admin.exception
    assert [t.value for t in admin.title] == ["Study setup"]
    admin.button(key="signout").click().run()
    assert "auth_role" not in admin.session_state
    assert "Study name" not in [t.label for t in admin.text_input]
