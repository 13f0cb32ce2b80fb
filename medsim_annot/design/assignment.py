"""Who rates which item, in which order: balanced k-of-n, calibration set, swapped duplicates.

All functions are pure and seeded: the same arguments give the same plan, so the plan can be
re-derived from the parameters stored in the study's config.
"""

from __future__ import annotations

import collections
import itertools
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

from data_schemas.options import CALIBRATION, CHECK_RATE, DUPLICATES, PER_ITEM
from medsim_annot.errors import UsageProblem
from medsim_annot.i18n import t

from .adaptive import interleave_groups

#: Above this many annotator combinations C(n, k) the design would be slow to balance.
MAX_COMBINATIONS = 50_000


@dataclass(frozen=True)
class Slot:
    """One place in an annotator's queue: the index of the pair (row of the pairs frame given
    to ``create_study``), its kind (``main``, ``calibration`` or ``duplicate``) and whether
    the two terms are shown swapped. Studies store queues of these."""

    item: int
    kind: str = "main"
    swapped: bool = False


@dataclass
class StudyPlan:
    """Queues per annotator (for ``create_study(queues=...)``) and the design parameters to
    store in the study's config."""

    queues: dict[str, list[Slot]]
    config: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _rng(seed: int, *stream: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), *stream])


def balanced_k_of_n(
    n_items: int, annotators: list[str] | int, k: int, seed: int = 0
) -> list[tuple[str, ...]]:
    """The k annotators who rate each of *n_items* items, balanced.

    Every one of the :math:`\\binom{n}{k}` annotator combinations is used
    :math:`q = \\lfloor n_{items} / \\binom{n}{k} \\rfloor` times (a complete block design:
    each annotator then rates :math:`q\\binom{n-1}{k-1}` items and every two annotators share
    :math:`q\\binom{n-2}{k-2}`). The remaining :math:`r = n_{items} \\bmod \\binom{n}{k}` items
    are given greedily, each to the set that minimises, in this order, the sum of squared
    loads (so loads never differ by more than one), how often the set was already used in
    the remainder, and the sum of squared pairwise overlaps; ties follow a seeded order of
    the combinations. Up to 24 greedy passes with different seeded tie-break orders are
    tried and the best kept (first: no set used twice in the remainder, so every set is used
    q or q + 1 times; then the spread of loads, then of overlaps). When overlaps still differ
    by more than one (and there are at most 5,000 combinations), a seeded local search swaps
    remainder sets for unused ones while neither the sum of squared loads nor that of squared
    overlaps rises. Loads then differ by at most one and pairwise overlaps, in every case
    tried (thousands of random n <= 7, k, items), by at most 3 — usually by at most 1.
    Finally the item-to-set list is shuffled with the seed.

    Parameters
    ----------
    n_items : int
        Number of items.
    annotators : list of str or int
        Annotator names (or their number n, giving names ``"0"`` … ``"n-1"``).
    k : int
        Annotators per item, ``1 <= k <= n``.
    seed : int
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    list of tuple of str
        For each item (index), the names of its k annotators (in the given name order).

    Examples
    --------
    >>> sets = balanced_k_of_n(10, ["a", "b", "c", "d", "e"], 3, seed=1)
    >>> sorted(sum(s.count(x) for s in sets) for x in "abcde")
    [6, 6, 6, 6, 6]
    """
    names = [str(i) for i in range(annotators)] if isinstance(annotators, int) else list(annotators)
    n = len(names)
    if len(set(names)) != n:
        raise UsageProblem(t("annotator names must be unique"))
    PER_ITEM.within(high=n).check(k)
    if n_items < 0:
        raise UsageProblem(t("the number of items must be >= 0"))
    n_comb = math.comb(n, k)
    if n_comb > MAX_COMBINATIONS:
        raise UsageProblem(
            t(
                "{n} annotators choose {k} gives {combinations} combinations; at most {most} "
                "are supported",
                n=n,
                k=k,
                combinations=f"{n_comb:,}",
                most=f"{MAX_COMBINATIONS:,}",
            )
        )
    combos = list(itertools.combinations(range(n), k))
    rng = _rng(seed, 1)
    order = rng.permutation(n_comb)
    combos = [combos[i] for i in order]
    q, r = divmod(n_items, n_comb)
    chosen: list[tuple[int, ...]] = combos * q
    if r:
        chosen += _remainder(combos, n, k, r, seed)
    perm = _rng(seed, 2).permutation(n_items)
    return [tuple(names[i] for i in chosen[p]) for p in perm]


