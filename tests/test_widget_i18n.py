"""The annotation widget speaks the person's language: every visible string arrives in the
boot contract (``WidgetText``, ``PracticeText``), each plural message once per CLDR plural
category of the language, and the JavaScript and HTML write no visible word of their own.
The ratings endpoint writes its refusals in the language the widget names (``lang``)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from babel import Locale
from pydantic import ValidationError

from data_schemas.widget import PracticeText, RatingsRequest, WidgetText
from medsim_annot import i18n
from medsim_annot.i18n.pseudo import is_pseudo
from medsim_annot.services.widget_text import number_locale, plural_samples, widget_text
from pages.components.annotator import HERE

JS = (HERE / "annotator.js").read_text(encoding="utf-8")
HTML = (HERE / "annotator.html").read_text(encoding="utf-8")
PLURAL_FIELDS = {n for n, f in WidgetText.model_fields.items() if f.annotation is not str}
SINGLE_FIELDS = set(WidgetText.model_fields) - PLURAL_FIELDS


def _strings(text: WidgetText, practice: PracticeText) -> dict[str, str]:
    """Every text of a boot, named ``field`` or ``field[category]``."""
    out: dict[str, str] = {}
    for name, value in text.model_dump().items():
        if isinstance(value, dict):
            out.update({f"{name}[{c}]": v for c, v in value.items()})
        else:
            out[name] = value
    out.update({f"practice.{k}": v for k, v in practice.model_dump().items()})
    return out


def test_plural_samples_cover_every_cldr_category():
    # Each sample is in its category (Babel's CLDR rules), and every category of the
    # language's integer rules is found: German one/other, Spanish also many (a million).
    for lang in ("en", "de", "es"):
        samples = plural_samples(lang)
        locale = Locale.parse(lang)
        assert all(locale.plural_form(n) == c for c, n in samples.items())
        assert {"one", "other"} <= set(samples)
    assert set(plural_samples("de")) == {"one", "other"}
    assert set(plural_samples("es")) == {"one", "many", "other"}
    assert plural_samples("qps-plocm") == plural_samples("en")
    assert number_locale("qps-ploc") == "en" and number_locale("de") == "de"


@pytest.mark.parametrize("lang", ["de", "es"])
def test_the_boot_in_german_and_spanish_has_every_text_translated(lang):
    english = _strings(*widget_text("en"))
    text, practice = widget_text(lang)
    shown = _strings(text, practice)
    # Every plural message has a text for every category of the language.
    for name in PLURAL_FIELDS:
        assert set(getattr(text, name)) == set(plural_samples(lang)), name
    # Every text differs from the English one (the same key in English: one/other only).
    for key, value in shown.items():
        base = key.split("[")[0]
        source = english.get(key) or english[f"{base}[other]"]
        assert value and value != source, (lang, key, value)
        # The widget fills the same placeholders as in English.
        assert set(re.findall(r"\{(\w+)\}", value)) == set(re.findall(r"\{(\w+)\}", source))


def test_german_boot_reads_german():
    text, practice = widget_text("de")
    assert text.all_saved == "Alles gespeichert"
    assert text.not_saved_retry["other"] == "{n} nicht gespeichert — neuer Versuch folgt"
    assert text.back == "Zurück" and text.key_backspace == "Rücktaste"
    assert text.end_complete.startswith("Ihre Warteschlange ist abgeschlossen")
    assert text.saving == {"one": "{n} wird gespeichert…", "other": "{n} werden gespeichert…"}
    assert practice.heading == "Übungspaar {n}"


@pytest.mark.parametrize("lang", [i18n.PSEUDO, i18n.PSEUDO_RTL])
def test_every_widget_text_comes_through_the_catalogue(lang):
    # Under the pseudo language every text is marked: none escaped the catalogue.
    for key, value in _strings(*widget_text(lang)).items():
        assert is_pseudo(value), (key, value)


def test_the_boot_carries_language_direction_and_locale():
    from data_schemas.scales import BINARY
    from medsim_annot.services.rating_queue import WidgetSetup, _scale_view, widget_boot

    setup = WidgetSetup(_scale_view(BINARY), "", 3)
    with i18n.language("de"):
        boot = widget_boot(1, 1, setup, token="t", token_serial=1)
    assert (boot["lang"], boot["dir"], boot["locale"]) == ("de", "ltr", "de")
    assert boot["text"]["all_saved"] == "Alles gespeichert"
    assert boot["practice_text"]["heading"] == "Übungspaar {n}"
    with i18n.language(i18n.PSEUDO_RTL):
        boot = widget_boot(1, 1, setup, token="t", token_serial=1)
    assert (boot["lang"], boot["dir"], boot["locale"]) == ("qps-plocm", "rtl", "en")
    english = widget_boot(1, 1, setup, token="t", token_serial=1)
    assert (english["lang"], english["dir"]) == ("en", "ltr")
    assert english["text"]["all_saved"] == "All saved"


def test_a_request_names_a_language_tag():
    assert RatingsRequest.model_validate({"lang": "de"}).lang == "de"
    assert RatingsRequest.model_validate({"lang": "qps-plocm"}).lang == "qps-plocm"
    assert RatingsRequest.model_validate({}).lang is None
    for bad in ("", "d", "de_DE", "de; drop", "x" * 40, 5):
        with pytest.raises(ValidationError):
            RatingsRequest.model_validate({"lang": bad})


# ---------------------------------------------------------------- no word of its own
#: Where the widget writes visible text: properties and attributes, and the helpers whose
#: first argument becomes an element's text.
_TEXT_PROPS = re.compile(r"\.(?:textContent|innerText|innerHTML|placeholder|title)\s*=(?!=)")
_TEXT_ATTRS = re.compile(
    r"setAttribute\(\s*[\"'](?:aria-label|aria-description|placeholder|title|alt)[\"']\s*,"
)
_TEXT_CALLS = re.compile(r"this\.(?:showWait|notice|ignore)\(")
_LITERAL = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|`(?:[^`\\]|\\.)*`", re.S)


def _code() -> str:
    """The JavaScript without its comments (a line comment is outside any string here)."""
    no_block = re.sub(r"/\*.*?\*/", "", JS, flags=re.S)
    return "\n".join(
        line.split("//")[0] if not re.search(r"[\"'`][^\"'`]*//", line) else line
        for line in no_block.splitlines()
    )


def _until(code: str, start: int, stop: str) -> str:
    """The expression from *start* to the first *stop* character at nesting depth 0."""
    depth, i = 0, start
    while i < len(code):
        ch = code[i]
        if ch in "\"'`":
            m = _LITERAL.match(code, i)
            assert m, code[i : i + 40]
            i = m.end()
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0 and ch in stop:
                return code[start:i]
            depth -= 1
        elif ch in stop and depth == 0:
            return code[start:i]
        i += 1
    raise AssertionError(f"unterminated expression at {start}")


#: Keys of the texts in the boot (``W.say("all_saved")``): names, not words shown.
KEYS = set(WidgetText.model_fields) | set(PracticeText.model_fields)


def _visible_words(expr: str) -> list[str]:
    """String literals of *expr* with a letter outside ``${…}`` that are not keys of the
    boot's texts: English written by the JS."""
    found = []
    for m in _LITERAL.finditer(expr):
        body = re.sub(r"\$\{[^}]*\}", "", m.group(0)[1:-1])
        if body not in KEYS and re.search(r"[A-Za-z]", body):
            found.append(m.group(0))
    return found


