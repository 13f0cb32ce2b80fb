"""EHR co-occurrence candidates on DuckDB: hand-checked counts, categories,
exclusion with descendants, the greedy per-concept cap against a brute-force reference,
top/random modes, Parquet parts, bad inputs and the CLI."""

from __future__ import annotations

import random
import tempfile
from collections import Counter, defaultdict
from itertools import combinations
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from data_schemas.errors import InputError, OptionError
from data_schemas.pairs import validate_pairs
from medsim_annot.builders import cooccurrence as cooc
from medsim_annot.io import read_table
from medsim_annot.services.build_cooccurrence import build_cooccurrence
from tests.conftest import examples

pytestmark = pytest.mark.filterwarnings("ignore:PySpark does not yet fully support:FutureWarning")

HEADER = ("patient_id", "concept_id", "concept_label", "category")

# Hand-checked example. Concept ids sort as text: "10" < "100" < "7" < "9".
HAND = [
    ("P1", "10", "fever", "symptom"),
    ("P1", "9", "cough", "symptom"),
    ("P1", "100", "asthma", "diagnosis"),
    ("P1", "10", "fever", "symptom"),  # repeated: counts once for P1
    ("P2", "10", "fever", "symptom"),
    ("P2", "9", "cough", "symptom"),
    ("P3", "9", "cough", "symptom"),
    ("P3", "100", "asthma", "diagnosis"),
    ("P3", "7", "did not attend", "administration"),
    ("P4", "10", "fever", "symptom"),  # one concept only: no pair
    ("P5", "100", "asthma", "Diagnosis"),
    ("P5", "10", "Fever", "symptom"),  # minority label
]
# P1 {10, 9, 100}, P2 {10, 9}, P3 {9, 100, 7}, P5 {100, 10}:
HAND_COUNTS = [("10", "100", 2), ("10", "9", 2), ("100", "9", 2), ("100", "7", 1), ("7", "9", 1)]
LABELS = {"10": "fever", "9": "cough", "100": "asthma", "7": "did not attend"}


def write_csv(path: Path, rows, header=HEADER) -> Path:
    pd.DataFrame(list(rows), columns=list(header), dtype=object).to_csv(path, index=False)
    return path


def triples(frame: pd.DataFrame) -> list[tuple[str, str, int]]:
    return [(r.concept_id_1, r.concept_id_2, int(r.count)) for r in frame.itertuples()]


def run(events, tmp_path, name="out.csv", **kw) -> tuple[dict, pd.DataFrame]:
    out = tmp_path / name
    report = build_cooccurrence(events, out, **kw)
    return report, read_table(out)


# --------------------------------------------------------------------------- reference
def reference_counts(rows, categories=None, excluded=frozenset()):
    """Brute force: distinct concepts per patient, every 2-combination, Counter."""
    per_patient = defaultdict(set)
    for patient, concept, _label, category in rows:
        if categories is not None and category.strip().lower() not in categories:
            continue
        if concept in excluded:
            continue
        per_patient[patient].add(concept)
    counts = Counter()
    for concepts in per_patient.values():
        for a, b in combinations(sorted(concepts), 2):
            counts[(a, b)] += 1
    return sorted(((a, b, n) for (a, b), n in counts.items()), key=lambda t: (-t[2], t[0], t[1]))


def reference_cap(ordered, cap, top):
    used, kept = Counter(), []
    for a, b, n in ordered:
        if len(kept) == top:
            break
        if used[a] < cap and used[b] < cap:
            kept.append((a, b, n))
            used[a] += 1
            used[b] += 1
    return kept


# --------------------------------------------------------------------------- counting
def test_hand_checked_counts_labels_and_pairs_contract(tmp_path):
    events = write_csv(tmp_path / "events.csv", HAND)
    report, out = run(events, tmp_path)
    assert triples(out) == HAND_COUNTS
    assert list(out.columns) == list(cooc.OUTPUT_COLUMNS)
    assert list(out["pair_id"]) == [f"{a}-{b}" for a, b, _ in HAND_COUNTS]
    assert list(out["term_1"]) == [LABELS[a] for a, _, _ in HAND_COUNTS]
    assert list(out["term_2"]) == [LABELS[b] for _, b, _ in HAND_COUNTS]
    assert (report["pairs"], report["concepts"], report["reason"]) == (5, 4, None)
    assert triples(out) == reference_counts(HAND)
    validated = validate_pairs(out, "out.csv")
    assert len(validated) == 5


