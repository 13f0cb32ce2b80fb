"""Gold from a model of the doctors: Dawid–Skene and MACE through crowd-kit in
``medsim export gold --aggregate``, next to the majority."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from data_schemas.errors import OptionError
from medsim_annot.errors import UsageProblem
from medsim_annot.io import read_table
from medsim_annot.services import studies as svc
from medsim_annot.services.gold.export import export_gold
from medsim_annot.services.study_handle import open_study
from medsim_annot.stats.aggregate import check_method, model_gold

DIFFERS = 4


@pytest.fixture
def quality(db_url, tmp_path):
    """24 pairs, truth alternating: 'good' always gives the truth, 'fair' too except don't
    know on 4 negative pairs (there the strict majority is missing: 1 of 3 each), 'lazy'
    always says same."""
    folder = tmp_path / "in"
    folder.mkdir()
    rows = ["pair_id,term_1,term_2,auto_label"]
    rows += [f"q{i:02d},term {i},other {i},{i % 2}" for i in range(24)]
    (folder / "pairs.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    lines = ["pair_id,annotator,rating"]
    for i in range(24):
        truth = "same" if i % 2 else "not_same"
        fair = "dont_know" if i in (0, 2, 4, 6) else truth
        lines += [f"q{i:02d},good,{truth}", f"q{i:02d},fair,{fair}", f"q{i:02d},lazy,same"]
    (folder / "ratings.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    svc.import_ratings(folder / "ratings.csv", folder / "pairs.csv", "binary", "quality")
    return "quality"


@pytest.mark.parametrize("method", ["dawid-skene", "mace"])
def test_model_follows_the_reliable_doctor(quality, tmp_path, method):
    out = tmp_path / "gold.csv"
    m = export_gold(open_study(quality), out, aggregate=method)
    t = read_table(out).set_index("pair_id")
    assert m.manifest["aggregate"] == method
    assert (t["model_label"] == t["rater_good"]).all()
    post = t["model_posterior"].astype(float)
    assert ((post > 0.5) & (post <= 1)).all()
    no_majority = t["majority"] == ""
    assert no_majority.sum() == DIFFERS
    differs = t["model_differs_from_majority"] == "true"
    assert differs.equals(no_majority)
    assert m.manifest["counts"]["model_differs_from_majority"] == DIFFERS


def test_majority_is_the_default_and_unchanged(quality, tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    m = export_gold(open_study(quality), a)
    export_gold(open_study(quality), b, aggregate="majority")
    assert a.read_bytes() == b.read_bytes()
    assert "model_label" not in read_table(a).columns and m.manifest["aggregate"] == "majority"


def test_dawid_skene_competence_ranks_the_lazy_doctor_last(quality):
    from medsim_annot.services.gold.table import study_gold_table

    gt = study_gold_table(open_study(quality))
    fit = model_gold(gt.ratings, "dawid-skene")
    comp = fit.raters.set_index("annotator")["competence"]
    assert comp.idxmin() == "lazy" and comp["good"] > 0.9
    conf = fit.confusion
    assert set(conf.columns) == {"annotator", "true", "given", "probability"}
    sums = conf.groupby(["annotator", "true"])["probability"].sum()
    assert np.allclose(sums.to_numpy(), 1.0)


def test_method_and_level_checked():
    assert check_method("mace") == "mace"
    with pytest.raises(OptionError, match="aggregate must be 'majority', 'dawid-skene' or 'mace'"):
        check_method("glad")
    with pytest.raises(UsageProblem, match="nominal"):
        check_method("dawid-skene", "ordinal")


@settings(max_examples=5, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from([0, 1]), min_size=3, max_size=3), min_size=4, max_size=12),
    st.permutations(["A", "B", "C"]),
)
def test_dawid_skene_ignores_annotator_names(votes, names):
    """Relabelling the annotators changes neither the labels nor the posteriors."""
    rows = [(f"p{i}", a, float(v)) for i, vs in enumerate(votes) for a, v in zip("ABC", vs)]
    r = pd.DataFrame(rows, columns=["pair_id", "annotator", "value"]).assign(no_decision=False)
    renamed = r.assign(annotator=r["annotator"].map(dict(zip("ABC", names))))
    a, b = model_gold(r, "dawid-skene"), model_gold(renamed, "dawid-skene")
    assert a.labels["label"].tolist() == b.labels["label"].tolist()
    assert np.allclose(a.labels["posterior"], b.labels["posterior"], atol=1e-6)


def test_cli_aggregate(quality, tmp_path, cli):
    out = tmp_path / "g.csv"
    r = cli("export", "gold", quality, "--out", out, "--aggregate", "dawid-skene", "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["counts"]["model_differs_from_majority"] == DIFFERS
    r = cli("export", "gold", quality, "--out", out, "--aggregate", "dawid-skene")
    assert f"labels {DIFFERS} pairs differently from the majority" in r.stdout
    bad = tmp_path / "bad.csv"
    r = cli("export", "gold", quality, "--out", bad, "--aggregate", "glad")
    assert r.exit_code == 2 and "--aggregate" in r.stderr and not bad.exists()


def test_dashboard_model_quality(quality):
    from medsim_annot.services.dashboard import study_dashboard

    dash = study_dashboard(open_study(quality), use_cache=False)
    model = dash.model_quality("dawid-skene")
    assert model["reason"] is None and model["differs"] == DIFFERS
    raters = model["raters"].set_index("annotator")
    assert raters["competence"].idxmin() == "lazy"
    assert set(model["confusion"]["given"]) == {"same", "not_same"}
