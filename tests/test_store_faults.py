"""Store errors: transient errors retried with backoff, a store that stays
away -> StoreUnavailable with nothing saved, dropped PostgreSQL connections recovered,
parallel first use of a fresh database (migrations serialised), SQLite durability settings."""

from __future__ import annotations

import multiprocessing as mp
import time
from concurrent.futures import ProcessPoolExecutor

import pandas as pd
import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from data_schemas.scales import BINARY
from medsim_annot.errors import StoreUnavailable
from medsim_annot.services import annotation as A
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.studies import create_study, rating_history
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import db, dispose_all, get_engine


def _op_error(message: str) -> sa_exc.OperationalError:
    return sa_exc.OperationalError("INSERT ...", {}, Exception(message))


def test_transient_errors_are_retried_then_succeed():
    calls = []

    def flaky():
        calls.append(time.monotonic())
        if len(calls) < 3:
            raise _op_error("database is locked")
        return "ok"

    assert db.with_retry(flaky) == "ok"
    assert len(calls) == 3
    assert calls[1] - calls[0] >= 0.009 and calls[2] - calls[1] >= 0.019  # backoff doubles


def test_persistent_transient_error_becomes_store_unavailable():
    calls = []

    def down():
        calls.append(1)
        raise _op_error("server closed the connection unexpectedly")

    t0 = time.monotonic()
    with pytest.raises(StoreUnavailable, match="server closed the connection"):
        db.with_retry(down, budget_s=0.5)
    assert time.monotonic() - t0 < 2.0 and len(calls) >= 3  # gave up within the budget


def test_permanent_store_error_is_not_retried():
    calls = []

    def readonly():
        calls.append(1)
        raise _op_error("attempt to write a readonly database")

    with pytest.raises(StoreUnavailable, match="readonly"):
        db.with_retry(readonly)
    assert len(calls) == 1


def test_request_errors_pass_through():
    with pytest.raises(ZeroDivisionError):
        db.with_retry(lambda: 1 / 0)
    integrity = sa_exc.IntegrityError("INSERT", {}, Exception("UNIQUE constraint failed"))

    def dup():
        raise integrity

    with pytest.raises(sa_exc.IntegrityError):
        db.with_retry(dup)


def test_transient_classification():
    assert db.is_transient(_op_error("database is locked"))
    assert db.is_transient(_op_error("FATAL: the database system is starting up"))
    assert not db.is_transient(_op_error("database or disk is full"))

    class PgError(Exception):
        sqlstate = "57P01"

    assert db.is_transient(sa_exc.OperationalError("x", {}, PgError("terminating")))


def _study(url: str) -> int:
    pairs = pd.DataFrame({"pair_id": ["p0", "p1"], "term_1": ["a", "c"], "term_2": ["b", "d"]})
    res = create_study("faults", pairs, BINARY, ["x"], engine=get_engine(url))
    who = authenticate_annotator(res["annotators"][0]["access_code"], engine=get_engine(url))
    return who.annotator_id


def test_read_only_store_says_not_saved(tmp_path):
    dispose_all()
    path = tmp_path / "ro.db"
    url = f"sqlite:///{path}"
    ann = _study(url)
    ro = sa.create_engine(f"sqlite:///file:{path}?mode=ro&uri=true")
    assert A.get_pair(ann, 0, engine=ro).position == 0  # reads still work
    with pytest.raises(StoreUnavailable, match="nothing was saved"):
        A.submit_rating(ann, 0, "same", engine=ro)
    ro.dispose()
    assert A.submit_rating(ann, 0, "same", engine=get_engine(url)).saved  # store is back
    assert len(rating_history(open_study("faults", engine=get_engine(url)))) == 1
    dispose_all()


def test_unreachable_postgres_is_store_unavailable(monkeypatch):
    """PostgreSQL down (connection refused): retried for the budget, then StoreUnavailable."""
    monkeypatch.setattr(db, "RETRY_BUDGET_S", 0.6)
    engine = sa.create_engine(
        "postgresql+psycopg://medsim:medsim@127.0.0.1:1/none", connect_args={"connect_timeout": 1}
    )
    t0 = time.monotonic()
    with pytest.raises(StoreUnavailable, match="try again"):
        A.get_pair(1, 0, engine=engine)
    with pytest.raises(StoreUnavailable):
        A.submit_rating(1, 0, "same", expected_version=0, engine=engine)
    assert time.monotonic() - t0 >= 0.2  # retried, did not fail at once
    engine.dispose()


def test_sqlite_locked_longer_than_busy_timeout_is_retried(tmp_path, monkeypatch):
    """A writer holding the lock past the busy timeout: the save waits, retries, succeeds."""
    import threading

    dispose_all()
    monkeypatch.setattr(db, "BUSY_TIMEOUT_MS", 200)
    url = f"sqlite:///{tmp_path / 'busy.db'}"
    ann = _study(url)
    holder = sa.create_engine(url)
    locked = threading.Event()

    def hold():
        with holder.connect() as conn:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
            locked.set()
            time.sleep(0.8)
            conn.exec_driver_sql("COMMIT")

    dispose_all()
    engine = get_engine(url)  # busy timeout 200 ms on its connections
    t = threading.Thread(target=hold)
    t.start()
    locked.wait()
    t0 = time.monotonic()
    assert A.submit_rating(ann, 0, "same", engine=engine).saved
    assert time.monotonic() - t0 >= 0.5
    t.join()
    holder.dispose()
    dispose_all()


