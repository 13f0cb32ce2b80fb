"""Rater checks (medsim_annot.stats.checks): accuracy on check pairs with its Wilson interval
against Newcombe (1998), rushed answers and pace, with hypothesis properties."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from medsim_annot.design.assignment import Slot, add_checks, plan_study
from medsim_annot.stats.checks import (
    RUSHED_MS,
    below_threshold,
    check_accuracy,
    pace,
    rushed,
    rushed_rate,
)
from tests.test_adaptive import NEWCOMBE_TABLE_I


def _frame(annotators, values, elapsed=None, pair_ids=None):
    n = len(values)
    out = pd.DataFrame(
        {
            "pair_id": pair_ids if pair_ids is not None else [f"p{i}" for i in range(n)],
            "annotator": annotators,
            "value": np.asarray(values, dtype=float),
        }
    )
    if elapsed is not None:
        out["elapsed_ms"] = pd.array(elapsed, dtype="Float64")
    return out


@pytest.mark.parametrize("x, n, lo, hi", NEWCOMBE_TABLE_I)
def test_check_accuracy_interval_is_newcombes(x, n, lo, hi):
    """Newcombe (1998), Table I, score method: x correct answers of n check pairs."""
    r = _frame("A", [1.0] * x + [0.0] * (n - x))
    row = check_accuracy(r, {f"p{i}": 1.0 for i in range(n)}).iloc[0]
    assert (row.n_checks, row.n_correct) == (n, x)
    assert row.check_accuracy == pytest.approx(x / n)
    assert round(row.ci_low, 4) == pytest.approx(lo, abs=1e-4)
    assert round(row.ci_high, 4) == pytest.approx(hi, abs=1e-4)


def test_check_accuracy_counts_only_check_pairs_and_dont_know_is_wrong():
    r = _frame(
        ["A", "A", "A", "B", "B"],
        [1.0, np.nan, 0.0, 1.0, 2.0],
        pair_ids=["c1", "c2", "x", "c1", "c2"],
    )
    out = check_accuracy(r, {"c1": 1.0, "c2": 1.0}).set_index("annotator")
    assert out.loc["A", "n_checks"] == 2 and out.loc["A", "n_correct"] == 1
    assert out.loc["B", "n_correct"] == 1
    tolerant = check_accuracy(r, {"c1": 1.0, "c2": 1.0}, tolerance=1).set_index("annotator")
    assert tolerant.loc["B", "n_correct"] == 2


def test_check_accuracy_without_check_pairs_is_nan():
    out = check_accuracy(_frame("A", [1.0]), {"zz": 1.0})
    assert out.loc[0, "n_checks"] == 0 and np.isnan(out.loc[0, "check_accuracy"])
    assert not below_threshold(out, 0.9).any()


def test_rushed_threshold_is_strict_and_untimed_never_rushed():
    r = _frame("A", [1, 1, 1, 1], elapsed=[1499, 1500, None, 0])
    assert rushed(r).tolist() == [True, False, False, True]
    assert rushed(r, 0).tolist() == [False] * 4
    with pytest.raises(ValueError):
        rushed(r, -1)
    assert RUSHED_MS == 1500


def test_pace_caps_pauses():
    r = _frame("A", [1, 1], elapsed=[1000, 10_000_000])
    row = pace(r, pause_ms=3000).iloc[0]
    assert row.median_seconds == pytest.approx(5_000.5)
    assert row.pairs_per_hour == pytest.approx(2 * 3600 / 4)


_annotators = st.lists(st.sampled_from(["A", "B", "C"]), min_size=1, max_size=40)


@st.composite
def _timed(draw):
    anns = draw(_annotators)
    n = len(anns)
    elapsed = draw(
        st.lists(
            st.one_of(st.none(), st.integers(0, 400_000)),
            min_size=n,
            max_size=n,
        )
    )
    values = draw(
        st.lists(st.one_of(st.just(np.nan), st.sampled_from([0.0, 1.0])), min_size=n, max_size=n)
    )
    return _frame(anns, values, elapsed=elapsed)


@given(_timed(), st.integers(0, 10_000))
def test_rushed_rate_properties(r, threshold):
    out = rushed_rate(r, threshold)
    assert out["annotator"].tolist() == sorted(set(r["annotator"]))
    assert out["n_rushed"].sum() == rushed(r, threshold).sum()
    assert (out["n_rushed"] <= out["n_timed"]).all()
    rate = out["rushed_rate"].dropna()
    assert ((rate >= 0) & (rate <= 1)).all()
    # A higher threshold never flags fewer answers.
    assert (rushed_rate(r, threshold + 1)["n_rushed"] >= out["n_rushed"]).all()


@given(_timed())
def test_pace_properties(r):
    out = pace(r).set_index("annotator")
    for ann, sel in r.groupby("annotator"):
        e = sel["elapsed_ms"].dropna().to_numpy(dtype=float)
        row = out.loc[ann]
        assert row.n_timed == len(e)
        if len(e) == 0:
            assert np.isnan(row.median_seconds) and np.isnan(row.pairs_per_hour)
            continue
        assert row.median_seconds == pytest.approx(np.median(e) / 1000)
        capped = np.minimum(e, 300_000).mean()
        if capped > 0:
            # 3,600 / pairs per hour is the mean capped seconds per pair.
            assert 3600 / row.pairs_per_hour == pytest.approx(capped / 1000)
        else:
            assert np.isnan(row.pairs_per_hour)


@given(_timed(), st.floats(0, 1))
def test_check_accuracy_properties(r, threshold):
    answers = {pid: 1.0 for pid in r["pair_id"][::2]}
    out = check_accuracy(r, answers)
    assert (out["n_correct"] <= out["n_checks"]).all()
    assert out["n_checks"].sum() == r["pair_id"].isin(answers).sum()
    has = out["n_checks"] > 0
    acc = out.loc[has, "check_accuracy"]
    assert (
        (out.loc[has, "ci_low"] <= acc + 1e-12) & (acc <= out.loc[has, "ci_high"] + 1e-12)
    ).all()
    flagged = below_threshold(out, threshold)
    assert (flagged == (has & (out["check_accuracy"] < threshold)).to_numpy()).all()
    # Answering every check pair with its known answer gives accuracy 1.
    perfect = r.assign(value=[answers.get(p, v) for p, v in zip(r["pair_id"], r["value"])])
    assert (check_accuracy(perfect, answers).loc[has.to_numpy(), "check_accuracy"] == 1).all()


# ---- the design: check slots spread through every queue ------------------------------------


@given(
    st.integers(0, 120),
    st.integers(0, 15),
    st.one_of(st.none(), st.floats(0.01, 0.6)),
    st.integers(0, 10**6),
)
def test_add_checks_properties(n_queue, n_checks, rate, seed):
    queue = [Slot(i) for i in range(n_queue)]
    checks = list(range(1000, 1000 + n_checks))
    out = add_checks(queue, checks, rate, seed)
    got = [s for s in out if s.kind == "check"]
    # The other slots keep their order; each check item at most once.
    assert [s for s in out if s.kind != "check"] == queue
    assert len({s.item for s in got}) == len(got) and {s.item for s in got} <= set(checks)
    expected = n_checks if rate is None else min(n_checks, round(rate * n_queue / (1 - rate)))
    assert len(got) == expected
    if got:
        # One check slot per stretch of the queue.
        edges = np.linspace(0, len(out), len(got) + 1).round()
        at = [i for i, s in enumerate(out) if s.kind == "check"]
        assert all(edges[j] <= p < max(edges[j] + 1, edges[j + 1]) for j, p in enumerate(at))
    assert add_checks(queue, checks, rate, seed) == out  # seeded


@given(st.integers(1, 5), st.integers(0, 3), st.integers(0, 10**6))
def test_plan_study_keeps_check_pairs_out_of_the_design(n_ann, n_calib, seed):
    checks = [0, 5, 9]
    names = [f"a{i}" for i in range(n_ann)]
    plan = plan_study(30, names, per_item=1, calibration=n_calib, seed=seed, checks=checks)
    for q in plan.queues.values():
        kinds = {s.item: s.kind for s in q}
        assert all(kinds.get(c) == "check" for c in checks)  # every check pair, as a check
        assert all(kinds[i] != "check" for i in kinds if i not in checks)
        assert all(s.item not in checks for s in q if s.kind == "calibration")
    main_items = [s.item for q in plan.queues.values() for s in q if s.kind == "main"]
    assert sorted(main_items) == sorted(
        set(range(30))
        - set(checks)
        - {s.item for s in next(iter(plan.queues.values())) if s.kind == "calibration"}
    )
    assert plan.config["check_pairs"] == 3
    with pytest.raises(Exception, match="check rate"):
        add_checks([Slot(0)], [1], 1.0)
