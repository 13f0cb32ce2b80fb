"""Contracts: valid and invalid examples, reader round trips, the malformed-input corpus."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from data_schemas import (
    BINARY,
    RELATEDNESS_0_3,
    InputError,
    is_ehr_rel,
    load_scale,
    split_ehr_rel,
    to_ratings_frame,
    validate_pairs,
    validate_ratings,
)
from data_schemas import columns as C
from medsim_annot.io import read_table, write_table

EXAMPLES = Path(__file__).resolve().parents[1] / "data_schemas" / "examples"


def test_example_pairs_are_valid():
    pairs = validate_pairs(read_table(EXAMPLES / "pairs.csv"))
    assert list(pairs[C.PAIR_ID]) == ["ex-1", "ex-2", "ex-3", "ex-4"]
    assert pairs[C.AUTO_LABEL].dtype == "Int64"
    assert list(pairs[C.AUTO_LABEL]) == [1, 0, 1, 0]


def test_example_ratings_are_valid():
    ratings = validate_ratings(read_table(EXAMPLES / "ratings.csv"), BINARY)
    assert list(ratings[C.RATING]) == ["same", "same", "not_same", "dont_know"]
    frame = to_ratings_frame(ratings, BINARY)
    assert frame[C.VALUE].isna().sum() == 1  # dont_know is no decision
    assert frame[C.NO_DECISION].sum() == 1


def test_example_ehr_rel_and_scale():
    wide = read_table(EXAMPLES / "ehr_rel_wide.tsv")
    assert is_ehr_rel(wide.columns)
    pairs, ratings = split_ehr_rel(wide)
    assert list(pairs[C.PAIR_ID]) == ["100001-100002", "100003-100004"]
    assert len(ratings) == 5  # the empty rater_B cell is "not rated"
    scale = load_scale(EXAMPLES / "scale.yaml")
    assert scale.level == "ordinal" and scale.is_no_decision("skip")


def test_pair_id_generated_stably_when_absent(tmp_path):
    f = tmp_path / "p.csv"
    f.write_text("term_1,term_2\nfever,pyrexia\nfever,hives\n", encoding="utf-8")
    a = validate_pairs(read_table(f))
    b = validate_pairs(read_table(f))
    assert list(a[C.PAIR_ID]) == list(b[C.PAIR_ID])
    assert a[C.PAIR_ID].is_unique and all(p.startswith("p-") for p in a[C.PAIR_ID])


def test_extra_columns_are_kept_as_metadata(tmp_path):
    f = tmp_path / "p.tsv"
    f.write_text("term_1\tterm_2\tsource_note\nfever\tpyrexia\tward 3\n", encoding="utf-8")
    assert validate_pairs(read_table(f)).loc[0, "source_note"] == "ward 3"


def test_bom_is_accepted(tmp_path):
    f = tmp_path / "bom.csv"
    f.write_bytes("\ufeffterm_1,term_2\nfever,pyrexia\n".encode("utf-8"))
    assert list(validate_pairs(read_table(f))[C.TERM_1]) == ["fever"]


@pytest.mark.parametrize("ext", ["csv", "tsv", "jsonl", "parquet"])
def test_reader_round_trip_every_format(tmp_path, ext):
    pairs = validate_pairs(read_table(EXAMPLES / "pairs.csv"))
    out = tmp_path / f"pairs.{ext}"
    frame = pairs.astype({C.AUTO_LABEL: "string"}).fillna("")
    write_table(frame, out)
    back = validate_pairs(read_table(out))
    pd.testing.assert_frame_equal(back, pairs)


@pytest.mark.parametrize("ext", ["csv", "tsv", "jsonl", "parquet"])
def test_writer_is_byte_identical(tmp_path, ext):
    frame = pd.DataFrame({"a": ["x", "y"], "b": [1.5, 2.0]})
    write_table(frame, tmp_path / f"1.{ext}")
    write_table(frame, tmp_path / f"2.{ext}")
    assert (tmp_path / f"1.{ext}").read_bytes() == (tmp_path / f"2.{ext}").read_bytes()


def test_formula_escape_in_csv(tmp_path):
    frame = pd.DataFrame(
        {"term_1": ["=cmd|' /C calc'!A0", "+1", "-x", "@SUM(1)", "fever"], "n": [1, 2, 3, 4, -5]}
    )
    write_table(frame, tmp_path / "x.csv")
    text = (tmp_path / "x.csv").read_text()
    assert "'=cmd" in text and "'+1" in text and "'-x" in text and "'@SUM" in text
    assert ",-5" in text  # numbers are data, not formulas


@given(
    st.lists(
        st.tuples(
            st.text(min_size=1, max_size=20).filter(lambda s: s.strip() and "\x00" not in s),
            st.text(min_size=1, max_size=20).filter(lambda s: s.strip() and "\x00" not in s),
        ),
        min_size=1,
        max_size=15,
    )
)
def test_round_trip_keeps_any_terms(tmp_path_factory, rows):
    tmp = tmp_path_factory.mktemp("rt")
    frame = pd.DataFrame(
        {
            C.PAIR_ID: [f"p{i}" for i in range(len(rows))],
            C.TERM_1: [a for a, _ in rows],
            C.TERM_2: [b for _, b in rows],
        }
    )
    for ext in ("csv", "jsonl", "parquet"):
        write_table(frame, tmp / f"f.{ext}")
        back = read_table(tmp / f"f.{ext}")
        assert list(back[C.TERM_1]) == list(frame[C.TERM_1])
        assert list(back[C.TERM_2]) == list(frame[C.TERM_2])


def test_scale_rejects_values_with_allowed_list():
    with pytest.raises(ValueError, match="allowed: 0, 1, 2, 3"):
        RELATEDNESS_0_3.canonical("4")
    assert RELATEDNESS_0_3.canonical("2.0") == 2
    assert (
        BINARY.code("same") == 1
        and BINARY.code("not_same") == 0
        and BINARY.code("dont_know") is None
    )


def test_custom_scale_errors_name_the_field(tmp_path):
    f = tmp_path / "bad.json"
    f.write_text('{"name": "x", "options": [{"value": 1, "label": "a", "key": "1"}]}')
    with pytest.raises(InputError) as exc:
        load_scale(f)
    assert "options" in exc.value.summary()
