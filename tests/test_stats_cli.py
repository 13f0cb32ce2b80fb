"""``medsim agreement`` and ``medsim audit``: keys, values, tables and bad input."""

from __future__ import annotations

import json

import pytest

from medsim_annot.stats.report import REPORT_KEYS, TABLES
from tests import published as P

AGREEMENT_KEYS = set(REPORT_KEYS)
PAIRWISE_KEYS = set(TABLES["pairwise"])
PER_ANNOTATOR_KEYS = set(TABLES["per_annotator"])
AUDIT_KEYS = {
    "n_items",
    "nan_fraction",
    "krippendorff_alpha",
    "accuracy",
    "precision",
    "recall",
    "f1",
    "tp",
    "fp",
    "fn",
    "tn",
}


def test_agreement_ehr_rel_a_json(cli, ehr_rel_a):
    r = cli("agreement", ehr_rel_a, "--json")
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert set(d) == AGREEMENT_KEYS
    assert all(set(p) == PAIRWISE_KEYS for p in d["pairwise"]) and len(d["pairwise"]) == 10
    assert all(set(p) == PER_ANNOTATOR_KEYS for p in d["per_annotator"])
    assert set(d["icc"]) == {"C1", "Ck"}
    assert set(d["human_upper_bound"]) == {"inclusive", "exclusive"}
    n = P.EHR_REL_A_SHAPE.value["items"]
    assert (d["n_items"], d["n_annotators"], d["n_ratings"], d["level"]) == (
        n,
        5,
        5 * n,
        "ordinal",
    )
    t3 = P.EHR_REL_A_TABLE3.value
    assert round(d["krippendorff_alpha"], 2) == t3["alpha"]
    assert round(d["mean_pairwise_spearman"], 2) == t3["mean_rho"]
    assert (round(d["icc"]["C1"], 2), round(d["icc"]["Ck"], 2)) == (t3["icc_c1"], t3["icc_ck"])
    assert round(d["kendall_w"], 2) == t3["kendall_w"]
    ab = next(p for p in d["pairwise"] if (p["annotator_a"], p["annotator_b"]) == ("A", "B"))
    assert round(ab["krippendorff_alpha"], 2) == P.EHR_REL_A_PAIRWISE_ALPHA.value[("A", "B")]
    assert ab["n_items"] == n
    e = next(p for p in d["per_annotator"] if p["annotator"] == "E")
    assert (
        round(e["krippendorff_alpha"], 2),
        round(e["cohen_kappa_quadratic"], 2),
        round(e["spearman_rho"], 2),
    ) == P.EHR_REL_A_PER_DOCTOR.value["E"]


def test_agreement_tables_and_level(cli, ehr_rel_a):
    r = cli("agreement", ehr_rel_a)
    assert r.exit_code == 0
    for text in (
        "Krippendorff's alpha",
        "ICC(C,1)",
        "Pairwise agreement",
        "Per annotator",
        "0.636",
        "0.732",
    ):
        assert text in r.stdout
    r = cli("agreement", ehr_rel_a, "--level", "interval", "--json")
    assert json.loads(r.stdout)["level"] == "interval"


@pytest.fixture
def audit_files(tmp_path):
    pairs = tmp_path / "pairs.csv"
    ratings = tmp_path / "ratings.csv"
    lines = ["pair_id,term_1,term_2,auto_label,dataset,difficulty,negative_strategy"]
    rlines = ["pair_id,annotator,rating,rated_at"]
    votes = {
        0: ("same", "same", "same"),
        1: ("same", "same", "dont_know"),
        2: ("not_same", "not_same", "same"),
        3: ("same", "not_same", "dont_know"),
        4: ("not_same", "not_same", "not_same"),
        5: ("same", "same", "not_same"),
    }
    n = 0
    for ds in ("snomed", "mimic"):
        for i, label in enumerate((1, 1, 0, 0, 0, 0)):
            pid = f"{ds}-{i}"
            lines.append(f"{pid},term a{i},term b{i},{label},{ds},easy,random")
            for ann, v in zip(("doc1", "doc2", "doc3"), votes[i]):
                n += 1
                rlines.append(f"{pid},{ann},{v},2026-01-01T10:{n // 60:02d}:{n % 60:02d}Z")
    pairs.write_text("\n".join(lines) + "\n")
    ratings.write_text("\n".join(rlines) + "\n")
    return pairs, ratings


