"""``medsim agreement`` on an exported 2 + 1 study: the gold export records the
design (a per-row ``calibration`` column, the manifest's ``design``), and the figures computed
on the file are the dashboard's for the same study — α, κ, ICC and W on the calibration pairs
only, said next to the figures; the majority on every pair. A gold file without design info
gets agreement over every pair."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from data_schemas.scales import BINARY, RELATEDNESS_0_3
from medsim_annot.services import agreement as agreement_svc
from medsim_annot.services import annotation as A
from medsim_annot.services.design import DesignOptions, create_designed_study
from medsim_annot.services.gold.export import export_gold
from medsim_annot.services.gold.table import gold_table
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all

DOCTORS = ("ann", "bob", "cyd")
FIGURES = ("krippendorff_alpha", "kendall_w", "mean_pairwise_spearman")


def _pairs(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "pair_id": [f"p{i}" for i in range(n)],
            "term_1": [f"a{i}" for i in range(n)],
            "term_2": [f"b{i}" for i in range(n)],
            "auto_label": pd.array([i % 2 for i in range(n)], dtype="Int64"),
        }
    )


def _opinion(doctor: str, i: int) -> str:
    truth = "same" if i % 2 else "not_same"
    wrong = {"ann": i % 3 == 0, "bob": i % 4 == 1, "cyd": i % 5 == 2}[doctor]
    return ("not_same" if truth == "same" else "same") if wrong else truth


def _index(view) -> int:
    term = view.term_1 if view.term_1.startswith("a") else view.term_2
    return int(term[1:])


def _simulate(name: str, *, calibration: int, tiebreak: bool = True) -> None:
    res = create_designed_study(
        name,
        _pairs(24),
        BINARY,
        list(DOCTORS),
        DesignOptions(per_item=2, tiebreak=tiebreak, calibration=calibration, seed=3),
    )
    ids = {a["name"]: authenticate_annotator(a["access_code"]).annotator_id for a in res.annotators}
    for name_, aid in ids.items():
        while (state := A.queue_state(aid)).first_unrated is not None:
            view = A.get_pair(aid, state.first_unrated)
            A.submit_rating(aid, view.position, _opinion(name_, _index(view)))
    # The others' last ratings may have added tiebreak slots to a finished queue: rate those.
    for name_, aid in ids.items():
        while (state := A.queue_state(aid)).first_unrated is not None:
            view = A.get_pair(aid, state.first_unrated)
            A.submit_rating(aid, view.position, _opinion(name_, _index(view)))


@pytest.fixture
def db(db_url):
    dispose_all()
    yield db_url
    dispose_all()


def _same_figures(got: dict, want: dict) -> None:
    for key in FIGURES:
        assert got[key] == pytest.approx(want[key], nan_ok=True), key
    assert got["icc"] == pytest.approx(want["icc"], nan_ok=True)
    assert got["n_items"] == want["n_items"] and got["n_ratings"] == want["n_ratings"]
    kappas = {(p["annotator_a"], p["annotator_b"]): p["cohen_kappa"] for p in got["pairwise"]}
    assert kappas == pytest.approx(
        {(p["annotator_a"], p["annotator_b"]): p["cohen_kappa"] for p in want["pairwise"]},
        nan_ok=True,
    )


def test_agreement_on_an_exported_two_plus_one_study_is_the_dashboards(db, cli, tmp_path):
    from medsim_annot.services.dashboard import study_dashboard

    _simulate("tb", calibration=6)
    dash = study_dashboard(open_study("tb"), use_cache=False)
    assert "6 calibration pairs" in dash.agreement_basis
    for fmt in ("csv", "tsv", "jsonl", "parquet"):
        out = tmp_path / f"gold.{fmt}"
        result = export_gold(open_study("tb"), out)
        assert result.manifest["design"] == {
            "per_item": 2,
            "annotators": 3,
            "tiebreak": {"tolerance": 0.0},
            "calibration_pairs": 6,
            "agreement_basis": "calibration",
        }
        assert result.manifest["columns"][-1] == "calibration"
        r = cli("agreement", out, "--json")
        assert r.exit_code == 0
        got = json.loads(r.stdout)
        _same_figures(got, dash.agreement.to_dict())
        assert got["n_items"] == 6
        assert got["basis"] == {
            "pairs": "calibration",
            "n_pairs": 6,
            "n_rated": 6,
            "note": dash.agreement_basis,
        }
        # The majority (and the audit) on every pair.
        assert got["majority"]["pairs"] == "all" and got["majority"]["n_pairs"] == 24
        assert got["majority"]["n_with_majority"] == int(dash.gold.table["majority"].notna().sum())
        r = cli("agreement", out)
        assert r.exit_code == 0 and "computed on the 6 calibration pairs only" in r.stdout.replace(
            "\n", " "
        )
        assert "of 24 pairs have one" in r.stdout
    # The audit reads the same file and uses the majority of every pair, as the dashboard.
    pairs_file = tmp_path / "pairs.csv"
    _pairs(24).to_csv(pairs_file, index=False)
    r = cli("audit", "--pairs", pairs_file, "--ratings", tmp_path / "gold.csv", "--json")
    assert r.exit_code == 0
    overall = json.loads(r.stdout)["overall"]
    assert overall == pytest.approx(dash.audit.to_dict()["overall"], nan_ok=True)


def test_agreement_on_the_hugging_face_export_and_without_calibration(db, cli, tmp_path):
    from medsim_annot.services.dashboard import study_dashboard
    from medsim_annot.services.interop import export_gold_hf

    _simulate("tb0", calibration=0)
    dash = study_dashboard(open_study("tb0"), use_cache=False)
    assert dash.agreement_basis == "" and agreement_svc.TIEBREAK_WITHOUT_CALIBRATION in dash.notes
    export_gold_hf(open_study("tb0"), tmp_path / "hf")
    (data,) = sorted((tmp_path / "hf").rglob("*.parquet"))
    assert pd.read_parquet(data)["calibration"].dtype == bool
    r = cli("agreement", data, "--json")
    assert r.exit_code == 0
    got = json.loads(r.stdout)
    _same_figures(got, dash.agreement.to_dict())
    assert got["basis"]["pairs"] == "all"
    assert got["basis"]["note"] == agreement_svc.TIEBREAK_WITHOUT_CALIBRATION
    card = (tmp_path / "hf" / "README.md").read_text(encoding="utf-8")
    assert "only where the first two disagree" in card


def test_a_gold_file_without_design_info_gets_agreement_over_every_pair(db, cli, tmp_path):
    from medsim_annot.services.dashboard import study_dashboard

    _simulate("kn", calibration=4, tiebreak=False)
    dash = study_dashboard(open_study("kn"), use_cache=False)
    out = tmp_path / "gold.csv"
    result = export_gold(open_study("kn"), out)
    assert "calibration" not in result.manifest["columns"]
    assert result.manifest["design"]["agreement_basis"] == "all"
    r = cli("agreement", out, "--json")
    assert r.exit_code == 0
    got = json.loads(r.stdout)
    assert "basis" not in got and "majority" not in got
    _same_figures(got, dash.agreement.to_dict())


def test_bad_calibration_cell_names_file_row_and_column(db, cli, tmp_path):
    _simulate("bad", calibration=3)
    out = tmp_path / "gold.csv"
    export_gold(open_study("bad"), out)
    frame = pd.read_csv(out, dtype=str, keep_default_na=False)
    frame.loc[4, "calibration"] = "maybe"
    frame.to_csv(out, index=False)
    r = cli("agreement", out)
    assert r.exit_code == 2
    err = r.stderr
    assert "gold.csv" in err and "row 6" in err and "calibration" in err and "maybe" in err


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from(["", "0", "1", "2", "3"]), min_size=3, max_size=3),
        min_size=2,
        max_size=12,
    )
)
def test_gold_export_round_trip_keeps_every_rating(tmp_path_factory, grid):
    """A gold table written as CSV and read by ``load_ratings_file`` gives back exactly the
    current ratings it was built from (pair, annotator, value), on a numeric scale."""
    pairs = pd.DataFrame(
        {
            "pair_id": [f"q{i}" for i in range(len(grid))],
            "term_1": [f"x{i}" for i in range(len(grid))],
            "term_2": [f"y{i}" for i in range(len(grid))],
        }
    )
    rows = [
        {"pair_id": f"q{i}", "annotator": f"d{j}", "rating": v}
        for i, r in enumerate(grid)
        for j, v in enumerate(r)
        if v != ""
    ]
    if not rows:
        return
    cur = pd.DataFrame(rows)
    table = gold_table(pairs, cur, RELATEDNESS_0_3).table
    path = tmp_path_factory.mktemp("rt") / "gold.csv"
    table.to_csv(path, index=False)
    loaded = agreement_svc.load_ratings_file(path, scale=RELATEDNESS_0_3)
    got = sorted(
        (p, a, float(v))
        for p, a, v in loaded.ratings[["pair_id", "annotator", "value"]].itertuples(index=False)
    )
    assert got == sorted((r["pair_id"], r["annotator"], float(r["rating"])) for r in rows)
    assert loaded.agreement_pairs is None and not loaded.tiebreak_design
