"""The SQLite column-wise read of the current ratings (``storage.arrow``): three single-row
queries without joins, the current rating per slot and the joins done in NumPy. Its parts
are checked against the obvious computation (hypothesis), and the whole read against the
DBAPI read and a plain build from the ORM rows on stores where ids are not one run per
study: two studies whose ratings interleave, an annotator added after another study was
created, ratings saved with ids out of order."""

from __future__ import annotations

import datetime as dt
import sqlite3

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from data_schemas import BINARY
from data_schemas import columns as C
from medsim_annot.services import dashboard as dsvc
from medsim_annot.services import studies as svc
from medsim_annot.services.people import annotators as asvc
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import arrow, get_engine
from tests.test_store_incremental import _rate as rate
from tests.test_store_incremental import dbapi_current, reference_current

SEP = chr(31)


@given(
    st.lists(
        st.text(alphabet=st.characters(exclude_characters=SEP, exclude_categories=("Cs",))),
        max_size=30,
    )
)
def test_texts_cut_the_concatenation_back_into_the_values(values):
    blob = SEP.join(values).encode("utf-8")
    got = arrow._texts(blob, len(values))
    assert got is not None and got.to_pylist() == values


@given(st.lists(st.text("abé✓ ", max_size=5), min_size=1, max_size=10), st.integers(0, 9))
def test_texts_refuse_a_value_holding_the_separator(values, at):
    values = list(values)
    values[at % len(values)] += SEP
    assert arrow._texts(SEP.join(values).encode("utf-8"), len(values)) is None


@given(
    st.lists(
        st.datetimes(min_value=dt.datetime(1970, 1, 1), max_value=dt.datetime(2200, 1, 1)),
        min_size=1,
        max_size=20,
    ),
    st.data(),
)
def test_times_read_the_stored_form_and_refuse_any_other(times, data):
    """SQLAlchemy's 26-character form is read exactly; one value in another length (which
    could shift the rest into a valid-looking reading) sends the read to the DBAPI path."""
    stored = [t.strftime("%Y-%m-%d %H:%M:%S.%f") for t in times]
    got = arrow._times("".join(stored), len(stored))
    assert got is not None
    assert got.tolist() == [t.replace(tzinfo=None) for t in times]
    odd = list(stored)
    i = data.draw(st.integers(0, len(odd) - 1))
    odd[i] = data.draw(st.sampled_from([odd[i][:-1], odd[i][:19], odd[i] + "0"]))
    assert arrow._times("".join(odd), len(odd)) is None


@given(
    st.lists(st.integers(1, 10**6), min_size=1, max_size=40, unique=True),
    st.booleans(),
    st.data(),
)
def test_lookup_finds_each_key_or_refuses(ids, contiguous, data):
    ids = np.arange(ids[0], ids[0] + len(ids)) if contiguous else np.array(ids)
    keys = np.array(data.draw(st.lists(st.sampled_from(ids.tolist()), max_size=30)), dtype=int)
    at = arrow._lookup(ids, keys)
    assert at is not None and ids[at].tolist() == keys.tolist()
    missing = np.append(keys, int(ids.max()) + 1)
    assert arrow._lookup(ids, missing) is None


@given(
    st.lists(
        st.tuples(st.integers(1, 8), st.integers(1, 10**6)),
        min_size=1,
        unique_by=lambda t: t[1],
    ),
    st.sampled_from([1, 10**9]),
)
def test_latest_is_the_highest_id_of_each_slot(rows, spread):
    """Slot ids close together (a study's own) or far apart (slots added much later)."""
    slot = np.array([s * spread for s, _ in rows])
    rid = np.array([r for _, r in rows])
    want = pd.DataFrame({"slot": slot, "rid": rid}).groupby("slot")["rid"].max()
    got = arrow._latest(rid, slot)
    assert sorted(rid[got].tolist()) == sorted(want.tolist())
    assert got.tolist() == sorted(got.tolist())  # in the order read


PAIRS = pd.DataFrame(
    {
        C.PAIR_ID: [f"p{i}" for i in range(5)],
        C.TERM_1: ["a", "b", "é ✓", "", "line\nbreak"],
        C.TERM_2: [f"u{i}" for i in range(5)],
        C.AUTO_LABEL: pd.array([1, 0, 1, None, 0], dtype="Int64"),
        C.DATASET: ["x", "x", "y", "y", "y"],
    }
)


def _rate(engine, study, who, pair, value, **kw):
    rate(engine, who, pair, value, study=study, **kw)


@pytest.fixture
def engine(backend_url):
    return get_engine(backend_url)