def test_categories_filter_case_insensitive(tmp_path):
    events = write_csv(tmp_path / "events.csv", HAND)
    _, out = run(events, tmp_path, categories=["Symptom", " diagnosis "])
    assert triples(out) == [("10", "100", 2), ("10", "9", 2), ("100", "9", 2)]
    _, out = run(events, tmp_path, categories=["symptom"])
    assert triples(out) == [("10", "9", 2)]


def test_ids_compare_as_text_and_labels_pick_most_frequent_then_smallest(tmp_path):
    rows = [
        ("p1", "B", "beta", ""),
        ("p1", "a", "alpha", ""),
        ("p2", "B", "Beta", ""),
        ("p2", "a", "zeta", ""),
        ("p3", "a", "alpha", ""),
        ("p3", "é", "e-acute", ""),
        ("p4", "a", "zeta", ""),
        ("p4", " B ", "", ""),
    ]
    _, out = run(write_csv(tmp_path / "e.csv", rows), tmp_path)
    # "B" < "a" < "é" in text (code point) order; " B " is trimmed to "B".
    assert triples(out) == [("B", "a", 3), ("a", "é", 1)]
    # a: alpha x2, zeta x2 -> the smaller, "alpha"; B: beta and Beta once each -> "Beta".
    assert list(out["term_1"]) == ["Beta", "alpha"]
    assert list(out["term_2"]) == ["alpha", "e-acute"]


def test_exclusion_with_descendants_multilevel_hierarchy(tmp_path):
    # Administrative tree: A0 > A1 > {7, A2}; A2 > 8; 8 also under clinical 9 (a diamond);
    # a cycle A0 -> 8 -> A2 -> ... must not hang.
    rows = HAND + [
        ("P2", "8", "letter sent", "symptom"),
        ("P3", "8", "letter sent", "symptom"),
        ("P5", "X", "other", "symptom"),
    ]
    edges = [
        ("A1", "A0"),
        ("7", "A1"),
        ("A2", "A1"),
        ("8", "A2"),
        ("8", "9"),
        ("A0", "8"),
        ("100", "50"),
    ]
    events = write_csv(tmp_path / "events.csv", rows)
    exclude = write_csv(tmp_path / "exclude.csv", [("A0",)], header=("concept_id",))
    hierarchy = write_csv(tmp_path / "isa.csv", edges, header=("child_id", "parent_id"))
    _, out = run(events, tmp_path, exclude=exclude, hierarchy=hierarchy)
    expected = reference_counts(rows, excluded={"A0", "A1", "A2", "7", "8"})
    assert triples(out) == expected
    assert not {"7", "8"} & (set(out.concept_id_1) | set(out.concept_id_2))
    # Without the hierarchy only A0 itself (absent from the events) is dropped.
    _, out = run(events, tmp_path, exclude=exclude)
    assert triples(out) == reference_counts(rows)
    # Excluding a clinical concept with its (one-level) descendants.
    exclude_9 = write_csv(tmp_path / "ex9.csv", [("9",)], header=("concept_id",))
    _, out = run(events, tmp_path, exclude=exclude_9, hierarchy=hierarchy)
    assert triples(out) == reference_counts(rows, excluded={"9", "8", "A2", "A1", "A0", "7"})


# --------------------------------------------------------------------------- the cap
def test_cap_hand_checked(tmp_path):
    events = write_csv(tmp_path / "events.csv", HAND)
    _, out = run(events, tmp_path, max_per_concept=1)
    assert triples(out) == [("10", "100", 2), ("7", "9", 1)]
    report, out = run(events, tmp_path, max_per_concept=2, top=3)
    assert triples(out) == [("10", "100", 2), ("10", "9", 2), ("100", "9", 2)]
    assert report["walked"] == 3


