"""Big studies are written in batches: doctors keep rating while `study create`
writes, the study stays invisible until complete, and a create that fails half-way leaves
nothing behind. (The 1M-slot version is in benchmarks/bench_concurrency.py.)"""

from __future__ import annotations

import threading
import time

import pandas as pd
import pytest
import sqlalchemy as sa

from data_schemas.scales import BINARY
from medsim_annot.errors import UsageProblem
from medsim_annot.services import annotation as A
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.studies import create_study
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import bulk, dispose_all, get_engine


def _pairs(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "pair_id": [f"p{i}" for i in range(n)],
            "term_1": [f"a{i}" for i in range(n)],
            "term_2": [f"b{i}" for i in range(n)],
        }
    )


def _counts(engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {
            t: conn.exec_driver_sql(f"SELECT count(*) FROM {t}").scalar()
            for t in ("studies", "items", "annotators", "assignments", "events")
        }


def test_doctors_keep_rating_while_a_big_study_is_created(db_url, monkeypatch):
    dispose_all()
    monkeypatch.setattr(bulk, "BATCH_ROWS", 4000)
    small = create_study("live", _pairs(400), BINARY, ["doc"])
    doc = authenticate_annotator(small["annotators"][0]["access_code"]).annotator_id
    engine = get_engine()
    seen_unready, batch_done, press_done = [], [], []

    def watch_batches(original=bulk.insert_in_batches):
        def wrapped(eng, model, rows, **kw):
            def on_batch(n):
                batch_done.append(time.perf_counter())
                with eng.connect() as conn:
                    seen_unready.append(
                        conn.exec_driver_sql("SELECT ready FROM studies WHERE name='big'").scalar()
                    )

            return original(eng, model, rows, on_batch=on_batch, **kw)

        return wrapped

    monkeypatch.setattr(bulk, "insert_in_batches", watch_batches())
    done = threading.Event()
    errors: list[BaseException] = []

    def create():
        try:
            create_study("big", _pairs(6000), BINARY, [f"r{i}" for i in range(10)], engine=engine)
        except BaseException as exc:
            errors.append(exc)
        finally:
            done.set()

    t = threading.Thread(target=create)
    t.start()
    latencies, pos = [], 0
    while not done.is_set() and pos < 400:
        t0 = time.perf_counter()
        pos = A.submit_rating(doc, pos, "same", expected_version=0, engine=engine).next_position
        press_done.append(time.perf_counter())
        latencies.append(press_done[-1] - t0)
    t.join()
    assert not errors
    # No press failed, and presses were saved between the create's batches: the write lock
    # was free in between (one transaction would have made every press wait for all of it).
    # How long a press waits is load-dependent: bench_concurrency measures it.
    assert len(batch_done) >= 10
    between = [t for t in press_done if batch_done[0] < t < batch_done[-1]]
    assert len(between) >= 3, (len(press_done), len(batch_done))
    assert seen_unready and not any(seen_unready)  # invisible while being written
    assert open_study("big").id and _counts(engine)["assignments"] == 400 + 60_000
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT ready FROM studies WHERE name='big'").scalar()
    dispose_all()


def test_a_study_being_written_is_not_shown_to_its_annotators(db_url):
    dispose_all()
    res = create_study("s", _pairs(3), BINARY, ["x"])
    ann = authenticate_annotator(res["annotators"][0]["access_code"]).annotator_id
    engine = get_engine()
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE studies SET ready = :f"), {"f": False})
    with pytest.raises(UsageProblem, match="being created"):
        A.get_pair(ann, 0)
    with pytest.raises(UsageProblem, match="being created"):
        A.submit_rating(ann, 0, "same")
    with pytest.raises(UsageProblem, match="being created"):
        A.queue_state(ann, credential=1)
    dispose_all()


def test_failed_create_leaves_nothing(backend_url, monkeypatch):
    dispose_all()
    monkeypatch.setattr(bulk, "BATCH_ROWS", 50)
    engine = get_engine()
    before = _counts(engine)
    real = bulk.insert_in_batches
    calls = []

    def fail_third(eng, model, rows, **kw):
        calls.append(model)
        if len(calls) == 3:
            raise KeyboardInterrupt  # the admin pressed Ctrl-C half-way
        return real(eng, model, rows, **kw)

    monkeypatch.setattr(bulk, "insert_in_batches", fail_third)
    with pytest.raises(KeyboardInterrupt):
        create_study("half", _pairs(120), BINARY, ["a", "b", "c"], engine=engine)
    assert _counts(engine) == before
    monkeypatch.setattr(bulk, "insert_in_batches", real)
    assert create_study("half", _pairs(120), BINARY, ["a"], engine=engine)["items"] == 120
    dispose_all()
