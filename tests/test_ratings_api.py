"""The ratings endpoint (``POST /api/annotate/ratings``) on SQLite and PostgreSQL.

Driven over HTTP with Starlette's test client against the same routes ``serve.py`` mounts:
every rule of the commit path (token, position, scale, comment cap, minimum view time,
stale version, body size, write rate, revisions per slot) refuses with a reason and stores
nothing; only ``PairView`` fields leave the server; any app instance answers any request.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.testclient import TestClient

from data_schemas.limits import COMMENT_MAX_CHARS, MIN_VIEW_MS
from data_schemas.scales import BINARY
from data_schemas.widget import (
    MAX_BATCH,
    MAX_BODY_BYTES,
    RATINGS_PATH,
    RatingEntry,
    RatingsRequest,
    RatingsResponse,
    WidgetPair,
)
from medsim_annot import ratings_api
from medsim_annot.services import endpoint_quota, rating_queue
from medsim_annot.services.people import tokens
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.studies import create_study, rating_history
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all, get_engine

SECRET = "ZZSECRETDATASET"


@pytest.fixture
def study(backend_url):
    dispose_all()
    pairs = pd.DataFrame(
        {
            "pair_id": [f"ZZPID{i}" for i in range(6)],
            "term_1": [f"first {i}" for i in range(6)],
            "term_2": [f"second {i}" for i in range(6)],
            "auto_label": pd.array([i % 2 for i in range(6)], dtype="Int64"),
            "dataset": [SECRET] * 6,
        }
    )
    res = create_study("api", pairs, BINARY, ["doc", "other"], engine=get_engine(backend_url))
    codes = {a["name"]: a["access_code"] for a in res["annotators"]}
    yield {"url": backend_url, "codes": codes}
    dispose_all()


def _client() -> TestClient:
    return TestClient(Starlette(routes=ratings_api.routes()))


def _token(study, name="doc", serve: bool = True, **kw) -> str:
    """A token of a new page session that was served the whole queue (six slots): the
    endpoint takes ratings only of slots served to the rating's session."""
    ident = authenticate_annotator(study["codes"][name])
    assert ident is not None
    token = tokens.mint_token(ident.annotator_id, ident.credential_version, **kw).token
    if serve:
        _post(_client(), token, {"need": 0})
    return token


def _post(client, token, body, raw: bytes | None = None):
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return client.post(
        RATINGS_PATH, content=raw if raw is not None else json.dumps(body), headers=headers
    )


def _e(seq, position, value="same", version=0, **kw) -> dict:
    return {
        "seq": seq,
        "position": position,
        "value": value,
        "version": version,
        "elapsed_ms": 900,
        **kw,
    }


def _history() -> list[tuple[str, str]]:
    h = rating_history(open_study("api"))
    return list(zip(h["annotator"], h["rating"]))


def test_resume_sends_a_blind_window_and_commits_in_order(study):
    c, tok = _client(), _token(study)
    r = _post(c, tok, {"need": -1})
    assert r.status_code == 200 and r.headers["cache-control"] == "no-store"
    raw = r.text
    for secret in (SECRET, "ZZPID", "auto_label", "dataset", "pair_id"):
        assert secret not in raw
    data = RatingsResponse.model_validate_json(raw)
    assert data.resume and data.start == 0 and data.total == 6 and data.done == 0
    assert [p.term_1 for p in data.window] == [f"first {i}" for i in range(6)]
    assert set(json.loads(raw)["window"][0]) == set(WidgetPair.model_fields)
    pending = [_e(1, 0), _e(2, 1, "not_same"), _e(3, 0, "dont_know", version=None, after=1)]
    r = _post(c, tok, {"pending": pending, "at": 2, "mark": list(data.mark)})
    out = r.json()
    assert r.status_code == 200 and out["ack"] == 3 and out["refused"] == []
    assert out["versions"] == {"1": 1, "2": 1, "3": 2}
    assert out["window"] == []  # the queue did not move: nothing to send again
    # The same list again (an acknowledgement lost on the way): nothing is stored twice.
    assert _post(c, tok, {"pending": pending}).json()["ack"] == 3
    assert _history() == [("doc", "same"), ("doc", "not_same"), ("doc", "dont_know")]
    # A window from a position (two served before it), and where to resume.
    out = _post(c, tok, {"need": 3}).json()
    assert [p["position"] for p in out["window"]] == [1, 2, 3, 4, 5]
    out = _post(c, tok, {"need": -1}).json()
    assert out["resume"] and out["start"] == 2 and out["done"] == 2


