"""The Dashboard and Activity pages, the services behind them and the HTML report in the
admin's language (issue 35): German and Spanish headers, captions, readings and chart
labels, numbers written the language's way (``0,87``, ``1.200``), every visible text
pseudo-localised in ``qps-ploc`` (the study's data excepted by rule), the dashboard cache
never serving one language's sentences to another, ``medsim report --lang de``."""

from __future__ import annotations

import contextvars
import importlib
import json
import re
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from medsim_annot import i18n
from medsim_annot.i18n.pseudo import is_pseudo, pseudo
from medsim_annot.io import table_bytes
from medsim_annot.services import activity as activity_svc
from medsim_annot.services import dashboard as dsvc
from medsim_annot.services import drift as drift_svc
from medsim_annot.services import plots
from medsim_annot.services import studies as svc
from medsim_annot.services.dashboard import labels
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import get_engine
from tests import test_pages_dashboard as pages_dashboard
from tests import test_stopping as stopping_data
from tests.test_ppi_cli import ppi_files  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parents[1]
LANGUAGE_KEY = "medsim_language"  # pages/_i18n.LANGUAGE_KEY
#: A number as German writes it: decimal comma, never a decimal point.
GERMAN_DECIMAL = re.compile(r"^-?\d{1,3}(\.\d{3})*,\d+$")


@pytest.fixture
def demo(demo_db_url, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    dsvc.clear_cache()
    return demo_db_url


def _page(name: str, lang: str | None, study: str | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / name), default_timeout=120)
    at.session_state["auth_role"] = "admin"
    if lang is not None:
        at.session_state[LANGUAGE_KEY] = lang
    at.run()
    if study is not None:
        at.selectbox(key="dashboard_study").set_value(study).run()
    assert not at.exception, at.exception
    return at


def _charts(at: AppTest) -> list[dict]:
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


def _chart_texts(spec: dict) -> list[str]:
    """The chart's own words: title, axis and colour-bar titles, legend names, hover
    templates (their %{…} fields and <extra> tag left out), annotations."""
    layout = spec.get("layout", {})
    out = []

    def title(obj) -> None:
        t = (obj or {}).get("title")
        text = t.get("text") if isinstance(t, dict) else t
        if text:
            out.append(str(text))

    title(layout)
    for axis in ("xaxis", "yaxis"):
        title(layout.get(axis))
    for a in layout.get("annotations", []):
        out.append(str(a.get("text", "")))
    for trace in spec.get("data", []):
        if trace.get("name"):
            out.append(str(trace["name"]))
        title(trace.get("colorbar"))
        hover = trace.get("hovertemplate")
        if hover:
            out.append(re.sub(r"%\{[^}]*\}|<extra></extra>|<br>", " ", str(hover)))
    return out


def _visible(at: AppTest, cells: bool = True) -> list[str]:
    """Every text of UI chrome on the page: titles, headings, captions, messages, widget
    labels and options, metric labels, expander labels, table headers, chart words and
    (*cells*) every text cell of the tables shown."""
    out: list[str] = []
    for kind in ("title", "header", "subheader", "caption", "markdown", "info", "warning"):
        out += [str(e.value) for e in getattr(at, kind)]
    out += [str(e.value) for e in at.error] + [str(e.value) for e in at.success]
    out += [str(e.value) for e in at.text]
    for kind in ("toggle", "button", "number_input", "slider", "text_input", "radio"):
        out += [str(e.label) for e in getattr(at, kind)]
    for kind in ("selectbox", "multiselect"):
        for e in getattr(at, kind):
            out += [str(e.label), *map(str, e.options)]
            if kind == "multiselect":  # what an empty choice shows (Streamlit's own words
                placeholder = e.proto.placeholder  # unless the page gives one)
                out.append(placeholder or "Choose options")
    out += [str(b.proto.label) for b in at.get("download_button")]
    out += [str(e.label) for e in at.metric]
    out += [str(e.label) for e in at.expander]
    for df in at.dataframe:
        config = json.loads(df.proto.columns or "{}")
        for c in df.value.columns:  # the header shown: a column_config label, else the name
            shown = config.get(str(c), {})
            out += [str(shown.get("label") or c), str(shown.get("help") or "")]
        if df.value.index.name:
            out.append(str(df.value.index.name))
        if cells:
            for c in df.value.columns:
                out += [v for v in df.value[c] if isinstance(v, str)]
    for spec in _charts(at):
        out += _chart_texts(spec)
    return [t for t in out if t.strip()]


