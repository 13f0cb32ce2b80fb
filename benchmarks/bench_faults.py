"""Fault runs at full size; tests/test_faults.py runs small versions.

1. **kill -9 of the writers**: 10 annotator processes save through the service layer on a
   500-pair study; all are killed with SIGKILL three times mid-run and restarted (resuming at
   their first unrated slot) until every queue is complete. Figures: acknowledged ratings,
   lost, duplicated, wrong values, wrong resume positions (all must be 0),
   ``PRAGMA integrity_check``, and the throughput of the faulty run next to the baseline: the
   same writers run once without faults.
2. **store unreachable at a key press**: 50 outages (SQLite: another process holds the write
   lock; PostgreSQL: every connection dropped by a proxy); each press during an outage must
   raise StoreUnavailable with nothing written and succeed after. Figure: time until
   StoreUnavailable (the annotator is told), next to the retry budget.

On SQLite (a temporary file) and PostgreSQL when ``MEDSIM_BENCH_POSTGRES_URL`` or
``MEDSIM_TEST_POSTGRES_URL`` is set (a fresh database, dropped afterwards).
Environment: ``MEDSIM_BENCH_FAULT_WRITERS`` (10), ``MEDSIM_BENCH_FAULT_PAIRS`` (500).
"""

from __future__ import annotations

import os
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from benchmarks._postgres import postgres_base, throwaway_database
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all

WRITERS = int(os.environ.get("MEDSIM_BENCH_FAULT_WRITERS", "10"))
PAIRS = int(os.environ.get("MEDSIM_BENCH_FAULT_PAIRS", "500"))
KILLS = 3
OUTAGES = 50


def _stores():
    yield "sqlite", f"sqlite:///{Path(tempfile.mkdtemp(prefix='medsim-faults-')) / 'f.db'}"
    base = postgres_base()
    if base:
        with throwaway_database(base, "medsim_f_") as url:
            yield "postgresql", url


def _kill_run(report, label: str, url: str) -> None:
    from medsim_annot.storage import get_engine
    from tests.faults import Writers, check_store, make_study

    engine = get_engine(url)
    names = [f"doc{i}" for i in range(WRITERS)]
    # Baseline: the same writers, no faults, on a study of their own.
    base_idents = make_study("baseline", PAIRS, names, engine=engine)
    t0 = time.perf_counter()
    Writers(url, base_idents).start().join(3600)
    base_rate = WRITERS * PAIRS / (time.perf_counter() - t0)

    idents = make_study("faults", PAIRS, names, engine=engine)
    acked: dict[int, list] = {i.annotator_id: [] for i in idents}
    t0 = time.perf_counter()
    for k in range(KILLS + 1):
        run = Writers(url, idents).start()
        if k < KILLS:
            run.wait_for(max(1, WRITERS * PAIRS // (KILLS + 2)), 3600)
            run.kill9()
        else:
            run.join(3600)
        for a, acks in run.acked.items():
            acked[a] += acks
    rate = WRITERS * PAIRS / (time.perf_counter() - t0)
    check = check_store(engine, "faults", idents, acked)
    sound = (check.lost, check.duplicated, check.wrong_value, check.wrong_resume) == (0, 0, 0, 0)
    report(
        f"{label}: kill -9 of {WRITERS} writers x{KILLS}, ratings/s (incl. restarts)",
        rate,
        "ratings/s",
        baseline=base_rate,
        lower_is_better=False,
    )
    report(
        f"{label}: acknowledged ratings lost / duplicated / wrong / wrong resume",
        check.lost + check.duplicated + check.wrong_value + check.wrong_resume,
        f"(of {check.acknowledged} acknowledged; {check.stored} stored)",
        goal="0",
        ok=sound and check.stored == WRITERS * PAIRS,
    )
    if label != "sqlite":
        return  # PostgreSQL: crash recovery is the server's own (its WAL); nothing to check
    report(
        f"{label}: PRAGMA integrity_check",
        0 if check.integrity == "ok" else 1,
        f"problems ({check.integrity})",
        goal="ok",
        ok=check.integrity == "ok",
    )


def _outage_run(report, label: str, url: str) -> None:
    import logging

    from medsim_annot.errors import StoreUnavailable
    from medsim_annot.services import annotation as A
    from medsim_annot.services.studies import rating_history
    from medsim_annot.storage import db as store_db
    from medsim_annot.storage import dispose_all, get_engine
    from tests.faults import TcpProxy, make_study

    old = store_db.BUSY_TIMEOUT_MS, store_db.RETRY_BUDGET_S
    store_db.BUSY_TIMEOUT_MS, store_db.RETRY_BUDGET_S = 500, 2.0
    db_log = logging.getLogger(store_db.__name__)
    old_level = db_log.level
    db_log.setLevel(logging.ERROR)  # one warning per outage is the point, not the output
    dispose_all()
    proxy = None
    try:
        if url.startswith("sqlite"):
            engine = get_engine(url)
            path = url[len("sqlite:///") :]
            holder: list = []

            def cut():
                conn = sqlite3.connect(path, isolation_level=None)
                conn.execute("BEGIN EXCLUSIVE")
                holder.append(conn)

            def restore():
                holder.pop().rollback()
        else:
            parts = urlsplit(url)
            proxy = TcpProxy(parts.hostname, parts.port or 5432)
            engine = get_engine(
                url.replace(parts.netloc.split("@")[-1], f"127.0.0.1:{proxy.port}", 1)
            )
            cut, restore = proxy.cut, proxy.restore
        (ident,) = make_study("outage", OUTAGES, ["a"], engine=engine)
        told, failures = [], 0
        for pos in range(OUTAGES):
            cut()
            t0 = time.perf_counter()
            try:
                A.submit_rating(ident.annotator_id, pos, "same", expected_version=0, engine=engine)
                failures += 1  # saved during an outage: the outage did not happen
            except StoreUnavailable:
                told.append(time.perf_counter() - t0)
            restore()
            if len(rating_history(open_study("outage", engine=engine))) != pos:
                failures += 1  # something was written by the failed press
            A.submit_rating(ident.annotator_id, pos, "same", expected_version=0, engine=engine)
        stored = len(rating_history(open_study("outage", engine=engine)))
        report(
            f"{label}: store unreachable at a key press, time until the annotator is told (median)",
            statistics.median(told) if told else float("nan"),
            "s",
            goal=f"<= retry budget {store_db.RETRY_BUDGET_S:g} s + one attempt",
            ok=bool(told) and max(told) < store_db.RETRY_BUDGET_S + 1.5,
        )
        report(
            f"{label}: outages with a half-written or lost rating",
            failures + (OUTAGES - stored),
            f"(of {OUTAGES}; {stored} saved after the store returned)",
            goal="0",
            ok=failures == 0 and stored == OUTAGES,
        )
    finally:
        store_db.BUSY_TIMEOUT_MS, store_db.RETRY_BUDGET_S = old
        db_log.setLevel(old_level)
        dispose_all()
        if proxy is not None:
            proxy.close()


def run(report) -> None:
    for label, url in _stores():
        try:
            _kill_run(report, label, url)
            _outage_run(report, label, url)
        finally:
            dispose_all()
