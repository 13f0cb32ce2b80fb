"""Speed of the rater checks (accuracy on check pairs, rushed answers, pace) on the
dashboard's scale: 300,000 current ratings by 10 doctors, 5 % of them on 500 check pairs.
Baseline, measured in the same run: a straightforward pandas ``groupby().apply`` with one
Python call per doctor and per check pair answered. Goal: < 1 s and >= 5x the baseline.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks._timing import best_time
from data_schemas import columns as C
from medsim_annot.stats.checks import check_accuracy, pace, rushed_rate

SEED = 20181210
N_RATINGS = 300_000
N_CHECKS = 500


def data() -> tuple[pd.DataFrame, dict[str, float]]:
    rng = np.random.default_rng(SEED)
    n = N_RATINGS
    is_check = rng.random(n) < 0.05
    pid = np.where(
        is_check,
        np.char.add("c", rng.integers(0, N_CHECKS, n).astype(str)),
        np.char.add("p", np.arange(n).astype(str)),
    ).astype(object)
    value = rng.integers(0, 2, n).astype(float)
    value[rng.random(n) < 0.03] = np.nan
    elapsed = rng.lognormal(8.3, 0.7, n)
    elapsed[rng.random(n) < 0.02] = np.nan
    frame = pd.DataFrame(
        {
            C.PAIR_ID: pid,
            C.ANNOTATOR: np.array([f"dr{i}" for i in range(10)], dtype=object)[
                rng.integers(0, 10, n)
            ],
            C.VALUE: value,
            C.ELAPSED_MS: elapsed,
        }
    )
    return frame, {f"c{i}": float(i % 2) for i in range(N_CHECKS)}


def fast(frame, answers) -> None:
    check_accuracy(frame, answers)
    rushed_rate(frame, 1500)
    pace(frame)


def baseline(frame, answers) -> None:
    def per_doctor(g: pd.DataFrame) -> pd.Series:
        checks = [(v, answers[p]) for p, v in zip(g[C.PAIR_ID], g[C.VALUE]) if p in answers]
        correct = sum(1 for v, a in checks if v == a)
        e = g[C.ELAPSED_MS].dropna()
        return pd.Series(
            {
                "n_checks": len(checks),
                "accuracy": correct / len(checks) if checks else np.nan,
                "rushed_rate": (e < 1500).mean() if len(e) else np.nan,
                "median_seconds": e.median() / 1000,
                "pairs_per_hour": len(e) * 3.6e6 / e.clip(upper=300_000).sum(),
            }
        )

    frame.groupby(C.ANNOTATOR).apply(per_doctor, include_groups=False)


def run(report) -> None:
    frame, answers = data()
    t_fast = best_time(lambda: fast(frame, answers), repeat=3)
    t_base = best_time(lambda: baseline(frame, answers), repeat=3)
    report(
        "rater checks (check accuracy + rushed + pace), 300,000 ratings x 10 doctors",
        t_fast,
        "s",
        baseline=t_base,
        goal="< 1 s and >= 5x baseline",
        ok=t_fast < 1 and t_base / t_fast >= 5,
    )
