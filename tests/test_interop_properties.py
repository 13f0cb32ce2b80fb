"""Hypothesis: whatever ratings a tool holds, its export read back gives exactly those
ratings (pair, annotator, value), whatever the order of tasks and annotations, with the
not-a-rating answers counted as skipped — for each of the three tools' formats."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from data_schemas.scales import BINARY, RELATEDNESS_0_3
from medsim_annot.interop import Mapping, read_export

ANNOTATORS = ["u1", "u2", "u3", "u4"]
BINARY_LABELS = {"same": "Same", "not_same": "Not same", "dont_know": "Don't know"}

# {pair index: {annotator: value or None (= a not-a-rating answer)}}
table = st.dictionaries(
    st.integers(0, 30),
    st.dictionaries(st.sampled_from(ANNOTATORS), st.none() | st.integers(0, 3), min_size=1),
    min_size=1,
    max_size=12,
)


def _expected(t: dict, as_value) -> set:
    return {
        (str(p), a, as_value(v)) for p, row in t.items() for a, v in row.items() if v is not None
    }


def _skipped(t: dict) -> int:
    return sum(v is None for row in t.values() for v in row.values())


def _read(tool, name, text, scale):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        if name.endswith("/"):
            path.mkdir()
            (path / "records.json").write_text(text, encoding="utf-8")
        else:
            path.write_text(text, encoding="utf-8")
        parsed, _ = read_export(tool, path, scale, mapping=Mapping())
        if not parsed.ratings:
            return parsed, set()
        _, ratings = parsed.validated(scale)
    got = {
        (p, a, r) for p, a, r in ratings[["pair_id", "annotator", "rating"]].itertuples(index=False)
    }
    return parsed, got


def _binary(v: int) -> str:
    return ["same", "not_same", "dont_know", "same"][v]


@given(table, st.randoms(use_true_random=False))
def test_labelstudio_export_reads_back(t, rnd):
    tasks = []
    for p, row in t.items():
        anns = [
            {
                "completed_by": a,
                "was_cancelled": v is None,
                "result": []
                if v is None
                else [
                    {
                        "type": "choices",
                        "from_name": "v",
                        "value": {"choices": [BINARY_LABELS[_binary(v)]]},
                    }
                ],
            }
            for a, v in row.items()
        ]
        rnd.shuffle(anns)
        tasks.append({"id": p, "data": {"term_1": f"a{p}", "term_2": f"b{p}"}, "annotations": anns})
    rnd.shuffle(tasks)
    parsed, got = _read("labelstudio", "ls.json", json.dumps(tasks), BINARY)
    assert got == _expected(t, _binary)
    assert len(parsed.skipped) == _skipped(t)


@given(table, st.randoms(use_true_random=False))
def test_prodigy_export_reads_back(t, rnd):
    options = [{"id": f"o{i}", "text": o.label} for i, o in enumerate(RELATEDNESS_0_3.options)]
    lines = [
        {
            "text_1": f"a{p}",
            "text_2": f"b{p}",
            "_input_hash": p,
            "options": options,
            "accept": [] if v is None else [f"o{v}"],
            "answer": "ignore" if v is None else "accept",
            "_annotator_id": a,
        }
        for p, row in t.items()
        for a, v in row.items()
    ]
    rnd.shuffle(lines)
    parsed, got = _read(
        "prodigy", "db.jsonl", "\n".join(json.dumps(x) for x in lines), RELATEDNESS_0_3
    )
    assert got == _expected(t, float)
    assert len(parsed.skipped) == _skipped(t)


@given(table, st.randoms(use_true_random=False))
def test_argilla_export_reads_back(t, rnd):
    records = []
    for p, row in t.items():
        responses = [
            {
                "value": 0 if v is None else v,
                "user_id": a,
                "status": "discarded" if v is None else "submitted",
            }
            for a, v in row.items()
        ]
        rnd.shuffle(responses)
        records.append(
            {
                "id": str(p),
                "fields": {"term_1": f"a{p}", "term_2": f"b{p}"},
                "responses": {"rel": responses},
            }
        )
    rnd.shuffle(records)
    parsed, got = _read("argilla", "argilla/", json.dumps(records), RELATEDNESS_0_3)
    assert got == _expected(t, float)
    assert len(parsed.skipped) == _skipped(t)
