"""Fault tests, small versions; benchmarks/bench_faults.py runs the full ones.

On SQLite and PostgreSQL: writer processes killed with SIGKILL mid-run lose no acknowledged
rating and store none twice, the store stays sound and everyone resumes at the right slot;
the database unreachable when a key is pressed raises StoreUnavailable with nothing written,
and the same save succeeds once it is back. (The app server killed mid-run and two app
servers on one PostgreSQL database: tests/test_browser_faults.py.)
"""

from __future__ import annotations

import sqlite3
from urllib.parse import urlsplit

import pytest

from medsim_annot.errors import StoreUnavailable
from medsim_annot.services import annotation as A
from medsim_annot.services.studies import rating_history
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import db as store_db
from medsim_annot.storage import dispose_all, get_engine
from tests.faults import TcpProxy, Writers, check_store, make_study


def test_kill9_writers_mid_run_then_resume(backend_url):
    engine = get_engine(backend_url)
    idents = make_study("s", 30, ["a", "b"], engine=engine)
    first = Writers(backend_url, idents).start()
    first.wait_for(16)
    first.kill9()
    check = check_store(engine, "s", idents, first.acked)
    assert check.integrity == "ok"
    assert (check.lost, check.duplicated, check.wrong_value, check.wrong_resume) == (0, 0, 0, 0)
    assert check.unacknowledged_stored <= len(idents)  # in flight when killed: at most one each
    # Restarted, every writer resumes at its first unrated slot and finishes its queue.
    second = Writers(backend_url, idents).start()
    second.join()
    acked = {a: first.acked[a] + second.acked[a] for a in first.acked}
    final = check_store(engine, "s", idents, acked)
    assert (final.lost, final.duplicated, final.wrong_value, final.wrong_resume) == (0, 0, 0, 0)
    assert final.stored == 2 * 30 and final.integrity == "ok"
    for ident in idents:
        assert A.queue_state(ident.annotator_id, engine=engine).complete


@pytest.fixture
def outage(backend_url, monkeypatch):
    """(engine the app uses, cut(), restore()) for the store of *backend_url*, with short
    timeouts so a test waits a second, not ten."""
    monkeypatch.setattr(store_db, "BUSY_TIMEOUT_MS", 200)
    monkeypatch.setattr(store_db, "RETRY_BUDGET_S", 1.0)
    dispose_all()
    if backend_url.startswith("sqlite"):
        engine = get_engine(backend_url)
        path = backend_url[len("sqlite:///") :]
        holder: list[sqlite3.Connection] = []

        def cut():  # another process holds the write lock for as long as it likes
            conn = sqlite3.connect(path, isolation_level=None)
            conn.execute("BEGIN EXCLUSIVE")
            holder.append(conn)

        def restore():
            holder.pop().rollback()

        yield engine, cut, restore
        for conn in holder:
            conn.close()
        return
    parts = urlsplit(backend_url)
    proxy = TcpProxy(parts.hostname, parts.port or 5432)
    proxied = backend_url.replace(parts.netloc.split("@")[-1], f"127.0.0.1:{proxy.port}", 1)
    try:
        yield get_engine(proxied), proxy.cut, proxy.restore
    finally:
        dispose_all()
        proxy.close()


def test_store_unavailable_when_a_key_is_pressed(outage):
    engine, cut, restore = outage
    (ident,) = make_study("s", 5, ["a"], engine=engine)
    A.submit_rating(ident.annotator_id, 0, "same", expected_version=0, engine=engine)
    cut()
    with pytest.raises(StoreUnavailable, match="nothing was saved"):
        A.submit_rating(
            ident.annotator_id,
            1,
            "not_same",
            expected_version=0,
            credential=ident.credential_version,
            engine=engine,
        )
    restore()
    assert len(rating_history(open_study("s", engine=engine))) == 1  # nothing half-written
    # The annotator (or the widget's pending queue) sends the same answer again: saved once.
    res = A.submit_rating(
        ident.annotator_id,
        1,
        "not_same",
        expected_version=0,
        credential=ident.credential_version,
        engine=engine,
    )
    assert res.saved and res.next_position == 2
    hist = rating_history(open_study("s", engine=engine))
    assert hist["pair_id"].tolist() == ["p0", "p1"]
    assert A.queue_state(ident.annotator_id, engine=engine).first_unrated == 2


# The page side (the widget keeps the rating and resends it): tests/test_pages_annotate.py
# (store unavailable) and tests/test_browser_widget.py (store down mid-session).
