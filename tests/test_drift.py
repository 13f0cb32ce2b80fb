"""Quality over time and the drift alert (:mod:`medsim_annot.stats.drift`): a simulated
study where one doctor switches to random answers after 100 ratings is flagged within two
windows and no other doctor is; window figures by hand; bad input refused."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from data_schemas.errors import OptionError
from medsim_annot.stats import drift
from medsim_annot.stats.proportion import wilson_interval

DOCTORS = ["dr_a", "dr_b", "dr_c", "dr_d", "dr_e"]


def simulated_study(
    *, n_pairs: int = 400, switch_after: int = 100, drifter: str = "dr_c", seed: int = 39
) -> tuple[pd.DataFrame, dict[str, float]]:
    """Every doctor rates every pair on the 0-3 scale in their own random order; each answer
    is the pair's true value with probability 0.85, else a neighbouring value; 10% of the
    pairs are check pairs. *drifter* answers uniformly at random after *switch_after*
    ratings. One rating a minute from 2026-01-05 09:00 UTC."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 4, n_pairs)
    pair_ids = np.array([f"p{i:04d}" for i in range(n_pairs)])
    rows = []
    start = pd.Timestamp("2026-01-05 09:00", tz="UTC")
    for d in DOCTORS:
        order = rng.permutation(n_pairs)
        for k, i in enumerate(order):
            if d == drifter and k >= switch_after:
                v = int(rng.integers(0, 4))
            elif rng.random() < 0.85:
                v = int(truth[i])
            else:
                v = int(np.clip(truth[i] + rng.choice([-1, 1]), 0, 3))
            rows.append(
                {
                    "pair_id": pair_ids[i],
                    "annotator": d,
                    "value": float(v),
                    "rated_at": start + pd.Timedelta(minutes=k),
                    "elapsed_ms": float(rng.integers(2000, 9000)),
                }
            )
    checks = {pair_ids[i]: float(truth[i]) for i in range(0, n_pairs, 10)}
    return pd.DataFrame(rows), checks


def test_random_answers_after_100_ratings_are_flagged_within_two_windows():
    ratings, checks = simulated_study()
    windows = drift.quality_windows(ratings, window=50, answers=checks)
    alerts = drift.drift_alerts(windows, margin=0.15)
    assert drift.flagged(alerts) == ["dr_c"]
    first = alerts[alerts["metric"] == "majority_agreement"]["window"].min()
    # ratings 100-149 are window 2: flagged there (at the latest in window 3)
    assert first in (2, 3)
    row = alerts.iloc[0]
    assert "dr_c" in row["evidence"] and "below their first 2 window(s)" in row["evidence"]
    # the doctors who stay careful keep their agreement: no alert for them at any margin
    # down to 10%
    assert drift.flagged(drift.drift_alerts(windows, margin=0.10)) == ["dr_c"]


def test_daily_windows_flag_the_same_doctor():
    ratings, checks = simulated_study()
    # 120 ratings a day per doctor: one rating every 12 minutes
    k = ratings.groupby("annotator").cumcount()
    ratings = ratings.assign(
        rated_at=pd.Timestamp("2026-01-05", tz="UTC") + pd.to_timedelta(k * 12, unit="min")
    )
    windows = drift.quality_windows(ratings, by="day", answers=checks)
    assert windows.by == "day"
    assert drift.flagged(drift.drift_alerts(windows, margin=0.15, baseline_windows=1)) == ["dr_c"]


def test_window_figures_by_hand():
    t = pd.Timestamp("2026-02-01", tz="UTC")
    r = pd.DataFrame(
        {
            "pair_id": ["x", "y", "z", "x", "y", "z", "x", "y", "z"],
            "annotator": ["A", "A", "A", "B", "B", "B", "C", "C", "C"],
            "value": [1.0, 0.0, np.nan, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0],
            "rated_at": [t + pd.Timedelta(seconds=s) for s in range(9)],
            "elapsed_ms": [1000, 3000, 5000, 1, 1, 1, 1, 1, 1],
        }
    )
    w = drift.quality_windows(r, window=2, answers={"y": 1.0}).table
    a = w[w["annotator"] == "A"].reset_index(drop=True)
    assert a["n_ratings"].tolist() == [2, 1]
    # A's window 0: x (others B, C say 1: agree), y (others say 1, A says 0: disagree)
    assert a.loc[0, "n_with_majority"] == 2 and a.loc[0, "n_agree"] == 1
    assert a.loc[0, "n_checks"] == 1 and a.loc[0, "n_correct"] == 0
    assert a.loc[0, "median_seconds"] == 2.0
    # window 1: z, a don't know: no agreement figure, don't-know share 1
    assert a.loc[1, "dont_know_share"] == 1.0 and a.loc[1, "n_with_majority"] == 0
    lo, hi = wilson_interval(1, 2)
    assert (a.loc[0, "agreement_ci_low"], a.loc[0, "agreement_ci_high"]) == (lo, hi)


def test_imported_ratings_are_skipped_and_said():
    ratings, _ = simulated_study(n_pairs=60)
    ratings["source"] = np.where(ratings["annotator"] == "dr_a", "import", "app")
    windows = drift.quality_windows(ratings, window=20)
    assert "dr_a" not in set(windows.table["annotator"])
    assert windows.notes and "300 imported rating(s)" not in windows.notes[0]
    assert "60 imported rating(s)" in windows.notes[0]


@pytest.mark.parametrize("bad", [0, -5, 2.5, "50"])
def test_bad_window_is_refused(bad):
    ratings, _ = simulated_study(n_pairs=20)
    with pytest.raises(OptionError, match=r"ratings per quality window \(window\) must be"):
        drift.quality_windows(ratings, window=bad)


@pytest.mark.parametrize("bad", [0, 1, -0.1, 1.5, 15])
def test_margin_outside_0_1_is_refused(bad):
    ratings, _ = simulated_study(n_pairs=20)
    windows = drift.quality_windows(ratings, window=5)
    with pytest.raises(OptionError, match=r"drift margin \(drift_margin\) must be strictly"):
        drift.drift_alerts(windows, margin=bad)


def test_bad_window_kind_is_refused():
    ratings, _ = simulated_study(n_pairs=20)
    with pytest.raises(ValueError, match="by 'count' or 'day'"):
        drift.quality_windows(ratings, by="week")


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 30), st.integers(0, 10**6))
def test_windows_cover_every_rating_once(size, seed):
    ratings, _ = simulated_study(n_pairs=25, seed=seed % 1000)
    w = drift.quality_windows(ratings, window=size).table
    assert w["n_ratings"].sum() == len(ratings)
    assert (w.groupby("annotator")["n_ratings"].max() <= size).all()
    assert ((w["majority_agreement"].dropna() >= 0) & (w["majority_agreement"].dropna() <= 1)).all()
