"""Spreadsheet formulas in exported cells (a cell starting with = runs when the file is opened
in a spreadsheet): one formula-escaping writer for every CSV/TSV the app, the
CLI and the builders produce, header cells (metadata column names, annotator names, the
index) included."""

from __future__ import annotations

import ast
import tempfile
from pathlib import Path

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from data_schemas import BINARY
from data_schemas import columns as C
from medsim_annot.io import read_table, table_bytes, write_table
from medsim_annot.services import studies as svc
from medsim_annot.services.annotation import queue_state, submit_rating
from medsim_annot.services.people import annotators as asvc
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.store import open_store
from medsim_annot.services.study_handle import open_study

ROOT = Path(__file__).resolve().parents[1]
EVIL = ('=HYPERLINK("http://x")', "+SUM(1)", "-2+A1", "@cmd", "\tTAB")


def _cells(text: str, sep: str) -> list[str]:
    return [c.strip('"') for line in text.splitlines() for c in line.split(sep)]


def _unsafe(cells: list[str]) -> list[str]:
    return [c for c in cells if c[:1] in ("=", "+", "@", "\t") or c.startswith("-2+")]


def test_header_cells_are_escaped_in_files(tmp_path):
    frame = pd.DataFrame({C.PAIR_ID: ["p1"], "=meta": ["@x"], "+n": [-0.5]})
    for ext, sep in (("csv", ","), ("tsv", "\t")):
        path = write_table(frame, tmp_path / f"f.{ext}")
        text = path.read_text(encoding="utf-8")
        assert text.splitlines()[0] == sep.join([C.PAIR_ID, "'=meta", "'+n"])
        assert _unsafe(_cells(text, sep)) == []
        assert "-0.5" in text  # numbers are data
        # Our reader gives back exactly what was written.
        back = read_table(path)
        assert list(back.columns) == list(frame.columns)
        assert back["=meta"].tolist() == ["@x"]


def test_downloads_escape_header_and_index():
    frame = pd.DataFrame(
        {"=annotator": ["@a"], "ok": ["-1+A1"]},
        index=pd.Index(["=idx"], name="+name"),
    )
    text = table_bytes(frame, index=True).decode("utf-8")
    assert text.splitlines() == ["'+name,'=annotator,ok", "'=idx,'@a,'-1+A1"]
    assert table_bytes(frame, "tsv").decode().splitlines()[0] == "'=annotator\tok"


def test_exported_ratings_escape_annotator_names_and_metadata(db_url, tmp_path):
    engine = open_store(db_url)
    pairs = pd.DataFrame(
        {
            C.PAIR_ID: ["p1", "p2"],
            C.TERM_1: ["=a", "b"],
            C.TERM_2: ["c", "@d"],
            "=source": ["+x", "y"],
        }
    )
    out = svc.create_study("s", pairs, BINARY, ["=evil"], engine=engine)
    who = authenticate_annotator(out["annotators"][0]["access_code"], engine=engine)
    assert who is not None
    position = queue_state(who.annotator_id, engine=engine).first_unrated
    submit_rating(who.annotator_id, position, "same", comment="=cmd()", engine=engine)
    path = tmp_path / "ratings.csv"
    svc.export_ratings(open_study("s", engine=engine), path)
    text = path.read_text(encoding="utf-8")
    assert "'=evil" in text and "'=cmd()" in text
    assert _unsafe(_cells(text, ",")) == []
    assert asvc.annotators(open_study("s", engine=engine))[C.ANNOTATOR].tolist() == ["=evil"]


def test_no_other_csv_writer():
    """Pages, services, commands and builders write CSV/TSV only through medsim_annot.io."""
    offenders = []
    for folder in ("medsim_annot", "pages"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == ROOT / "medsim_annot" / "io.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Attribute) and node.attr in ("to_csv", "writer"):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} .{node.attr}")
    assert offenders == []


TEXT = st.text(st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), max_size=6)


@given(
    st.lists(TEXT | st.sampled_from(EVIL) | TEXT.map(lambda t: "'=" + t), min_size=1, max_size=8)
)
def test_escaped_cells_round_trip(values):
    """What the writer escapes, the reader restores: nothing is lost."""
    with tempfile.TemporaryDirectory() as d:
        path = write_table(pd.DataFrame({"v": values}), Path(d) / "x.csv")
        back = read_table(path)
    # A row whose only cell is empty is a blank line, which the reader skips.
    assert back["v"].tolist() == [v for v in values if v != ""]
