"""Prediction-powered audit intervals, the PPI stopping rule, calibration, the model as a
blinded extra rater and the alt-test: against ``ppi_py`` called directly, the classical
formulas (Wald, Wilson via statsmodels) and hand computations."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import ppi_py
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import t as student_t
from statsmodels.stats.proportion import proportion_confint

from benchmarks.bench_ppi import coverage, fixed_n_intervals, savings, sequential, simulate
from medsim_annot.stats.ppi import (
    calibrate_scores,
    gain_note,
    labels_needed,
    power_tuning_lambda,
    ppi_group_stopping,
    ppi_mean_interval,
)
from medsim_annot.stats.rater_model import alt_test, model_as_rater


def _data(seed: int, n: int = 80, big: int = 600, strength: float = 0.6):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.8).astype(float)
    f = np.clip(strength * y + rng.normal(0.3, 0.2, n), 0, 1)
    yu = (rng.random(big) < 0.8).astype(float)
    fu = np.clip(strength * yu + rng.normal(0.3, 0.2, big), 0, 1)
    return y, f, fu


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("lam", [None, 0.0, 0.5, 1.0])
def test_wald_interval_equals_ppi_py(seed, lam):
    y, f, fu = _data(seed)
    ours = ppi_mean_interval(y, f, fu, lam=lam)
    lo, hi = ppi_py.ppi_mean_ci(y, f, fu, alpha=0.05, lam=lam)
    assert ours.low == pytest.approx(float(lo[0]), abs=1e-12)
    assert ours.high == pytest.approx(float(hi[0]), abs=1e-12)
    point = ppi_py.ppi_mean_pointestimate(y, f, fu, lam=lam)
    assert ours.estimate == pytest.approx(float(np.ravel(point)[0]), abs=1e-12)


@pytest.mark.parametrize(("seed", "strength"), [(0, 0.6), (5, 0.1), (6, 0.2)])
def test_power_tuned_lambda_is_ppi_py_lambda(seed, strength):
    """The interval ppi_py gives with our λ passed in equals its own power-tuned one."""
    y, f, fu = _data(seed, strength=strength)
    lam = ppi_mean_interval(y, f, fu).lam
    assert 0 < lam <= 1
    tuned = ppi_py.ppi_mean_ci(y, f, fu, alpha=0.05)
    fixed = ppi_py.ppi_mean_ci(y, f, fu, alpha=0.05, lam=lam)
    assert float(tuned[0][0]) == pytest.approx(float(fixed[0][0]), abs=1e-12)
    n, n_u = len(y), len(fu)
    direct = power_tuning_lambda(
        n, y.sum(), f.sum(), (y * f).sum(), (f * f).sum(), n_u, fu.sum(), (fu * fu).sum()
    )
    cov = np.mean((y - y.mean()) * (f - f.mean()))
    var_all = np.var(np.concatenate([f, fu]), ddof=1)
    assert float(direct) == pytest.approx(min(1.0, cov / ((1 + n / n_u) * var_all)), rel=1e-10)


@pytest.mark.parametrize("seed", [0, 1])
def test_classical_intervals_are_the_textbook_formulas(seed):
    y, f, fu = _data(seed)
    n, p = len(y), y.mean()
    wald = ppi_mean_interval(y, f, fu)
    lo, hi = ppi_py.classical_mean_ci(y, alpha=0.05)
    assert wald.classical_low == pytest.approx(float(lo), abs=1e-12)
    half = 1.959963984540054 * math.sqrt(p * (1 - p) / n)
    assert wald.classical_high == pytest.approx(p + half, abs=1e-12)
    score = ppi_mean_interval(y, f, fu, interval="score")
    wl, wh = proportion_confint(int(y.sum()), n, alpha=0.05, method="wilson")
    assert score.classical_low == pytest.approx(wl, abs=1e-8)
    assert score.classical_high == pytest.approx(wh, abs=1e-8)


def test_score_interval_is_wilson_at_lambda_zero_and_wald_for_large_n():
    y, f, fu = _data(3)
    zero = ppi_mean_interval(y, f, fu, interval="score", lam=0.0)
    wl, wh = proportion_confint(int(y.sum()), len(y), alpha=0.05, method="wilson")
    assert (zero.low, zero.high) == pytest.approx((wl, wh), abs=1e-8)
    y, f, fu = _data(4, n=20_000, big=200_000)
    s = ppi_mean_interval(y, f, fu, interval="score")
    w = ppi_mean_interval(y, f, fu, interval="wald")
    assert s.lam == w.lam
    assert (s.low, s.high) == pytest.approx((w.low, w.high), abs=2e-4)


def test_effective_n_and_notes():
    y, f, fu = _data(0, strength=0.9)
    e = ppi_mean_interval(y, f, fu, interval="score")
    assert e.effective_n > 1.5 * e.n
    assert e.half_width < e.classical_half_width
    assert e.note.startswith("the predictions were worth")
    # A constant prediction is worth nothing: λ = 0 and the classical interval, said so.
    flat = ppi_mean_interval(y, np.full_like(f, 0.5), np.full_like(fu, 0.5), interval="score")
    assert flat.lam == 0.0
    assert (flat.low, flat.high) == (flat.classical_low, flat.classical_high)
    assert flat.effective_n == pytest.approx(flat.n)
    assert flat.note.startswith("no gain")
    # Every pair labelled: nothing to gain either.
    assert ppi_mean_interval(y, f, [], interval="score").note.startswith("no gain: every pair")
    assert gain_note(0.5, 40, 40.2, 100).startswith("no gain")


def test_mean_rating_version_on_a_0_3_scale():
    rng = np.random.default_rng(9)
    truth = rng.uniform(0, 3, 700)
    score = truth / 3 + rng.normal(0, 0.1, 700)
    y = np.where(
        np.arange(700) < 100, np.clip(np.round(truth + rng.normal(0, 0.3, 700)), 0, 3), np.nan
    )
    pred = calibrate_scores(score, y, kind="mean")
    lab = ~np.isnan(y)
    e = ppi_mean_interval(y[lab], pred[lab], pred[~lab], bounds=(0.0, 3.0))
    lo, hi = ppi_py.ppi_mean_ci(y[lab], pred[lab], pred[~lab], alpha=0.05)
    assert (e.low, e.high) == pytest.approx((float(lo[0]), float(hi[0])), abs=1e-12)
    assert e.half_width < 0.7 * e.classical_half_width
    assert 0 <= e.low < e.high <= 3


@settings(max_examples=12, deadline=None)
@given(
    acc=st.sampled_from([0.6, 0.75, 0.9]),
    n=st.sampled_from([50, 120, 300]),
    seed=st.integers(0, 10_000),
)
def test_random_predictions_claim_no_gain(acc, n, seed):
    """Predictions independent of the truth leave the PPI++ interval, on average over 200
    audits, within 5 % of the classical width: no gain is claimed from noise."""
    y, f = simulate(acc, None, n, audits=200, unlabelled=1000, seed=seed)
    r = fixed_n_intervals(y, f, n)
    ratio = np.mean(r["high"] - r["low"]) / np.mean(r["classical_high"] - r["classical_low"])
    assert abs(ratio - 1) <= 0.05
    assert np.mean(r["effective_n"]) <= 1.05 * n


def test_coverage_small_simulation():
    """A small version of the benchmark: 400 audits, nominal 95 %."""
    for acc, corr, n in ((0.9, 0.7, 100), (0.6, None, 80), (0.95, 0.9, 60)):
        cl, pp, hw_cl, hw_pp = coverage(acc, corr, n, audits=400, unlabelled=1000)
        assert cl >= 0.92 and pp >= 0.92, (acc, corr, n, cl, pp)
        if corr:
            assert hw_pp < hw_cl


def test_sequential_rule_and_savings_small_simulation():
    s = sequential(0.9, 0.7, audits=150, pool=600)
    assert s["ppi_coverage"] >= 0.9 and s["classical_coverage"] >= 0.9
    assert s["ppi_labels"] < s["classical_labels"]
    cl, pp = savings(0.7, 0.8, audits=100, pool=1000)
    assert pp <= 0.75 * cl


def test_ppi_group_stopping_minimum_and_width():
    y = np.array([1.0] * 45 + [0.0] * 5)
    early = ppi_group_stopping(y, y, np.ones(500), positives=5, negatives=4)
    assert not early.stop and "needs 10 positives" in early.reason
    wide = ppi_group_stopping(y, np.full(50, 0.5), np.full(500, 0.5), positives=30, negatives=20)
    assert not wide.stop and wide.check_half_width > 0.05
    assert wide.check_half_width > wide.estimate.half_width  # checked at 97.5 %


def test_labels_needed():
    cl, pp = labels_needed(0.8, 0.0, target=0.05, pairs=10_000, confidence=0.95)
    assert cl == pp == math.ceil(1.959963984540054**2 * 0.16 / 0.0025)
    cl, pp = labels_needed(0.8, 0.7, target=0.05, pairs=10_000, confidence=0.95)
    assert pp == pytest.approx(cl * (1 - 0.49), rel=0.05)
    assert labels_needed(0.5, 0.0, target=0.05, pairs=100)[0] == 100


def test_calibration_is_cross_fitted():
    rng = np.random.default_rng(2)
    score = rng.random(300)
    truth = np.where(np.arange(300) < 100, (rng.random(300) < 0.5).astype(float), np.nan)
    p = calibrate_scores(score, truth, folds=5, seed=1)
    assert np.isfinite(p).all() and ((p > 0) & (p < 1)).all()
    # a noise score: the out-of-fold predictions carry no information, λ stays near 0
    lab = ~np.isnan(truth)
    e = ppi_mean_interval(truth[lab], p[lab], p[~lab], interval="score")
    assert e.lam < 0.2
    # a single class among the labels: the constant labelled mean
    one = np.where(np.arange(300) < 50, 1.0, np.nan)
    assert np.all(calibrate_scores(score, one) == 1.0)
    with pytest.raises(Exception, match="missing"):
        calibrate_scores(np.array([0.1, np.nan]), np.array([1.0, 0.0]))


# ---- model as rater ----------------------------------------------------------------------------
def _ratings(table: dict[str, list[float]]) -> pd.DataFrame:
    rows = [
        {"pair_id": f"p{i}", "annotator": a, "value": v}
        for a, vals in table.items()
        for i, v in enumerate(vals)
    ]
    return pd.DataFrame(rows)


def _loo_by_hand(table: dict[str, list[float]], model: list[float]):
    """The leave-one-out figures computed with scipy directly, apart from rater_model.py
    (every doctor rates every pair here): each doctor's rho with the mean of the others, the
    model's mean rho with those same means, and the model's rank among the doctors."""
    from scipy.stats import spearmanr

    names = list(table)
    doctor, model_rhos = {}, []
    for a in names:
        others = np.mean([table[b] for b in names if b != a], axis=0)
        doctor[a] = spearmanr(table[a], others)[0]
        model_rhos.append(spearmanr(model, others)[0])
    model_loo = float(np.mean(model_rhos))
    rank = 1 + sum(rho > model_loo for rho in doctor.values())
    return doctor, model_loo, rank


def test_model_as_rater_ranks_against_leave_one_out():
    """Expected values: scipy's spearmanr on the leave-one-out means (_loo_by_hand)."""
    from scipy.stats import spearmanr

    table = {
        "A": [0, 1, 2, 3, 0, 2, 1, 3],
        "B": [0, 1, 3, 3, 1, 2, 1, 2],
        "C": [3, 0, 1, 2, 0, 3, 2, 1],  # the odd one out
    }
    scores = [0.0, 0.2, 0.7, 1.0, 0.1, 0.6, 0.3, 0.8]
    r = _ratings(table)
    model = {f"p{i}": v for i, v in enumerate(scores)}
    m = model_as_rater(r, model)
    assert m.model_rho == pytest.approx(spearmanr(scores, np.mean(list(table.values()), 0))[0])
    doctor, model_loo, rank = _loo_by_hand(table, scores)
    got = m.doctors.set_index("annotator")["loo_rho"]
    for a, rho in doctor.items():
        assert got[a] == pytest.approx(rho)
    assert m.model_loo_rho == pytest.approx(model_loo)
    assert m.model_rank == rank and rank < 4


