"""Speed of the SNOMED builder's nearest-term search.

On a synthetic pool of realistic invented terms (2-10 words, about 30 characters, families
of near-identical terms as in a terminology):

* the straightforward approach of the original code -- per source term, pandas filters for
  the usable candidates, then a Python loop computing one Levenshtein distance per
  candidate -- measured on a sample, in distances per second (and, for reference, a bare
  Python loop of Levenshtein calls without the filters);
* our exact search (:func:`medsim_annot.builders.nearest.nearest_allowed`) in *effective*
  distances per second: queries x pool size / time, i.e. the rate at which the
  straightforward loop would have to run to answer the same queries (goal >= 100x);
* the projected time for ~300,000 queries against a 600,000-term pool (goal < 90 min);
* the nearest neighbours found compared with an exhaustive search on 2,000 queries;
* the whole build (20 files) of a synthetic RF2 release.

Sizes can be lowered for a quick look: ``MEDSIM_BENCH_SNOMED_POOL`` (default 600000),
``MEDSIM_BENCH_SNOMED_QUERIES`` (default 6000).
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from medsim_annot.builders import nearest, snomed
from medsim_annot.builders.rf2 import read_release
from medsim_annot.builders.synthetic_rf2 import generate_release, invented_terms

FULL_QUERIES = 300_000
FULL_POOL = 600_000


def _straightforward_rate(pool, queries: int = 3) -> float:
    """Distances per second of the straightforward approach of the original code: per
    source term, data-frame filters for the usable candidates, then a Python loop with one
    Levenshtein call per candidate (lower-cased), then a sort."""
    import pandas as pd

    pos = pd.DataFrame({"source": pool[0::2], "target": pool[1::2][: len(pool[0::2])]})
    done = 0
    t0 = time.perf_counter()
    for k in range(queries):
        label1 = pos["source"].iloc[k * 997]
        group = pos[pos["source"] == label1]
        usable = pos.drop(group.index)
        synonyms = group["target"].tolist() + [label1]
        exclude = (
            usable[usable["target"].isin(synonyms)]["source"].tolist()
            + usable[usable["source"].isin(synonyms)]["target"].tolist()
        )
        usable = usable[~usable["source"].isin(exclude) & ~usable["target"].isin(exclude)]
        candidates = list(dict.fromkeys(usable["source"].tolist() + usable["target"].tolist()))
        distances = [Levenshtein.distance(c.lower(), label1.lower()) for c in candidates]
        sorted(zip(distances, candidates))
        done += len(candidates)
    return done / (time.perf_counter() - t0)


def _plain_loop_rate(pool, seconds: float = 2.0) -> float:
    """Distances per second of a bare Python loop, one Levenshtein call per pair."""
    done = 0
    t0 = time.perf_counter()
    for q in pool[:20]:
        for p in pool[:100_000]:
            Levenshtein.distance(q, p)
        done += min(len(pool), 100_000)
        if time.perf_counter() - t0 > seconds:
            break
    return done / (time.perf_counter() - t0)


def _exhaustive(queries, pool, excluded):
    """Smallest allowed distance and the set of pool indices at it, by a full cdist."""
    out = []
    for start in range(0, len(queries), 200):
        block = queries[start : start + 200]
        mat = process.cdist(block, pool, scorer=Levenshtein.distance, dtype=np.int32, workers=-1)
        for r, q in enumerate(range(start, start + len(block))):
            row = mat[r]
            row[list(excluded[q])] = np.iinfo(np.int32).max
            best = int(row.min())
            out.append((best, set(np.flatnonzero(row == best).tolist())))
    return out


def run(report) -> None:
    pool_size = int(os.environ.get("MEDSIM_BENCH_SNOMED_POOL", FULL_POOL))
    n_queries = int(os.environ.get("MEDSIM_BENCH_SNOMED_QUERIES", 6000))
    t0 = time.perf_counter()
    pool = [t.lower() for t in invented_terms(pool_size, seed=1)]
    lengths = np.fromiter(map(len, pool), dtype=np.int64)
    words = np.fromiter((t.count(" ") + 1 for t in pool), dtype=np.int64)
    print(
        f"  pool: {len(pool):,} invented terms, {words.min()}-{words.max()} words, mean "
        f"{lengths.mean():.1f} characters (median {np.median(lengths):.0f}); "
        f"generated in {time.perf_counter() - t0:.1f} s",
        flush=True,
    )
    rng = np.random.default_rng(0)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"  machine: {os.cpu_count()} cores, load average {load:.1f} when starting "
        "(figures scale down with other work on the machine)",
        flush=True,
    )

    base = _straightforward_rate(pool)
    report("straightforward approach (pandas filters + Python loop)", base / 1e6, "M distances/s")
    plain = _plain_loop_rate(pool)
    report("bare Python loop of Levenshtein calls (no filters)", plain / 1e6, "M distances/s")

    pick = rng.choice(len(pool), n_queries, replace=False)
    queries = [pool[i] for i in pick]
    excluded = [[int(i)] for i in pick]
    t0 = time.perf_counter()
    found = nearest.nearest_allowed(queries, pool, excluded=excluded, need=1, workers=-1)
    took = time.perf_counter() - t0
    effective = n_queries * len(pool) / took
    report(
        "exact search, effective",
        effective / 1e6,
        "M distances/s",
        baseline=base / 1e6,
        goal=">= 100x the straightforward loop",
        ok=effective >= 100 * base,
        lower_is_better=False,
    )
    report(
        "exact search vs the bare loop",
        effective / 1e6,
        "M distances/s",
        baseline=plain / 1e6,
        lower_is_better=False,
    )
    nn = np.array([d[0] for _, d in found if len(d)])
    print(
        f"  ({n_queries:,} queries x {len(pool):,} terms in {took:.1f} s; nearest distance "
        f"mean {nn.mean():.1f}, median {np.median(nn):.0f})",
        flush=True,
    )
    projected = took / n_queries * FULL_QUERIES * (FULL_POOL / len(pool)) / 60
    baseline_projected = FULL_QUERIES * FULL_POOL / base / 60
    report(
        "projected 300,000 queries x 600,000 terms",
        projected,
        "min",
        baseline=baseline_projected,
        goal="< 90 min on 2 cores",
        ok=projected < 90,
    )

    sub = pool[:100_000]
    pick = rng.choice(len(sub), 2000, replace=False)
    q2 = [sub[i] for i in pick]
    ex2 = [{int(i)} for i in pick]
    fast = nearest.nearest_allowed(q2, sub, excluded=[list(e) for e in ex2], need=1)
    slow = _exhaustive(q2, sub, ex2)
    same = sum(
        1
        for (idx, dist), (best, at) in zip(fast, slow)
        if int(dist[0]) == best and set(idx.tolist()) == at
    )
    report(
        "nearest = exhaustive search (2,000 queries x 100,000 terms)",
        same,
        "queries",
        goal="all 2,000",
        ok=same == 2000,
    )

    with tempfile.TemporaryDirectory() as tmp:
        generate_release(10_000, seed=2).write(tmp, "snapshot")
        t0 = time.perf_counter()
        result = snomed.build_datasets(read_release(tmp), threshold=5, seed=42)
        took = time.perf_counter() - t0
    pairs = sum(len(f) for f in result.files.values())
    report("whole build, synthetic release of 10,000 concepts (20 files)", took, "s")
    print(
        f"  ({pairs:,} pairs written in 20 files; "
        f"{result.positives.pairs['syn-syn'].shape[0]:,} syn-syn positives)",
        flush=True,
    )
