"""Evaluation statistics against SciPy/statsmodels and brute force; gold parsing; the
evaluate service on binary, graded and real (EHR-Rel) gold."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from data_schemas.errors import InputError
from medsim_annot.embeddings import evaluate as ev
from medsim_annot.errors import UsageProblem
from medsim_annot.services import scoring as svc
from medsim_annot.services.gold.files import read_gold
from tests import published as P

# --------------------------------------------------------------------------- McNemar


def _from_table(table):
    """Right/wrong vectors of two methods realising a 2x2 table."""
    (a, b), (c, d) = table
    ca = np.r_[np.ones(a), np.ones(b), np.zeros(c), np.zeros(d)].astype(bool)
    cb = np.r_[np.ones(a), np.zeros(b), np.ones(c), np.zeros(d)].astype(bool)
    return ca, cb


def test_mcnemar_chi_square_textbook():
    # Agresti (2007), Table 8.1 (tests.published): approval of the president's performance in
    # two surveys, 794/150/86/570. McNemar's chi-square with continuity correction:
    # (|86-150|-1)^2/236 (the statistic does not depend on which survey is the rows).
    from statsmodels.stats.contingency_tables import mcnemar

    book = P.AGRESTI_PRESIDENT_APPROVAL.value.T.tolist()  # method a = second survey
    ca, cb = _from_table(book)
    stat, p, table = ev.mcnemar_test(ca, cb)
    assert table.tolist() == book
    assert stat == pytest.approx(63**2 / 236)
    assert p == pytest.approx(stats.chi2.sf(63**2 / 236, 1))
    ref = mcnemar(np.array(book), exact=False, correction=True)
    assert (stat, p) == pytest.approx((ref.statistic, ref.pvalue))


def test_mcnemar_exact_for_few_discordant_pairs():
    ca, cb = _from_table([[10, 7], [1, 4]])
    stat, p, _ = ev.mcnemar_test(ca, cb)
    assert stat == 1
    assert p == pytest.approx(stats.binomtest(1, 8, 0.5).pvalue)
    stat, p, _ = ev.mcnemar_test(ca, ca)
    assert p == 1.0


def test_bonferroni_and_significance_counts():
    np.testing.assert_allclose(ev.bonferroni(np.array([0.001, 0.02, 0.5]), 3), [0.003, 0.06, 1.0])
    comp = pd.DataFrame(
        {
            "method_a": ["a", "a", "b"],
            "method_b": ["b", "c", "c"],
            "significant": [True, True, False],
            "better": ["a", "c", ""],
        }
    )
    counts = ev.significance_counts(["a", "b", "c"], comp).set_index("method")
    assert counts.loc["a", ["better_than", "worse_than"]].tolist() == [1, 1]
    assert counts.loc["b", ["better_than", "worse_than"]].tolist() == [0, 1]
    assert counts.loc["c", ["better_than", "worse_than"]].tolist() == [1, 0]


# --------------------------------------------------------------------------- thresholds, AUC


def test_best_threshold_matches_brute_force():
    rng = np.random.default_rng(2)
    for _ in range(30):
        n = int(rng.integers(1, 25))
        y = rng.integers(0, 2, n)
        s = rng.integers(0, 6, n) / 5.0  # many ties
        t, acc = ev.best_threshold(y, s)
        cands = sorted(set(s.tolist()) | {np.inf}, reverse=True)
        accs = [np.mean((s >= c).astype(int) == y) for c in cands]
        assert acc == pytest.approx(max(accs))
        assert t == cands[int(np.argmax(accs))]


def test_roc_auc():
    assert ev.roc_auc(np.array([0, 1, 0, 1]), np.array([0.1, 0.9, 0.2, 0.8])) == 1.0
    assert np.isnan(ev.roc_auc(np.array([1, 1]), np.array([0.1, 0.9])))


# --------------------------------------------------------------------------- BCa bootstrap


def _spearman_axis(x, y, axis=-1):
    rx = stats.rankdata(x, axis=axis)
    ry = stats.rankdata(y, axis=axis)
    rx = rx - rx.mean(axis=axis, keepdims=True)
    ry = ry - ry.mean(axis=axis, keepdims=True)
    return (rx * ry).sum(axis) / np.sqrt((rx * rx).sum(axis) * (ry * ry).sum(axis))


@pytest.fixture
def graded():
    rng = np.random.default_rng(7)
    n = 60
    gold = rng.integers(0, 4, n).astype(float)
    a = gold + rng.normal(scale=1.0, size=n)
    b = np.round(gold + rng.normal(scale=2.0, size=n))  # ties
    return gold, a, b


def test_spearman_bca_equals_scipy_bootstrap(graded):
    gold, a, _ = graded
    ours = ev.spearman_ci(gold, a, n_resamples=999, seed=42, batch=256)
    ref = stats.bootstrap(
        (gold, a),
        _spearman_axis,
        paired=True,
        vectorized=True,
        n_resamples=999,
        batch=256,
        method="BCa",
        rng=42,
    )
    assert ours.estimate == pytest.approx(stats.spearmanr(gold, a).statistic, abs=1e-12)
    assert ours.low == pytest.approx(ref.confidence_interval.low, abs=1e-10)
    assert ours.high == pytest.approx(ref.confidence_interval.high, abs=1e-10)


def test_paired_bca_difference_equals_scipy_bootstrap(graded):
    gold, a, b = graded

    def diff(g, x, y, axis=-1):
        return _spearman_axis(g, x, axis) - _spearman_axis(g, y, axis)

    ours = ev.spearman_difference_ci(
        gold, a, b, confidence=0.99, n_resamples=999, seed=3, batch=256
    )
    ref = stats.bootstrap(
        (gold, a, b),
        diff,
        paired=True,
        vectorized=True,
        n_resamples=999,
        batch=256,
        confidence_level=0.99,
        method="BCa",
        rng=3,
    )
    assert ours.low == pytest.approx(ref.confidence_interval.low, abs=1e-10)
    assert ours.high == pytest.approx(ref.confidence_interval.high, abs=1e-10)
    assert ours.estimate == pytest.approx(diff(gold, a, b), abs=1e-12)


def test_mcnemar_comparisons_on_the_textbook_table():
    # Agresti (2007), Table 8.1 as the decisions of two methods, with a third that copies
    # the first: the pair (a, b) is the textbook test, Bonferroni-corrected for 3 tests.
    from statsmodels.stats.contingency_tables import mcnemar

    book = P.AGRESTI_PRESIDENT_APPROVAL.value.T.tolist()
    ca, cb = _from_table(book)
    correct = {"a": ca, "b": cb, "c": ca.copy()}
    accuracy = {m: float(v.mean()) for m, v in correct.items()}
    ticks = []
    comp = ev.mcnemar_comparisons(
        correct, accuracy, n_tests=3, alpha=0.05, on_pair=lambda: ticks.append(1)
    )
    assert list(comp.columns) == ev.MCNEMAR_COLUMNS and len(ticks) == 3
    assert comp[["method_a", "method_b"]].values.tolist() == [["a", "b"], ["a", "c"], ["b", "c"]]
    ab = comp.iloc[0]
    ref = mcnemar(np.array(book), exact=False, correction=True)
    assert ab.statistic == pytest.approx(63**2 / 236)
    assert ab.p_adjusted == pytest.approx(min(1.0, 3 * ref.pvalue))
    assert ab.significant and ab.better == ("a" if accuracy["a"] > accuracy["b"] else "b")
    ac = comp.iloc[1]
    assert ac.p_value == 1.0 and not ac.significant and ac.better == ""


def test_spearman_difference_comparisons_match_the_pairwise_interval(graded):
    gold, a, b = graded
    comp = ev.spearman_difference_comparisons(
        gold, {"a": a, "b": b, "a2": a.copy()}, level=0.05 / 3, n_resamples=199, seed=1
    )
    assert list(comp.columns) == ev.DIFFERENCE_COLUMNS
    ci = ev.spearman_difference_ci(gold, a, b, confidence=1 - 0.05 / 3, n_resamples=199, seed=1)
    first = comp.iloc[0]
    assert (first.difference, first.low, first.high) == (ci.estimate, ci.low, ci.high)
    assert first.significant == bool(ci.low > 0 or ci.high < 0)
    same = comp.iloc[1]  # a against its copy: difference 0 in every resample
    assert (same.difference, same.significant, same.better) == (0.0, False, "")


def test_rank_resampler_equals_rankdata():
    rng = np.random.default_rng(0)
    values = rng.integers(0, 5, 30).astype(float)
    idx = rng.integers(0, 30, (20, 30))
    got = ev._RankResampler(values).ranks(idx)
    np.testing.assert_allclose(got, stats.rankdata(values[idx], axis=1))


# --------------------------------------------------------------------------- category separation


def test_relative_overlap_error_matches_brute_force():
    rng = np.random.default_rng(4)
    S1 = rng.integers(0, 5, (5, 4)) / 4.0
    S2 = rng.integers(0, 5, (5, 3)) / 4.0
    S1[2, :] = np.nan  # a term of A the method cannot encode
    S2[2, :] = np.nan
    S1[:, 1] = np.nan  # a term of B it cannot encode
    O, count, sizes = ev.relative_overlap_error(S1, S2)
    rows = [i for i in range(5) if i != 2]
    cols = [j for j in range(4) if j != 1]
    brute = sum(S1[i, j] <= S2[i, k] for i in rows for j in cols for k in range(3))
    assert count == brute and sizes == (4, 3, 3)
    assert pytest.approx(brute / 36) == O


# --------------------------------------------------------------------------- gold parsing


def test_gold_forms():
    maj = pd.DataFrame(
        {"pair_id": ["a", "b", "c"], "majority": ["same", "not_same", ""], "mean": ["1", "0.2", ""]}
    )
    g = svc.gold_from_frame(maj)
    assert g.task == "binary" and g.values.to_dict() == {"a": 1.0, "b": 0.0}
    g = svc.gold_from_frame(maj, "graded")
    assert g.task == "graded" and g.values.to_dict() == {"a": 1.0, "b": 0.2}
    ratings = pd.DataFrame(
        {
            "pair_id": ["a", "a", "b", "b", "c"],
            "annotator": ["x", "y", "x", "y", "x"],
            "rating": ["3", "2", "0", "1", ""],
        }
    )
    g = svc.gold_from_frame(ratings)
    assert g.task == "graded" and g.values.to_dict() == {"a": 2.5, "b": 0.5}
    binary_ratings = pd.DataFrame(
        {
            "pair_id": ["a", "a", "b", "b", "c", "c"],
            "annotator": ["x", "y"] * 3,
            "rating": ["same", "same", "same", "not_same", "not_same", "dont_know"],
        }
    )
    g = svc.gold_from_frame(binary_ratings, "binary")
    assert g.values.to_dict() == {"a": 1.0, "c": 0.0}  # b is a tie: left out
    pairs = pd.DataFrame(
        {
            "pair_id": ["a", "b"],
            "term_1": ["x", "y"],
            "term_2": ["z", "w"],
            "auto_label": ["1", "0"],
        }
    )
    g = svc.gold_from_frame(pairs)
    assert (
        g.task == "binary" and g.source == "auto_label" and g.values.to_dict() == {"a": 1, "b": 0}
    )
    with pytest.raises(InputError, match="not a gold file"):
        svc.gold_from_frame(pd.DataFrame({"pair_id": ["a"], "x": ["1"]}))
    with pytest.raises(InputError, match="not a number"):
        svc.gold_from_frame(pd.DataFrame({"pair_id": ["a"], "mean": ["high"]}))


# --------------------------------------------------------------------------- the service


def test_evaluate_binary_service():
    rng = np.random.default_rng(1)
    n = 200
    y = rng.integers(0, 2, n)
    ids = [f"p{i}" for i in range(n)]
    good = y + rng.normal(scale=0.3, size=n)
    bad = rng.normal(size=n)
    gold = pd.DataFrame({"pair_id": ids, "majority": y.astype(str)})
    A = pd.DataFrame({"pair_id": ids, "good": good, "bad": bad})
    B = pd.DataFrame({"pair_id": ids, "half": np.where(np.arange(n) < 150, good, np.nan)})
    res = svc.evaluate_scores({"A": A, "B": B}, gold)
    assert res.task == "binary" and res.n_common == 150 and res.n_comparisons == 3
    m = res.methods.set_index("method")
    assert m.loc["B:half", "coverage"] == pytest.approx(0.75)
    assert m.loc["A:good", "auc"] > 0.9 and m.loc["A:good", "better_than"] == 1
    assert m.loc["A:bad", "worse_than"] == 2
    sub = np.arange(150)
    t, acc = ev.best_threshold(y[sub], good[sub])
    assert (m.loc["A:good", "threshold"], m.loc["A:good", "accuracy"]) == (t, acc)
    assert set(res.roc) == set(m.index)
    errors = svc.pair_errors({"A": A, "B": B}, gold, "A:bad", res, limit=5)
    assert len(errors) == 5 and errors["error"].is_monotonic_decreasing
    d = res.to_dict()
    assert d["alpha_per_comparison"] == pytest.approx(0.05 / 3)


def test_evaluate_graded_service():
    rng = np.random.default_rng(9)
    n = 120
    gold_values = rng.integers(0, 4, n).astype(float)
    ids = [f"p{i}" for i in range(n)]
    gold = pd.DataFrame({"pair_id": ids, "mean": gold_values})
    S = pd.DataFrame(
        {
            "pair_id": ids,
            "close": gold_values + rng.normal(scale=0.5, size=n),
            "noise": rng.normal(size=n),
        }
    )
    res = svc.evaluate_scores({"S": S}, gold, n_resamples=499)
    m = res.methods.set_index("method")
    assert m.loc["S:close", "rho_low"] < m.loc["S:close", "rho"] < m.loc["S:close", "rho_high"]
    assert m.loc["S:close", "better_than"] == 1 and m.loc["S:noise", "worse_than"] == 1
    comp = res.comparisons.iloc[0]
    assert comp["significant"] and comp["low"] > 0
    assert comp["confidence"] == pytest.approx(0.95)  # one comparison: no correction


def test_no_common_pairs_is_an_input_error():
    gold = pd.DataFrame({"pair_id": ["a"], "mean": ["1"]})
    S = pd.DataFrame({"pair_id": ["b"], "m": [0.5]})
    with pytest.raises(InputError, match="no pair"):
        svc.evaluate_scores({"S": S}, gold)


def test_category_separation_service():
    from medsim_annot.embeddings.lexical import levenshtein_similarity

    A = ["biopsy of liver", "biopsy of kidney", "liver scan"]
    B = ["liver transplant", "kidney transplant"]
    Cd = ["escherichia coli", "staphylococcus aureus", "liver fluke"]
    terms = pd.DataFrame({"term": A + B + Cd, "category": ["DP"] * 3 + ["TP"] * 2 + ["Org"] * 3})
    out = svc.category_separation(terms, None, "levenshtein", close=("DP", "TP"), distant="Org")
    row = out.iloc[0]
    assert row["metric"] == "levenshtein" and (row["n_a"], row["n_b"], row["n_c"]) == (3, 2, 3)

    def sim(x, y):
        return levenshtein_similarity([x], [y])[0]

    brute = sum(sim(a, b) <= sim(a, c) for a in A for b in B for c in Cd)
    assert row["errors"] == brute
    assert row["O"] == pytest.approx(brute / 18)


def test_ehr_rel_a_levenshtein_graded(ehr_rel_a):
    pairs = svc.read_pairs(ehr_rel_a)
    scores = svc.score_pairs(pairs, None, "levenshtein")
    gold = read_gold(ehr_rel_a)
    res = svc.evaluate_scores({"lev": scores}, gold, n_resamples=199)
    assert res.task == "graded" and res.gold_source == "EHR-Rel mean rating"
    m = res.methods.iloc[0]
    assert res.n_common == len(pairs)
    # spelling says little about relatedness: a weak positive correlation
    assert -0.1 < m["rho"] < 0.5
    assert m["rho_low"] < m["rho"] < m["rho_high"]
    mean_col = pd.read_csv(ehr_rel_a, sep="\t", dtype=str)
    assert len(gold.values) == len(mean_col)


def test_pair_errors_graded_and_terms():
    ids = ["a", "b", "c", "d"]
    gold = pd.DataFrame(
        {
            "pair_id": ids,
            "term_1": ["w", "x", "y", "z"],
            "term_2": ["q"] * 4,
            "mean": ["0", "1", "2", "3"],
        }
    )
    S = pd.DataFrame({"pair_id": ids, "m": [0.1, 0.2, 0.3, -1.0]})  # d is ranked last, gold first
    err = svc.pair_errors({"S": S}, gold, "S:m", limit=2)
    assert err["pair_id"].tolist()[0] == "d"
    assert list(err.columns) == ["pair_id", "term_1", "term_2", "gold", "score", "error"]
    assert err.loc[0, "error"] == pytest.approx(0.75)  # |0.25 - 1.0|


def test_list_embeddings(tmp_path, monkeypatch):
    (tmp_path / "glove.txt").write_text("fever 0.1 0.2\n", encoding="utf-8")
    (tmp_path / "w2v.txt").write_text("1 2\nfever 0.1 0.2\n", encoding="utf-8")
    model = tmp_path / "minilm"
    model.mkdir()
    (model / "modules.json").write_text("[]", encoding="utf-8")
    (tmp_path / "notes").mkdir()
    monkeypatch.setenv("MEDSIM_EMBEDDINGS_DIR", str(tmp_path))
    found = svc.list_embeddings().set_index("name")["format"].to_dict()
    assert found == {"glove.txt": "glove", "minilm": "sentence-transformers", "w2v.txt": "word2vec"}


def test_score_pairs_progress_and_coverage(tmp_path):
    path = tmp_path / "e.txt"
    path.write_text("2 3\nfever 1 0 0\npyrexia 0.9 0.1 0\n", encoding="utf-8")
    pairs = pd.DataFrame(
        {"pair_id": ["a", "b"], "term_1": ["Fever", "zzz"], "term_2": ["pyrexia unknown", "fever"]}
    )
    calls = []
    out = svc.score_pairs(
        pairs,
        path,
        None,
        ["avg_cos", "mj"],
        lambda d, t, s: calls.append((d, t, s)),
        cache_dir=tmp_path / "c",
    )
    cov = out.attrs["coverage"]
    assert (cov["covered"], cov["not_covered"], cov["oov_words"], cov["words"]) == (1, 1, 2, 4)
    assert out.loc[0, "avg_cos"] == pytest.approx(0.9 / np.sqrt(0.82))
    assert np.isnan(out.loc[1, "avg_cos"])
    assert calls[-1][0] == calls[-1][1] == 2 and calls[-1][2] == "scoring pairs"
    with pytest.raises(UsageProblem, match="not available"):
        svc.score_pairs(pairs, path, "word2vec", ["cos"], cache_dir=tmp_path / "c")


# --------------------------------------------------------------------------- invariants

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=60))
def test_mcnemar_is_symmetric_and_a_probability(rows):
    a = np.array([r[0] for r in rows])
    b = np.array([r[1] for r in rows])
    s1, p1, _ = ev.mcnemar_test(a, b)
    s2, p2, _ = ev.mcnemar_test(b, a)
    assert p1 == pytest.approx(p2) and 0 <= p1 <= 1 and s1 == pytest.approx(s2)


@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 5)), min_size=1, max_size=40))
def test_best_threshold_beats_the_majority_class(rows):
    y = np.array([r[0] for r in rows])
    s = np.array([r[1] for r in rows], dtype=float)
    t, acc = ev.best_threshold(y, s)
    assert acc >= max(y.mean(), 1 - y.mean()) - 1e-12
    assert acc == pytest.approx(np.mean((s >= t).astype(int) == y))


@given(st.integers(1, 5), st.integers(1, 5), st.integers(1, 5), st.integers(0, 2**31))
def test_overlap_error_is_a_rate_and_order_invariant(na, nb, nc, seed):
    rng = np.random.default_rng(seed)
    S1 = rng.integers(0, 4, (na, nb)) / 3.0
    S2 = rng.integers(0, 4, (na, nc)) / 3.0
    O, count, _ = ev.relative_overlap_error(S1, S2)
    assert 0 <= O <= 1
    perm = rng.permutation(na)
    assert ev.relative_overlap_error(S1[perm][:, ::-1], S2[perm])[1] == count


def test_identical_methods_are_not_significantly_different(graded):
    gold, a, _ = graded
    ci = ev.spearman_difference_ci(gold, a, a.copy(), n_resamples=199, seed=0)
    assert (ci.estimate, ci.low, ci.high) == (0.0, 0.0, 0.0)