def test_model_rank_uses_the_mean_without_the_left_out_doctor():
    """A case where the two references disagree: against the full mean (which still holds
    each doctor's own ratings) the model's rho is 0.80 and it would rank first; against the
    mean of the other doctors, as each doctor is judged, it averages 0.64 and ranks second,
    behind C (0.68). Expected values: scipy's spearmanr (_loo_by_hand)."""
    from scipy.stats import spearmanr

    table = {
        "A": [2, 0, 2, 2, 1, 2, 3, 2],
        "B": [0, 2, 0, 3, 2, 0, 2, 3],
        "C": [2, 0, 0, 3, 0, 1, 3, 2],
    }
    scores = [0.8, 0.2, 0.1, 0.7, 0.0, 0.4, 1.0, 0.5]
    doctor, model_loo, rank = _loo_by_hand(table, scores)
    full = spearmanr(scores, np.mean(list(table.values()), 0))[0]
    assert rank == 2 and 1 + sum(rho > full for rho in doctor.values()) == 1
    m = model_as_rater(_ratings(table), {f"p{i}": v for i, v in enumerate(scores)})
    assert m.model_rho == pytest.approx(full)
    assert m.model_loo_rho == pytest.approx(model_loo)
    assert m.doctors.set_index("annotator").loc["C", "loo_rho"] == pytest.approx(doctor["C"])
    assert m.model_rank == 2


