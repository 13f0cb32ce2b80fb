"""The column-wise read of a study's rating history (quality over time's input) gives the
ORM read's frame exactly — same columns, types and values, superseded ratings, comments,
missing times and guideline versions included — on SQLite and PostgreSQL, and quality over
time computed from it is the one computed from the ORM rows."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pytest
from sqlalchemy import select

from data_schemas.scales import BINARY
from medsim_annot.services import annotation as A
from medsim_annot.services import drift as svc
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.studies import create_study, rating_history
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all, session_scope
from medsim_annot.storage.history_arrow import rating_history_arrays
from medsim_annot.storage.models import Rating
from medsim_annot.storage.studies import insert_ratings


def _pairs(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "pair_id": [f"p{i:03d}" for i in range(n)],
            "term_1": [f"alpha {i}" for i in range(n)],
            "term_2": [f"beta {i}" for i in range(n)],
        }
    )


@pytest.fixture
def study(backend_url):
    dispose_all()
    res = create_study("hist", _pairs(6), BINARY, ["ann", "bob", "cat"])
    ids = {}
    for a in res["annotators"]:
        who = authenticate_annotator(a["access_code"])
        assert who is not None
        ids[a["name"]] = who.annotator_id
    yield ids
    dispose_all()


def _same(s) -> pd.DataFrame:
    assert rating_history_arrays(s.engine, s.id) is not None  # the column-wise read ran
    fast, orm = svc.history_of(s), rating_history(s)
    pd.testing.assert_frame_equal(fast, orm)
    return fast


def test_an_empty_history_is_the_orm_one(study):
    assert len(_same(open_study("hist"))) == 0


def test_the_history_read_column_wise_is_the_orm_read(study):
    s = open_study("hist")
    A.submit_rating(study["ann"], 0, "same", comment="wording — unclear", elapsed_ms=1200)
    A.submit_rating(study["ann"], 0, "not_same", elapsed_ms=800)  # a changed answer
    A.submit_rating(study["bob"], 0, "dont_know", elapsed_ms=3000)
    svc.revise_guideline(s, "Synonyms only.", note="v2")
    A.submit_rating(study["cat"], 1, "same", comment="ok", elapsed_ms=2500)
    A.submit_rating(study["bob"], 1, "same", elapsed_ms=10)
    fast = _same(s)
    assert len(fast) == 5 and fast["rating_id"].is_monotonic_increasing
    assert fast["elapsed_ms"].dtype == "int64"
    # A rating with neither a time taken nor a guideline version (an import, an old row),
    # flagged unclear:
    # the columns become floats with NaN, as the ORM frame's.
    with session_scope(s.engine) as tx:
        last = rating_history(s).iloc[-1]
        from_orm = tx.execute(
            select(Rating.annotator_id, Rating.item_id, Rating.assignment_id).where(
                Rating.id == int(last["rating_id"])
            )
        ).one()
        insert_ratings(
            tx,
            [
                {
                    "study_id": s.id,
                    "annotator_id": from_orm[0],
                    "item_id": from_orm[1],
                    "assignment_id": from_orm[2],
                    "value": "not_same",
                    "unclear": True,
                    "comment": "",
                    "rated_at": dt.datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=dt.UTC),
                    "elapsed_ms": None,
                    "source": "import",
                    "guideline_version": None,
                }
            ],
        )
    fast = _same(s)
    assert fast["elapsed_ms"].isna().sum() == 1 and fast["guideline_version"].isna().sum() == 1


def test_quality_over_time_from_the_fast_read_is_the_orm_one(study):
    s = open_study("hist")
    for pos in range(6):
        for who, v in (("ann", "same"), ("bob", "same"), ("cat", "not_same")):
            A.submit_rating(study[who], pos, v, elapsed_ms=1000 + pos)
    settings = svc.DriftSettings(window=2, baseline_windows=1)
    fast = svc.quality_over_time(s, settings=settings)
    orm = svc.quality_over_time_of(rating_history(s), s.scale, settings=settings)
    pd.testing.assert_frame_equal(fast.windows, orm.windows)
    pd.testing.assert_frame_equal(fast.days, orm.days)
    pd.testing.assert_frame_equal(fast.alerts, orm.alerts)
    assert fast.notes == orm.notes


def test_a_text_the_column_wise_read_cannot_cut_falls_back_to_the_orm_read(study):
    s = open_study("hist")
    A.submit_rating(study["ann"], 0, "same", elapsed_ms=100)
    row = rating_history(s).iloc[0]
    with session_scope(s.engine) as tx:
        ids = tx.execute(
            select(Rating.annotator_id, Rating.item_id, Rating.assignment_id).where(
                Rating.id == int(row["rating_id"])
            )
        ).one()
        insert_ratings(
            tx,
            [
                {
                    "study_id": s.id,
                    "annotator_id": ids[0],
                    "item_id": ids[1],
                    "assignment_id": ids[2],
                    "value": "not_same",
                    "unclear": False,
                    "comment": "",
                    "rated_at": dt.datetime(2026, 3, 1, tzinfo=dt.UTC),
                    "elapsed_ms": 5,
                    "source": "odd\x1fsource",  # the SQLite read's separator
                }
            ],
        )
    if s.engine.dialect.name == "sqlite":
        assert rating_history_arrays(s.engine, s.id) is None
    pd.testing.assert_frame_equal(svc.history_of(s), rating_history(s))
