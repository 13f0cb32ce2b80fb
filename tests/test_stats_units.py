"""Majority vote, degenerate input, k-of-n designs, audit, bootstrap and rater quality."""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pingouin as pg
import pytest

from data_schemas import columns as C
from data_schemas.scales import BINARY, RELATEDNESS_0_3
from medsim_annot.stats import (
    agreement_report,
    audit_labels,
    bootstrap_ci,
    cohen_kappa,
    dont_know_share,
    intra_rater_consistency,
    intraclass_corr,
    kendall_w,
    krippendorff_alpha,
    majority_vote,
    outlier_annotators,
    pairwise_agreement,
    rater_quality,
    ratings_from_matrix,
    slot_matrix,
    spearman_rho,
    straight_lining,
)
from tests.plain_stats import majority_vote as plain_majority

NAN = np.nan


def frame(rows):
    """rows: (pair_id, annotator, value) with None = no decision."""
    return pd.DataFrame(
        {
            C.PAIR_ID: [r[0] for r in rows],
            C.ANNOTATOR: [r[1] for r in rows],
            C.VALUE: [NAN if r[2] is None else float(r[2]) for r in rows],
            C.NO_DECISION: [r[2] is None for r in rows],
        }
    )


# ---- majority ------------------------------------------------------------------------------------
def test_majority_rules_and_numeric_summaries():
    r = frame(
        [
            ("p1", "A", 1),
            ("p1", "B", 1),
            ("p1", "C", None),
            ("p2", "A", 1),
            ("p2", "B", 0),
            ("p2", "C", None),
            ("p3", "A", 1),
            ("p3", "B", None),
            ("p3", "C", None),
            ("p4", "A", 0),
            ("p4", "B", 0),
            ("p4", "C", 0),
            ("p4", "D", 1),
        ]
    )
    strict = majority_vote(r)
    assert strict.loc["p1", "majority"] == 1.0 and np.isnan(strict.loc["p2", "majority"])
    assert np.isnan(strict.loc["p3", "majority"]) and strict.loc["p4", "majority"] == 0.0
    assert strict["n_ratings"].tolist() == [3, 3, 3, 4]
    assert strict["n_decisive"].tolist() == [2, 2, 1, 4]
    decisive = majority_vote(r, rule="decisive")
    assert decisive.loc["p3", "majority"] == 1.0 and np.isnan(decisive.loc["p2", "majority"])
    num = majority_vote(
        frame([("a", "A", 0), ("a", "B", 3), ("a", "C", 3), ("a", "D", 2)]), numeric=True
    )
    assert num.loc["a", "mean"] == 2.0 and num.loc["a", "median"] == 2.5
    assert np.isnan(num.loc["a", "majority"])  # 3 has 2 of 4: not more than half
    with pytest.raises(ValueError):
        majority_vote(r, rule="plurality")


def test_majority_no_decision_never_wins():
    r = frame([("p", "A", None), ("p", "B", None), ("p", "C", 1)])
    assert np.isnan(majority_vote(r).loc["p", "majority"])


# ---- degenerate input ----------------------------------------------------------------------------
def test_one_annotator_only():
    r = frame([("p1", "A", 1), ("p2", "A", 2), ("p3", "A", 3)])
    rep = agreement_report(r, "ordinal")
    d = rep.to_dict()
    assert np.isnan(d["krippendorff_alpha"]) and "pairable" in rep.reasons["krippendorff_alpha"]
    assert d["pairwise"] == [] and np.isnan(d["icc"]["C1"]) and np.isnan(d["kendall_w"])
    assert "one annotator" in rep.reasons["icc"] and "one annotator" in rep.reasons["pairwise"]
    assert np.isnan(d["human_upper_bound"]["inclusive"])