# ---- alt-test ----------------------------------------------------------------------------------
BASE = {
    "A": [1, 1, 0, 0, 1, 0],
    "B": [1, 0, 0, 1, 1, 0],
    "C": [1, 1, 0, 1, 0, 0],
}
MODEL = [1, 1, 0, 1, 1, 0]


def _alt_example(copies: int):
    r = _ratings({a: v * copies for a, v in BASE.items()})
    m = {f"p{i}": float(v) for i, v in enumerate(MODEL * copies)}
    return r, m


def test_alt_test_hand_computation():
    """Hand computation following the procedure of Calderon, Reichart & Dror (2025), Alg. 1.

    Leaving out A, the others (B, C) on the six items are (1,1) (0,1) (0,0) (1,1) (1,0) (0,0).
    A's alignment S_h = 1, .5, 1, 0, .5, 1; the model's S_f = 1, .5, 1, 1, .5, 1: the model is
    at least as good on all six (rho_f = 1) and A on five (rho_h = 5/6), so d = W_h - W_f is
    0 except one -1. By symmetry of the example the same holds leaving out B (item 2) and C
    (item 5). With the six items twice (n = 12, two -1): mean -1/6, sample variance
    (10 (1/6)^2 + 2 (5/6)^2) / 11 = 5/33, t = (-1/6 - 0.2) / sqrt(5/33/12) = -3.2631 on 11
    degrees of freedom. Benjamini–Yekutieli with m = 3, H_3 = 11/6, q = 0.05: thresholds
    (k/3)(0.05/(11/6)) = 0.00909, 0.01818, 0.02727; p = 0.00378 is under all three, so all
    three nulls fall: winning rate 1, advantage probability 1, passed."""
    r, m = _alt_example(2)
    res = alt_test(r, m, epsilon=0.2, min_items_per_rater=10)
    t_hand = (-1 / 6 - 0.2) / math.sqrt(5 / 33 / 12)
    assert t_hand == pytest.approx(-3.2631, abs=1e-4)
    p_hand = student_t.cdf(t_hand, 11)
    assert p_hand == pytest.approx(0.00378, abs=5e-5)
    thresholds = [k / 3 * 0.05 / (1 + 1 / 2 + 1 / 3) for k in (1, 2, 3)]
    assert all(p_hand <= th for th in thresholds)
    per = res.per_annotator.set_index("annotator")
    assert list(per.index) == ["A", "B", "C"]
    assert per["p_value"].to_numpy() == pytest.approx([p_hand] * 3, rel=1e-9)
    assert per["rho_model"].tolist() == [1.0, 1.0, 1.0]
    assert per["rho_human"].to_numpy() == pytest.approx([5 / 6] * 3)
    assert per["rejected"].all()
    assert (res.winning_rate, res.advantage_probability, res.passed) == (1.0, 1.0, True)


