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
from data_schemas.scales import BINARY
from medsim_annot.services import annotation as A
from medsim_annot.services.adjudication import board as adj_board
from medsim_annot.services.people.admins import AdminIdentity
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.studies import create_study
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all
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
