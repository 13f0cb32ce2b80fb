"""``make bench``: run every ``benchmarks/bench_*.py`` (or those named) and print its figures.

Each module defines ``run(report)``; ``report(name, value, unit, baseline=None, goal=None)``
prints one line: the figure, the straightforward baseline measured in the same run and the
ratio between them, and whether the goal stated in the benchmark's docstring is met. Every
figure also goes to the scoreboard (``benchmarks/scoreboard.py``), which ends the run with
one table of the figures that have a goal: goal, value, same-run baseline, ✓ / ✗.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.scoreboard import BOARD  # after the path above


def report(
    name: str,
    value: float,
    unit: str,
    *,
    baseline: float | None = None,
    goal: str | None = None,
    ok: bool | None = None,
    lower_is_better: bool = True,
) -> None:
    figure = BOARD.report(
        name, value, unit, baseline=baseline, goal=goal, ok=ok, lower_is_better=lower_is_better
    )
    print(figure.line(), flush=True)


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    names = sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_"))
    wanted = [a if a.startswith("bench_") else f"bench_{a}" for a in argv]
    if wanted:
        names = [n for n in names if n in wanted]
    for name in names:
        print(f"== {name} ==", flush=True)
        BOARD.start(name)
        t0 = time.perf_counter()
        module = importlib.import_module(f"benchmarks.{name}")
        module.run(report)
        print(f"  ({time.perf_counter() - t0:.1f} s)", flush=True)
    print("\n== goals ==", flush=True)
    print(BOARD.table(), flush=True)
    if os.environ.get("MEDSIM_BENCH_JSON"):
        BOARD.dump(Path(os.environ["MEDSIM_BENCH_JSON"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