def test_constant_rater():
    r = ratings_from_matrix([[1, 1], [1, 2], [1, 3], [1, 1]], annotators="AB")
    k = cohen_kappa(r[r.annotator == "A"].value.to_numpy(), r[r.annotator == "B"].value.to_numpy())
    assert k.value == pytest.approx(0.0)  # defined: chance agreement < 1
    rho = spearman_rho([1, 1, 1, 1], [1, 2, 3, 1])
    assert np.isnan(rho.value) and "constant" in rho.reason
    both_const = cohen_kappa([2, 2, 2], [2, 2, 2])
    assert np.isnan(both_const.value) and "chance agreement" in both_const.reason
    alpha = krippendorff_alpha(ratings_from_matrix([[2, 2], [2, 2]]), "nominal")
    assert np.isnan(alpha.value) and "no variation" in alpha.reason
    rep = agreement_report(r, "ordinal")
    assert "constant" in rep.reasons["pairwise"]


def test_no_overlap_between_two_annotators():
    r = frame(
        [
            ("p1", "A", 1),
            ("p1", "B", 2),
            ("p2", "A", 2),
            ("p2", "B", 2),
            ("p3", "C", 1),
            ("p4", "C", 3),
        ]
    )
    pw = pairwise_agreement(r, "ordinal").set_index(["annotator_a", "annotator_b"])
    assert pw.loc[("A", "C"), "n_items"] == 0
    assert np.isnan(pw.loc[("A", "C"), "krippendorff_alpha"])
    assert "no overlap" in pw.loc[("A", "C"), "reason"]


def test_no_pairable_items_and_empty_frame():
    r = frame([("p1", "A", 1), ("p2", "B", 2), ("p3", "C", None)])
    est = krippendorff_alpha(r, "nominal")
    assert np.isnan(est.value) and "no pairable" in est.reason
    empty = frame([])
    assert np.isnan(krippendorff_alpha(empty, "nominal").value)
    rep = agreement_report(empty, "nominal").to_dict()
    assert rep["n_items"] == 0 and rep["pairwise"] == [] and rep["per_annotator"] == []


def test_bad_level_and_missing_columns():
    with pytest.raises(ValueError, match="level"):
        krippendorff_alpha(frame([("p", "A", 1)]), "cardinal")
    with pytest.raises(ValueError, match="to_ratings_frame"):
        majority_vote(pd.DataFrame({"pair_id": ["p"]}))


# ---- k-of-n designs ------------------------------------------------------------------------------
def test_slot_rule_for_three_of_five():
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 4, 60)
    m = np.full((60, 5), NAN)
    for i in range(60):
        cols = rng.choice(5, 3, replace=False)
        m[i, cols] = np.clip(truth[i] + rng.integers(-1, 2, 3), 0, 3)
    m[0, :] = NAN
    m[0, 0] = 1  # an item with a single rating is dropped by the slot rule
    r = ratings_from_matrix(m, annotators="ABCDE")
    sm = slot_matrix(r)
    assert sm.k == 3 and sm.matrix.shape == (59, 3) and sm.n_dropped == 1
    assert "slots" in sm.rule
    # slot j holds the j-th rating in annotator-name order
    row = m[1][~np.isnan(m[1])]
    assert np.array_equal(sm.matrix[0], row)
    res = intraclass_corr(r)
    long = pd.DataFrame(
        {"t": np.repeat(np.arange(59), 3), "r": np.tile(np.arange(3), 59), "v": sm.matrix.ravel()}
    )
    ref = pg.intraclass_corr(long, "t", "r", "v").set_index("Type")["ICC"]
    assert pytest.approx(ref["ICC(C,1)"]) == res.C1 and res.Ck == pytest.approx(ref["ICC(C,k)"])
    assert 0 < kendall_w(r).value <= 1
    # alpha handles the missing cells natively, pairwise uses shared items only
    ref_alpha = krippendorff.alpha(reliability_data=m.T, level_of_measurement="ordinal")
    assert krippendorff_alpha(r, "ordinal").value == pytest.approx(ref_alpha, abs=1e-12)
    pw = pairwise_agreement(r, RELATEDNESS_0_3)
    assert (pw["n_items"] < 60).all()
    rep = agreement_report(r, RELATEDNESS_0_3).to_dict()
    assert 0 < rep["human_upper_bound"]["exclusive"] <= rep["human_upper_bound"]["inclusive"] <= 1


