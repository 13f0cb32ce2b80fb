"""Key press → next pair ready, server side, on a 10,000-item study with 5 annotators.

One "press" is what the Annotate page does on a key press: ``submit_rating`` (committed) and
``get_pair`` of the position it returns. Measured on SQLite (a temporary file) and on
PostgreSQL when ``MEDSIM_BENCH_POSTGRES_URL`` or ``MEDSIM_TEST_POSTGRES_URL`` is set (a
fresh schema-less database is not needed: the study gets a unique name).

The baseline is the straightforward implementation: per press, load the annotator's whole
queue and every rating of it through the ORM into pandas, work out progress and the next
unrated slot there, insert the rating, then load the pair.

Goal: median < 50 ms and p95 < 150 ms on both databases (a save must not hold up the next
key press).

Durability cost: the SQLite store runs ``synchronous=FULL`` (the WAL is synced
on every commit, so an acknowledged rating survives power loss); the same presses are also
timed with ``synchronous=NORMAL`` on a second file, as the baseline of that figure.
Environment: ``MEDSIM_BENCH_ITEMS`` (default 10000), ``MEDSIM_BENCH_PRESSES`` (default 300).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
import uuid

import numpy as np
import pandas as pd

N_ITEMS = int(os.environ.get("MEDSIM_BENCH_ITEMS", "10000"))
N_ANNOTATORS = 5
PRESSES = int(os.environ.get("MEDSIM_BENCH_PRESSES", "300"))
BASELINE_PRESSES = max(10, PRESSES // 10)


def _setup(engine):
    """Create the study (everyone rates all N_ITEMS) and rate the first half of every
    queue, as in the middle of a study. Returns the annotator ids."""
    from sqlalchemy import select

    from data_schemas.scales import BINARY
    from medsim_annot.services.studies import create_study
    from medsim_annot.storage import session_scope
    from medsim_annot.storage.annotation import insert_ratings
    from medsim_annot.storage.models import Annotator, Assignment, Study, utcnow

    name = f"bench-{uuid.uuid4().hex[:8]}"
    pairs = pd.DataFrame(
        {
            "pair_id": [f"p{i}" for i in range(N_ITEMS)],
            "term_1": [f"term {i} alpha" for i in range(N_ITEMS)],
            "term_2": [f"term {i} beta" for i in range(N_ITEMS)],
        }
    )
    create_study(name, pairs, BINARY, [f"doc{i}" for i in range(N_ANNOTATORS)], engine=engine)
    with session_scope(engine) as s:
        sid = s.scalar(select(Study.id).where(Study.name == name))
        ann_ids = s.scalars(
            select(Annotator.id).where(Annotator.study_id == sid).order_by(Annotator.id)
        ).all()
        slots = s.execute(
            select(Assignment.id, Assignment.annotator_id, Assignment.item_id).where(
                Assignment.study_id == sid, Assignment.position < N_ITEMS // 2
            )
        ).all()
        now = utcnow()
        rows = [
            {
                "study_id": sid,
                "annotator_id": a,
                "item_id": i,
                "assignment_id": slot,
                "value": "same" if slot % 3 else "not_same",
                "unclear": False,
                "comment": "",
                "rated_at": now,
                "elapsed_ms": 1500,
                "source": "app",
            }
            for slot, a, i in slots
        ]
        insert_ratings(s, rows)
    return list(ann_ids)


def _press(engine, annotator_id, position, value):
    from medsim_annot.services.annotation import get_pair, submit_rating

    res = submit_rating(annotator_id, position, value, elapsed_ms=900, engine=engine)
    if res.next_position is not None:
        get_pair(annotator_id, res.next_position, engine=engine)
    return res.next_position


def _baseline_press(engine, annotator_id, position, value):
    """Straightforward: load the whole queue and its ratings into pandas on every press."""
    from sqlalchemy import select

    from medsim_annot.storage import session_scope
    from medsim_annot.storage.models import Assignment, Item, Rating, utcnow

    with session_scope(engine) as s:
        slots = pd.DataFrame(
            [
                (a.id, a.position, a.item_id, a.study_id, a.swapped)
                for a in s.scalars(
                    select(Assignment).where(Assignment.annotator_id == annotator_id)
                )
            ],
            columns=["slot", "position", "item_id", "study_id", "swapped"],
        )
        ratings = pd.DataFrame(
            [
                (r.id, r.assignment_id, r.value)
                for r in s.scalars(select(Rating).where(Rating.annotator_id == annotator_id))
            ],
            columns=["id", "slot", "value"],
        )
        row = slots[slots.position == position].iloc[0]
        s.add(
            Rating(
                study_id=int(row.study_id),
                annotator_id=annotator_id,
                item_id=int(row.item_id),
                assignment_id=int(row.slot),
                revision=int((ratings["slot"] == row.slot).sum()) + 1,
                value=value,
                rated_at=utcnow(),
                elapsed_ms=900,
            )
        )
        s.flush()
        rated = set(ratings["slot"]) | {int(row.slot)}
        todo = slots[~slots.slot.isin(rated)].sort_values("position")
        nxt = todo[todo.position > position]
        nxt = int((nxt if len(nxt) else todo).position.iloc[0]) if len(todo) else None
        if nxt is not None:
            nrow = slots[slots.position == nxt].iloc[0]
            s.get(Item, int(nrow.item_id))
            _ = len(rated), len(slots)
    return nxt


def _measure(engine, ann_ids, presses, fn):
    from medsim_annot.services.annotation import queue_state

    times = []
    positions = {a: queue_state(a, engine=engine).first_unrated for a in ann_ids}
    rng = np.random.default_rng(0)
    for k in range(presses):
        a = ann_ids[k % len(ann_ids)]
        value = "same" if rng.random() < 0.6 else "not_same"
        t0 = time.perf_counter()
        positions[a] = fn(engine, a, positions[a], value)
        times.append((time.perf_counter() - t0) * 1000)
    return times


def _run_one(label, url, report):
    from medsim_annot.storage import get_engine

    engine = get_engine(url)
    return _run_engine(label, engine, report)


def _run_engine(label, engine, report):
    t0 = time.perf_counter()
    ann_ids = _setup(engine)
    print(
        f"  [{label}] setup: {N_ITEMS:,} items x {N_ANNOTATORS} annotators, half rated "
        f"({time.perf_counter() - t0:.1f} s)",
        flush=True,
    )
    _measure(engine, ann_ids, 10, _press)  # warm-up (connections, statement caches)
    fast = _measure(engine, ann_ids, PRESSES, _press)
    base = _measure(engine, ann_ids, BASELINE_PRESSES, _baseline_press)
    med, p95 = statistics.median(fast), float(np.percentile(fast, 95))
    bmed, bp95 = statistics.median(base), float(np.percentile(base, 95))
    report(
        f"{label} key press -> next pair, median",
        med,
        "ms",
        baseline=bmed,
        goal="< 50 ms",
        ok=med < 50,
    )
    report(
        f"{label} key press -> next pair, p95",
        p95,
        "ms",
        baseline=bp95,
        goal="< 150 ms",
        ok=p95 < 150,
    )
    return fast


def _sync_cost(report, tmp: str, full: list[float]) -> None:
    """The same presses on a store opened with synchronous=NORMAL: the price of FULL."""
    from medsim_annot.storage import db

    saved = db.SQLITE_SYNCHRONOUS
    db.SQLITE_SYNCHRONOUS = "NORMAL"
    try:
        engine = db.get_engine(f"sqlite:///{tmp}/bench-normal.db")
        ann_ids = _setup(engine)
        _measure(engine, ann_ids, 10, _press)
        normal = _measure(engine, ann_ids, PRESSES, _press)
    finally:
        db.SQLITE_SYNCHRONOUS = saved
    report(
        "SQLite synchronous=FULL key press, median (baseline: NORMAL)",
        statistics.median(full),
        "ms",
        baseline=statistics.median(normal),
    )
    report(
        "SQLite synchronous=FULL key press, p95 (baseline: NORMAL)",
        float(np.percentile(full, 95)),
        "ms",
        baseline=float(np.percentile(normal, 95)),
    )


def run(report) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        full = _run_one("SQLite", f"sqlite:///{tmp}/bench.db", report)
        _sync_cost(report, tmp, full)
    pg = os.environ.get("MEDSIM_BENCH_POSTGRES_URL") or os.environ.get("MEDSIM_TEST_POSTGRES_URL")
    if pg:
        _run_one("PostgreSQL", pg, report)
    else:
        print(
            "  PostgreSQL: skipped (set MEDSIM_BENCH_POSTGRES_URL or MEDSIM_TEST_POSTGRES_URL)",
            flush=True,
        )
