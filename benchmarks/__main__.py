"""``make bench``: run every ``benchmarks/bench_*.py`` (or those named) and print its figures.

Each module defines ``run(report)``; ``report(name, value, unit, baseline=None, goal=None)``
prints one line: the figure, the straightforward baseline measured in the same run and the
ratio between them, and whether the goal stated in the benchmark's docstring is met.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

RESULTS: list[tuple[str, str, bool | None]] = []


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
    line = f"  {name}: {value:,.4g} {unit}"
    if baseline is not None and value:
        ratio = baseline / value if lower_is_better else value / baseline
        line += f"  | baseline {baseline:,.4g} {unit}  | ratio {ratio:,.1f}x"
    if goal:
        line += f"  | goal {goal}"
    if ok is not None:
        line += "  [OK]" if ok else "  [MISSED]"
    print(line, flush=True)
    RESULTS.append((name, line, ok))


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    names = sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_"))
    wanted = [a if a.startswith("bench_") else f"bench_{a}" for a in argv]
    if wanted:
        names = [n for n in names if n in wanted]
    for name in names:
        print(f"== {name} ==", flush=True)
        t0 = time.perf_counter()
        module = importlib.import_module(f"benchmarks.{name}")
        module.run(report)
        print(f"  ({time.perf_counter() - t0:.1f} s)", flush=True)
    missed = [n for n, _, ok in RESULTS if ok is False]
    print(
        f"\n{len(RESULTS)} figures, {len(missed)} goals missed"
        + (f": {', '.join(missed)}" if missed else "")
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
