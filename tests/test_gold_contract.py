"""The gold file contract: the bytes of every gold export (csv, tsv, jsonl, parquet, their
manifests and the Hugging Face folder) of EHR-RelA and the demo studies are pinned, so the
export code can be reshaped without changing a single byte; and the one definition of the
gold file's columns, empty and true values and manifest."""

from __future__ import annotations

import json

from tests.gold_pins import PINS, _fix_clock, produce


def test_gold_exports_are_byte_identical_to_the_pinned_hashes(
    db_url, ehr_rel_a, tmp_path, monkeypatch
):
    _fix_clock(monkeypatch.setattr)
    got = produce(ehr_rel_a, tmp_path)
    pinned = json.loads(PINS.read_text(encoding="utf-8"))
    assert sorted(got) == sorted(pinned)
    changed = [name for name in pinned if got[name] != pinned[name]]
    assert changed == [], f"gold export bytes changed: {changed}"
