"""EHR co-occurrence counting at scale.

Synthetic events: 1,000,000 patients with 20 distinct concepts each (190 million pair
incidences) from a 30,000-concept vocabulary with a Zipf-like frequency (weight of the
concept of rank r proportional to 1/r), written as 20 Parquet parts in a temporary folder
and deleted afterwards. ``medsim build cooccurrence`` (DuckDB, EHR-RelB settings: top 4,000,
at most 6 per concept) runs in a child process so that its peak memory (max RSS) is
measured alone (its own ``ru_maxrss``). The baseline is a straightforward pandas + ``itertools.combinations`` +
``Counter`` implementation run on the first 20,000 patients; the ratio compares the time
per patient.

``MEDSIM_BENCH_COOC_PATIENTS`` overrides the number of patients (e.g. 50000 for a quick run).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from itertools import combinations
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PATIENTS = int(os.environ.get("MEDSIM_BENCH_COOC_PATIENTS", "1000000"))
PER_PATIENT = 20
VOCABULARY = 30_000
BASELINE_PATIENTS = 20_000
PARTS = 20
GOAL_SECONDS = 300.0
GOAL_GB = 8.0


def _distinct_draws(rng: np.random.Generator, cdf: np.ndarray, n: int) -> np.ndarray:
    """``n`` rows of PER_PATIENT distinct concept codes, each drawn with the Zipf weights
    (the first PER_PATIENT distinct values of a longer draw with replacement)."""
    out = np.empty((n, PER_PATIENT), dtype=np.int32)
    todo = np.arange(n)
    k = 3 * PER_PATIENT
    while len(todo):
        draws = np.searchsorted(cdf, rng.random((len(todo), k))).astype(np.int32)
        order = np.argsort(draws, axis=1, kind="stable")
        ranked = np.take_along_axis(draws, order, axis=1)
        first = np.ones_like(ranked, dtype=bool)
        first[:, 1:] = ranked[:, 1:] != ranked[:, :-1]
        position = np.where(first, order, k)  # where each distinct value first appears
        position.sort(axis=1)
        enough = position[:, PER_PATIENT - 1] < k
        picked = np.take_along_axis(draws, np.minimum(position[:, :PER_PATIENT], k - 1), axis=1)
        out[todo[enough]] = picked[enough]
        todo = todo[~enough]
        k *= 2
    return out


def _write_events(
    folder: Path, patients: int, seed: int = 20201208
) -> tuple[np.ndarray, list[str]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, VOCABULARY + 1)
    cdf = np.cumsum(weights) / weights.sum()
    # SNOMED-like integer ids, so text order differs from numeric order.
    ids = 10_000 + rng.choice(900_000_000, VOCABULARY, replace=False).astype(np.int64)
    labels = pa.array([f"concept {i}" for i in ids.tolist()], pa.string())
    categories = pa.array(["symptom", "diagnosis", "presenting complaint"], pa.string())
    bounds = np.linspace(0, patients, PARTS + 1).astype(int)
    for part, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
        if hi <= lo:
            continue
        codes = _distinct_draws(rng, cdf, hi - lo).ravel()
        patient = np.repeat(np.arange(lo, hi, dtype=np.int64), PER_PATIENT)
        table = pa.table(
            {
                "patient_id": patient,
                "concept_id": ids[codes],
                "concept_label": pa.DictionaryArray.from_arrays(pa.array(codes), labels),
                "category": pa.DictionaryArray.from_arrays(
                    pa.array(codes % 3, pa.int32()), categories
                ),
            }
        )
        pq.write_table(table, folder / f"part-{part:05d}.parquet")
    return ids, labels.to_pylist()


def _pandas_baseline(folder: Path, patients: int, top: int = 4000, cap: int = 6) -> float:
    """The straightforward way: pandas to read, combinations + Counter per patient, sort,
    greedy cap. Returns seconds."""
    import pandas as pd

    t0 = time.perf_counter()
    frames = []
    for part in sorted(folder.glob("*.parquet")):
        df = pd.read_parquet(
            part, columns=["patient_id", "concept_id"], filters=[("patient_id", "<", patients)]
        )
        frames.append(df)
        if len(df) == 0 or df["patient_id"].max() >= patients - 1:
            break
    events = pd.concat(frames)
    events["concept_id"] = events["concept_id"].astype(str)
    counts: Counter = Counter()
    for concepts in events.groupby("patient_id")["concept_id"]:
        counts.update(combinations(sorted(set(concepts[1])), 2))
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    used: Counter = Counter()
    kept = []
    for (a, b), _n in ordered:
        if used[a] < cap and used[b] < cap:
            kept.append((a, b))
            used[a] += 1
            used[b] += 1
            if len(kept) == top:
                break
    return time.perf_counter() - t0


_CHILD = """
import json, sys
sys.path.insert(0, {root!r})
from medsim_annot.services.build_cooccurrence import build_cooccurrence
report = build_cooccurrence({events!r}, {out!r}, max_per_concept=6, top=4000, engine="duckdb",
                            progress=lambda m: print(m, file=sys.stderr, flush=True))
import resource
usage = resource.getrusage(resource.RUSAGE_SELF)
report["max_rss_bytes"] = usage.ru_maxrss * 1024
report["cpu_seconds"] = usage.ru_utime + usage.ru_stime
print(json.dumps(report))
"""


def run(report) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="medsim-bench-cooc-"))
    try:
        events = tmp / "events"
        events.mkdir()
        t0 = time.perf_counter()
        _write_events(events, PATIENTS)
        print(
            f"  generated {PATIENTS:,} patients x {PER_PATIENT} concepts "
            f"({PATIENTS * PER_PATIENT * (PER_PATIENT - 1) // 2:,} pair incidences) in "
            f"{time.perf_counter() - t0:.1f} s",
            flush=True,
        )

        baseline_patients = min(BASELINE_PATIENTS, PATIENTS)
        base_s = _pandas_baseline(events, baseline_patients)

        out = tmp / "pairs.csv"
        code = _CHILD.format(root=str(ROOT), events=str(events), out=str(out))
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"duckdb run failed:\n{proc.stderr[-2000:]}")
        print("  " + proc.stderr.strip().replace("\n", "\n  "), flush=True)
        summary = json.loads(proc.stdout.strip().splitlines()[-1])
        peak_gb = summary["max_rss_bytes"] / 1e9  # the child's own peak (ru_maxrss, Linux KiB)
        print(
            f"  duckdb: {summary['pairs']:,} pairs of {summary['concepts']:,} concepts, "
            f"walked {summary['walked']:,} sorted pairs; CPU {summary['cpu_seconds']:.0f} s "
            f"over {wall:.0f} s wall on {os.cpu_count()} cores (load average "
            f"{os.getloadavg()[0]:.1f})",
            flush=True,
        )

        full = PATIENTS == 1_000_000
        report(
            "duckdb co-occurrence, total",
            wall,
            "s",
            goal=f"< {GOAL_SECONDS:.0f} s for 1,000,000 patients",
            ok=(wall < GOAL_SECONDS) if full else None,
        )
        report(
            "duckdb peak memory (max RSS)",
            peak_gb,
            "GB",
            goal=f"< {GOAL_GB:.0f} GB",
            ok=peak_gb < GOAL_GB,
        )
        report(
            "time per patient (duckdb vs pandas baseline)",
            wall / PATIENTS * 1e6,
            "us",
            baseline=base_s / baseline_patients * 1e6,
            goal=f"baseline: pandas + combinations + Counter on {baseline_patients:,} patients",
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
