"""AppTest of the pages' one problems table (``pages._ui.show_problems``): the error line
names the file and the number of problems, the table lists row, column and problem."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]


def _script() -> None:
    import streamlit as st

    from data_schemas.errors import InputError, Problem
    from pages import _ui

    exc = InputError(
        [Problem("empty term", row=3, column="term_1"), Problem("duplicate pair_id", row=7)],
        file="pairs.csv",
    )
    _ui.show_problems(exc, note=st.session_state.get("note", ""), key="problems")
    _ui.show_problems(InputError([], file="scale.yaml"), key="none")


def _run(note: str = "") -> AppTest:
    import sys

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    at = AppTest.from_function(_script, default_timeout=60)
    at.session_state["note"] = note
    return at.run()


def test_problems_table_names_file_rows_and_columns():
    at = _run()
    assert not at.exception
    # The line is markdown-escaped (every ASCII punctuation mark behind a backslash, written
    # out here by hand): names show as typed, never as links or formatting.
    assert [e.value for e in at.error] == [
        r"pairs\.csv\: 2 problems\.",
        r"scale\.yaml\: invalid input",
    ]
    assert len(at.dataframe) == 1
    table = at.dataframe[0].value
    assert list(table.columns) == ["row", "column", "problem"]
    # Rows are text: a file-level problem has a blank row, not "None".
    assert table.to_dict(orient="records") == [
        {"row": "3", "column": "term_1", "problem": "empty term"},
        {"row": "7", "column": "", "problem": "duplicate pair_id"},
    ]


def test_note_follows_the_count():
    at = _run("nothing was created.")
    assert at.error[0].value == r"pairs\.csv\: 2 problems — nothing was created\."


def test_tables_show_missing_numbers_as_a_dash(monkeypatch):
    """The pairwise matrix's diagonal and a statistic without enough ratings showed "None";
    the table shows "—" and downloads the values as they are."""
    import numpy as np
    import pandas as pd
    import streamlit as st

    from pages import _qa

    shown, downloaded = [], []
    monkeypatch.setattr(st, "dataframe", lambda data, **kw: shown.append(data))
    monkeypatch.setattr(
        _qa, "download_csv", lambda label, frame, *a, **kw: downloaded.append(frame)
    )
    matrix = pd.DataFrame({"A": [np.nan, 0.71234], "B": [0.71234, np.nan]}, index=["A", "B"])
    _qa.table(matrix, "pairwise-alpha", "k", index=True)
    text = shown[0].to_string()
    assert "—" in text and "None" not in text and "nan" not in text and "0.712" in text
    assert downloaded[0] is matrix
