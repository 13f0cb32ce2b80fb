"""The widget's queue of unacknowledged ratings, committed in order (services/rating_queue)."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from data_schemas.scales import BINARY
from medsim_annot.errors import UsageProblem
from medsim_annot.services import annotation as A
from medsim_annot.services.rating_queue import PendingRating, commit_pending
from medsim_annot.services.studies import create_study, rating_history
from medsim_annot.storage import dispose_all, get_engine


@pytest.fixture
def study(backend_url):
    dispose_all()
    pairs = pd.DataFrame(
        {"pair_id": [f"p{i}" for i in range(5)], "term_1": list("abcde"), "term_2": list("ABCDE")}
    )
    create_study("q", pairs, BINARY, ["doc"])
    yield "q", get_engine(backend_url)
    dispose_all()


def _annotator_id(engine) -> int:
    from sqlalchemy import select

    from medsim_annot.storage import session_scope
    from medsim_annot.storage.models import Annotator

    with session_scope(engine) as s:
        return s.scalar(select(Annotator.id).where(Annotator.name == "doc"))


def _e(seq, position, value, version=None, after=None, **kw) -> PendingRating:
    return PendingRating(seq, position, value, version=version, after=after, **kw)


def test_commits_in_order_chains_edits_and_acknowledges(study):
    _, eng = study
    aid = _annotator_id(eng)
    log: dict[int, int] = {}
    out = commit_pending(
        aid,
        [_e(1, 0, "same", 0), _e(2, 1, "not_same", 0), _e(3, 0, "dont_know", after=1)],
        acked=0,
        log=log,
        engine=eng,
    )
    assert out.ack == 3 and out.refused == [] and not out.unavailable
    assert out.versions == {1: 1, 2: 1, 3: 2}
    assert rating_history("q")["rating"].tolist() == ["same", "not_same", "dont_know"]
    # A resend of the whole list (its acknowledgement lost) stores nothing new.
    again = commit_pending(
        aid,
        [_e(1, 0, "same", 0), _e(2, 1, "not_same", 0), _e(3, 0, "dont_know", after=1)],
        acked=0,
        log={},
        engine=eng,
    )
    assert again.ack == 3 and again.refused == []
    assert len(rating_history("q")) == 3


def test_a_stale_version_is_refused_with_the_current_answer(study):
    _, eng = study
    aid = _annotator_id(eng)
    A.submit_rating(aid, 0, "same", expected_version=0, engine=eng)  # another window
    out = commit_pending(
        aid, [_e(1, 0, "not_same", 0), _e(2, 0, "dont_know", after=1)], acked=0, log={}, engine=eng
    )
    assert out.ack == 2
    assert [r["seq"] for r in out.refused] == [1, 2]
    assert out.refused[0]["current"]["rating"] == "same"
    assert out.refused[0]["current"]["version"] == 1
    assert "changed in another window" in out.refused[0]["message"]
    assert rating_history("q")["rating"].tolist() == ["same"]


def test_store_errors_stop_at_the_entry_and_keep_the_rest(study, monkeypatch):
    from medsim_annot.errors import StoreUnavailable

    _, eng = study
    aid = _annotator_id(eng)
    real = A.submit_rating
    calls = []

    def flaky(*args, **kwargs):
        calls.append(args[1])
        if args[1] == 1:
            raise StoreUnavailable("disk full")
        return real(*args, **kwargs)

    monkeypatch.setattr(A, "submit_rating", flaky)
    out = commit_pending(
        aid,
        [_e(1, 0, "same", 0), _e(2, 1, "same", 0), _e(3, 2, "same", 0)],
        acked=0,
        log={},
        engine=eng,
    )
    assert out.unavailable and out.ack == 1 and calls == [0, 1]


def test_revoked_code_ends_the_session(study):
    from medsim_annot.services.annotators import revoke_code

    _, eng = study
    aid = _annotator_id(eng)
    revoke_code("q", "doc")
    out = commit_pending(aid, [_e(1, 0, "same", 0)], acked=0, log={}, engine=eng)
    assert out.ended and "revoked" in out.ended and out.ack == 0


def _whole(v) -> bool:
    """A whole number >= 0 as JSON carries it (an int, or a float with no fraction)."""
    return (
        not isinstance(v, bool)
        and isinstance(v, (int, float))
        and v == v
        and v not in (float("inf"), float("-inf"))
        and int(v) == v
        and v >= 0
    )


def _well_formed(raw) -> bool:
    """The browser contract, written out independently of ``PendingRating.parse``."""
    from medsim_annot.services.rating_queue import COMMENT_MAX_CHARS

    if not isinstance(raw, dict):
        return False
    value, comment = raw.get("value"), raw.get("comment")
    return (
        _whole(raw.get("seq"))
        and _whole(raw.get("position"))
        and not isinstance(value, bool)
        and isinstance(value, (str, int, float))
        and (
            not comment or (isinstance(comment, str) and len(comment.strip()) <= COMMENT_MAX_CHARS)
        )
        and all(
            raw.get(k) is None or _whole(raw.get(k)) for k in ("version", "after", "elapsed_ms")
        )
    )


_FIELD_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(), st.text())


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        st.none(),
        st.integers(),
        st.text(max_size=5),
        st.dictionaries(
            st.sampled_from(["seq", "position", "value", "version", "after", "comment"]),
            _FIELD_VALUES,
        ),
        st.fixed_dictionaries(  # mostly well-formed, so acceptance is exercised as well
            {
                "seq": st.integers(0, 10**6),
                "position": st.one_of(st.integers(0, 500), st.just(2.0)),
                "value": st.one_of(st.sampled_from(["same", "not_same"]), st.integers(0, 3)),
            },
            optional={
                "version": st.one_of(st.none(), st.integers(-1, 3)),
                "after": st.one_of(st.none(), st.integers(0, 3), st.just(1.5)),
                "comment": st.one_of(st.none(), st.text(max_size=20), st.integers()),
            },
        ),
    )
)
def test_parse_accepts_well_formed_entries_only(raw):
    """Untrusted JSON from the browser: a well-formed entry is accepted with its fields as
    sent, anything else is refused with one UsageProblem."""
    if not _well_formed(raw):
        with pytest.raises(UsageProblem):
            PendingRating.parse(raw)
        return
    e = PendingRating.parse(raw)
    assert (e.seq, e.position, e.value) == (raw["seq"], raw["position"], raw["value"])
    assert e.version == raw.get("version") and e.after == raw.get("after")
    assert e.comment == (raw.get("comment") or "")


def test_parse_accepts_a_browser_entry():
    e = PendingRating.parse(
        {"seq": 3, "position": 7, "value": "same", "version": 1, "comment": "ok", "unclear": True}
    )
    assert (e.seq, e.position, e.value, e.version, e.comment, e.unclear) == (
        3,
        7,
        "same",
        1,
        "ok",
        True,
    )
