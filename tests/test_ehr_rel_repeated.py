"""EHR-Rel wide files that list a concept pair on more than one row.

A row is an item, as in the published tables (Schulz et al., COLING 2020, Tables 2-3 count
rows). A synthetic wide file in the EHR-RelB design (each row rated by 3 of 5 doctors) lists
one pair three times and another twice, each time by a different triple of doctors with
different ratings. Every figure of ``medsim agreement --json``, ``medsim audit``, the import
round trip, the gold export and the dashboard is checked against a computation written here
from the file alone, with rows as items: krippendorff, scikit-learn, SciPy and pingouin
called directly on a rows x raters matrix, none of the project's statistics.
"""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd
import pingouin as pg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import rankdata, spearmanr
from sklearn.metrics import cohen_kappa_score

from data_schemas.ehr_rel import read_ehr_rel, repeated_pairs_note, row_pair_ids
from data_schemas.errors import InputError
from data_schemas.ratings import to_ratings_frame
from data_schemas.scales import RELATEDNESS_0_3
from medsim_annot.io import read_table, write_table
from medsim_annot.services.study_handle import open_study
from tests.conftest import examples

RATERS = "ABCDE"
NOTE = repeated_pairs_note(2)


# --------------------------------------------------------------------------- the file
def _wide(binary: bool = False, seed: int = 12) -> pd.DataFrame:
    """40 rows, 3 of 5 doctors per row; pair 100-200 on rows 4, 31 and 37, pair 300-400 on
    rows 9 and 35, each time by another triple with other ratings."""
    rng = np.random.default_rng(seed)
    rows = []
    triples = list(combinations(RATERS, 3))
    for i in range(40):
        id1, id2 = f"{1000 + i}", f"{5000 + i}"
        who = triples[i % len(triples)]
        if i in (3, 30, 36):
            id1, id2 = "100", "200"
            who = {3: ("A", "B", "C"), 30: ("C", "D", "E"), 36: ("A", "D", "E")}[i]
        if i in (8, 34):
            id1, id2 = "300", "400"
            who = {8: ("A", "B", "D"), 34: ("B", "C", "E")}[i]
        latent = rng.uniform(0, 3)
        rec = {
            "snomed_id_1": id1,
            "snomed_label_1": f"term {id1}",
            "snomed_id_2": id2,
            "snomed_label_2": f"term {id2}",
        }
        for r in RATERS:
            if r in who:
                v = int(np.clip(round(latent + rng.normal(0, 0.7)), 0, 3))
                rec[f"rater_{r}"] = ("same" if v >= 2 else "not_same") if binary else f"{v}.0"
            else:
                rec[f"rater_{r}"] = ""
        rec["mean_rating"] = ""
        rows.append(rec)
    frame = pd.DataFrame(rows)
    # the repeated pairs really are rated differently each time
    if not binary:
        for a, b in ((3, 30), (30, 36), (8, 34)):
            assert frame.iloc[a][[f"rater_{r}" for r in RATERS]].tolist() != (
                frame.iloc[b][[f"rater_{r}" for r in RATERS]].tolist()
            )
    return frame


@pytest.fixture
def wide_file(tmp_path) -> Path:
    return write_table(_wide(), tmp_path / "ehr-rel-repeated.tsv")


def _matrix(path: Path) -> np.ndarray:
    """rows x raters matrix of the file (NaN = not rated), straight from the text."""
    raw = read_table(path)
    return np.array(
        [[float(v) if v != "" else np.nan for v in raw[f"rater_{r}"]] for r in RATERS]
    ).T


# --------------------------------------------------------------------------- rows as items
def _rho(x, y) -> float:
    both = ~np.isnan(x) & ~np.isnan(y)
    if both.sum() < 2 or np.ptp(x[both]) == 0 or np.ptp(y[both]) == 0:
        return np.nan
    return float(spearmanr(x[both], y[both]).statistic)