def _data_words(engine) -> list[str]:
    """The study's data, excepted by rule: study names, annotators, terms, pair ids, group
    values, the scales' values, the actors of the activity log — every word of them that a
    page may show as typed."""
    words: set[str] = set()
    for s in svc.list_studies(engine=engine):
        study = open_study(s.study, engine=engine)
        words.add(study.name)
        words.add(study.scale.name)
        words.update(str(o.value) for o in study.scale.options)
        pairs = svc.pairs_frame(study)
        for col in pairs.select_dtypes(exclude="number").columns:
            words.update(str(v) for v in pairs[col].dropna())
        cur = svc.current_ratings(study)
        words.update(str(a) for a in cur["annotator"].unique())
    # who did what in the activity log: admins' and command-line users' names
    words.update(str(a) for a in activity_svc.activity(engine=engine)["actor"] if a)
    return sorted((w for w in words if w), key=len, reverse=True)


def _escapes(texts: list[str], data: list[str]) -> list[str]:
    out = []
    longest_first = sorted(set(data), key=len, reverse=True)
    for text in texts:
        rest = text
        for word in longest_first:
            rest = rest.replace(word, " ")
        if not is_pseudo(rest):
            out.append(text)
    return out


# ---- German ------------------------------------------------------------------------------
def test_dashboard_in_german_headers_readings_and_numbers(demo):
    at = _page("dashboard.py", "de")
    assert at.title[0].value == "QS-Dashboard"
    headers = [h.value for h in at.header]
    assert "Automatische Labels gegen Mehrheit" in headers and "Übereinstimmung" in headers
    metrics = {m.label: m.value for m in at.metric}
    # The headline in German numbers: the engine's alpha, written 0,62.
    dash = dsvc.study_dashboard(open_study("demo-binary"))
    alpha = dash.headline()["krippendorff_alpha"]
    with i18n.language("de"):
        assert metrics["Krippendorffs Alpha"] == i18n.fmt_decimal(alpha)
    assert GERMAN_DECIMAL.match(metrics["Krippendorffs Alpha"])
    assert GERMAN_DECIMAL.match(metrics["Genauigkeit der automatischen Labels"])
    # 1.200-style grouping in running text: the bootstrap toggle and the rushed threshold.
    assert any("1.000 Stichproben" in t.label for t in at.toggle)
    assert any("1.500 ms" in c.value for c in at.caption)
    # Tables: German headers, German numbers; the completion table keeps its progress bar.
    comp = at.dataframe[0].value
    assert list(comp.columns) == ["Annotierende Person", "erledigt", "gesamt", "Anteil", "Zugang"]
    assert set(comp["Zugang"]) == {"aktiv"}
    audit = next(d.value for d in at.dataframe if "Gruppe" in d.value.columns)
    assert {"Paare", "Genauigkeit", "Sensitivität", "Präzision"} <= set(audit.columns)
    assert GERMAN_DECIMAL.match(audit["Genauigkeit"].iloc[-1])
    assert audit["Gruppe"].iloc[-1] == "gesamt"
    # Plain-language readings in German, naming the doctor as typed.
    readings = [t.value for t in at.text]
    assert readings and all("keine Bedenken" in r or "dr_" in r for r in readings)
    assert any(r.startswith("• dr_ahmed: keine Bedenken.") for r in readings)
    # Charts: German titles and the German number format.
    specs = _charts(at)
    assert specs and all(s["layout"]["separators"] == ",." for s in specs)
    titles = [s["layout"]["title"]["text"] for s in specs]
    assert "Automatische Labels gegen Mehrheit, je Gruppe" in titles


