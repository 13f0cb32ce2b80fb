"""The dashboard's incremental read of current ratings (studies.CurrentRatingsReader) gives
exactly the frame of a full ``current_ratings`` read, on SQLite and PostgreSQL: after
re-ratings, first ratings, duplicate slots, a renamed annotator and a rating with a lower
id committed late. Every read (column-wise, DBAPI, incremental) is checked against
:func:`reference_current`, the frame built the plain way from the ORM rows."""

from __future__ import annotations

import datetime as dt
from unittest import mock

import pandas as pd
import pytest
import sqlalchemy as sa

from data_schemas import BINARY
from data_schemas import columns as C
from medsim_annot.services import dashboard as dsvc
from medsim_annot.services import studies as svc
from medsim_annot.services.people import annotators as asvc
from medsim_annot.services.studies import Slot
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import arrow as arrow_store
from medsim_annot.storage import get_engine, session_scope
from medsim_annot.storage.annotation import insert_ratings
from medsim_annot.storage.models import Annotator, Assignment, Item, Rating, Study

PAIRS = pd.DataFrame(
    {
        C.PAIR_ID: [f"p{i}" for i in range(6)],
        C.TERM_1: [f"t{i}" for i in range(6)],
        C.TERM_2: [f"u{i}" for i in range(6)],
        C.AUTO_LABEL: pd.array([1, 0, 1, 0, 1, None], dtype="Int64"),
        C.DATASET: ["a", "a", "b", "b", "c", "c"],
    }
)


@pytest.fixture
def engine(backend_url):
    return get_engine(backend_url)


_T0 = dt.datetime(2026, 2, 1, 9, 0, tzinfo=dt.UTC)


def _rate(engine, annotator, pair_id, value, *, kind="main", rid=None, minute=0, study="inc", **kw):
    """Save one rating of study *study* (id *rid* when given) through the storage layer."""
    with session_scope(engine) as s:
        sid = s.scalar(sa.select(Study.id).where(Study.name == study))
        aid = s.scalar(
            sa.select(Annotator.id).where(Annotator.study_id == sid, Annotator.name == annotator)
        )
        iid = s.scalar(sa.select(Item.id).where(Item.study_id == sid, Item.pair_id == pair_id))
        slot = s.scalar(
            sa.select(Assignment.id).where(
                Assignment.annotator_id == aid, Assignment.item_id == iid, Assignment.kind == kind
            )
        )
        extra = {"id": rid} if rid is not None else {}
        insert_ratings(
            s,
            [
                {
                    "study_id": sid,
                    "annotator_id": aid,
                    "item_id": iid,
                    "assignment_id": slot,
                    "value": value,
                    "rated_at": _T0 + dt.timedelta(minutes=minute),
                    **extra,
                    **kw,
                }
            ],
        )


CURRENT_COLUMNS = (
    C.PAIR_ID,
    C.ANNOTATOR,
    C.RATING,
    C.RATED_AT,
    C.COMMENT,
    C.UNCLEAR,
    "elapsed_ms",
    "slot",
    "position",
)


def reference_current(engine, study, *, include_duplicates=True):
    """The frame of ``current_ratings`` built the plain way, independent of the services'
    reads: every rating of *study* as ORM rows, the one with the highest id kept per slot,
    sorted by the pair's file position, annotator name and queue position, each column a
    list of Python values typed as pandas infers it."""
    info = open_study(study, engine=engine)
    with session_scope(engine) as s:
        rows = s.execute(
            sa.select(Rating, Assignment, Item, Annotator.name)
            .join(Assignment, Assignment.id == Rating.assignment_id)
            .join(Item, Item.id == Rating.item_id)
            .join(Annotator, Annotator.id == Rating.annotator_id)
            .where(Rating.study_id == info.id)
        ).all()
        every = pd.DataFrame(
            [
                {
                    "rid": r.id,
                    "slot_id": r.assignment_id,
                    "item_position": item.position,
                    C.PAIR_ID: item.pair_id,
                    C.ANNOTATOR: name,
                    C.RATING: info.scale.canonical(r.value),
                    C.RATED_AT: r.rated_at,
                    C.COMMENT: r.comment,
                    C.UNCLEAR: r.unclear,
                    "elapsed_ms": r.elapsed_ms,
                    "slot": slot.kind,
                    "position": slot.position,
                }
                for r, slot, item, name in rows
            ]
        )
    latest = every.sort_values("rid").groupby("slot_id").tail(1)
    if not include_duplicates:
        latest = latest[latest["slot"] != "duplicate"]
    latest = latest.sort_values(["item_position", C.ANNOTATOR, "position"])
    return pd.DataFrame({c: latest[c].tolist() for c in CURRENT_COLUMNS})


