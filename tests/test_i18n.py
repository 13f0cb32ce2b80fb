"""The language machinery (medsim_annot/i18n): catalogues complete and without stale entries,
the pseudo language, locale formats, the choice of a language."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from medsim_annot import i18n
from medsim_annot.i18n import catalog, extract
from medsim_annot.i18n.areas import area_of
from medsim_annot.i18n.pseudo import accent, is_pseudo, pseudo


def test_every_catalogue_is_complete_and_has_no_stale_entry():
    """Every string the code marks is translated (not fuzzy, same placeholders) in German and
    Spanish, and no catalogue keeps a string the code no longer has. `make messages` then a
    translator's edit fixes a failure; docs/i18n.md says how."""
    problems = extract.check()
    assert not problems, "\n".join(map(str, problems[:60])) + f"\n({len(problems)} in all)"


def test_the_check_notices_a_missing_a_stale_and_a_wrong_placeholder(tmp_path, monkeypatch):
    """The check itself can fail: a catalogue made from a template, then broken four ways."""
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import write_po

    template = Catalog()
    template.add("Pair {n} of {total}")
    template.add("Saved")
    monkeypatch.setattr(extract, "LOCALE_DIR", tmp_path)
    for lang in ("de", "es"):
        cat = Catalog(locale=lang)
        cat.add("Pair {n} of {total}", "Paar {n} von {all}")  # wrong placeholder
        cat.add("Gone", "Weg")  # stale
        path = tmp_path / lang / "LC_MESSAGES" / "core.po"
        path.parent.mkdir(parents=True)
        with path.open("wb") as fp:
            write_po(fp, cat)
        other = Catalog(locale=lang)
        other.add("Gone", "Fort")  # the same words translated otherwise in another area
        with (path.parent / "admin.po").open("wb") as fp:
            write_po(fp, other)
    kinds = {(p.lang, p.kind, p.msgid) for p in extract.check({"core": template})}
    assert ("de", "placeholders", "Pair {n} of {total}") in kinds
    assert ("de", "missing", "Saved") in kinds
    assert ("es", "stale", "Gone") in kinds
    assert ("de", "conflict", "Gone") in kinds


def test_english_is_the_source_and_cli_default():
    assert i18n.current_language() == "en"
    assert i18n.t("Pair {n} of {total}", n=3, total=5) == "Pair 3 of 5"
    assert i18n.tn("{n} pair", "{n} pairs", 1, n=1) == "1 pair"
    assert i18n.tn("{n} pair", "{n} pairs", 2, n=2) == "2 pairs"


def test_german_numbers_percentages_and_dates_follow_cldr():
    """CLDR (Babel's data): German groups thousands with '.', writes decimals with ',' and a
    no-break space before '%'; Spanish writes decimals with ',' and groups with '.'."""
    with i18n.language("de"):
        assert i18n.fmt_decimal(0.8712) == "0,87"
        assert i18n.fmt_int(1200) == "1.200"
        assert i18n.fmt_percent(0.42) == "42\u00a0%"
        assert i18n.fmt_date(dt.date(2026, 11, 27)) == "27.11.2026"
    with i18n.language("es"):
        assert i18n.fmt_decimal(0.8712) == "0,87"
        assert i18n.fmt_int(12000) == "12.000"
        assert i18n.fmt_percent(0.5) == "50\u00a0%"
    with i18n.language("en"):
        assert i18n.fmt_decimal(0.8712) == "0.87"
        assert i18n.fmt_int(1200) == "1,200"
        assert i18n.fmt_percent(0.42) == "42%"
        assert i18n.fmt_decimal(None) == i18n.DASH
        assert i18n.fmt_decimal(float("nan")) == i18n.DASH


@pytest.mark.parametrize(
    ("tag", "lang"),
    [
        ("de-AT", "de"),
        ("es_ES.UTF-8", "es"),
        ("EN-gb", "en"),
        ("fr", None),
        ("", None),
        (None, None),
        ("qps-ploc", "qps-ploc"),
        ("qps-plocm", "qps-plocm"),
    ],
)
def test_a_tag_becomes_a_supported_language(tag, lang):
    assert i18n.normalise(tag) == lang