def _kendall_w_tie_corrected(slots: np.ndarray) -> float:
    n, m = slots.shape  # n items, m raters
    ranks = np.column_stack([rankdata(slots[:, j]) for j in range(m)])
    r = ranks.sum(axis=1)
    s = ((r - r.mean()) ** 2).sum()
    ties = 0.0
    for j in range(m):
        _, counts = np.unique(slots[:, j], return_counts=True)
        ties += (counts**3 - counts).sum()
    return float(12 * s / (m**2 * (n**3 - n) - m * ties))


def rows_as_items(m: np.ndarray) -> dict:
    """Every coefficient of the agreement report, each row of *m* (rows x raters) an item."""
    out: dict = {
        "n_items": int((~np.isnan(m)).any(axis=1).sum()),
        "n_ratings": int((~np.isnan(m)).sum()),
        "krippendorff_alpha": krippendorff.alpha(
            reliability_data=m.T, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3]
        ),
    }
    pairwise = {}
    for i, j in combinations(range(len(RATERS)), 2):
        x, y = m[:, i], m[:, j]
        both = ~np.isnan(x) & ~np.isnan(y)
        pairwise[(RATERS[i], RATERS[j])] = {
            "n_items": int(both.sum()),
            "krippendorff_alpha": krippendorff.alpha(
                reliability_data=np.vstack([x, y])[:, both],
                level_of_measurement="ordinal",
                value_domain=[0, 1, 2, 3],
            ),
            "cohen_kappa": cohen_kappa_score(x[both], y[both], labels=[0, 1, 2, 3]),
            "cohen_kappa_quadratic": cohen_kappa_score(
                x[both], y[both], labels=[0, 1, 2, 3], weights="quadratic"
            ),
            "spearman_rho": _rho(x, y),
        }
    out["pairwise"] = pairwise
    rhos = [p["spearman_rho"] for p in pairwise.values()]
    out["mean_pairwise_spearman"] = float(np.nanmean(rhos))
    per = {}
    mean_all = np.nanmean(m, axis=1)
    for i, a in enumerate(RATERS):
        mine = [p for (x, y), p in pairwise.items() if a in (x, y)]
        others = np.delete(m, i, axis=1)
        mean_others = np.nanmean(others, axis=1)  # every row keeps 2 other ratings
        per[a] = {
            "krippendorff_alpha": float(np.mean([p["krippendorff_alpha"] for p in mine])),
            "cohen_kappa_quadratic": float(np.mean([p["cohen_kappa_quadratic"] for p in mine])),
            "spearman_rho": float(np.nanmean([p["spearman_rho"] for p in mine])),
            "iaa_1": float(np.nanmean([p["spearman_rho"] for p in mine])),
            "iaa_2": _rho(m[:, i], mean_others),
            "hub_inclusive": _rho(m[:, i], mean_all),
        }
    out["per_annotator"] = per
    out["human_upper_bound"] = {
        "inclusive": max(p["hub_inclusive"] for p in per.values()),
        "exclusive": max(p["iaa_2"] for p in per.values()),
    }
    # ICC and W: every row has 3 ratings, so the 3 rating slots (doctor-name order) are raters.
    slots = np.array([row[~np.isnan(row)] for row in m])
    assert slots.shape == (len(m), 3)
    long = pd.DataFrame(
        [(i, j, slots[i, j]) for i in range(len(slots)) for j in range(3)],
        columns=["item", "slot", "v"],
    )
    icc = pg.intraclass_corr(long, "item", "slot", "v").set_index("Type")["ICC"]
    out["icc"] = {"C1": float(icc["ICC(C,1)"]), "Ck": float(icc["ICC(C,k)"])}
    out["kendall_w"] = _kendall_w_tie_corrected(slots)
    return out


def _close(a, b) -> bool:
    return (np.isnan(a) and np.isnan(b)) if (a != a or b != b) else abs(a - b) < 1e-9


