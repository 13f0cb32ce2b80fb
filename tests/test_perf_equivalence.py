"""The fast paths of the dashboard give exactly what the straightforward code gives: the
scale looked up once per distinct rating, the outlier check reusing the report's IAA-1,
and every statistic on the codes built once against the plain computation
(``tests/plain_stats.py``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from data_schemas import BINARY, RELATEDNESS_0_3
from data_schemas.ratings import per_distinct, to_ratings_frame
from medsim_annot.stats import (
    agreement_report,
    dont_know_share,
    krippendorff_alpha,
    majority_vote,
    outlier_annotators,
    rater_quality,
    ratings_from_matrix,
    straight_lining,
)
from medsim_annot.stats._frame import coded_ratings
from tests import plain_stats

_VALUES = st.one_of(
    st.sampled_from(["same", "not_same", "dont_know", " same", "1", "0"]),
    st.integers(0, 3),
    st.sampled_from([0.0, -0.0, 1.0, 2.5, float("nan")]),
    st.booleans(),
    st.none(),
)


def _row_by_row(values, fn):
    out = []
    for v in values:
        try:
            out.append(("ok", fn(v)))
        except (ValueError, KeyError) as exc:
            out.append(("error", str(exc)))
    return out


@given(st.lists(_VALUES, max_size=30))
def test_per_distinct_equals_row_by_row(values):
    col = pd.Series(values, dtype=object)
    for fn in (repr, BINARY.is_no_decision, RELATEDNESS_0_3.is_no_decision):
        assert per_distinct(col, fn) == [fn(v) for v in values]
    for scale in (BINARY, RELATEDNESS_0_3):

        def safe(v, scale=scale):
            try:
                return ("ok", scale.code(v))
            except (ValueError, KeyError) as exc:
                return ("error", str(exc))

        assert per_distinct(col, safe) == _row_by_row(values, scale.code)


@given(
    st.lists(
        st.tuples(
            st.sampled_from("pqrs"),
            st.sampled_from(["A", "B", "Zoë"]),
            st.sampled_from(["same", "not_same", "dont_know"]),
            st.integers(0, 5),
        ),
        max_size=25,
    )
)
def test_to_ratings_frame_equals_row_by_row(rows):
    cur = pd.DataFrame(rows, columns=["pair_id", "annotator", "rating", "t"])
    cur["rated_at"] = pd.to_datetime(cur["t"], unit="h", utc=True)
    got = to_ratings_frame(cur.drop(columns="t"), BINARY)
    want = [np.nan if BINARY.code(v) is None else float(BINARY.code(v)) for v in got["rating"]]
    assert got["value"].equals(pd.Series(want, dtype="float64"))
    assert got["no_decision"].tolist() == [BINARY.is_no_decision(v) for v in got["rating"]]


def test_outliers_from_the_reports_iaa_equal_recomputed():
    rng = np.random.default_rng(7)
    for k in (1, 2, 4, 5):
        m = rng.integers(0, 4, size=(40, k)).astype(float)
        m[rng.random(m.shape) < 0.2] = np.nan
        r = ratings_from_matrix(m, annotators=[f"a{j}" for j in range(k)][::-1])
        rep = agreement_report(r, RELATEDNESS_0_3)
        pd.testing.assert_frame_equal(
            outlier_annotators(r, iaa=rep.per_annotator), outlier_annotators(r)
        )
        a = rater_quality(r, RELATEDNESS_0_3, iaa=rep.per_annotator)
        b = rater_quality(r, RELATEDNESS_0_3)
        pd.testing.assert_frame_equal(a.per_annotator, b.per_annotator)


@settings(max_examples=60)
@given(
    st.lists(st.sampled_from(["same", "not_same", "dont_know", "1", "1.0", "é", ""]), max_size=40)
)
def test_distinct_of_a_text_column_equals_the_object_array(values):
    """The text-column fast path of ``_distinct`` (Arrow factorize) gives the codes and
    distinct values of the object-array path, in the same order."""
    from data_schemas.ratings import _distinct

    text = pd.Series(values, dtype="str")
    fast = _distinct(text)
    slow = _distinct(pd.Series(values, dtype=object))
    assert fast is not None and slow is not None
    assert fast[0].tolist() == slow[0].tolist()
    assert fast[1].tolist() == slow[1].tolist()


_RATINGS = st.lists(
    st.tuples(
        st.sampled_from(["p1", "p2", "p3", "p4", "p5"]),
        st.sampled_from(["zed", "Amy", "bob", "Émile"]),
        st.sampled_from(["0", "1", "2", "3"]),
    ),
    max_size=30,
    unique_by=lambda r: (r[0], r[1]),
)


@settings(max_examples=40, deadline=None)
@given(_RATINGS, st.sampled_from(["strict", "decisive"]))
def test_coded_statistics_equal_the_plain_computation(rows, rule):
    """Each statistic on the codes built once (:func:`coded_ratings`) gives what the plain
    computation of ``tests/plain_stats.py`` gives from the frame: the majority by counting
    each pair's ratings, alpha by the ``krippendorff`` package, the don't-know shares and
    the runs by group-bys on strings."""
    cur = pd.DataFrame(rows, columns=["pair_id", "annotator", "rating"]).astype(
        {"pair_id": "str", "annotator": "str"}
    )
    codes = coded_ratings(cur, RELATEDNESS_0_3)
    frame = to_ratings_frame(cur, RELATEDNESS_0_3)
    if rows:  # (no ratings: the gold table's empty frame, typed)
        pd.testing.assert_frame_equal(codes.frame, frame)
    got = majority_vote(codes, rule=rule)["majority"]
    want = plain_stats.majority_vote(frame, rule=rule)
    assert np.array_equal(got.to_numpy(), want.reindex(got.index).to_numpy(), equal_nan=True)
    for level in ("nominal", "ordinal", "interval"):
        a, b = krippendorff_alpha(codes, level).value, plain_stats.krippendorff_alpha(frame, level)
        assert (np.isnan(a) and np.isnan(b)) or a == pytest.approx(b, abs=1e-9), level
    pd.testing.assert_frame_equal(
        dont_know_share(codes), plain_stats.dont_know_share(frame), check_dtype=False
    )
    pd.testing.assert_frame_equal(
        straight_lining(codes, min_run=2), plain_stats.straight_lining(frame, min_run=2)
    )
