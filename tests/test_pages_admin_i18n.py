"""AppTest of the admin pages in the person's language (issue 35): Study setup, Adjudicate,
Export and Embedding scoring in German and Spanish (translated texts, German number formats),
every visible text of them pseudo-localised in ``qps-ploc`` (data excepted by rule: the
study's names, terms, ids and numbers), the adjudicator widget's words coming in its
contract, the import problems naming file, row and column in German, and the gold download
and its manifest the same bytes whatever the admin's language."""

from __future__ import annotations

import datetime as dt
import functools
import json
import re
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from data_schemas.adjudicator_widget import AdjudicatorData, AdjudicatorTexts
from data_schemas.errors import InputError
from data_schemas.pairs import validate_pairs
from data_schemas.scales import BINARY, BUILT_IN
from medsim_annot import i18n
from medsim_annot.i18n.pseudo import is_pseudo
from medsim_annot.io import read_table
from medsim_annot.services import dashboard as dsvc
from medsim_annot.services import scoring
from medsim_annot.services import studies as S
from medsim_annot.services.demo import seed_demo
from medsim_annot.services.gold import export as export_svc
from medsim_annot.services.people import adjudicators as adj_people
from medsim_annot.services.people import annotators as A
from medsim_annot.services.people.admins import AdminIdentity
from medsim_annot.services.people.code_sheet import codes_sheet_html
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all, get_engine
from pages._i18n import LANGUAGE_KEY
from tests.test_adjudicator_widget import _study as adjudication_study

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 180


@pytest.fixture
def db(db_url, monkeypatch):
    monkeypatch.delenv("MEDSIM_ADMIN_PASSWORD", raising=False)
    monkeypatch.delenv("MEDSIM_EMBEDDINGS_DIR", raising=False)
    monkeypatch.syspath_prepend(str(ROOT))
    dispose_all()
    dsvc.clear_cache()
    yield db_url
    dispose_all()
    i18n.set_language(i18n.SOURCE)


def _speak(lang: str | None) -> None:
    """The test's own thread in the page's language too: AppTest formats a choice's value
    with the page's ``format_func`` in this thread to find the option shown."""
    i18n.set_language(lang or i18n.SOURCE)


def _page(name: str, lang: str | None, state: dict | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / name), default_timeout=TIMEOUT)
    at.session_state["auth_role"] = "admin"
    at.session_state["auth_admin"] = AdminIdentity("alice", "named")
    if lang:
        at.session_state[LANGUAGE_KEY] = lang
    _speak(lang)
    for k, v in (state or {}).items():
        at.session_state[k] = v
    return at.run()


def _pairs(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "pair_id": [f"p{i}" for i in range(n)],
            "term_1": [f"fever {i}" for i in range(n)],
            "term_2": [f"pyrexia {i}" for i in range(n)],
            "auto_label": [i % 2 for i in range(n)],
        }
    )


def _labels(widget) -> list[str]:
    out = [getattr(widget, "label", "") or ""]
    for attr in ("help", "placeholder"):
        value = getattr(widget, attr, None)
        if isinstance(value, str):
            out.append(value)
    return out


#: The study picker of pages/_qa.py: the dashboard area's (its texts are tested there).
SHARED_WIDGETS = ("export_study", "adj_study")


def visible_texts(at: AppTest) -> list[str]:
    """Every text AppTest can see on the page: titles, headers, captions, messages, markdown,
    every widget's label, help and placeholder, the options of choices, tabs, expanders,
    download buttons, file uploaders and the headers of the tables shown."""
    texts: list[str] = []
    for kind in (
        "title", "header", "subheader", "caption", "markdown", "success", "error", "warning",
        "info",
    ):  # fmt: skip
        texts += [e.value for e in getattr(at, kind)]
    for kind in (
        "button", "checkbox", "toggle", "text_input", "text_area", "number_input", "slider",
        "selectbox", "multiselect", "radio",
    ):  # fmt: skip
        for w in getattr(at, kind):
            if getattr(w, "key", None) in SHARED_WIDGETS:
                continue
            texts += _labels(w)
            if kind in ("selectbox", "radio", "multiselect"):
                texts += [str(o) for o in w.options]
    texts += [t.label for t in at.tabs] + [e.label for e in at.expander]
    for kind in ("download_button", "file_uploader"):
        texts += [e.proto.label for e in at.get(kind)]
    for df in at.dataframe:  # a header as shown: its column_config label, else its name
        config = json.loads(df.proto.columns) if df.proto.columns else {}
        texts += [(config.get(str(c)) or {}).get("label") or str(c) for c in df.value.columns]
    return [t for t in texts if t]


