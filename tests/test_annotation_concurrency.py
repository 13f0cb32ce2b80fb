"""Real idempotence under concurrency: many threads and many processes saving
the same slots at the same instant, on SQLite and PostgreSQL — exactly one row per distinct
answer and version, never two identical consecutive rows, and every caller told the truth
(``saved`` once per stored row, the rest an idempotent success or :class:`StaleRating`)."""

from __future__ import annotations

import multiprocessing as mp
import threading
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import pandas as pd
import pytest
import sqlalchemy as sa

from data_schemas.scales import BINARY
from medsim_annot.errors import StaleRating
from medsim_annot.services import annotation as A
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.studies import create_study
from medsim_annot.storage import dispose_all, get_engine

SLOTS = 12
ANSWERS = ("same", "not_same")


@pytest.fixture
def annotator(backend_url):
    dispose_all()
    pairs = pd.DataFrame(
        {
            "pair_id": [f"p{i}" for i in range(SLOTS)],
            "term_1": [f"a{i}" for i in range(SLOTS)],
            "term_2": [f"b{i}" for i in range(SLOTS)],
        }
    )
    res = create_study("race", pairs, BINARY, ["x"])
    yield backend_url, authenticate_annotator(res["annotators"][0]["access_code"]).annotator_id
    dispose_all()


def _rows(url: str) -> pd.DataFrame:
    engine = get_engine(url)
    with engine.connect() as conn:
        got = conn.exec_driver_sql(
            "SELECT a.position, r.revision, r.value FROM ratings r "
            "JOIN assignments a ON a.id = r.assignment_id ORDER BY a.position, r.revision"
        ).all()
    return pd.DataFrame(got, columns=["position", "revision", "value"])


def _save(url, annotator_id, position, value, expected, start_at) -> str:
    """One save at wall-clock *start_at*: 'saved', 'same' (idempotent) or 'stale'."""
    engine = get_engine(url)
    time.sleep(max(0.0, start_at - time.time()))
    try:
        res = A.submit_rating(
            annotator_id, position, value, expected_version=expected, engine=engine
        )
    except StaleRating:
        return "stale"
    return "saved" if res.saved else "same"


def _forget_parent_engines() -> None:
    """In a forked child: drop the parent's pooled connections without closing them (they
    belong to the parent), so the child opens its own."""
    from medsim_annot.storage import db

    for engine in db._ENGINES.values():
        engine.dispose(close=False)
    db._ENGINES.clear()


def _worker(url: str, annotator_id: int, jobs: list[tuple[int, str, int | None, float]]):
    """A process of its own: run *jobs* (position, value, expected version, start time)."""
    out = [_save(url, annotator_id, *job) for job in jobs]
    dispose_all()
    return out


def _check(rows: pd.DataFrame, outcomes: Counter, expect_rows_per_slot: int | None) -> None:
    assert not rows.duplicated(["position", "revision"]).any()
    for _pos, g in rows.groupby("position"):
        assert g["revision"].tolist() == list(range(1, len(g) + 1))
        values = g["value"].tolist()
        assert all(a != b for a, b in zip(values, values[1:])), values  # no identical repeat
        if expect_rows_per_slot is not None:
            assert len(g) == expect_rows_per_slot
    assert outcomes["saved"] == len(rows)


@pytest.mark.parametrize("checked", [True, False], ids=["expected_version", "unchecked"])
def test_threads_racing_on_one_slot(annotator, checked):
    url, ann = annotator
    n_threads = 12
    start = time.time() + 0.5
    jobs = []
    for pos in range(SLOTS):
        for t in range(n_threads):
            # checked: every thread saw version 0, half of them press the other key;
            # unchecked: all press the same key (a double press from many tabs).
            value = ANSWERS[t % 2] if checked else ANSWERS[pos % 2]
            jobs.append((pos, value, 0 if checked else None, start + pos * 0.08))
    barrier_free = ThreadPoolExecutor(max_workers=n_threads)
    with barrier_free as pool:
        outcomes = Counter(pool.map(lambda j: _save(url, ann, *j), jobs))
    rows = _rows(url)
    _check(rows, outcomes, expect_rows_per_slot=1)
    if checked:  # one winner per slot; same-answer losers succeed, the others are refused
        assert outcomes["stale"] >= SLOTS * (n_threads // 2) - SLOTS
        assert outcomes["saved"] + outcomes["same"] + outcomes["stale"] == len(jobs)


def test_processes_racing_on_one_slot(annotator):
    url, ann = annotator
    n_proc = 6
    start = time.time() + 2.0  # after every process has connected
    per_proc = []
    for p in range(n_proc):
        jobs = []
        for pos in range(SLOTS):
            # even slots: all processes send the same answer on version 0 (one row);
            # odd slots: unchecked saves of alternating answers (rows may pile up, but never
            # two identical in a row, and never two of one revision).
            if pos % 2 == 0:
                jobs.append((pos, "same", 0, start + pos * 0.1))
            else:
                jobs.append((pos, ANSWERS[p % 2], None, start + pos * 0.1))
        per_proc.append(jobs)
    ctx = mp.get_context("fork")
    with ProcessPoolExecutor(
        max_workers=n_proc, mp_context=ctx, initializer=_forget_parent_engines
    ) as pool:
        results = list(pool.map(_worker, [url] * n_proc, [ann] * n_proc, per_proc))
    outcomes = Counter(o for res in results for o in res)
    rows = _rows(url)
    _check(rows, outcomes, expect_rows_per_slot=None)
    even = rows[rows["position"] % 2 == 0]
    assert even.groupby("position").size().tolist() == [1] * (SLOTS // 2)
    assert outcomes["stale"] == 0
    assert set(rows["position"]) == set(range(SLOTS))


def test_lost_race_rereads_and_decides_again(annotator, monkeypatch):
    """The loser of the unique (slot, revision) race reads again: same answer -> saved=False,
    another answer on the old version -> StaleRating. Forced deterministically here by
    letting a rival commit between the loser's read and its insert."""
    url, ann = annotator
    from medsim_annot.storage import annotation as store

    real = store.insert_rating
    rival_done = threading.Event()

    def late_insert(s, slot, **kw):
        if not rival_done.is_set():
            rival_done.set()
            t = threading.Thread(
                target=A.submit_rating,
                args=(ann, slot.position, "same"),
                kwargs={"engine": get_engine(url)},
            )
            t.start()
            t.join()
        return real(s, slot, **kw)

    monkeypatch.setattr(store, "insert_rating", late_insert)
    res = A.submit_rating(ann, 0, "same", expected_version=0)
    assert (res.saved, res.version) == (False, 1)
    rival_done.clear()
    with pytest.raises(StaleRating) as info:
        A.submit_rating(ann, 1, "not_same", expected_version=0)
    assert info.value.current["rating"] == "same" and info.value.current["version"] == 1
    rows = _rows(url)
    assert rows[["position", "revision", "value"]].values.tolist() == [
        [0, 1, "same"],
        [1, 1, "same"],
    ]
    engine = get_engine(url)
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM ratings")).scalar() == 2