def test_audit_json(cli, audit_files):
    pairs, ratings = audit_files
    r = cli("audit", "--pairs", pairs, "--ratings", ratings, "--json")
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert set(d) == {"overall", "by_group"}
    assert set(d["overall"]) == AUDIT_KEYS
    assert len(d["by_group"]) == 2
    assert set(d["by_group"][0]) == AUDIT_KEYS | {"dataset", "difficulty", "negative_strategy"}
    o = d["overall"]
    # per dataset: p0 tp, p1 tp, p2 tn, p3 no majority, p4 tn, p5 fp (truth same, label 0 -> fn)
    assert (o["n_items"], o["tp"], o["fp"], o["fn"], o["tn"]) == (12, 4, 0, 2, 4)
    assert o["nan_fraction"] == pytest.approx(2 / 12)
    assert o["accuracy"] == pytest.approx(0.8) and o["precision"] == 1.0
    assert o["recall"] == pytest.approx(4 / 6)


def test_audit_options(cli, audit_files):
    pairs, ratings = audit_files
    r = cli(
        "audit",
        "--pairs",
        pairs,
        "--ratings",
        ratings,
        "--by",
        "dataset",
        "--majority",
        "decisive",
        "--bootstrap",
        "60",
        "--seed",
        "1",
        "--json",
    )
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert [set(g) - AUDIT_KEYS for g in d["by_group"]][0] >= {"dataset", "accuracy_ci"}
    # decisive: p3 (same, not_same, don't know) still has no majority; p1 keeps its majority
    assert d["overall"]["nan_fraction"] == pytest.approx(2 / 12)
    for k in ("krippendorff_alpha_ci", "accuracy_ci", "precision_ci", "recall_ci"):
        assert len(d["overall"][k]) == 2
    r = cli("audit", "--pairs", pairs, "--ratings", ratings)
    assert r.exit_code == 0 and "Overall" in r.stdout and "snomed" in r.stdout


def test_bad_input_exit_2(cli, audit_files, tmp_path):
    pairs, ratings = audit_files
    r = cli("audit", "--pairs", pairs, "--ratings", ratings, "--by", "hospital", "--json")
    assert r.exit_code == 2 and "hospital" in r.stderr and str(pairs) in r.stderr
    bad = tmp_path / "bad.csv"
    bad.write_text("pair_id,annotator,rating\nsnomed-0,doc1,same\nsnomed-1,doc1,maybe\n")
    r = cli("audit", "--pairs", pairs, "--ratings", bad)
    assert r.exit_code == 2 and "row 3" in r.stderr and "rating" in r.stderr
    stray = tmp_path / "stray.csv"
    stray.write_text("pair_id,annotator,rating\nnope,doc1,same\n")
    r = cli("audit", "--pairs", pairs, "--ratings", stray)
    assert r.exit_code == 2 and "nope" in r.stderr
    nolabel = tmp_path / "nolabel.csv"
    nolabel.write_text("pair_id,term_1,term_2\nsnomed-0,a,b\n")
    r = cli("audit", "--pairs", nolabel, "--ratings", ratings)
    assert r.exit_code == 2
    r = cli("agreement", tmp_path / "missing.csv", "--json")
    assert r.exit_code == 2
    numeric = tmp_path / "num.csv"
    numeric.write_text(
        "pair_id,annotator,rating\nsnomed-0,x,1\nsnomed-0,y,2\nsnomed-1,x,0\nsnomed-1,y,3\n"
    )
    r = cli("audit", "--pairs", pairs, "--ratings", numeric)
    assert r.exit_code == 2 and "scale" in r.stderr
    r = cli("agreement", numeric, "--level", "bogus")
    assert r.exit_code == 2


