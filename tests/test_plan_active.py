"""``medsim study plan --predictions [--sampling active]`` for finite groups (issue 36e):
each group's prediction-powered plan uses the group's own size (main planned every group as
if it were endless: ``pairs=10**9``), active serving is planned from the scores calibrated
on the pilot, and plans are costed per rating."""

from __future__ import annotations

import json
import math

import pytest

from medsim_annot.services import studies as svc
from medsim_annot.services.predictions import load_predictions, plan_with_predictions
from medsim_annot.services.study_handle import open_study
from medsim_annot.stats.ppi import labels_needed
from tests.test_ppi_cli import ppi_files  # noqa: F401  (the fixture)

OPTS = {"per_item": 2, "tiebreak": True, "group_by": ["dataset"]}


def _plan(ppi_files, **kw):  # noqa: F811
    svc.import_ratings(ppi_files["ratings"], ppi_files["pairs"], "binary", "pilot")
    pairs = svc.load_pairs(ppi_files["pairs"])
    return plan_with_predictions(
        pairs,
        3,
        load_predictions(ppi_files["scores"], score_column="cosine"),
        pilot=open_study("pilot"),
        target_ci=0.05,
        **OPTS,
        **kw,
    )


def test_each_group_is_planned_with_its_own_size(db_url, ppi_files):  # noqa: F811
    """Groups of 200 pairs: the pairs to rate follow labels_needed at pairs=200, which is
    more than the endless-pool figure main used."""
    out = _plan(ppi_files)
    w = out["with_predictions"]
    floor = 20
    for g, row in w["groups"].items():
        base = out["groups"][g]
        acc = out["assumptions"]["accuracy"][g]
        cl, finite = labels_needed(acc, row["correlation"], target=0.05, pairs=row["pairs"])
        _, endless = labels_needed(acc, row["correlation"], target=0.05, pairs=10**9)
        assert finite > endless  # the regression: main planned with the endless figure
        want = min(base["pairs_rated"], max(math.ceil(base["pairs_rated"] * finite / cl), floor))
        assert row["pairs_rated"] == min(row["pairs"], want)


def test_active_plan_and_cost(db_url, ppi_files):  # noqa: F811
    out = _plan(ppi_files, sampling="active", cost_per_rating=2.5)
    w = out["with_predictions"]
    act = w["active"]
    assert act["ratings"] <= w["ratings"] <= out["ratings"]
    assert act["cost"] == pytest.approx(2.5 * act["ratings"])
    assert out["cost"] == pytest.approx(2.5 * out["ratings"])
    for row in w["groups"].values():
        assert 20 <= row["active_pairs_rated"] <= row["pairs"]


def test_cli_sampling_active(db_url, cli, ppi_files):  # noqa: F811
    svc.import_ratings(ppi_files["ratings"], ppi_files["pairs"], "binary", "pilot")
    args = ["study", "plan", "--pairs", ppi_files["pairs"], "--annotators", "3"]
    args += ["--group-by", "dataset", "--per-item", "2", "--tiebreak", "--pilot", "pilot"]
    args += ["--target-ci", "0.05"]
    r = cli(*args, "--sampling", "active")
    assert r.exit_code == 2 and "--predictions" in r.stderr
    full = [*args, "--predictions", ppi_files["scores"], "--score-column", "cosine"]
    r = cli(*full, "--sampling", "active", "--json")
    assert r.exit_code == 0, r.stderr
    assert "active" in json.loads(r.stdout)["with_predictions"]
    text = cli(*full, "--sampling", "active", "--cost-per-rating", "3")
    assert "with active serving" in text.stdout and "cost: classical" in text.stdout
    bad = cli(*full, "--sampling", "random")
    assert bad.exit_code == 2
