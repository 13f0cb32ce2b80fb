"""Store behaviour, the same on SQLite (WAL) and PostgreSQL (MEDSIM_TEST_POSTGRES_URL)."""

from __future__ import annotations

import threading

import pandas as pd
import pytest
import sqlalchemy as sa
from hypothesis import given, settings
from hypothesis import strategies as st

from data_schemas import BINARY, RELATEDNESS_0_3
from data_schemas import columns as C
from medsim_annot.errors import UsageProblem
from medsim_annot.services import studies as svc
from medsim_annot.services.people import annotators as asvc
from medsim_annot.services.people import auth
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all, get_engine, session_scope
from medsim_annot.storage.annotation import insert_ratings
from medsim_annot.storage.models import utcnow
from tests import published as P

PAIRS = pd.DataFrame(
    {
        C.PAIR_ID: ["p1", "p2", "p3"],
        C.TERM_1: ["fever", "cough", "rash"],
        C.TERM_2: ["pyrexia", "tussis", "exanthema"],
        C.AUTO_LABEL: pd.array([1, 1, 0], dtype="Int64"),
        C.DATASET: ["d", "d", "d"],
    }
)


@pytest.fixture
def engine(backend_url):
    return get_engine(backend_url)


def _rate(engine, study, annotator, pair_id, value, **kw):
    """Append a rating the way the app does (one new row per save)."""
    from sqlalchemy import select

    from medsim_annot.storage.models import Annotator, Assignment, Item, Study

    with session_scope(engine) as s:
        sid = s.scalar(select(Study.id).where(Study.name == study))
        aid = s.scalar(
            select(Annotator.id).where(Annotator.study_id == sid, Annotator.name == annotator)
        )
        iid = s.scalar(select(Item.id).where(Item.study_id == sid, Item.pair_id == pair_id))
        slot = s.scalar(
            select(Assignment.id).where(Assignment.annotator_id == aid, Assignment.item_id == iid)
        )
        insert_ratings(
            s,
            [
                {
                    "study_id": sid,
                    "annotator_id": aid,
                    "item_id": iid,
                    "assignment_id": slot,
                    "value": str(value),
                    "rated_at": utcnow(),
                    **kw,
                }
            ],
        )


def test_create_list_and_codes(engine):
    res = svc.create_study("s1", PAIRS, BINARY, ["dr_a", "dr_b"], engine=engine)
    assert res["items"] == 3 and [a["name"] for a in res["annotators"]] == ["dr_a", "dr_b"]
    code = res["annotators"][0]["access_code"]
    assert len(auth.normalise_code(code)) >= 26  # >= 128 bits in base32
    who = asvc.authenticate_annotator(code.lower().replace("-", " "), engine=engine)
    assert who is not None and who.name == "dr_a" and who.study_name == "s1"
    assert asvc.authenticate_annotator("WRONG-CODE-WRONG-CODE-WRONG", engine=engine) is None
    with engine.connect() as conn:  # only hashes are stored
        stored = [r[0] for r in conn.exec_driver_sql("SELECT code_hash FROM annotators")]
    assert auth.normalise_code(code) not in stored and auth.hash_code(code) in stored
    listing = svc.list_studies(engine=engine)
    assert listing[0].study == "s1" and listing[0].assigned == 6 and listing[0].rated == 0
    with pytest.raises(UsageProblem, match="already exists"):
        svc.create_study("s1", PAIRS, BINARY, ["x"], engine=engine)


def test_ratings_append_only_current_is_latest(engine):
    svc.create_study("s", PAIRS, BINARY, ["dr_a"], engine=engine)
    _rate(engine, "s", "dr_a", "p1", "same")
    _rate(engine, "s", "dr_a", "p1", "not_same")
    _rate(engine, "s", "dr_a", "p2", "dont_know")
    cur = svc.current_ratings(open_study("s", engine=engine))
    assert dict(zip(cur[C.PAIR_ID], cur[C.RATING])) == {"p1": "not_same", "p2": "dont_know"}
    hist = svc.rating_history(open_study("s", engine=engine))
    assert list(hist[C.RATING]) == ["same", "not_same", "dont_know"]  # history kept
    with pytest.raises(sa.exc.DBAPIError, match="append-only"), engine.begin() as conn:
        conn.exec_driver_sql("UPDATE ratings SET value = 'same'")
    with pytest.raises(sa.exc.DBAPIError, match="append-only"), engine.begin() as conn:
        conn.exec_driver_sql("DELETE FROM ratings")
    assert len(svc.rating_history(open_study("s", engine=engine))) == 3
    frame, scale = svc.ratings_frame(open_study("s", engine=engine))
    assert scale.name == "binary" and frame[C.NO_DECISION].sum() == 1


