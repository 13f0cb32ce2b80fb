"""Security review of round 34 on the ratings endpoint (issue 34 items 4, 6, 7, 12).

Each test is an attack from the review, run against the routes ``serve.py`` mounts (Starlette
test client) on SQLite and PostgreSQL:

- item 4: a change of an annotator's SSO link, of the study's SSO switch or of a role ends
  the ratings tokens opened before (the open widget's next save is refused);
- item 6: the write cap is counted and reserved in the store, so two parallel requests (two
  processes) together store no more than the cap;
- item 7: unbounded ``need``/``mark`` are refused with 400, never a 500; requests without
  ratings are limited too;
- item 12: a foreign ``Origin``, a body that is not ``application/json`` and a large body
  with a bad token are refused before the body is parsed.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from data_schemas.scales import BINARY
from data_schemas.widget import RATINGS_PATH
from medsim_annot import ratings_api
from medsim_annot.services.people import adjudicators, admins, annotators, sso, tokens
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.studies import create_study, rating_history
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all, get_engine


@pytest.fixture
def study(backend_url):
    dispose_all()
    pairs = pd.DataFrame(
        {
            "pair_id": [f"P{i}" for i in range(8)],
            "term_1": [f"first {i}" for i in range(8)],
            "term_2": [f"second {i}" for i in range(8)],
        }
    )
    res = create_study("sec", pairs, BINARY, ["doc", "other"], engine=get_engine(backend_url))
    codes = {a["name"]: a["access_code"] for a in res["annotators"]}
    yield {"url": backend_url, "codes": codes}
    dispose_all()


def _client() -> TestClient:
    return TestClient(Starlette(routes=ratings_api.routes()))


def _token(study, name="doc") -> str:
    """A token of a new page session that was served the queue (the endpoint takes ratings
    only of slots served to the rating's session)."""
    ident = authenticate_annotator(study["codes"][name])
    assert ident is not None
    token = tokens.mint_token(ident.annotator_id, ident.credential_version).token
    assert _post(_client(), token, {"need": 0}).status_code == 200
    return token


def _post(client, token, body, *, headers=None, raw: bytes | None = None):
    h = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    h.update(headers or {})
    return client.post(
        RATINGS_PATH, content=raw if raw is not None else json.dumps(body), headers=h
    )


def _e(seq, position, value="same", version=0) -> dict:
    return {"seq": seq, "position": position, "value": value, "version": version, "elapsed_ms": 900}


def _stored() -> int:
    return len(rating_history(open_study("sec")))


# ------------------------------------------------------------------ item 4: SSO and roles
def _saves(c, tok, seq, position) -> int:
    return _post(c, tok, {"pending": [_e(seq, position)]}).status_code


def test_unlinking_sso_ends_the_open_widgets_token(study):
    st = open_study("sec")
    annotators.link_annotator_sso(st, "doc", "doc@hospital.example")
    sso.set_annotator_sso(st, True)
    c, tok = _client(), _token(study)
    assert _saves(c, tok, 1, 0) == 200
    annotators.link_annotator_sso(st, "doc", "")
    r = _post(c, tok, {"pending": [_e(2, 1)]})
    assert r.status_code == 401 and r.json()["error"] == "ended"
    assert _stored() == 1


def test_relinking_sso_to_another_identity_ends_the_token(study):
    st = open_study("sec")
    annotators.link_annotator_sso(st, "doc", "doc@hospital.example")
    c, tok = _client(), _token(study)
    annotators.link_annotator_sso(st, "doc", "someone.else@hospital.example")
    assert _saves(c, tok, 1, 0) == 401
    assert _stored() == 0


@pytest.mark.parametrize("enable", [False, True])
def test_switching_the_studys_sso_ends_every_annotators_token(study, enable):
    st = open_study("sec")
    sso.set_annotator_sso(st, not enable)
    c = _client()
    toks = [_token(study, "doc"), _token(study, "other")]
    sso.set_annotator_sso(st, enable)
    assert [_saves(c, t, 1, 0) for t in toks] == [401, 401]
    assert _stored() == 0


def test_giving_the_identity_an_admin_role_ends_the_token(study):
    st = open_study("sec")
    annotators.link_annotator_sso(st, "doc", "doc@hospital.example")
    c, tok = _client(), _token(study)
    admins.add_admin("chief", sso_identity="doc@hospital.example")
    assert _saves(c, tok, 1, 0) == 401
    tok = _token(study)
    admins.remove_admin("chief")
    assert _saves(c, tok, 1, 0) == 401
    assert _stored() == 0


def test_giving_the_identity_an_adjudicator_role_ends_the_token(study):
    st = open_study("sec")
    annotators.link_annotator_sso(st, "doc", "doc@hospital.example")
    c, tok = _client(), _token(study)
    adjudicators.add_adjudicator(st, "judge", sso_identity="doc@hospital.example")
    assert _saves(c, tok, 1, 0) == 401
    assert _stored() == 0


def test_another_annotators_sso_change_leaves_this_token_alone(study):
    st = open_study("sec")
    c, tok = _client(), _token(study)
    annotators.link_annotator_sso(st, "other", "other@hospital.example")
    assert _saves(c, tok, 1, 0) == 200


# --------------------------------------------------- item 6: the write cap is in the store
def _flood(url: str, token: str, positions: list[int], cap: int, barrier) -> list[int]:
    """One process of the parallel attack: wait for the other, then post every position in
    one request and again one by one; the HTTP statuses."""
    import os

    from medsim_annot.services import endpoint_quota

    os.environ["MEDSIM_DATABASE_URL"] = url
    endpoint_quota.MAX_WRITES_PER_WINDOW = cap
    c = _client()
    barrier.wait()
    out = [_post(c, token, {"pending": [_e(i + 1, p) for i, p in enumerate(positions)]})]
    out += [_post(c, token, {"pending": [_e(100 + p, p)]}) for p in positions]
    return [r.status_code for r in out]


@pytest.fixture
def long_study(backend_url):
    dispose_all()
    pairs = pd.DataFrame(
        {
            "pair_id": [f"L{i}" for i in range(24)],
            "term_1": [f"first {i}" for i in range(24)],
            "term_2": [f"second {i}" for i in range(24)],
        }
    )
    res = create_study("sec", pairs, BINARY, ["doc"], engine=get_engine(backend_url))
    yield {"url": backend_url, "codes": {a["name"]: a["access_code"] for a in res["annotators"]}}
    dispose_all()


def test_two_processes_together_store_no_more_than_the_cap(long_study):
    import multiprocessing as mp

    cap = 8
    toks = [_token(long_study), _token(long_study)]  # two tabs of one doctor
    dispose_all()
    ctx = mp.get_context("spawn")
    barrier = ctx.Manager().Barrier(2)
    halves = [list(range(0, 12)), list(range(12, 24))]
    with ctx.Pool(2) as pool:
        runs = [
            pool.apply_async(_flood, (long_study["url"], t, h, cap, barrier))
            for t, h in zip(toks, halves, strict=True)
        ]
        statuses = [r.get(timeout=240) for r in runs]
    assert _stored() == cap, statuses
    assert any(429 in s for s in statuses)


def test_unused_room_is_given_back(study, monkeypatch):
    from medsim_annot.services import endpoint_quota

    monkeypatch.setattr(endpoint_quota, "MAX_WRITES_PER_WINDOW", 3)
    c, tok = _client(), _token(study)
    assert _post(c, tok, {"pending": [_e(1, 0)]}).json()["ack"] == 1
    # Resending a stored rating and a refused one (too fast) use no room.
    for seq in range(2, 8):
        r = _post(c, tok, {"pending": [_e(1, 0), {**_e(seq, 1), "elapsed_ms": 1}]})
        assert r.status_code == 200 and r.json()["refused"]
    out = _post(c, tok, {"pending": [_e(20, 1), _e(21, 2), _e(22, 3)]}).json()
    assert out["ack"] == 21 and out["unavailable"] is True
    assert _stored() == 3


# ------------------------------------------- item 7: bounded fields, requests rate-limited
@pytest.mark.parametrize(
    "body",
    [
        {"need": 2**62},
        {"need": 2**31},
        {"need": -2},
        {"need": 0, "mark": [2**62, 0]},
        {"need": 0, "mark": [0, -(2**62)]},
        {"at": 2**62},
        {"pending": [{**_e(1, 0), "version": 2**62}]},
        {"pending": [{**_e(1, 0), "value": "x" * 100_000}]},  # was echoed back in the reason
    ],
)
def test_unbounded_need_and_mark_are_refused_not_a_500(study, body):
    c, tok = _client(), _token(study)
    r = _post(c, tok, body)
    assert r.status_code == 400 and r.json()["error"] == "invalid"


def test_largest_allowed_need_and_mark_are_answered(study):
    c, tok = _client(), _token(study)
    r = _post(c, tok, {"need": 2**31 - 1, "at": 0, "mark": [2**31 - 1, 2**31 - 1]})
    assert r.status_code in (200, 409), r.text


def test_requests_without_ratings_are_rate_limited(study, monkeypatch):
    from medsim_annot.services import endpoint_quota

    c, tok = _client(), _token(study)  # one request: the window served
    monkeypatch.setattr(endpoint_quota, "MAX_REQUESTS_PER_WINDOW", 5)
    codes = [_post(c, tok, {"need": -1}).status_code for _ in range(4)]
    assert codes == [200] * 4
    r = _post(c, tok, {"need": -1})
    assert r.status_code == 429 and r.json()["retry_after_ms"] > 0
    # Broken bodies count too, and a save is refused once the requests are used up.
    assert _post(c, tok, None, raw=b"{not json").status_code == 429
    assert _post(c, tok, {"pending": [_e(1, 0)]}).status_code == 429
    assert _stored() == 0
    # Another annotator is not affected.
    assert _post(c, _token(study, "other"), {"need": -1}).status_code == 200


# ----------------------------------------------- item 12: Origin, Content-Type, token first
@pytest.mark.parametrize(
    "origin, host, foreign",
    [
        (None, "ward.example", False),
        ("https://ward.example", "ward.example", False),
        ("https://WARD.example/", "ward.example", False),
        ("http://localhost:8501", "localhost:8501", False),
        ("https://evil.example", "ward.example", True),
        ("http://localhost:9000", "localhost:8501", True),
        ("null", "ward.example", True),
        ("https://ward.example.evil.example", "ward.example", True),
        ("file://", "ward.example", True),
    ],
)
def test_foreign_origin(origin, host, foreign):
    assert ratings_api.foreign_origin(origin, host) is foreign


def test_allowed_origins_are_configurable(monkeypatch):
    monkeypatch.setenv("MEDSIM_ALLOWED_ORIGINS", "https://portal.example, https://b.example")
    assert ratings_api.foreign_origin("https://portal.example", "ward.example") is False
    assert ratings_api.foreign_origin("https://c.example", "ward.example") is True


def test_a_page_of_another_origin_is_refused(study):
    c, tok = _client(), _token(study)
    r = _post(c, tok, {"pending": [_e(1, 0)]}, headers={"Origin": "https://evil.example"})
    assert r.status_code == 403 and r.json()["error"] == "forbidden"
    r = _post(c, tok, {"pending": [_e(1, 0)]}, headers={"Origin": "http://testserver"})
    assert r.status_code == 200
    assert _stored() == 1


@pytest.mark.parametrize("ctype", ["text/plain", "application/x-www-form-urlencoded", None])
def test_a_body_that_is_not_json_is_refused(study, ctype):
    c, tok = _client(), _token(study)
    headers = {"Authorization": f"Bearer {tok}"}
    if ctype:
        headers["Content-Type"] = ctype
    r = c.post(RATINGS_PATH, content=json.dumps({"pending": [_e(1, 0)]}), headers=headers)
    assert r.status_code == 415 and r.json()["error"] == "unsupported"
    assert _stored() == 0


def test_a_large_body_with_a_bad_token_is_refused_before_it_is_read(study, monkeypatch):
    good = _token(study)
    read = []
    original = ratings_api._body

    async def spy(request):
        read.append(1)
        return await original(request)

    monkeypatch.setattr(ratings_api, "_body", spy)
    c = _client()
    big = b'{"pending": [], "need": -1, "x": "' + b"a" * 1_400_000 + b'"}'
    r = _post(c, "not-a-token", None, raw=big)
    assert r.status_code == 401 and read == []
    # With a good token the body is read (and this one breaks the contract).
    r = _post(c, good, None, raw=big)
    assert r.status_code == 400 and read == [1]