def assert_report_equals(d: dict, ref: dict) -> None:
    for key in ("n_items", "n_ratings"):
        assert d[key] == ref[key], key
    for key in ("krippendorff_alpha", "mean_pairwise_spearman", "kendall_w"):
        assert _close(d[key], ref[key]), (key, d[key], ref[key])
    for key in ("C1", "Ck"):
        assert _close(d["icc"][key], ref["icc"][key]), key
    for key in ("inclusive", "exclusive"):
        assert _close(d["human_upper_bound"][key], ref["human_upper_bound"][key]), key
    assert len(d["pairwise"]) == len(ref["pairwise"])
    for p in d["pairwise"]:
        want = ref["pairwise"][(p["annotator_a"], p["annotator_b"])]
        for key, value in want.items():
            assert _close(p[key], value), (p["annotator_a"], p["annotator_b"], key)
    for p in d["per_annotator"]:
        want = ref["per_annotator"][p["annotator"]]
        for key in ("krippendorff_alpha", "cohen_kappa_quadratic", "spearman_rho", "iaa_1"):
            assert _close(p[key], want[key]), (p["annotator"], key)
        assert _close(p["iaa_2"], want["iaa_2"]), (p["annotator"], "iaa_2")


# --------------------------------------------------------------------------- contract
def test_row_ids_are_unique_in_file_order_and_the_note_counts_pairs(wide_file):
    read = read_ehr_rel(read_table(wide_file), str(wide_file))
    ids = read.pairs["pair_id"].tolist()
    assert len(ids) == len(set(ids)) == 40
    assert [ids[3], ids[30], ids[36]] == ["100-200", "100-200#2", "100-200#3"]
    assert [ids[8], ids[34]] == ["300-400", "300-400#2"]
    assert read.notes == (NOTE,)
    assert NOTE == (
        "2 pairs appear on more than one row; each row is kept as its own item, "
        "as in the published tables"
    )
    # each row's ratings stay with its own item
    by_item = read.ratings.groupby("pair_id")["annotator"].apply(lambda s: "".join(sorted(s)))
    assert (by_item["100-200"], by_item["100-200#2"], by_item["100-200#3"]) == (
        "ABC",
        "CDE",
        "ADE",
    )
    # the concept ids are the file's, not the item ids
    assert set(read.pairs.loc[[3, 30, 36], "concept_id_1"]) == {"100"}


def test_a_file_without_repeats_has_no_note(ehr_rel_a):
    read = read_ehr_rel(read_table(ehr_rel_a), str(ehr_rel_a))
    assert read.notes == ()
    assert "#" not in "".join(read.pairs["pair_id"])


def test_row_pair_ids_never_collide():
    ids, n = row_pair_ids(pd.Series(["1", "1", "2", "1"]), pd.Series(["2", "2", "3", "2"]))
    assert ids == ["1-2", "1-2#2", "2-3", "1-2#3"] and n == 1


# --------------------------------------------------------------------------- CLI
def _note_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "more than one row" in line]


def test_agreement_json_equals_rows_as_items(cli, wide_file):
    r = cli("agreement", wide_file, "--json")
    assert r.exit_code == 0, r.stderr
    assert _note_lines(r.stderr) == [f"note: {NOTE}"]
    d = json.loads(r.stdout)
    assert (d["n_items"], d["n_annotators"]) == (40, 5)
    assert_report_equals(d, rows_as_items(_matrix(wide_file)))


def test_agreement_tables_print_the_note_once(cli, wide_file):
    r = cli("agreement", wide_file)
    assert r.exit_code == 0, r.stderr
    assert _note_lines(r.stderr) == [f"note: {NOTE}"]
    assert r.stdout.startswith("40 items, 5 annotators, 120 ratings")


