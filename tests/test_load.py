"""A small version of the load benchmark (``benchmarks/bench_capacity.py``): simulated doctors
with tokens minted through the service post their ratings to a real server's endpoint, one
of them every so often going back to change an answer, and every rating is acknowledged and
stored exactly once — on one server (SQLite and PostgreSQL), and on two servers behind the
nginx configuration of docs/deploy.md sharing one PostgreSQL store, where every doctor's
requests are answered by both servers. Only 127.0.0.1; bounded in presses and time. No
timing is asserted (speed figures are in ``make bench``)."""

from __future__ import annotations

import os

import pytest

from medsim_annot.storage import get_engine
from tests.conftest import ROOT, need
from tests.faults import make_study
from tests.load import Pace, audit, mint_tokens, run_load
from tests.nginx_proxy import NGINX, Nginx, served_by_doctor
from tests.streamlit_harness import start_streamlit

DOCTORS = 10
PRESSES = 20
#: How long the doctors may wait for their last acknowledgements on a busy CI machine.
DRAIN_S = 120.0
#: Faster than a doctor (2 s) so the test is short, above the endpoint's minimum view time;
#: a quarter of the presses go back and change the previous answer (chained edits).
PACE = Pace(pace_s=0.25, jitter_s=0.05, back_share=0.25)


def _servers(url: str, tmp_path, n: int):
    env = {**os.environ, "MEDSIM_DATABASE_URL": url, "PYTHONPATH": str(ROOT)}
    return [start_streamlit(env, tmp_path / f"server{k}.log", script="serve.py") for k in range(n)]


def _stop(servers) -> None:
    for proc, _ in servers:
        proc.terminate()
    for proc, _ in servers:
        proc.wait(15)


def _exactly_once(engine, idents, run) -> None:
    t = run.tally
    assert (t.fatal, t.refused, t.version_errors) == ([], [], []), (t.http_errors, t.resends)
    assert run.drained, f"{len(t.unacked())} presses never acknowledged"
    assert len(t.presses) == DOCTORS * PRESSES
    back = [p for p in t.presses if p.after is not None or p.version]
    assert back, "no press changed an earlier answer"
    a = audit(engine, [i.annotator_id for i in idents], t)
    assert (a.lost, a.doubled, a.unacknowledged) == (0, 0, 0), a
    assert a.acknowledged == a.stored == DOCTORS * PRESSES


def test_doctors_on_one_server_exactly_once(backend_url, tmp_path):
    engine = get_engine(backend_url)
    idents = make_study("load", PRESSES + 25, [f"doc{i}" for i in range(DOCTORS)], engine=engine)
    doctors = mint_tokens(engine, idents)
    servers = _servers(backend_url, tmp_path, 1)
    try:
        run = run_load(
            servers[0][1],
            doctors,
            steps=[(DOCTORS, 60.0)],
            pace=PACE,
            max_presses=PRESSES,
            drain_s=DRAIN_S,
        )
    finally:
        _stop(servers)
    _exactly_once(engine, idents, run)


@pytest.mark.postgres
@pytest.mark.parametrize("backend_url", ["postgres"], indirect=True)
def test_doctors_on_two_servers_behind_nginx_exactly_once(backend_url, tmp_path):
    need(NGINX.exists(), f"{NGINX} not found (apt-get install nginx)", "MEDSIM_REQUIRE_NGINX")
    engine = get_engine(backend_url)
    idents = make_study("load", PRESSES + 25, [f"doc{i}" for i in range(DOCTORS)], engine=engine)
    doctors = mint_tokens(engine, idents)
    servers = _servers(backend_url, tmp_path, 2)
    ports = tuple(int(base.rsplit(":", 1)[1]) for _, base in servers)
    try:
        with Nginx(tmp_path / "nginx_tmp", ports) as proxy:  # type: ignore[arg-type]
            run = run_load(
                proxy.base,
                doctors,
                steps=[(DOCTORS, 60.0)],
                pace=PACE,
                max_presses=PRESSES,
                drain_s=DRAIN_S,
                verify=False,  # the proxy's throw-away certificate
            )
            served = (tmp_path / "nginx_tmp" / "upstreams.log").read_text()
    finally:
        _stop(servers)
    _exactly_once(engine, idents, run)
    # Any server serves any doctor: each doctor's requests were answered by both servers
    # (nginx's least_conn, no sticky sessions for the endpoint) and still stored exactly once.
    by_doctor = served_by_doctor(served)
    assert sorted(by_doctor) == sorted(str(i.annotator_id) for i in idents)
    ports = {f"127.0.0.1:{base.rsplit(':', 1)[1]}" for _, base in servers}
    for doctor, answered in by_doctor.items():
        assert set(answered) == ports, (doctor, answered)