@settings(max_examples=100, deadline=None)
@given(
    pairs=st.lists(
        st.tuples(st.integers(0, 12), st.integers(0, 12), st.integers(1, 5)), max_size=80
    ),
    cap=st.integers(1, 4),
    top=st.integers(1, 30),
    cuts=st.lists(st.integers(1, 20), max_size=6),
)
def test_greedy_cap_is_the_greedy_prefix_whatever_the_batches(pairs, cap, top, cuts):
    ordered = sorted(
        {(min(a, b), max(a, b)): n for a, b, n in pairs if a != b}.items(),
        key=lambda kv: (-kv[1], kv[0]),
    )
    rows = [(a, b, n) for (a, b), n in ordered]
    batches, i = [], 0
    for size in cuts + [len(rows)]:
        chunk = rows[i : i + size]
        if chunk:
            batches.append([list(c) for c in zip(*chunk)])
        i += size
    kept, walked = cooc.greedy_cap(batches, max_per_concept=cap, top=top)
    assert kept == reference_cap(rows, cap, top)
    assert walked <= len(rows)
    if len(kept) == top:
        assert walked == rows.index(kept[-1]) + 1
    per_concept = Counter(c for a, b, _ in kept for c in (a, b))
    assert max(per_concept.values(), default=0) <= cap


_VOCAB = ["1", "10", "100", "2", "20", "9", "B", "a", "é", "x-1"]


@settings(max_examples=examples(40), deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["p1", "p2", "p3", "p4", "p5", "p6", "p7"]),
            st.sampled_from(_VOCAB),
            st.sampled_from(["symptom", "admin"]),
        ),
        max_size=60,
    ),
    cap=st.integers(1, 4),
    top=st.integers(1, 25),
    filtered=st.booleans(),
)
def test_duckdb_matches_brute_force_reference(rows, cap, top, filtered):
    events = [(p, c, f"label {c}", cat) for p, c, cat in rows]
    categories = {"symptom"} if filtered else None
    with tempfile.TemporaryDirectory() as tmp:
        path = write_csv(Path(tmp) / "events.csv", events)
        result = cooc.cooccurrence_pairs(
            cooc.events_source(path, need_category=filtered),
            categories=categories,
            max_per_concept=cap,
            top=top,
        )
    expected = reference_cap(reference_counts(events, categories), cap, top)
    assert triples(result.pairs) == expected
    per_concept = Counter(c for a, b, _ in expected for c in (a, b))
    assert max(per_concept.values(), default=0) <= cap
    if not expected:
        assert result.reason


def test_cap_on_seeded_random_data_and_top_prefix(tmp_path):
    rng = random.Random(8)
    concepts = [str(c) for c in range(60)]
    weights = [1 / (k + 1) for k in range(60)]  # Zipf-like
    rows = []
    for p in range(300):
        for c in set(rng.choices(concepts, weights, k=rng.randint(1, 9))):
            rows.append((f"p{p}", c, f"term {c}", "symptom"))
    events = write_csv(tmp_path / "events.csv", rows)
    _, out = run(events, tmp_path, max_per_concept=3, top=40)
    expected = reference_cap(reference_counts(rows), 3, 40)
    assert triples(out) == expected and len(expected) == 40
    assert max(Counter(list(out.concept_id_1) + list(out.concept_id_2)).values()) == 3
    _, shorter = run(events, tmp_path, "short.csv", max_per_concept=3, top=15)
    assert triples(shorter) == expected[:15]


# --------------------------------------------------------------------------- random mode
def _many_pairs_events(tmp_path) -> tuple[Path, list]:
    rows = [(f"p{p}", str(c), f"t{c}", "symptom") for p in range(6) for c in range(p, p + 6)]
    return write_csv(tmp_path / "events.csv", rows), rows


def test_random_mode_is_seeded_uniform_order_by_draw_key(tmp_path):
    events, rows = _many_pairs_events(tmp_path)
    counts = reference_counts(rows)
    report, out = run(events, tmp_path, "a.csv", mode="random", top=7, seed=11)
    expected = sorted(counts, key=lambda t: (cooc.draw_key(11, t[0], t[1]), t[0], t[1]))[:7]
    assert triples(out) == expected
    assert report["seed"] == 11 and report["max_per_concept"] is None
    run(events, tmp_path, "b.csv", mode="random", top=7, seed=11)
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    _, other = run(events, tmp_path, "c.csv", mode="random", top=7, seed=12)
    assert triples(other) != triples(out)
    _, prefix = run(events, tmp_path, "d.csv", mode="random", top=3, seed=11)
    assert triples(prefix) == expected[:3]
    # No cap in random mode: all pairs come back when top exceeds their number.
    _, everything = run(
        events, tmp_path, "e.csv", mode="random", top=10_000, seed=1, max_per_concept=1
    )
    assert sorted(triples(everything)) == sorted(counts)


