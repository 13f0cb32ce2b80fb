"""Study design: stratified sampler, balanced k-of-n, calibration set, swapped duplicates."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from data_schemas.errors import InputError, OptionError
from medsim_annot.design import Slot, add_duplicates, balanced_k_of_n, plan_study, stratified_sample
from medsim_annot.errors import UsageProblem


def _pairs(per_group: dict[tuple[str, str, str], tuple[int, int]]) -> pd.DataFrame:
    rows = []
    for (ds, diff, strat), (npos, nneg) in per_group.items():
        for label, count in ((1, npos), (0, nneg)):
            for i in range(count):
                rows.append(
                    {
                        "pair_id": f"{ds}-{diff}-{strat}-{label}-{i}",
                        "term_1": f"a{i}",
                        "term_2": f"b{i}",
                        "auto_label": label,
                        "dataset": ds,
                        "difficulty": diff,
                        "negative_strategy": strat,
                    }
                )
    df = pd.DataFrame(rows)
    df["auto_label"] = df["auto_label"].astype("Int64")
    return df


GROUPS = {
    ("FSN-SYN", "easy", "random"): (40, 35),
    ("FSN-SYN", "hard", "levenshtein"): (31, 50),
    ("SAME-AS", "easy", "random"): (30, 30),
    ("SAME-AS", "hard", "random"): (60, 33),
}


def test_stratified_counts_per_group():
    res = stratified_sample(_pairs(GROUPS), 30, 30, seed=11)
    got = res.pairs.groupby(["dataset", "difficulty", "negative_strategy", "auto_label"]).size()
    assert set(got.values) == {30}
    assert len(got) == 2 * len(GROUPS)
    assert len(res.pairs) == 60 * len(GROUPS)
    assert res.config["seed"] == 11 and res.config["positives"] == 30
    assert not res.warnings
    assert res.pairs["pair_id"].is_unique


def test_stratified_seed_reproducible_and_seed_matters():
    df = _pairs(GROUPS)
    a = stratified_sample(df, 5, 5, seed=3).pairs["pair_id"].tolist()
    b = stratified_sample(df, 5, 5, seed=3).pairs["pair_id"].tolist()
    c = stratified_sample(df, 5, 5, seed=4).pairs["pair_id"].tolist()
    assert a == b
    assert a != c
    # Row order of the input does not change which pairs are drawn.
    shuffled = df.sample(frac=1, random_state=0).reset_index(drop=True)
    d = stratified_sample(shuffled, 5, 5, seed=3).pairs["pair_id"]
    assert sorted(d) != [] and set(d) <= set(df["pair_id"])


def test_stratified_group_by_selection():
    res = stratified_sample(_pairs(GROUPS), 2, 3, group_by=["dataset"], seed=0)
    assert res.pairs.groupby(["dataset", "auto_label"]).size().to_dict() == {
        ("FSN-SYN", 0): 3,
        ("FSN-SYN", 1): 2,
        ("SAME-AS", 0): 3,
        ("SAME-AS", 1): 2,
    }
    assert list(res.counts["dataset"]) == ["FSN-SYN", "SAME-AS"]


def test_stratified_short_group_is_an_error_listing_every_group():
    with pytest.raises(InputError) as exc:
        stratified_sample(_pairs(GROUPS), 31, 34, seed=0)
    msgs = [p.message for p in exc.value.problems]
    assert len(msgs) == 3  # SAME-AS/easy: both short; SAME-AS/hard: negatives short
    assert any("'SAME-AS'" in m and "30 positives" in m for m in msgs)


def test_stratified_allow_fewer_takes_all_with_warning():
    res = stratified_sample(_pairs(GROUPS), 31, 34, seed=0, allow_fewer=True)
    assert len(res.warnings) == 3
    row = res.counts[(res.counts.dataset == "SAME-AS") & (res.counts.difficulty == "easy")].iloc[0]
    assert row.positives_taken == 30 and row.negatives_taken == 30


def test_stratified_missing_column():
    df = _pairs(GROUPS).drop(columns=["negative_strategy"])
    with pytest.raises(InputError) as exc:
        stratified_sample(df, 1, 1, seed=0)
    assert exc.value.problems[0].column == "negative_strategy"


# ----------------------------------------------------------------------------- k of n
def _loads_overlaps(sets, names):
    load = Counter(a for s in sets for a in s)
    ov = Counter(frozenset(p) for s in sets for p in itertools.combinations(s, 2))
    loads = [load[a] for a in names]
    overlaps = [ov[frozenset(p)] for p in itertools.combinations(names, 2)]
    return loads, overlaps


@given(n=st.integers(1, 7), data=st.data(), n_items=st.integers(0, 400), seed=st.integers(0, 10**6))
def test_k_of_n_balance(n, data, n_items, seed):
    k = data.draw(st.integers(1, n))
    names = [f"r{i}" for i in range(n)]
    sets = balanced_k_of_n(n_items, names, k, seed)
    assert len(sets) == n_items
    assert all(len(s) == k == len(set(s)) for s in sets)
    loads, overlaps = _loads_overlaps(sets, names)
    assert sum(loads) == k * n_items
    assert max(loads) - min(loads) <= 1
    n_comb = math.comb(n, k)
    q, r = divmod(n_items, n_comb)
    counts = Counter(frozenset(s) for s in sets)
    assert all(q <= c <= q + 1 for c in counts.values())
    if r == 0 and overlaps:
        assert len(set(overlaps)) == 1  # complete block design: equal overlap
    if overlaps:
        # Greedy remainder plus local search keeps pairwise overlap within a small band (the
        # remainder of r < C(n, k) sets cannot always be perfectly even).
        assert max(overlaps) - min(overlaps) <= 3


def test_k_of_n_local_search_evens_overlaps():
    """A case where the greedy remainder alone left overlaps 3 apart (found by hypothesis)."""
    names = [f"r{i}" for i in range(6)]
    sets = balanced_k_of_n(251, names, 3, seed=335480)
    loads, overlaps = _loads_overlaps(sets, names)
    assert max(loads) - min(loads) <= 1
    assert max(overlaps) - min(overlaps) <= 2


def test_k_of_n_ehr_rel_three_of_five():
    names = list("ABCDE")
    sets = balanced_k_of_n(3630, names, 3, seed=0)
    loads, overlaps = _loads_overlaps(sets, names)
    assert loads == [2178] * 5
    assert overlaps == [1089] * 10


def test_k_of_n_seeded():
    assert balanced_k_of_n(50, 5, 2, seed=1) == balanced_k_of_n(50, 5, 2, seed=1)
    assert balanced_k_of_n(50, 5, 2, seed=1) != balanced_k_of_n(50, 5, 2, seed=2)


def test_k_of_n_bad_k():
    with pytest.raises(OptionError):
        balanced_k_of_n(10, 3, 4)


# ----------------------------------------------------------------------------- duplicates
@given(m=st.integers(0, 60), frac=st.floats(0, 1), seed=st.integers(0, 10**6))
def test_duplicates_swapped_later_never_adjacent(m, frac, seed):
    queue = [Slot(i) for i in range(m)]
    out = add_duplicates(queue, frac, seed)
    dups = [(p, s) for p, s in enumerate(out) if s.kind == "duplicate"]
    expected = min(round(frac * m), m - 1) if m >= 3 else 0
    assert len(dups) == expected
    assert [s for s in out if s.kind != "duplicate"] == queue
    for p, s in dups:
        first = next(i for i, x in enumerate(out) if x.item == s.item and x.kind != "duplicate")
        assert p > first + 1
        assert s.swapped and not out[first].swapped
    assert len({s.item for _, s in dups}) == len(dups)


# ----------------------------------------------------------------------------- plan
def test_plan_all_rate_all_with_calibration_and_duplicates():
    plan = plan_study(40, ["ann", "bob", "cy"], calibration=5, duplicates=0.1, seed=9)
    assert plan.config == {
        "design": "all",
        "per_item": 3,
        "annotators": 3,
        "calibration": 5,
        "duplicates": 0.1,
        "seed": 9,
        "shuffle": True,
    }
    calib = None
    orders = []
    for _name, q in plan.queues.items():
        base = [s for s in q if s.kind != "duplicate"]
        assert sorted(s.item for s in base) == list(range(40))
        assert sum(s.kind == "duplicate" for s in q) == 4
        c = {s.item for s in q if s.kind == "calibration"}
        assert len(c) == 5
        calib = calib or c
        assert c == calib
        orders.append([s.item for s in base])
    assert orders[0] != orders[1]  # each annotator has their own shuffled order
    assert (
        plan_study(40, ["ann", "bob", "cy"], calibration=5, duplicates=0.1, seed=9).queues
        == plan.queues
    )


def test_plan_k_of_n_calibration_rated_by_all():
    names = ["a", "b", "c", "d", "e"]
    plan = plan_study(105, names, per_item=3, calibration=5, seed=2)
    raters = Counter(s.item for q in plan.queues.values() for s in q)
    calib = {s.item for s in plan.queues["a"] if s.kind == "calibration"}
    assert all(raters[i] == 5 for i in calib)
    assert all(raters[i] == 3 for i in range(105) if i not in calib)
    assert {len(q) for q in plan.queues.values()} == {5 + 60}


def test_plan_errors():
    with pytest.raises(OptionError):
        plan_study(10, ["a"], per_item=2)
    with pytest.raises(OptionError):
        plan_study(10, ["a", "b"], calibration=11)
    with pytest.raises(UsageProblem):
        plan_study(10, [])
