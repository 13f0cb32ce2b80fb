"""Fault harness shared by tests/test_faults.py (small) and benchmarks/bench_faults.py (full).

- :func:`writer_main` is one annotator's writer process (``python -m tests.faults writer``):
  it resumes at the first unrated slot (``queue_state``) and saves one rating per slot
  through the service layer with ``expected_version=0``, printing ``ACK position value``
  after each acknowledged (committed) save.
- :class:`Writers` starts such processes, collects their acknowledgements and kills them
  with SIGKILL; :func:`check_store` proves every acknowledged rating is stored exactly once,
  the store is sound (``PRAGMA integrity_check``) and every annotator resumes at the first slot
  without a rating.
- :class:`TcpProxy` stands between the app and PostgreSQL so a test can make the database
  unreachable (connections dropped, new ones refused) and bring it back.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from medsim_annot.services.study_handle import open_study

ROOT = Path(__file__).resolve().parents[1]


def value_for(annotator_id: int, position: int) -> str:
    """The answer a writer gives (known in advance, so a check needs no log of values)."""
    return ("same", "not_same")[(annotator_id + position) % 2]


def make_study(name: str, n_pairs: int, annotators: list[str], *, engine=None) -> list:
    """A binary study where everyone rates every pair; the annotators' identities."""
    from data_schemas.scales import BINARY
    from medsim_annot.services.people.annotators import authenticate_annotator
    from medsim_annot.services.studies import create_study

    frame = pd.DataFrame(
        {
            "pair_id": [f"p{i}" for i in range(n_pairs)],
            "term_1": [f"term {i} a" for i in range(n_pairs)],
            "term_2": [f"term {i} b" for i in range(n_pairs)],
        }
    )
    res = create_study(name, frame, BINARY, annotators, engine=engine)
    return [authenticate_annotator(a["access_code"], engine=engine) for a in res["annotators"]]


def writer_main(argv: list[str]) -> int:
    """``writer URL ANNOTATOR_ID CREDENTIAL MAX_SAVES [PAUSE_S]``."""
    from medsim_annot.services import annotation as A
    from medsim_annot.storage import get_engine

    url, ann, cred, limit = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
    pause = float(argv[4]) if len(argv) > 4 else 0.0
    engine = get_engine(url)
    pos = A.queue_state(ann, credential=cred, engine=engine).first_unrated
    saves = 0
    while pos is not None and saves < limit:
        value = value_for(ann, pos)
        res = A.submit_rating(ann, pos, value, expected_version=0, credential=cred, engine=engine)
        sys.stdout.write(f"ACK {pos} {value}\n")
        sys.stdout.flush()
        saves += 1
        pos = res.next_position
        if pause:
            time.sleep(pause)
    sys.stdout.write("DONE\n")
    sys.stdout.flush()
    return 0


@dataclass
class Writers:
    """Writer processes, one per annotator identity, and what each acknowledged."""

    url: str
    idents: list
    max_saves: int = 10**9
    pause_s: float = 0.0
    acked: dict[int, list[tuple[int, str]]] = field(default_factory=dict)
    procs: list[subprocess.Popen] = field(default_factory=list)
    _threads: list[threading.Thread] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> Writers:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        for ident in self.idents:
            self.acked.setdefault(ident.annotator_id, [])
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tests.faults",
                    "writer",
                    self.url,
                    str(ident.annotator_id),
                    str(ident.credential_version),
                    str(self.max_saves),
                    str(self.pause_s),
                ],
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            self.procs.append(proc)
            t = threading.Thread(target=self._read, args=(ident.annotator_id, proc), daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def _read(self, ann: int, proc: subprocess.Popen) -> None:
        for line in proc.stdout:
            parts = line.split()
            if len(parts) == 3 and parts[0] == "ACK":
                with self._lock:
                    self.acked[ann].append((int(parts[1]), parts[2]))

    def total(self) -> int:
        with self._lock:
            return sum(len(v) for v in self.acked.values())

    def wait_for(self, n: int, timeout: float = 120) -> None:
        deadline = time.time() + timeout
        while self.total() < n:
            dead = [p for p in self.procs if p.poll() not in (None, 0)]
            if dead:
                raise RuntimeError("a writer failed:\n" + dead[0].stderr.read())
            if time.time() > deadline:
                raise TimeoutError(f"only {self.total()} of {n} acknowledgements")
            time.sleep(0.01)

    def kill9(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
        self.join()

    def join(self, timeout: float = 300) -> None:
        for p in self.procs:
            p.wait(timeout)
        for t in self._threads:
            t.join(10)
        bad = [p for p in self.procs if p.returncode not in (0, -signal.SIGKILL)]
        if bad:
            raise RuntimeError("a writer failed:\n" + bad[0].stderr.read())


@dataclass(frozen=True)
class StoreCheck:
    """The result of :func:`check_store` (every count 0 and ``integrity == "ok"``: sound)."""

    acknowledged: int
    stored: int
    lost: int
    duplicated: int
    wrong_value: int
    unacknowledged_stored: int
    wrong_resume: int
    integrity: str


def check_store(engine, study: str, idents: list, acked: dict[int, list]) -> StoreCheck:
    """Compare the store with the acknowledgements of every writer."""
    from medsim_annot.services import annotation as A
    from medsim_annot.services.studies import rating_history

    hist = rating_history(open_study(study, engine=engine))
    names = {i.annotator_id: i.name for i in idents}
    lost = dup = wrong = extra = resume = stored = 0
    for ann, acks in acked.items():
        mine = hist[hist["annotator"] == names[ann]]
        counts = mine.groupby("pair_id").size()
        stored += len(mine)
        dup += int((counts > 1).sum())
        values = dict(zip(mine["pair_id"], mine["rating"]))
        acked_pos = {p for p, _ in acks}
        for p, v in acks:
            if f"p{p}" not in values:
                lost += 1
            elif values[f"p{p}"] != v:
                wrong += 1
        # A save may commit and its process die before it prints ACK: at most one per run.
        extra += len({int(pid[1:]) for pid in values} - acked_pos)
        state = A.queue_state(ann, engine=engine)
        rated = {int(pid[1:]) for pid in values}
        first = next((i for i in range(state.total) if i not in rated), None)
        resume += int(state.first_unrated != first or state.done != len(rated))
    if engine.dialect.name == "sqlite":
        with engine.connect() as conn:
            integrity = str(conn.exec_driver_sql("PRAGMA integrity_check").scalar())
    else:
        integrity = "ok"  # PostgreSQL: crash safety is the server's (WAL); nothing to check
    return StoreCheck(
        sum(len(v) for v in acked.values()), stored, lost, dup, wrong, extra, resume, integrity
    )


class TcpProxy:
    """A TCP forwarder on a free loopback port to *target* (host, port). :meth:`cut` closes
    every connection and refuses new ones (the database is unreachable); :meth:`restore`
    accepts again."""

    def __init__(self, host: str, port: int):
        self.target = (host, port)
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.listener.listen(64)
        self.up = threading.Event()
        self.up.set()
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self.up.is_set():
                client.close()
                continue
            try:
                server = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self) -> None:
        self.up.clear()
        with self._lock:
            conns, self._conns = self._conns, []
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
                c.close()
            except OSError:
                pass

    def restore(self) -> None:
        self.up.set()

    def close(self) -> None:
        self._closed = True
        self.cut()
        self.listener.close()


if __name__ == "__main__":  # pragma: no cover - run as a subprocess
    if sys.argv[1] == "writer":
        raise SystemExit(writer_main(sys.argv[2:]))
    raise SystemExit(f"unknown command {sys.argv[1]!r}")
