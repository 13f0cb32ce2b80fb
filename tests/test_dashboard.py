"""Dashboard service: every table equals the agreement engine's numbers (demo studies and
EHR-RelA imported, where the published figures are checked to 2 decimals), the cache is
invalidated by a new rating, the explorer and the rater readings, the HTML report."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import select

from medsim_annot.services import agreement as agreement_svc
from medsim_annot.services import dashboard as dsvc
from medsim_annot.services import studies as svc
from medsim_annot.services.study_handle import open_study
from medsim_annot.stats import majority_vote
from medsim_annot.storage import get_engine, session_scope
from medsim_annot.storage.annotation import insert_ratings
from medsim_annot.storage.models import Assignment, Rating, utcnow
from tests import published as P
from tests.qa_data import make_quality, make_tiny

EHR_PAIRWISE = P.EHR_REL_A_PAIRWISE_ALPHA.value
EHR_PER_DOCTOR = P.EHR_REL_A_PER_DOCTOR.value
EHR_TABLE3 = P.EHR_REL_A_TABLE3.value
TABLE3_KEYS = ("alpha", "icc_c1", "icc_ck", "kendall_w", "mean_rho")


@pytest.fixture
def demo(demo_db_url):
    dsvc.clear_cache()
    return demo_db_url


@pytest.fixture
def ehr(db_url, ehr_rel_a):
    dsvc.clear_cache()
    svc.import_ehr_rel(ehr_rel_a, "ehr-a")
    return "ehr-a"


def test_ehr_rel_a_published_tables(ehr):
    d = dsvc.study_dashboard(open_study(ehr))
    assert d.kind == "graded" and d.audit is None
    s = d.summary().iloc[0]
    assert (s["items"], s["annotators"]) == tuple(P.EHR_REL_A_SHAPE.value.values())
    assert [round(float(s[k]), 2) for k in TABLE3_KEYS] == [EHR_TABLE3[k] for k in TABLE3_KEYS]
    m = d.pairwise_alpha()
    for (a, b), v in EHR_PAIRWISE.items():
        assert round(m.loc[a, b], 2) == v and round(m.loc[b, a], 2) == v
    assert np.isnan(np.diag(m.to_numpy())).all()
    per = d.per_annotator().set_index("annotator")
    for doc, (alpha, kappa, rho) in EHR_PER_DOCTOR.items():
        assert [
            round(per.loc[doc, c], 2) for c in ("mean_alpha", "mean_kappa_quadratic", "mean_rho")
        ] == [alpha, kappa, rho]
    assert len(d.mean_scores()) == P.EHR_REL_A_SHAPE.value["items"]


def test_tables_equal_the_engine(ehr):
    d = dsvc.study_dashboard(open_study(ehr))
    ratings, scale = svc.ratings_frame(open_study(ehr))
    rep = agreement_svc.agreement_report(ratings, scale)
    s = d.summary().iloc[0]
    assert s["alpha"] == rep.krippendorff_alpha
    assert (s["icc_c1"], s["icc_ck"], s["kendall_w"]) == (rep.icc.C1, rep.icc.Ck, rep.kendall_w)
    assert s["hub_inclusive"] == rep.human_upper_bound["inclusive"]
    assert s["hub_exclusive"] == rep.human_upper_bound["exclusive"]
    pd.testing.assert_frame_equal(d.pairwise_table(), rep.pairwise)
    mv = majority_vote(ratings, numeric=True)
    got = d.mean_scores()
    assert np.allclose(got.sort_index().to_numpy(), mv["mean"].sort_index().to_numpy())


def test_demo_binary_audit_equals_engine(demo):
    d = dsvc.study_dashboard(open_study("demo-binary"))
    assert d.kind == "binary"
    pairs = svc.pairs_frame(open_study("demo-binary"))
    ratings, scale = svc.ratings_frame(open_study("demo-binary"))
    res = agreement_svc.audit_report(pairs, ratings, scale)
    table = d.audit_table()
    assert table["group"].iloc[-1] == "overall"
    over = table.iloc[-1]
    for ours, theirs in (
        ("items", "n_items"),
        ("no_majority", "nan_fraction"),
        ("alpha", "krippendorff_alpha"),
        ("accuracy", "accuracy"),
        ("recall", "recall"),
        ("precision", "precision"),
        ("tp", "tp"),
    ):
        assert over[ours] == pytest.approx(res.overall[theirs], nan_ok=True)
    body = table.iloc[:-1].reset_index(drop=True)
    assert len(body) == len(res.by_group) == 8
    for ours, theirs in (
        ("items", "n_items"),
        ("alpha", "krippendorff_alpha"),
        ("accuracy", "accuracy"),
        ("precision", "precision"),
    ):
        assert np.allclose(
            body[ours].astype(float), res.by_group[theirs].astype(float), equal_nan=True
        )
    conf = d.confusion()
    assert conf.loc["auto: similar (1)", "majority: similar"] == res.overall["tp"]
    assert conf.loc["auto: similar (1)", "majority: not similar"] == res.overall["fp"]
    assert conf.loc["auto: not similar (0)", "majority: similar"] == res.overall["fn"]
    assert conf.loc["auto: not similar (0)", "majority: not similar"] == res.overall["tn"]
    assert conf["no majority"].sum() == round(res.overall["nan_fraction"] * res.overall["n_items"])
    rep = agreement_svc.agreement_report(ratings, scale)
    assert d.summary().iloc[0]["alpha"] == rep.krippendorff_alpha
    comp = dsvc.completion(open_study("demo-binary"))
    assert comp["done"].tolist() == [100, 100, 100] and comp["total"].tolist() == [120] * 3


def test_bootstrap_intervals_on_request(demo):
    d = dsvc.study_dashboard(open_study("demo-binary"), bootstrap=200)
    t = d.audit_table()
    for m in ("alpha", "accuracy", "recall", "precision"):
        lo, hi = t[f"{m}_ci_low"].iloc[-1], t[f"{m}_ci_high"].iloc[-1]
        assert lo <= t[m].iloc[-1] <= hi
    assert "accuracy_ci_low" not in dsvc.study_dashboard(open_study("demo-binary")).audit_table()


def test_cache_hit_and_invalidated_by_a_new_rating(demo):
    first = dsvc.study_dashboard(open_study("demo-binary"))
    assert dsvc.study_dashboard(open_study("demo-binary")) is first
    sid = open_study("demo-binary").id
    with session_scope(get_engine()) as s:
        rated = select(Rating.assignment_id)
        slot = s.execute(
            select(Assignment.id, Assignment.annotator_id, Assignment.item_id)
            .where(Assignment.study_id == sid, Assignment.id.not_in(rated))
            .order_by(Assignment.id)
        ).first()
        insert_ratings(
            s,
            [
                {
                    "study_id": sid,
                    "annotator_id": slot.annotator_id,
                    "item_id": slot.item_id,
                    "assignment_id": slot.id,
                    "value": "same",
                    "unclear": False,
                    "comment": "",
                    "rated_at": utcnow(),
                    "elapsed_ms": 1000,
                    "source": "test",
                }
            ],
        )
    after = dsvc.study_dashboard(open_study("demo-binary"))
    assert after is not first
    assert after.version[0] == first.version[0] + 1 == 301
    assert after.agreement.n_ratings == 301
    assert dsvc.completion(open_study("demo-binary"))["done"].sum() == 301


def test_disagreement_explorer(db_url, tmp_path):
    dsvc.clear_cache()
    make_tiny(tmp_path)
    d = dsvc.study_dashboard(open_study("tiny"))
    rows = d.disagreements()
    assert rows["pair_id"].tolist() == ["p3", "p4"]
    assert rows.set_index("pair_id").loc["p3", "why"] == "no majority; all different"
    assert rows.set_index("pair_id").loc["p4", "why"] == "auto-label ≠ majority"
    assert {"term_1", "term_2", "rater_A", "rater_B", "rater_C", "comment_A", "comment_C"} <= set(
        rows.columns
    )
    assert rows.set_index("pair_id").loc["p3", "comment_C"] == "never heard of it"
    assert rows.set_index("pair_id").loc["p4", "comment_A"] == "what is @home?"
    only = d.disagreements(["auto-label ≠ majority"])
    assert only["pair_id"].tolist() == ["p4"]
    assert d.disagreements(groups={"dataset": "A"}).empty
    assert d.disagreements(groups={"dataset": "B"})["pair_id"].tolist() == ["p3", "p4"]
    assert d.group_options() == {"dataset": ["A", "B"]}
    with pytest.raises(ValueError, match="unknown disagreement"):
        d.disagreements(["nonsense"])


def test_rater_quality_readings_name_the_annotator(db_url, tmp_path):
    dsvc.clear_cache()
    make_quality(tmp_path)
    d = dsvc.study_dashboard(open_study("quality"))
    q = d.quality_table().set_index("annotator")
    assert "lazy gave the same rating ('same') to 24 pairs in a row" in q.loc["lazy", "reading"]
    assert 'unsure answered "don\'t know"' in q.loc["unsure", "reading"]
    assert "50%" in q.loc["unsure", "reading"]
    assert q.loc["good", "reading"] == "good: no concerns."
    assert q.loc["lazy", "longest_run"] == 24
    assert len(d.runs()) == 1


def test_html_report(db_url, tmp_path):
    dsvc.clear_cache()
    make_tiny(tmp_path)
    html = dsvc.html_report(open_study("tiny"))
    assert html.startswith("<!DOCTYPE html>")
    assert "<script src=" not in html
    assert html.count("Plotly.newPlot") >= 4
    for title in (
        "Completion",
        "AAAI 2020 Table 3",
        "EHR-Rel Table 2",
        "Rater quality",
        "Disagreements",
    ):
        assert title in html


def test_load_current_holds_the_imported_ratings(db_url, tmp_path):
    """The dashboard's ratings are the rows of the imported file, read here with pandas."""
    import io

    from tests.qa_data import TINY_RATINGS

    make_tiny(tmp_path)
    want = pd.read_csv(io.StringIO(TINY_RATINGS), dtype=str, keep_default_na=False)
    got = dsvc.load_current(open_study("tiny"))
    assert sorted(
        zip(got["pair_id"], got["annotator"], got["rating"], got["comment"], got["unclear"])
    ) == sorted(
        zip(
            want["pair_id"],
            want["annotator"],
            want["rating"],
            want["comment"],
            want["unclear"] == "true",
        )
    )
    assert sorted(got["rated_at"].dt.strftime("%Y-%m-%dT%H:%M:%SZ")) == sorted(want["rated_at"])


