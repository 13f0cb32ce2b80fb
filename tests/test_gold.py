"""Gold export: each filter, the fixed filter order, byte-identical re-export, formula
escaping, the manifest (counts, alpha, version, SHA-256), the EHR-RelA round trip, the CLI."""

from __future__ import annotations

import datetime as dt
import hashlib
import json

import pandas as pd
import pytest

import medsim_annot
from data_schemas.errors import OptionError
from data_schemas.gold import FILTER_ORDER, manifest_path
from medsim_annot.errors import UsageProblem
from medsim_annot.io import read_table
from medsim_annot.services import agreement as agreement_svc
from medsim_annot.services import studies as svc
from medsim_annot.services.adjudication import decisions as decisions_svc
from medsim_annot.services.gold.export import export_gold
from medsim_annot.services.people.adjudicators import add_adjudicator
from medsim_annot.services.study_handle import open_study
from tests import published as P
from tests.qa_data import make_tiny


@pytest.fixture
def tiny(db_url, tmp_path):
    return make_tiny(tmp_path / "in")


def _ids(path) -> list[str]:
    return read_table(path)["pair_id"].tolist()


def test_rows_columns_and_flags(tiny, tmp_path):
    out = tmp_path / "gold.csv"
    m = export_gold(open_study(tiny), out)
    t = read_table(out)
    assert t["pair_id"].tolist() == ["p1", "p2", "p3", "p4", "p5"]
    assert list(t.columns[:5]) == ["pair_id", "term_1", "term_2", "dataset", "auto_label"]
    assert {"rater_A", "rater_B", "rater_C", "majority", "n_ratings"} <= set(t.columns)
    row = t.set_index("pair_id")
    assert row.loc["p3", ["rater_A", "rater_B", "rater_C"]].tolist() == [
        "same",
        "not_same",
        "dont_know",
    ]
    assert row.loc["p5", "rater_B"] == "" and row.loc["p5", "n_ratings"] == "1"
    assert row["majority"].tolist() == ["same", "not_same", "", "same", "same"]
    assert row["no_majority"].tolist() == ["false", "false", "true", "false", "false"]
    assert row["all_different"].tolist() == ["false", "false", "true", "false", "false"]
    assert row["unanimous"].tolist() == ["true", "false", "false", "false", "false"]
    assert row["unclear_any"].tolist() == ["false", "false", "false", "true", "false"]
    assert row["auto_label_disagrees"].tolist() == ["false", "false", "false", "true", "false"]
    assert row["verified"].tolist() == ["true", "true", "false", "false", "true"]
    sources = m.manifest["counts"].pop("label_source")
    assert m.manifest["counts"] == {
        "pairs": 5,
        "rated": 5,
        "exported": 5,
        "annotators": 3,
        "ratings": 13,
    }
    assert row["label_source"].tolist() == [
        "unanimous",
        "majority",
        "unresolved",
        "majority",
        "majority",
    ]
    assert row["label"].tolist() == ["same", "not_same", "", "same", "same"]
    assert {k: v for k, v in sources.items() if v} == {
        "unanimous": 1,
        "majority": 3,
        "unresolved": 1,
    }
    assert m.manifest["filter_steps"] == []


@pytest.mark.parametrize(
    "option, expected",
    [
        ({"min_ratings": 2}, ["p1", "p2", "p3", "p4"]),
        ({"exclude_unclear": True}, ["p1", "p2", "p3", "p5"]),
        ({"require_majority": True}, ["p1", "p2", "p4", "p5"]),
        ({"exclude_all_different": True}, ["p1", "p2", "p4", "p5"]),
        ({"only_verified": True}, ["p1", "p2", "p5"]),
    ],
)
def test_each_filter(tiny, tmp_path, option, expected):
    out = tmp_path / "gold.csv"
    m = export_gold(open_study(tiny), out, **option)
    assert _ids(out) == expected
    name = next(iter(option))
    assert m.manifest["filter_steps"] == [
        {"filter": name, "value": option[name], "before": 5, "after": len(expected)}
    ]
    assert m.manifest["filters"][name] == option[name]


def test_filters_run_in_fixed_order_with_counts(tiny, tmp_path):
    out = tmp_path / "gold.jsonl"
    m = export_gold(
        open_study(tiny),
        out,
        only_verified=True,
        exclude_all_different=True,
        require_majority=True,
        exclude_unclear=True,
        min_ratings=2,
    )
    assert [s["filter"] for s in m.manifest["filter_steps"]] == list(FILTER_ORDER)
    assert [(s["before"], s["after"]) for s in m.manifest["filter_steps"]] == [
        (5, 4),
        (4, 3),
        (3, 2),
        (2, 2),
        (2, 2),
    ]
    assert _ids(out) == ["p1", "p2"]
    assert m.manifest["counts"]["exported"] == 2


