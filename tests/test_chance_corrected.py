"""Gwet's AC1/AC2, Fleiss' kappa, Brennan-Prediger and Conger's kappa with their standard
errors: against irrCAC 0.4.4's values on Gwet's (2014) examples and EHR-RelA
(``tests/published.py``), statsmodels' ``fleiss_kappa`` on complete designs, scikit-learn's
Cohen's kappa (Conger's kappa of two raters), hand computations, and Hypothesis properties."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from data_schemas.ehr_rel import split_ehr_rel
from data_schemas.ratings import to_ratings_frame
from data_schemas.scales import RELATEDNESS_0_3
from medsim_annot.io import read_table
from medsim_annot.services import studies as studies_svc
from medsim_annot.services.demo import seed_demo
from medsim_annot.services.study_handle import open_study
from medsim_annot.stats import agreement_report, ratings_from_matrix
from medsim_annot.stats import chance_corrected as ccm
from medsim_annot.storage import get_engine
from tests import published as P


def _all(frame, domain) -> dict[str, ccm.Coefficient]:
    return {
        "ac1": ccm.gwet_ac(frame, value_domain=domain),
        "ac2_ordinal": ccm.gwet_ac(frame, weights="ordinal", value_domain=domain),
        "ac2_quadratic": ccm.gwet_ac(frame, weights="quadratic", value_domain=domain),
        "fleiss_kappa": ccm.fleiss_kappa(frame, value_domain=domain),
        "brennan_prediger": ccm.brennan_prediger(frame, value_domain=domain),
        "conger_kappa": ccm.conger_kappa(frame, value_domain=domain),
    }


def _matches(mine: ccm.Coefficient, ref) -> None:
    value, se, (lo, hi) = ref
    # irrCAC rounds to 5 decimals
    assert mine.value == pytest.approx(value, abs=6e-6)
    assert mine.se == pytest.approx(se, abs=6e-6)
    assert mine.ci_low == pytest.approx(lo, abs=6e-6)
    assert mine.ci_high == pytest.approx(hi, abs=6e-6)


CASES = {
    "gwet_4raters": (P.GWET_4RATERS_DATA, P.GWET_4RATERS_IRRCAC, [1, 2, 3, 4, 5]),
    "gwet_5observers": (P.GWET_5OBSERVERS_DATA, P.GWET_5OBSERVERS_IRRCAC, [0, 1, 2, 3]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_gwet_examples_equal_irrcac(case):
    data, ref, domain = CASES[case]
    mine = _all(ratings_from_matrix(data.value), domain)
    for name, expected in ref.value.items():
        _matches(mine[name], expected)


def test_ehr_rel_a_equals_irrcac(ehr_rel_a):
    _, ratings = split_ehr_rel(read_table(ehr_rel_a), str(ehr_rel_a))
    frame = to_ratings_frame(ratings, RELATEDNESS_0_3)
    mine = _all(frame, [0, 1, 2, 3])
    for name, expected in P.EHR_REL_A_IRRCAC.value.items():
        _matches(mine[name], expected)
    rep = agreement_report(frame, RELATEDNESS_0_3)
    cc = rep.chance_corrected
    assert cc.ac2 == mine["ac2_ordinal"].value  # the 0-3 scale is ordinal
    assert rep.to_dict()["chance_corrected"]["fleiss_kappa"] == mine["fleiss_kappa"].value
    assert cc.note and "prevalence index" in cc.note


@pytest.mark.parametrize("name", ["demo-binary", "demo-relatedness"])
def test_demo_studies_equal_irrcac(db_url, name):
    seed_demo(engine=get_engine())
    ratings, scale = studies_svc.ratings_frame(open_study(name))
    domain = [0, 1] if name == "demo-binary" else [0, 1, 2, 3]
    mine = _all(ratings, domain)
    for coef, expected in P.DEMO_IRRCAC.value[name].items():
        _matches(mine[coef], expected)
    rep = agreement_report(ratings, scale)  # the report takes the scale's codes too
    assert rep.chance_corrected.ac1 == mine["ac1"].value


def test_hand_computed_two_raters():
    # 2 raters x 4 items, 3 agreements: pa = 3/4, pi_1 = 2.5/4 = 0.625
    frame = ratings_from_matrix([[1, 1], [0, 0], [1, 1], [1, 0]])
    # AC1: pe = 2 * 0.625 * 0.375 / (2 * 1) = 0.46875 -> 0.28125 / 0.53125 = 9/17
    assert ccm.gwet_ac(frame).value == pytest.approx(9 / 17, abs=1e-12)
    # Fleiss: pe = 0.625^2 + 0.375^2 = 0.53125 -> 0.21875 / 0.46875 = 7/15
    assert ccm.fleiss_kappa(frame).value == pytest.approx(7 / 15, abs=1e-12)
    # Brennan-Prediger: pe = 1/2 -> 0.5
    assert ccm.brennan_prediger(frame).value == pytest.approx(0.5, abs=1e-12)
    # Conger: rater marginals (0.75, 0.5) -> pe = 0.75*0.5 + 0.25*0.5 = 0.5 -> 0.5 (= Cohen)
    assert ccm.conger_kappa(frame).value == pytest.approx(0.5, abs=1e-12)
    # Byrt et al.: PI = |a - d| / n = |2 - 1| / 4, BI = |b - c| / n = |1 - 0| / 4
    assert ccm.prevalence_index(frame) == pytest.approx(0.25)
    assert ccm.bias_index(frame) == pytest.approx(0.25)


def test_conger_of_two_raters_is_cohen():
    rng = np.random.default_rng(3)
    m = rng.integers(0, 4, size=(80, 2)).astype(float)
    m[:40, 1] = m[:40, 0]
    got = ccm.conger_kappa(ratings_from_matrix(m)).value
    assert got == pytest.approx(cohen_kappa_score(m[:, 0], m[:, 1]), abs=1e-12)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_complete_designs_equal_statsmodels(seed):
    rng = np.random.default_rng(seed)
    m = rng.integers(0, 4, size=(50, 4)).astype(float)
    m[:25, 1:] = m[:25, :1]
    frame = ratings_from_matrix(m)
    counts = np.stack([(m == v).sum(axis=1) for v in range(4)], axis=1)
    fk = ccm.fleiss_kappa(frame, value_domain=[0, 1, 2, 3])
    bp = ccm.brennan_prediger(frame, value_domain=[0, 1, 2, 3])
    assert fk.value == pytest.approx(sm_fleiss_kappa(counts, method="fleiss"), abs=1e-12)
    assert bp.value == pytest.approx(sm_fleiss_kappa(counts, method="randolph"), abs=1e-12)
    # the written-out formula (used with missing ratings) gives the same on complete data
    tally = ccm._tally(counts.astype(float), np.eye(4))
    assert (tally.pa - (tally.pi**2).sum()) / (1 - (tally.pi**2).sum()) == pytest.approx(
        fk.value, abs=1e-12
    )


def test_degenerate_inputs_have_reasons():
    one = ratings_from_matrix([[1.0], [2.0]])
    assert np.isnan(ccm.gwet_ac(one).value) and ccm.gwet_ac(one).reason
    same = ratings_from_matrix([[1, 1], [1, 1]])
    assert np.isnan(ccm.fleiss_kappa(same).value)
    assert "chance agreement is 1" in ccm.fleiss_kappa(same).reason
    # AC1 on the scale's domain: perfect agreement on one category is still 1
    assert ccm.gwet_ac(same, value_domain=[0, 1]).value == 1.0
    assert ccm.conger_kappa(one).reason == "one annotator only"


def test_paradox_sentence_only_when_prevalence_explains_it():
    prevalent = ratings_from_matrix([[1, 1], [1, 1], [1, 1], [1, 0]] * 5)
    assert ccm.chance_corrected(prevalent).note is not None
    balanced = ratings_from_matrix([[1, 1], [0, 0], [1, 0], [0, 1]] * 5)
    assert ccm.chance_corrected(balanced).note is None


# ---- properties ------------------------------------------------------------------------------
def _matrices(q: int = 4):
    return st.integers(2, 12).flatmap(
        lambda n: st.integers(2, 5).flatmap(
            lambda r: st.lists(
                st.lists(st.one_of(st.none(), st.integers(0, q - 1)), min_size=r, max_size=r),
                min_size=n,
                max_size=n,
            )
        )
    )


def _frame(rows) -> pd.DataFrame:
    m = np.array([[np.nan if v is None else v for v in row] for row in rows], dtype=float)
    return ratings_from_matrix(m)


DOMAIN = [0, 1, 2, 3]


@settings(max_examples=60, deadline=None)
@given(_matrices())
def test_bounds(rows):
    for c in _all(_frame(rows), DOMAIN).values():
        if c.reason:
            assert np.isnan(c.value)
            continue
        assert c.value <= 1 + 1e-12
        if not np.isnan(c.se):
            assert c.ci_low <= c.value + 1e-12 and c.ci_high <= 1.0


@settings(max_examples=60, deadline=None)
@given(_matrices(), st.randoms(use_true_random=False))
def test_permuting_raters_and_items_changes_nothing(rows, rnd):
    frame = _frame(rows)
    before = _all(frame, DOMAIN)
    names = sorted(frame["annotator"].unique())
    shuffled = names[:]
    rnd.shuffle(shuffled)
    renamed = frame.assign(annotator=frame["annotator"].map(dict(zip(names, shuffled))))
    items = sorted(frame["pair_id"].unique())
    other = items[:]
    rnd.shuffle(other)
    renamed = renamed.assign(pair_id=renamed["pair_id"].map(dict(zip(items, other))))
    renamed = renamed.sample(frac=1.0, random_state=rnd.randint(0, 10**6))
    after = _all(renamed, DOMAIN)
    for k, c in before.items():
        for field in ("value", "se", "ci_low", "ci_high"):
            a, b = getattr(c, field), getattr(after[k], field)
            assert (np.isnan(a) and np.isnan(b)) or a == pytest.approx(b, abs=1e-10), (k, field)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=2, max_size=15), st.integers(2, 5))
def test_perfect_agreement_gives_one(values, r):
    frame = ratings_from_matrix(np.repeat(np.array(values, dtype=float)[:, None], r, axis=1))
    got = _all(frame, DOMAIN)
    for k in ("ac1", "ac2_ordinal", "ac2_quadratic", "brennan_prediger"):
        assert got[k].value == pytest.approx(1.0)
    if len(set(values)) > 1:  # kappas need two categories in use
        assert got["fleiss_kappa"].value == pytest.approx(1.0)
        assert got["conger_kappa"].value == pytest.approx(1.0)