@pytest.mark.parametrize(
    "header, code",
    [(None, "unauthorized"), ("Basic abc", "unauthorized"), ("Bearer nope", "expired")],
)
def test_no_or_unknown_token_is_refused(study, header, code):
    c = _client()
    headers = {"Authorization": header} if header else {}
    r = c.post(RATINGS_PATH, json={"pending": [_e(1, 0)]}, headers=headers)
    assert r.status_code == 401 and r.json()["error"] == code and r.json()["reason"]
    assert _history() == []


def test_expired_token_is_refused(study):
    c, tok = _client(), _token(study, ttl_s=-1)
    r = _post(c, tok, {"pending": [_e(1, 0)]})
    assert r.status_code == 401 and r.json()["error"] == "expired"
    assert _history() == []


def test_revoke_reissue_and_sign_out_end_the_token(study):
    from medsim_annot.services.people.annotators import issue_code, revoke_code

    c = _client()
    tok = _token(study)
    assert _post(c, tok, {"pending": [_e(1, 0)]}).status_code == 200
    revoke_code(open_study("api"), "doc")
    r = _post(c, tok, {"pending": [_e(2, 1)]})
    assert r.status_code == 401 and r.json()["error"] == "ended"
    assert "replaced or revoked" in r.json()["reason"]
    # The other annotator: a new code ends the old token; sign-out ends the new one.
    tok_other = _token(study, "other")
    issue_code(open_study("api"), "other")
    assert _post(c, tok_other, {"pending": [_e(1, 0)]}).json()["error"] == "ended"
    assert _history() == [("doc", "same")]
    ident = authenticate_annotator(study["codes"]["doc"])
    assert ident is None  # revoked


def test_sign_out_ends_the_token(study):
    c, tok = _client(), _token(study)
    assert tokens.end_token(tok) is True
    r = _post(c, tok, {"need": -1})
    assert r.status_code == 401 and r.json()["error"] == "expired"
    assert tokens.end_token(tok) is False


def test_token_is_stored_hashed_only(study):
    from sqlalchemy import text

    tok = _token(study)
    with get_engine(study["url"]).connect() as conn:
        hashes = [r[0] for r in conn.execute(text("SELECT token_hash FROM rating_tokens"))]
    assert tok not in hashes and len(hashes) == 1 and len(hashes[0]) == 64


def test_wrong_position_value_and_min_view_are_refused_with_reasons(study):
    c, tok = _client(), _token(study)
    out = _post(
        c,
        tok,
        {
            "pending": [
                _e(1, 99),
                _e(2, 0, "maybe"),
                {**_e(3, 1), "elapsed_ms": MIN_VIEW_MS - 1},
                _e(4, 2, "same", unclear=True),
                _e(5, 3),
            ]
        },
    ).json()
    assert out["ack"] == 5
    messages = {r["seq"]: r["message"] for r in out["refused"]}
    assert set(messages) == {1, 2, 3, 4}
    assert "not served to the session" in messages[1]  # never served: not in the queue
    assert "not a value of the binary scale" in messages[2]
    assert f"less than {MIN_VIEW_MS} ms" in messages[3]
    assert "unclear" in messages[4]
    assert _history() == [("doc", "same")]


def test_another_annotators_position_is_not_reachable(study):
    """Positions are per annotator: the same position number is the caller's own slot."""
    c = _client()
    _post(c, _token(study, "other"), {"pending": [_e(1, 0, "not_same")]})
    out = _post(c, _token(study), {"need": 0}).json()
    assert out["window"][0]["rating"] is None  # doc never sees other's answer


def test_stale_version_is_refused_with_the_current_answer(study):
    c = _client()
    tok_a, tok_b = _token(study), _token(study)  # two tabs
    assert _post(c, tok_b, {"pending": [_e(1, 0, "same")]}).json()["ack"] == 1
    out = _post(c, tok_a, {"pending": [_e(1, 0, "not_same", version=0)]}).json()
    assert out["ack"] == 1 and out["refused"][0]["current"]["rating"] == "same"
    assert "changed in another window" in out["refused"][0]["message"]
    assert _history() == [("doc", "same")]


