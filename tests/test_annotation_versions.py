"""Versioned saves: a save carries the version the page showed; a stale one is
refused with the current answer; the same answer twice is one row; ended sessions; the
comment cap; the window of pairs the widget keeps ahead; the migration's backfill."""

from __future__ import annotations

import pandas as pd
import pytest
import sqlalchemy as sa

from data_schemas.limits import COMMENT_MAX_CHARS
from data_schemas.scales import BINARY
from medsim_annot.errors import SessionEnded, StaleRating, UsageProblem
from medsim_annot.services import annotation as A
from medsim_annot.services.people.annotators import authenticate_annotator, revoke_code
from medsim_annot.services.studies import create_study, rating_history
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all, get_engine, session_scope
from medsim_annot.storage.models import Annotator


def _pairs(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "pair_id": [f"p{i:03d}" for i in range(n)],
            "term_1": [f"alpha {i}" for i in range(n)],
            "term_2": [f"beta {i}" for i in range(n)],
        }
    )


@pytest.fixture
def ann(backend_url):
    dispose_all()
    res = create_study("v1", _pairs(8), BINARY, ["ann", "bob"])
    ids = {
        a["name"]: authenticate_annotator(a["access_code"]).annotator_id for a in res["annotators"]
    }
    yield ids
    dispose_all()


def test_version_counts_own_ratings_of_the_slot(ann):
    a = ann["ann"]
    assert A.get_pair(a, 0).version == 0
    r = A.submit_rating(a, 0, "same", expected_version=0)
    assert (r.saved, r.version, r.next_position) == (True, 1, 1)
    assert A.get_pair(a, 0).version == 1
    r = A.submit_rating(a, 0, "not_same", expected_version=1)
    assert (r.saved, r.version) == (True, 2)
    assert A.get_pair(a, 0).version == 2 and A.get_pair(ann["bob"], 0).version == 0


def test_stale_tab_is_refused_with_the_current_answer(ann):
    a = ann["ann"]
    shown = A.get_pair(a, 0).version  # tab 1 shows the pair unrated
    A.submit_rating(a, 0, "not_same", comment="tab 2", expected_version=shown)  # tab 2 rates
    with pytest.raises(StaleRating) as info:
        A.submit_rating(a, 0, "same", expected_version=shown)  # tab 1's late press
    assert info.value.current == {
        "rating": "not_same",
        "unclear": False,
        "comment": "tab 2",
        "version": 1,
    }
    assert A.get_pair(a, 0).rating == "not_same"  # nothing overwritten
    assert len(rating_history(open_study("v1"))) == 1


def test_same_answer_on_a_newer_version_is_an_idempotent_success(ann):
    a = ann["ann"]
    first = A.submit_rating(a, 0, "same", expected_version=0)
    again = A.submit_rating(a, 0, "same", expected_version=0)  # the retried request
    assert first.saved and not again.saved and again.version == 1
    assert again.next_position == first.next_position
    assert len(rating_history(open_study("v1"))) == 1


def test_unchecked_saves_still_append(ann):
    a = ann["ann"]
    A.submit_rating(a, 0, "same")
    assert A.submit_rating(a, 0, "not_same").version == 2
    assert not A.submit_rating(a, 0, "not_same").saved
    assert len(rating_history(open_study("v1"))) == 2


def test_bad_expected_version(ann):
    with pytest.raises(UsageProblem, match="expected_version"):
        A.submit_rating(ann["ann"], 0, "same", expected_version=-1)


def test_comment_cap(ann):
    a = ann["ann"]
    ok = "x" * COMMENT_MAX_CHARS
    assert A.submit_rating(a, 0, "same", comment=f"  {ok}  ").saved
    assert A.get_pair(a, 0).comment == ok
    with pytest.raises(UsageProblem, match=str(COMMENT_MAX_CHARS)):
        A.submit_rating(a, 1, "same", comment=ok + "y")
    assert len(rating_history(open_study("v1"))) == 1


def _bump_credential(annotator_id: int) -> None:
    with session_scope(get_engine()) as s:
        s.execute(
            sa.update(Annotator)
            .where(Annotator.id == annotator_id)
            .values(credential_version=Annotator.credential_version + 1)
        )