def _greedy(
    combos: list[tuple[int, ...]], n: int, k: int, r: int, tiebreak: np.ndarray
) -> tuple[list[tuple[int, ...]], tuple[int, int, int]]:
    """One greedy pass over the remainder; returns the sets and their quality
    (most uses of one set, load spread, overlap spread), lower is better."""
    n_comb = len(combos)
    load = np.zeros(n, dtype=np.int64)
    overlap = np.zeros((n, n), dtype=np.int64)
    used = np.zeros(n_comb, dtype=np.int64)
    comb_arr = np.asarray(combos, dtype=np.int64)  # (C, k)
    pairs_idx = list(itertools.combinations(range(k), 2))
    a = comb_arr[:, [p[0] for p in pairs_idx]] if pairs_idx else None
    b = comb_arr[:, [p[1] for p in pairs_idx]] if pairs_idx else None
    out = []
    for _ in range(r):
        # Increase of a sum of squares when each member goes up by one: sum(2x + 1).
        load_cost = (2 * load[comb_arr] + 1).sum(axis=1)  # (C,)
        ov_cost = (2 * overlap[a, b] + 1).sum(axis=1) if pairs_idx else np.zeros(n_comb, np.int64)
        best = np.lexsort((tiebreak, ov_cost, used, load_cost))[0]
        c = combos[best]
        out.append(c)
        used[best] += 1
        load[list(c)] += 1
        for i, j in itertools.combinations(c, 2):
            overlap[i, j] += 1
    iu = np.triu_indices(n, 1)
    ov = overlap[iu] if n > 1 else np.zeros(1, np.int64)
    return out, (int(used.max()), int(load.max() - load.min()), int(ov.max() - ov.min()))


