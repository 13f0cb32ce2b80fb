"""Twenty annotators saving at once while the dashboard reads; a 1M-slot ``study create``
while doctors rate.

1. **Concurrent saves.** 20 annotator threads go through the service layer exactly as the
   annotation page does (``get_pair`` → ``submit_rating(expected_version=...)``), one study,
   while one thread recomputes the dashboard of that study over and over. Every tenth press is
   sent twice (a retried request). Reported: saves/s, p50/p95 save latency, errors, lost
   (acknowledged saves without their row), duplicates (identical consecutive rows of a slot);
   baseline: one writer alone on the same store. SQLite (a temporary file) and PostgreSQL when
   ``MEDSIM_BENCH_POSTGRES_URL`` or ``MEDSIM_TEST_POSTGRES_URL`` is set.
2. **Big create.** ``study create`` of ``MEDSIM_BENCH_CREATE_SLOTS`` slots (default 1,000,000:
   50,000 pairs × 20 annotators) on SQLite while 5 doctors keep rating another study.
   Reported: the longest key press during the create and failed presses (goal: none fails,
   none waits anywhere near the busy timeout); baseline: the same presses with no create.

Environment: ``MEDSIM_BENCH_WRITERS`` (20), ``MEDSIM_BENCH_CONC_PRESSES`` (presses per writer,
100), ``MEDSIM_BENCH_CREATE_SLOTS``.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import threading
import time
import uuid

import numpy as np
import pandas as pd

WRITERS = int(os.environ.get("MEDSIM_BENCH_WRITERS", "20"))
PRESSES = int(os.environ.get("MEDSIM_BENCH_CONC_PRESSES", "100"))
CREATE_SLOTS = int(os.environ.get("MEDSIM_BENCH_CREATE_SLOTS", "1000000"))
CREATE_ANNOTATORS = 20


def _pairs(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "pair_id": [f"p{i}" for i in range(n)],
            "term_1": [f"term {i} alpha" for i in range(n)],
            "term_2": [f"term {i} beta" for i in range(n)],
        }
    )


def _study(engine, n_items: int, n_annotators: int) -> tuple[str, list[int]]:
    from data_schemas.scales import BINARY
    from medsim_annot.services.people.annotators import authenticate_annotator
    from medsim_annot.services.studies import create_study

    name = f"conc-{uuid.uuid4().hex[:8]}"
    res = create_study(
        name, _pairs(n_items), BINARY, [f"doc{i}" for i in range(n_annotators)], engine=engine
    )
    ids = [
        authenticate_annotator(a["access_code"], engine=engine).annotator_id
        for a in res["annotators"]
    ]
    return name, ids


def _writer(engine, annotator_id, presses, seed, latencies, acked, errors, start):
    from medsim_annot.services.annotation import get_pair, queue_state, submit_rating

    rng = np.random.default_rng(seed)
    try:
        pos = queue_state(annotator_id, engine=engine).first_unrated
    except Exception as exc:  # counted, reported
        errors.append(repr(exc))
        return
    start.wait()
    for k in range(presses):
        if pos is None:
            break
        try:
            view = get_pair(annotator_id, pos, engine=engine)
            value = "same" if rng.random() < 0.6 else "not_same"
            sends = 2 if k % 10 == 9 else 1
            for _ in range(sends):
                t0 = time.perf_counter()
                res = submit_rating(
                    annotator_id,
                    pos,
                    value,
                    elapsed_ms=900,
                    expected_version=view.version,
                    engine=engine,
                )
                latencies.append(time.perf_counter() - t0)
            acked.append((annotator_id, pos, value))
            pos = res.next_position
        except Exception as exc:  # counted, reported
            errors.append(repr(exc))


def _reader(engine, name, stop, reads, errors):
    from medsim_annot.services.dashboard import study_dashboard

    while not stop.is_set():
        try:
            study_dashboard(name, engine=engine)
            reads.append(1)
        except Exception as exc:  # counted, reported
            errors.append("dashboard: " + repr(exc))


def _round(engine, ann_ids, name, presses, with_reader):
    latencies, acked, errors, reads = [], [], [], []
    start, stop = threading.Event(), threading.Event()
    threads = [
        threading.Thread(
            target=_writer, args=(engine, a, presses, k, latencies, acked, errors, start)
        )
        for k, a in enumerate(ann_ids)
    ]
    reader = threading.Thread(target=_reader, args=(engine, name, stop, reads, errors))
    for t in threads:
        t.start()
    time.sleep(0.5)
    if with_reader:
        reader.start()
    t0 = time.perf_counter()
    start.set()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    stop.set()
    if with_reader:
        reader.join()
    return latencies, acked, errors, wall, len(reads)


def _audit(engine, ann_ids, acked) -> tuple[int, int]:
    """(lost, duplicates): acknowledged answers whose slot does not hold them as current, and
    identical consecutive rows within a slot."""
    from sqlalchemy import bindparam, text

    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT a.annotator_id, a.position, r.revision, r.value FROM ratings r "
                "JOIN assignments a ON a.id = r.assignment_id "
                "WHERE a.annotator_id IN :ids ORDER BY a.annotator_id, a.position, r.revision"
            ).bindparams(bindparam("ids", expanding=True)),
            {"ids": list(ann_ids)},
        ).all()
    frame = pd.DataFrame(rows, columns=["annotator", "position", "revision", "value"])
    dup = 0
    current = {}
    for (a, p), g in frame.groupby(["annotator", "position"]):
        values = g["value"].tolist()
        dup += sum(x == y for x, y in zip(values, values[1:]))
        current[(a, p)] = values[-1]
    lost = sum(current.get((a, p)) != v for a, p, v in acked)
    return lost, dup


def _concurrent(label, engine, report) -> None:
    t0 = time.perf_counter()
    name, ids = _study(engine, PRESSES + 10, WRITERS + 1)
    print(
        f"  [{label}] setup: {WRITERS + 1} annotators x {PRESSES + 10} pairs "
        f"({time.perf_counter() - t0:.1f} s)",
        flush=True,
    )
    solo_lat, solo_acked, solo_err, solo_wall, _ = _round(engine, ids[:1], name, PRESSES, False)
    lat, acked, errors, wall, reads = _round(engine, ids[1:], name, PRESSES, True)
    lost, dup = _audit(engine, ids, acked + solo_acked)
    solo_rate = len(solo_lat) / solo_wall
    rate = len(lat) / wall
    report(
        f"{label} {WRITERS} writers + dashboard: saves/s",
        rate,
        "saves/s",
        baseline=solo_rate,
        lower_is_better=False,
    )
    p50, p95 = statistics.median(lat) * 1000, float(np.percentile(lat, 95)) * 1000
    report(
        f"{label} {WRITERS} writers: save p50",
        p50,
        "ms",
        baseline=statistics.median(solo_lat) * 1000,
    )
    report(
        f"{label} {WRITERS} writers: save p95",
        p95,
        "ms",
        baseline=float(np.percentile(solo_lat, 95)) * 1000,
    )
    print(f"  [{label}] dashboard recomputed {reads} times during the run", flush=True)
    for what, n in (("errors", len(errors) + len(solo_err)), ("lost", lost), ("duplicates", dup)):
        report(f"{label} {WRITERS} writers: {what}", n, "", goal="= 0", ok=n == 0)
    for e in (errors + solo_err)[:5]:
        print(f"    {e}", flush=True)


def _presses_during(engine, ids, stop, latencies, failures):
    from medsim_annot.services.annotation import queue_state, submit_rating

    pos = {a: queue_state(a, engine=engine).first_unrated for a in ids}
    k = 0
    while not stop.is_set():
        a = ids[k % len(ids)]
        k += 1
        if pos[a] is None:
            continue
        t0 = time.perf_counter()
        try:
            pos[a] = submit_rating(a, pos[a], "same", engine=engine).next_position
        except Exception as exc:  # counted, reported
            failures.append(repr(exc))
        latencies.append(time.perf_counter() - t0)
        time.sleep(0.05)  # a doctor presses a few times a second at most


def _big_create(report, tmp: str) -> None:
    from data_schemas.scales import BINARY
    from medsim_annot.services.studies import create_study
    from medsim_annot.storage import get_engine

    engine = get_engine(f"sqlite:///{tmp}/create.db")
    _, ids = _study(engine, 5000, 5)
    n_pairs = max(1, CREATE_SLOTS // CREATE_ANNOTATORS)
    pairs = _pairs(n_pairs)

    def presses(seconds: float | None, work=None):
        stop = threading.Event()
        lat, fail = [], []
        t = threading.Thread(target=_presses_during, args=(engine, ids, stop, lat, fail))
        t.start()
        t0 = time.perf_counter()
        if work is not None:
            work()
        else:
            time.sleep(seconds)
        took = time.perf_counter() - t0
        stop.set()
        t.join()
        return lat, fail, took

    idle, idle_fail, _ = presses(3.0)
    busy, busy_fail, took = presses(
        None,
        lambda: create_study(
            f"big-{uuid.uuid4().hex[:6]}",
            pairs,
            BINARY,
            [f"r{i}" for i in range(CREATE_ANNOTATORS)],
            engine=engine,
        ),
    )
    print(
        f"  [SQLite] study create of {n_pairs * CREATE_ANNOTATORS:,} slots took {took:.1f} s; "
        f"{len(busy)} presses meanwhile",
        flush=True,
    )
    report(
        f"SQLite {n_pairs * CREATE_ANNOTATORS:,}-slot study create: longest press",
        max(busy) * 1000,
        "ms",
        baseline=max(idle) * 1000,
        goal="< 1000 ms",
        ok=max(busy) < 1.0,
    )
    n_fail = len(busy_fail) + len(idle_fail)
    report("SQLite study create: failed presses", n_fail, "", goal="= 0", ok=n_fail == 0)
    for e in (busy_fail + idle_fail)[:5]:
        print(f"    {e}", flush=True)


def run(report) -> None:
    from medsim_annot.storage import get_engine

    with tempfile.TemporaryDirectory() as tmp:
        _concurrent("SQLite", get_engine(f"sqlite:///{tmp}/conc.db"), report)
        pg = os.environ.get("MEDSIM_BENCH_POSTGRES_URL") or os.environ.get(
            "MEDSIM_TEST_POSTGRES_URL"
        )
        if pg:
            _concurrent("PostgreSQL", get_engine(pg), report)
        else:
            print(
                "  PostgreSQL: skipped (set MEDSIM_BENCH_POSTGRES_URL or MEDSIM_TEST_POSTGRES_URL)",
                flush=True,
            )
        _big_create(report, tmp)