def test_alt_test_epsilon_and_fewer_items_decide():
    """With epsilon = 0 the same data give t = (-1/6) / sqrt(5/33/12) = -1.4832, p = 0.0830,
    above every BY threshold: winning rate 0. With the six items once (n = 6), t = -2.2 on 5
    degrees of freedom, p = 0.0395 > 0.02727: not rejected either."""
    r, m = _alt_example(2)
    res = alt_test(r, m, epsilon=0.0, min_items_per_rater=10)
    p_hand = student_t.cdf((-1 / 6) / math.sqrt(5 / 33 / 12), 11)
    assert p_hand == pytest.approx(0.0830, abs=5e-4)
    assert res.per_annotator["p_value"].to_numpy() == pytest.approx([p_hand] * 3)
    assert res.winning_rate == 0.0 and not res.passed
    r6, m6 = _alt_example(1)
    res6 = alt_test(r6, m6, epsilon=0.2, min_items_per_rater=5)
    p6 = student_t.cdf((-1 / 6 - 0.2) / math.sqrt((5 / 6) / 5 / 6), 5)
    assert p6 == pytest.approx(0.0395, abs=5e-4)
    assert res6.per_annotator["p_value"].to_numpy() == pytest.approx([p6] * 3)
    assert res6.winning_rate == 0.0
    # doctors with fewer items than the minimum are skipped, with a reason when none is left
    none = alt_test(r6, m6, min_items_per_rater=30)
    assert none.skipped == ["A", "B", "C"] and "alt_test" in none.reasons


