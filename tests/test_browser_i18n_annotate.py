"""The sign-in page and the annotation widget in the doctor's language, in chromium.

A doctor whose browser says German signs in on a German page and rates in a German widget
(status, buttons, progress, end screen; ``lang="de"`` on the widget); under the right-to-left
pseudo language the widget's root is ``dir="rtl"``, its texts are pseudo-localised and Back
points right. The keys stay 1/2/3 and Backspace in every language.
"""

from __future__ import annotations

import pandas as pd
import pytest

from data_schemas.scales import BINARY
from medsim_annot.i18n.pseudo import is_pseudo, pseudo
from tests.streamlit_harness import chromium
from tests.widget_drive import wait_shown

pytestmark = [pytest.mark.slow, pytest.mark.browser]

#: The widget's shadow root (the page has other components: <html lang dir> is one).
WIDGET_ROOT = (
    "[...document.querySelectorAll('[data-testid=stBidiComponentIsolated]')]"
    ".map(h => h.shadowRoot).find(r => r && r.querySelector('.medsim-annotator'))"
)
ROOT_ATTRS = """
() => {
  const box = WIDGET_ROOT.querySelector('.medsim-annotator');
  return {lang: box.getAttribute('lang'), dir: box.getAttribute('dir')};
}
""".replace("WIDGET_ROOT", WIDGET_ROOT)
#: Every visible text node of the widget, with its element's test id or class.
TEXTS = """
() => {
  const root = WIDGET_ROOT;
  const out = [];
  const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const el = n.parentElement;
    if (!n.textContent.trim() || el.closest('[hidden], style, script')) continue;
    out.push({text: n.textContent.trim(), tag: el.tagName.toLowerCase(),
              id: el.dataset.testid || el.className});
  }
  for (const el of root.querySelectorAll('[aria-label]')) {
    out.push({text: el.getAttribute('aria-label'), tag: 'aria-label', id: el.className});
  }
  return out;
}
""".replace("WIDGET_ROOT", WIDGET_ROOT)


#: Elements whose text is the study's data (terms, option labels, the question).
DATA_IDS = ("medsim-term-1", "medsim-term-2", "medsim-option", "medsim-question")


def _study(url: str, name: str, n: int) -> str:
    from medsim_annot.services.studies import create_study
    from medsim_annot.storage import get_engine

    pairs = pd.DataFrame(
        {
            "pair_id": [f"{name}-{i}" for i in range(n)],
            "term_1": [f"{name} alpha {i}" for i in range(n)],
            "term_2": [f"{name} beta {i}" for i in range(n)],
        }
    )
    res = create_study(name, pairs, BINARY, ["doc"], engine=get_engine(url))
    return res["annotators"][0]["access_code"]


@pytest.fixture(scope="module")
def browser(served_app):
    with chromium() as b:
        yield b


def test_a_german_doctor_rates_in_a_german_widget(served_app, browser):
    code = _study(served_app["url"], "i18n-de", 3)
    page = browser.new_context(locale="de-DE").new_page()
    page.goto(served_app["base"] + "/")
    page.get_by_label("Zugangscode").fill(code)
    page.get_by_role("button", name="Anmelden", exact=True).click()
    page.wait_for_selector('[data-testid="medsim-pair"]', state="visible", timeout=60000)
    assert page.evaluate(ROOT_ATTRS) == {"lang": "de", "dir": "ltr"}
    status = page.locator('[data-testid="medsim-save-status"]')
    status.get_by_text("Alles gespeichert", exact=True).wait_for(timeout=30000)
    assert "Zurück" in page.locator('[data-testid="medsim-back"]').inner_text()
    assert (
        "Kommentar (optional)" in page.locator('[data-testid="medsim-comment-hint"]').inner_text()
    )
    progress = page.locator('[data-testid="medsim-progress"]')
    assert progress.inner_text() == "0 / 3 bewertet · Paar 1 von 3"
    for _ in range(3):
        wait_shown(page)
        page.keyboard.press("1")  # the keys are the same in every language
    end = page.locator('[data-testid="medsim-end"]')
    end.get_by_text("Ihre Warteschlange ist abgeschlossen", exact=False).wait_for(timeout=30000)
    status.get_by_text("Alles gespeichert", exact=True).wait_for(timeout=30000)
    assert "Zurück zum letzten Paar" in end.inner_text()
    assert progress.inner_text() == "3 / 3 bewertet"
    page.context.close()


def test_the_widget_runs_right_to_left_in_the_pseudo_language(served_app, browser):
    code = _study(served_app["url"], "i18n-rtl", 2)
    context = browser.new_context(locale="en-US")
    # The browser's language as Streamlit reads it (st.context.locale: navigator.language).
    context.add_init_script(
        "Object.defineProperty(navigator, 'language', {get: () => 'qps-plocm'});"
        "Object.defineProperty(navigator, 'languages', {get: () => ['qps-plocm']});"
    )
    page = context.new_page()
    page.goto(served_app["base"] + "/")
    page.get_by_label(pseudo("Access code")).fill(code)
    page.get_by_role("button", name=pseudo("Sign in"), exact=True).click()
    page.wait_for_selector('[data-testid="medsim-pair"]', state="visible", timeout=60000)
    assert page.evaluate(ROOT_ATTRS) == {"lang": "qps-plocm", "dir": "rtl"}
    assert page.evaluate("document.documentElement.getAttribute('dir')") == "rtl"
    # Every text of the widget is pseudo-localised but the study's data — the terms, the
    # scale's option labels and question (the study's own texts) — which are taken out by
    # rule, wherever they appear (an announcement names the terms), and the keys.
    texts = page.evaluate(TEXTS)
    data = sorted({t["text"] for t in texts if t["id"] in DATA_IDS}, key=len, reverse=True)
    escaped = []
    for t in texts:
        rest = t["text"]
        for value in data:
            rest = rest.replace(value, "")
        if t["tag"] == "kbd" and len(rest) == 1:
            continue  # a key: the same in every language
        if rest.strip() and not is_pseudo(rest):
            escaped.append(t)
    assert len(texts) > 8 and escaped == []
    back = page.locator('[data-testid="medsim-back"]').inner_text()
    assert back.startswith("→")
    # The layout mirrors: the back button sits at the right end of its row.
    boxes = page.evaluate(
        f"() => {{ const r = {WIDGET_ROOT};"
        " const row = r.querySelector('.medsim-row').getBoundingClientRect();"
        " const b = r.querySelector('.medsim-back').getBoundingClientRect();"
        " return [row.right - b.right, b.left - row.left]; }"
    )
    assert boxes[0] < boxes[1]
    before = page.get_attribute('[data-testid="medsim-pair"]', "data-position")
    wait_shown(page)
    page.keyboard.press("1")  # the keys are the same in every language
    page.wait_for_selector(
        f'[data-testid="medsim-pair"]:not([data-position="{before}"])', timeout=30000
    )
    page.context.close()
