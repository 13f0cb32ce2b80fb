"""Quality over time of a stored study: guideline versions recorded on every rating (app
saves and imports), the windows and alert through the service, the pause event, and bad
settings refused with nothing written."""

from __future__ import annotations

import pandas as pd
import pytest

from data_schemas.errors import OptionError
from data_schemas.scales import BINARY
from medsim_annot.errors import UsageProblem
from medsim_annot.services import annotation as A
from medsim_annot.services import drift as svc
from medsim_annot.services.dashboard import html_report
from medsim_annot.services.gold.export import export_gold
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.studies import create_study, rating_history
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all, session_scope
from medsim_annot.storage.events import activity


def _pairs(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "pair_id": [f"p{i:03d}" for i in range(n)],
            "term_1": [f"alpha {i}" for i in range(n)],
            "term_2": [f"beta {i}" for i in range(n)],
        }
    )


@pytest.fixture
def study(backend_url):
    dispose_all()
    res = create_study("drift", _pairs(8), BINARY, ["ann", "bob", "cat"])
    ids = {}
    for a in res["annotators"]:
        who = authenticate_annotator(a["access_code"])
        assert who is not None
        ids[a["name"]] = who.annotator_id
    yield ids
    dispose_all()


def test_ratings_record_the_guideline_version_in_force(study):
    s = open_study("drift")
    assert svc.guideline_version(s) == 1
    A.submit_rating(study["ann"], 0, "same")
    assert svc.revise_guideline(s, "Synonyms only count as same.", note="clarified") == 2
    A.submit_rating(study["ann"], 1, "not_same")
    A.submit_rating(study["bob"], 0, "same")
    hist = rating_history(s)
    assert hist["guideline_version"].tolist() == [1, 2, 2]
    revs = svc.guideline_revisions(s)
    assert revs["version"].tolist() == [2] and revs["note"].tolist() == ["clarified"]
    assert open_study("drift").guideline == "Synonyms only count as same."
    with pytest.raises(UsageProblem, match="empty"):
        svc.revise_guideline(s, "  ")
    assert svc.guideline_version(s) == 2


def test_quality_over_time_through_the_service(study):
    s = open_study("drift")
    for who in ("ann", "bob", "cat"):
        for pos in range(8):
            A.submit_rating(study[who], pos, "same" if who != "cat" or pos < 4 else "not_same")
    q = svc.quality_over_time(s, settings=svc.DriftSettings(window=4, margin=0.2))
    w = q.windows
    assert set(w["annotator"]) == {"ann", "bob", "cat"}
    assert w.groupby("annotator")["n_ratings"].sum().tolist() == [8, 8, 8]
    assert set(q.days["annotator"]) == {"ann", "bob", "cat"}
    assert q.alerts.empty  # two windows each: the baseline has them all


def test_pause_records_an_event_and_refuses_unknown_names(study):
    s = open_study("drift")
    svc.pause_annotator(s, "cat", by="admin", reason="drift alert", evidence="cat: 40% ...")
    with pytest.raises(UsageProblem, match="no annotator 'zed'"):
        svc.pause_annotator(s, "zed", by="admin", reason="x")
    with pytest.raises(UsageProblem, match="needs a reason"):
        svc.pause_annotator(s, "cat", by="admin", reason=" ")
    with session_scope(s.engine) as tx:
        paused = [e for e in activity(tx, study_id=s.id) if e["action"] == svc.PAUSED]
    assert len(paused) == 1 and paused[0]["annotator"] == "cat"
    assert "drift alert" in paused[0]["detail"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"window": 0}, r"ratings per quality window \(window\)"),
        ({"window": -3}, r"ratings per quality window \(window\)"),
        ({"margin": 1.5}, r"drift margin \(drift_margin\)"),
        ({"margin": 0}, r"drift margin \(drift_margin\)"),
        ({"baseline_windows": 0}, r"windows in a doctor's baseline \(baseline_windows\)"),
    ],
)
def test_bad_settings_are_refused_and_nothing_is_written(study, kwargs, match):
    s = open_study("drift")
    with pytest.raises(OptionError, match=match):
        svc.set_settings(s, **kwargs)
    assert svc.study_settings(open_study("drift")) == svc.DriftSettings()
    svc.set_settings(s, window=20, margin=0.3)
    assert svc.study_settings(open_study("drift")) == svc.DriftSettings(window=20, margin=0.3)


def test_report_has_the_timeline_with_guideline_revisions(study):
    s = open_study("drift")
    A.submit_rating(study["ann"], 0, "same")
    svc.revise_guideline(s, "New text", note="v2")
    for who in ("ann", "bob", "cat"):
        for pos in range(1, 8):
            A.submit_rating(study[who], pos, "same")
    page = html_report(open_study("drift"))
    assert "Quality over time" in page and "Quality over time: cat" in page
    assert "guideline v2" in page
    assert "Chance-corrected coefficients" in page


def test_gold_manifest_carries_the_guideline_version(study, tmp_path):
    s = open_study("drift")
    A.submit_rating(study["ann"], 0, "same")
    first = export_gold(s, tmp_path / "g1.csv").manifest
    assert first["guideline"] == {"version": 1, "revisions": []}
    svc.revise_guideline(s, "Only synonyms are same.", note="clarified synonyms")
    second = export_gold(open_study("drift"), tmp_path / "g2.csv").manifest
    assert second["guideline"]["version"] == 2
    assert second["guideline"]["revisions"][0]["note"] == "clarified synonyms"
    assert list(second)[list(second).index("scale") + 3] == "guideline"