def test_failed_create_leaves_nothing(engine):
    bad = PAIRS.copy()
    with pytest.raises(Exception):  # noqa: B017 (any store error must roll back)
        # annotators must be strings: the failure happens after items were inserted
        svc.create_study("half", bad, BINARY, ["ok", None], engine=engine)  # type: ignore[list-item]
    assert svc.list_studies(engine=engine) == []
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM items").scalar() == 0


def test_import_ehr_rel_round_trip(engine, ehr_rel_a, tmp_path):
    res = svc.import_ehr_rel(ehr_rel_a, "ehr-a", engine=engine)
    shape = P.EHR_REL_A_SHAPE.value
    assert (res["items"], res["ratings"]) == (shape["items"], shape["items"] * shape["annotators"])
    out = tmp_path / "ehr.csv"
    exported = svc.export_ratings(open_study("ehr-a", engine=engine), out)
    from data_schemas import split_ehr_rel
    from medsim_annot.io import read_table

    _, original = split_ehr_rel(read_table(ehr_rel_a))
    key = [C.PAIR_ID, C.ANNOTATOR]
    a = original[key + [C.RATING]].sort_values(key).reset_index(drop=True)
    b = exported[key + [C.RATING]].sort_values(key).reset_index(drop=True)
    b[C.RATING] = b[C.RATING].astype(float)
    pd.testing.assert_frame_equal(a.astype({C.RATING: float}), b)


def test_annotator_admin(engine):
    svc.create_study("s", PAIRS, RELATEDNESS_0_3, ["a"], engine=engine)
    added = asvc.add_annotator(open_study("s", engine=engine), "b")
    assert asvc.authenticate_annotator(added.access_code, engine=engine).name == "b"
    asvc.rename_annotator(open_study("s", engine=engine), "b", "bee")
    new = asvc.issue_code(open_study("s", engine=engine), "bee")
    assert asvc.authenticate_annotator(added.access_code, engine=engine) is None
    assert asvc.authenticate_annotator(new, engine=engine).name == "bee"
    asvc.revoke_code(open_study("s", engine=engine), "bee")
    assert asvc.authenticate_annotator(new, engine=engine) is None
    table = asvc.annotators(open_study("s", engine=engine))
    assert list(table["annotator"]) == ["a", "bee"] and list(table["total"]) == [3, 3]


def test_sqlite_is_wal_with_foreign_keys(tmp_path):
    engine = get_engine(f"sqlite:///{tmp_path / 'wal.db'}")
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    dispose_all()


def test_fresh_url_is_migrated_on_first_use(tmp_path):
    url = f"sqlite:///{tmp_path / 'deep' / 'folder' / 'new.db'}"
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from medsim_annot.storage.db import MIGRATIONS

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    head = ScriptDirectory.from_config(cfg).get_current_head()  # one head: a linear chain
    engine = get_engine(url)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() == head
    dispose_all()


@settings(max_examples=20, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["p1", "p2", "p3"]),
            st.sampled_from(["a", "b"]),
            st.sampled_from(["same", "not_same", "dont_know"]),
        ),
        max_size=12,
    )
)
def test_round_trip_loses_nothing(tmp_path_factory, saves):
    """Property: after any sequence of saves, the current rating of each (pair, annotator) is
    the last one saved, and the history holds every save in order."""
    engine = get_engine(f"sqlite:///{tmp_path_factory.mktemp('rt') / 'x.db'}")
    try:
        svc.create_study("s", PAIRS, BINARY, ["a", "b"], engine=engine)
        for pid, who, value in saves:
            _rate(engine, "s", who, pid, value)
        cur = svc.current_ratings(open_study("s", engine=engine))
        expected = {}
        for pid, who, value in saves:
            expected[(pid, who)] = value
        assert dict(zip(zip(cur[C.PAIR_ID], cur[C.ANNOTATOR]), cur[C.RATING])) == expected
        assert list(svc.rating_history(open_study("s", engine=engine))[C.RATING]) == [
            v for _, _, v in saves
        ]
    finally:
        dispose_all()