def test_compute_dashboard_from_frames_equals_study_dashboard(demo):
    stored = dsvc.study_dashboard(open_study("demo-relatedness"))
    info = open_study("demo-relatedness")
    frames = dsvc.compute_dashboard(
        svc.pairs_frame(open_study("demo-relatedness")),
        svc.current_ratings(open_study("demo-relatedness")),
        info.scale,
    )
    pd.testing.assert_frame_equal(stored.summary(), frames.summary())
    pd.testing.assert_frame_equal(stored.gold.table, frames.gold.table)


def test_study_pairs_holds_the_imported_pairs(db_url, tmp_path):
    """The dashboard's pairs are the rows of the imported pairs file, read here with pandas
    (terms exactly as typed, formula-like ones included)."""
    import io

    from tests.qa_data import TINY_PAIRS

    make_tiny(tmp_path)
    want = pd.read_csv(io.StringIO(TINY_PAIRS), dtype=str, keep_default_na=False)
    got = dsvc.study_pairs(open_study("tiny"))
    cols = ["pair_id", "term_1", "term_2", "dataset"]
    assert got[cols].values.tolist() == want[cols].values.tolist()
    assert got["auto_label"].tolist() == [int(v) for v in want["auto_label"]]


def test_intra_rater_consistency_from_duplicate_slots(db_url):
    """Duplicate slots (an item shown twice to the same annotator) reach the quality panel;
    the explorer and the export count each annotator once per pair."""
    from data_schemas.pairs import validate_pairs
    from data_schemas.scales import BINARY
    from medsim_annot.services.annotation import submit_rating
    from medsim_annot.services.studies import Slot
    from medsim_annot.storage.models import Annotator

    dsvc.clear_cache()
    pairs = validate_pairs(
        pd.DataFrame(
            {
                "pair_id": [f"d{i}" for i in range(6)],
                "term_1": [f"a{i}" for i in range(6)],
                "term_2": [f"b{i}" for i in range(6)],
                "auto_label": ["1", "0"] * 3,
            }
        )
    )
    queue = [Slot(i) for i in range(6)] + [
        Slot(0, "duplicate"),
        Slot(1, "duplicate"),
        Slot(2, "duplicate", swapped=True),
    ]
    svc.create_study("dups", pairs, BINARY, queues={"flip": queue, "steady": queue})
    with session_scope(get_engine()) as s:
        ids = dict(s.execute(select(Annotator.name, Annotator.id)).all())
    first = ["same", "not_same"] * 3
    for who, again in (
        ("steady", ["same", "not_same", "same"]),
        ("flip", ["not_same", "same", "not_same"]),
    ):
        for pos, value in enumerate(first + again):
            submit_rating(ids[who], pos, value)
    d = dsvc.study_dashboard(open_study("dups"))
    q = d.quality_table().set_index("annotator")
    assert q.loc["steady", "n_duplicates"] == 3 and q.loc["steady", "exact_agreement"] == 1.0
    assert q.loc["flip", "exact_agreement"] == 0.0
    assert "flip rated 3 pairs twice and gave the same answer only 0%" in q.loc["flip", "reading"]
    assert "steady rated 3 pairs twice and was consistent" in q.loc["steady", "reading"]
    assert d.gold.table["n_ratings"].tolist() == [2] * 6
    assert d.agreement.n_ratings == 12


