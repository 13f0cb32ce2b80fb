"""The ratings endpoint no longer takes the browser's word (issue 34, items 1 and 8).

A shared ward computer: a list planted in the browser's storage under a doctor's key is
refused by the endpoint — its entries name no version, or no session of that doctor, or a
slot never served to the session they name. What was served to which page session and when
is recorded (``served_slots``, one insert per window); a rating of a slot never served to
its session is refused; the time stored for the rushed flag is the browser's figure capped
by the server's time between serving and saving, with the browser's figure kept beside it.
Each test here fails on the code before these rules (the planted ratings were stored, a slot
never served was rated, 10**15 ms was stored as the time on the pair).
"""

from __future__ import annotations

import datetime as dt
import json

import pandas as pd
import pytest
from sqlalchemy import func, select, text
from starlette.applications import Starlette
from starlette.testclient import TestClient

from data_schemas.scales import BINARY
from data_schemas.widget import ELAPSED_MAX_MS, KEPT_TTL_S, RATINGS_PATH, WINDOW
from medsim_annot import ratings_api
from medsim_annot.services import rating_queue
from medsim_annot.services.people import tokens
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.quality import QualitySettings, rater_checks
from medsim_annot.services.studies import create_study, current_ratings, rating_history
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all, get_engine, session_scope
from medsim_annot.storage.models import Rating, ServedSlot

N = 60


@pytest.fixture
def study(backend_url):
    dispose_all()
    pairs = pd.DataFrame(
        {
            "pair_id": [f"p{i:03d}" for i in range(N)],
            "term_1": [f"first {i}" for i in range(N)],
            "term_2": [f"second {i}" for i in range(N)],
        }
    )
    res = create_study("trust", pairs, BINARY, ["doc", "other"], engine=get_engine(backend_url))
    codes = {a["name"]: a["access_code"] for a in res["annotators"]}
    yield {"url": backend_url, "codes": codes}
    dispose_all()


def _client() -> TestClient:
    return TestClient(Starlette(routes=ratings_api.routes()))


def _mint(study, name="doc", session=None) -> tokens.MintedToken:
    ident = authenticate_annotator(study["codes"][name])
    assert ident is not None
    return tokens.mint_token(ident.annotator_id, ident.credential_version, session=session)