def test_audit_of_a_binary_wide_file_counts_rows(cli, tmp_path):
    wide = _wide(binary=True)
    ratings = write_table(wide, tmp_path / "wide.tsv")
    ids, _ = row_pair_ids(wide["snomed_id_1"], wide["snomed_id_2"])
    auto = [i % 2 for i in range(len(ids))]
    pairs = write_table(
        pd.DataFrame(
            {
                "pair_id": ids,
                "term_1": wide["snomed_label_1"],
                "term_2": wide["snomed_label_2"],
                "auto_label": auto,
            }
        ),
        tmp_path / "pairs.csv",
    )
    r = cli("audit", "--pairs", pairs, "--ratings", ratings, "--scale", "binary", "--json")
    assert r.exit_code == 0, r.stderr
    assert _note_lines(r.stderr) == [f"note: {NOTE}"]
    overall = json.loads(r.stdout)["overall"]
    m = np.array(
        [
            [{"same": 1.0, "not_same": 0.0, "": np.nan}[v] for v in wide[f"rater_{x}"]]
            for x in RATERS
        ]
    ).T
    votes = np.nansum(m, axis=1)
    cast = (~np.isnan(m)).sum(axis=1)
    majority = np.where(votes * 2 > cast, 1.0, np.where(votes * 2 < cast, 0.0, np.nan))
    has = ~np.isnan(majority)
    assert overall["n_items"] == 40
    assert _close(
        overall["krippendorff_alpha"],
        krippendorff.alpha(reliability_data=m.T, level_of_measurement="nominal"),
    )
    assert _close(overall["nan_fraction"], 1 - has.mean())
    assert _close(overall["accuracy"], float((np.array(auto)[has] == majority[has]).mean()))


def test_import_round_trip_gold_export_and_dashboard(cli, db_url, wide_file, tmp_path):
    from medsim_annot.services import dashboard as dsvc
    from medsim_annot.services import studies as svc

    r = cli("import", "ehr-rel", wide_file, "--study", "rep")
    assert r.exit_code == 0, r.stderr
    assert _note_lines(r.stderr) == [f"note: {NOTE}"]
    assert "imported 40 pairs and 120 ratings by 5 annotators" in r.stdout

    ref = rows_as_items(_matrix(wide_file))
    ratings, scale = svc.ratings_frame(open_study("rep"))
    assert ratings["pair_id"].nunique() == 40

    out = tmp_path / "gold.csv"
    r = cli("export", "gold", "rep", "--out", out)
    assert r.exit_code == 0, r.stderr
    gold = read_table(out)
    original = read_table(wide_file)
    assert (
        gold["pair_id"].tolist()
        == row_pair_ids(original["snomed_id_1"], original["snomed_id_2"])[0]
    )
    for x in RATERS:
        col = f"rater_{x}"
        assert [float(v) if v else None for v in gold[col]] == [
            float(v) if v else None for v in original[col]
        ], col
    mean = _matrix(wide_file)
    assert np.allclose(gold["mean"].astype(float), np.nanmean(mean, axis=1))
    manifest = json.loads(Path(str(out) + ".manifest.json").read_text())
    assert _close(manifest["krippendorff_alpha"]["study"], ref["krippendorff_alpha"])

    dsvc.clear_cache()
    dash = dsvc.study_dashboard(open_study("rep"))
    assert dash.notes == (NOTE,)
    assert_report_equals(dash.agreement.to_dict(), ref)
    s = dash.summary().iloc[0]
    assert s["items"] == 40
    assert _close(float(s["alpha"]), ref["krippendorff_alpha"])
    assert _close(float(s["icc_c1"]), ref["icc"]["C1"])
    assert _close(float(s["kendall_w"]), ref["kendall_w"])


