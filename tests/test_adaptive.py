"""Adaptive designs, the pure part: the 2+1 tiebreak decision, who gets the
tiebreak and where, Wilson intervals against Newcombe (1998), the stopping rule, the budget,
and a small run of the simulation benchmark (the full one is ``make bench``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from statsmodels.stats.proportion import proportion_confint

from data_schemas.errors import OptionError
from medsim_annot.design.adaptive import (
    choose_tiebreak_annotator,
    expected_ratings,
    group_stopping,
    needs_tiebreak,
    pairs_needed,
    tiebreak_position,
)
from medsim_annot.errors import UsageProblem
from medsim_annot.stats.majority import majority_from_counts
from medsim_annot.stats.proportion import wilson_half_width, wilson_interval
from tests import published as P

NEWCOMBE_TABLE_I = P.NEWCOMBE_TABLE_I.value  # Newcombe (1998), Table I, method 3


@pytest.mark.parametrize("x, n, lo, hi", NEWCOMBE_TABLE_I)
def test_wilson_matches_newcombe_table_i(x, n, lo, hi):
    got = wilson_interval(x, n)
    assert got == pytest.approx((lo, hi), abs=5e-5)


@given(st.integers(1, 2000), st.data(), st.sampled_from([0.9, 0.95, 0.975, 0.99]))
def test_wilson_equals_statsmodels(n, data, conf):
    x = data.draw(st.integers(0, n))
    lo, hi = proportion_confint(x, n, alpha=1 - conf, method="wilson")
    assert wilson_interval(x, n, confidence=conf) == pytest.approx((lo, hi), abs=1e-12)


@given(st.floats(0, 1), st.floats(0.01, 0.3))
def test_pairs_needed_is_the_smallest_n(p, target):
    n = pairs_needed(p, target)
    assert wilson_half_width(p, n) <= target
    assert n == 1 or wilson_half_width(p, n - 1) > target


def test_needs_tiebreak_rules():
    assert not needs_tiebreak(1.0, 1.0)
    assert needs_tiebreak(1.0, 0.0)
    assert needs_tiebreak(float("nan"), 1.0) and needs_tiebreak(1.0, None)
    assert needs_tiebreak(1.0, 1.0, unclear=(True, False))
    assert not needs_tiebreak(2.0, 3.0, tolerance=1) and needs_tiebreak(0.0, 2.0, tolerance=1)
    with pytest.raises(OptionError):
        needs_tiebreak(1, 1, tolerance=-1)


_vote = st.one_of(st.just(float("nan")), st.sampled_from([0.0, 1.0]))


@given(_vote, _vote, _vote)
def test_two_plus_one_majority_equals_three_raters(a, b, c):
    """With three annotators the 2+1 majority equals the all-rate-all majority, whatever the
    third rating is (strict rule, don't know counted as cast): the claim of docs/annotation.md."""

    def maj(votes):
        counts = np.array([[sum(v == 0.0 for v in votes), sum(v == 1.0 for v in votes)]])
        return majority_from_counts(counts, np.array([len(votes)]), np.array([0.0, 1.0]))[0]

    full = maj([a, b, c])
    two_plus_one = maj([a, b, c]) if needs_tiebreak(a, b) else maj([a, b])
    assert (math.isnan(full) and math.isnan(two_plus_one)) or full == two_plus_one


def test_choose_least_remaining_work_not_a_rater():
    assert choose_tiebreak_annotator({"a": 1, "b": 9, "c": 4}, {"a"}) == "c"
    assert choose_tiebreak_annotator({"a": 3, "b": 3}, set()) == "a"  # ties: first name
    assert choose_tiebreak_annotator({"a": 0}, ["a"]) is None


@given(st.lists(st.sampled_from("abcx"), max_size=12), st.integers(0, 12))
def test_tiebreak_position_earliest_and_never_next_to_twin(queue, cursor):
    cursor = min(cursor, len(queue))
    i = tiebreak_position(queue, cursor, "x")
    assert min(cursor + 1, len(queue)) <= i <= len(queue)
    new = [*queue[:i], "x", *queue[i:]]
    neighbours = [new[j] for j in (i - 1, i + 1) if 0 <= j < len(new)]
    free = [
        k
        for k in range(min(cursor + 1, len(queue)), len(queue) + 1)
        if (k == 0 or queue[k - 1] != "x") and (k == len(queue) or queue[k] != "x")
    ]
    if free:
        assert "x" not in neighbours and i == free[0]  # the earliest place free of the twin


def test_stopping_rule_minimum_and_width():
    early = group_stopping(15, 15, positives=8, negatives=7, target=0.1)
    assert not early.stop and early.more_needed >= 5 and "positives" in early.reason
    wide = group_stopping(40, 50, positives=25, negatives=25, target=0.05)
    assert not wide.stop and wide.more_needed > 0
    done = group_stopping(290, 300, positives=150, negatives=150, target=0.05)
    assert done.stop and done.more_needed == 0
    assert done.accuracy_low < done.accuracy < done.accuracy_high


@given(st.integers(0, 400), st.data())
def test_stopping_estimates_are_proportions(n, data):
    correct = data.draw(st.integers(0, n))
    pp = data.draw(st.integers(0, n))
    tp = data.draw(st.integers(0, pp))
    g = group_stopping(
        correct, n, predicted_positive=pp, true_positive=tp, positives=pp, negatives=n - pp
    )
    assert 0 <= g.accuracy_low <= g.accuracy_high <= 1
    assert 0 <= g.precision_low <= g.precision_high <= 1
    assert g.more_needed >= 0 and (not g.stop or g.more_needed == 0 or n == 0)


def test_expected_ratings_budget():
    full = expected_ratings({"a": (100, 0.9), "b": (100, 0.95)}, annotators=3)
    assert full["ratings"] == full["all_rate_all"] == 600 and full["saving"] == 0
    tb = expected_ratings(
        {"a": (100, 0.9), "b": (100, 0.95)},
        annotators=3,
        per_item=2,
        tiebreak=True,
        calibration=20,
    )
    assert tb["ratings"] < 600 and 0 < tb["tiebreak_share"] < 1
    big = {"a": (300, 0.9), "b": (300, 0.97)}
    tb_big = expected_ratings(big, annotators=3, per_item=2, tiebreak=True, calibration=60)
    seq = expected_ratings(
        big, annotators=3, per_item=2, tiebreak=True, calibration=60, target_ci=0.05
    )
    assert seq["ratings"] < tb_big["ratings"]
    assert seq["groups"]["b"]["pairs_rated"] < seq["groups"]["a"]["pairs_rated"]
    with pytest.raises(
        UsageProblem, match=r"\(tiebreak\) needs 2 annotators per pair \(per_item\)"
    ):
        expected_ratings({"a": (10, 0.9)}, annotators=3, tiebreak=True)


def test_simulation_small_run_meets_the_design_claims():
    from benchmarks.bench_adaptive import simulate

    res = simulate(6, dawid_skene_every=3)
    assert res["identical_b"] == 6  # 2+1 gives all-rate-all's majority on every pair
    assert res["ratings"]["b"] <= 0.8 * res["ratings"]["a"]
    assert res["ratings"]["c"] < res["ratings"]["b"]
    assert res["gold_right"]["dawid-skene"] >= res["gold_right"]["majority"]


def test_study_plan_cli_defaults_and_pilot(db_url, tmp_path, cli):
    import json

    from tests.qa_data import make_tiny

    rows = ["pair_id,term_1,term_2,auto_label,dataset"]
    rows += [f"p{i},a {i},b {i},{i % 2},{'easy' if i < 200 else 'hard'}" for i in range(400)]
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("\n".join(rows) + "\n", encoding="utf-8")
    args = ["study", "plan", "--pairs", pairs, "--annotators", "a,b,c", "--group-by", "dataset"]
    full = json.loads(cli(*args, "--json").stdout)
    assert full["ratings"] == full["all_rate_all"] == 1200
    r = cli(*args, "--per-item", "2", "--tiebreak", "--calibration", "40", "--json")
    assert r.exit_code == 0, r.stderr
    tb = json.loads(r.stdout)
    assert tb["ratings"] < 0.8 * 1200 and set(tb["groups"]) == {"easy", "hard"}
    seq = json.loads(
        cli(
            *args,
            "--per-item",
            "2",
            "--tiebreak",
            "--calibration",
            "40",
            "--target-ci",
            "0.05",
            "--accuracy",
            "0.97",
            "--json",
        ).stdout
    )
    assert seq["ratings"] < tb["ratings"]
    pilot = make_tiny(tmp_path / "pilot")
    r = cli(*args, "--per-item", "2", "--tiebreak", "--pilot", pilot)
    assert r.exit_code == 0, r.stderr
    assert "pilot study 'tiny'" in r.stdout and "expected ratings" in r.stdout
    r = cli(*args, "--tiebreak")
    assert r.exit_code == 2 and "(--tiebreak) needs 2 annotators per pair (--per-item)" in r.stderr