def test_complete_design_with_no_decision_drops_incomplete_items():
    m = np.array([[0, 1, 1], [2, 2, 3], [3, 3, 3], [1, NAN, 0], [0, 0, 1]], dtype=float)
    sm = slot_matrix(ratings_from_matrix(m))
    assert sm.k == 3 and sm.n_dropped == 1 and sm.matrix.shape == (4, 3)


# ---- audit ---------------------------------------------------------------------------------------
def _audit_data():
    rows, pairs = [], []
    rng = np.random.default_rng(7)
    for ds in ("d1", "d2"):
        for diff in ("easy", "hard"):
            for i in range(20):
                pid = f"{ds}-{diff}-{i}"
                label = i % 2
                pairs.append((pid, label, ds, diff))
                for ann in ("X", "Y", "Z"):
                    u = rng.random()
                    v = None if u < 0.1 else (label if u < 0.85 else 1 - label)
                    rows.append((pid, ann, v))
    p = pd.DataFrame(pairs, columns=[C.PAIR_ID, C.AUTO_LABEL, C.DATASET, C.DIFFICULTY])
    p[C.AUTO_LABEL] = p[C.AUTO_LABEL].astype("Int64")
    return p, frame(rows)


def test_audit_matches_naive_computation():
    """Expected values by hand: the majority by counting each pair's ratings
    (tests/plain_stats.py, not the product's majority_vote), the confusion counts and rates
    from it, alpha from the ``krippendorff`` package."""
    pairs, r = _audit_data()
    res = audit_labels(pairs, r, BINARY)
    assert res.by == [C.DATASET, C.DIFFICULTY]
    assert len(res.by_group) == 4
    maj = plain_majority(r)
    for rec in res.by_group.to_dict(orient="records"):
        sel = pairs[
            (pairs[C.DATASET] == rec[C.DATASET]) & (pairs[C.DIFFICULTY] == rec[C.DIFFICULTY])
        ]
        truth = maj.reindex(sel[C.PAIR_ID]).to_numpy()
        label = sel[C.AUTO_LABEL].to_numpy(dtype=float)
        ok = ~np.isnan(truth)
        assert rec["n_items"] == len(sel)
        assert rec["nan_fraction"] == pytest.approx(1 - ok.mean())
        tp = int(((truth == 1) & (label == 1)).sum())
        fp = int(((truth == 0) & (label == 1)).sum())
        fn = int(((truth == 1) & (label == 0)).sum())
        tn = int(((truth == 0) & (label == 0)).sum())
        assert (rec["tp"], rec["fp"], rec["fn"], rec["tn"]) == (tp, fp, fn, tn)
        assert rec["accuracy"] == pytest.approx((tp + tn) / (tp + fp + fn + tn))
        assert rec["precision"] == pytest.approx(tp / (tp + fp))
        assert rec["recall"] == pytest.approx(tp / (tp + fn))
        sub = r[r[C.PAIR_ID].isin(sel[C.PAIR_ID])]
        wide = sub.pivot(index=C.ANNOTATOR, columns=C.PAIR_ID, values=C.VALUE).to_numpy()
        ref = krippendorff.alpha(reliability_data=wide, level_of_measurement="nominal")
        assert rec["krippendorff_alpha"] == pytest.approx(ref, abs=1e-12)
    assert res.overall["n_items"] == 80
    d = res.to_dict()
    assert set(d) == {"overall", "by_group"}
    keys = {
        "n_items",
        "nan_fraction",
        "krippendorff_alpha",
        "accuracy",
        "precision",
        "recall",
        "f1",
        "tp",
        "fp",
        "fn",
        "tn",
    }
    assert set(d["overall"]) == keys
    assert set(d["by_group"][0]) == keys | {C.DATASET, C.DIFFICULTY}


