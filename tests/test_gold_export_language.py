"""A gold export's files are data: the same bytes whoever exports them, in whatever
language their page is (issue 35). The manifest's words (why an alpha is undefined) and
the hf dataset card are English, as the CLI's; the page shows them in the admin's
language through its own texts."""

from __future__ import annotations

import datetime as dt
import json

import pandas as pd

from data_schemas.scales import BINARY
from medsim_annot import i18n
from medsim_annot.services import annotation as A
from medsim_annot.services import studies as svc
from medsim_annot.services.gold.export import export_gold
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.study_handle import open_study

NOW = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.UTC)


def _undecided_study() -> None:
    """Two doctors who answer "don't know" to every pair: Krippendorff's alpha is
    undefined, with a reason in words (a catalogue message)."""
    frame = pd.DataFrame(
        {"pair_id": ["a", "b", "c"], "term_1": ["x", "y", "z"], "term_2": ["u", "v", "w"]}
    )
    res = svc.create_study("undecided", frame, BINARY, ["dr_a", "dr_b"])
    for person in res["annotators"]:
        who = authenticate_annotator(person["access_code"]).annotator_id
        for pos in range(3):
            view = A.get_pair(who, pos)
            A.submit_rating(who, view.position, "dont_know", expected_version=view.version)


def _export(tmp_path, lang: str, fmt: str) -> tuple[bytes, bytes]:
    out = tmp_path / lang / ("gold" if fmt == "hf" else f"gold.{fmt}")
    out.parent.mkdir()
    with i18n.language(lang):
        result = export_gold(open_study("undecided"), out, fmt, now=NOW)
    if fmt == "hf":
        card = (out / "README.md").read_bytes()
        return card, json.dumps(result.manifest, sort_keys=True).encode()
    return out.read_bytes(), (tmp_path / lang / "gold.csv.manifest.json").read_bytes()


def test_a_german_and_a_spanish_export_write_the_english_bytes(db_url, tmp_path):
    _undecided_study()
    english = _export(tmp_path, "en", "csv")
    reasons = json.loads(english[1])["krippendorff_alpha_reasons"]
    why = "no pairable items (no item has two or more decisive ratings)"
    assert reasons == {"study": why, "exported": why}, reasons
    assert _export(tmp_path, "de", "csv") == english
    assert _export(tmp_path, "es", "csv") == english
    assert _export(tmp_path, "qps-ploc", "csv") == english


def test_the_hf_card_is_the_same_in_every_language(db_url, tmp_path):
    _undecided_study()
    english = _export(tmp_path, "en", "hf")
    assert _export(tmp_path, "de", "hf") == english