def test_model_of_the_doctors_is_fitted_once_per_method(demo, monkeypatch):
    """The crowd-kit fit gives both the doctors' figures and the per-pair labels: one fit
    per method and dashboard, and the same count of pairs as a separate
    ``add_model_columns`` fit."""
    from medsim_annot.services.gold import table as gold_svc
    from medsim_annot.stats import aggregate

    calls: list[str] = []
    real = aggregate.model_gold

    def counting(ratings, method, **kw):
        calls.append(method)
        return real(ratings, method, **kw)

    monkeypatch.setattr(aggregate, "model_gold", counting)
    monkeypatch.setattr(gold_svc, "model_gold", counting)
    dsvc.clear_cache()
    dash = dsvc.study_dashboard(open_study("demo-binary"))
    model = dash.model_quality("dawid-skene")
    assert dash.model_quality("dawid-skene") is model
    assert calls == ["dawid-skene"]
    assert model["reason"] is None and len(model["raters"])
    assert "model_label" not in dash.gold.table.columns  # the cached table is left as built
    fresh = gold_svc.GoldTable(
        dash.gold.table.copy(), dash.gold.ratings, dash.gold.current, dash.scale, []
    )
    assert gold_svc.add_model_columns(fresh, "dawid-skene") == model["differs"]
    assert calls == ["dawid-skene", "dawid-skene"]