def test_audit_bootstrap_intervals_and_decisive_rule():
    pairs, r = _audit_data()
    res = audit_labels(pairs, r, BINARY, by=[C.DATASET], bootstrap=200, seed=5)
    for name in ("krippendorff_alpha", "accuracy", "precision", "recall"):
        lo, hi = res.overall[f"{name}_ci"]
        assert lo <= res.overall[name] <= hi
        assert all(len(ci) == 2 for ci in res.by_group[f"{name}_ci"])
    again = audit_labels(pairs, r, BINARY, by=[C.DATASET], bootstrap=200, seed=5)
    assert again.overall["accuracy_ci"] == res.overall["accuracy_ci"]
    dec = audit_labels(pairs, r, BINARY, rule="decisive")
    assert dec.overall["nan_fraction"] <= audit_labels(pairs, r, BINARY).overall["nan_fraction"]


def test_audit_unrated_pairs_and_no_positive_predictions():
    pairs = pd.DataFrame({C.PAIR_ID: ["a", "b", "c"], C.AUTO_LABEL: [0, 0, 0]})
    r = frame([("a", "X", 1), ("a", "Y", 1), ("b", "X", 0), ("b", "Y", 0)])
    res = audit_labels(pairs, r, BINARY, by=[])
    assert res.overall["n_items"] == 2  # "c" has no rating
    assert np.isnan(res.overall["precision"]) and "precision" in res.reasons
    assert res.overall["recall"] == 0.0
    with pytest.raises(ValueError, match="positive"):
        audit_labels(pairs, r, RELATEDNESS_0_3)


# ---- bootstrap -----------------------------------------------------------------------------------
def test_bootstrap_percentile_fallback_with_reason():
    sums = np.column_stack([np.ones(30), np.ones(30)])
    ci = bootstrap_ci(sums, lambda t: t[:, 0] / t[:, 1], n_resamples=100, seed=1)
    assert ci.method == "percentile" and "degenerate" in ci.reason and ci.low == ci.high == 1.0
    ci = bootstrap_ci(sums[:1], lambda t: t[:, 0] / t[:, 1], n_resamples=100, seed=1)
    assert np.isnan(ci.low) and ci.reason
    # undefined in some resamples (precision with rare predicted positives)
    rare = np.zeros((40, 2))
    rare[0] = [1, 1]
    ci = bootstrap_ci(
        rare,
        lambda t: np.where(t[:, 1] > 0, t[:, 0] / np.maximum(t[:, 1], 1), np.nan),
        n_resamples=200,
        seed=2,
    )
    assert ci.method == "percentile" and "undefined" in ci.reason


def test_bootstrap_alpha_interval_covers_estimate_and_jackknife_shortcut():
    rng = np.random.default_rng(2)
    truth = rng.integers(0, 4, 200)
    m = np.clip(truth[:, None] + rng.integers(-1, 2, (200, 3)), 0, 3).astype(float)
    r = ratings_from_matrix(m)
    from scipy.stats import bootstrap

    from medsim_annot.stats._frame import encode
    from medsim_annot.stats.alpha import alpha_from_coincidence, unit_coincidences
    from medsim_annot.stats.bootstrap import weights_from_indices

    enc = encode(r)
    o = unit_coincidences(enc.counts()).reshape(enc.n_items, -1)
    v = len(enc.values)

    def stat(t):
        return alpha_from_coincidence(t.reshape(-1, v, v), enc.values, "ordinal")

    ci = bootstrap_ci(o, stat, n_resamples=300, seed=3)
    est = krippendorff_alpha(r, "ordinal").value
    assert ci.method == "BCa" and ci.reason is None and ci.low < est < ci.high
    # same interval as scipy with the plain (dense-weights) statistic
    ref = bootstrap(
        (np.arange(enc.n_items),),
        lambda idx, axis=-1: stat(
            weights_from_indices(idx.reshape(-1, idx.shape[-1]), enc.n_items) @ o
        ).reshape(idx.shape[:-1]),
        vectorized=True,
        n_resamples=300,
        rng=np.random.default_rng(3),
    )
    assert ci.low == pytest.approx(ref.confidence_interval.low, abs=1e-12)
    assert ci.high == pytest.approx(ref.confidence_interval.high, abs=1e-12)