def test_alt_test_neg_rmse_and_a_bad_model():
    rng = np.random.default_rng(4)
    truth = rng.integers(0, 4, 60).astype(float)
    docs = {a: np.clip(truth + rng.integers(-1, 2, 60), 0, 3).tolist() for a in "ABCD"}
    r = _ratings(docs)
    good = {f"p{i}": v for i, v in enumerate(truth)}
    bad = {f"p{i}": 3 - v for i, v in enumerate(truth)}
    g = alt_test(r, good, scoring="neg_rmse")
    b = alt_test(r, bad, scoring="neg_rmse")
    assert g.passed and g.advantage_probability > 0.8
    assert not b.passed and b.winning_rate == 0.0 and b.advantage_probability < 0.5


# ---- the audit ---------------------------------------------------------------------------------
def _audit_data(seed: int = 0, m: int = 600, rated: int = 150):
    from data_schemas.scales import BINARY

    rng = np.random.default_rng(seed)
    same = rng.random(m) < 0.5
    auto = np.where(rng.random(m) < 0.85, same, ~same).astype(int)
    score = same * 1.0 + rng.normal(0, 0.6, m)
    pairs = pd.DataFrame(
        {
            "pair_id": [f"p{i}" for i in range(m)],
            "auto_label": auto,
            "dataset": np.where(np.arange(m) % 2 == 0, "a", "b"),
        }
    )
    idx = rng.choice(m, rated, replace=False)
    rows = []
    for i in idx:
        for a in ("X", "Y", "Z"):
            v = same[i] if rng.random() > 0.05 else not same[i]
            rows.append(
                {
                    "pair_id": f"p{i}",
                    "annotator": a,
                    "value": BINARY.code("same" if v else "not_same"),
                }
            )
    return pairs, pd.DataFrame(rows), score, BINARY