@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl", "parquet"])
def test_byte_identical_reexport(tiny, tmp_path, fmt):
    a, b = tmp_path / f"a.{fmt}", tmp_path / f"b.{fmt}"
    ma = export_gold(
        open_study(tiny), a, require_majority=True, now=dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    )
    mb = export_gold(open_study(tiny), b, require_majority=True)
    assert a.read_bytes() == b.read_bytes()
    assert ma.manifest["sha256"] == mb.manifest["sha256"]
    assert ma.manifest["exported_at"] == "2026-01-01T00:00:00Z" != mb.manifest["exported_at"]
    strip = lambda m: {k: v for k, v in m.items() if k not in ("exported_at", "file")}
    assert strip(ma.manifest) == strip(mb.manifest)


def test_formula_escaping_csv_and_tsv(tiny, tmp_path):
    for fmt in ("csv", "tsv"):
        out = tmp_path / f"gold.{fmt}"
        export_gold(open_study(tiny), out)
        text = out.read_text(encoding="utf-8")
        for cell in ("'-ache", "'+pain", "'@home"):
            assert cell in text
        assert '\'=HYPERLINK(""http://x"")' in text
        for line in text.splitlines()[1:]:
            sep = "," if fmt == "csv" else "\t"
            for cell in line.split(sep):
                assert not cell.lstrip('"').startswith(("=", "+", "-", "@")), cell
    # JSON Lines and Parquet carry data, not spreadsheet cells: kept verbatim.
    export_gold(open_study(tiny), tmp_path / "gold.jsonl")
    first = json.loads((tmp_path / "gold.jsonl").read_text(encoding="utf-8").splitlines()[1])
    assert first["term_1"] == '=HYPERLINK("http://x")'


def test_manifest_content_and_sha256(tiny, tmp_path):
    out = tmp_path / "gold.parquet"
    m = export_gold(open_study(tiny), out, require_majority=True)
    on_disk = json.loads(manifest_path(out).read_text(encoding="utf-8"))
    assert on_disk == m.manifest == m.to_dict()
    assert (m.path, m.format, m.manifest_path, m.is_folder) == (
        out,
        "parquet",
        manifest_path(out),
        False,
    )
    assert (m.sha256, m.counts, m.filter_steps) == (
        m.manifest["sha256"],
        m.manifest["counts"],
        m.manifest["filter_steps"],
    )
    assert (m.exported, m.pairs) == (m.counts["exported"], m.counts["pairs"])
    assert m.label_sources == m.counts["label_source"]
    assert m.manifest["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert (
        m.manifest["study"] == tiny
        and m.manifest["format"] == "parquet"
        and m.manifest["file"] == "gold.parquet"
    )
    assert m.manifest["scale"]["name"] == "binary" and m.manifest["scale"]["level"] == "nominal"
    assert m.manifest["software_version"] == medsim_annot.__version__
    assert m.manifest["ratings_version"] == {
        "count": 13,
        "max_rating_id": svc.ratings_version(open_study(tiny))[1],
    }
    assert dt.datetime.fromisoformat(m.manifest["exported_at"].replace("Z", "+00:00"))
    ratings, scale = svc.ratings_frame(open_study(tiny))
    expected = agreement_svc.agreement_report(ratings, scale).krippendorff_alpha
    assert m.manifest["krippendorff_alpha"]["study"] == pytest.approx(expected)
    sub = ratings[ratings["pair_id"].isin(["p1", "p2", "p4", "p5"])]
    assert m.manifest["krippendorff_alpha"]["exported"] == pytest.approx(
        agreement_svc.agreement_report(sub, scale).krippendorff_alpha
    )
    frame = pd.read_parquet(out)
    assert frame["pair_id"].tolist() == ["p1", "p2", "p4", "p5"]
    assert list(frame.columns) == m.manifest["columns"]


def test_bad_options_write_nothing(tiny, tmp_path, db_url):
    out = tmp_path / "gold.csv"
    with pytest.raises(OptionError, match=r"\(min_ratings\)"):
        export_gold(open_study(tiny), out, min_ratings=0)
    with pytest.raises(UsageProblem, match="no study named"):
        export_gold(open_study("nope"), out)
    assert not out.exists() and not manifest_path(out).exists()