def dbapi_current(engine, study, *, include_duplicates=True):
    """``current_ratings`` read through the DBAPI (as on a database without a column-wise
    read)."""
    with mock.patch.object(arrow_store, "supports_arrow", return_value=False):
        return svc.current_ratings(
            open_study(study, engine=engine), include_duplicates=include_duplicates
        )


def _check(reader, engine, expected_read):
    version = svc.ratings_version(open_study("inc", engine=engine))
    got = reader.read(version)
    assert reader.last_read == expected_read
    pd.testing.assert_frame_equal(got, reference_current(engine, "inc"))
    pd.testing.assert_frame_equal(
        got, svc.current_ratings(open_study("inc", engine=engine), include_duplicates=True)
    )
    return got


@pytest.mark.parametrize("coded", [True, False], ids=["coded", "dbapi"])
def test_incremental_read_equals_full_read(engine, coded, monkeypatch):
    """Both reads the reader's full read may take: column-wise (integer codes) and, where
    the database has no column-wise read, the DBAPI's columns coded the same way; new rows
    are coded into what is kept."""
    column_reads: list[int] = []
    read_columns = arrow_store.current_rating_arrays

    def counted(*args):
        column_reads.append(1)
        return read_columns(*args)

    monkeypatch.setattr(arrow_store, "current_rating_arrays", counted)
    if not coded:
        monkeypatch.setattr(arrow_store, "supports_arrow", lambda engine: False)
    queue = [Slot(i) for i in range(6)] + [Slot(0, "duplicate"), Slot(2, "duplicate")]
    svc.create_study(
        "inc",
        PAIRS,
        BINARY,
        ["ann", "bo"],
        queues={"ann": queue, "bo": [Slot(i) for i in range(6)]},
        engine=engine,
    )
    info = open_study("inc", engine=engine)
    reader = svc.CurrentRatingsReader(info.id, info.scale, engine)
    empty = reader.read(svc.ratings_version(open_study("inc", engine=engine)))
    assert len(empty) == 0 and reader.last_read == "full"
    assert bool(column_reads) == coded
    for i in range(4):
        _rate(engine, "ann", f"p{i}", "same", minute=i, comment="=1" if i == 1 else "")
        _rate(engine, "bo", f"p{i}", "not_same", minute=i, elapsed_ms=1200)
    _check(reader, engine, "full")
    _check(reader, engine, "kept")  # nothing saved since
    # a changed answer, a first rating, a duplicate slot, two saves of one slot at once
    _rate(engine, "ann", "p1", "not_same", minute=10, unclear=True)
    _rate(engine, "bo", "p5", "dont_know", minute=11)
    _rate(engine, "ann", "p0", "same", kind="duplicate", minute=12)
    _rate(engine, "bo", "p2", "same", minute=13)
    _rate(engine, "bo", "p2", "dont_know", minute=14)
    got = _check(reader, engine, "increment")
    assert got.loc[(got[C.PAIR_ID] == "p2") & (got[C.ANNOTATOR] == "bo"), C.RATING].tolist() == [
        "dont_know"
    ]
    asvc.rename_annotator(open_study("inc", engine=engine), "bo", "aaron")  # renames move rows
    _rate(engine, "aaron", "p4", "same", minute=15)
    _check(reader, engine, "increment")
    # a rating whose id is below the highest one read (committed late): read everything
    top = svc.ratings_version(open_study("inc", engine=engine))[1]
    _rate(engine, "ann", "p4", "same", rid=top + 10, minute=16)
    _check(reader, engine, "increment")
    _rate(engine, "ann", "p5", "not_same", rid=top + 5, minute=17)
    _check(reader, engine, "full")


