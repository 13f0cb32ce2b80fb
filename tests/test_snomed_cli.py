"""``medsim build snomed`` end to end: 20 files in the pairs contract, the statistics table,
byte-identical outputs for the same seed, progress bars on stderr, clear errors (exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from data_schemas.pairs import validate_pairs
from medsim_annot.builders import snomed
from medsim_annot.builders.synthetic_rf2 import generate_release
from medsim_annot.commands.build_snomed import get_group
from medsim_annot.io import read_table
from medsim_annot.services.build_snomed import build_snomed, file_name
from tests.test_snomed_rules import handmade_release

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def rf2(tmp_path_factory) -> Path:
    release = generate_release(150, seed=3)
    release, _ = handmade_release(release)
    folder = tmp_path_factory.mktemp("rf2")
    release.write(folder, "full")
    return folder


def _bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_cli_writes_20_pairs_files_and_statistics(cli, rf2, tmp_path):
    out = tmp_path / "out"
    r = cli("build", "snomed", "--rf2", rf2, "--out", out, "--quiet")
    assert r.exit_code == 0, r.stderr
    names = sorted(p.name for p in out.iterdir())
    assert len(names) == 21 and "statistics.csv" in names
    for name in snomed.DATASETS:
        assert name in r.stdout
        for difficulty in ("easy", "hard"):
            for strategy in ("random", "levenshtein"):
                path = out / file_name(name, difficulty, strategy)
                frame = read_table(path)
                assert list(frame.columns) == list(snomed.OUTPUT_COLUMNS)
                checked = validate_pairs(frame, str(path))
                assert set(checked["dataset"]) == {name}
                assert set(checked["difficulty"]) == {difficulty}
                assert set(checked["negative_strategy"]) == {strategy}
                assert set(checked["auto_label"].tolist()) == {0, 1}
    stats = read_table(out / "statistics.csv")
    assert list(stats.columns) == list(snomed.STAT_COLUMNS)
    assert len(stats) == 15


def test_same_seed_gives_byte_identical_files_other_seed_differs(rf2, tmp_path):
    build_snomed(rf2, tmp_path / "a", seed=7)
    build_snomed(rf2, tmp_path / "b", seed=7)
    build_snomed(rf2, tmp_path / "c", seed=8)
    a, b, c = _bytes(tmp_path / "a"), _bytes(tmp_path / "b"), _bytes(tmp_path / "c")
    assert a == b
    assert a != c


def test_a_subset_gives_the_same_files_as_the_full_build(rf2, tmp_path):
    build_snomed(rf2, tmp_path / "all", seed=42)
    build_snomed(
        rf2, tmp_path / "some", seed=42, datasets=["same-as", "fsn-syn"], strategies=["levenshtein"]
    )
    some = _bytes(tmp_path / "some")
    full = _bytes(tmp_path / "all")
    assert len(some) == 5
    for name, content in some.items():
        if name != "statistics.csv":
            assert content == full[name], name


def test_threshold_moves_pairs_between_easy_and_hard(rf2, tmp_path):
    low = build_snomed(
        rf2, tmp_path / "t0", threshold=0, strategies=["random"], datasets=["syn-syn"]
    ).statistics
    high = build_snomed(
        rf2, tmp_path / "t9", threshold=9, strategies=["random"], datasets=["syn-syn"]
    ).statistics
    assert low.loc[low["difficulty"] == "easy", "positives"].item() == 0
    assert high.loc[high["difficulty"] == "easy", "positives"].item() > 0
    assert (
        low.loc[low["difficulty"] == "all", "positives"].item()
        == high.loc[high["difficulty"] == "all", "positives"].item()
    )


def test_json_output_and_other_format(cli, rf2, tmp_path):
    r = cli(
        "build",
        "snomed",
        "--rf2",
        rf2,
        "--out",
        tmp_path,
        "--quiet",
        "--json",
        "--datasets",
        "replaced-by",
        "--strategies",
        "random",
        "--format",
        "parquet",
    )
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert sorted(data["files"]) == ["replaced-by/easy/random", "replaced-by/hard/random"]
    assert [row["difficulty"] for row in data["statistics"]] == ["all", "easy", "hard"]
    assert data["statistics"][0]["mean_distance_levenshtein"] is None
    assert validate_pairs(read_table(tmp_path / "replaced-by_easy_random.parquet")).shape[0] > 0


def test_progress_bars_go_to_stderr(rf2, tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "medsim_annot",
            "build",
            "snomed",
            "--rf2",
            str(rf2),
            "--out",
            str(tmp_path),
            "--datasets",
            "same-as",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "read RF2 files" in proc.stderr and "positives" in proc.stderr
    assert "same-as/easy/levenshtein" in proc.stderr and "write files" in proc.stderr
    assert "same-as" in proc.stdout and "read RF2" not in proc.stdout


def test_folder_without_rf2_files_exits_2(cli, tmp_path):
    (tmp_path / "empty").mkdir()
    r = cli("build", "snomed", "--rf2", tmp_path / "empty", "--out", tmp_path / "out", "--quiet")
    assert r.exit_code == 2
    assert "no RF2 concept file found" in r.stderr
    assert not (tmp_path / "out").exists()


def test_file_missing_required_columns_exits_2_and_writes_nothing(cli, rf2, tmp_path):
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(rf2, bad)
    path = next(bad.rglob("sct2_Concept_*"))
    content = path.read_bytes().decode("utf-8").replace("\tmoduleId", "\tmodule", 1)
    path.write_bytes(content.encode("utf-8"))
    r = cli("build", "snomed", "--rf2", bad, "--out", tmp_path / "out", "--quiet")
    assert r.exit_code == 2
    assert f"error: {path}, row 1, column 'moduleId': required RF2 column is missing" in r.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "args,fragment",
    [
        (("--datasets", "fsn-syn,synonyms"), "unknown dataset 'synonyms'"),
        (("--strategies", "nearest"), "unknown negative strategy 'nearest'"),
        (("--threshold", "-1"), "(--threshold) must be 0 or more"),
        (("--format", "xlsx"), "unknown format 'xlsx'"),
    ],
)
def test_bad_options_exit_2(cli, rf2, tmp_path, args, fragment):
    r = cli("build", "snomed", "--rf2", rf2, "--out", tmp_path / "out", "--quiet", *args)
    assert r.exit_code == 2 and fragment in r.stderr
    assert not (tmp_path / "out").exists()


def test_build_group_is_shared_between_builders():
    app = typer.Typer()
    first = get_group(app, "build", "Build datasets.")
    assert get_group(app, "build", "Build datasets.") is first
    assert [g.name for g in app.registered_groups] == ["build"]