@pytest.mark.parametrize(
    "body, where",
    [
        ({"pending": [{"seq": 1, "position": 0, "value": "same"}]}, "elapsed_ms"),
        ({"pending": [_e(1, 0, comment="x" * (COMMENT_MAX_CHARS + 1))]}, "comment"),
        ({"pending": [_e(0, 0)]}, "seq"),
        ({"pending": [_e(1, -1)]}, "position"),
        ({"pending": [_e(1, 0, True)]}, "value"),
        ({"pending": [{**_e(1, 0), "pair_id": "x"}]}, "pair_id"),
        ({"pending": [_e(i + 1, 0) for i in range(MAX_BATCH + 1)]}, "pending"),
        ({"need": -2}, "need"),
        ([], "body"),
    ],
)
def test_a_body_that_breaks_the_contract_stores_nothing(study, body, where):
    r = _post(_client(), _token(study), body)
    assert r.status_code == 400 and r.json()["error"] == "invalid"
    assert r.json()["reason"].startswith(where) or where in r.json()["reason"]
    assert _history() == []


def test_oversize_and_malformed_bodies(study):
    c, tok = _client(), _token(study)
    r = _post(c, tok, None, raw=b"{" + b" " * MAX_BODY_BYTES + b"}")
    assert r.status_code == 413 and r.json()["error"] == "too_large"
    r = _post(c, tok, None, raw=b"{not json")
    assert r.status_code == 400 and r.json()["error"] == "invalid"
    assert _history() == []


def test_write_rate_cap_per_session(study, monkeypatch):
    monkeypatch.setattr(endpoint_quota, "MAX_WRITES_PER_WINDOW", 3)
    c, tok = _client(), _token(study)
    out = _post(c, tok, {"pending": [_e(i + 1, i) for i in range(5)]}).json()
    # Three stored; the rest wait (unacknowledged, "will retry").
    assert out["ack"] == 3 and out["unavailable"] is True
    r = _post(c, tok, {"pending": [_e(4, 3), _e(5, 4)]})
    assert r.status_code == 429 and r.json()["error"] == "rate_limited"
    assert r.json()["retry_after_ms"] > 0
    assert len(_history()) == 3
    # Reading pairs is not writing: still served.
    assert _post(c, tok, {"need": -1}).status_code == 200


def test_revision_cap_per_slot(study, monkeypatch):
    monkeypatch.setattr(rating_queue, "MAX_REVISIONS_PER_SLOT", 3)
    c, tok = _client(), _token(study)
    values = ["same", "not_same", "dont_know", "same"]
    pending = [_e(1, 0, values[0])] + [
        _e(i + 1, 0, v, version=None, after=i) for i, v in enumerate(values[1:], start=1)
    ]
    out = _post(c, tok, {"pending": pending}).json()
    assert out["ack"] == 4 and [r["seq"] for r in out["refused"]] == [4]
    assert "changed 3 times" in out["refused"][0]["message"]
    assert len(_history()) == 3


def test_store_unavailable_is_503_and_stores_nothing(study, monkeypatch):
    from medsim_annot.errors import StoreUnavailable

    def down(*a, **k):
        raise StoreUnavailable("the study store is unavailable (database is locked)")

    tok = _token(study)
    with monkeypatch.context() as m:
        m.setattr(rating_queue, "with_retry", down)
        r = _post(_client(), tok, {"pending": [_e(1, 0)]})
    assert r.status_code == 503 and r.json()["error"] == "unavailable"
    assert _history() == []


def test_any_instance_serves_any_request(study):
    """Stateless: two separate app instances (as two processes behind nginx) take turns."""
    one, two, tok = _client(), _client(), _token(study)
    first = _post(one, tok, {"need": -1}).json()
    out = _post(two, tok, {"pending": [_e(1, 0)], "at": 1, "mark": first["mark"]}).json()
    assert out["ack"] == 1
    out = _post(one, tok, {"pending": [_e(2, 1, "not_same")], "need": -1}).json()
    assert out["ack"] == 2 and out["start"] == 2
    assert _history() == [("doc", "same"), ("doc", "not_same")]


