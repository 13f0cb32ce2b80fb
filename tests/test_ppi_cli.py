"""``medsim audit --predictions`` and ``medsim agreement --model``: keys, figures, tables and
bad input (one sentence naming the file and column, exit 2)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from medsim_annot.services.study_handle import open_study


@pytest.fixture
def ppi_files(tmp_path):
    rng = np.random.default_rng(11)
    m, rated = 400, 120
    same = rng.random(m) < 0.5
    auto = np.where(rng.random(m) < 0.85, same, ~same).astype(int)
    ids = [f"p{i}" for i in range(m)]
    pairs = pd.DataFrame(
        {
            "pair_id": ids,
            "term_1": [f"a{i}" for i in range(m)],
            "term_2": [f"b{i}" for i in range(m)],
            "auto_label": auto,
            "dataset": np.where(np.arange(m) % 2 == 0, "d1", "d2"),
        }
    )
    rows = []
    for i in rng.choice(m, rated, replace=False):
        for a in ("X", "Y", "Z"):
            v = same[i] if rng.random() > 0.05 else not same[i]
            rows.append({"pair_id": ids[i], "annotator": a, "rating": "same" if v else "not_same"})
    scores = pd.DataFrame(
        {
            "pair_id": ids,
            "cosine": same * 1.0 + rng.normal(0, 0.5, m),
            "noise": rng.random(m),
        }
    )
    paths = {k: tmp_path / f"{k}.csv" for k in ("pairs", "ratings", "scores")}
    pairs.to_csv(paths["pairs"], index=False)
    pd.DataFrame(rows).to_csv(paths["ratings"], index=False)
    scores.to_csv(paths["scores"], index=False)
    return paths


def _audit(cli, f, *extra):
    return cli(
        "audit",
        "--pairs",
        f["pairs"],
        "--ratings",
        f["ratings"],
        "--predictions",
        f["scores"],
        *extra,
    )


def test_audit_predictions_json(cli, ppi_files):
    r = _audit(cli, ppi_files, "--score-column", "cosine", "--by", "dataset", "--json")
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["kind"] == "labels" and d["method"] == "ppi"
    o = d["overall"]
    for metric in ("accuracy", "precision"):
        for k in ("estimate", "low", "high", "classical_low", "classical_high", "lam", "n"):
            assert f"{metric}_{k}" in o
    assert o["accuracy_n"] + o["accuracy_n_unlabelled"] <= 400
    assert o["accuracy_n_unlabelled"] == 400 - 120
    assert (
        o["accuracy_high"] - o["accuracy_low"]
        < o["accuracy_classical_high"] - o["accuracy_classical_low"]
    )
    assert o["accuracy_effective_n"] > o["accuracy_n"]
    assert o["accuracy_ci"] == [o["accuracy_low"], o["accuracy_high"]]
    correct = round(o["accuracy_classical_estimate"] * o["accuracy_n"])
    wl, wh = proportion_confint(correct, o["accuracy_n"], method="wilson")
    assert [o["accuracy_classical_low"], o["accuracy_classical_high"]] == pytest.approx([wl, wh])
    assert [g["dataset"] for g in d["by_group"]] == ["d1", "d2"]
    c = json.loads(
        _audit(cli, ppi_files, "--score-column", "cosine", "--method", "classical", "--json").stdout
    )
    assert c["overall"]["accuracy_ci"] == pytest.approx([wl, wh])


def test_audit_predictions_table_target_and_noise(cli, ppi_files):
    r = _audit(cli, ppi_files, "--score-column", "cosine", "--target-ci", "0.05")
    assert r.exit_code == 0, r.stderr
    assert "PPI++ 95%" in r.stdout and "classical 95%" in r.stdout
    assert "within target" in r.stdout and "more needed" in r.stdout
    assert "the predictions were worth" in r.stderr
    noise = _audit(cli, ppi_files, "--score-column", "noise", "--json")
    o = json.loads(noise.stdout)["overall"]
    assert o["accuracy_high"] - o["accuracy_low"] == pytest.approx(
        o["accuracy_classical_high"] - o["accuracy_classical_low"], rel=0.06
    )


def test_audit_predictions_bad_input(cli, ppi_files, tmp_path):
    r = _audit(cli, ppi_files)
    assert r.exit_code == 2
    assert "scores.csv" in r.stderr and "--score-column" in r.stderr
    r = _audit(cli, ppi_files, "--score-column", "nope")
    assert r.exit_code == 2 and "nope" in r.stderr
    short = tmp_path / "short.csv"
    pd.read_csv(ppi_files["scores"]).iloc[:-3].to_csv(short, index=False)
    r = cli(
        "audit",
        "--pairs",
        ppi_files["pairs"],
        "--ratings",
        ppi_files["ratings"],
        "--predictions",
        short,
        "--score-column",
        "cosine",
    )
    assert r.exit_code == 2
    assert "short.csv" in r.stderr and "no score for 3 of the 400 pairs" in r.stderr
    r = cli(
        "audit",
        "--pairs",
        ppi_files["pairs"],
        "--ratings",
        ppi_files["ratings"],
        "--target-ci",
        "0.05",
    )
    assert r.exit_code == 2 and "--predictions" in r.stderr


def test_agreement_model_on_ehr_rel_a(cli, ehr_rel_a, tmp_path):
    from data_schemas.ehr_rel import split_ehr_rel
    from medsim_annot.io import read_table
    from medsim_annot.services.scoring import score_pairs

    pairs, _ = split_ehr_rel(read_table(ehr_rel_a), str(ehr_rel_a))
    scores = score_pairs(pairs, None, "char-ngram")
    path = tmp_path / "chars.csv"
    scores.to_csv(path, index=False)
    r = cli("agreement", ehr_rel_a, "--model", path, "--json")
    assert r.exit_code == 0, r.stderr
    m = json.loads(r.stdout)["model"]
    assert [d["annotator"] for d in m["doctors"]] == list("ABCDE")
    assert m["n_items"] == len(pairs)
    # Each doctor's leave-one-out rho is IAA-2 of the agreement report.
    per = {p["annotator"]: p["iaa_2"] for p in json.loads(r.stdout)["per_annotator"]}
    for d in m["doctors"]:
        assert d["loo_rho"] == pytest.approx(per[d["annotator"]], abs=1e-9)
    # A string-overlap score is far below every doctor: last place, the alt-test fails.
    assert m["model_rank"] == 6 and not m["alt_test"]["passed"]
    assert m["alt_test"]["epsilon"] == 0.2 and m["alt_test"]["scoring"] == "neg_rmse"
    text = cli("agreement", ehr_rel_a, "--model", path, "--epsilon", "0.15")
    assert text.exit_code == 0, text.stderr
    assert "Model as a blinded extra rater" in text.stdout
    assert "Alternative-annotator test (epsilon 0.15" in text.stdout
    assert "model beats this doctor" in text.stdout


def test_plan_with_predictions_from_a_pilot(db_url, ppi_files):
    from medsim_annot.services import studies as svc
    from medsim_annot.services.design import plan_budget
    from medsim_annot.services.predictions import load_predictions, plan_with_predictions

    svc.import_ratings(ppi_files["ratings"], ppi_files["pairs"], "binary", "pilot")
    pairs = svc.load_pairs(ppi_files["pairs"])
    opts = {"per_item": 2, "tiebreak": True, "group_by": ["dataset"]}
    good = plan_with_predictions(
        pairs,
        3,
        load_predictions(ppi_files["scores"], score_column="cosine"),
        pilot=open_study("pilot"),
        target_ci=0.05,
        **opts,
    )
    base = plan_budget(pairs, 3, target_ci=0.05, pilot=open_study("pilot"), **opts)
    assert good["ratings"] == base["ratings"]  # the classical plan is unchanged
    w = good["with_predictions"]
    assert set(w["groups"]) == {"d1", "d2"}
    assert w["correlation"] > 0.3
    # Groups of 200 pairs: the classical audit rates every pair, and so, once the plan
    # counts each group's own size (issue 36: it used to assume an endless pool and promised
    # a 15 % saving that the audit never reached), does the prediction-powered one nearly.
    assert w["ratings"] <= base["ratings"] and w["saving_vs_classical"] >= 0.0
    for g, row in w["groups"].items():
        assert 20 <= row["pairs_rated"] <= base["groups"][g]["pairs_rated"]
    noise = plan_with_predictions(
        pairs,
        3,
        load_predictions(ppi_files["scores"], score_column="noise"),
        pilot=open_study("pilot"),
        target_ci=0.05,
        **opts,
    )["with_predictions"]
    assert noise["ratings"] >= 0.9 * base["ratings"]


def test_study_predictions_panel(db_url, ppi_files):
    from medsim_annot.services import studies as svc
    from medsim_annot.services.predictions import load_predictions, study_predictions

    svc.import_ratings(ppi_files["ratings"], ppi_files["pairs"], "binary", "s")
    preds = load_predictions(ppi_files["scores"], score_column="cosine")
    out = study_predictions(open_study("s"), preds, target_ci=0.05)
    audit = out.audit
    assert list(audit["metric"].unique()) == ["accuracy", "precision"]
    assert audit.iloc[0]["group"] == "overall" and audit.iloc[0]["unlabelled"] == 280
    assert "within target" in audit.columns
    model = out.model
    assert set(model["rater"]) == {"X", "Y", "Z", "model"}
    assert out.model_sentence.startswith("Alternative-annotator test (epsilon 0.2")


def test_study_plan_predictions_cli(db_url, cli, ppi_files):
    from medsim_annot.services import studies as svc

    svc.import_ratings(ppi_files["ratings"], ppi_files["pairs"], "binary", "pilot")
    args = ["study", "plan", "--pairs", ppi_files["pairs"], "--annotators", "3"]
    args += ["--group-by", "dataset", "--per-item", "2", "--tiebreak", "--pilot", "pilot"]
    r = cli(*args, "--target-ci", "0.05", "--predictions", ppi_files["scores"])
    assert r.exit_code == 2 and "--score-column" in r.stderr
    full = [*args, "--target-ci", "0.05", "--predictions", ppi_files["scores"]]
    r = cli(*full, "--score-column", "cosine", "--json")
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["with_predictions"]["ratings"] <= d["ratings"]
    text = cli(*full, "--score-column", "cosine")
    assert text.exit_code == 0 and "with predictions (PPI++ interval" in text.stdout
    r = cli(*args, "--predictions", ppi_files["scores"], "--score-column", "cosine")
    assert r.exit_code == 2 and "--target-ci" in r.stderr
