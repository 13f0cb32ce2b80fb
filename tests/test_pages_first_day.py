"""Issue 33, "a first day that reads at a glance", on the pages (AppTest): an admin
adjudicates from their own session, named as themselves; the adjudication screen speaks the
scale's labels and plain need names and counts the decisions. (The browser side of the same
items is in tests/test_browser_first_day.py.)"""

from __future__ import annotations

import json

import pandas as pd
import pytest
import sqlalchemy as sa
from streamlit.testing.v1 import AppTest

from data_schemas.adjudicator_widget import AdjudicatorData
from data_schemas.scales import BINARY, RELATEDNESS_0_3, Scale
from data_schemas.widget import WidgetBoot
from medsim_annot.services import annotation as A
from medsim_annot.services.adjudication import board as adj_board
from medsim_annot.services.people.admins import AdminIdentity
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.studies import create_study
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all
from pages import _qa
from pages import _registry as registry
from tests.conftest import ROOT


@pytest.fixture
def db(db_url):
    dispose_all()
    yield db_url
    dispose_all()


def _disagreeing_study(name: str = "first-day", n: int = 4) -> None:
    pairs = pd.DataFrame(
        {
            "pair_id": [f"p{i}" for i in range(n)],
            "term_1": [f"fever {i}" for i in range(n)],
            "term_2": [f"pyrexia {i}" for i in range(n)],
            "auto_label": [1] * n,
        }
    )
    res = create_study(name, pairs, BINARY, ["a", "b", "c"])
    codes = {x["name"]: x["access_code"] for x in res["annotators"]}
    for who, value in {"a": "same", "b": "not_same", "c": "dont_know"}.items():
        aid = authenticate_annotator(codes[who]).annotator_id
        for pos in range(n):
            A.submit_rating(aid, pos, value, elapsed_ms=2000, expected_version=0)


def _mounted(at) -> AdjudicatorData:
    return AdjudicatorData.model_validate(json.loads(at.get("bidi_component")[0].proto.json))


def _admin_page(name: str = "Dr Lead") -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "adjudicate.py"), default_timeout=60)
    at.session_state["auth_routed"] = True
    at.session_state["auth_role"] = "admin"
    at.session_state["auth_admin"] = AdminIdentity(name=name, via="named")
    return at.run()


def test_the_admin_gets_the_adjudicate_page_after_their_own():
    admin = [p.title for p in registry.pages_for("admin")]
    assert admin[0] == "Study setup" and admin[-1] == "Adjudicate"
    assert [p.title for p in registry.pages_for("adjudicator")] == ["Adjudicate"]
    assert "Adjudicate" not in [p.title for p in registry.pages_for("annotator")]


def test_an_admin_adjudicates_as_themselves_without_a_code(db):
    _disagreeing_study()
    at = _admin_page()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    data = _mounted(at)
    assert data.pair is not None
    # The scale's own labels, plain need names and the counter.
    assert data.labels == {"same": "Same", "not_same": "Not same", "dont_know": "Don't know"}
    assert data.need_labels["no_majority"] == "No strict majority among the ratings cast"
    assert (data.decided, data.needed) == (0, 4)
    first = data.pair.pair_id
    decision = {
        "pair_id": first,
        "label": "not_same",
        "reason": "rater_error",
        "reason_text": "",
        "flag_guideline": False,
        "version": 0,
        "seq": "1",
    }
    at.session_state["adjudicate_widget"] = {"decision": decision, "nav": None}
    data = _mounted(at.run())
    assert data.status.startswith(f"Saved {first}: Not same (rater error)")
    assert (data.decided, data.needed) == (1, 4)  # the counter moved
    history = adj_board.board(open_study("first-day")).history
    assert list(history["adjudicator"]) == ["Dr Lead"]
    # The seat has no access code: nobody can sign in with it.
    engine = sa.create_engine(db)
    with engine.connect() as conn:
        rows = conn.exec_driver_sql("SELECT name, code_hash FROM adjudicators").all()
        kinds = [r[0] for r in conn.exec_driver_sql("SELECT kind FROM events").all()]
    engine.dispose()
    assert rows == [("Dr Lead", None)]
    assert kinds.count("adjudicator_added") == 1 and "pair_adjudicated" in kinds
    # A second run (and a second decision) reuses the seat.
    at.session_state["adjudicate_widget"] = {
        "decision": {**decision, "pair_id": data.pair.pair_id, "seq": "2"},
        "nav": None,
    }
    data = _mounted(at.run())
    assert (data.decided, data.needed) == (2, 4)


def test_an_annotator_is_refused_the_adjudicate_page(db):
    _disagreeing_study()
    at = AppTest.from_file(str(ROOT / "pages" / "adjudicate.py"), default_timeout=60)
    at.session_state["auth_routed"] = True
    at.session_state["auth_role"] = "annotator"
    at.run()
    assert any("adjudicators" in e.value for e in at.error)
    assert not at.get("bidi_component")


