"""Where the test suite's CPU goes: by kind of process and by test module, read from /proc.

``make test-cpu`` (or ``python tools/suite_cpu.py [PYTEST ARGS ...]``, default ``-n 2``) runs
pytest with a small plugin (this file, loaded with ``-p suite_cpu``) that notes when each test
starts and ends on which worker, while a sampler reads every process's CPU time
(``/proc/PID/stat``: utime + stime) five times a second. At the end it prints:

- the machine's busy share (``/proc/stat``) and pytest's wall time;
- CPU seconds by kind of process: the pytest workers (and the processes they fork), the app
  servers, chromium (browser, renderers, GPU and utility processes), Playwright's driver,
  PostgreSQL, Spark's JVM, other commands;
- CPU seconds by test module: the workers' own CPU during the module's tests, plus every
  process started by a worker (a server, a browser, a CLI) while one of the module's tests
  ran, by kind.

On two cores a run's wall time is about its CPU over two (the machine is 90-95% busy), so the
module table is where a shorter ``make test`` comes from (docs/testing.md). A process that
lives shorter than a sample (0.2 s) is missed; PostgreSQL's server processes are not the
workers' children and are counted by kind only.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HZ = os.sysconf("SC_CLK_TCK")
#: Where the plugin writes each worker's test windows (set by the runner for pytest).
WINDOWS_DIR = "MEDSIM_SUITE_CPU_DIR"


# ------------------------------------------------------------------------ the pytest plugin
def _since_boot() -> float:
    """Seconds since the machine started: the clock of a process's start in /proc."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def _own_cpu() -> float:
    t = os.times()
    return t.user + t.system