def test_ppi_audit_classical_matches_the_audit_and_ppi_is_narrower():
    from medsim_annot.stats import audit_labels
    from medsim_annot.stats.ppi import ppi_audit

    pairs, ratings, score, scale = _audit_data()
    base = audit_labels(pairs, ratings, scale, by=["dataset"])
    res = ppi_audit(pairs, ratings, scale, score, by=["dataset"])
    o = res.overall
    assert o["accuracy_classical_estimate"] == pytest.approx(base.overall["accuracy"])
    n = base.overall["tp"] + base.overall["tn"] + base.overall["fp"] + base.overall["fn"]
    correct = base.overall["tp"] + base.overall["tn"]
    assert o["accuracy_n"] == n and o["accuracy_n_unlabelled"] == 600 - 150
    wl, wh = proportion_confint(correct, n, alpha=0.05, method="wilson")
    assert (o["accuracy_classical_low"], o["accuracy_classical_high"]) == pytest.approx((wl, wh))
    tp, fp = base.overall["tp"], base.overall["fp"]
    assert o["precision_classical_estimate"] == pytest.approx(tp / (tp + fp))
    assert o["accuracy_high"] - o["accuracy_low"] < wh - wl
    assert o["accuracy_effective_n"] > n and o["accuracy_lam"] > 0.2
    assert list(res.by_group["dataset"]) == ["a", "b"]
    assert res.by_group["accuracy_n"].sum() == n
    assert o["accuracy_ci"] == [o["accuracy_low"], o["accuracy_high"]]
    cl = ppi_audit(pairs, ratings, scale, score, by=["dataset"], method="classical")
    assert cl.overall["accuracy_ci"] == pytest.approx([wl, wh])
    # both intervals are always computed: only the reported one and its estimate change
    assert cl.overall["accuracy_lam"] == o["accuracy_lam"]
    assert cl.overall["accuracy_low"] == o["accuracy_low"]
    assert cl.overall["accuracy_estimate"] == pytest.approx(base.overall["accuracy"])


def test_ppi_audit_noise_scores_claim_nothing_and_graded_scales_get_the_mean():
    from data_schemas.scales import RELATEDNESS_0_3
    from medsim_annot.stats.ppi import ppi_audit

    pairs, ratings, score, scale = _audit_data(1)
    noise = np.random.default_rng(5).random(len(pairs))
    res = ppi_audit(pairs, ratings, scale, noise, by=[])
    o = res.overall
    assert o["accuracy_lam"] < 0.2
    assert o["accuracy_high"] - o["accuracy_low"] == pytest.approx(
        o["accuracy_classical_high"] - o["accuracy_classical_low"], rel=0.05
    )
    rng = np.random.default_rng(3)
    truth = rng.uniform(0, 3, 400)
    graded = pd.DataFrame(
        [
            {
                "pair_id": f"p{i}",
                "annotator": a,
                "value": float(np.clip(round(truth[i] + rng.normal(0, 0.4)), 0, 3)),
            }
            for i in range(120)
            for a in "XYZ"
        ]
    )
    gp = pd.DataFrame({"pair_id": [f"p{i}" for i in range(400)]})
    res = ppi_audit(gp, graded, RELATEDNESS_0_3, truth + rng.normal(0, 0.3, 400), by=[])
    assert res.kind == "mean_rating" and res.metrics == ("mean_rating",)
    o = res.overall
    assert o["mean_rating_n"] == 120 and o["mean_rating_n_unlabelled"] == 280
    assert 0 <= o["mean_rating_low"] < o["mean_rating_high"] <= 3
    assert o["mean_rating_high"] - o["mean_rating_low"] < 0.8 * (
        o["mean_rating_classical_high"] - o["mean_rating_classical_low"]
    )
