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
    ident = authenticate_annotator(study["codes"][name])
    assert ident is not None
    return tokens.mint_token(ident.annotator_id, ident.credential_version).token


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
