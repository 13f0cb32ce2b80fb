"""The ICC's closed form (used beyond ``PINGOUIN_MAX`` ratings, where pingouin's long-format
ANOVA is the dashboard's cost) equals pingouin, the reference, to 1e-9: complete matrices of
any size, integer and graded ratings, and through :func:`intraclass_corr` on both sides of
the switch."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pingouin as pg
import pytest
from hypothesis import given
from hypothesis import strategies as st

from medsim_annot.stats import icc as icc_mod
from medsim_annot.stats import ratings_from_matrix


def _pingouin(m: np.ndarray) -> tuple[float, float]:
    n, k = m.shape
    long = pd.DataFrame(
        {"item": np.repeat(np.arange(n), k), "rater": np.tile(np.arange(k), n), "value": m.ravel()}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        t = pg.intraclass_corr(long, targets="item", raters="rater", ratings="value")
    icc = dict(zip(t["Type"], t["ICC"], strict=True))
    return float(icc.get("ICC(C,1)", icc.get("ICC3"))), float(icc.get("ICC(C,k)", icc.get("ICC3k")))


@given(
    n=st.integers(3, 40),
    k=st.integers(2, 6),
    levels=st.sampled_from([2, 4, 7]),
    seed=st.integers(0, 2**32 - 1),
)
def test_closed_form_equals_pingouin(n, k, levels, seed):
    rng = np.random.default_rng(seed)
    m = (rng.integers(0, levels, (n, 1)) + rng.integers(0, 2, (n, k))).astype(float)
    closed = icc_mod.closed_form(m)
    if closed is None:
        return
    ref = _pingouin(m)
    assert closed == pytest.approx(ref, abs=1e-9)


def test_intraclass_corr_on_both_sides_of_the_switch(monkeypatch):
    """The same ratings give the same ICC through pingouin and through the closed form."""
    rng = np.random.default_rng(11)
    truth = rng.integers(0, 4, 400)
    m = np.clip(truth[:, None] + rng.integers(-1, 2, (400, 3)), 0, 3)
    ratings = ratings_from_matrix(m.tolist())
    by_pingouin = icc_mod.intraclass_corr(ratings)
    monkeypatch.setattr(icc_mod, "PINGOUIN_MAX", 10)
    by_formula = icc_mod.intraclass_corr(ratings)
    assert abs(by_formula.C1 - by_pingouin.C1) <= 1e-9
    assert abs(by_formula.Ck - by_pingouin.Ck) <= 1e-9
    assert (by_formula.n_items, by_formula.k) == (by_pingouin.n_items, by_pingouin.k)