def test_random_mode_without_seed_reports_a_reusable_seed(tmp_path):
    events, _ = _many_pairs_events(tmp_path)
    report, out = run(events, tmp_path, "a.csv", mode="random", top=5)
    assert isinstance(report["seed"], int)
    _, again = run(events, tmp_path, "b.csv", mode="random", top=5, seed=report["seed"])
    assert triples(again) == triples(out)


def test_draw_key_orders_pairs_uniformly():
    # Which of 10 pairs comes first, over 3,000 seeds: a chi-square test of uniformity.
    from scipy.stats import chisquare

    pairs = [(str(a), str(b)) for a, b in combinations(range(5), 2)]
    firsts = Counter(min(pairs, key=lambda p: cooc.draw_key(s, *p)) for s in range(3000))
    assert len(firsts) == 10
    assert chisquare([firsts[p] for p in pairs]).pvalue > 0.001


# --------------------------------------------------------------------------- inputs
def test_parquet_folder_with_integer_ids_equals_csv(tmp_path):
    events = write_csv(tmp_path / "events.csv", HAND)
    run(events, tmp_path, "from_csv.parquet", categories=["symptom", "diagnosis"])
    parts = tmp_path / "parts"
    parts.mkdir()
    for i, chunk in enumerate((HAND[:5], HAND[5:])):
        pq.write_table(
            pa.table(
                {
                    "patient_id": [r[0] for r in chunk],
                    "concept_id": pa.array([int(r[1]) for r in chunk], pa.int64()),
                    "concept_label": [r[2] for r in chunk],
                    "category": [r[3] for r in chunk],
                }
            ),
            parts / f"part-{i:05d}.parquet",
        )
    (parts / "_SUCCESS").write_text("")
    run(parts, tmp_path, "from_parts.parquet", categories=["symptom", "diagnosis"])
    assert (tmp_path / "from_csv.parquet").read_bytes() == (
        tmp_path / "from_parts.parquet"
    ).read_bytes()
    # A single Parquet file and TSV too.
    pq.write_table(pq.read_table(parts / "part-00000.parquet"), tmp_path / "one.parquet")
    report, _ = run(tmp_path / "one.parquet", tmp_path)
    assert report["pairs"] == 3  # P1 {10, 9, 100}
    pd.DataFrame(HAND, columns=list(HEADER)).to_csv(tmp_path / "events.tsv", sep="\t", index=False)
    _, out = run(tmp_path / "events.tsv", tmp_path)
    assert triples(out) == HAND_COUNTS


def test_output_formats_and_study_create(tmp_path, cli, db_url):
    events = write_csv(tmp_path / "events.csv", HAND)
    for name in ("pairs.csv", "pairs.tsv", "pairs.jsonl", "pairs.parquet"):
        r = cli("build", "cooccurrence", "--events", events, "--out", tmp_path / name, "--top", "3")
        assert r.exit_code == 0, r.stdout + r.stderr
        assert "3 pairs of 3 concepts written" in r.stdout
        assert triples(read_table(tmp_path / name)) == HAND_COUNTS[:3]
    r = cli(
        "study",
        "create",
        "ehr-cooc",
        "--pairs",
        tmp_path / "pairs.csv",
        "--scale",
        "relatedness-0-3",
        "--annotators",
        "ann1,ann2",
    )
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "3 pairs" in r.stdout


def test_cli_json_and_progress_on_stderr(tmp_path, cli):
    events = write_csv(tmp_path / "events.csv", HAND)
    r = cli(
        "build",
        "cooccurrence",
        "--events",
        events,
        "--out",
        tmp_path / "o.csv",
        "--categories",
        "symptom,diagnosis",
        "--max-per-concept",
        "1",
        "--json",
    )
    assert r.exit_code == 0, r.stderr
    import json

    report = json.loads(r.stdout)
    assert (report["pairs"], report["concepts"], report["mode"], report["engine"]) == (
        1,
        2,
        "top",
        "duckdb",
    )
    assert "counting" in r.stderr and "counting" not in r.stdout