def test_coded_read_equals_the_dbapi_read_when_ids_interleave(engine):
    svc.create_study("one", PAIRS, BINARY, ["a", "b"], engine=engine)
    svc.create_study("two", PAIRS.head(3), BINARY, ["a"], engine=engine)
    asvc.add_annotator(open_study("one", engine=engine), "late")  # slots after study two's
    minute = 0
    for i in range(5):
        for study, who in (("one", "a"), ("two", "a"), ("one", "late"), ("one", "b")):
            if study == "two" and i >= 3:
                continue
            minute += 1
            value = "same" if (i + minute) % 3 else "not_same"
            _rate(engine, study, who, f"p{i}", value, minute=minute, elapsed_ms=100 * minute)
    _rate(engine, "one", "late", "p2", "dont_know", minute=90, comment="changed ✓")
    top = svc.ratings_version(open_study("one", engine=engine))[1]
    _rate(engine, "one", "b", "p0", "not_same", minute=91, rid=top + 50)
    _rate(engine, "one", "b", "p1", "same", minute=92, rid=top + 20)  # a lower id saved later
    for study in ("one", "two"):
        sid = open_study(study, engine=engine).id
        assert arrow.current_rating_arrays(engine, sid) is not None
        got = dsvc.load_current(open_study(study, engine=engine))
        want = reference_current(engine, study)
        pd.testing.assert_frame_equal(got, want)
        pd.testing.assert_frame_equal(dbapi_current(engine, study), want)
        pairs = svc.pairs_frame(open_study(study, engine=engine))
        assert pairs[C.PAIR_ID].tolist() == PAIRS[C.PAIR_ID].head(len(pairs)).tolist()
    one = dsvc.load_current(open_study("one", engine=engine))
    assert len(one) == 15
    late = one[(one[C.ANNOTATOR] == "late") & (one[C.PAIR_ID] == "p2")]
    assert late[C.RATING].tolist() == ["dont_know"] and late[C.COMMENT].tolist() == ["changed ✓"]


def test_sqlite_read_leaves_the_connection_as_it_found_it(tmp_path):
    """The read maps the file only for itself: afterwards the pooled connection has no
    memory map and no open transaction (a writer on it is not held back), also when the
    read fails half-way."""
    engine = get_engine(f"sqlite:///{tmp_path / 'mmap.db'}")
    svc.create_study("one", PAIRS, BINARY, ["a"], engine=engine)
    _rate(engine, "one", "a", "p0", "same", minute=1)
    sid = open_study("one", engine=engine).id

    def state():
        with engine.connect() as conn:
            dbapi = conn.connection.dbapi_connection
            assert dbapi is not None
            (size,) = dbapi.execute("PRAGMA mmap_size").fetchone()
            return size, dbapi.in_transaction

    assert arrow.current_rating_arrays(engine, sid) is not None
    assert state() == (0, False)
    with pytest.raises(RuntimeError), arrow._snapshot(engine) as cursor:
        cursor.execute("SELECT 1")
        assert cursor.connection.in_transaction
        raise RuntimeError("read failed half-way")
    assert state() == (0, False)
    engine.dispose()


def test_a_read_over_sqlites_length_limit_falls_back_to_the_dbapi(tmp_path):
    """A concatenation longer than SQLite allows (1 GB by default: tens of millions of
    ratings) is refused by SQLite; the dashboard then reads through the DBAPI instead of
    failing. Shown with the limit lowered to 2,000 bytes on the connections: every value
    fits, the concatenations of 100 pairs do not."""
    from sqlalchemy import event

    n = 100
    pairs = pd.DataFrame(
        {
            C.PAIR_ID: [f"q{i}" for i in range(n)],
            C.TERM_1: [f"first term {i}" for i in range(n)],
            C.TERM_2: [f"a rather long second term {i:03d}" for i in range(n)],
            C.AUTO_LABEL: pd.array([i % 2 for i in range(n)], dtype="Int64"),
        }
    )
    engine = get_engine(f"sqlite:///{tmp_path / 'limit.db'}")
    svc.create_study("one", pairs, BINARY, ["a", "b"], engine=engine)
    for i in range(n):
        _rate(engine, "one", "a", f"q{i}", "same" if i % 3 else "not_same", minute=i)
    sid = open_study("one", engine=engine).id
    want = reference_current(engine, "one")
    pd.testing.assert_frame_equal(dsvc.load_current(open_study("one", engine=engine)), want)
    want_pairs = svc.pairs_frame(open_study("one", engine=engine))
    assert arrow.current_rating_arrays(engine, sid) is not None
    engine.dispose()
    event.listen(
        engine, "connect", lambda conn, _: conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 2000)
    )
    assert arrow.current_rating_arrays(engine, sid) is None
    assert arrow.item_columns(engine, sid) is None
    pd.testing.assert_frame_equal(dsvc.load_current(open_study("one", engine=engine)), want)
    pd.testing.assert_frame_equal(svc.pairs_frame(open_study("one", engine=engine)), want_pairs)
    engine.dispose()
