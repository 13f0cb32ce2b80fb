"""The scoreboard that ends ``make bench`` (benchmarks/scoreboard.py): every figure with a
goal in one table, with its same-run baseline and ✓ / ✗, built from what the benchmarks
reported (nothing measured again). Checked by hand on a few made-up figures."""

from __future__ import annotations

import json
import math

from benchmarks.scoreboard import Scoreboard


def _board() -> Scoreboard:
    board = Scoreboard()
    board.start("bench_capacity")
    board.report("SQLite server CPU per press", 9.5, "ms", baseline=62.0, goal="≤ 10 ms", ok=True)
    board.report("informational", 12.0, "ms", baseline=62.0)
    board.report(
        "knee", 150.0, "presses/s", baseline=20.0, lower_is_better=False, goal="≥ 100", ok=True
    )
    board.start("bench_dashboard")
    board.report("cold dashboard", 1.6, "s", baseline=9.0, goal="< 1.5 s", ok=False)
    board.report("lost", 0, "(0/0/0; 10 acknowledged)", goal="0", ok=True)
    board.report("not measured", math.nan, "ms", goal="≤ 1 s")
    return board


def test_table_has_every_goal_with_baseline_and_mark():
    board = _board()
    table = board.table()
    lines = table.splitlines()
    rows = [line for line in lines[2:-1]]
    assert len(rows) == 5  # the informational figure has no goal: not in the table
    assert "informational" not in table
    cpu = next(r for r in rows if "CPU per press" in r)
    assert cpu.startswith("✓") and "capacity" in cpu and "≤ 10 ms" in cpu
    assert "9.5 ms" in cpu and "62 ms" in cpu and "6.5x" in cpu  # 62 / 9.5, lower is better
    knee = next(r for r in rows if "knee" in r)
    assert "7.5x" in knee  # 150 / 20, higher is better
    cold = next(r for r in rows if "cold dashboard" in r)
    assert cold.startswith("✗") and "dashboard" in cold
    lost = next(r for r in rows if r.split("|")[2].strip() == "lost")
    assert "acknowledged" not in lost  # the detail of a count stays in the running output
    assert next(r for r in rows if "not measured" in r).startswith("?")
    assert lines[-1].startswith("5 figures with a goal: 3 met ✓, 1 missed ✗ (in dashboard)")
    # one column grid: every row splits into the same number of cells at the same places
    bars = {tuple(i for i, c in enumerate(r) if c == "|") for r in [lines[0], *rows]}
    assert len(bars) == 1


def test_line_and_dump(tmp_path):
    board = _board()
    assert board.figures[0].line() == (
        "  SQLite server CPU per press: 9.5 ms  | baseline 62 ms  | ratio 6.5x  | goal ≤ 10 ms"
        "  [OK]"
    )
    board.dump(tmp_path / "run.json")
    data = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert [d["bench"] for d in data] == ["capacity"] * 3 + ["dashboard"] * 3
    assert data[3]["ok"] is False and data[3]["baseline"] == 9.0
