"""Every figure of ../shared/reference/stats-reference.md, reproduced."""

from __future__ import annotations

import krippendorff
import numpy as np
import pingouin as pg
import pytest

from data_schemas.ehr_rel import split_ehr_rel
from data_schemas.ratings import to_ratings_frame
from data_schemas.scales import RELATEDNESS_0_3
from medsim_annot.io import read_table
from medsim_annot.stats import (
    agreement_report,
    intraclass_corr,
    kendall_w,
    krippendorff_alpha,
    ratings_from_matrix,
)
from medsim_annot.stats._frame import encode
from medsim_annot.stats.alpha import alpha_from_coincidence, grouped_alpha, unit_coincidences

NAN = np.nan
# Krippendorff (2011): observers A-D (rows) x units 1-12 (columns).
K2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
)
K2011_ALPHA = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}
SF = np.array(
    [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]],
    dtype=float,
)


@pytest.mark.parametrize("level", list(K2011_ALPHA))
def test_krippendorff_2011_all_levels(level):
    frame = ratings_from_matrix(K2011.T, annotators="ABCD")
    assert round(krippendorff_alpha(frame, level).value, 3) == K2011_ALPHA[level]
    assert round(krippendorff_alpha(K2011, level).value, 3) == K2011_ALPHA[level]


@pytest.mark.parametrize("level", list(K2011_ALPHA))
def test_krippendorff_2011_unit_12_not_pairable(level):
    without = krippendorff_alpha(K2011[:, :11], level)
    with_ = krippendorff_alpha(K2011, level)
    assert with_.value == pytest.approx(without.value, abs=1e-15)
    assert with_.n_items == without.n_items == 11  # unit 12 is not pairable


@pytest.mark.parametrize("level", list(K2011_ALPHA))
def test_vectorised_alpha_matches_package(level):
    counts = encode(ratings_from_matrix(K2011.T)).counts()
    values = np.unique(K2011[~np.isnan(K2011)])
    mine = alpha_from_coincidence(unit_coincidences(counts).sum(axis=0), values, level)
    ref = krippendorff.alpha(reliability_data=K2011, level_of_measurement=level)
    assert abs(mine - ref) < 1e-12


def test_shrout_fleiss_icc():
    res = intraclass_corr(ratings_from_matrix(SF))
    assert round(res.C1, 3) == 0.715
    assert round(res.Ck, 3) == 0.909
    assert res.k == 4 and res.n_items == 6 and res.reason is None


# ---- EHR-RelA, Schulz et al. (2020) --------------------------------------------------------------
TABLE2_ALPHA = {
    ("A", "B"): 0.77,
    ("A", "C"): 0.69,
    ("A", "D"): 0.70,
    ("A", "E"): 0.52,
    ("B", "C"): 0.65,
    ("B", "D"): 0.73,
    ("B", "E"): 0.40,
    ("C", "D"): 0.68,
    ("C", "E"): 0.57,
    ("D", "E"): 0.50,
}
TABLE2_MEANS = {
    "A": (0.67, 0.74, 0.70),
    "B": (0.64, 0.70, 0.69),
    "C": (0.65, 0.72, 0.67),
    "D": (0.65, 0.69, 0.68),
    "E": (0.50, 0.61, 0.60),
}


@pytest.fixture(scope="module")
def ehr_a(ehr_rel_a):
    _, ratings = split_ehr_rel(read_table(ehr_rel_a), str(ehr_rel_a))
    return to_ratings_frame(ratings, RELATEDNESS_0_3)


@pytest.fixture(scope="module")
def ehr_a_report(ehr_a):
    return agreement_report(ehr_a, RELATEDNESS_0_3)


def test_ehr_rel_a_shape(ehr_a_report):
    d = ehr_a_report.to_dict()
    assert (d["n_items"], d["n_annotators"], d["n_ratings"], d["level"]) == (111, 5, 555, "ordinal")