def _remainder(
    combos: list[tuple[int, ...]], n: int, k: int, r: int, seed: int
) -> list[tuple[int, ...]]:
    """Sets for the last ``r < C(n, k)`` items: greedy passes with seeded tie-break orders,
    keeping the best (each set at most once, then load spread, then overlap spread)."""
    n_comb = len(combos)
    tries = max(1, min(24, 2_000_000 // max(1, r * n_comb)))
    search = n_comb <= _LOCAL_SEARCH_MAX
    best: list[tuple[int, ...]] = []
    best_q: tuple[int, int, int] | None = None
    for attempt in range(tries):
        tiebreak = np.arange(n_comb) if attempt == 0 else _rng(seed, 5, attempt).permutation(n_comb)
        out, quality = _greedy(combos, n, k, r, tiebreak)
        if best_q is None or quality < best_q:
            best, best_q = out, quality
        if quality[0] <= 1 and quality[1] <= 1 and quality[2] <= 1:
            break
    if search and best_q is not None and best_q[2] > 1:
        improved = _improve_by_swaps(best, combos, n, seed=seed)
        if _spreads(improved, n) < best_q:
            best = improved
    return best


def _spreads(chosen: list[tuple[int, ...]], n: int) -> tuple[int, int, int]:
    """(most uses of one set, load spread, overlap spread) of a remainder."""
    load = np.zeros(n, dtype=np.int64)
    overlap = np.zeros((n, n), dtype=np.int64)
    for c in chosen:
        load[list(c)] += 1
        for i, j in itertools.combinations(c, 2):
            overlap[i, j] += 1
    ov = overlap[np.triu_indices(n, 1)] if n > 1 else np.zeros(1, np.int64)
    return (
        max(collections.Counter(chosen).values()),
        int(load.max() - load.min()),
        int(ov.max() - ov.min()),
    )


_LOCAL_SEARCH_MAX = 5_000  # combinations; beyond, greedy passes only


def _improve_by_swaps(
    chosen: list[tuple[int, ...]],
    combos: list[tuple[int, ...]],
    n: int,
    seed: int = 0,
    proposals: int = 5_000,
) -> list[tuple[int, ...]]:
    """Local search after a greedy pass: propose replacing one remainder set by an unused
    combination (seeded), and accept when the sum of squared loads does not rise and the sum
    of squared pairwise overlaps does not rise either (sideways moves let the search cross
    plateaus). With fixed totals, smaller sums of squares mean more even loads and overlaps.
    Stops when loads and overlaps are within one of each other, or after *proposals*."""
    chosen = list(chosen)
    index = {c: i for i, c in enumerate(combos)}
    used = np.zeros(len(combos), dtype=np.int64)
    load = np.zeros(n, dtype=np.int64)
    overlap = np.zeros((n, n), dtype=np.int64)
    for c in chosen:
        used[index[c]] += 1
        load[list(c)] += 1
        for i, j in itertools.combinations(c, 2):
            overlap[i, j] += 1
    iu = np.triu_indices(n, 1)
    rng = _rng(seed, 6)
    for _ in range(proposals):
        ov = overlap[iu]
        if load.max() - load.min() <= 1 and ov.max() - ov.min() <= 1:
            break
        pos = int(rng.integers(len(chosen)))
        new = combos[int(rng.integers(len(combos)))]
        old = chosen[pos]
        if used[index[new]] or new == old:
            continue
        d_load: dict[int, int] = {}
        for x in old:
            d_load[x] = d_load.get(x, 0) - 1
        for x in new:
            d_load[x] = d_load.get(x, 0) + 1
        load_delta = sum((load[x] + d) ** 2 - load[x] ** 2 for x, d in d_load.items())
        d_ov: dict[tuple[int, ...], int] = {}
        for pair in itertools.combinations(old, 2):
            d_ov[pair] = d_ov.get(pair, 0) - 1
        for pair in itertools.combinations(new, 2):
            d_ov[pair] = d_ov.get(pair, 0) + 1
        ov_delta = sum((overlap[p] + d) ** 2 - overlap[p] ** 2 for p, d in d_ov.items())
        if load_delta > 0 or (load_delta == 0 and ov_delta > 0):
            continue
        chosen[pos] = new
        used[index[old]] -= 1
        used[index[new]] += 1
        for x, d in d_load.items():
            load[x] += d
        for p, d in d_ov.items():
            overlap[p] += d
    return chosen


def add_duplicates(
    queue: list[Slot], fraction: float, seed: int = 0, *, stream: int = 0
) -> list[Slot]:
    """Show ``round(fraction * len(queue))`` of the queue's items a second time, later in the
    queue, with the two terms swapped, never directly after (or before) the first showing.

    The items are drawn among the first ``len(queue) - 1`` slots (one must follow); each copy
    is inserted at a random place at least two positions after its original, in the list as
    it grows (later insertions only widen gaps, so no copy ever becomes adjacent to its
    original). A queue shorter than 3 gets no duplicates.

    Examples
    --------
    >>> q = [Slot(i) for i in range(10)]
    >>> out = add_duplicates(q, 0.2, seed=3)
    >>> len(out), sum(s.kind == "duplicate" for s in out)
    (12, 2)
    """
    DUPLICATES.check(fraction)
    m = len(queue)
    d = min(int(round(fraction * m)), m - 1) if m >= 3 else 0
    if d <= 0:
        return list(queue)
    rng = _rng(seed, 3, stream)
    originals = sorted(rng.choice(m - 1, size=d, replace=False).tolist())
    out = list(queue)
    # Track where each original currently sits as the list grows.
    where = {i: i for i in originals}
    for i in originals:
        first = where[i]
        lo, hi = first + 2, len(out)
        p = int(rng.integers(lo, hi + 1))
        src = out[first]
        out.insert(p, Slot(src.item, "duplicate", not src.swapped))
        for j in where:
            if where[j] >= p:
                where[j] += 1
    return out


def add_checks(
    queue: list[Slot],
    checks: Sequence[int],
    rate: float | None,
    seed: int = 0,
    *,
    stream: int = 0,
) -> list[Slot]:
    """Spread check slots (kind ``check``) through *queue*, one per stretch of the queue.

    *checks* are the items with a known answer; *rate* the share of the resulting queue
    that is check slots (``None``: every check item once). The number is
    ``min(len(checks), round(rate * len(queue) / (1 - rate)))``, the items are drawn with
    the seed, and the queue is cut into that many equal stretches with one check slot at a
    random place in each: a doctor meets them at a steady rate, at places nobody can
    predict. A check slot is served like any other (the kind is never shown).

    Examples
    --------
    >>> q = add_checks([Slot(i) for i in range(18)], [100, 101, 102], 0.1, seed=1)
    >>> len(q), sorted(s.item for s in q if s.kind == "check")
    (20, [101, 102])
    """
    if rate is not None:
        CHECK_RATE.check(rate)
    pool = list(dict.fromkeys(int(i) for i in checks))
    if not pool:
        return list(queue)
    if rate is None:
        n = len(pool)
    else:
        n = min(len(pool), int(round(rate * len(queue) / (1 - rate))))
    if n <= 0:
        return list(queue)
    rng = _rng(seed, 7, stream)
    chosen = [pool[i] for i in rng.choice(len(pool), size=n, replace=False)]
    total = len(queue) + n
    edges = np.linspace(0, total, n + 1).round().astype(np.int64)
    at = {int(rng.integers(edges[j], max(edges[j] + 1, edges[j + 1]))) for j in range(n)}
    out: list[Slot] = []
    rest = iter(queue)
    picks = iter(chosen)
    for p in range(total):
        nxt = next(picks, None) if p in at else None
        out.append(Slot(nxt, "check") if nxt is not None else next(rest))
    return out


def _calibration_items(
    rng: np.random.Generator, n_items: int, calibration: int, check_set: set[int]
) -> list[int]:
    """The calibration items, drawn with *rng* among the items that are not check pairs
    (without check pairs, the same draw as over all items)."""
    if any(not 0 <= i < n_items for i in check_set):
        raise UsageProblem(t("a check pair is not one of the study's pairs"))
    pool = [i for i in range(n_items) if i not in check_set]
    if calibration > len(pool):
        raise UsageProblem(
            t(
                "the calibration set must have between 0 and {most} items (pairs that are not "
                "check pairs), not {n}",
                most=len(pool),
                n=calibration,
            )
        )
    if not calibration:
        return []
    drawn = rng.choice(len(pool), size=calibration, replace=False)
    return sorted(pool[int(i)] for i in drawn)


def plan_study(
    n_items: int,
    annotators: list[str],
    *,
    per_item: int | None = None,
    calibration: int = 0,
    duplicates: float = 0.0,
    seed: int = 0,
    shuffle: bool = True,
    groups: Sequence[Hashable] | None = None,
    checks: Sequence[int] = (),
    check_rate: float | None = None,
) -> StudyPlan:
    """Plan every annotator's queue.

    Parameters
    ----------
    n_items : int
        Number of pairs (rows of the pairs frame, in the order given to ``create_study``).
    annotators : list of str
        Annotator names (n of them).
    per_item : int or None
        k: each non-calibration item is rated by k of the n annotators in the balanced design
        of :func:`balanced_k_of_n`. ``None`` (or k = n) means every annotator rates every item
        (the AAAI 2020 design).
    calibration : int
        Number of items (drawn with the seed) that every annotator rates (Bio-SimLex's
        consistency set), kind ``calibration``; they are left out of the k-of-n design.
    duplicates : float
        Fraction of each annotator's queue shown a second time, swapped and later (kind
        ``duplicate``; see :func:`add_duplicates`), for intra-rater consistency.
    seed : int
        One seed for the whole plan (calibration draw, design, shuffles, duplicates).
    shuffle : bool
        Shuffle each queue with the seed (each annotator gets a different order).
    groups : sequence, optional
        The group of every item (sequential audit): each queue is then served
        group-interleaved (:func:`~medsim_annot.design.adaptive.interleave_groups`), the
        groups of each round in an order drawn with the seed for that annotator, each
        group's slots in the (shuffled) queue's order; duplicates are added after.
    checks : sequence of int
        Items with a known answer (check pairs): left out of the design and spread through
        every annotator's queue at *check_rate* (:func:`add_checks`), before duplicates.
    check_rate : float, optional
        Share of each queue that is check slots (``None``: every check item once each).

    Returns
    -------
    StudyPlan
        ``queues`` ``{name: [Slot, ...]}`` and ``config`` (the parameters, to store).
    """
    names = list(dict.fromkeys(a.strip() for a in annotators if a and a.strip()))
    if not names:
        raise UsageProblem(t("a study design needs at least one annotator"))
    n = len(names)
    CALIBRATION.within(high=n_items).check(calibration)
    k = n if per_item is None else int(PER_ITEM.within(high=n).check(per_item))
    rng = _rng(seed, 0)
    check_set = {int(i) for i in checks}
    calib = _calibration_items(rng, n_items, calibration, check_set)
    calib_set = set(calib)
    main = [i for i in range(n_items) if i not in calib_set and i not in check_set]
    queues: dict[str, list[Slot]] = {a: [Slot(i, "calibration") for i in calib] for a in names}
    if k == n:
        for a in names:
            queues[a].extend(Slot(i) for i in main)
    else:
        for item, who in zip(main, balanced_k_of_n(len(main), names, k, seed)):
            for a in who:
                queues[a].append(Slot(item))
    warnings = []
    for s, a in enumerate(names):
        q = queues[a]
        if shuffle:
            perm = _rng(seed, 4, s).permutation(len(q))
            q = [q[i] for i in perm]
        if groups is not None:
            names_g = sorted({str(g) for g in groups})
            order = [names_g[i] for i in _rng(seed, 5, s).permutation(len(names_g))]
            q = [q[i] for i in interleave_groups([str(groups[x.item]) for x in q], order)]
        if check_set:
            q = add_checks(q, sorted(check_set), check_rate, seed, stream=s)
        if duplicates:
            before = len(q)
            q = add_duplicates(q, duplicates, seed, stream=s)
            if before and len(q) == before:
                warnings.append(t("annotator {name} has too few items for duplicates", name=a))
        queues[a] = q
    config: dict[str, object] = {
        "design": "all" if k == n else "k_of_n",
        "per_item": k,
        "annotators": n,
        "calibration": int(calibration),
        "duplicates": float(duplicates),
        "seed": int(seed),
        "shuffle": bool(shuffle),
    }
    if check_set:
        config["check_pairs"] = len(check_set)
        config["check_rate"] = check_rate
    return StudyPlan(queues, config, warnings)