# ---------------------------------------------------------------- item 8: empty states
def _dashboard(study: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "dashboard.py"), default_timeout=120)
    at.session_state["auth_role"] = "admin"
    at.run()
    at.selectbox(key="dashboard_study").select(study).run()
    return at


def _headers(at: AppTest) -> list[str]:
    return [h.value for h in at.header] + [h.value for h in at.subheader]


def test_a_study_without_ratings_shows_one_card(db):
    pairs = pd.DataFrame(
        {"pair_id": ["p0", "p1"], "term_1": ["a", "b"], "term_2": ["c", "d"], "auto_label": [1, 0]}
    )
    create_study("no-ratings", pairs, BINARY, ["x", "y", "z"])
    at = _dashboard("no-ratings")
    assert not at.exception, at.exception
    cards = [i.value for i in at.info]
    assert any("No ratings yet** — 0 of 3 doctors started" in c for c in cards), cards
    # No figures, no empty tables: only the completion table.
    assert not at.get("plotly_chart")
    assert len(at.dataframe) == 1
    assert not {"Agreement", "Rater quality", "Adjudication"} & set(_headers(at))


def test_sections_without_data_are_hidden_and_missing_values_read_dash(db):
    pairs = pd.DataFrame(
        {
            "pair_id": [f"p{i}" for i in range(4)],
            "term_1": [f"t{i}" for i in range(4)],
            "term_2": [f"u{i}" for i in range(4)],
            "auto_label": [1] * 4,
        }
    )
    res = create_study("agreeing", pairs, BINARY, ["a", "b"])
    for member in res["annotators"]:
        aid = authenticate_annotator(member["access_code"]).annotator_id
        for pos in range(4):
            A.submit_rating(aid, pos, "same", elapsed_ms=2000, expected_version=0)
    at = _dashboard("agreeing")
    assert not at.exception, at.exception
    headers = _headers(at)
    assert "Agreement" in headers and "Adjudication" not in headers  # nothing to decide
    assert "Rushed answers and pace" in headers  # no check pairs: no check columns
    pace = next(d.value for d in at.dataframe if "pairs_per_hour" in d.value.columns)
    assert "n_checks" not in pace.columns


def test_missing_values_read_a_dash_in_every_column():
    frame = pd.DataFrame(
        {"annotator": ["a", None], "alpha": [0.5, float("nan")], "n": [3.0, float("nan")]}
    )
    # Streamlit draws a missing cell as "None" whatever a Styler says: the cells are text.
    shown, as_text = _qa.styled(frame)
    assert as_text == ["alpha", "n"]
    assert shown.to_dict(orient="list") == {
        "annotator": ["a", "—"],
        "alpha": ["0.500", "—"],
        "n": ["3", "—"],
    }


# ---------------------------------------------------------------- item 9: the question
def _annotate(ident) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "annotate.py"), default_timeout=60)
    at.session_state["auth_routed"] = True
    at.session_state["auth_role"] = "annotator"
    at.session_state["auth_identity"] = ident
    return at.run()


def _boot(at) -> dict:
    return json.loads(at.get("bidi_component")[0].proto.json)


@pytest.mark.parametrize(
    "scale, question",
    [
        (BINARY, "Could these two terms be used interchangeably in consultation notes?"),
        (RELATEDNESS_0_3, "How related are these two medical concepts?"),
    ],
)
def test_the_widget_gets_the_question_and_a_first_visit_the_guideline(db, scale, question):
    pairs = pd.DataFrame({"pair_id": ["p0", "p1"], "term_1": ["a", "b"], "term_2": ["c", "d"]})
    res = create_study("asked", pairs, scale, ["doc"])
    ident = authenticate_annotator(res["annotators"][0]["access_code"])
    at = _annotate(ident)
    assert not at.exception, at.exception
    # The question travels in the widget's contract, from the study's scale.
    boot = WidgetBoot.model_validate(_boot(at))
    assert boot.scale.question == question
    # First sign-in: the guideline is open, inline (an expander, not a popover over the
    # pair), and does not list the options a second time.
    (guide,) = at.expander
    assert guide.label == "Guidelines and scale" and guide.proto.expanded
    assert not at.get("popover")
    text = "\n".join(m.value for m in at.markdown)
    assert text.count(scale.options[1].label) == scale.guideline.count(scale.options[1].label)
    # At a later sign-in (something rated), it starts closed.
    A.submit_rating(
        ident.annotator_id, 0, scale.options[0].value, elapsed_ms=2000, expected_version=0
    )
    at = _annotate(ident)
    assert not at.expander[0].proto.expanded


def test_a_scale_stored_without_a_question_asks_its_guideline_heading():
    old = BINARY.model_copy(update={"question": ""})
    assert Scale.from_json(old.to_json()).asks == "Are these two terms the same?"


# ---------------------------------------------------------------- item 11: study setup
def _xlsx(path, rows: list[list[object]]) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    sheet = book.active
    for row in rows:
        sheet.append(row)
    book.save(path)