def test_credential_must_match(ann):
    a = ann["ann"]
    assert A.queue_state(a, credential=1).total == 8
    assert A.get_pair(a, 0, credential=1).position == 0
    assert A.submit_rating(a, 0, "same", credential=1).saved
    _bump_credential(a)
    for call in (
        lambda: A.queue_state(a, credential=1),
        lambda: A.get_pair(a, 1, credential=1),
        lambda: A.get_window(a, 1, 3, credential=1),
        lambda: A.submit_rating(a, 1, "same", credential=1),
        lambda: A.get_pair(a, 99, credential=1),  # even for a position outside the queue
    ):
        with pytest.raises(SessionEnded):
            call()
    assert A.get_pair(a, 1, credential=2).position == 1
    assert A.get_pair(a, 1).position == 1  # no credential: unchecked (CLI)
    assert len(rating_history(open_study("v1"))) == 1


def test_revoked_session_ends(ann):
    revoke_code(open_study("v1"), "ann")
    with pytest.raises(SessionEnded, match="revoked"):
        A.get_pair(ann["ann"], 0, credential=1)


def test_window_is_the_queue_ahead(ann):
    a = ann["ann"]
    A.submit_rating(a, 2, "not_same", comment="c")
    win = A.get_window(a, 1, 3)
    assert [v.position for v in win] == [1, 2, 3]
    assert [v.rating for v in win] == [None, "not_same", None]
    assert [v.version for v in win] == [0, 1, 0]
    assert win == [A.get_pair(a, p) for p in (1, 2, 3)]
    assert [v.position for v in A.get_window(a, 6, 5)] == [6, 7]  # end of the queue
    with pytest.raises(UsageProblem):
        A.get_window(a, 8, 2)
    with pytest.raises(UsageProblem, match="window"):
        A.get_window(a, 0, 0)


def test_migration_numbers_existing_ratings(tmp_path):
    """A store with ratings from before 0003 gets revisions 1, 2, … per slot in id order."""
    from alembic import command
    from alembic.config import Config

    from medsim_annot.storage.db import MIGRATIONS

    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = sa.create_engine(url)
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0002")
        conn.exec_driver_sql(
            "INSERT INTO studies (id, name, scale_json, created_at) VALUES (1, 's', '{}', '2026-01-01')"
        )
        conn.exec_driver_sql(
            "INSERT INTO items (id, study_id, pair_id, position, term_1, term_2) "
            "VALUES (1, 1, 'p', 0, 'a', 'b')"
        )
        conn.exec_driver_sql(
            "INSERT INTO annotators (id, study_id, name, created_at) VALUES (1, 1, 'x', '2026-01-01')"
        )
        for slot in (1, 2):
            conn.exec_driver_sql(
                "INSERT INTO assignments (id, study_id, annotator_id, item_id, position) "
                f"VALUES ({slot}, 1, 1, 1, {slot})"
            )
        for rid, slot in ((1, 1), (2, 2), (3, 1), (4, 1), (5, 2)):
            conn.exec_driver_sql(
                "INSERT INTO ratings (id, study_id, annotator_id, item_id, assignment_id, value, "
                f"rated_at) VALUES ({rid}, 1, 1, 1, {slot}, 'v', '2026-01-01')"
            )
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")
    with engine.connect() as conn:
        got = conn.exec_driver_sql("SELECT id, revision FROM ratings ORDER BY id").all()
        assert [tuple(r) for r in got] == [(1, 1), (2, 1), (3, 2), (4, 3), (5, 2)]
        cred = conn.exec_driver_sql("SELECT credential_version FROM annotators").scalar()
        assert cred == 1
    with engine.begin() as conn, pytest.raises(sa.exc.IntegrityError):
        conn.exec_driver_sql(  # a rating without a revision is refused
            "INSERT INTO ratings (study_id, annotator_id, item_id, assignment_id, value, "
            "rated_at) VALUES (1, 1, 1, 1, 'v', '2026-01-02')"
        )
    with engine.begin() as conn, pytest.raises(sa.exc.IntegrityError):
        conn.exec_driver_sql(  # nor a second row for one revision
            "INSERT INTO ratings (study_id, annotator_id, item_id, assignment_id, value, "
            "rated_at, revision) VALUES (1, 1, 1, 1, 'v', '2026-01-02', 3)"
        )
    with engine.begin() as conn, pytest.raises(sa.exc.IntegrityError, match="append-only"):
        conn.exec_driver_sql("UPDATE ratings SET value = 'w'")
    engine.dispose()
