"""The ten word metrics and the contextual metrics: hand-computed values, edge cases, and
agreement of the fast (vectorised) and straightforward (per pair, SciPy) implementations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from medsim_annot.embeddings.metrics import (
    VECTOR_METRICS,
    WORD_METRICS,
    similarity_reference,
    vector_pair_scores,
    vector_pair_scores_reference,
    word_pair_scores,
    word_pair_scores_reference,
)


def fast(X, Y, metrics=WORD_METRICS):
    """Score one pair (X, Y given as matrices) with the fast implementation."""
    X = np.asarray(X, dtype=float).reshape(-1, np.shape(Y)[-1] if len(Y) else np.shape(X)[-1])
    Y = np.asarray(Y, dtype=float)
    E = np.vstack([X, Y]) if len(Y) else X
    out = word_pair_scores(
        E, [list(range(len(X)))], [list(range(len(X), len(X) + len(Y)))], metrics
    )
    return {m: float(v[0]) for m, v in out.items()}


def both(X, Y):
    """Fast and reference results for one pair; asserts they agree, returns the fast one."""
    f = fast(X, Y)
    for m in WORD_METRICS:
        r = similarity_reference(np.asarray(X, float), np.asarray(Y, float), m)
        if math.isnan(r):
            assert math.isnan(f[m]), m
        else:
            assert f[m] == pytest.approx(r, abs=1e-12), m
    return f


# --------------------------------------------------------------------------- hand-computed


def test_single_words_proportional_vectors():
    # x = (1,2,3), y = 2x: every correlation and cosine is 1.
    # fj: U = [x, y], <x,U> = (14, 28), <y,U> = (28, 56) -> (14+28)/(28+56) = 0.5
    # mj: mu_x = (1,2,3), mu_y = (2,4,6) -> 6/12 = 0.5
    f = both([[1, 2, 3]], [[2, 4, 6]])
    for m in (
        "avg_cos",
        "avg_r",
        "avg_rho",
        "avg_tau",
        "pair_cos",
        "pair_r",
        "pair_rho",
        "pair_tau",
    ):
        assert f[m] == pytest.approx(1.0)
    assert f["fj"] == pytest.approx(0.5)
    assert f["mj"] == pytest.approx(0.5)


def test_two_word_term_against_one_word():
    # X = [e1, e2], Y = [e3] in 3-d.
    f = both([[1, 0, 0], [0, 1, 0]], [[0, 0, 1]])
    # mean x = (.5,.5,0), y = (0,0,1): orthogonal; centred y = -2 * centred mean x
    assert f["avg_cos"] == pytest.approx(0.0)
    assert f["avg_r"] == pytest.approx(-1.0)
    assert f["avg_rho"] == pytest.approx(-1.0)  # ranks (2.5,2.5,1) vs (1.5,1.5,3)
    # tau-b: 0 concordant, 2 discordant, one tie in each -> -2 / sqrt(2*2) = -1
    assert f["avg_tau"] == pytest.approx(-1.0)
    # word pairs (e1,e3), (e2,e3): cos 0; r = (-1/3)/(6/9) = -0.5; rho -0.5;
    # tau-b: 0 concordant, 1 discordant, one tie each -> -1/sqrt(2*2) = -0.5
    assert f["pair_cos"] == pytest.approx(0.0)
    assert f["pair_r"] == pytest.approx(-0.5)
    assert f["pair_rho"] == pytest.approx(-0.5)
    assert f["pair_tau"] == pytest.approx(-0.5)
    # fj: mu_X = (1,1,0), mu_Y = (0,0,1): min sum 0 -> 0; mj likewise 0
    assert f["fj"] == pytest.approx(0.0)
    assert f["mj"] == pytest.approx(0.0)


def test_repeated_word_is_weighted_twice():
    # X = [e1, e1, e2] vs Y = [e1]: mean x = (2/3, 1/3) -> cos = 2/sqrt(5)
    f = both([[1, 0], [1, 0], [0, 1]], [[1, 0]])
    assert f["avg_cos"] == pytest.approx(2 / math.sqrt(5))
    assert f["pair_cos"] == pytest.approx(2 / 3)  # (1 + 1 + 0) / 3
    g = both([[1, 0], [0, 1]], [[1, 0]])  # without the repeat
    assert g["avg_cos"] == pytest.approx(1 / math.sqrt(2))
    assert g["pair_cos"] == pytest.approx(0.5)
    # fj: U = [e1,e1,e2,e1]; mu_X = (1,1,1,1), mu_Y = (1,1,0,1) -> 3/4 (same with the repeat)
    assert f["fj"] == pytest.approx(0.75)
    assert f["mj"] == pytest.approx(0.5)  # mu_X = (1,1), mu_Y = (1,0)


def test_constant_vector_gives_nan_correlations():
    # x = (1,1,1) is constant: Pearson, Spearman and Kendall are undefined (NaN, as SciPy)
    f = both([[1, 1, 1]], [[1, 2, 3]])
    assert f["avg_cos"] == pytest.approx(6 / (math.sqrt(3) * math.sqrt(14)))
    for m in ("avg_r", "avg_rho", "avg_tau", "pair_r", "pair_rho", "pair_tau"):
        assert math.isnan(f[m]), m
    # fj: <x,U> = (3, 6), <y,U> = (6, 14) -> 9/20; mj: (1,1,1) vs (1,2,3) -> 3/6
    assert f["fj"] == pytest.approx(0.45)
    assert f["mj"] == pytest.approx(0.5)


def test_constant_word_makes_pair_metric_nan_but_not_avg():
    # one constant word among two: the average is not constant, the word pairs include NaN
    f = both([[1, 1, 1], [0, 1, 5]], [[1, 2, 3]])
    assert not math.isnan(f["avg_r"])
    assert math.isnan(f["pair_r"]) and math.isnan(f["pair_tau"])


def test_all_negative_vectors_fj_and_mj():
    # mj: every coordinate negative -> mu = 0 for both terms -> 0/0 = NaN
    # fj: U = [x, y]; <x,U> = (5, 4), <y,U> = (4, 5) -> 8/10
    f = both([[-1, -2]], [[-2, -1]])
    assert math.isnan(f["mj"])
    assert f["fj"] == pytest.approx(0.8)
    assert f["avg_cos"] == pytest.approx(0.8)
    assert f["avg_r"] == pytest.approx(-1.0)
    assert f["avg_tau"] == pytest.approx(-1.0)


def test_zero_vector_cosine_is_nan():
    f = both([[0.0, 0.0, 0.0]], [[1.0, 2.0, 3.0]])
    assert math.isnan(f["avg_cos"]) and math.isnan(f["pair_cos"])
    # fj: U = [0, y]; mu_X = (0, 0), mu_Y = (0, 14) -> 0 / 14 = 0
    assert f["fj"] == pytest.approx(0.0)


def test_term_without_known_word_is_nan_for_every_metric():
    E = np.eye(3)
    out = word_pair_scores(E, [[0], [], [1]], [[1], [2], []])
    ref = word_pair_scores_reference(E, [[0], [], [1]], [[1], [2], []])
    for m in WORD_METRICS:
        assert math.isnan(out[m][1]) and math.isnan(out[m][2])
        assert math.isnan(ref[m][1]) and math.isnan(ref[m][2])


def test_single_word_terms_avg_equals_pair():
    rng = np.random.default_rng(3)
    E = rng.normal(size=(6, 50))
    out = word_pair_scores(E, [[0], [1], [2]], [[3], [4], [5]])
    for kind in ("cos", "r", "rho", "tau"):
        np.testing.assert_allclose(out[f"avg_{kind}"], out[f"pair_{kind}"], atol=1e-12)


# --------------------------------------------------------------------------- Kendall tau-b


def test_kendall_is_tau_b_with_ties():
    x = [1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 0.5]
    y = [1.0, 2.0, 3.0, 3.0, 2.0, 4.0, 4.0]
    tau_b = stats.kendalltau(x, y, variant="b").statistic
    tau_c = stats.kendalltau(x, y, variant="c").statistic
    # tau-a by hand: (concordant - discordant) / (n (n-1) / 2)
    n = len(x)
    s = sum(np.sign(x[i] - x[j]) * np.sign(y[i] - y[j]) for i in range(n) for j in range(i + 1, n))
    tau_a = s / (n * (n - 1) / 2)
    got = vector_pair_scores(np.array([x, y]), [0], [1], ["tau"])["tau"][0]
    assert got == pytest.approx(tau_b, abs=1e-12)
    assert abs(got - tau_a) > 1e-3 and abs(got - tau_c) > 1e-3
    f = fast([x], [y], ["avg_tau", "pair_tau"])
    assert f["avg_tau"] == pytest.approx(tau_b, abs=1e-12)
    assert f["pair_tau"] == pytest.approx(tau_b, abs=1e-12)


def test_kendall_ties_in_only_one_vector():
    x = np.array([3.0, 1.0, 2.0, 5.0, 4.0])
    y = np.array([1.0, 1.0, 2.0, 2.0, 3.0])
    expect = stats.kendalltau(x, y).statistic
    got = vector_pair_scores(np.array([x, y, x]), [0, 1], [1, 2], ["tau"])["tau"]
    np.testing.assert_allclose(got, [expect, expect], atol=1e-12)


# --------------------------------------------------------------------------- fast == reference


def _random_terms(rng, p, V, max_len=6, allow_empty=False):
    lo = 0 if allow_empty else 1
    return [rng.integers(0, V, size=rng.integers(lo, max_len + 1)).tolist() for _ in range(p)]


@pytest.mark.parametrize("d", [300, 17])
def test_fast_equals_reference_random(d):
    rng = np.random.default_rng(d)
    V = 80
    E = rng.normal(size=(V, d)).astype(np.float32).astype(np.float64)
    t1 = _random_terms(rng, 60, V, allow_empty=True)
    t2 = _random_terms(rng, 60, V)
    ref = word_pair_scores_reference(E, t1, t2)
    out = word_pair_scores(E, t1, t2, chunk_words=20, chunk_pairs=7)  # several chunks
    for m in WORD_METRICS:
        np.testing.assert_array_equal(np.isnan(out[m]), np.isnan(ref[m]), err_msg=m)
        np.testing.assert_allclose(out[m], ref[m], atol=1e-9, rtol=0, err_msg=m)


def test_fast_equals_reference_with_many_ties():
    rng = np.random.default_rng(11)
    V, d = 40, 9
    E = rng.integers(-2, 3, size=(V, d)).astype(np.float64)  # ties everywhere, some constant rows
    E[0] = 1.0
    t1 = _random_terms(rng, 80, V)
    t2 = _random_terms(rng, 80, V)
    ref = word_pair_scores_reference(E, t1, t2)
    out = word_pair_scores(E, t1, t2)
    for m in WORD_METRICS:
        np.testing.assert_array_equal(np.isnan(out[m]), np.isnan(ref[m]), err_msg=m)
        np.testing.assert_allclose(out[m], ref[m], atol=1e-9, rtol=0, err_msg=m)


@given(st.integers(0, 2**32 - 1), st.integers(2, 12), st.integers(1, 4))
def test_fast_equals_reference_property(seed, d, levels):
    rng = np.random.default_rng(seed)
    V = 10
    E = rng.integers(-levels, levels + 1, size=(V, d)).astype(np.float64) * 0.5
    t1 = _random_terms(rng, 6, V, max_len=4, allow_empty=True)
    t2 = _random_terms(rng, 6, V, max_len=4)
    ref = word_pair_scores_reference(E, t1, t2)
    out = word_pair_scores(E, t1, t2)
    for m in WORD_METRICS:
        np.testing.assert_array_equal(np.isnan(out[m]), np.isnan(ref[m]), err_msg=m)
        np.testing.assert_allclose(out[m], ref[m], atol=1e-9, rtol=0, err_msg=m)


def test_vector_metrics_fast_equals_reference():
    rng = np.random.default_rng(5)
    T = rng.normal(size=(30, 64))
    T[3] = 2.0  # constant
    T[4] = 0.0  # zero
    i = rng.integers(-1, 30, size=200)
    j = rng.integers(0, 30, size=200)
    out = vector_pair_scores(T, i, j)
    ref = vector_pair_scores_reference(T, i, j)
    for m in VECTOR_METRICS:
        np.testing.assert_array_equal(np.isnan(out[m]), np.isnan(ref[m]), err_msg=m)
        np.testing.assert_allclose(out[m], ref[m], atol=1e-9, rtol=0, err_msg=m)


def test_symmetry_of_every_metric():
    rng = np.random.default_rng(8)
    E = rng.normal(size=(20, 30))
    t1 = _random_terms(rng, 15, 20)
    t2 = _random_terms(rng, 15, 20)
    a = word_pair_scores(E, t1, t2)
    b = word_pair_scores(E, t2, t1)
    for m in WORD_METRICS:
        np.testing.assert_allclose(a[m], b[m], atol=1e-12, err_msg=m)


def test_unknown_metric_is_rejected():
    with pytest.raises(ValueError, match="unknown metric"):
        word_pair_scores(np.eye(2), [[0]], [[1]], ["avg_cosine"])