# --------------------------------------------------------------------------- bad inputs
def _error(r, *fragments):
    assert r.exit_code == 2, (r.stdout, r.stderr)
    # Progress lines may come first; the error itself is what main() prints last.
    assert r.stderr.splitlines()[-1].startswith("error: "), r.stderr
    for f in fragments:
        assert f in r.stderr, r.stderr


def test_missing_columns_name_the_file_and_column(tmp_path, cli):
    bad = write_csv(
        tmp_path / "bad.csv", [("p1", "1", "x")], header=("patient_id", "concept_id", "label")
    )
    out = tmp_path / "o.csv"
    _error(
        cli("build", "cooccurrence", "--events", bad, "--out", out),
        str(bad),
        "column 'concept_label'",
    )
    nocat = write_csv(tmp_path / "nocat.csv", [("p1", "1", "x")], header=HEADER[:3])
    _error(
        cli("build", "cooccurrence", "--events", nocat, "--out", out, "--categories", "symptom"),
        str(nocat),
        "column 'category'",
    )
    parts = tmp_path / "parts"
    parts.mkdir()
    pq.write_table(pa.table({c: ["1"] for c in HEADER}), parts / "a.parquet")
    pq.write_table(
        pa.table({c: ["1"] for c in ("patient_id", "concept_label")}), parts / "b.parquet"
    )
    _error(
        cli("build", "cooccurrence", "--events", parts, "--out", out),
        str(parts / "b.parquet"),
        "column 'concept_id'",
    )
    events = write_csv(tmp_path / "events.csv", HAND)
    ex = write_csv(tmp_path / "ex.csv", [("1",)], header=("id",))
    _error(
        cli("build", "cooccurrence", "--events", events, "--out", out, "--exclude", ex),
        str(ex),
        "column 'concept_id'",
    )
    isa = write_csv(tmp_path / "isa.csv", [("1",)], header=("child_id",))
    _error(
        cli(
            "build",
            "cooccurrence",
            "--events",
            events,
            "--out",
            out,
            "--exclude",
            ex.with_name("ok.csv"),
            "--hierarchy",
            isa,
        ),
        "ok.csv",
        "file not found",
    )
    write_csv(tmp_path / "ok.csv", [("1",)], header=("concept_id",))
    _error(
        cli(
            "build",
            "cooccurrence",
            "--events",
            events,
            "--out",
            out,
            "--exclude",
            tmp_path / "ok.csv",
            "--hierarchy",
            isa,
        ),
        str(isa),
        "column 'parent_id'",
    )
    assert not out.exists()


def test_empty_missing_and_malformed_files(tmp_path, cli):
    out = tmp_path / "o.csv"
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    _error(
        cli("build", "cooccurrence", "--events", empty, "--out", out),
        str(empty),
        "is empty",
        "row 1",
    )
    _error(
        cli("build", "cooccurrence", "--events", tmp_path / "nope.csv", "--out", out),
        "file not found",
    )
    folder = tmp_path / "nothing"
    folder.mkdir()
    _error(cli("build", "cooccurrence", "--events", folder, "--out", out), "no .parquet")
    _error(
        cli("build", "cooccurrence", "--events", tmp_path / "e.xlsx", "--out", out),
        "file not found",
    )
    (tmp_path / "e.xlsx").write_bytes(b"x")
    _error(cli("build", "cooccurrence", "--events", tmp_path / "e.xlsx", "--out", out), "extension")
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("patient_id,concept_id,concept_label\np1,1,a\np1,2,b,extra,x\n")
    _error(
        cli("build", "cooccurrence", "--events", ragged, "--out", out),
        str(ragged),
        "row 3",
        "cannot be read",
    )
    notparquet = tmp_path / "bad.parquet"
    notparquet.write_bytes(b"not parquet")
    _error(
        cli("build", "cooccurrence", "--events", notparquet, "--out", out),
        str(notparquet),
        "Parquet",
    )
    events = write_csv(tmp_path / "events.csv", HAND)
    _error(
        cli("build", "cooccurrence", "--events", events, "--out", tmp_path / "o.xlsx"), "extension"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    "rows,kwargs,reason",
    [
        ([], {}, "has no rows"),
        (
            [
                ("p1", "1", "fever", "symptom"),
                ("p1", "1", "fever", "symptom"),
                ("p2", "2", "cough", "symptom"),
            ],
            {},
            "no patient has two or more distinct concepts (2 patients",
        ),
        (HAND, {"categories": ["procedure"]}, "in the categories procedure"),
        ([("", "1", "a", ""), ("p1", "", "b", "")], {}, "has both a patient_id and a concept_id"),
    ],
    ids=["header-only", "one-concept-patients", "no-such-category", "no-ids"],
)
def test_empty_results_have_a_reason(tmp_path, cli, rows, kwargs, reason):
    events = write_csv(tmp_path / "events.csv", rows)
    report, out = run(events, tmp_path, **kwargs)
    assert report["pairs"] == 0 and reason in report["reason"]
    assert list(out.columns) == list(cooc.OUTPUT_COLUMNS) and len(out) == 0
    args = ["build", "cooccurrence", "--events", events, "--out", tmp_path / "cli.csv"]
    if "categories" in kwargs:
        args += ["--categories", ",".join(kwargs["categories"])]
    r = cli(*args)
    assert r.exit_code == 0 and "no pairs written" in r.stdout and reason in r.stdout