def _post(token: str, body: dict) -> dict:
    r = _client().post(
        RATINGS_PATH,
        content=json.dumps(body),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    assert r.status_code == 200, r.text
    return r.json()


def _e(seq, position, value="same", version=0, **kw) -> dict:
    return {"seq": seq, "position": position, "value": value, "version": version,
            "elapsed_ms": 900, **kw}  # fmt: skip


def _history() -> list[tuple[str, str, str]]:
    h = rating_history(open_study("trust"))
    return list(zip(h["annotator"], h["pair_id"], h["rating"]))


def test_a_planted_list_is_refused_even_after_the_doctors_window_is_served(study):
    """The review's attack: {"closed": true, "pending": [...]} planted for a doctor with
    version null at positions 0-2 and 7; he signs in (a new session: the widget sends the
    kept list with need = -1) — nothing of it is stored, his own answers stay."""
    first = _mint(study)
    _post(first.token, {"need": 0})
    _post(first.token, {"pending": [_e(i + 1, i, "same") for i in range(3)]})
    assert _history() == [("doc", f"p{i:03d}", "same") for i in range(3)]
    planted = [_e(i + 1, p, "not_same", version=None) for i, p in enumerate([0, 1, 2, 7])]
    new = _mint(study)  # the doctor signs in again on the ward computer
    out = _post(new.token, {"pending": planted, "need": -1})
    assert out["ack"] == 4 and sorted(r["seq"] for r in out["refused"]) == [1, 2, 3, 4]
    assert all("not served" in r["message"] for r in out["refused"])
    assert out["start"] == 3  # the window is served after the entries were judged
    # Sent again now that the resume window (positions 1..42) was served to this session:
    # still no version.
    out = _post(new.token, {"pending": planted})
    why = {r["position"]: r["message"] for r in out["refused"]}
    assert sorted(why) == [0, 1, 2, 7] and "not served" in why[0]
    assert all("neither" in why[p] for p in (1, 2, 7))
    # Naming another annotator's session does not help either.
    theirs = _mint(study, "other")
    _post(theirs.token, {"need": 0})
    out = _post(new.token, {"pending": [_e(9, 7, session=theirs.session)]})
    assert "not served" in out["refused"][0]["message"]
    assert _history() == [("doc", f"p{i:03d}", "same") for i in range(3)]


def test_a_slot_never_served_to_the_session_is_refused(study):
    tok = _mint(study)
    out = _post(tok.token, {"need": 0})
    served = [p["position"] for p in out["window"]]
    assert served == list(range(WINDOW))  # first served window: positions 0..39
    beyond = WINDOW + 5
    out = _post(tok.token, {"pending": [_e(1, beyond)]})
    assert [r["seq"] for r in out["refused"]] == [1] and _history() == []
    _post(tok.token, {"need": WINDOW - 1})  # the refill reaches it
    out = _post(tok.token, {"pending": [_e(2, beyond)]})
    assert out["refused"] == [] and _history() == [("doc", f"p{beyond:03d}", "same")]


def test_a_kept_rating_of_an_earlier_session_is_taken_within_the_kept_lifetime(study):
    """Ratings kept from the doctor's earlier session (sent after he confirms) are taken:
    the slot was served to that session; older than KEPT_TTL_S they are not."""
    old = _mint(study)
    _post(old.token, {"need": 0})
    new = _mint(study)
    assert new.session != old.session
    ident = authenticate_annotator(study["codes"]["doc"])
    assert rating_queue.earlier_sessions(ident.annotator_id, new.session) == [old.session]
    out = _post(new.token, {"pending": [_e(1, 4, session=old.session)]})
    assert out["refused"] == [] and _history() == [("doc", "p004", "same")]
    with session_scope(get_engine(study["url"])) as s:
        s.execute(
            text("UPDATE served_slots SET served_at = :t"),
            {
                "t": dt.datetime.now(dt.UTC).replace(tzinfo=None)
                - dt.timedelta(seconds=KEPT_TTL_S + 60)
            },
        )
    out = _post(new.token, {"pending": [_e(2, 5, session=old.session)]})
    assert "12 hours" in out["refused"][0]["message"]
    assert rating_queue.earlier_sessions(ident.annotator_id, new.session) == []


def test_one_insert_per_window_and_the_first_serving_time_is_kept(study):
    tok = _mint(study)
    _post(tok.token, {"need": 0})
    eng = get_engine(study["url"])
    with session_scope(eng) as s:
        first = dict(s.execute(select(ServedSlot.position, ServedSlot.served_at)).all())
    _post(tok.token, {"need": 0})  # served again (a resume, Back): nothing new
    _post(tok.token, {"need": WINDOW - 1})  # a refill: the new slots only
    with session_scope(eng) as s:
        rows = dict(s.execute(select(ServedSlot.position, ServedSlot.served_at)).all())
        tokens_ids = set(s.scalars(select(ServedSlot.token_id)))
    assert sorted(rows) == list(range(N)) and all(rows[p] == first[p] for p in first)
    assert len(tokens_ids) == 1


def test_the_rushed_flag_uses_the_servers_time_and_keeps_the_browsers(study):
    """elapsed_ms of 10**15 (a browser that lies) is bounded on input, and the time stored
    is the server's between serving and saving: the answer counts as rushed."""
    tok = _mint(study)
    _post(tok.token, {"need": 0})
    out = _post(tok.token, {"pending": [_e(1, 0, elapsed_ms=10**15), _e(2, 1, elapsed_ms=900)]})
    assert out["refused"] == []
    with session_scope(get_engine(study["url"])) as s:
        rows = s.execute(select(Rating.elapsed_ms, Rating.browser_ms).order_by(Rating.id)).all()
    (lied, lied_browser), (honest, honest_browser) = rows
    assert lied_browser == ELAPSED_MAX_MS and lied < 60_000  # the server's time, seconds
    assert honest_browser == 900 and honest <= 900
    st = open_study("trust")
    checks = rater_checks(current_ratings(st), st.scale, {}, QualitySettings())
    row = checks.set_index("annotator").loc["doc"]
    assert row["n_timed"] == 2 and row["n_rushed"] == 2


def test_the_endpoint_keeps_one_session_across_a_pages_tokens(study):
    """The tokens one page mints over its life (one per hour) share its session: a slot
    served under the first is rated under the second without a new window."""
    first = _mint(study)
    _post(first.token, {"need": 0})
    second = _mint(study, session=first.session)
    out = _post(second.token, {"pending": [_e(1, 3)]})
    assert out["refused"] == [] and _history() == [("doc", "p003", "same")]
    with session_scope(get_engine(study["url"])) as s:
        assert s.scalar(select(func.count()).select_from(ServedSlot)) == WINDOW
