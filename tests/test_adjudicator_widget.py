"""The adjudication widget's contract (data_schemas/adjudicator_widget.py): valid and invalid
events, round trips, the page's reader, the data the page sends, and the JavaScript naming
the contract's fields."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace
from typing import get_args

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError
from streamlit.testing.v1 import AppTest

from data_schemas.adjudicator_widget import (
    STATE_NAMES,
    AdjudicationPair,
    AdjudicatorData,
    AdjudicatorState,
    DecisionEvent,
    NavEvent,
    problem_text,
)
from data_schemas.gold import ADJUDICATION_REASONS, AdjudicationReason
from data_schemas.limits import COMMENT_MAX_CHARS
from data_schemas.scales import BINARY
from medsim_annot.services import annotation as A
from medsim_annot.services.adjudication import board as adj_board
from medsim_annot.services.adjudication import decisions as adj_dec
from medsim_annot.services.people import adjudicators as adj_people
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.studies import create_study
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all
from pages.components.adjudicator import HERE, read_state
from tests.conftest import ROOT

DECISION = {
    "pair_id": "p1",
    "label": "same",
    "reason": "guideline_gap",
    "reason_text": "",
    "flag_guideline": True,
    "version": 0,
    "seq": "1732700000000-1",
}
NAV = {"to": "next", "seq": "1732700000000-2"}


@pytest.fixture
def db(db_url):
    dispose_all()
    yield db_url
    dispose_all()


def test_valid_events():
    state = AdjudicatorState.model_validate({"decision": DECISION, "nav": NAV})
    assert state.decision == DecisionEvent(**DECISION)
    assert state.nav == NavEvent(to="next", seq=NAV["seq"])
    assert AdjudicatorState.model_validate({}) == AdjudicatorState()
    assert STATE_NAMES == ("decision", "nav")


@pytest.mark.parametrize(
    "change",
    [
        {"version": "3"},  # strict: no coercion from text
        {"version": -1},
        {"version": 1.0},
        {"flag_guideline": "true"},
        {"flag_guideline": 1},
        {"label": 1},
        {"label": ""},
        {"pair_id": None},
        {"reason": "because"},
        {"reason_text": "x" * (COMMENT_MAX_CHARS + 1)},
        {"seq": ""},
        {"seq": 7},
        {"adjudicator": "someone"},  # extra fields are refused
    ],
)
def test_invalid_decisions(change):
    with pytest.raises(ValidationError):
        DecisionEvent.model_validate({**DECISION, **change})


@pytest.mark.parametrize("drop", ["pair_id", "label", "reason", "version", "seq"])
def test_a_decision_needs_its_fields(drop):
    with pytest.raises(ValidationError):
        DecisionEvent.model_validate({k: v for k, v in DECISION.items() if k != drop})


@pytest.mark.parametrize(
    "nav", [{"to": "up", "seq": "1"}, {"to": "next"}, {"to": "next", "seq": "1", "by": 2}]
)
def test_invalid_nav(nav):
    with pytest.raises(ValidationError):
        NavEvent.model_validate(nav)


def test_reason_text_is_capped_once_stripped():
    text = " " * 10 + "x" * COMMENT_MAX_CHARS + " " * 10
    assert DecisionEvent.model_validate({**DECISION, "reason_text": text}).reason_text == text
    with pytest.raises(ValidationError) as info:
        DecisionEvent.model_validate({**DECISION, "reason_text": "x" * (COMMENT_MAX_CHARS + 1)})
    assert problem_text(info.value) == (
        f"reason_text: the reason text is longer than {COMMENT_MAX_CHARS} characters"
    )


def test_reasons_are_the_registry():
    assert set(get_args(AdjudicationReason)) == set(ADJUDICATION_REASONS)


_text = st.text(min_size=1, max_size=40)
decisions = st.builds(
    DecisionEvent,
    pair_id=_text,
    label=_text,
    reason=st.sampled_from(list(get_args(AdjudicationReason))),
    reason_text=st.text(max_size=60),
    flag_guideline=st.booleans(),
    version=st.integers(min_value=0, max_value=2**53),
    seq=_text,
)
navs = st.builds(NavEvent, to=st.sampled_from(["next", "prev"]), seq=_text)


@given(st.builds(AdjudicatorState, decision=st.none() | decisions, nav=st.none() | navs))
def test_state_round_trips(state):
    assert AdjudicatorState.model_validate(state.model_dump()) == state
    assert AdjudicatorState.model_validate_json(state.model_dump_json()) == state
    # What the page reads is what the widget sent, however the session keeps it.
    raw = state.model_dump()
    assert read_state(raw) == (state, None)
    assert read_state(SimpleNamespace(**raw)) == (state, None)


def test_read_state_leaves_out_a_broken_event_and_says_why():
    assert read_state(None) == (AdjudicatorState(), None)
    state, problem = read_state({"decision": {**DECISION, "version": "3"}, "nav": NAV})
    assert state == AdjudicatorState(nav=NavEvent(**NAV))
    assert problem is not None and "decision.version" in problem


def test_the_javascript_names_the_contract_fields():
    js = (HERE / "adjudicator.js").read_text(encoding="utf-8")
    assert "data_schemas/adjudicator_widget.py" in js
    sent = {}
    for name, body in re.findall(r'this\.send\("(\w+)", \{(.*?)\}\)', js, flags=re.S):
        sent[name] = {k for k in re.findall(r"(\w+):", body)}
    assert set(sent) == set(STATE_NAMES)
    # The widget adds ``seq`` to every event it sends.
    assert "seq:" in js
    assert sent["decision"] | {"seq"} == set(DecisionEvent.model_fields)
    assert sent["nav"] | {"seq"} == set(NavEvent.model_fields)
    # Every field it reads of the data and of the pair is one the contract declares.
    read = set(re.findall(r"\bdata\.(\w+)", js))
    assert read and read <= set(AdjudicatorData.model_fields)
    read = set(re.findall(r"\bpair\.(\w+)", js))
    assert read and read <= set(AdjudicationPair.model_fields)


def _study(name: str = "adj-contract", n: int = 4) -> str:
    """A study whose raters disagree on every pair, one adjudicator ``judge``, and ``p1``
    decided by them."""
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
            A.submit_rating(aid, pos, value, comment=who, elapsed_ms=2000, expected_version=0)
    judge = adj_people.add_adjudicator(open_study(name), "judge")
    adj_dec.decide(
        open_study(name),
        "p1",
        label="same",
        reason="other",
        reason_text="why",
        adjudicator="judge",
        seen_version=0,
    )
    return judge.access_code


def test_the_page_data_follows_the_contract(db):
    _study()
    board = adj_board.board(open_study("adj-contract"))
    for pid in ("p0", "p1"):
        pair = AdjudicationPair.model_validate(board.pair(pid))
        data = AdjudicatorData(
            pair=pair,
            reasons=[
                {"value": r, "key": adj_dec.REASON_KEYS[r], "label": r.replace("_", " ")}
                for r in ADJUDICATION_REASONS
            ],
            position=1,
            total=len(board.queue),
        )
        assert AdjudicatorData.model_validate_json(data.model_dump_json()) == data
    assert pair.decision is not None and pair.decision.reason == "other" and pair.version == 1


def test_the_page_saves_a_valid_decision_and_refuses_a_broken_one(db):
    code = _study()
    at = AppTest.from_file(str(ROOT / "pages" / "adjudicate.py"), default_timeout=60)
    at.session_state["auth_routed"] = True
    at.session_state["auth_role"] = "adjudicator"
    at.session_state["auth_identity"] = adj_people.authenticate_adjudicator(code)
    at.run()
    data = AdjudicatorData.model_validate(_mounted(at))
    assert data.pair is not None and data.status == ""
    first = data.pair.pair_id
    # A decision that breaks the contract (the version as text) stores nothing and says why.
    bad = {**DECISION, "pair_id": first, "version": "0"}
    at.session_state["adjudicate_widget"] = {"decision": bad, "nav": None}
    data = AdjudicatorData.model_validate(_mounted(at.run()))
    assert data.status.startswith("Not saved: the widget's message broke its contract")
    assert "decision.version" in data.status
    assert len(adj_board.board(open_study("adj-contract")).history) == 1
    # The same decision as the contract says is stored.
    good = {**bad, "version": 0, "seq": "2"}
    at.session_state["adjudicate_widget"] = {"decision": good, "nav": None}
    data = AdjudicatorData.model_validate(_mounted(at.run()))
    assert data.status.startswith(f"Saved {first}: Same (guideline gap), version 1")
    assert len(adj_board.board(open_study("adj-contract")).history) == 2
    # Navigation: the next pair.
    at.session_state["adjudicate_widget"] = {"decision": good, "nav": {"to": "next", "seq": "3"}}
    data = AdjudicatorData.model_validate(_mounted(at.run()))
    assert data.pair is not None and data.pair.pair_id != first and data.fresh


def _mounted(at) -> dict:
    """The data the page mounted the adjudication widget with (what crosses the websocket)."""
    return json.loads(at.get("bidi_component")[0].proto.json)