def default_placeholders(at: AppTest) -> list[str]:
    """The choices that would show Streamlit's own English placeholder ("Choose options",
    "No options to select"): a multiselect, or a selectbox without options, given none."""
    return [
        w.key
        for w in [*at.multiselect, *at.selectbox]
        if not w.placeholder and (w.type == "multiselect" or not w.options)
    ]


def not_pseudo(texts: list[str], data: set[str]) -> list[str]:
    """The texts that are not pseudo-localised once the study's data are taken out: its
    names, terms, ids and file names (by rule: the longest first, as whole tokens)."""
    pattern = (
        re.compile("|".join(re.escape(d) for d in sorted(data, key=len, reverse=True)))
        if data
        else None
    )
    bad = []
    for text in texts:
        rest = text.replace("\\", "")  # markdown escapes of names (plain_markdown)
        rest = pattern.sub("", rest) if pattern else rest
        rest = re.sub(r"\b[0-9a-f]{8,}\b", "", rest)  # digests (SHA-256) and nonces
        if not is_pseudo(rest):
            bad.append(text)
    return bad


def study_data(name: str) -> set[str]:
    """What a study holds as data: its name, its people, scale values, pair ids and terms."""
    study = open_study(name)
    pairs = S.pairs_frame(study)
    data = {name, *map(str, pairs["pair_id"]), *map(str, pairs["term_1"])}
    data |= set(map(str, pairs["term_2"]))
    data |= {str(o.value) for o in study.scale.options} | {o.label for o in study.scale.options}
    # Every study's name, every built-in scale's name and guideline (the study's own texts).
    data |= {s.study for s in S.list_studies()} | set(BUILT_IN)
    data |= {scale.guideline for scale in BUILT_IN.values()} | {study.guideline or ""}
    data |= set(A.annotators(study)["annotator"])
    # The study's own texts (shown as the default a translation starts from, Study setup's
    # languages section) and the languages' own names (never translated, by convention).
    data |= {study.scale.asks} | {o.description for o in study.scale.options}
    data |= set(i18n.LANGUAGES.values())
    return {d for d in data if d}


