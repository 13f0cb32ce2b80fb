"""The majority of the other raters behind quality over time (computed on integer codes for
speed) equals its definition computed by hand, rating by rating: the current rating of each
other doctor on the pair is their latest (by time, then as given), and the majority is a
value held by more than half of their decisive current ratings."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from medsim_annot.stats.drift import _others_majority


def _by_hand(r: pd.DataFrame) -> list[float]:
    rows = list(r.itertuples(index=False))
    timed = "rated_at" in r.columns
    out = []
    for row in rows:
        latest: dict[str, tuple] = {}
        for o, other in enumerate(rows):
            if other.pair_id != row.pair_id or other.annotator == row.annotator:
                continue
            key = (other.rated_at, o) if timed else (o,)
            if other.annotator not in latest or key > latest[other.annotator][0]:
                latest[other.annotator] = (key, other.value)
        decisive = [v for _, v in latest.values() if not np.isnan(v)]
        best = np.nan
        for v in sorted(set(decisive)):
            if decisive.count(v) * 2 > len(decisive):
                best = v
        out.append(best)
    return out


rating = st.tuples(
    st.sampled_from(["p1", "p2", "p3"]),
    st.sampled_from(["ann", "bob", "cat", "dan"]),
    st.sampled_from([0.0, 1.0, 2.0, np.nan]),
    st.integers(0, 5),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(rating, min_size=1, max_size=25), st.booleans())
def test_the_majority_of_the_others_is_its_definition(rows, timed):
    r = pd.DataFrame(rows, columns=["pair_id", "annotator", "value", "second"])
    r["rated_at"] = pd.Timestamp("2026-01-01", tz="UTC") + pd.to_timedelta(r["second"], unit="s")
    r = r.drop(columns="second" if timed else ["second", "rated_at"])
    got = _others_majority(r)
    assert np.array_equal(got, np.array(_by_hand(r), dtype=float), equal_nan=True)


def test_an_empty_frame_has_no_majority():
    empty = pd.DataFrame({"pair_id": [], "annotator": [], "value": []})
    assert len(_others_majority(empty)) == 0
