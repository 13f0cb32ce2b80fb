"""Timing helper shared by the benchmarks."""

from __future__ import annotations

import time


def best_time(fn, repeat: int = 1) -> float:
    """Best wall time in seconds of *repeat* runs of *fn* (the machine is shared: the best run
    is the figure, the others carry other processes' noise)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best