def test_dashboard_page_shows_the_note(db_url, wide_file, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from medsim_annot.services import dashboard as dsvc
    from medsim_annot.services import studies as svc

    root = Path(__file__).resolve().parents[1]
    monkeypatch.syspath_prepend(str(root))
    dsvc.clear_cache()
    svc.import_ehr_rel(wide_file, "rep")
    at = AppTest.from_file(str(root / "pages" / "dashboard.py"), default_timeout=120)
    at.session_state["auth_role"] = "admin"
    at.run()
    assert not at.exception, at.exception
    # The note is shown as plain text: markdown's special characters arrive escaped.
    shown = [i.value.replace("\\", "") for i in at.info]
    assert shown.count(NOTE) == 1


# --------------------------------------------------------------------------- still errors
def test_long_ratings_with_a_repeated_pair_and_annotator_stay_an_error(cli, tmp_path):
    bad = write_table(
        pd.DataFrame(
            {"pair_id": ["p1", "p1", "p2"], "annotator": ["A", "A", "A"], "rating": [1, 2, 3]}
        ),
        tmp_path / "long.csv",
    )
    r = cli("agreement", bad)
    assert r.exit_code == 2
    assert "rates pair 'p1' more than once" in r.stderr


def test_pairs_file_with_an_explicit_duplicate_id_stays_an_error(cli, tmp_path):
    from medsim_annot.services.studies import load_pairs

    bad = write_table(
        pd.DataFrame({"pair_id": ["p1", "p1"], "term_1": ["a", "b"], "term_2": ["c", "d"]}),
        tmp_path / "pairs.csv",
    )
    with pytest.raises(InputError, match="pair_id 'p1' appears more than once"):
        load_pairs(bad)
    ratings = write_table(
        pd.DataFrame({"pair_id": ["p1"], "annotator": ["A"], "rating": ["same"]}),
        tmp_path / "r.csv",
    )
    r = cli("audit", "--pairs", bad, "--ratings", ratings)
    assert r.exit_code == 2 and "appears more than once" in r.stderr


# --------------------------------------------------------------------------- invariants
@st.composite
def _wide_with_repeats(draw):
    """A small wide frame whose rows draw their concept pair from a few, so pairs repeat."""
    n = draw(st.integers(3, 12))
    concepts = draw(st.lists(st.sampled_from(["1-2", "3-4", "5-6", "2-1"]), min_size=n, max_size=n))
    cells = st.sampled_from(["", "0", "1", "2", "3"])
    rows = []
    for pair in concepts:
        a, b = pair.split("-")
        rec = {
            "snomed_id_1": a,
            "snomed_label_1": f"t{a}",
            "snomed_id_2": b,
            "snomed_label_2": f"t{b}",
        }
        values = draw(st.lists(cells, min_size=3, max_size=3).filter(lambda v: any(v)))
        rec.update({f"rater_{r}": v for r, v in zip("ABC", values)})
        rows.append(rec)
    return pd.DataFrame(rows, dtype=object)


@given(_wide_with_repeats())
@settings(max_examples=examples(40))
def test_repeated_rows_read_like_distinct_pairs(frame):
    """Reading a file whose pairs repeat gives the same items, ratings and alpha as the same
    file with every row made a distinct pair; ids are unique and the same on every read."""
    from medsim_annot.stats import krippendorff_alpha

    read = read_ehr_rel(frame)
    again = read_ehr_rel(frame)
    ids = read.pairs["pair_id"].tolist()
    assert ids == again.pairs["pair_id"].tolist() and len(set(ids)) == len(frame)
    distinct = frame.assign(snomed_id_2=[f"{b}x{i}" for i, b in enumerate(frame["snomed_id_2"])])
    other = read_ehr_rel(distinct)
    assert other.notes == ()
    assert len(read.ratings) == len(other.ratings)
    row_of = dict(zip(ids, range(len(ids))))
    row_of_other = dict(zip(other.pairs["pair_id"], range(len(ids))))
    got = sorted(
        (row_of[p], a, v) for p, a, v in read.ratings[["pair_id", "annotator", "rating"]].values
    )
    want = sorted(
        (row_of_other[p], a, v)
        for p, a, v in other.ratings[["pair_id", "annotator", "rating"]].values
    )
    assert got == want
    repeats = int((frame["snomed_id_1"] + "-" + frame["snomed_id_2"]).value_counts().gt(1).sum())
    assert read.notes == ((repeated_pairs_note(repeats),) if repeats else ())
    a = krippendorff_alpha(to_ratings_frame(read.ratings, RELATEDNESS_0_3), "ordinal").value
    b = krippendorff_alpha(to_ratings_frame(other.ratings, RELATEDNESS_0_3), "ordinal").value
    assert (np.isnan(a) and np.isnan(b)) or abs(a - b) < 1e-12
