"""Failed sign-ins counted in the store (shared by every app process), the overall delay
only for clients with failures of their own, and IPv6 counted per /64."""

from __future__ import annotations

import subprocess
import sys

import pytest

from medsim_annot.services.people import signin
from medsim_annot.services.people.throttle import Policy, Throttle, ThrottledError, client_key
from medsim_annot.storage import dispose_all, get_engine
from tests.conftest import ROOT


class Clock:
    def __init__(self, t: float = 1_700_000_000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def engine(backend_url, monkeypatch):
    monkeypatch.delenv("MEDSIM_ADMIN_PASSWORD", raising=False)
    return get_engine(backend_url)


def test_many_addresses_cannot_keep_out_a_doctor_who_never_failed(engine):
    """The review's attack (24 addresses kept a doctor with no failures out for 2 hours),
    here at 6 failures a minute so the overall delay is on throughout."""
    clock = Clock()
    th = Throttle("access-code", clock=clock)
    attackers = [f"203.0.113.{i}" for i in range(24)]
    refused = tried = 0
    for minute in range(120):
        for k in range(12):  # 12 steps of 5 s a minute
            step = minute * 60 + k * 5
            clock.t = 1_700_000_000.0 + step
            if step % 10 == 0:  # 6 failures a minute, spread over the addresses
                client = attackers[(step // 10) % len(attackers)]
                try:
                    th.check(client, engine=engine)
                    th.failure(client, engine=engine)
                except ThrottledError:
                    pass
            if step % 20 == 0:  # the doctor, every 20 s
                tried += 1
                try:
                    th.check("198.51.100.7", engine=engine)
                except ThrottledError:
                    refused += 1
    assert th.failures(engine=engine) > Policy().free_overall  # the overall delay is on
    assert tried > 300 and refused == 0


def test_overall_delay_still_slows_the_clients_that_fail(engine):
    clock = Clock()
    th = Throttle("access-code", Policy(free_overall=5, max_overall_delay_s=8), clock=clock)
    for i in range(6):
        th.failure(f"10.0.0.{i}", engine=engine)
    th.check("10.9.9.9", engine=engine)
    with pytest.raises(ThrottledError, match="slowed down"):
        th.check("10.0.0.3", engine=engine)


def test_counts_and_lockouts_are_shared_through_the_store(engine):
    """Two throttles on one store (two app processes) see each other's failures."""
    clock = Clock()
    one = Throttle("admin", Policy(lockout_after=4), clock=clock)
    two = Throttle("admin", Policy(lockout_after=4), clock=clock)
    for th in (one, two, one, two):
        th.failure("192.0.2.5", engine=engine)
        clock.t += 120
    with pytest.raises(ThrottledError) as exc:
        two.check("192.0.2.5", engine=engine)
    assert exc.value.locked
    assert one.failures("192.0.2.5", engine=engine) == 4
    one.success("192.0.2.5", engine=engine)
    two.check("192.0.2.5", engine=engine)
    assert two.failures("192.0.2.5", engine=engine) == 0 and two.failures(engine=engine) == 4


def test_failures_of_another_process_lock_out_here(engine, backend_url, monkeypatch):
    """A real second process fails four access codes (short delays, lockout after four);
    this process then refuses the client before checking its right code."""
    import pandas as pd

    from data_schemas.scales import BINARY
    from medsim_annot.services.people.throttle import CODE_SIGNINS
    from medsim_annot.services.studies import create_study

    policy = "Policy(base_delay_s=0.01, lockout_after=4)"
    monkeypatch.setattr(CODE_SIGNINS, "policy", Policy(base_delay_s=0.01, lockout_after=4))
    pairs = pd.DataFrame({"pair_id": ["p1"], "term_1": ["a"], "term_2": ["b"]})
    code = create_study("s", pairs, BINARY, ["ann"], engine=engine)["annotators"][0]
    script = (
        "import time\n"
        "from medsim_annot.services.people import signin\n"
        "from medsim_annot.services.people.throttle import CODE_SIGNINS, Policy, ThrottledError\n"
        f"CODE_SIGNINS.policy = {policy}\n"
        "done = 0\n"
        "while done < 4:\n"
        "    try:\n"
        "        signin.sign_in_with_code('ZZZZ-ZZZZ-ZZZZ-ZZZZ-ZZZZ-ZZZZ-ZZ', client='192.0.2.9')\n"
        "        done += 1\n"
        "    except ThrottledError as exc:\n"
        "        time.sleep(exc.retry_after + 0.01)\n"
    )
    env = {"MEDSIM_DATABASE_URL": backend_url, "PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, check=True, timeout=120)
    with pytest.raises(ThrottledError) as exc:
        signin.sign_in_with_code(code["access_code"], client="192.0.2.9", engine=engine)
    assert exc.value.locked
    assert signin.sign_in_with_code(code["access_code"], client="192.0.2.10", engine=engine)
    dispose_all()


def test_ipv6_counts_per_64():
    clock = Clock()
    th = Throttle("admin", Policy(lockout_after=5), clock=clock)
    for i in range(5):  # five addresses of one /64: one client
        th.failure(f"2001:db8:aa:bb::{i + 1:x}")
        clock.t += 120
    with pytest.raises(ThrottledError) as exc:
        th.check("2001:db8:aa:bb:ffff:ffff:ffff:ffff")
    assert exc.value.locked
    th.check("2001:db8:aa:bc::1")  # the next /64 is another client
    assert client_key("::ffff:192.0.2.1") == "192.0.2.1"
    assert client_key("[2001:db8::1]") == "2001:db8::/64"
    assert client_key("fe80::1%eth0") == "fe80::/64"
    assert client_key("local") == "local"