# ---- rater quality -------------------------------------------------------------------------------
def test_rater_quality():
    t = pd.date_range("2026-01-01", periods=30, freq="min", tz="UTC")
    rows = []
    for i in range(12):
        rows.append((f"p{i}", "A", 1.0, t[i]))  # A: 12 identical in a row
        rows.append((f"p{i}", "B", float(i % 2), t[i]))
    rows.append(("p0", "B", 0.0, t[20]))  # B rates p0 again: consistent
    rows.append(("p1", "B", 0.0, t[21]))  # ... and p1 again: inconsistent
    rows.append(("p2", "B", NAN, t[22]))
    h = pd.DataFrame(rows, columns=[C.PAIR_ID, C.ANNOTATOR, C.VALUE, C.RATED_AT])
    h[C.NO_DECISION] = h[C.VALUE].isna()
    runs = straight_lining(h)
    assert runs[[C.ANNOTATOR, "length"]].values.tolist() == [["A", 12]]
    cons = intra_rater_consistency(h, "nominal")
    assert cons[[C.ANNOTATOR, "n_duplicates"]].values.tolist() == [["B", 3]]
    assert cons["exact_agreement"].iloc[0] == pytest.approx(1 / 3)
    current = h.sort_values(C.RATED_AT).drop_duplicates([C.PAIR_ID, C.ANNOTATOR], keep="last")
    share = dont_know_share(current).set_index(C.ANNOTATOR)["dont_know_share"]
    assert share["A"] == 0 and share["B"] == pytest.approx(1 / 12)
    q = rater_quality(current, BINARY, history=h)
    per = q.per_annotator.set_index(C.ANNOTATOR)
    assert per.loc["A", "longest_run"] == 12 and per.loc["B", "n_duplicates"] == 3
    assert set(q.to_dict()) == {"per_annotator", "runs"}


def test_outlier_annotator_leave_one_out():
    rng = np.random.default_rng(4)
    truth = rng.integers(0, 7, 80).astype(float)
    m = np.column_stack(
        [truth + rng.normal(0, 0.5, 80) for _ in range(4)] + [rng.integers(0, 7, 80).astype(float)]
    )
    out = outlier_annotators(ratings_from_matrix(np.round(m), annotators="ABCDE"))
    assert out["outlier"].tolist() == [False, False, False, False, True]


def test_audit_without_groups():
    pairs, r = _audit_data()
    res = audit_labels(pairs, r, BINARY, by=[], bootstrap=50, seed=1)
    assert res.by_group.empty and res.to_dict()["by_group"] == []
    assert res.overall["n_items"] == 80 and len(res.overall["accuracy_ci"]) == 2


def test_alpha_by_group_matches_package():
    pairs, r = _audit_data()
    from medsim_annot.stats import alpha_by_group

    table = alpha_by_group(r, pairs, "nominal", by=[C.DATASET])
    assert table[C.DATASET].tolist() == ["d1", "d2"]
    for rec in table.to_dict(orient="records"):
        ids = pairs.loc[pairs[C.DATASET] == rec[C.DATASET], C.PAIR_ID]
        sub = r[r[C.PAIR_ID].isin(ids)]
        wide = sub.pivot(index=C.ANNOTATOR, columns=C.PAIR_ID, values=C.VALUE).to_numpy()
        ref = krippendorff.alpha(reliability_data=wide, level_of_measurement="nominal")
        assert rec["krippendorff_alpha"] == pytest.approx(ref, abs=1e-12)
