"""Annotation services: queue state, blinded pair view, append-only idempotent saves."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from data_schemas.scales import BINARY, RELATEDNESS_0_3
from medsim_annot.design import Slot, plan_study
from medsim_annot.errors import UsageProblem
from medsim_annot.services import annotation as A
from medsim_annot.services.people.annotators import authenticate_annotator, revoke_code
from medsim_annot.services.studies import create_study, export_ratings, rating_history
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import annotation as annotation_store
from medsim_annot.storage import dispose_all

SECRET = "ZZSECRETDATASETZZ"


@pytest.fixture
def dburl(backend_url):
    """MEDSIM_DATABASE_URL set to a fresh SQLite file or PostgreSQL database (conftest)."""
    return backend_url


def _pairs(n: int) -> pd.DataFrame:
    df = pd.DataFrame(
        {
            "pair_id": [f"pid{i:03d}" for i in range(n)],
            "term_1": [f"alpha {i}" for i in range(n)],
            "term_2": [f"beta {i}" for i in range(n)],
            "auto_label": pd.array([i % 2 for i in range(n)], dtype="Int64"),
            "dataset": [SECRET] * n,
            "difficulty": ["hard"] * n,
            "negative_strategy": ["levenshtein"] * n,
            "concept_id_1": ["C0000001"] * n,
            "concept_id_2": ["C0000002"] * n,
        }
    )
    return df


@pytest.fixture
def study(dburl):
    dispose_all()
    res = create_study("s1", _pairs(12), BINARY, ["ann", "bob"])
    ids = {
        a["name"]: authenticate_annotator(a["access_code"]).annotator_id for a in res["annotators"]
    }
    yield ids
    dispose_all()


def test_queue_state_and_resume(study):
    a = study["ann"]
    st = A.queue_state(a)
    assert (st.done, st.total, st.first_unrated) == (0, 12, 0)
    for p in range(3):
        A.submit_rating(a, p, "same")
    assert A.queue_state(a).first_unrated == 3
    assert A.queue_state(a).done == 3
    assert A.queue_state(study["bob"]).done == 0  # only own queue


def test_get_pair_is_blind(study):
    a = study["ann"]
    A.submit_rating(study["bob"], 0, "not_same", comment="bob's note")
    view = A.get_pair(a, 0)
    fields = {f.name for f in dataclasses.fields(view)}
    assert fields == {
        "position",
        "total",
        "done",
        "term_1",
        "term_2",
        "scale",
        "guideline",
        "rating",
        "unclear",
        "comment",
        "version",
    }
    assert view.version == 0  # bob's rating of his own slot is not counted here
    text = repr(view)
    for secret in (SECRET, "levenshtein", "hard", "C0000001", "pid000", "auto_label", "bob"):
        assert secret not in text
    assert view.rating is None and view.comment == ""  # bob's rating is not shown
    assert (view.term_1, view.term_2) == ("alpha 0", "beta 0")


def test_swapped_slot_shows_terms_swapped(dburl):
    dispose_all()
    res = create_study(
        "s2", _pairs(3), BINARY, queues={"x": [Slot(0), Slot(2), Slot(0, "duplicate", True)]}
    )
    a = authenticate_annotator(res["annotators"][0]["access_code"]).annotator_id
    assert (A.get_pair(a, 2).term_1, A.get_pair(a, 2).term_2) == ("beta 0", "alpha 0")
    assert A.get_pair(a, 1).term_1 == "alpha 2"
    dispose_all()


def test_submit_is_idempotent_and_keeps_history(study):
    a = study["ann"]
    r1 = A.submit_rating(a, 0, "same", elapsed_ms=1234)
    r2 = A.submit_rating(a, 0, "same")  # double press
    assert r1.saved and not r2.saved
    assert r1.next_position == 1 and A.queue_state(a).done == 1
    A.submit_rating(a, 0, "not_same", comment="changed my mind")
    hist = rating_history(open_study("s1"))
    assert len(hist) == 2
    assert hist["elapsed_ms"].iloc[0] == 1234
    out = export_ratings(open_study("s1"))
    assert out.loc[(out.annotator == "ann") & (out.pair_id == "pid000"), "rating"].tolist() == [
        "not_same"
    ]
    assert A.get_pair(a, 0).rating == "not_same"
    assert A.get_pair(a, 0).comment == "changed my mind"


def test_next_position_goes_to_skipped_then_complete(study):
    a = study["ann"]
    for p in range(1, 12):
        res = A.submit_rating(a, p, "same")
    assert res.next_position == 0  # wraps to the first unrated
    res = A.submit_rating(a, 0, "dont_know")
    assert res.next_position is None
    assert (A.queue_state(a).done, A.queue_state(a).total) == (12, 12)
    assert A.queue_state(a).complete


def test_back_and_change_returns_to_where_one_was(study):
    a = study["ann"]
    for p in range(5):
        A.submit_rating(a, p, "same")
    res = A.submit_rating(a, 2, "not_same")
    assert res.next_position == 5


def test_bad_value_and_unclear(study):
    with pytest.raises(UsageProblem, match="allowed"):
        A.submit_rating(study["ann"], 0, "maybe")
    with pytest.raises(UsageProblem, match="unclear"):
        A.submit_rating(study["ann"], 0, "same", unclear=True)
    with pytest.raises(UsageProblem):
        A.get_pair(study["ann"], 99)


def test_unclear_flag_and_numeric_scale(dburl):
    dispose_all()
    res = create_study("rel", _pairs(4), RELATEDNESS_0_3, ["x"])
    a = authenticate_annotator(res["annotators"][0]["access_code"]).annotator_id
    A.submit_rating(a, 0, 2, unclear=True)
    assert A.submit_rating(a, 0, "2", unclear=True).saved is False
    v = A.get_pair(a, 0)
    assert v.rating == 2 and v.unclear
    assert A.submit_rating(a, 0, 2, unclear=False).saved
    dispose_all()


def test_revoked_annotator_cannot_rate(study):
    revoke_code(open_study("s1"), "ann")
    with pytest.raises(UsageProblem, match="revoked"):
        A.submit_rating(study["ann"], 0, "same")


def test_planned_queue_round_trip(dburl):
    dispose_all()
    plan = plan_study(12, ["a", "b", "c"], per_item=2, duplicates=0.25, seed=1)
    res = create_study("planned", _pairs(12), BINARY, queues=plan.queues, config=plan.config)
    for info in res["annotators"]:
        who = authenticate_annotator(info["access_code"]).annotator_id
        q = plan.queues[info["name"]]
        assert A.queue_state(who).total == len(q)
        for pos, slot in enumerate(q):
            v = A.get_pair(who, pos)
            t1, t2 = f"alpha {slot.item}", f"beta {slot.item}"
            assert (v.term_1, v.term_2) == ((t2, t1) if slot.swapped else (t1, t2))
    dispose_all()


def test_incremental_progress_matches_exact_count(dburl, monkeypatch):
    import numpy as np

    dispose_all()
    monkeypatch.setattr(annotation_store, "_WINDOW", 3)
    res = create_study("inc", _pairs(40), BINARY, ["x", "y"])
    ids = [authenticate_annotator(a["access_code"]).annotator_id for a in res["annotators"]]
    rng = np.random.default_rng(0)
    rated = {i: set() for i in ids}
    for step in range(120):
        who = ids[step % 2]
        pos = int(rng.integers(0, 40))
        A.submit_rating(who, pos, "same" if rng.random() < 0.5 else "not_same")
        rated[who].add(pos)
        assert A.get_pair(who, pos).done == len(rated[who])
    for who in ids:
        assert A.queue_state(who).done == len(rated[who])
    dispose_all()
