"""The same counting query on Apache Spark (local mode) gives byte-identical output files to
DuckDB: CSV and Parquet-folder inputs, top and random modes, exclusion through a hierarchy,
and the empty-result reason. Skips without pyspark or Java unless MEDSIM_REQUIRE_SPARK=1."""

from __future__ import annotations

import importlib.util
import os
import random
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from medsim_annot.services.build_cooccurrence import build_cooccurrence
from tests.test_cooccurrence import HEADER, reference_cap, reference_counts, triples, write_csv

pytestmark = pytest.mark.filterwarnings("ignore:PySpark does not yet fully support:FutureWarning")


def need(condition: bool, reason: str, flag: str) -> None:
    """Skip with *reason* unless *condition*; where *flag* is set (CI) fail instead."""
    if condition:
        return
    if os.environ.get(flag, "") not in ("", "0", "false", "no"):
        pytest.fail(f"{reason} (and {flag}=1 requires it)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def spark():
    need(
        importlib.util.find_spec("pyspark") is not None,
        "pyspark is not installed (pip install pyspark==4.3.0)",
        "MEDSIM_REQUIRE_SPARK",
    )
    need(
        shutil.which("java") is not None or bool(os.environ.get("JAVA_HOME")),
        "java is not available (apt-get install default-jre-headless)",
        "MEDSIM_REQUIRE_SPARK",
    )
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("medsim-tests")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "1g")
        # A JVM that lives for three small tests: the client compiler only, and the serial
        # collector (33.6 -> 19.7 CPU-s for this module, the answers unchanged).
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _events(seed: int = 3, patients: int = 150):
    rng = random.Random(seed)
    concepts = [str(c) for c in (1, 2, 3, 10, 20, 30, 100, 200, 300, 1000, 7, 8, 9, 11, 12)]
    weights = [1 / (k + 1) for k in range(len(concepts))]
    cats = ["symptom", "diagnosis", "Presenting Complaint", "administration"]
    rows = []
    for p in range(patients):
        for c in rng.choices(concepts, weights, k=rng.randint(1, 6)):
            rows.append((f"pt{p:04d}", c, rng.choice([f"term {c}", f"Term {c}"]), rng.choice(cats)))
    return rows


def _both(spark, tmp_path, events, tag, **kw) -> tuple[bytes, dict]:
    """Run both engines; return DuckDB's file bytes (asserting Spark's are identical)."""
    outs = {}
    for engine in ("duckdb", "spark"):
        out = tmp_path / f"{tag}-{engine}.csv"
        outs[engine] = (
            build_cooccurrence(events, out, engine=engine, spark=spark, **kw),
            out.read_bytes(),
        )
    assert outs["spark"][1] == outs["duckdb"][1]
    return outs["duckdb"][1], outs["spark"][0]


def test_csv_top_mode_with_categories_and_descendant_exclusion(spark, tmp_path):
    rows = _events()
    events = write_csv(tmp_path / "events.csv", rows)
    exclude = write_csv(tmp_path / "exclude.csv", [("ADMIN",)], header=("concept_id",))
    isa = write_csv(
        tmp_path / "isa.csv",
        [("8", "ADMIN"), ("9", "8"), ("11", "3")],
        header=("child_id", "parent_id"),
    )
    cats = ["symptom", "diagnosis", "presenting complaint"]
    _, report = _both(
        spark,
        tmp_path,
        events,
        "top",
        categories=cats,
        exclude=exclude,
        hierarchy=isa,
        max_per_concept=3,
        top=12,
    )
    expected = reference_cap(reference_counts(rows, set(cats), {"ADMIN", "8", "9"}), 3, 12)
    import pandas as pd

    assert (
        triples(
            pd.read_csv(
                tmp_path / "top-spark.csv", dtype={"concept_id_1": str, "concept_id_2": str}
            )
        )
        == expected
    )
    assert report["engine"] == "spark" and report["pairs"] == 12


def test_parquet_folder_random_and_top_modes(spark, tmp_path):
    rows = _events(seed=5, patients=120)
    parts = tmp_path / "parts"
    parts.mkdir()
    for i in range(3):
        chunk = rows[i::3]
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
    _both(spark, tmp_path, parts, "random", mode="random", seed=42, top=15)
    data, _ = _both(spark, tmp_path, parts, "top", top=20)
    assert data.count(b"\n") == 21


def test_cli_spark_engine_empty_result_reason(spark, tmp_path, cli):
    events = write_csv(
        tmp_path / "events.csv", [("p1", "1", "a", "x"), ("p2", "2", "b", "x")], header=HEADER
    )
    r = cli(
        "build",
        "cooccurrence",
        "--events",
        events,
        "--out",
        tmp_path / "o.csv",
        "--engine",
        "spark",
    )
    assert r.exit_code == 0, r.stderr
    assert (
        "no pairs written" in r.stdout
        and "no patient has two or more distinct concepts" in r.stdout
    )
    assert "spark: counting" in r.stderr