def test_graded_dashboard_in_german(demo):
    at = _page("dashboard.py", "de", study="demo-relatedness")
    reasons = [c.value for c in at.caption]
    # the graded scale's reasons and readings come from the services, in German
    assert any(
        r.startswith("• dr_chen stimmt deutlich weniger") for r in (t.value for t in at.text)
    )
    assert not any("no positive/negative values" in r for r in reasons)
    per = next(d.value for d in at.dataframe if "mittleres Alpha" in d.value.columns)
    assert all(GERMAN_DECIMAL.match(v) for v in per["mittleres Alpha"])
    specs = _charts(at)
    hist = next(
        s for s in specs if s["layout"]["title"]["text"] == "Verteilung der mittleren Bewertungen"
    )
    assert hist["layout"]["xaxis"]["title"]["text"] == "mittlere Bewertung"


def test_spanish_admin_dashboard(demo):
    """Acceptance (issue 35): a Spanish admin's Dashboard — headers, captions, readings
    and chart labels in Spanish."""
    at = _page("dashboard.py", "es")
    assert at.title[0].value == "Panel de control de calidad"
    assert "Acuerdo" in [h.value for h in at.header]
    assert any(c.value.startswith("Calculado sobre las propias respuestas") for c in at.caption)
    assert any("sin observaciones" in t.value for t in at.text)
    assert "Alfa de Krippendorff" in [m.label for m in at.metric]
    specs = _charts(at)
    assert "Etiquetas automáticas frente a mayoría, por grupo" in [
        s["layout"]["title"]["text"] for s in specs
    ]
    quality = next(s for s in specs if s["layout"]["title"]["text"] == "Calidad de los evaluadores")
    assert [tr["name"] for tr in quality["data"]] == ["IAA-1", "proporción de «no sé»"]


def test_activity_in_german(demo):
    at = AppTest.from_file(str(ROOT / "pages" / "activity.py"), default_timeout=60)
    at.session_state["auth_role"] = "admin"
    at.session_state[LANGUAGE_KEY] = "de"
    at.run()
    assert not at.exception
    assert at.title[0].value == "Aktivität"
    assert at.selectbox[0].label == "Studie"
    assert at.selectbox[0].options[0] == "(alle Studien und Admin-Änderungen)"
    table = at.dataframe[0].value
    assert {"Zeitpunkt", "Akteur", "Aktion", "Studie", "Details"} <= set(table.columns)
    assert "Studie angelegt" in set(table["Aktion"])  # study_created, as the page names it


# ---- every visible text through the catalogue ----------------------------------------------
@pytest.mark.parametrize("study", ["demo-binary", "demo-relatedness"])
def test_dashboard_in_pseudo_language_has_no_escaped_text(demo, study):
    at = _page("dashboard.py", i18n.PSEUDO, study=study)
    escaped = _escapes(_visible(at), _data_words(get_engine()))
    assert not escaped, "\n".join(escaped)
    if study == "demo-binary":  # a nominal scale: the model of the doctors, both methods
        for method in ("Dawid–Skene", "MACE"):
            at.session_state["dashboard_model"] = pseudo(method)
            at.run()
            assert not at.exception, at.exception
            assert any("ɱöđéĺ" in m.label for m in at.metric)  # its section is shown
            escaped = _escapes(_visible(at), _data_words(get_engine()))
            assert not escaped, "\n".join(escaped)


def test_activity_in_pseudo_language_has_no_escaped_text(demo):
    at = AppTest.from_file(str(ROOT / "pages" / "activity.py"), default_timeout=60)
    at.session_state["auth_role"] = "admin"
    at.session_state[LANGUAGE_KEY] = i18n.PSEUDO
    at.run()
    assert not at.exception
    # Its actions are named through the catalogue; the details are the records as stored
    # (names, files, settings: data).
    table = at.dataframe[0].value
    action = next(c for c in table.columns if c == pseudo("action"))
    texts = [*_visible(at, cells=False), *table[action]]
    escaped = _escapes(texts, _data_words(get_engine()))
    assert not escaped, "\n".join(escaped)