def test_everything_excluded_has_a_reason(tmp_path):
    events = write_csv(tmp_path / "events.csv", [("p1", "1", "a", ""), ("p1", "2", "b", "")])
    ex = write_csv(tmp_path / "ex.csv", [("0",)], header=("concept_id",))
    isa = write_csv(
        tmp_path / "isa.csv", [("1", "0"), ("2", "1")], header=("child_id", "parent_id")
    )
    report, _ = run(events, tmp_path, exclude=ex, hierarchy=isa)
    assert "excluded concepts" in report["reason"]


def test_bad_options(tmp_path, cli):
    events = write_csv(tmp_path / "events.csv", HAND)
    out = tmp_path / "o.csv"
    _error(
        cli("build", "cooccurrence", "--events", events, "--out", out, "--engine", "hive"),
        "--engine must be 'duckdb' or 'spark', not 'hive'",
    )
    _error(
        cli("build", "cooccurrence", "--events", events, "--out", out, "--mode", "best"),
        "--mode must be 'top' or 'random', not 'best'",
    )
    _error(cli("build", "cooccurrence", "--events", events, "--out", out, "--top", "0"), "--top")
    _error(
        cli("build", "cooccurrence", "--events", events, "--out", out, "--max-per-concept", "0"),
        "--max-per-concept",
    )
    _error(
        cli("build", "cooccurrence", "--events", events, "--out", out, "--categories", " , "),
        "--categories is empty",
    )
    assert not out.exists()
    with pytest.raises(OptionError, match="engine must be"):
        cooc.open_engine("hive")
    with pytest.raises(InputError):
        cooc.events_source(tmp_path / "missing.parquet")


def test_engine_settings_and_spill_folder_cleanup(tmp_path, cli):
    events = write_csv(tmp_path / "events.csv", HAND)
    spill = tmp_path / "spill"
    spill.mkdir()
    r = cli(
        "build",
        "cooccurrence",
        "--events",
        events,
        "--out",
        tmp_path / "o.csv",
        "--memory-limit",
        "256MB",
        "--temp-dir",
        spill,
        "--hierarchy",
        tmp_path / "isa.csv",
    )
    assert r.exit_code == 2 and "isa.csv" in r.stderr  # hierarchy file missing
    write_csv(tmp_path / "isa.csv", [("7", "1")], header=("child_id", "parent_id"))
    r = cli(
        "build",
        "cooccurrence",
        "--events",
        events,
        "--out",
        tmp_path / "o.csv",
        "--memory-limit",
        "256MB",
        "--temp-dir",
        spill,
        "--hierarchy",
        tmp_path / "isa.csv",
    )
    assert r.exit_code == 0, r.stderr
    assert "only used to find the descendants of --exclude" in r.stderr
    assert triples(read_table(tmp_path / "o.csv")) == HAND_COUNTS
    assert list(spill.iterdir()) == []  # DuckDB's private spill folder is removed
    r = cli(
        "build",
        "cooccurrence",
        "--events",
        events,
        "--out",
        tmp_path / "o.csv",
        "--memory-limit",
        "lots",
    )
    assert r.exit_code == 2 and "cannot start DuckDB" in r.stderr