def test_dashboard_and_gold_export_on_both_backends(engine, tmp_path):
    """The QA figures and the gold export read the store the same way on SQLite and PostgreSQL."""
    from medsim_annot.services import dashboard
    from medsim_annot.services.gold import export as gold

    svc.create_study("q", PAIRS, BINARY, ["a", "b", "c"], engine=engine)
    votes = {
        "a": ["same", "same", "not_same"],
        "b": ["same", "not_same", "not_same"],
        "c": ["same", "same", "dont_know"],
    }
    for who, values in votes.items():
        for pid, value in zip(["p1", "p2", "p3"], values):
            _rate(engine, "q", who, pid, value, comment="=1+1" if who == "a" else "")
    board = dashboard.study_dashboard(open_study("q", engine=engine), use_cache=False)
    assert board is not None
    result = gold.export_gold(open_study("q", engine=engine), tmp_path / "gold.csv")
    table = read_table_text(tmp_path / "gold.csv")
    assert [c for c in table.columns if c.startswith("rater_")] == ["rater_a", "rater_b", "rater_c"]
    assert list(table["rater_b"]) == ["same", "not_same", "not_same"]
    assert result.manifest["counts"]["pairs"] == 3 and result.manifest["counts"]["ratings"] == 9
    assert list(table["majority"]) == ["same", "same", "not_same"]
    assert list(table["rater_a"]) == ["same", "same", "not_same"]
    cur = svc.current_ratings(open_study("q", engine=engine))
    assert str(cur[C.RATED_AT].dtype).startswith("datetime64") and cur[C.RATED_AT].notna().all()


def test_read_snapshot_sees_one_state(engine):
    """Every read in one storage.read_snapshot sees the database as at its first read: a
    rating committed meanwhile from another thread is in none of the reads (the session's
    own queries, the DBAPI column reads and the Arrow reads), and is there afterwards."""
    from medsim_annot.storage import arrow, read_snapshot
    from medsim_annot.storage import studies as store

    svc.create_study("q", PAIRS, BINARY, ["a", "b"], engine=engine)
    _rate(engine, "q", "a", "p1", "same")
    sid = open_study("q", engine=engine).id
    with read_snapshot(engine) as tx:
        first = store.ratings_version(tx, sid)
        saver = threading.Thread(target=_rate, args=(engine, "q", "b", "p1", "not_same"))
        saver.start()
        saver.join(timeout=60)
        with session_scope(engine) as s:  # committed: another transaction sees it
            assert store.ratings_version(s, sid)[0] == first[0] + 1
        assert store.ratings_version(tx, sid) == first
        assert len(store.current_rating_columns(tx, sid)["_rid"]) == first[0]
        coded = arrow.current_rating_arrays(tx, sid)
        assert coded is not None and coded.total == first[0]
        assert len(arrow.item_columns(tx, sid) or []) == len(PAIRS)
    with session_scope(engine) as s:
        assert store.ratings_version(s, sid)[0] == first[0] + 1


def test_gold_export_reads_one_state_while_a_rating_is_saved(engine, tmp_path, monkeypatch):
    """A rating committed from another thread (its own connection) between two of the
    export's reads is in none of them: the export reads the pairs, the current ratings, the
    decisions and the ratings version in one read transaction, so the file and the
    manifest's ratings version agree (the state before the save)."""
    from medsim_annot.services.gold import export as gold

    svc.create_study("q", PAIRS, BINARY, ["a", "b", "c"], engine=engine)
    for who, values in {
        "a": ["same", "same", "not_same"],
        "b": ["same", "not_same", "same"],
    }.items():
        for pid, value in zip(["p1", "p2", "p3"], values):
            _rate(engine, "q", who, pid, value)
    study = open_study("q", engine=engine)
    before = gold.export_gold(study, tmp_path / "before.csv")
    real = svc.current_ratings
    seen: list[tuple[int, int]] = []

    def read_while_a_rating_is_saved(*args, **kwargs):
        # The export has read the ratings version and the pairs; c saves now, committed.
        saver = threading.Thread(target=_rate, args=(engine, "q", "c", "p3", "not_same"))
        saver.start()
        saver.join(timeout=60)
        seen.append(svc.ratings_version(study))
        return real(*args, **kwargs)

    monkeypatch.setattr(svc, "current_ratings", read_while_a_rating_is_saved)
    during = gold.export_gold(study, tmp_path / "during.csv")
    monkeypatch.setattr(svc, "current_ratings", real)
    assert seen == [(7, seen[0][1])]  # the rating was committed while the export read
    assert during.manifest["ratings_version"] == before.manifest["ratings_version"]
    assert during.manifest["counts"] == before.manifest["counts"]
    assert (tmp_path / "during.csv").read_bytes() == (tmp_path / "before.csv").read_bytes()
    after = gold.export_gold(study, tmp_path / "after.csv")
    assert after.manifest["ratings_version"]["count"] == 7
    assert "rater_c" in read_table_text(tmp_path / "after.csv").columns
    assert "rater_c" not in read_table_text(tmp_path / "during.csv").columns


def read_table_text(path):
    from medsim_annot.io import read_table

    return read_table(path)
