"""The widget's queue of unacknowledged ratings, committed in order (services/rating_queue)."""

from __future__ import annotations

import pandas as pd
import pytest

from data_schemas.scales import BINARY
from data_schemas.widget import RatingEntry
from medsim_annot.services import annotation as A
from medsim_annot.services.rating_queue import commit_pending
from medsim_annot.services.studies import create_study, rating_history
from medsim_annot.services.study_handle import open_study
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


def _e(seq, position, value, version=None, after=None, **kw) -> RatingEntry:
    kw.setdefault("elapsed_ms", 900)
    return RatingEntry(seq=seq, position=position, value=value, version=version, after=after, **kw)


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
    assert rating_history(open_study("q"))["rating"].tolist() == ["same", "not_same", "dont_know"]
    # A resend of the whole list (its acknowledgement lost) stores nothing new.
    again = commit_pending(
        aid,
        [_e(1, 0, "same", 0), _e(2, 1, "not_same", 0), _e(3, 0, "dont_know", after=1)],
        acked=0,
        log={},
        engine=eng,
    )
    assert again.ack == 3 and again.refused == []
    assert len(rating_history(open_study("q"))) == 3


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
    assert rating_history(open_study("q"))["rating"].tolist() == ["same"]


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
    from medsim_annot.services.people.annotators import revoke_code

    _, eng = study
    aid = _annotator_id(eng)
    revoke_code(open_study("q"), "doc")
    out = commit_pending(aid, [_e(1, 0, "same", 0)], acked=0, log={}, engine=eng)
    assert out.ended and "revoked" in out.ended and out.ack == 0
