"""Allowed values stated once: each registry matches its ``Literal`` type, refuses other
values with one exception type and one message, and the help texts come from it."""

from __future__ import annotations

from typing import Literal, get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from data_schemas.errors import UnknownOptionError
from data_schemas.options import MAJORITY_RULES, MajorityRule, StrOptions
from data_schemas.scales import LEVELS, Level
from medsim_annot import io
from medsim_annot.commands._common import sample_per_group
from medsim_annot.errors import UsageProblem
from medsim_annot.stats import majority


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
    assert set(io.FORMAT_NAMES) == set(io.FORMATS)
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