@pytest.mark.parametrize("backend_url", ["postgres"], indirect=True)
def test_dropped_postgres_connections_are_recovered(backend_url):
    dispose_all()
    ann = _study(backend_url)
    engine = get_engine(backend_url)
    A.get_pair(ann, 0, engine=engine)  # pooled connections now open
    name = backend_url.rsplit("/", 1)[1]
    admin = sa.create_engine(
        backend_url.replace("postgresql://", "postgresql+psycopg://", 1),
        isolation_level="AUTOCOMMIT",
    )
    with admin.connect() as conn:  # what a PostgreSQL restart does to open connections
        conn.execute(
            sa.text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = :d AND pid <> pg_backend_pid()"
            ),
            {"d": name},
        )
    admin.dispose()
    assert A.submit_rating(ann, 0, "same", engine=engine).saved
    assert A.get_pair(ann, 0, engine=engine).version == 1
    dispose_all()


def _first_use(url: str, start_at: float) -> str:
    time.sleep(max(0.0, start_at - time.time()))
    engine = get_engine(url)
    with engine.connect() as conn:
        return conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()


def test_parallel_first_use_of_a_fresh_database(backend_url):
    """Ten processes opening a brand-new database at the same instant: all succeed, the schema
    is migrated once (SQLite: BEGIN IMMEDIATE; PostgreSQL: advisory lock)."""
    dispose_all()
    n = 10
    start = time.time() + 1.5
    with ProcessPoolExecutor(max_workers=n, mp_context=mp.get_context("fork")) as pool:
        versions = list(pool.map(_first_use, [backend_url] * n, [start] * n))
    assert set(versions) == db._heads()
    engine = get_engine(backend_url)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM alembic_version").scalar() == 1
    dispose_all()


def test_sqlite_is_durable_and_waits_one_busy_timeout(tmp_path):
    dispose_all()
    engine = get_engine(f"sqlite:///{tmp_path / 'd.db'}")
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == db.BUSY_TIMEOUT_MS
    dispose_all()


class _Proxy:
    """A TCP proxy in front of PostgreSQL that can be 'stopped' (listener closed, every open
    connection cut, like a server restart) and 'started' again on the same port."""

    def __init__(self, target: tuple[str, int]):
        import socket

        self.target = target
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self.conns: list = []
        self.listener = None

    def start(self) -> None:
        import socket
        import threading

        lst = socket.socket()
        lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lst.bind(("127.0.0.1", self.port))
        lst.listen(64)
        self.listener = lst
        threading.Thread(target=self._accept, args=(lst,), daemon=True).start()

    def _accept(self, lst) -> None:
        import socket
        import threading

        while True:
            try:
                client, _ = lst.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self.conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a, b) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.close()
                except OSError:
                    pass

    def stop(self) -> None:
        import socket

        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread (Linux)
        except OSError:
            pass
        self.listener.close()
        for s in self.conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass
        self.conns = []


@pytest.mark.parametrize("backend_url", ["postgres"], indirect=True)
def test_postgres_restart_not_saved_then_recovered(backend_url, monkeypatch):
    """PostgreSQL goes away mid-session: a save fails with StoreUnavailable (nothing stored);
    a save made while it comes back within the retry budget succeeds; afterwards the same
    engine works again without any reconnect by the caller."""
    import threading
    from urllib.parse import urlsplit

    dispose_all()
    ann = _study(backend_url)
    parts = urlsplit(backend_url)
    proxy = _Proxy((parts.hostname, parts.port or 5432))
    proxy.start()
    via = backend_url.replace(f"{parts.hostname}:{parts.port or 5432}", f"127.0.0.1:{proxy.port}")
    engine = get_engine(via)
    assert A.get_pair(ann, 0, engine=engine).version == 0
    proxy.stop()
    monkeypatch.setattr(db, "RETRY_BUDGET_S", 0.5)
    with pytest.raises(StoreUnavailable):
        A.submit_rating(ann, 0, "same", expected_version=0, engine=engine)
    monkeypatch.setattr(db, "RETRY_BUDGET_S", 10.0)
    threading.Timer(0.7, proxy.start).start()  # back while the next save is retrying
    res = A.submit_rating(ann, 0, "same", expected_version=0, engine=engine)
    assert (res.saved, res.version) == (True, 1)
    assert A.get_pair(ann, 0, engine=engine).rating == "same"
    assert len(rating_history(open_study("faults", engine=get_engine(backend_url)))) == 1
    proxy.stop()
    dispose_all()