# ---- the cache never mixes languages ---------------------------------------------------------
def test_dashboard_cache_is_keyed_by_language(demo):
    """A German dashboard's sentences are never served to an English admin and vice versa:
    the cached dashboard holds text (reasons, warnings, notes), so the language is in its
    key. Fails on main, where the second call returned the first language's dashboard."""
    study = open_study("demo-relatedness")
    with i18n.language("de"):
        de = dsvc.study_dashboard(study)
    with i18n.language("en"):
        en = dsvc.study_dashboard(study)
    with i18n.language("de"):
        again = dsvc.study_dashboard(study)
    assert de is not en and again is de
    assert de.reasons["audit"] == "die Skala relatedness-0-3 hat keine positiven/negativen Werte"
    assert en.reasons["audit"] == "the relatedness-0-3 scale has no positive/negative values"
    # and through the page: German, then English, then German again, one process
    first = _page("dashboard.py", "de", study="demo-relatedness")
    english = _page("dashboard.py", "en", study="demo-relatedness")
    assert any("keine Bedenken" in t.value for t in first.text)
    assert any("no concerns" in t.value for t in english.text)
    assert not any("keine Bedenken" in t.value for t in english.text)
    assert any(c.value.startswith("with every planned rating") for c in english.caption)


def test_steps_run_beside_the_caller_see_its_language(demo):
    """The dashboard's steps run in threads: they see the caller's language (the reason of
    the audit step, computed beside, is German for a German caller)."""
    pairs = svc.pairs_frame(open_study("demo-relatedness"))
    cur = svc.current_ratings(open_study("demo-relatedness"))
    with i18n.language("de"):
        dash = dsvc.compute_dashboard(pairs, cur, open_study("demo-relatedness").scale)
    assert dash.reasons["audit"].startswith("die Skala")


# ---- charts and tables -----------------------------------------------------------------------
def test_plot_separators_follow_the_language():
    for lang, sep in (("en", ".,"), ("de", ",."), ("es", ",."), (i18n.PSEUDO, ".,")):
        with i18n.language(lang):
            assert plots.separators() == sep
            fig = plots.mean_score_histogram(pd.Series([1.0, 2.5]))
            assert fig.layout.separators == sep


def test_headers_keep_names_and_english():
    with i18n.language("en"):
        for column in labels.HEADERS:
            assert labels.header(column) == column  # English pages are unchanged
        assert labels.header("rater_dr_x") == "rater_dr_x"
    with i18n.language("de"):
        assert labels.header("rater_dr_x") == "Bewertung dr_x"
        assert labels.header("done", frozenset({"done"})) == "done"  # a person named done
        assert labels.number_text(1200, True) == "1.200"
        assert labels.number_text(0.8712, False) == "0,871"
        assert labels.number_text(float("nan"), False) == i18n.DASH


def test_csv_download_keeps_column_names(demo, monkeypatch):
    """The page shows German headers and German cells (why, group); the CSV it offers is
    the service's frame, byte for byte the file an English admin downloads."""
    qa = importlib.import_module("pages._qa")
    files: dict[str, dict[str, bytes]] = {}
    lang = {"now": "en"}

    def record(label, frame, file_name, key, *, index=False):
        files.setdefault(lang["now"], {})[key] = table_bytes(frame, index=index)

    monkeypatch.setattr(qa, "download_csv", record)
    for now in ("en", "de"):
        lang["now"] = now
        _page("dashboard.py", now)
    en, de = files["en"], files["de"]
    assert {"dashboard_dl_audit", "dashboard_dl_quality", "dashboard_dl_disagreements"} <= set(de)
    for key in ("dashboard_dl_audit", "dashboard_dl_confusion", "dashboard_dl_disagreements"):
        assert de[key] == en[key], key
    assert de["dashboard_dl_audit"].startswith(b"group,")