def _note(line: str) -> None:
    folder = os.environ.get(WINDOWS_DIR)
    if folder:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with open(Path(folder) / f"{worker}.jsonl", "a", encoding="utf-8") as out:
            out.write(line + "\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Note the test's window: its worker, its start, and the worker's own CPU in it (a
    process a worker starts belongs to the last test that started before it)."""
    start, own = _since_boot(), _own_cpu()
    yield
    row = {"test": item.nodeid, "pid": os.getpid(), "start": start, "own": _own_cpu() - own}
    _note(json.dumps(row))


# ------------------------------------------------------------------------------ the sampler
def _machine_ticks() -> tuple[int, int]:
    """(busy, idle) jiffies of the whole machine (iowait counted as idle)."""
    with open("/proc/stat", encoding="ascii") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + values[4]
    return sum(values[:8]) - idle, idle


class Sampler(threading.Thread):
    """Every process's CPU seconds, from its first sighting on (processes already running at
    the start count only what they use after it)."""

    def __init__(self, every: float = 0.2):
        super().__init__(daemon=True, name="suite-cpu-sampler")
        self.every = every
        self.stop = threading.Event()
        self.procs: dict[tuple[int, int], dict] = {}
        self._first = True

    def run(self) -> None:
        me = os.getpid()
        while not self.stop.is_set():
            self._sample(me)
            self._first = False
            self.stop.wait(self.every)
        self._sample(me)

    def _sample(self, me: int) -> None:
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == me:
                continue
            try:
                with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                ticks = int(fields[11]) + int(fields[12])
                key = (int(name), int(fields[19]))
                seen = self.procs.get(key)
                if seen is None:
                    with open(f"/proc/{name}/cmdline", "rb") as f:
                        cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
                    self.procs[key] = {
                        "pid": int(name),
                        "ppid": int(fields[1]),
                        "start": int(fields[19]) / HZ,
                        "cmd": cmd,
                        "first": ticks if self._first else 0,
                        "ticks": ticks,
                    }
                else:
                    seen["ticks"] = ticks
            except (OSError, IndexError, ValueError):
                continue  # ended between listing and reading


def kind(cmd: str) -> str:
    """What a process is, from its command line."""
    if "chrom" in cmd.split(" ", 1)[0] or "/chromium" in cmd:
        kind_arg = cmd.split("--type=", 1)[1].split(" ", 1)[0] if "--type=" in cmd else "browser"
        return f"chromium {kind_arg}"
    if "playwright/driver" in cmd:
        return "playwright driver"
    if "postgres" in cmd.split(" ", 1)[0] or cmd.startswith("postgres:"):
        return "postgresql"
    if "streamlit run" in cmd:
        return "app server (streamlit run)"
    if "java" in cmd.split(" ", 1)[0] or "spark-class" in cmd:
        return "java (Spark)"
    if "nginx" in cmd:
        return "nginx"
    if "locust" in cmd:
        return "locust"
    if "exec(eval(sys.stdin.readline()))" in cmd or "-m pytest" in cmd or "xdist" in cmd:
        return "pytest (workers and their forks)"
    if "medsim_annot" in cmd:
        return "medsim CLI"
    if "python" in cmd.split(" ", 1)[0]:
        return "other python"
    return "other"


# ------------------------------------------------------------------------------- the report
def report(sampler: Sampler, folder: Path, top: int) -> str:
    windows: dict[int, list[dict]] = collections.defaultdict(list)
    for file in folder.glob("*.jsonl"):
        for line in file.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            windows[row["pid"]].append(row)
    for rows in windows.values():
        rows.sort(key=lambda r: r["start"])
    parent = {p["pid"]: p["ppid"] for p in sampler.procs.values()}

    def worker_of(pid: int) -> int | None:
        for _ in range(64):
            if pid in windows:
                return pid
            if pid not in parent:
                return None
            pid = parent[pid]
        return None

    by_kind: collections.Counter[str] = collections.Counter()
    count: collections.Counter[str] = collections.Counter()
    by_module: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for p in sampler.procs.values():
        cpu = (p["ticks"] - p["first"]) / HZ
        what = kind(p["cmd"])
        by_kind[what] += cpu
        count[what] += 1
        worker = worker_of(p["pid"])
        if worker is None or worker == p["pid"]:
            continue  # a worker's own CPU is counted per test below
        started = p["start"] + 2 / HZ  # /proc counts whole clock ticks
        rows = [r for r in windows[worker] if r["start"] <= started]
        module = rows[-1]["test"].split("::", 1)[0] if rows else "(before the first test)"
        by_module[module][what.split(" (")[0]] += cpu
    for rows in windows.values():
        for r in rows:
            by_module[r["test"].split("::", 1)[0]]["own"] += r["own"]

    lines = ["", "CPU seconds by kind of process (processes seen):"]
    for what, cpu in by_kind.most_common():
        if cpu >= 0.05:
            lines.append(f"  {cpu:8.1f}  {what} ({count[what]})")
    lines.append(f"  {sum(by_kind.values()):8.1f}  in all")
    totals = {m: sum(c.values()) for m, c in by_module.items()}
    lines += ["", f"CPU seconds by test module, the {top} largest (own: the worker's own):"]
    for module in sorted(totals, key=lambda m: -totals[m])[:top]:
        parts = ", ".join(f"{k} {v:.1f}" for k, v in by_module[module].most_common() if v >= 0.05)
        lines.append(f"  {totals[module]:7.1f}  {module}  ({parts})")
    lines.append(f"  {sum(totals.values()):7.1f}  in all modules")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    top = 40
    args = argv or ["-n", "2"]
    with tempfile.TemporaryDirectory(prefix="suite-cpu-") as tmp:
        env = {
            **os.environ,
            WINDOWS_DIR: tmp,
            "PYTHONPATH": os.pathsep.join(
                [str(ROOT / "tools"), *filter(None, [os.environ.get("PYTHONPATH")])]
            ),
        }
        sampler = Sampler()
        busy0, idle0 = _machine_ticks()
        t0 = time.monotonic()
        sampler.start()
        code = subprocess.call(
            [sys.executable, "-m", "pytest", "-p", "suite_cpu", *args], cwd=ROOT, env=env
        )
        wall = time.monotonic() - t0
        sampler.stop.set()
        sampler.join()
        busy1, idle1 = _machine_ticks()
        busy, idle = (busy1 - busy0) / HZ, (idle1 - idle0) / HZ
        print(
            f"\nwall {wall:.0f} s; the machine was busy {busy:.0f} CPU-s, idle {idle:.0f}"
            f" ({100 * busy / max(busy + idle, 1e-9):.0f}% busy)"
        )
        print(report(sampler, Path(tmp), top))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
