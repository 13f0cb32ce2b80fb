"""Invariants of the statistics (hypothesis)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from data_schemas import columns as C
from data_schemas.scales import BINARY
from medsim_annot.stats import (
    cohen_kappa,
    confusion_scores,
    intraclass_corr,
    kendall_w,
    krippendorff_alpha,
    majority_vote,
    pairwise_agreement,
    ratings_from_matrix,
    simlex_agreement,
)
from medsim_annot.stats.audit import audit_labels

LEVELS = ["nominal", "ordinal", "interval", "ratio"]


@st.composite
def matrices(
    draw, min_items=3, max_items=12, min_raters=2, max_raters=5, values=(1, 2, 3, 4), missing=True
):
    n = draw(st.integers(min_items, max_items))
    k = draw(st.integers(min_raters, max_raters))
    cells = st.sampled_from(list(values) + ([None] if missing else []))
    rows = draw(st.lists(st.lists(cells, min_size=k, max_size=k), min_size=n, max_size=n))
    return np.array([[np.nan if v is None else float(v) for v in r] for r in rows])


def _same(a: float, b: float) -> bool:
    return (np.isnan(a) and np.isnan(b)) or abs(a - b) < 1e-9


@given(st.integers(2, 10), st.integers(2, 5), st.sampled_from(LEVELS), st.data())
def test_perfect_agreement_gives_one(n, k, level, data):
    col = data.draw(st.lists(st.sampled_from([1.0, 2.0, 3.0]), min_size=n, max_size=n))
    assume(len(set(col)) > 1)
    m = np.repeat(np.array(col)[:, None], k, axis=1)
    r = ratings_from_matrix(m)
    assert krippendorff_alpha(r, level).value == pytest.approx(1.0)
    pw = pairwise_agreement(r, level)
    assert np.allclose(
        pw[
            ["krippendorff_alpha", "cohen_kappa", "cohen_kappa_quadratic", "spearman_rho"]
        ].to_numpy(),
        1.0,
    )
    assert simlex_agreement(r).iaa_1 == pytest.approx(1.0)
    assert kendall_w(r).value == pytest.approx(1.0)
    assert pytest.approx(1.0) == intraclass_corr(r).C1


@given(matrices(), st.sampled_from(LEVELS), st.randoms(use_true_random=False))
def test_order_of_items_and_annotators_irrelevant(m, level, rnd):
    r = ratings_from_matrix(m, annotators=[f"a{j}" for j in range(m.shape[1])])
    shuffled = r.sample(frac=1.0, random_state=rnd.randint(0, 10_000)).reset_index(drop=True)
    assert _same(krippendorff_alpha(r, level).value, krippendorff_alpha(shuffled, level).value)
    # permuting annotator *columns* (renaming) leaves alpha unchanged as well
    perm = list(range(m.shape[1]))
    rnd.shuffle(perm)
    renamed = ratings_from_matrix(m[:, perm], annotators=[f"a{j}" for j in range(m.shape[1])])
    assert _same(krippendorff_alpha(r, level).value, krippendorff_alpha(renamed, level).value)
    a, b = majority_vote(r), majority_vote(shuffled)
    assert a.equals(b)
    pa = pairwise_agreement(r, level)
    pb = pairwise_agreement(shuffled, level)
    pd.testing.assert_frame_equal(pa, pb)


@given(matrices(values=(0, 1, 2)), st.permutations([5.0, 7.0, 11.0]))
def test_nominal_alpha_invariant_to_relabelling(m, labels):
    relabelled = m.copy()
    for old, new in zip((0.0, 1.0, 2.0), labels):
        relabelled[m == old] = new
    a = krippendorff_alpha(ratings_from_matrix(m), "nominal").value
    b = krippendorff_alpha(ratings_from_matrix(relabelled), "nominal").value
    assert _same(a, b)


@given(matrices(min_raters=2, max_raters=2, values=(0, 1, 2, 3)))
def test_kappa_symmetric(m):
    for weights in (None, "quadratic"):
        ab = cohen_kappa(m[:, 0], m[:, 1], weights=weights, labels=[0, 1, 2, 3]).value
        ba = cohen_kappa(m[:, 1], m[:, 0], weights=weights, labels=[0, 1, 2, 3]).value
        assert _same(ab, ba)


@given(matrices(), st.sampled_from(LEVELS), st.sampled_from([1.0, 2.0, 3.0, 4.0]))
def test_never_pairable_item_changes_nothing(m, level, value):
    r = ratings_from_matrix(m)
    extra = pd.DataFrame(
        {
            C.PAIR_ID: ["zz-single"],
            C.ANNOTATOR: [r[C.ANNOTATOR].iloc[0] if len(r) else "r1"],
            C.VALUE: [value],
            C.NO_DECISION: [False],
        }
    )
    r2 = pd.concat([r, extra], ignore_index=True)
    assert _same(krippendorff_alpha(r, level).value, krippendorff_alpha(r2, level).value)


@given(
    st.integers(1, 7),
    st.sampled_from([0.0, 1.0, 2.0, 3.0]),
    st.sampled_from(["strict", "decisive"]),
)
def test_majority_of_identical_ratings_is_that_rating(k, value, rule):
    r = ratings_from_matrix(np.full((3, k), value))
    assert (majority_vote(r, rule=rule)["majority"] == value).all()
    assert (majority_vote(r, numeric=True)["median"] == value).all()


@given(matrices(values=(0, 1), max_raters=3, min_items=1), st.data())
def test_precision_recall_in_unit_interval(m, data):
    r = ratings_from_matrix(m)
    ids = sorted(set(r[C.PAIR_ID])) or ["i1"]
    labels = data.draw(st.lists(st.sampled_from([0, 1]), min_size=len(ids), max_size=len(ids)))
    pairs = pd.DataFrame({C.PAIR_ID: ids, C.AUTO_LABEL: labels})
    res = audit_labels(pairs, r, BINARY)
    for key in ("accuracy", "precision", "recall", "f1", "nan_fraction"):
        v = res.overall[key]
        assert np.isnan(v) or 0.0 <= v <= 1.0
    assert res.overall["tp"] + res.overall["fp"] + res.overall["fn"] + res.overall["tn"] <= len(ids)


@given(st.integers(0, 50), st.integers(0, 50), st.integers(0, 50), st.integers(0, 50))
def test_confusion_scores_bounded(tp, fp, fn, tn):
    s = confusion_scores(tp, fp, fn, tn)
    for v in s.values():
        assert np.isnan(v) or 0.0 <= float(v) <= 1.0


@given(matrices(min_raters=2, max_raters=2, values=(0, 1, 2, 3), min_items=2, max_items=30))
def test_kappa_equals_sklearn(m):
    from sklearn.metrics import cohen_kappa_score

    both = ~np.isnan(m).any(axis=1)
    x, y = m[both, 0], m[both, 1]
    for weights in (None, "linear", "quadratic"):
        mine = cohen_kappa(m[:, 0], m[:, 1], weights=weights, labels=[0, 1, 2, 3])
        if mine.reason:
            assume(False)
        ref = cohen_kappa_score(x, y, labels=[0, 1, 2, 3], weights=weights)
        assert mine.value == pytest.approx(ref, abs=1e-12)


@given(matrices(min_items=2, max_items=15, values=(1, 2, 3, 4, 5)), st.sampled_from(LEVELS))
def test_alpha_on_random_matrices_matches_the_krippendorff_package(m, level):
    """Random reliability data with missing values: our alpha from a ratings frame (encoding,
    pairable units, degenerate cases) and the one-pass grouped alpha (our own coincidence
    arithmetic) both equal ``krippendorff.alpha`` on the raw matrix."""
    import krippendorff

    from medsim_annot.stats.alpha import grouped_alpha

    reliability = m.T  # annotators x units, Krippendorff's orientation
    ours = krippendorff_alpha(ratings_from_matrix(m), level)
    decisive = ~np.isnan(m)
    pairable = decisive.sum(axis=1) >= 2
    observed = np.unique(m[pairable][decisive[pairable]])
    if not pairable.any() or len(observed) < 2:
        assert np.isnan(ours.value) and ours.reason  # undefined, and says why
        return
    theirs = krippendorff.alpha(reliability_data=reliability, level_of_measurement=level)
    assert ours.value == pytest.approx(theirs, abs=1e-9)
    assert ours.n_items == int(pairable.sum())
    values = np.unique(m[decisive])
    counts = np.stack([(m == v).sum(axis=1) for v in values], axis=1).astype(float)
    grouped = grouped_alpha(counts, np.zeros(len(m), dtype=int), 1, values, level)
    assert grouped[0] == pytest.approx(theirs, abs=1e-9)


@given(
    st.lists(st.integers(0, 12), min_size=2, max_size=60),
    st.lists(st.integers(0, 12), min_size=2, max_size=60),
    st.sampled_from([1.0, 0.5, 1e-3]),
)
def test_spearman_rho_is_scipy_spearmanr_value_for_value(a, b, step):
    """Spearman's rho ranks rating codes by counting (no sort); the value is scipy's
    ``spearmanr``, bit for bit, on codes and on non-integer values (which go to scipy's
    ``rankdata``), and the mid-ranks are ``rankdata``'s."""
    from scipy.stats import rankdata, spearmanr

    from medsim_annot.stats.pairwise import midranks, spearman_rho

    n = min(len(a), len(b))
    x, y = np.array(a[:n], dtype=float) * step, np.array(b[:n], dtype=float)
    assert midranks(x).tolist() == rankdata(x).tolist()
    assert midranks(y).tolist() == rankdata(y).tolist()
    assume(len(set(x)) > 1 and len(set(y)) > 1)
    got = spearman_rho(x, y).value
    assert got == float(spearmanr(x, y)[0])
