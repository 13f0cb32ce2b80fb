"""Imported ratings (issue 33, item 4): EHR-RelA imported from its published file has the
file's order and the import's time stamps, so the checks that read order or time —
straight-lining, rushed answers, pace — are skipped for its raters and the dashboard and the
report say so; its raters show as "imported", not "code revoked". Before the fix the
dashboard read "E gave the same rating ('0.0') to 18 pairs in a row … check for
straight-lining"."""

from __future__ import annotations

import numpy as np
import pytest

from data_schemas import columns as C
from medsim_annot.services import dashboard as dsvc
from medsim_annot.services import studies as svc
from medsim_annot.services.dashboard.compute import ORDER_TIME_COLUMNS
from medsim_annot.services.dashboard.tables import IMPORTED_NOTE
from medsim_annot.services.demo import seed_demo
from medsim_annot.services.study_handle import open_study
from medsim_annot.stats.quality import straight_lining
from medsim_annot.storage import get_engine
from tests.qa_data import make_quality


@pytest.fixture
def ehr(backend_url, ehr_rel_a):
    dsvc.clear_cache()
    svc.import_ehr_rel(ehr_rel_a, "ehr-a")
    return open_study("ehr-a")


def test_imported_ratings_skip_order_and_time_checks(ehr):
    d = dsvc.study_dashboard(ehr)
    raters = sorted(d.quality.per_annotator[C.ANNOTATOR])
    assert list(d.imported) == raters and raters
    # The file's order does hold long runs: the check would fire without the skip.
    ratings, scale = svc.ratings_frame(ehr)
    assert len(straight_lining(ratings)) > 0
    assert len(d.runs()) == 0
    q = d.quality_table()
    assert (q["longest_run"] == 0).all()
    assert not q["reading"].str.contains("check for straight-lining").any()
    assert q["reading"].str.contains(IMPORTED_NOTE, regex=False).all()
    pace = d.pace_table()
    for col in ORDER_TIME_COLUMNS:
        assert pace[col].isna().all(), col
    assert "skipped for imported ratings" in d.imported_note()
    html = dsvc.html_report(ehr)
    assert "skipped for imported ratings" in html


def test_imported_raters_are_imported_not_revoked(ehr):
    comp = dsvc.completion(ehr)
    assert comp["imported"].all() and not comp["active"].any()


def test_app_ratings_keep_their_checks(db_url):
    dsvc.clear_cache()
    seed_demo(engine=get_engine())
    study = open_study("demo-binary")
    d = dsvc.study_dashboard(study)
    assert d.imported == () and d.imported_note() == ""
    assert not dsvc.completion(study)["imported"].any()
    assert np.isfinite(d.pace_table()["median_seconds"].astype(float)).any()


def test_imported_ratings_with_their_own_times_keep_the_checks(db_url, tmp_path):
    """A ratings file that gives every rating its time has a real order: straight-lining is
    still checked (tests/test_dashboard.py's 'lazy' rater)."""
    dsvc.clear_cache()
    make_quality(tmp_path)
    d = dsvc.study_dashboard(open_study("quality"))
    assert d.imported == () and len(d.runs()) == 1
