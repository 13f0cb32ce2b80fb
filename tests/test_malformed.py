"""Every malformed input gives a clear error naming file, row and column — and the database
is unchanged (nothing half-written)."""

from __future__ import annotations

import sqlite3

import pytest

from tests.malformed import CASES

GOOD_PAIRS = b"pair_id,term_1,term_2\np1,fever,pyrexia\np2,cough,tussis\n"


def _counts(url: str) -> dict:
    con = sqlite3.connect(url[len("sqlite:///") :])
    try:
        return {
            t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("studies", "items", "annotators", "assignments", "ratings")
        }
    finally:
        con.close()


def test_corpus_is_large_enough():
    assert len(CASES) >= 15


@pytest.mark.parametrize("name,kind,content,fragment,row,column", CASES, ids=[c[0] for c in CASES])
def test_malformed_file_gives_clear_error_and_unchanged_db(
    tmp_path, db_url, cli, name, kind, content, fragment, row, column
):
    # A study that exists before: its rows must be untouched.
    good = tmp_path / "good.csv"
    good.write_bytes(GOOD_PAIRS)
    assert cli("study", "create", "before", "--pairs", good, "--annotators", "a,b").exit_code == 0
    before = _counts(db_url)
    bad = tmp_path / name
    bad.write_bytes(content)
    if kind == "pairs":
        r = cli("study", "create", "bad-study", "--pairs", bad, "--annotators", "a")
    else:
        r = cli(
            "import", "ratings", bad, "--pairs", good, "--scale", "binary", "--study", "bad-study"
        )
    assert r.exit_code == 2, r.stdout
    first = r.stderr.splitlines()[0]
    assert first.startswith("error: ") and str(bad) in first
    assert fragment in r.stderr
    if row is not None:
        assert f"row {row}" in first
    if column is not None:
        assert f"column '{column}'" in first
    assert _counts(db_url) == before
