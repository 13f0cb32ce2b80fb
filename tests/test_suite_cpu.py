"""tools/suite_cpu.py, the suite's CPU by process and module: what a command line is counted
as, and which module a process started by a worker is charged to (by the worker's test
windows, from the worker up through the process's parents)."""

from __future__ import annotations

import importlib.util
import json

from tests.conftest import ROOT

_SPEC = importlib.util.spec_from_file_location("suite_cpu", ROOT / "tools" / "suite_cpu.py")
assert _SPEC is not None and _SPEC.loader is not None
suite_cpu = importlib.util.module_from_spec(_SPEC)  # tools/ is not a package
_SPEC.loader.exec_module(suite_cpu)


def test_kinds_of_process():
    assert suite_cpu.kind("/usr/lib/chromium/chromium --type=renderer --lang=en") == (
        "chromium renderer"
    )
    assert suite_cpu.kind("/usr/lib/chromium/chromium --headless --no-sandbox") == (
        "chromium browser"
    )
    assert suite_cpu.kind(".venv/bin/python -m streamlit run serve.py --server.port 1") == (
        "app server (streamlit run)"
    )
    assert suite_cpu.kind("postgres: medsim medsim_test 127.0.0.1(5) idle") == "postgresql"
    assert suite_cpu.kind("python -u -c import sys;exec(eval(sys.stdin.readline()))") == (
        "pytest (workers and their forks)"
    )
    assert suite_cpu.kind(".venv/bin/python -m medsim_annot demo") == "medsim CLI"
    assert suite_cpu.kind("/usr/bin/bash -c true") == "other"


def _proc(pid, ppid, start, cmd, ticks, first=0):
    return {"pid": pid, "ppid": ppid, "start": start, "cmd": cmd, "first": first, "ticks": ticks}


def test_a_process_is_charged_to_the_module_running_when_it_started(tmp_path):
    hz = suite_cpu.HZ
    windows = [
        {"test": "tests/test_a.py::t1", "pid": 10, "start": 100.0, "own": 1.5},
        {"test": "tests/test_b.py::t1", "pid": 10, "start": 105.0, "own": 0.5},
    ]
    (tmp_path / "gw0.jsonl").write_text("\n".join(json.dumps(w) for w in windows) + "\n")
    sampler = suite_cpu.Sampler()
    sampler.procs = {
        (10, 1): _proc(10, 1, 90.0, "python -u -c import sys;exec(eval(sys.stdin.readline()))", 0),
        # a server started in test_a, a browser in test_b whose renderer is its grandchild
        (11, 1): _proc(11, 10, 101.0, "python -m streamlit run serve.py", 3 * hz),
        (12, 1): _proc(12, 10, 106.0, "/usr/lib/chromium/chromium --headless", 1 * hz),
        (13, 1): _proc(13, 12, 107.0, "/usr/lib/chromium/chromium --type=renderer", 2 * hz),
        # a process running before the sampler began: only what it used since counts
        (14, 1): _proc(14, 1, 5.0, "postgres: checkpointer", 9 * hz, first=8 * hz),
    }
    text = suite_cpu.report(sampler, tmp_path, top=10)
    lines = {line.split("  (")[0].strip(): line for line in text.splitlines()}
    assert "4.5  tests/test_a.py" in lines, text  # the server's 3 s and the worker's own 1.5
    assert "3.5  tests/test_b.py" in lines, text  # browser 1 + renderer 2 + own 0.5
    assert "1.0  postgresql (1)" in text, text
    assert "8.0  in all modules" in text, text
