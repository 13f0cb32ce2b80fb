"""The dashboard headline (issue 33, item 3): "Rated pairs" counts the pairs with every
planned rating, and the auto-label accuracy is computed on the pairs with at least two
decisive ratings — hand-computed on a small study where one doctor rated everything, one
three pairs and one a single pair (before the fix: "15 / 15" and an accuracy on 14 pairs,
12 of them one doctor's answer)."""

from __future__ import annotations

import pandas as pd
import pytest
from sqlalchemy import select

from data_schemas.pairs import validate_pairs
from data_schemas.scales import BINARY
from medsim_annot.services import dashboard as dsvc
from medsim_annot.services import studies as svc
from medsim_annot.services.annotation import submit_rating
from medsim_annot.services.people.annotators import add_annotator
from medsim_annot.services.studies import Slot
from medsim_annot.services.study_handle import open_study
from medsim_annot.stats.audit import audit_labels
from medsim_annot.storage import get_engine, session_scope
from medsim_annot.storage.models import Annotator

STUDY = "first-day"
N = 15
#: auto_label per pair: pair 0 and 1 are audited on two or more doctors.
AUTO = [1, 1, 0] + [1, 0] * 6
#: dr_ux rates all 15: "same" on pairs 0-2, then the auto label on every other pair.
UX = ["same", "same", "same"] + ["same" if a else "not_same" for a in AUTO[3:]]
#: dr_two rates pairs 0-2: agrees on 0 (same, auto 1: right), says not_same on 1 (no
#: majority), and same on 2 (majority same, auto 0: wrong).
TWO = ["same", "not_same", "same"]
#: dr_three rates pair 0 only.
THREE = ["same"]


def make_first_day(engine=None) -> None:
    """The study of the issue's walk: 15 pairs, three doctors with all 15 in their queue;
    dr_ux rated 15, dr_two 3, dr_three 1."""
    engine = engine or get_engine()
    pairs = validate_pairs(
        pd.DataFrame(
            {
                "pair_id": [f"fd{i:02d}" for i in range(N)],
                "term_1": [f"term a{i}" for i in range(N)],
                "term_2": [f"term b{i}" for i in range(N)],
                "auto_label": [str(a) for a in AUTO],
            }
        )
    )
    queue = [Slot(i) for i in range(N)]
    svc.create_study(
        STUDY,
        pairs,
        BINARY,
        queues={"dr_ux": queue, "dr_two": queue, "dr_three": queue},
        engine=engine,
    )
    with session_scope(engine) as s:
        ids = dict(s.execute(select(Annotator.name, Annotator.id)).all())
    for who, values in (("dr_ux", UX), ("dr_two", TWO), ("dr_three", THREE)):
        for pos, value in enumerate(values):
            submit_rating(ids[who], pos, value, engine=engine)


@pytest.fixture
def first_day(backend_url):
    dsvc.clear_cache()
    make_first_day()
    return open_study(STUDY)


def test_rated_pairs_count_pairs_with_every_planned_rating(first_day):
    d = dsvc.study_dashboard(first_day)
    head = d.headline(dsvc.planned_ratings(first_day))
    assert dsvc.planned_ratings(first_day) == {f"fd{i:02d}": 3 for i in range(N)}
    assert head["pairs"] == N and head["rated_pairs"] == N
    assert head["complete_pairs"] == 1  # only fd00 has all three planned ratings
    assert head["two_rated_pairs"] == 3  # fd00, fd01, fd02: dr_two's three
    # A fourth doctor added later plans a fourth rating of every pair: none is complete.
    add_annotator(first_day, "dr_four")
    later = d.headline(dsvc.planned_ratings(first_day))
    assert later["complete_pairs"] == 0


def test_accuracy_counts_pairs_with_two_decisive_ratings(first_day):
    d = dsvc.study_dashboard(first_day)
    head = d.headline(dsvc.planned_ratings(first_day))
    # By hand: fd00 (3 x same, auto 1) right; fd01 (same / not_same) no majority; fd02
    # (same, same; auto 0) wrong. 1 right of 2.
    assert head["accuracy_pairs"] == 2
    assert head["accuracy"] == pytest.approx(0.5)
    # The audit over every pair with a majority (14: fd01 has none) counts 12 pairs of one
    # doctor, all of them right: 13 of 14.
    assert head["accuracy_any_majority"] == pytest.approx(13 / 14)
    # Independently: the audit engine on the pairs with two or more decisive ratings only.
    ratings, scale = svc.ratings_frame(first_day)
    counts = ratings.dropna(subset=["value"]).groupby("pair_id").size()
    keep = set(counts[counts >= 2].index)
    pairs = svc.pairs_frame(first_day)
    sub = audit_labels(
        pairs[pairs["pair_id"].isin(keep)], ratings[ratings["pair_id"].isin(keep)], scale
    )
    assert head["accuracy"] == pytest.approx(sub.overall["accuracy"])
