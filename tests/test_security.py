"""Regression tests of the weaknesses a security review found, one or more per weakness.

Formula escaping (test_formula_safety.py) and the comment cap are tested with their own work;
the credential-version checks of the annotation services with theirs (test_annotation.py).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as hs

from data_schemas import validate_pairs, validate_ratings
from data_schemas._validate import CONTROL_CHARS, has_control_chars
from data_schemas.errors import InputError
from data_schemas.scales import BINARY
from medsim_annot.errors import UsageProblem
from medsim_annot.services import activity
from medsim_annot.services import studies as svc
from medsim_annot.services.people import adjudicators as adj_svc
from medsim_annot.services.people import annotators as ann_svc
from medsim_annot.services.people import sso as sso_svc
from medsim_annot.services.people.names import check_annotator_name, check_study_name, file_slug
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all, get_engine

ROOT = Path(__file__).resolve().parents[1]


def _pairs(**cols) -> pd.DataFrame:
    base = {"term_1": ["fever", "cough"], "term_2": ["pyrexia", "tussis"]}
    base.update(cols)
    return pd.DataFrame(base)


# ------------------------------------------------ control characters in terms and names
@pytest.mark.parametrize("column", ["term_1", "term_2", "pair_id", "concept_id_1", "dataset"])
@pytest.mark.parametrize(
    "bad",
    ["a\n\n![x](https://evil.example/x.png)", "a\rb", "a\tb", "a\x00b", "a\u2028b", "a\u202eb"],
)
def test_control_characters_refused_with_row_and_column(column, bad):
    cols = {column: ["ok-1", bad]} if column not in ("term_1", "term_2") else {column: ["x", bad]}
    with pytest.raises(InputError) as err:
        validate_pairs(_pairs(**cols), "pairs.csv")
    lines = err.value.lines()
    assert len(lines) == 1
    assert lines[0].startswith(f"pairs.csv, row 3, column '{column}': contains a line break")


def test_leading_and_trailing_whitespace_is_still_stripped_not_refused():
    out = validate_pairs(_pairs(term_1=["\nfever\r\n", "cough"]), "pairs.csv")
    assert out["term_1"].tolist() == ["fever", "cough"]


@pytest.mark.parametrize("column", ["pair_id", "annotator"])
def test_ratings_ids_and_names_refuse_control_characters(column):
    frame = pd.DataFrame({"pair_id": ["p1", "p2"], "annotator": ["a", "b"], "rating": ["same"] * 2})
    frame.loc[1, column] = "x\ny"
    with pytest.raises(InputError) as err:
        validate_ratings(frame, BINARY, "ratings.csv")
    assert f"row 3, column '{column}'" in err.value.lines()[0]


@given(hs.text(max_size=30))
def test_control_check_agrees_with_the_pattern(text):
    assert has_control_chars(text) == any(CONTROL_CHARS.match(ch) for ch in text)


# ------------------------------------------------ study names never reach file names
@pytest.mark.parametrize(
    "bad", ["../x", "a/b", "a\\b", "..", "a..b", "line\nbreak", "tab\there", "", "   ", "x" * 201]
)
def test_study_names_refused(bad, db_url):
    with pytest.raises(UsageProblem):
        check_study_name(bad)
    with pytest.raises(UsageProblem):
        svc.create_study(bad, validate_pairs(_pairs()), BINARY, ["a"])
    assert svc.list_studies() == []


def test_annotator_names_refuse_control_characters(db_url):
    with pytest.raises(UsageProblem):
        check_annotator_name("dr\n![x](https://evil.example/x.png)")
    svc.create_study("s", validate_pairs(_pairs()), BINARY, ["a"])
    with pytest.raises(UsageProblem):
        ann_svc.add_annotator(open_study("s"), "b\nc")
    with pytest.raises(UsageProblem):
        ann_svc.rename_annotator(open_study("s"), "a", "x\ty")
    assert ann_svc.annotators(open_study("s"))["annotator"].tolist() == ["a"]


@pytest.mark.parametrize("bad", ["dr\n@ward.example", "x" * 321 + "@ward.example", "sub:a\tb"])
def test_sso_identities_are_checked_alike_for_annotators_and_adjudicators(db_url, bad):
    """One check of a typed SSO identity for both roles (issue 32: adjudicators' identities
    used to be stored unchecked): too long or holding a control character is refused and
    nothing is written; a good one is stored normalised."""
    svc.create_study("s", validate_pairs(_pairs()), BINARY, ["a"])
    study = open_study("s")
    adj_svc.add_adjudicator(study, "judge")
    with pytest.raises(UsageProblem, match="SSO identity"):
        ann_svc.link_annotator_sso(study, "a", bad)
    with pytest.raises(UsageProblem, match="SSO identity"):
        adj_svc.link_adjudicator_sso(study, "judge", bad)
    with pytest.raises(UsageProblem, match="SSO identity"):
        adj_svc.add_adjudicator(study, "other", sso_identity=bad)
    assert adj_svc.adjudicators(study)["adjudicator"].tolist() == ["judge"]
    assert set(sso_svc.sso_links(study).values()) == {None}
    assert adj_svc.adjudicators(study)["sso_identity"].tolist() == [""]
    assert "adjudicator_sso_linked" not in activity.activity()["action"].tolist()
    adj_svc.link_adjudicator_sso(study, "judge", " Judge@Ward.Example ")
    ann_svc.link_annotator_sso(study, "a", " A@Ward.Example ")
    assert adj_svc.adjudicators(study)["sso_identity"].tolist() == ["judge@ward.example"]
    assert sso_svc.sso_links(study) == {"a": "a@ward.example"}


@given(hs.text(max_size=60))
def test_file_slug_is_always_a_safe_file_name(name):
    slug = file_slug(name)
    assert slug and "/" not in slug and "\\" not in slug and ".." not in slug
    assert all(ch.isascii() and (ch.isalnum() or ch == "-") for ch in slug)


# ------------------------------------------------ the SQLite files are private (0600/0700)
def test_database_file_0600_and_new_data_folder_0700(tmp_path, monkeypatch):
    dispose_all()
    folder = tmp_path / "data"
    url = f"sqlite:///{folder}/medsim.db"
    monkeypatch.setenv("MEDSIM_DATABASE_URL", url)
    try:
        svc.create_study("s", validate_pairs(_pairs()), BINARY, ["a"], engine=get_engine(url))
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        for path in folder.iterdir():  # medsim.db, -wal, -shm
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    finally:
        dispose_all()


def test_existing_world_readable_database_is_tightened(tmp_path):
    dispose_all()
    db = tmp_path / "old.db"
    db.touch()
    os.chmod(db, 0o644)
    try:
        get_engine(f"sqlite:///{db}")
        assert stat.S_IMODE(db.stat().st_mode) == 0o600
    finally:
        dispose_all()


# ------------------------------------------------ stored control characters are rendered inert
def test_annotate_page_renders_terms_as_text_only(db_url, monkeypatch):
    """A term stored before validation refused line breaks (or written straight into the
    database) still cannot leave the HTML block or become markdown."""
    from streamlit.testing.v1 import AppTest

    from medsim_annot.services.people.annotators import authenticate_annotator

    monkeypatch.syspath_prepend(str(ROOT))
    evil = "fever\n\n![x](https://evil.example/x.png) [click](https://evil.example)"
    frame = pd.DataFrame({"pair_id": ["p1"], "term_1": [evil], "term_2": ["<b>pyrexia</b>"]})
    res = svc.create_study("s", frame, BINARY, ["doc [me](https://evil.example)"])
    ident = authenticate_annotator(res["annotators"][0]["access_code"])
    at = AppTest.from_file(str(ROOT / "pages" / "annotate.py"), default_timeout=30)
    at.session_state["auth_role"] = "annotator"
    at.session_state["auth_identity"] = ident
    at.run()
    assert not at.exception, at.exception
    # The terms travel only as data to the annotation widget (from the ratings endpoint),
    # whose script sets them with textContent (never innerHTML): no markdown or HTML element
    # of the page carries them.
    token = json.loads(at.get("bidi_component")[0].proto.json)["token"]
    data = _ratings_endpoint(token, {"need": -1})
    assert (data["window"][0]["term_1"], data["window"][0]["term_2"]) == (evil, "<b>pyrexia</b>")
    bodies = [m.value for m in at.markdown]
    assert not any("evil.example/x.png" in b or "pyrexia" in b for b in bodies)
    script = (ROOT / "pages" / "components" / "annotator" / "annotator.js").read_text()
    assert "innerHTML" not in script and "insertAdjacentHTML" not in script
    hello = next(b for b in bodies if "Hello" in b)
    assert "](" not in hello and "\\[me\\]\\(https\\:" in hello


# ------------------------------------------------ uploads: private copies, base names only
def _admin_page(name: str):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "pages" / name), default_timeout=120)
    at.session_state["auth_role"] = "admin"
    return at.run()


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """tempfile's folder, watched: uploads must leave nothing behind, nor write outside.
    (AppTest keeps a folder of its own there.)"""
    import tempfile

    folder = tmp_path / "tmp" / "deep"
    folder.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.syspath_prepend(str(ROOT))
    return folder


def _upload_leftovers(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.name.startswith("medsim-") or p.name == "escaped.csv"]


def test_scoring_upload_uses_base_name_and_leaves_no_copy(db_url, private_tmp):
    csv = b"pair_id,term_1,term_2,auto_label\np1,fever,pyrexia,1\np2,fever,fracture,0\n"
    at = _admin_page("scoring.py")
    at.radio(key="scoring_source").set_value("Upload a pairs or gold file").run()
    for _ in range(2):  # every rerun used to leave another copy behind
        at.file_uploader(key="scoring_upload").set_value(
            ("../../escaped.csv", csv, "text/csv")
        ).run()
        assert not at.exception, at.exception
    assert not (private_tmp.parent / "escaped.csv").exists()
    assert not (private_tmp.parent.parent / "escaped.csv").exists()
    assert _upload_leftovers(private_tmp) == []
    assert at.button(key="scoring_run") is not None  # the file was read


def test_setup_upload_leaves_no_copy_and_codes_are_shown_once(db_url, private_tmp):
    csv = b"term_1,term_2\nfever,pyrexia\ncough,tussis\n"
    at = _admin_page("setup.py")
    at.file_uploader(key="setup_upload").set_value(("../../escaped.csv", csv, "text/csv")).run()
    assert not at.exception, at.exception
    # (shown as plain text: markdown characters arrive escaped)
    assert any("escaped.csv: 2 valid pairs" in s.value.replace("\\", "") for s in at.success)
    assert _upload_leftovers(private_tmp) == []
    assert not (private_tmp.parent.parent / "escaped.csv").exists()
    at.text_input(key="setup_name").input("s").run()
    at.text_area(key="setup_annotators").input("d1\nd2").run()
    at.button(key="setup_create").click().run()
    assert not at.exception, at.exception
    codes = at.code[0].value
    assert sum(line.startswith("d") and ": " in line for line in codes.splitlines()) == 2
    downloads = [b for b in at.get("download_button") if "codes" in b.label]
    assert len(downloads) == 1  # and the printable sheet (issue 33)
    assert len([b for b in at.get("download_button") if "printable sheet" in b.label]) == 1
    # Shown once: the next run (any click) no longer has them, nor does the session.
    at.run()
    assert len(at.code) == 0
    issued = [c.split(": ")[1] for c in codes.splitlines() if c.startswith("d")]
    assert len(issued) == 2 and all(c not in repr(dict(at.session_state)) for c in issued)
    at.selectbox(key="setup_code_who").set_value("d1").run()
    at.button(key="setup_issue").click().run()
    assert not at.exception, at.exception
    assert len(at.code) == 1 and "\nd1: " in at.code[0].value
    at.run()
    assert len(at.code) == 0


# ------------------------------------------------ a new or revoked code ends old sessions
def test_new_code_or_revoke_ends_sessions_of_the_old_code(backend_url):
    from medsim_annot.errors import SessionEnded
    from medsim_annot.services import annotation as A
    from medsim_annot.services.people.annotators import authenticate_annotator

    res = svc.create_study("s", validate_pairs(_pairs()), BINARY, ["a", "b"])
    old = authenticate_annotator(res["annotators"][0]["access_code"])
    other = authenticate_annotator(res["annotators"][1]["access_code"])
    assert old.credential_version == other.credential_version == 1
    A.submit_rating(old.annotator_id, 0, "same", credential=old.credential_version)

    new_code = ann_svc.issue_code(open_study("s"), "a")
    assert authenticate_annotator(res["annotators"][0]["access_code"]) is None
    new = authenticate_annotator(new_code)
    assert new.annotator_id == old.annotator_id and new.credential_version == 2
    for call in (
        lambda c: A.get_pair(old.annotator_id, 1, credential=c),
        lambda c: A.queue_state(old.annotator_id, credential=c),
        lambda c: A.get_window(old.annotator_id, 0, 2, credential=c),
        lambda c: A.submit_rating(old.annotator_id, 1, "same", credential=c),
    ):
        with pytest.raises(SessionEnded):
            call(old.credential_version)
        call(new.credential_version)  # the new sign-in works
    ratings = svc.export_ratings(open_study("s"))
    assert len(ratings) == 2  # slot 0 before the new code, slot 1 with it; none refused saved
    # The other annotator's session is untouched.
    A.get_pair(other.annotator_id, 0, credential=other.credential_version)

    ann_svc.revoke_code(open_study("s"), "a")
    with pytest.raises(SessionEnded):
        A.get_pair(new.annotator_id, 0, credential=new.credential_version)
    assert authenticate_annotator(new_code) is None
    again = authenticate_annotator(ann_svc.issue_code(open_study("s"), "a"))
    assert again.credential_version == 4


def test_annotate_page_signs_out_a_session_whose_code_was_replaced(db_url, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from medsim_annot.services.people.annotators import authenticate_annotator

    monkeypatch.syspath_prepend(str(ROOT))
    res = svc.create_study("s", validate_pairs(_pairs()), BINARY, ["a"])
    ident = authenticate_annotator(res["annotators"][0]["access_code"])
    at = AppTest.from_file(str(ROOT / "pages" / "annotate.py"), default_timeout=30)
    at.session_state["auth_role"] = "annotator"
    at.session_state["auth_identity"] = ident
    at.run()
    assert not at.exception
    token = json.loads(at.get("bidi_component")[0].proto.json)["token"]
    window = _ratings_endpoint(token, {"need": -1})["window"]
    assert "fever" in window[0]["term_1"] + window[0]["term_2"]
    ann_svc.issue_code(open_study("s"), "a")
    # A key press from the old session (the widget's pending list): refused, nothing saved,
    # and the widget stops with the reason.
    entry = {"seq": 1, "position": 0, "value": "same", "version": 0, "elapsed_ms": 900}
    reply = _ratings_endpoint(token, {"pending": [entry]}, status=401)
    assert reply["error"] == "ended" and "replaced or revoked" in reply["reason"]
    assert svc.export_ratings(open_study("s")).empty
    # The page stays stopped too: a later run says so and mounts no widget.
    at.run()
    assert not at.exception, at.exception
    assert "replaced or revoked" in at.error[0].value and not at.get("bidi_component")


def _ratings_endpoint(token: str, body: dict, status: int = 200) -> dict:
    """One request to the ratings endpoint (the routes serve.py mounts), as the widget
    sends it."""
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    from data_schemas.widget import RATINGS_PATH
    from medsim_annot.ratings_api import routes

    r = TestClient(Starlette(routes=routes())).post(
        RATINGS_PATH, json=body, headers={"Authorization": f"Bearer {token}"}
    )
    assert r.status_code == status, r.text
    return r.json()