# ---------------------------------------------------------------------------- Study setup
def test_setup_in_german_translates_and_formats_numbers(db, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    _pairs(1200).to_csv(tmp_path / "data" / "pairs.csv", index=False)
    S.create_study("Station 7", validate_pairs(_pairs(4).astype(str)), BINARY, ["dr_a", "dr_b"])
    at = _page("setup.py", "de")
    assert not at.exception, at.exception
    assert at.title[0].value == "Studie einrichten"
    assert [h.value for h in at.header] == ["Neue Studie", "Annotierende und Zugangscodes"]
    assert [t.label for t in at.tabs][:3] == ["Hinzufügen", "Umbenennen", "Code ausgeben"]
    assert at.radio(key="setup_source").options == ["Hochladen", "Eine Datei in data/ wählen"]
    at.radio(key="setup_source").set_value("Eine Datei in data/ wählen").run()
    # The option's value stays the same whatever the language.
    assert at.radio(key="setup_source").value == "Choose a file in data/"
    at.selectbox(key="setup_file").select("data/pairs.csv").run()
    assert not at.exception, at.exception
    # German groups thousands with a dot.
    assert any(s.value == "pairs\\.csv\\: 1\\.200 gültige Paare\\." for s in at.success), [
        s.value for s in at.success
    ]
    caption = " ".join(c.value for c in at.caption)
    assert "Noch nötig: ein Name der Studie, mindestens ein Name einer annotierenden" in caption
    at.text_area(key="setup_annotators").input("ann\nbob").run()
    assert any("1.200 Paare; Seed" in c.value for c in at.caption)
    sizes = next(d.value for d in at.dataframe if "Kontrollen" in d.value.columns)
    assert list(sizes.columns) == ["Annotierende Person", "Plätze", "Kalibrierung",
                                   "Wiederholungen", "Kontrollen"]  # fmt: skip
    assert sizes["Plätze"].tolist() == [1200, 1200]


def test_setup_in_spanish_and_a_manage_message(db):
    S.create_study("ward", validate_pairs(_pairs(4).astype(str)), BINARY, ["dr_a"])
    at = _page("setup.py", "es")
    assert not at.exception, at.exception
    assert at.title[0].value == "Configuración del estudio"
    at.text_input(key="setup_add_name").input("dr_c").run()
    at.button(key="setup_add").click().run()
    assert not at.exception, at.exception
    assert any("Se añadió a dr\\_c\\." in s.value for s in at.success), [
        s.value for s in at.success
    ]
    at.selectbox(key="setup_revoke_who").select("dr_a").run()
    at.button(key="setup_revoke").click().run()
    assert any("Se revocó el código de acceso de dr\\_a" in s.value for s in at.success)


def test_setup_pseudo_language_every_text(db, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    _pairs(6).to_csv(tmp_path / "data" / "pairs.csv", index=False)
    S.create_study("ward", validate_pairs(_pairs(4).astype(str)), BINARY, ["dr_a"])
    at = _page("setup.py", i18n.PSEUDO)
    assert not at.exception, at.exception
    at.radio(key="setup_source").set_value("Choose a file in data/").run()
    at.selectbox(key="setup_file").select("data/pairs.csv").run()
    at.text_area(key="setup_annotators").input("ann\nbob").run()
    assert not at.exception, at.exception
    data = study_data("ward") | {"data/pairs.csv", "pairs.csv", "ann", "bob", "binary"}
    data |= {"relatedness_0_3", "YAML", "JSON", "yaml", "yml", "json"}
    data |= {"dr_ahmed", "dr_baker", "pair_id", "check_answer", "auto_label"}
    bad = not_pseudo(visible_texts(at), data)
    assert not bad, bad
    assert not default_placeholders(at)


def test_import_problems_in_german_name_file_row_and_column(db, tmp_path):
    bad = tmp_path / "paare.csv"
    bad.write_text("pair_id,term_1,term_2,auto_label\np1,Fieber,Pyrexie,2\np1,,Husten,1\n")
    with i18n.language("de"):
        with pytest.raises(InputError) as info:
            S.load_pairs(bad)
        lines = info.value.lines()
    assert "paare.csv, Zeile 2, Spalte 'auto_label': auto_label muss 0 oder 1" in "\n".join(lines)
    assert any("paare.csv, Zeile 3, Spalte 'term_1': ist leer" in line for line in lines), lines
    with i18n.language("de"):
        summary = info.value.summary()
    assert "weitere Probleme" in summary
    # The Excel advice, in Spanish.
    sheet = tmp_path / "hoja.csv"
    sheet.write_bytes(b"PK\x03\x04rest of a workbook")
    with i18n.language("es"), pytest.raises(InputError) as info:
        read_table(sheet)
    assert "hoja.csv: es un libro de Excel (.xlsx), no un archivo de texto CSV" in str(info.value)


# ---------------------------------------------------------------------------- Adjudicate
def _adjudicator_page(lang: str) -> AppTest:
    code = adjudication_study()
    at = AppTest.from_file(str(ROOT / "pages" / "adjudicate.py"), default_timeout=TIMEOUT)
    at.session_state["auth_routed"] = True
    at.session_state["auth_role"] = "adjudicator"
    at.session_state["auth_identity"] = adj_people.authenticate_adjudicator(code)
    at.session_state[LANGUAGE_KEY] = lang
    _speak(lang)
    return at.run()


def _mounted(at: AppTest) -> AdjudicatorData:
    return AdjudicatorData.model_validate(json.loads(at.get("bidi_component")[0].proto.json))


def test_adjudicate_in_german_the_widget_gets_its_words(db):
    at = _adjudicator_page("de")
    assert not at.exception, at.exception
    assert at.title[0].value == "Schiedsentscheidung"
    data = _mounted(at)
    texts = data.texts
    assert data.pair is not None
    assert texts.head == f"Paar 1 von {data.total} · {data.pair.pair_id}"
    assert texts.counter == f"{data.decided} von {data.needed} entschieden"
    assert texts.needs.startswith("Warum: ")
    assert texts.facts.startswith("Mehrheit: ")
    assert (texts.vs, texts.col_rater, texts.options) == (
        "vs.",
        "Bewertende Person",
        "Endgültiges Label",
    )
    assert [r.label for r in data.reasons][:2] == ["Fehler der Bewertenden", "Mehrdeutiger Begriff"]
    # A decision saved: the page's answer in German, the stored values unchanged.
    first = data.pair.pair_id
    at.session_state["adjudicate_widget"] = {
        "decision": {
            "pair_id": first, "label": "same", "reason": "guideline_gap", "reason_text": "",
            "flag_guideline": False, "version": 0, "seq": "1",
        },
        "nav": None,
    }  # fmt: skip
    data = _mounted(at.run())
    assert data.status.startswith(f"{first} gespeichert: ") and "Lücke in der Richtlinie" in (
        data.status
    )


def test_adjudicate_pseudo_language_every_text(db):
    at = _adjudicator_page(i18n.PSEUDO)
    assert not at.exception, at.exception
    data = _mounted(at)
    study = study_data("adj-contract") | {"judge", "why", "a", "b", "c", "dont_know", "not_same"}
    texts = visible_texts(at) + [v for v in data.texts.model_dump().values() if v]
    texts += [r.label for r in data.reasons]
    bad = not_pseudo(texts, study)
    assert not bad, bad
    # Every fixed word of the widget has a default, and every one is translated.
    fixed = [f for f, info in AdjudicatorTexts.model_fields.items() if info.default]
    assert fixed and all(getattr(data.texts, f) != AdjudicatorTexts.model_fields[f].default
                         for f in fixed)  # fmt: skip


def test_the_widget_writes_no_text_of_its_own():
    """Every text of the widget's HTML comes from its contract (data-text / data-label), and
    the JavaScript sets no quoted English sentence as a text."""
    here = ROOT / "pages" / "components" / "adjudicator"
    html = (here / "adjudicator.html").read_text(encoding="utf-8")
    bare = re.sub(r"<[^>]+>", " ", html)
    bare = re.sub(r"\b(f|n|p|Enter|1|9)\b", " ", bare)  # the keys themselves
    assert not re.search(r"[A-Za-z]", bare), bare
    keys = set(re.findall(r'data-(?:text|label)="(\w+)"', html))
    assert keys and keys <= set(AdjudicatorTexts.model_fields)
    js = (here / "adjudicator.js").read_text(encoding="utf-8")
    assert not re.search(r"textContent = [`\"'][A-Z]", js)


# ---------------------------------------------------------------------------- Export
@pytest.fixture
def fixed_clock(monkeypatch):
    """Every export stamped with the same time (the manifest records when it was made)."""
    original = export_svc.export_gold
    when = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.UTC)
    monkeypatch.setattr(export_svc, "export_gold", functools.partial(original, now=when))


def _export(lang: str | None) -> tuple[AppTest, dict]:
    # The same session part of the file names (a random one per session otherwise).
    at = _page("export.py", lang, {"auth_download_nonce": "0123456789abcdef"})
    at.selectbox(key="export_format").select("csv")
    at.radio(key="export_label_required").set_value("A majority")
    at.number_input(key="export_min_ratings").set_value(3)
    at.button[0].click().run()
    assert not at.exception, at.exception
    return at, at.session_state["export_result"]


def test_export_in_spanish_same_bytes_as_english(db, fixed_clock):
    seed_demo(engine=get_engine())
    _, english = _export(None)
    at, spanish = _export("es")
    assert at.title[0].value == "Exportación de referencia"
    assert at.success and "96 de 120 pares listos (csv, SHA-256" in at.success[0].value
    assert "Etiquetas: " in at.success[0].value
    # The gold file and its manifest: byte for byte the English ones.
    assert spanish["data"] == english["data"]
    assert spanish["manifest"] == english["manifest"]
    assert spanish["manifest_name"] == english["manifest_name"]
    labels = [b.proto.label for b in at.get("download_button")]
    assert all(label.startswith("Descargar gold-demo-binary-") for label in labels)
    table = at.table[0].value
    assert list(table.columns) == ["filtro", "antes", "después"]
    assert table.iloc[0].tolist()[0] == "mínimo de valoraciones"


def test_export_in_german_and_pseudo(db):
    seed_demo(engine=get_engine())
    at, _ = _export("de")
    assert at.title[0].value == "Gold-Export"
    assert "96 von 120 Paaren bereit" in at.success[0].value
    at, _ = _export(i18n.PSEUDO)
    data = study_data("demo-binary") | {"demo-binary", "demo-graded", "csv", "tsv", "jsonl"}
    data |= {"parquet", "hf", "other", "gold-demo-binary", "manifest", "json"}
    bad = not_pseudo(visible_texts(at), data)
    assert not bad, bad
    assert not default_placeholders(at)


# ---------------------------------------------------------------------------- Scoring
def test_scoring_in_german_numbers_and_headers(db):
    seed_demo(engine=get_engine())
    at = _page("scoring.py", "de")
    assert not at.exception, at.exception
    assert at.title[0].value == "Embedding-Bewertung"
    at.button(key="scoring_run").click().run()
    assert not at.exception, at.exception
    summary = " ".join(m.value for m in at.markdown)
    assert "Aufgabe: **binär**" in summary and "α = 0,05 / 1" in summary, summary
    shown = at.dataframe[0].value
    assert {"Methode", "AUC", "Genauigkeit", "Schwelle"} <= set(shown.columns)
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Ergebnisse herunterladen (CSV)" in labels


def test_scoring_pseudo_language_every_text(db):
    seed_demo(engine=get_engine())
    at = _page("scoring.py", i18n.PSEUDO)
    at.button(key="scoring_run").click().run()
    assert not at.exception, at.exception
    data = study_data("demo-binary") | {"levenshtein", "char-ngram", "MEDSIM_EMBEDDINGS_DIR"}
    # The methods and installed models offered are names (data).
    data |= set(scoring.list_embeddings(None, installed=True)["name"])
    data |= set(at.session_state["scoring_result"][2].methods["method"])
    # Installed models are named "package: NAME" / "hf-cache: REPO" (data, by rule: the list
    # may have been read earlier in this process, with another test's model cache).
    data |= {x for x in visible_texts(at) if re.match(r"(package|hf-cache): \S+$", x)}
    bad = not_pseudo(visible_texts(at), data)
    assert not bad, bad
    assert not default_placeholders(at)


def test_adjudicate_and_scoring_in_spanish(db):
    seed_demo(engine=get_engine())  # (the demo is seeded into an empty store only)
    at = _adjudicator_page("es")
    assert not at.exception, at.exception
    assert at.title[0].value == "Adjudicar"
    data = _mounted(at)
    assert data.pair is not None and data.texts.head.startswith("Par 1 de ")
    assert data.texts.empty == "Con estos filtros ningún par necesita una decisión."
    at = _page("scoring.py", "es")
    assert at.title[0].value == "Puntuación de embeddings"
    at.selectbox(key="scoring_study").select("demo-binary").run()
    at.button(key="scoring_run").click().run()
    assert not at.exception, at.exception
    summary = " ".join(m.value for m in at.markdown)
    assert "Tarea: **binaria**" in summary and "α = 0,05 / 1" in summary, summary


def test_the_access_code_sheet_speaks_the_admins_language():
    codes = [{"name": "dr_<a>", "access_code": "ABCD-EFGH"}]
    with i18n.language("de"):
        sheet = codes_sheet_html("Station 7", "https://example.org/", codes)
    assert sheet.startswith('<!doctype html><html lang="de">')
    assert "Zugangscodes – Station 7" in sheet and "Ihr Zugangscode:" in sheet
    assert "Anmelden unter <strong>https://example.org/</strong>" in sheet
    assert "dr_&lt;a&gt;" in sheet and "ABCD-EFGH" in sheet
    english = codes_sheet_html("Station 7", None, codes)
    assert english.startswith('<!doctype html><html lang="en">') and "Your access code:" in english