def test_dashboard_after_a_new_rating_equals_a_cold_one(engine):
    svc.create_study("inc", PAIRS, BINARY, ["a", "b", "c"], engine=engine)
    for k, who in enumerate("abc"):
        for i in range(6):
            _rate(engine, who, f"p{i}", "same" if (i + k) % 3 else "not_same", minute=i)
    dsvc.clear_cache()
    dsvc.study_dashboard(open_study("inc", engine=engine))
    _rate(engine, "c", "p0", "dont_know", minute=30, comment="not sure")
    warm = dsvc.study_dashboard(open_study("inc", engine=engine))
    cold = dsvc.study_dashboard(open_study("inc", engine=engine), use_cache=False)
    for table in ("audit_table", "quality_table", "disagreements", "pairwise_table"):
        pd.testing.assert_frame_equal(getattr(warm, table)(), getattr(cold, table)())
    pd.testing.assert_frame_equal(warm.gold.table, cold.gold.table)
    assert warm.headline() == cold.headline()
    dsvc.clear_cache()


def test_arrow_read_equals_the_dbapi_read(engine):
    """The column-wise read (integer codes: ADBC on PostgreSQL, the engine's own sqlite3
    on SQLite) gives the very frame of the DBAPI read and of the plain reference: comments
    and NULLs, unclear flags, elapsed times present and missing, duplicate slots, a changed
    answer and a renamed annotator; and the codes agree value for value with the raw DBAPI
    columns."""
    from medsim_annot.storage.studies import current_rating_columns

    assert arrow_store.supports_arrow(engine)
    queue = [Slot(i) for i in range(6)] + [Slot(0, "duplicate")]
    svc.create_study(
        "inc",
        PAIRS,
        BINARY,
        ["ann", "bo"],
        queues={"ann": queue, "bo": [Slot(i) for i in range(6)]},
        engine=engine,
    )
    sid = open_study("inc", engine=engine).id
    assert len(dsvc.load_current(open_study("inc", engine=engine))) == 0
    for i in range(5):
        _rate(engine, "ann", f"p{i}", "same", minute=i, comment="odd, ✓" if i == 1 else "")
        _rate(engine, "bo", f"p{i}", "not_same", minute=i, elapsed_ms=1200 + i)
    # every elapsed time missing, then some: the frame's dtype follows the DBAPI read's
    only_ann = dsvc.load_current(open_study("inc", engine=engine))
    assert len(only_ann) == 10
    pd.testing.assert_frame_equal(only_ann, reference_current(engine, "inc"))
    _rate(engine, "ann", "p1", "not_same", minute=10, unclear=True, comment="second\nline")
    _rate(engine, "ann", "p0", "dont_know", kind="duplicate", minute=12)
    asvc.rename_annotator(open_study("inc", engine=engine), "bo", "aaron")
    got = dsvc.load_current(open_study("inc", engine=engine))
    pd.testing.assert_frame_equal(got, reference_current(engine, "inc"))
    pd.testing.assert_frame_equal(got, dbapi_current(engine, "inc"))
    main = reference_current(engine, "inc", include_duplicates=False)
    pd.testing.assert_frame_equal(svc.current_ratings(open_study("inc", engine=engine)), main)
    pd.testing.assert_frame_equal(dbapi_current(engine, "inc", include_duplicates=False), main)
    assert got["slot"].tolist().count("duplicate") == 1
    assert got[C.UNCLEAR].sum() == 1
    raw = current_rating_columns(engine, sid, bookkeeping=False)
    coded = arrow_store.current_rating_arrays(engine, sid)
    assert coded is not None
    order = sorted(
        range(len(raw["position"])),
        key=lambda i: (raw["_item_pos"][i], raw["_annotator"][i], raw["position"][i]),
    )
    c_order = sorted(
        range(len(coded)),
        key=lambda i: (coded.item_position[i], coded.annotator_id[i], coded.position[i]),
    )
    as_raw = {
        C.PAIR_ID: coded.pair_ids[coded.pair_code],
        C.RATING: coded.values[coded.value_code],
        C.COMMENT: coded.comments[coded.comment_code],
        "slot": coded.kinds[coded.kind_code],
        "position": coded.position,
        "elapsed_ms": [
            None if miss else int(ms)
            for ms, miss in zip(coded.elapsed_ms, coded.elapsed_missing, strict=True)
        ],
    }
    for c, values in as_raw.items():
        assert [raw[c][i] for i in order] == [values[i] for i in c_order], c