def test_agreement_long_file_degenerate(cli, tmp_path):
    f = tmp_path / "one.csv"
    f.write_text("pair_id,annotator,rating\na,x,same\nb,x,not_same\n")
    r = cli("agreement", f, "--json")
    assert r.exit_code == 0
    d = json.loads(r.stdout)
    assert d["krippendorff_alpha"] is None and d["level"] == "nominal" and d["pairwise"] == []


def test_services_file_helpers(audit_files, ehr_rel_a):
    from data_schemas.scales import BINARY
    from medsim_annot.services.agreement import (
        alpha_by_group_report,
        load_ratings_file,
        majority_table,
        rater_quality_report,
    )
    from medsim_annot.services.studies import load_pairs

    pairs_path, ratings_path = audit_files
    pairs = load_pairs(pairs_path)
    loaded = load_ratings_file(ratings_path, pairs=pairs)
    assert loaded.scale.name == "binary" and loaded.source == "long"
    table = majority_table(loaded.ratings, loaded.scale)
    assert table.loc["snomed-0", "majority_value"] == "same"
    assert table.loc["snomed-3", "majority_value"] is None
    groups = alpha_by_group_report(loaded.ratings, pairs, loaded.scale)
    assert groups["dataset"].tolist() == ["mimic", "snomed"] and len(groups.columns) == 5
    q = rater_quality_report(loaded.ratings, BINARY, history=loaded.history)
    assert set(q.per_annotator["annotator"]) == {"doc1", "doc2", "doc3"}
    ehr = load_ratings_file(ehr_rel_a)
    assert ehr.source == "ehr_rel" and ehr.scale.name == "relatedness-0-3"
    assert len(ehr.pairs) == P.EHR_REL_A_SHAPE.value["items"]
    num = majority_table(ehr.ratings, ehr.scale)
    assert {"mean", "median"} <= set(num.columns)


def test_agreement_long_k_of_n_with_pairs(cli, tmp_path):
    pairs = tmp_path / "p.tsv"
    ratings = tmp_path / "r.tsv"
    names = "ABCDE"
    plines = ["pair_id\tterm_1\tterm_2"]
    rlines = ["pair_id\tannotator\trating"]
    for i in range(40):
        plines.append(f"q{i}\tx{i}\ty{i}")
        for j in range(3):
            ann = names[(i + j) % 5]
            rlines.append(f"q{i}\t{ann}\t{min(3, (i % 4) + (j == 2 and i % 3 == 0))}")
    pairs.write_text("\n".join(plines) + "\n")
    ratings.write_text("\n".join(rlines) + "\n")
    r = cli("agreement", ratings, "--pairs", pairs, "--json")
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert (d["n_items"], d["n_annotators"], d["n_ratings"], d["level"]) == (40, 5, 120, "ordinal")
    assert 0.5 < d["icc"]["C1"] <= 1 and 0.5 < d["kendall_w"] <= 1
    r = cli("agreement", ratings)
    assert "3 rating slots" in r.stdout


def test_a_registered_figure_reaches_the_json_and_the_summary(monkeypatch):
    """A coefficient is its function and one ``Figure`` in ``SUMMARY_FIGURES``: its value
    is in ``to_dict`` (under its path) and in the summary table (under its column)."""
    import numpy as np

    from medsim_annot.stats import ratings_from_matrix
    from medsim_annot.stats import report as R
    from medsim_annot.stats._frame import Estimate

    def share_unanimous(coded, level):
        m = coded.matrix()
        n = (~np.isnan(m)).sum(axis=1)
        same = np.nanmin(m, axis=1) == np.nanmax(m, axis=1)
        return Estimate(float(same[n >= 2].mean()), int((n >= 2).sum()))

    figure = R.Figure("share_unanimous", "unanimous", "unanimous share", statistic=share_unanimous)
    monkeypatch.setattr(R, "SUMMARY_FIGURES", (*R.SUMMARY_FIGURES, figure))
    rep = R.agreement_report(ratings_from_matrix([[1, 1], [0, 1], [2, 2], [1, 1]]), "nominal")
    assert rep.to_dict()["share_unanimous"] == rep.summary()["unanimous"] == 0.75
    assert rep.value(figure) == 0.75
