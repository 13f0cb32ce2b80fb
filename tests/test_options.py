"""Allowed values stated once: each registry matches its ``Literal`` type, refuses other
values with one exception type and one message, and the help texts come from it."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Literal, get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from data_schemas.errors import OptionError, UnknownOptionError
from data_schemas.options import (
    MAJORITY_RULES,
    NUMBER_SETTINGS,
    PER_ITEM,
    TARGET_CI,
    MajorityRule,
    NumberRange,
    StrOptions,
)
from data_schemas.scales import LEVELS, Level
from medsim_annot import io
from medsim_annot.cli import flagged, setting_flags
from medsim_annot.commands._common import sample_per_group
from medsim_annot.errors import UsageProblem
from medsim_annot.stats import majority

EXAMPLES = Path(__file__).resolve().parents[1] / "data_schemas" / "examples"


def test_registries_follow_their_literal_types():
    assert MAJORITY_RULES.values == get_args(MajorityRule) == majority.RULES
    assert LEVELS.values == get_args(Level)
    with pytest.raises(ValueError, match="covers"):
        StrOptions.of(Literal["a", "b"], "x", {"a": "first"})


@given(st.text(max_size=12).filter(lambda v: v not in ("strict", "decisive")))
def test_unknown_values_are_refused_with_one_message(value):
    with pytest.raises(UnknownOptionError, match="majority must be 'strict' or 'decisive'"):
        MAJORITY_RULES.check(value)


def test_stats_check_the_rule_through_the_registry():
    import numpy as np

    counts = np.array([[2, 1]])
    assert majority.majority_from_counts(counts, np.array([3]), np.array([0, 1]), "strict")[0] == 0
    with pytest.raises(UnknownOptionError):
        majority.majority_from_counts(counts, np.array([3]), np.array([0, 1]), "loose")


def test_format_help_names_every_format():
    assert io.formats_text() == "CSV, TSV, JSONL or Parquet"
    assert set(io.FORMAT_NAMES) == set(io.READ_FORMATS)  # .xlsx is read, never written
    assert set(io.FORMATS) < set(io.READ_FORMATS)
    assert io.extensions_text().split(", ")[0] == ".csv"
    with pytest.raises(Exception, match=r"use \.csv, \.tsv, \.jsonl or \.parquet"):
        io.format_of("x.xlsx")


def test_sample_per_group_parser():
    assert sample_per_group("5,3") == (5, 3) and sample_per_group(None) is None
    for bad in ("5", "5,x", "1,2,3", "-1,2"):
        with pytest.raises(UsageProblem, match="two whole numbers"):
            sample_per_group(bad)


def test_cli_refuses_an_unknown_majority(tmp_path):
    from typer.testing import CliRunner

    from medsim_annot.cli import app

    res = CliRunner().invoke(app, ["audit", "--pairs", "p", "--ratings", "r", "--majority", "x"])
    assert res.exit_code == 2
    text = " ".join(w for w in res.output.split() if w != "│")  # the error box's borders
    assert "majority must be 'strict' or 'decisive', not 'x'" in text


# --- Number settings: declared once, one exception type, messages that name the setting ---


def _outside(r: NumberRange) -> list[object]:
    """Values every setting *r* must refuse: past each bound (and on an open one), a
    fraction for a whole-number setting, NaN, infinity, text and a bool."""
    bad: list[object] = [float("nan"), float("inf"), "1", True]
    if r.low is not None:
        bad.append(r.low - 1)
        if r.closed in ("right", "neither"):
            bad.append(r.low)
    if r.high is not None:
        bad.append(r.high + 1)
        if r.closed in ("left", "neither"):
            bad.append(r.high)
    if r.integer:
        bad.append((r.low or 0) + 1.5)
    return bad


@pytest.mark.parametrize("name", sorted(NUMBER_SETTINGS))
def test_every_number_setting_refuses_values_outside_its_range(name):
    r = NUMBER_SETTINGS[name]
    assert r.name == name
    for value in _outside(r):
        with pytest.raises(OptionError) as exc:
            r.check(value)
        assert exc.value.setting == name
        assert str(exc.value).startswith(f"{r.label} ({name}) must be {r.describe()}")
    inside = r.low if r.low is not None and r.closed in ("both", "left") else None
    if inside is None:
        inside = ((r.low or 0) + (r.high if r.high is not None else (r.low or 0) + 2)) / 2
        inside = round(inside) if r.integer else inside
    assert r.check(inside) == inside


def test_number_range_bounds_known_at_the_call():
    five = PER_ITEM.within(high=5)
    assert five.check(5) == 5 and PER_ITEM.high is None
    with pytest.raises(OptionError, match=r"annotators per pair \(per_item\) must be a whole "):
        five.check(6)
    assert PER_ITEM.within(high=1).describe() == "a whole number 1"
    assert TARGET_CI.describe() == "strictly between 0 and 0.5"


def test_tool_registry_names_every_reader():
    from medsim_annot.interop import READERS, TOOLS

    assert TOOLS.values == tuple(READERS)
    with pytest.raises(OptionError, match="tool must be 'labelstudio', 'prodigy' or 'argilla'"):
        TOOLS.check("doccano")


def test_option_errors_are_one_family():
    assert issubclass(UnknownOptionError, OptionError) and issubclass(OptionError, ValueError)
    with pytest.raises(OptionError) as exc:
        MAJORITY_RULES.check("loose")
    assert exc.value.setting == "majority"


def test_cli_error_names_the_flag(db_url, cli):
    r = cli("study", "create", "s", "--pairs", EXAMPLES / "pairs.csv", "--annotators", "a,b")
    assert r.exit_code == 0, r.stderr
    args = ("study", "create", "t", "--pairs", EXAMPLES / "pairs.csv", "--annotators", "a,b")
    r = cli(*args, "--target-ci", "0.7")
    assert r.exit_code == 2
    assert "target half-width (--target-ci) must be strictly between 0 and 0.5" in r.stderr
    assert "target_ci" not in r.stderr
    r = cli(*args[:-1], "a,b,c", "--tiebreak")
    assert r.exit_code == 2 and "(--tiebreak)" in r.stderr and "(--per-item)" in r.stderr


def test_cli_flag_table_comes_from_the_options():
    flags = setting_flags()
    assert flags["target_ci"] == "--target-ci" and flags["as_json"] == "--json"
    for name in NUMBER_SETTINGS:  # every number setting a command takes has its flag
        assert name not in flags or flags[name].startswith("--")
    assert flagged("x (tiebreak_tolerance) y", None) == "x (--tiebreak-tolerance) y"


# Raised messages that name a flag on purpose: a shell command to run by hand.
_COMMANDS = ("pg_dump", "pg_restore")
# Modules other helpers of issue 32 are moving right now; their messages follow after the merge.
_FLAG = re.compile(r"(?<![\w-])--[a-z]")


def _raised_texts(path: Path) -> list[tuple[int, str]]:
    """The literal text of every ``raise`` statement's message in *path* (f-strings too)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Raise) and node.exc is not None:
            parts = [
                n.value
                for n in ast.walk(node.exc)
                if isinstance(n, ast.Constant) and isinstance(n.value, str)
            ]
            out.append((node.lineno, "".join(parts)))
    return out


def test_service_and_statistics_messages_name_no_flag():
    """The pages show these messages to web users: they name settings (``target_ci``), and
    only the command line turns them into flags."""
    root = Path(__file__).resolve().parents[1]
    found = []
    for folder in ("services", "stats", "design"):
        for path in sorted((root / "medsim_annot" / folder).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            for line, text in _raised_texts(path):
                if _FLAG.search(text) and not any(c in text for c in _COMMANDS):
                    found.append(f"{rel}:{line}: {text}")
    assert not found, "\n".join(found)
