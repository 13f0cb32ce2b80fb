"""Published statistics reproduced from their published data: the values in
``tests/published.py`` (each cited, printed or marked derived), plus regression snapshots
from ``tests/snapshots.py`` for figures no paper prints. Figures of the seed papers that our
data cannot reach are listed, with the reason, in ``tests/published.py``."""

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
from tests import published as P
from tests import snapshots as S

K2011 = P.K2011_DATA.value
K2011_ALPHA = P.K2011_ALPHA.value
SF = P.SF1979_DATA.value


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
    want = P.SF1979_ICC3.value
    assert (round(res.C1, 2), round(res.Ck, 2)) == (want["C1_printed"], want["Ck_printed"])
    assert (round(res.C1, 3), round(res.Ck, 3)) == (want["C1_derived"], want["Ck_derived"])
    assert res.k == 4 and res.n_items == 6 and res.reason is None


# ---- EHR-RelA, Schulz et al. (2020) --------------------------------------------------------------
TABLE2_ALPHA = P.EHR_REL_A_PAIRWISE_ALPHA.value
TABLE2_MEANS = P.EHR_REL_A_PER_DOCTOR.value
TABLE3 = P.EHR_REL_A_TABLE3.value


@pytest.fixture(scope="module")
def ehr_a(ehr_rel_a):
    _, ratings = split_ehr_rel(read_table(ehr_rel_a), str(ehr_rel_a))
    return to_ratings_frame(ratings, RELATEDNESS_0_3)


@pytest.fixture(scope="module")
def ehr_a_report(ehr_a):
    return agreement_report(ehr_a, RELATEDNESS_0_3)


def test_ehr_rel_a_shape(ehr_a_report):
    d = ehr_a_report.to_dict()
    shape = P.EHR_REL_A_SHAPE.value
    assert (d["n_items"], d["n_annotators"]) == (shape["items"], shape["annotators"])
    assert (d["n_ratings"], d["level"]) == (shape["items"] * shape["annotators"], "ordinal")


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
    assert round(d["krippendorff_alpha"], 2) == TABLE3["alpha"]
    assert round(d["mean_pairwise_spearman"], 2) == TABLE3["mean_rho"]
    assert round(d["icc"]["C1"], 2) == TABLE3["icc_c1"]
    assert round(d["icc"]["Ck"], 2) == TABLE3["icc_ck"]
    assert round(d["kendall_w"], 2) == TABLE3["kendall_w"]


def test_ehr_rel_a_kendall_w_needs_tie_correction(ehr_a):
    uncorrected = S.SNAPSHOT_EHR_REL_A_KENDALL_W_UNCORRECTED
    assert round(kendall_w(ehr_a, correct_ties=False).value, 2) == uncorrected
    assert round(kendall_w(ehr_a).value, 2) == TABLE3["kendall_w"]


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
    # above the published mean pairwise rho. The paper gives the HUB of EHR-RelB only
    # (published.EHR_REL_B_HUMAN_UPPER_BOUND); the EHR-RelA figures are snapshots.
    assert TABLE3["mean_rho"] < hub["exclusive"] <= hub["inclusive"] < 1.0
    snap = S.SNAPSHOT_EHR_REL_A_HUMAN_UPPER_BOUND
    assert (round(hub["inclusive"], 2), round(hub["exclusive"], 2)) == (
        snap["inclusive"],
        snap["exclusive"],
    )
    per = ehr_a_report.to_dict()["per_annotator"]
    # IAA-1 equals the mean pairwise rho in a complete design.
    for r in per:
        assert r["iaa_1"] == pytest.approx(r["spearman_rho"], abs=1e-12)
    mean_iaa_1 = np.mean([r["iaa_1"] for r in per])
    assert mean_iaa_1 == pytest.approx(S.SNAPSHOT_EHR_REL_A_MEAN_IAA_1, abs=1e-4)
    # ... and the published mean rho is the mean of the per-doctor mean rhos.
    assert round(mean_iaa_1, 2) == TABLE3["mean_rho"]


def test_ehr_rel_a_snapshot_figures_by_an_independent_computation(ehr_a, ehr_a_report):
    """The figures pinned as snapshots (no paper prints them) computed apart from
    medsim_annot.stats: Spearman rhos by scipy on the items x doctors matrix (EHR-RelA is a
    complete design), Kendall's W without the tie correction by hand (average ranks,
    W = 12 S / (m^2 (n^3 - n)), Kendall & Babington Smith 1939)."""
    from scipy.stats import rankdata, spearmanr

    wide = ehr_a.pivot(index="pair_id", columns="annotator", values="value")
    assert not wide.isna().any().any()
    m = wide.to_numpy(dtype=float)
    k = m.shape[1]
    mean_all = m.mean(axis=1)
    incl = [spearmanr(m[:, a], mean_all)[0] for a in range(k)]
    excl = [spearmanr(m[:, a], np.delete(m, a, axis=1).mean(axis=1))[0] for a in range(k)]
    iaa_1 = np.mean(
        [np.mean([spearmanr(m[:, a], m[:, b])[0] for b in range(k) if b != a]) for a in range(k)]
    )
    hub = ehr_a_report.to_dict()["human_upper_bound"]
    assert hub["inclusive"] == pytest.approx(max(incl), abs=1e-12)
    assert hub["exclusive"] == pytest.approx(max(excl), abs=1e-12)
    per = ehr_a_report.to_dict()["per_annotator"]
    assert np.mean([r["iaa_1"] for r in per]) == pytest.approx(iaa_1, abs=1e-12)
    ranks = np.column_stack([rankdata(m[:, a]) for a in range(k)])  # per doctor, over items
    n = m.shape[0]
    totals = ranks.sum(axis=1)
    w = 12 * ((totals - totals.mean()) ** 2).sum() / (k**2 * (n**3 - n))
    assert kendall_w(ehr_a, correct_ties=False).value == pytest.approx(w, abs=1e-12)


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


def test_published_values_are_cited_and_written_once():
    from pathlib import Path

    cited = [v for v in vars(P).values() if isinstance(v, P.Published)]
    assert len(cited) >= 10
    for v in cited:
        assert v.source.citation and v.where, v
        assert any(w in v.where for w in ("Table", "section", "worked example")), v.where
    # The EHR-RelA Table 2 row and the snapshots live in one module each.
    ab = P.EHR_REL_A_PAIRWISE_ALPHA.value[("A", "B")]
    needles = (f'("A", "B"): {ab:.2f}', f"{S.SNAPSHOT_EHR_REL_A_MEAN_IAA_1:.4f}")
    for path in Path(__file__).parent.glob("*.py"):
        if path.name in ("published.py", "snapshots.py"):
            continue
        text = path.read_text(encoding="utf-8")
        for needle in needles:
            assert needle not in text, (path.name, needle)