def test_dashboard_reads_every_elapsed_time_missing_like_the_dbapi_read(engine):
    """No rating with an elapsed time (imports): the column's dtype is the DBAPI read's."""
    svc.create_study("inc", PAIRS, BINARY, ["a", "b"], engine=engine)
    for who in "ab":
        for i in range(3):
            _rate(engine, who, f"p{i}", "same", minute=i)
    got = dsvc.load_current(open_study("inc", engine=engine))
    assert got["elapsed_ms"].isna().all()
    pd.testing.assert_frame_equal(got, reference_current(engine, "inc"))
    pd.testing.assert_frame_equal(got, dbapi_current(engine, "inc"))


def test_sqlite_arrow_read_uses_the_process_own_sqlite_library(tmp_path):
    """A dashboard read of a SQLite store maps no second SQLite library into the process.

    Two copies of SQLite on one database file in one process break each other's POSIX
    locks (closing one copy's descriptor drops the other's locks:
    https://sqlite.org/howtocorrupt.html section 2.2.1): a cold dashboard read while
    another thread saves a rating. ``adbc-driver-sqlite`` links its own copy, so the SQLite
    read must go through the engine's own ``sqlite3`` connection."""
    import re
    import sys
    from pathlib import Path

    maps = Path("/proc/self/maps")
    if not maps.exists():
        pytest.skip("needs /proc/self/maps (Linux)")

    def sqlite_libraries() -> set[str]:
        found = set()
        for line in maps.read_text().splitlines():
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            if re.search(r"sqlite", Path(path).name, re.I) and not path.endswith(".py"):
                found.add(path)
        return found

    engine = get_engine(f"sqlite:///{tmp_path / 'one-library.db'}")
    svc.create_study("inc", PAIRS, BINARY, ["a", "b"], engine=engine)
    _rate(engine, "a", "p0", "same", minute=1, elapsed_ms=900)
    before = sqlite_libraries()
    dsvc.clear_cache()
    dash = dsvc.study_dashboard(open_study("inc", engine=engine), use_cache=False)
    assert len(dash.gold.table)
    assert len(dsvc.load_current(open_study("inc", engine=engine))) == 1
    after = sqlite_libraries()
    assert after == before, f"a second SQLite library was loaded: {sorted(after - before)}"
    adbc = [m for m in sys.modules if m.startswith("adbc_driver_sqlite")]
    assert not adbc, f"the SQLite ADBC driver was imported: {adbc}"
    engine.dispose()


def test_arrow_pairs_read_equals_the_dbapi_read(engine):
    """The pairs read column-wise (ADBC on PostgreSQL; on SQLite one row of concatenated
    columns cut into Arrow arrays) give the very frame of the DBAPI read: missing automatic
    labels, extra metadata columns, commas, quotes, new lines, empty texts, non-ASCII text,
    and a text holding the SQLite read's separator (that study goes through the DBAPI)."""
    pairs = PAIRS.assign(
        **{
            C.TERM_1: ["a, b", 'say "x"', "two\nlines", "é ✓", "", "plain"],
            "source": ["s1", "s2", "", "s4", "s5", "s6"],
        }
    )
    svc.create_study("inc", pairs, BINARY, ["a"], engine=engine)
    sid = open_study("inc", engine=engine).id
    assert arrow_store.item_columns(engine, sid) is not None

    got = svc.pairs_frame(open_study("inc", engine=engine))
    pd.testing.assert_frame_equal(got, _dbapi_pairs("inc", engine))
    assert got[C.AUTO_LABEL].isna().sum() == 1
    odd = PAIRS.assign(**{C.TERM_2: ["x\x1fy", *PAIRS[C.TERM_2].iloc[1:]]})
    svc.create_study("odd", odd, BINARY, ["a"], engine=engine)
    odd_id = open_study("odd", engine=engine).id
    assert (arrow_store.item_columns(engine, odd_id) is None) == (engine.dialect.name == "sqlite")
    pd.testing.assert_frame_equal(
        svc.pairs_frame(open_study("odd", engine=engine)), _dbapi_pairs("odd", engine)
    )


def _dbapi_pairs(study, engine):

    with mock.patch.object(arrow_store, "supports_arrow", return_value=False):
        return svc.pairs_frame(open_study(study, engine=engine))