# ---- the HTML report -------------------------------------------------------------------------
def test_html_report_in_german(demo):
    study = open_study("demo-binary")
    page = dsvc.html_report(study, lang="de")
    assert page.startswith("<!DOCTYPE html><html lang='de' dir='ltr'>")
    for text in (
        "QS-Bericht: demo-binary",
        "<h2>Fortschritt</h2>",
        "Automatische Labels gegen Mehrheit (Aufbau von AAAI 2020, Tabelle 3)",
        "<h2>Qualität der Bewertenden</h2>",
        "<h2>Uneinigkeiten</h2>",
        "dr_ahmed: keine Bedenken.",
        "<th>Genauigkeit</th>",
        "Fortschritt je Annotator",
    ):
        assert text in page, text
    for english in ("<h2>Completion</h2>", "<h2>Rater quality</h2>", "no concerns"):
        assert english not in page
    text = re.sub(r"<script.*?</script>|<style.*?</style>|<[^>]+>", " ", page, flags=re.S)
    assert "keine Mehrheit" in text and "no majority" not in text  # the disagreements' why
    assert "<th>aktiv</th>" in page  # the completion table's headers
    assert re.search(r"<td>0,\d\d</td>", page)  # German decimals in the tables
    assert '"separators":",."' in page  # and in the charts
    # the report's language is its own: the caller's stays as it was
    assert i18n.current_language() == "en"
    spanish = dsvc.html_report(study, lang="es")
    assert spanish.startswith("<!DOCTYPE html><html lang='es' dir='ltr'>")
    assert "Informe de calidad: demo-binary" in spanish and "<h2>Progreso</h2>" in spanish
    english = dsvc.html_report(study)
    assert english.startswith("<!DOCTYPE html><html lang='en' dir='ltr'>")
    assert "<h2>Completion</h2>" in english


def test_report_command_takes_a_language(demo, cli, tmp_path):
    out = tmp_path / "report-de.html"
    r = cli("report", "demo-binary", "--out", str(out), "--lang", "de")
    assert r.exit_code == 0, r.stdout
    assert r.stdout.startswith("wrote ")  # the CLI's own line stays English
    page = out.read_text(encoding="utf-8")
    assert "<html lang='de'" in page and "QS-Bericht: demo-binary" in page
    bad = cli("report", "demo-binary", "--out", str(tmp_path / "x.html"), "--lang", "fr")
    assert bad.exit_code != 0 and "--lang takes en, de, es, not 'fr'" in bad.stdout + bad.stderr
    assert not (tmp_path / "x.html").exists()


def test_report_downloaded_from_a_german_dashboard_is_german(demo, monkeypatch):
    """The report button builds the file when clicked, outside the page's run (where no
    language is set): it is built in the language the page was drawn in."""
    ui = importlib.import_module("pages._ui")
    built: list = []
    monkeypatch.setattr(ui, "admin_download", lambda fn: built.append(fn) or b"")
    _page("dashboard.py", "de")
    assert len(built) == 1
    page = contextvars.Context().run(built[0]).decode("utf-8")  # a fresh context: English
    assert page.startswith("<!DOCTYPE html><html lang='de'") and "QS-Bericht" in page


# ---- the predictions panel -------------------------------------------------------------------
def _predictions(lang: str, ppi_files) -> AppTest:  # noqa: F811
    svc.import_ratings(ppi_files["ratings"], ppi_files["pairs"], "binary", "s")
    at = AppTest.from_file(str(ROOT / "pages" / "dashboard.py"), default_timeout=180)
    at.session_state["auth_role"] = "admin"
    at.session_state["dashboard_study"] = "s"
    at.session_state[LANGUAGE_KEY] = lang
    at.run()
    up = [u for u in at.file_uploader if u.key == "dashboard_predictions_file"][0]
    up.set_value(("scores.csv", ppi_files["scores"].read_bytes(), "text/csv")).run()
    at.selectbox(key="dashboard_predictions_column").set_value("cosine").run()
    assert not at.exception, at.exception
    return at


def test_predictions_panel_in_german(db_url, monkeypatch, ppi_files):  # noqa: F811
    monkeypatch.syspath_prepend(str(ROOT))
    dsvc.clear_cache()
    at = _predictions("de", ppi_files)
    assert "Vorhersagegestützte Prüfung" in [s.value for s in at.subheader]
    audit = next(d.value for d in at.dataframe if "Metrik" in d.value.columns)
    assert {"Gruppe", "Schätzung", "klassisch 95%", "PPI++ 95%"} <= set(audit.columns)
    assert all(GERMAN_DECIMAL.match(v) for v in audit["Schätzung"])
    assert any(t.value.startswith("Alternative-Annotator-Test") for t in at.text)