def test_the_widget_script_writes_no_visible_word_of_its_own():
    code = _code()
    written: list[tuple[str, str]] = []
    for pattern, stop in ((_TEXT_PROPS, ";"), (_TEXT_ATTRS, ")"), (_TEXT_CALLS, ",)")):
        for m in pattern.finditer(code):
            expr = _until(code, m.end(), stop)
            written += [(expr.strip()[:60], w) for w in _visible_words(expr)]
    assert written == [], written
    # The scan sees the writes (a pattern that matched nothing would pass vacuously).
    assert len(_TEXT_PROPS.findall(code)) > 30 and len(_TEXT_ATTRS.findall(code)) >= 5
    # What the scan cannot follow: a message built in a variable and written later. No
    # literal of the script reads as prose (two words separated by a space) but the one
    # console message, which is never shown.
    prose = [
        m.group(0)
        for m in _LITERAL.finditer(code)
        if re.search(r"[A-Za-z]{2,} +[A-Za-z]{2,}", re.sub(r"\$\{[^}]*\}", "", m.group(0)))
    ]
    assert prose == ['`medsim annotator: no move from screen "${from}" to "${to}"`'], prose


class _Texts(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.stack.append(tag)
        for name, value in attrs:
            if name in ("aria-label", "title", "placeholder", "alt") and value:
                self.found.append(f"{tag}[{name}]={value}")

    def handle_endtag(self, tag):
        self.stack.pop()

    def handle_data(self, data):
        text = data.strip()
        if not re.search(r"[A-Za-z]", text):
            return
        # A key the widget tells (1/2/3, u): the key itself is the same in every language.
        if self.stack and self.stack[-1] == "kbd" and len(text) == 1:
            return
        self.found.append(text)


def test_the_widget_html_holds_no_visible_word():
    parser = _Texts()
    parser.feed(HTML)
    assert parser.found == []


def test_every_text_of_the_contract_is_used_and_nothing_else():
    said = set(re.findall(r"\.say\(\s*\"(\w+)\"", JS))
    counted = set(re.findall(r"\.count\(\s*\"(\w+)\"", JS))
    chosen = set(re.findall(r"\.say\([^\"()]*\?\s*\"(\w+)\"\s*:\s*\"(\w+)\"", JS))
    said |= {k for pair in chosen for k in pair}
    assert counted == PLURAL_FIELDS
    assert said == SINGLE_FIELDS
    # The widget picks plural texts by the language's CLDR rules and formats numbers for it.
    assert "new Intl.PluralRules(" in JS and "new Intl.NumberFormat(" in JS
    # Dates too (the kept ratings' "last changed"): in the language's locale, never the
    # browser's default.
    assert "toLocaleString(this.words.locale" in JS and "toLocaleString([]" not in JS
    assert 'setAttribute("lang"' in JS and 'setAttribute("dir"' in JS


def test_the_widget_css_mirrors_right_to_left():
    css = (HERE / "annotator.css").read_text(encoding="utf-8")
    # Only logical properties: no left/right that would stay put under dir="rtl".
    assert not re.search(r"(?<![\w-])(margin|padding|border)-(left|right)\b", css)
    assert not re.search(r"text-align:\s*(left|right)", css)
    assert not re.search(r"(?<![\w-])(left|right)\s*:", css)