def test_ehr_rel_a_round_trip(db_url, ehr_rel_a, tmp_path):
    svc.import_ehr_rel(ehr_rel_a, "ehr-a")
    out = tmp_path / "ehr.csv"
    m = export_gold(open_study("ehr-a"), out)
    original = read_table(ehr_rel_a)
    exported = read_table(out)
    assert len(exported) == len(original) == P.EHR_REL_A_SHAPE.value["items"]
    assert (
        exported["pair_id"].tolist()
        == (original["snomed_id_1"] + "-" + original["snomed_id_2"]).tolist()
    )
    assert exported["term_1"].tolist() == original["snomed_label_1"].tolist()
    assert exported["concept_id_2"].tolist() == original["snomed_id_2"].tolist()
    assert exported["CUI_1"].tolist() == original["CUI_1"].tolist()
    for rater in "ABCDE":
        col = f"rater_{rater}"
        assert [float(v) if v else None for v in exported[col]] == [
            float(v) if v else None for v in original[col]
        ], col
    mean = exported["mean"].astype(float)
    assert (mean - original["mean_rating"].astype(float)).abs().max() < 0.051
    assert m.manifest["scale"]["name"] == "relatedness-0-3"
    assert round(m.manifest["krippendorff_alpha"]["study"], 2) == P.EHR_REL_A_TABLE3.value["alpha"]
    assert {"mean", "median"} <= set(exported.columns)


def test_only_verified_needs_auto_labels(db_url, ehr_rel_a, tmp_path):
    svc.import_ehr_rel(ehr_rel_a, "ehr-a")
    with pytest.raises(UsageProblem, match="no automatic labels"):
        export_gold(open_study("ehr-a"), tmp_path / "x.csv", only_verified=True)


def test_cli_export_gold_matches_service(tiny, tmp_path, cli):
    out = tmp_path / "cli.tsv"
    r = cli(
        "export",
        "gold",
        tiny,
        "--out",
        out,
        "--require-majority",
        "--min-ratings",
        "2",
        "--exclude-unclear",
        "--exclude-all-different",
        "--only-verified",
        "--json",
    )
    assert r.exit_code == 0, r.stderr
    m = json.loads(r.stdout)
    assert m["counts"]["exported"] == 2 and m["format"] == "tsv"
    svc_out = tmp_path / "svc.tsv"
    export_gold(
        open_study(tiny),
        svc_out,
        require_majority=True,
        min_ratings=2,
        exclude_unclear=True,
        exclude_all_different=True,
        only_verified=True,
    )
    assert out.read_bytes() == svc_out.read_bytes()
    r = cli("export", "gold", tiny, "--out", tmp_path / "x.data", "--format", "parquet")
    assert r.exit_code == 0, r.stderr
    assert "wrote" in r.stdout and pd.read_parquet(tmp_path / "x.data").shape[0] == 5


def test_cli_errors_exit_2(tiny, tmp_path, cli):
    r = cli("export", "gold", "nope", "--out", tmp_path / "x.csv")
    assert r.exit_code == 2 and "no study named 'nope'" in r.stderr
    r = cli("export", "gold", tiny, "--out", tmp_path / "x.xlsx")
    assert r.exit_code == 2 and "extension" in r.stderr
    r = cli("export", "gold", tiny, "--out", tmp_path / "x.csv", "--min-ratings", "0")
    assert r.exit_code == 2 and "--min-ratings" in r.stderr
    assert not (tmp_path / "x.csv").exists()


def test_cli_report_is_self_contained(tiny, tmp_path, cli):
    out = tmp_path / "report.html"
    r = cli("report", tiny, "--out", out)
    assert r.exit_code == 0, r.stderr
    text = out.read_text(encoding="utf-8")
    assert "<script src=" not in text and "Plotly.newPlot" in text
    assert "AAAI 2020 Table 3" in text and "@home" in text


def test_majority_or_adjudicated_keeps_decided_pairs(tiny, tmp_path, cli):
    """Issue 33, item 2: "require a majority" dropped the pairs an adjudicator decided;
    "a majority or an adjudicated label" keeps them and says so in the manifest."""
    study = open_study(tiny)
    add_adjudicator(study, "Dr Lead")
    decisions_svc.decide(
        study, "p3", label="same", reason="rater_error", adjudicator="Dr Lead", seen_version=0
    )
    only = export_gold(study, tmp_path / "m.csv", require_majority=True)
    assert "p3" not in _ids(tmp_path / "m.csv")
    both = export_gold(study, tmp_path / "b.csv", require_majority=True, or_adjudicated=True)
    assert _ids(tmp_path / "b.csv") == ["p1", "p2", "p3", "p4", "p5"]
    assert both.label_sources["adjudicated"] == 1 and only.label_sources["adjudicated"] == 0
    assert both.filter_steps == [
        {"filter": "require_majority_or_adjudicated", "value": True, "before": 5, "after": 5}
    ]
    assert both.manifest["filters"]["or_adjudicated"] is True
    assert "or_adjudicated" not in only.manifest["filters"]  # older manifests keep their bytes
    with pytest.raises(UsageProblem, match="or_adjudicated"):
        export_gold(study, tmp_path / "x.csv", or_adjudicated=True)
    r = cli(
        "export",
        "gold",
        tiny,
        "--out",
        str(tmp_path / "c.csv"),
        "--require-majority",
        "--or-adjudicated",
    )
    assert r.exit_code == 0, r.stderr
    assert (tmp_path / "c.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    assert "adjudicated 1" in r.stdout
