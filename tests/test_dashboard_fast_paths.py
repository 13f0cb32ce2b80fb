"""The dashboard's one coded path changes no figure: for random small studies every
dashboard table and figure input of :func:`compute_dashboard` (the ratings coded once per
read and shared by every statistic, the steps run beside each other by the scheduler) is
equal to the plain dashboard of ``tests/plain_stats.py`` (each statistic given its own
frame, in line; the history's checks and the don't-know shares by group-bys on strings and
the ``krippendorff`` package), and to the same steps run in line."""

from __future__ import annotations

import json
from concurrent.futures import Future

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from data_schemas import BINARY, RELATEDNESS_0_3
from medsim_annot.services.dashboard import compute_dashboard
from medsim_annot.stats import _frame
from tests import plain_stats

# Names whose sorted order differs from the order they first appear in.
_NAMES = ["zed", "Amy", "bob", "Émile", "a b"]
_GROUPS = [("FSN-SYN", "easy"), ("FSN-SYN", "hard"), ("SAME-AS", "easy")]


@st.composite
def studies(draw):
    scale = draw(st.sampled_from([BINARY, RELATEDNESS_0_3]))
    n = draw(st.integers(1, 12))
    ids = [f"p{i}" for i in draw(st.permutations(range(n)))]  # file order != sorted order
    pairs = pd.DataFrame(
        {
            "pair_id": ids,
            "term_1": [f"t{i}" for i in range(n)],
            "term_2": [f"u{i}" for i in range(n)],
            "auto_label": pd.array(
                draw(st.lists(st.sampled_from([0, 1, None]), min_size=n, max_size=n)),
                dtype="Int64",
            ),
            "dataset": [_GROUPS[draw(st.integers(0, 2))][0] for _ in range(n)],
            "difficulty": [_GROUPS[draw(st.integers(0, 2))][1] for _ in range(n)],
        }
    )
    values = ["same", "not_same", "dont_know"] if scale is BINARY else ["0", "1", "2", "3"]
    rows = draw(
        st.lists(
            st.tuples(
                st.sampled_from(ids),
                st.sampled_from(_NAMES[: draw(st.integers(1, 5))]),
                st.sampled_from(values),
                st.one_of(st.none(), st.integers(0, 5)),  # equal times, missing times
                st.booleans(),
                st.sampled_from([None, 300, 2500]),
            ),
            max_size=40,
        )
    )
    start = pd.Timestamp("2026-01-01", tz="UTC")
    history = pd.DataFrame(
        {
            "pair_id": pd.array([r[0] for r in rows], dtype="str"),
            "annotator": pd.array([r[1] for r in rows], dtype="str"),
            "rating": [scale.canonical(r[2]) for r in rows],
            "rated_at": pd.Series(
                [pd.NaT if r[3] is None else start + pd.Timedelta(minutes=r[3]) for r in rows],
                dtype="datetime64[us, UTC]",
            ),
            "comment": "",
            "unclear": [r[4] for r in rows],
            "elapsed_ms": pd.Series([r[5] for r in rows], dtype="float64"),
        }
    )
    return pairs, history, scale


def _tables(d) -> dict:
    out = {
        "audit": d.audit_table(),
        "confusion": d.confusion(),
        "pairwise": d.pairwise_table(),
        "pairwise_alpha": d.pairwise_alpha(),
        "per_annotator": d.per_annotator(),
        "summary": d.summary(),
        "mean_scores": d.mean_scores(),
        "quality": d.quality_table(),
        "pace": d.pace_table(),
        "runs": d.runs(),
        "disagreements": d.disagreements(),
        "gold": d.gold.table,
        "gold_ratings": d.gold.ratings,
        "consistency": d.quality.consistency,
    }
    out["report"] = json.dumps(d.agreement.to_dict(), default=str)
    out["reasons"] = (d.agreement.reasons, d.quality.reasons, d.reasons, d.gold.annotators)
    out["headline"] = json.dumps(d.headline(), default=str)
    if d.audit is not None:
        out["audit_items"] = d.audit.items
        out["audit_overall"] = json.dumps(d.audit.overall, default=str)
    return out


class _Reading(Future):
    """The pairs as the store hands them over while their read is still running: a Future
    that says it is not done (its result is there, so the test is deterministic)."""

    def __init__(self, pairs: pd.DataFrame):
        super().__init__()
        self.set_result(pairs)

    def done(self) -> bool:
        return False


def _dashboard(
    pairs,
    history,
    scale,
    fast: bool,
    *,
    repeats: bool = False,
    reading: bool = False,
    workers: int | None = None,
):
    """*repeats*: the current ratings hold every rating (the gold table keeps the latest
    per pair and annotator); else the first per pair and annotator. The fast way is
    :func:`compute_dashboard` (*workers* threads beside); the plain way
    :func:`plain_stats.plain_dashboard`. *reading*: the fast way gets the pairs as a Future
    still running, so the agreement statistics start before the gold table."""
    current = history
    if not repeats:
        current = history.drop_duplicates(["pair_id", "annotator"], keep="first")
    if not fast:
        return _tables(plain_stats.plain_dashboard(pairs, current, scale, history=history))
    given_pairs = _Reading(pairs) if reading else pairs
    return _tables(compute_dashboard(given_pairs, current, scale, history=history, workers=workers))