def test_accept_language_takes_the_best_weighted_supported_one():
    assert i18n.from_accept_language("fr-FR,de;q=0.8,es;q=0.9") == "es"
    assert i18n.from_accept_language("de-CH, en;q=0.5") == "de"
    assert i18n.from_accept_language("fr, it;q=0.5") is None
    assert i18n.from_accept_language("es;q=0, de;q=0.1") == "de"
    assert i18n.from_accept_language(None) is None


def test_person_then_browser_then_english():
    assert i18n.choose("de", "es") == "de"
    assert i18n.choose(None, "es-MX") == "es"
    assert i18n.choose("xx", None) == "en"


def test_right_to_left_only_where_the_language_is():
    assert i18n.direction("qps-plocm") == "rtl"
    assert i18n.direction("de") == "ltr"


def test_the_language_of_one_thread_is_not_another_threads():
    """Each Streamlit session runs its script in its own thread: one person's German must not
    reach another's page."""
    seen: dict[str, str] = {}
    ready = threading.Barrier(2)

    def run(name: str, lang: str) -> None:
        i18n.set_language(lang)
        ready.wait()
        seen[name] = i18n.current_language()

    threads = [
        threading.Thread(target=run, args=(n, lang)) for n, lang in (("a", "de"), ("b", "es"))
    ]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert seen == {"a": "de", "b": "es"}
    assert i18n.current_language() == "en"


def test_pseudo_keeps_placeholders_markup_and_links():
    text = "Pair {n} of {total:,} — see [the guide](https://x.org/a) or `medsim help` <b>now</b>"
    out = accent(text)
    for kept in ("{n}", "{total:,}", "(https://x.org/a)", "`medsim help`", "<b>", "</b>"):
        assert kept in out
    assert "Pair" not in out and "now" not in out
    assert pseudo("") == ""
    assert pseudo("Saved").startswith("⟦") and pseudo("Saved").endswith("⟧")


@given(
    st.text(alphabet=st.characters(codec="utf-8", categories=("L", "N", "P", "Zs")), max_size=60)
)
def test_pseudo_text_is_recognised_and_plain_text_is_not(text):
    assert is_pseudo(pseudo(text))
    if any("a" <= c.lower() <= "z" for c in text if c.isascii()):
        assert not is_pseudo(text)


def test_the_pseudo_language_wraps_every_catalogue_string():
    with i18n.language("qps-ploc"):
        out = i18n.t("Pair {n} of {total}", n=3, total=5)
    assert out == "⟦Þáîŕ 3 öƒ 5⟧"


def test_a_catalogue_reads_from_its_po_when_no_mo_was_compiled(tmp_path, monkeypatch):
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import write_po

    cat = Catalog(locale="de")
    cat.add("Saved", "Gespeichert")
    cat.add(("{n} pair", "{n} pairs"), ("{n} Paar", "{n} Paare"))
    po = tmp_path / "de" / "LC_MESSAGES" / "core.po"
    po.parent.mkdir(parents=True)
    with po.open("wb") as fp:
        write_po(fp, cat)
    monkeypatch.setattr(catalog, "LOCALE_DIR", tmp_path)
    catalog.translations.cache_clear()
    try:
        with i18n.language("de"):
            assert i18n.t("Saved") == "Gespeichert"
            assert i18n.tn("{n} pair", "{n} pairs", 2, n=2) == "2 Paare"
            assert i18n.tn("{n} pair", "{n} pairs", 1, n=1) == "1 Paar"
    finally:
        catalog.translations.cache_clear()


def test_every_source_file_has_an_area():
    assert area_of("pages/annotate.py") == "annotate"
    assert area_of("pages/dashboard.py") == "dashboard"
    assert area_of("pages/setup.py") == "admin"
    assert area_of("medsim_annot/storage/db.py") == "core"
    assert not any("commands" in str(p) for p in extract.source_files())
