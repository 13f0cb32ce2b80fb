"""Serving order end to end: the window the annotation widget walks is the
queue in serving order (``order_key``), each slot carrying its position and serving index, so
a 2 + 1 tiebreak slot added while a doctor works (a new position past the end of the queue)
is served within the next few pairs and never directly after its twin. Service API on SQLite
and PostgreSQL; the page (AppTest) resends the stretch when the queue grew."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from data_schemas.scales import BINARY
from medsim_annot.errors import UsageProblem
from medsim_annot.services import annotation as A
from medsim_annot.services.design import DesignOptions, create_designed_study
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.storage import dispose_all
from tests.conftest import ROOT

DOCTORS = ("ann", "bob", "cyd")


def _pairs(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "pair_id": [f"p{i}" for i in range(n)],
            "term_1": [f"a{i}" for i in range(n)],
            "term_2": [f"b{i}" for i in range(n)],
        }
    )


def _create(n: int = 24, seed: int = 5) -> tuple[dict[str, int], dict]:
    res = create_designed_study(
        "serving",
        _pairs(n),
        BINARY,
        list(DOCTORS),
        DesignOptions(per_item=2, tiebreak=True, seed=seed),
    )
    ids = {a["name"]: authenticate_annotator(a["access_code"]) for a in res.annotators}
    return {k: v.annotator_id for k, v in ids.items()}, ids


def _index(view) -> int:
    term = view.term_1 if view.term_1.startswith("a") else view.term_2
    return int(term[1:])


def _disagree_on_pair_not_held_by(ids: dict[str, int], who: str) -> int:
    """The two other doctors rate a pair *who* does not hold, differently; its index."""
    holds = {n: {_index(v): v.position for v in A.get_window(a, 0, 200)} for n, a in ids.items()}
    first, second = (d for d in DOCTORS if d != who)
    i = next(k for k in sorted(holds[first]) if k in holds[second] and k not in holds[who])
    A.submit_rating(ids[first], holds[first][i], "same")
    A.submit_rating(ids[second], holds[second][i], "not_same")
    return i


@pytest.fixture
def fresh(backend_url):
    dispose_all()
    yield backend_url
    dispose_all()


def test_window_is_serving_order_and_takes_in_a_tiebreak(fresh):
    ids, _ = _create()
    cyd = ids["cyd"]
    # cyd rates three pairs, then looks at her fourth.
    for _ in range(3):
        st = A.queue_state(cyd)
        A.submit_rating(cyd, st.first_unrated, "same")
    here = A.queue_state(cyd).first_unrated
    win = A.serving_window(cyd, here, before=2, after=10)
    assert [v.position for v in win.pairs] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
    assert win.first_index == 1 and not win.start_of_queue and not win.end_of_queue
    total = win.pairs[0].total

    i = _disagree_on_pair_not_held_by(ids, "cyd")
    new_pos = total  # a new position past the end of the queue
    grown = A.serving_window(cyd, here, before=2, after=10)
    assert grown.last_position == new_pos != win.last_position
    assert A.queue_end(cyd)[0] == new_pos
    assert grown.pairs[0].total == total + 1
    order = [v.position for v in grown.pairs]
    # Served within the next few pairs after the one on screen, never directly after it
    # (the pair on screen is not its twin: cyd did not hold pair i before).
    k = order.index(new_pos)
    assert 2 + 1 <= k <= 2 + 4, order
    assert order[:k] == [1, 2, 3, 4, 5, 6, 7][:k]
    twin = {(v.term_1, v.term_2) for v in grown.pairs if _index(v) == i}
    assert len(twin) == 1  # its only slot in cyd's queue
    # Serving indices count in serving order: the slots after the new one moved up by one.
    assert grown.first_index == 1
    # The service's own "next unrated" walks the same order.
    pos, served = here, []
    for _ in range(6):
        served.append(pos)
        pos = A.submit_rating(cyd, pos, "same").next_position
    assert served == [p for p in order if p >= 3 or p == new_pos][:6]

    # The end of the queue: the last slots in serving order (not the highest positions).
    tail = A.serving_window(cyd, None, before=5)
    assert tail.end_of_queue and len(tail.pairs) == 5
    assert tail.pairs[-1].position == total - 1
    assert new_pos not in [v.position for v in tail.pairs]
    # Back before what the widget holds: the slots served before a position.
    back = A.serving_window(cyd, 5, before=40, after=1)
    assert back.start_of_queue and back.first_index == 0
    assert [v.position for v in back.pairs][-1] == 5
    with pytest.raises(UsageProblem, match="not in this annotator's queue"):
        A.serving_window(cyd, 999, before=2, after=3)
    with pytest.raises(UsageProblem, match="window"):
        A.serving_window(cyd, 0, before=0, after=0)


# ------------------------------------------------------------------ the page (AppTest)
def _page(identity) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages/annotate.py"), default_timeout=30)
    at.session_state["auth_routed"] = True
    at.session_state["auth_role"] = "annotator"
    at.session_state["auth_identity"] = identity
    return at.run()


def _widget(at) -> dict:
    return json.loads(at.get("bidi_component")[0].proto.json)


class _Endpoint:
    """The widget's side of the ratings endpoint: posts as the widget does and keeps the
    queue mark of the last window it got."""

    def __init__(self, token: str):
        from starlette.applications import Starlette
        from starlette.testclient import TestClient

        from medsim_annot.ratings_api import routes

        self.client = TestClient(Starlette(routes=routes()))
        self.token = token
        self.mark = None

    def send(self, pending, *, need=None, at_pos=None, back=False) -> dict:
        from data_schemas.widget import RATINGS_PATH

        body = {"pending": pending, "need": need, "back": back, "at": at_pos, "mark": self.mark}
        r = self.client.post(
            RATINGS_PATH, json=body, headers={"Authorization": f"Bearer {self.token}"}
        )
        assert r.status_code == 200, r.text
        data = r.json()
        self.mark = data["mark"] or self.mark
        return data


@pytest.fixture
def db(db_url):
    dispose_all()
    yield db_url
    dispose_all()


def test_page_resends_the_stretch_when_the_queue_grew(db):
    ids, idents = _create(n=90)  # 60 slots each: more than one window
    at = _page(idents["cyd"])
    ep = _Endpoint(_widget(at)["token"])
    data = ep.send([], need=-1)
    assert data["start"] == 0 and data["window_info"] == {
        "start_of_queue": True,
        "end_of_queue": False,
    }
    assert [p["index"] for p in data["window"]] == list(range(len(data["window"])))
    total = data["total"]
    # A rating, acknowledged without a window (nothing changed).
    entry = {"seq": 1, "position": 0, "value": "same", "version": 0, "elapsed_ms": 900}
    data = ep.send([entry], at_pos=1)
    assert data["ack"] == 1 and data["window"] == []
    # Two other doctors disagree: cyd's queue grows by a slot served among her next pairs.
    _disagree_on_pair_not_held_by(ids, "cyd")
    data = ep.send([], at_pos=1)
    assert data["total"] == total + 1
    order = [p["position"] for p in data["window"]]
    assert order[:2] == [0, 1] and total in order[2:7]
    assert [p["index"] for p in data["window"]] == list(range(len(order)))
    assert "p1" not in json.dumps(data) and "tiebreak" not in json.dumps(data)
    # The next acknowledgement does not resend it.
    assert ep.send([], at_pos=2)["window"] == []
    # Back before what the widget holds: the slots served before the one asked.
    data = ep.send([], need=order[5], back=True, at_pos=None)
    back = [p["position"] for p in data["window"]]
    assert back == order[:6] and data["window_info"]["start_of_queue"] is True
