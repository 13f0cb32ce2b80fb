"""Page logic with streamlit's AppTest: sign-in, role guards, Annotate, Study setup."""

from __future__ import annotations

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from data_schemas.scales import BINARY, RELATEDNESS_0_3
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


def test_annotate_shows_pair_blind_and_rates(db):
    ident, _ = _annotator()
    at = _page("pages/annotate.py", "annotator", ident)
    assert not at.exception
    text = _all_text(at)
    assert "first 0" in text and "second 0" in text
    for secret in (SECRET, "ZZPID", "ZZCUI1", "auto_label"):
        assert secret not in text
    assert [b.label for b in at.button][:3] == ["Same", "Not same", "Don't know"]
    at.button(key="annotate_opt_0_1").click().run()
    assert at.session_state["annotate_position"] == 1
    assert "first 1" in _all_text(at)
    assert "1 / 6 rated" in _all_text(at)
    # Back, and the same answer again (a resubmit) adds nothing.
    at.button(key="annotate_back_1").click().run()
    assert at.session_state["annotate_position"] == 0
    at.button(key="annotate_opt_0_1").click().run()
    assert at.session_state["annotate_position"] == 1
    hist = rating_history("s")
    assert len(hist) == 1
    assert hist["elapsed_ms"].notna().all()


def test_annotate_back_change_comment_and_resume(db):
    ident, _ = _annotator()
    at = _page("pages/annotate.py", "annotator", ident)
    at.button(key="annotate_opt_0_1").click().run()
    at.button(key="annotate_opt_1_1").click().run()
    at.button(key="annotate_back_2").click().run()
    assert at.session_state["annotate_position"] == 1
    assert "Saved: Same" in _all_text(at)
    at.text_input(key="annotate_comment_1").input("typo in term 2").run()
    at.button(key="annotate_opt_1_2").click().run()
    assert at.session_state["annotate_position"] == 2
    out = export_ratings("s")
    assert out["rating"].tolist() == ["same", "not_same"]
    assert out["comment"].tolist() == ["", "typo in term 2"]
    # A new session (reload / new sign-in) resumes at the first unrated pair.
    again = _page("pages/annotate.py", "annotator", ident)
    assert again.session_state["annotate_position"] == 2
    assert "first 2" in _all_text(again)


def test_annotate_unclear_flag_and_end_screen(db):
    ident, _ = _annotator("rel", RELATEDNESS_0_3, n=2)
    at = _page("pages/annotate.py", "annotator", ident)
    assert [b.label for b in at.button][:4] == [
        "0 Unrelated",
        "1 Marginally related",
        "2 Related",
        "3 Extremely related",
    ]
    at.button(key="annotate_unclear_btn_0").click().run()
    assert at.button(key="annotate_unclear_btn_0").label == "Unclear meaning ✓"
    at.button(key="annotate_opt_0_2").click().run()
    at.button(key="annotate_opt_1_0").click().run()
    assert at.session_state["annotate_position"] is None
    assert any("queue is complete" in s.value for s in at.success)
    out = export_ratings("rel")
    assert out["unclear"].tolist() == ["true", "false"]
    # In a new session, changing the value of the unclear-flagged pair keeps the flag.
    again = _page("pages/annotate.py", "annotator", ident)
    assert again.session_state["annotate_position"] is None
    again.button(key="annotate_back_end").click().run()
    again.button(key="annotate_back_1").click().run()
    assert again.button(key="annotate_unclear_btn_0").label == "Unclear meaning ✓"
    again.button(key="annotate_opt_0_3").click().run()
    out = export_ratings("rel")
    assert out["rating"].tolist() == [3, 0] and out["unclear"].tolist() == ["true", "false"]


def test_straight_line_warning_shown(db):
    ident, _ = _annotator(n=12)
    at = _page("pages/annotate.py", "annotator", ident)
    for p in range(10):
        at.button(key=f"annotate_opt_{p}_1").click().run()
    assert any("same rating to the last 10" in i.value for i in at.info)


def test_guards_refuse_wrong_roles(db):
    ident, _ = _annotator()
    admin_pages = [
        f"pages/{f}"
        for f in ("setup.py", "dashboard.py", "export.py", "scoring.py")
        if (ROOT / "pages" / f).exists()
    ]
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
    assert "first 0" in _all_text(at)
    assert [t.label for t in at.text_input] == [
        "Comment (optional) — press Tab to leave the field, then the rating key"
    ]
    assert [p.proto.text for p in at.get("progress")] == ["0 / 6 rated · pair 1 of 6"]
    admin = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    admin.session_state["auth_role"] = "admin"
    admin.run()
    assert not admin.exception
    assert [t.value for t in admin.title] == ["Study setup"]
    admin.button(key="signout").click().run()
    assert "auth_role" not in admin.session_state
    assert "Study name" not in [t.label for t in admin.text_input]
