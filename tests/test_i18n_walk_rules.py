"""The walker's rules (tests/i18n_walk.py) without a browser: English chrome is caught, data,
dates, sizes, code, keys and icons are not, and a data table's headers are read from the
message that carries it."""

from __future__ import annotations

import pandas as pd

from medsim_annot.i18n import language, t
from medsim_annot.i18n.pseudo import is_pseudo
from tests.i18n_walk import DataRule, Shown, chrome_or_data

RULE = DataRule(
    {"walk_doc", "hepatomegaly 1", "Same"},
    ["### Are these two terms the same?\n\nCould they be used **interchangeably**?"],
)


def _ok(text: str, tags: tuple[str, ...] = ("DIV",), testids: tuple[str, ...] = ()) -> bool:
    item = Shown(text=text, kind="text", path="-", testids=list(testids), tags=list(tags))
    return chrome_or_data(item, RULE, is_pseudo)


def test_english_chrome_is_caught_and_data_is_not():
    with language("qps-ploc"):
        hello = t("Hello, {name}", name="walk_doc")
    assert _ok(hello)  # translated around a name
    assert _ok("walk_doc") and _ok("hepatomegaly 1") and _ok("Same")  # data alone
    assert _ok("Could they be used")  # a fragment of the study's guideline
    assert _ok("⟦Ļášţ çĥáñĝéđ Nov 27, 2026, 3:10 PM⟧") and _ok("⟦200MB þéŕ ƒîĺé⟧")
    assert _ok("Backspace", tags=("KBD", "DIV")) and _ok("MEDSIM_DIR", tags=("CODE", "P"))
    assert _ok("keyboard_arrow_down", testids=("stIconMaterial",))
    assert _ok("Running...", testids=("stStatusWidget",))
    assert _ok("⟦ŕáţéŕ_walk_doc⟧")  # a header made of a word and a name
    assert not _ok("rater_walk_doc") and not _ok("walk_docs")
    assert not _ok("Sign out")
    assert not _ok("Hello, walk_doc")
    assert not _ok("⟦Đöŵñĺöáđ⟧ agreement (CSV)")
    assert not _ok("Could they be used in notes")  # more than the guideline's words


def test_a_data_tables_headers_come_from_its_message():
    import pyarrow as pa
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    from tests.i18n_walk import _headers, _table_of

    frame = pd.DataFrame({"pair_id": ["a"], "Rated pairs": [3]})
    sink = pa.BufferOutputStream()
    table = pa.Table.from_pandas(frame)
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    data = sink.getvalue().to_pybytes()
    assert _headers(data, '{"_index": {"hidden": true}}', []) == ["pair_id", "Rated pairs"]
    assert _headers(data, '{"pair_id": {"label": "Pair"}}', []) == ["Pair", "Rated pairs"]
    msg = ForwardMsg()
    msg.delta.new_element.dataframe.arrow_data.data = data
    found = _table_of(msg.SerializeToString())
    assert found is not None and found.headers == ["pair_id", "Rated pairs"]