def _setup(tmp_path, monkeypatch) -> AppTest:
    monkeypatch.chdir(tmp_path)
    at = AppTest.from_file(str(ROOT / "pages" / "setup.py"), default_timeout=60)
    at.session_state["auth_routed"] = True
    at.session_state["auth_role"] = "admin"
    return at.run()


def test_setup_reads_an_xlsx_pairs_file_and_names_bad_cells(db, tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    header = ["term_1", "term_2", "auto_label"]
    _xlsx(data / "pairs.xlsx", [header, ["fever", "pyrexia", 1], ["flu", "influenza", 1]])
    _xlsx(data / "bad.xlsx", [header, ["fever", "pyrexia", 1], ["cough", None, 1], ["flu", "x", 7]])
    at = _setup(tmp_path, monkeypatch)
    at.radio(key="setup_source").set_value("Choose a file in data/").run()
    assert "data/pairs.xlsx" in at.selectbox(key="setup_file").options
    at.selectbox(key="setup_file").set_value("data/bad.xlsx").run()
    assert any("bad\\.xlsx\\: 2 problem" in e.value for e in at.error), [e.value for e in at.error]
    problems = at.dataframe[0].value
    # Rows as the sheet numbers them (header row 1), like a CSV's lines.
    assert set(zip(problems["row"].astype(int), problems["column"])) == {
        (3, "term_2"),
        (4, "auto_label"),
    }
    at.selectbox(key="setup_file").set_value("data/pairs.xlsx").run()
    assert any("pairs\\.xlsx\\: 2 valid pairs" in s.value for s in at.success)


def test_setup_says_what_is_missing_folds_advanced_options_and_selects_the_new_study(
    db, tmp_path, monkeypatch
):
    pairs = pd.DataFrame({"pair_id": ["p0"], "term_1": ["a"], "term_2": ["b"]})
    create_study("aaa-older", pairs, BINARY, ["x"])  # listed first: the new one is not
    data = tmp_path / "data"
    data.mkdir()
    pd.DataFrame({"term_1": ["fever", "flu"], "term_2": ["pyrexia", "influenza"]}).to_csv(
        data / "pairs.csv", index=False
    )
    at = _setup(tmp_path, monkeypatch)
    assert at.button(key="setup_create").disabled
    said = [c.value for c in at.caption]
    assert (
        "Still needed: a study name, a pairs file without problems, at least one annotator name."
        in said
    )
    assert at.button(key="setup_create").help.startswith("Still needed: a study name")
    # The advanced options are folded away (closed) and hold the seed, calibration, the
    # sequential audit and the rater checks.
    advanced = next(e for e in at.expander if e.label.startswith("Advanced options"))
    assert not advanced.proto.expanded
    inside = {w.key for w in advanced.number_input} | {w.key for w in advanced.checkbox}
    assert {"setup_seed", "setup_calibration", "setup_sequential"} <= inside
    # Placeholders read as examples, not as filled-in values.
    assert at.text_input(key="setup_name").placeholder.startswith("e.g. ")
    assert at.text_area(key="setup_annotators").placeholder.startswith("For example:")

    at.text_input(key="setup_name").input("zzz-new").run()
    at.radio(key="setup_source").set_value("Choose a file in data/").run()
    at.selectbox(key="setup_file").set_value("data/pairs.csv").run()
    said = [c.value for c in at.caption]
    assert "Still needed: at least one annotator name." in said
    at.text_area(key="setup_annotators").input("d1\nd2").run()
    assert not at.button(key="setup_create").disabled
    at.button(key="setup_create").click().run()
    assert not at.exception, at.exception
    assert at.selectbox(key="setup_manage_study").value == "zzz-new"


# ---------------------------------------------------------------- item 7: key figures
def test_the_audit_table_shows_each_group_once(db):
    from medsim_annot.services.demo import seed_demo
    from medsim_annot.storage import get_engine

    seed_demo(engine=get_engine())
    at = _dashboard("demo-binary")
    assert not at.exception, at.exception
    audit = next(d.value for d in at.dataframe if d.value.columns[0] == "group")
    shown = list(audit.columns)
    assert not {"dataset", "difficulty", "negative_strategy"} & set(shown)
    assert shown[:6] == ["group", "items", "no_majority", "alpha", "accuracy", "recall"]
    assert "precision" in shown


def _problems_script() -> None:
    from data_schemas.errors import InputError, Problem
    from pages import _ui

    advice = (
        "is an Excel workbook (.xlsx), not a CSV text file (renaming a workbook does not "
        "convert it). Use the workbook under its own name (.xlsx), or in Excel choose File > "
        "Save As > 'CSV UTF-8 (Comma delimited)'."
    )
    _ui.show_problems(InputError([Problem(advice)], file="pairs.csv"), key="one")


def test_a_whole_file_problem_is_written_out_in_full():
    at = AppTest.from_function(_problems_script, default_timeout=60).run()
    assert not at.exception, at.exception
    (line,) = [e.value for e in at.error]
    assert line.endswith(r"\'CSV UTF\-8 \(Comma delimited\)\'\.")  # not cut at "…convert it):"
    assert not at.dataframe  # no table cell to cut it off