_ENTRY_KEYS = (
    "seq",
    "position",
    "value",
    "unclear",
    "comment",
    "elapsed_ms",
    "version",
    "after",
    "session",
)
#: The longest time on a pair the endpoint takes as sent (one day, in ms; docs/annotation.md).
_ONE_DAY_MS = 24 * 60 * 60 * 1000


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _well_formed(raw) -> bool:
    """The widget's entry as docs/ and the JS send it, written out apart from ``RatingEntry``:
    known keys only; ``seq`` 1..2^53, ``position`` 0..2^31-1, ``elapsed_ms`` >= 0 (whole
    numbers, not booleans); ``value`` a string or number (not a boolean); optional
    ``unclear`` (boolean), ``comment`` (string of at most COMMENT_MAX_CHARS once stripped),
    ``version`` (whole, >= 0), ``after`` (a seq) and ``session`` (16–43 characters of
    URL-safe base64)."""
    if not isinstance(raw, dict) or set(raw) - set(_ENTRY_KEYS):
        return False
    if not all(k in raw for k in ("seq", "position", "value", "elapsed_ms")):
        return False
    seq, pos, value, ms = raw["seq"], raw["position"], raw["value"], raw["elapsed_ms"]
    version, after = raw.get("version"), raw.get("after")
    comment, unclear = raw.get("comment", ""), raw.get("unclear", False)
    session = raw.get("session")
    return (
        _is_int(seq)
        and 1 <= seq <= 2**53
        and _is_int(pos)
        and 0 <= pos <= 2**31 - 1
        and _is_int(ms)
        and ms >= 0
        and isinstance(value, (str, int, float))
        and not isinstance(value, bool)
        and isinstance(unclear, bool)
        and isinstance(comment, str)
        and len(comment.strip()) <= COMMENT_MAX_CHARS
        and (version is None or (_is_int(version) and version >= 0))
        and (after is None or (_is_int(after) and 1 <= after <= 2**53))
        and (
            session is None
            or (
                isinstance(session, str)
                and 16 <= len(session) <= 43
                and all(c.isascii() and (c.isalnum() or c in "-_") for c in session)
            )
        )
    )


def _mostly(valid, broken):
    """*valid* nine draws in ten, *broken* otherwise: most entries come out well-formed,
    each rule is still broken on its own now and then."""
    return st.integers(0, 9).flatmap(lambda k: broken if k == 0 else valid)


_JUNK = st.one_of(st.none(), st.booleans(), st.floats(), st.text(max_size=3), st.just([1]))
_ENTRIES = _mostly(
    st.fixed_dictionaries(
        {
            "seq": _mostly(st.integers(1, 2**53), st.one_of(st.integers(-3, 0), _JUNK)),
            "position": _mostly(st.integers(0, 500), st.one_of(st.integers(-3, -1), _JUNK)),
            "value": _mostly(
                st.one_of(
                    st.sampled_from(["same", "not_same"]),
                    st.integers(0, 3),
                    st.floats(allow_nan=False),
                ),
                st.one_of(st.booleans(), st.none(), st.just({})),
            ),
            "elapsed_ms": _mostly(
                st.integers(0, 10**10), st.one_of(st.integers(-(10**6), -1), _JUNK)
            ),
        },
        optional={
            "unclear": _mostly(st.booleans(), st.one_of(st.integers(0, 1), st.none())),
            "comment": _mostly(
                st.text(max_size=20), st.one_of(st.just("x" * (COMMENT_MAX_CHARS + 1)), _JUNK)
            ),
            "version": _mostly(st.one_of(st.none(), st.integers(0, 9)), st.integers(-3, -1)),
            "after": _mostly(st.one_of(st.none(), st.integers(1, 9)), st.integers(-3, 0)),
            "session": _mostly(
                st.one_of(st.none(), st.text("abcXYZ019-_", min_size=16, max_size=43)),
                st.one_of(st.text("abc", max_size=15), st.just("a b" * 8), _JUNK),
            ),
            "extra": st.integers(),
        },
    ).map(lambda d: {k: v for k, v in d.items() if k != "extra" or len(d) % 7 == 0}),
    st.dictionaries(st.sampled_from(_ENTRY_KEYS), _JUNK, max_size=4),
)


def test_the_contract_accepts_well_formed_entries_only():
    """Untrusted JSON from the browser: a well-formed entry (an oracle written apart from the
    model) is accepted with its fields as sent, anything else is refused with one
    ValidationError; both kinds are drawn often (counted and checked below)."""
    seen = {True: 0, False: 0}

    @settings(max_examples=300, deadline=None)
    @given(_ENTRIES)
    def check(raw):
        ok = _well_formed(raw)
        seen[ok] += 1
        if not ok:
            with pytest.raises(ValidationError):
                RatingEntry.model_validate(raw)
            with pytest.raises(ValidationError):
                RatingsRequest.model_validate({"pending": [raw]})
            return
        e = RatingEntry.model_validate(raw)
        assert (e.seq, e.position, e.value) == (raw["seq"], raw["position"], raw["value"])
        assert e.elapsed_ms == min(raw["elapsed_ms"], _ONE_DAY_MS)
        assert e.unclear is raw.get("unclear", False)
        assert e.comment == raw.get("comment", "").strip()
        assert (e.version, e.after) == (raw.get("version"), raw.get("after"))
        assert e.session == raw.get("session")
        assert RatingsRequest.model_validate({"pending": [raw]}).pending[0] == e

    check()
    assert seen[True] >= 75 and seen[False] >= 75, seen