def test_ehr_rel_a_table2_pairwise_alpha(ehr_a_report):
    got = {
        (r["annotator_a"], r["annotator_b"]): round(r["krippendorff_alpha"], 2)
        for r in ehr_a_report.to_dict()["pairwise"]
    }
    assert got == TABLE2_ALPHA


def test_ehr_rel_a_table2_per_doctor_means(ehr_a_report):
    got = {
        r["annotator"]: (
            round(r["krippendorff_alpha"], 2),
            round(r["cohen_kappa_quadratic"], 2),
            round(r["spearman_rho"], 2),
        )
        for r in ehr_a_report.to_dict()["per_annotator"]
    }
    assert got == TABLE2_MEANS


def test_ehr_rel_a_table3(ehr_a_report):
    d = ehr_a_report.to_dict()
    assert round(d["krippendorff_alpha"], 2) == 0.64
    assert round(d["mean_pairwise_spearman"], 2) == 0.67
    assert round(d["icc"]["C1"], 2) == 0.72
    assert round(d["icc"]["Ck"], 2) == 0.93
    assert round(d["kendall_w"], 2) == 0.73


def test_ehr_rel_a_kendall_w_needs_tie_correction(ehr_a):
    assert round(kendall_w(ehr_a, correct_ties=False).value, 2) == 0.44
    assert round(kendall_w(ehr_a).value, 2) == 0.73


def test_ehr_rel_a_icc_matches_pingouin_directly(ehr_a):
    wide = ehr_a.pivot(index="pair_id", columns="annotator", values="value")
    long = wide.reset_index().melt(id_vars="pair_id", var_name="rater", value_name="v")
    table = pg.intraclass_corr(long, "pair_id", "rater", "v").set_index("Type")["ICC"]
    res = intraclass_corr(ehr_a)
    assert pytest.approx(table["ICC(C,1)"], abs=1e-12) == res.C1
    assert res.Ck == pytest.approx(table["ICC(C,k)"], abs=1e-12)


def test_ehr_rel_a_human_upper_bound_plausible(ehr_a_report):
    hub = ehr_a_report.to_dict()["human_upper_bound"]
    # Inclusive >= exclusive (the annotator's own rating is in the mean), both below 1 and
    # above the mean pairwise rho; EHR-RelB reports 0.88 / 0.70.
    assert 0.67 < hub["exclusive"] <= hub["inclusive"] < 1.0
    assert round(hub["inclusive"], 2) == 0.91 and round(hub["exclusive"], 2) == 0.82
    per = ehr_a_report.to_dict()["per_annotator"]
    # IAA-1 equals the mean pairwise rho in a complete design.
    for r in per:
        assert r["iaa_1"] == pytest.approx(r["spearman_rho"], abs=1e-12)
    assert np.mean([r["iaa_1"] for r in per]) == pytest.approx(0.6686, abs=1e-4)


def test_grouped_and_bootstrap_alpha_match_package_to_1e_12(ehr_a):
    enc = encode(ehr_a)
    counts = enc.counts()
    rng = np.random.default_rng(3)
    group = rng.integers(0, 4, enc.n_items)
    mat = enc.matrix().T
    for level in K2011_ALPHA:
        got = grouped_alpha(counts, group, 4, enc.values, level)
        for g in range(4):
            ref = krippendorff.alpha(
                reliability_data=mat[:, group == g],
                level_of_measurement=level,
                value_domain=enc.values,
            )
            assert abs(got[g] - ref) < 1e-12
        # a bootstrap resample: weights = draw counts
        idx = rng.integers(0, enc.n_items, enc.n_items)
        w = np.bincount(idx, minlength=enc.n_items).astype(float)
        o = w @ unit_coincidences(counts).reshape(enc.n_items, -1)
        mine = alpha_from_coincidence(o.reshape(len(enc.values), -1), enc.values, level)
        ref = krippendorff.alpha(
            reliability_data=mat[:, idx], level_of_measurement=level, value_domain=enc.values
        )
        assert abs(mine - ref) < 1e-12