def test_predictions_panel_in_pseudo_language(db_url, monkeypatch, ppi_files):  # noqa: F811
    monkeypatch.syspath_prepend(str(ROOT))
    dsvc.clear_cache()
    at = _predictions(i18n.PSEUDO, ppi_files)
    # the scores file's own column names are data too (offered to choose the score)
    columns = list(pd.read_csv(ppi_files["scores"]).columns)
    escaped = _escapes(_visible(at), [*_data_words(get_engine()), *columns])
    assert not escaped, "\n".join(escaped)


# ---- the sequential audit --------------------------------------------------------------------
def test_sequential_audit_in_german_and_pseudo(db_url, monkeypatch):
    monkeypatch.delenv("MEDSIM_ADMIN_PASSWORD", raising=False)
    monkeypatch.syspath_prepend(str(ROOT))
    dsvc.clear_cache()
    ids = stopping_data._create()
    stopping_data._rate_all(ids)
    at = AppTest.from_file(str(ROOT / "pages" / "dashboard.py"), default_timeout=180)
    at.session_state["auth_role"] = "admin"
    at.session_state[LANGUAGE_KEY] = "de"
    at.run()
    assert not at.exception, at.exception
    assert "Sequenzielles Audit" in [h.value for h in at.header]
    assert any("Wilson-Score-Intervall, 95 %" in c.value for c in at.caption)
    table = next(d.value for d in at.dataframe if "Status" in d.value.columns)
    assert set(table["Status"]) == {"gestoppt", "wird ausgeliefert"}
    at = AppTest.from_file(str(ROOT / "pages" / "dashboard.py"), default_timeout=180)
    at.session_state["auth_role"] = "admin"
    at.session_state[LANGUAGE_KEY] = i18n.PSEUDO
    at.run()
    escaped = _escapes(_visible(at), _data_words(get_engine()))
    assert not escaped, "\n".join(escaped)


# ---- quality over time: drift alerts -------------------------------------------------------
def test_drift_alerts_in_german_then_english_then_pseudo(db_url, monkeypatch):
    """The drifting doctor's evidence is a sentence kept in the quality-over-time cache:
    German for a German admin, English right after for an English one (the cache is keyed
    by language; on main the German sentence would be served again), and pseudo-localised
    in qps-ploc with the alerts table and the pause form."""
    monkeypatch.syspath_prepend(str(ROOT))
    dsvc.clear_cache()
    drift_svc.clear_cache()
    pages_dashboard._store_drifty()

    def run(lang: str) -> AppTest:
        at = AppTest.from_file(str(ROOT / "pages" / "dashboard.py"), default_timeout=180)
        at.session_state["auth_role"] = "admin"
        at.session_state["dashboard_study"] = "drifty"
        at.session_state[LANGUAGE_KEY] = lang
        at.run()
        assert not at.exception, at.exception
        return at

    german = run("de")
    de = [w.value for w in german.warning]
    timeline = next(
        s for s in _charts(german) if s["layout"]["title"]["text"].startswith("Qualität im")
    )
    assert timeline["layout"]["xaxis"]["tickformat"] == "%d.%m.%Y"  # no English month names
    assert any("unter den ersten" in w and "dr\\_c" in w for w in de), de
    en = [w.value for w in run("en").warning]
    assert any("below their first" in w for w in en) and not any("unter den" in w for w in en)
    at = run(i18n.PSEUDO)
    texts = _visible(at) + [str(w.value) for w in at.text_input]
    # the page escapes markdown in the evidence (dr\_c): the names are data as written there
    data = _data_words(get_engine())
    escaped = _escapes(texts, [*data, *(d.replace("_", "\\_") for d in data)])
    assert not escaped, "\n".join(escaped)


def test_two_columns_with_one_header_stay_apart(demo):
    qa = importlib.import_module("pages._qa")
    frame = pd.DataFrame({"items": [1], "n_items": [2], "pairs": [3]})
    with i18n.language("de"):
        shown, _ = qa.display_headers(frame)
    assert list(shown.columns) == ["Paare", "Paare (n_items)", "Paare (pairs)"]
    with i18n.language("en"):
        assert list(qa.display_headers(frame)[0].columns) == ["items", "n_items", "pairs"]