# 60 studies (each computed three ways): the CI profile's 100 cost 33 s of a worker for
# little more reach; `HYPOTHESIS_PROFILE` cannot raise it, so a deeper search edits it here.
@settings(max_examples=60, deadline=None)
@given(studies(), st.booleans(), st.booleans(), st.booleans())
def test_dashboard_equals_the_plain_computation(study, repeats, reading, unknown):
    """*unknown*: a rated pair is not among the study's pairs (the gold table drops its
    ratings; statistics started before the pairs were read must be computed again)."""
    pairs, history, scale = study
    if unknown:
        pairs = pairs.iloc[1:]
    fast = _dashboard(pairs, history, scale, True, repeats=repeats, reading=reading)
    plain = _dashboard(pairs, history, scale, False, repeats=repeats)
    _compare(fast, plain)
    in_line = _dashboard(pairs, history, scale, True, repeats=repeats, workers=0)
    _compare(in_line, plain)


def test_statistics_started_before_the_pairs_are_computed_again_when_a_pair_is_unknown():
    """The early agreement report is kept only when every rated pair is a pair of the
    study; a rated pair that is not changes the figures, and they follow the pairs."""
    pairs = pd.DataFrame({"pair_id": ["a", "b", "c"], "term_1": ["x"] * 3, "term_2": ["y"] * 3})
    rows = [("a", "A", "same"), ("a", "B", "same"), ("b", "A", "same"), ("b", "B", "not_same")]
    rows += [("c", "A", "same"), ("c", "B", "same"), ("z", "A", "not_same"), ("z", "B", "same")]
    history = pd.DataFrame(
        {
            "pair_id": pd.array([r[0] for r in rows], dtype="str"),
            "annotator": pd.array([r[1] for r in rows], dtype="str"),
            "rating": [r[2] for r in rows],
        }
    )
    early = compute_dashboard(_Reading(pairs), history, BINARY)
    known = compute_dashboard(pairs, history[history["pair_id"] != "z"], BINARY)
    assert early.agreement.n_items == known.agreement.n_items == 3
    assert json.dumps(early.agreement.to_dict(), default=str) == json.dumps(
        known.agreement.to_dict(), default=str
    )


def test_coded_ratings_keep_their_value_domain_and_rows():
    r = pd.DataFrame(
        {"pair_id": ["b", "a", "a"], "annotator": ["Y", "X", "Y"], "value": [1.0, np.nan, 0.0]}
    )
    enc = _frame.encode(r)
    assert _frame.coded(enc) is enc and _frame.coded(enc, values=None) is enc
    dom = _frame.coded(enc, values=[0.0, 1.0, 2.0])
    want = _frame.encode(r, values=[0.0, 1.0, 2.0])
    assert np.array_equal(dom.value_index, want.value_index)
    assert np.array_equal(dom.values, want.values)
    keep = np.array([True, False, True])
    sub, plain = enc.rows(keep), _frame.encode(r[keep].reset_index(drop=True))
    for name in ("item", "annotator", "value", "value_index", "values"):
        assert np.array_equal(getattr(sub, name), getattr(plain, name), equal_nan=True), name
    assert list(sub.items) == list(plain.items) and list(sub.annotators) == list(plain.annotators)
    on = enc.on_items(["b", "z"])
    by_items = _frame.encode(r, items=["b", "z"], values=enc.values)
    assert np.array_equal(on.item, by_items.item) and list(on.items) == ["b", "z"]
    assert np.array_equal(on.counts(), by_items.counts())


def _compare(fast: dict, plain: dict) -> None:
    assert fast.keys() == plain.keys()
    for name, want in plain.items():
        got = fast[name]
        if isinstance(want, pd.DataFrame):
            pd.testing.assert_frame_equal(got, want, obj=name)
        elif isinstance(want, pd.Series):
            pd.testing.assert_series_equal(got, want, obj=name)
        else:
            assert got == want, name


def test_runs_and_repeats_equal_the_plain_computation():
    """A study that certainly has straight-lining runs, pairs rated twice and missing
    times (random small studies rarely have runs of 10)."""
    n = 30
    ids = [f"p{i:02d}" for i in reversed(range(n))]
    pairs = pd.DataFrame(
        {
            "pair_id": ids,
            "term_1": ids,
            "term_2": ids,
            "auto_label": pd.array([i % 2 for i in range(n)], dtype="Int64"),
            "dataset": ["a", "b", "c"] * 10,
        }
    )
    rows = []
    for j, who in enumerate(["zed", "Amy", "bob"]):
        for i, pid in enumerate(ids):
            value = "same" if who == "zed" else ["same", "not_same", "dont_know"][(i + j) % 3]
            rows.append((pid, who, value, None if i == 7 else i, 900 + 100 * i))
        for k, pid in enumerate(ids[:6]):  # shown twice
            rows.append((pid, who, ["not_same", "same", "dont_know"][k % 3], n + 1 + k, 2000))
    start = pd.Timestamp("2026-01-01", tz="UTC")
    history = pd.DataFrame(
        {
            "pair_id": pd.array([r[0] for r in rows], dtype="str"),
            "annotator": pd.array([r[1] for r in rows], dtype="str"),
            "rating": [r[2] for r in rows],
            "rated_at": pd.Series(
                [pd.NaT if r[3] is None else start + pd.Timedelta(minutes=r[3]) for r in rows],
                dtype="datetime64[us, UTC]",
            ),
            "comment": "",
            "unclear": False,
            "elapsed_ms": pd.Series([r[4] for r in rows], dtype="float64"),
        }
    )
    fast = _dashboard(pairs, history, BINARY, True)
    plain = _dashboard(pairs, history, BINARY, False)
    assert len(plain["runs"]) and len(plain["consistency"])
    _compare(fast, plain)
