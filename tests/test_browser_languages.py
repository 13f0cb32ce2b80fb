"""In chromium: a doctor whose profile says German signs in with an English browser and gets
German (``<html lang="de">``, the study's German question and labels in the widget); the
language chosen in the sidebar takes effect at once and is kept for the next sign-in.

Served by the run's shared app (tests/conftest.py ``served_app``; this module's study is
its own by name)."""

from __future__ import annotations

import pandas as pd
import pytest

from data_schemas.scales import BINARY
from data_schemas.texts import OptionText, StudyTexts
from medsim_annot.services import study_texts as texts_svc
from medsim_annot.services.people import language as language_svc
from medsim_annot.services.studies import create_study
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all, get_engine
from tests.streamlit_harness import chromium

pytestmark = [pytest.mark.slow, pytest.mark.browser]

QUESTION = "Könnten diese beiden Begriffe austauschbar verwendet werden?"


@pytest.fixture(scope="module")
def doctor(served_app) -> dict:
    """A study with German texts and a doctor whose profile says German."""
    engine = get_engine(served_app["url"])
    pairs = pd.DataFrame(
        {"pair_id": ["p1", "p2"], "term_1": ["fever", "rash"], "term_2": ["pyrexia", "itch"]}
    )
    res = create_study("lang-study", pairs, BINARY, ["dr_de"], engine=engine)
    study = open_study("lang-study", engine=engine)
    texts_svc.set_texts(
        study,
        "de",
        StudyTexts(question=QUESTION, options={"same": OptionText(label="Gleich")}),
    )
    language_svc.set_annotator_language(study, "dr_de", "de")
    dispose_all()
    return {
        "base": served_app["base"],
        "url": served_app["url"],
        "code": res["annotators"][0]["access_code"],
    }


def _widget_html(page) -> str:
    return page.evaluate(
        "() => [...document.querySelectorAll('[data-testid=stBidiComponentIsolated]')]"
        ".map(h => h.shadowRoot ? h.shadowRoot.innerHTML : '').join('')"
    )


def _sign_in(page, base: str, code: str) -> None:
    page.goto(base + "/")
    # By key, not by label: the sign-in page itself is in the browser's language.
    page.locator(".st-key-login_code input").fill(code)
    page.locator(".st-key-login_code input").press("Enter")
    page.wait_for_selector('[data-testid="medsim-pair"]', state="visible", timeout=60000)


def _lang_is(page, lang: str) -> None:
    page.wait_for_function(f"document.documentElement.lang === '{lang}'", timeout=30000)


def test_a_german_profile_beats_an_english_browser_and_the_choice_holds(doctor):
    with chromium() as browser:
        page = browser.new_context(locale="en-US").new_page()
        _sign_in(page, doctor["base"], doctor["code"])
        _lang_is(page, "de")
        html = _widget_html(page)
        assert QUESTION in html and "Gleich" in html
        # The sidebar's choice: Spanish at once.
        expand = page.get_by_test_id("stExpandSidebarButton")
        if expand.count() and expand.is_visible():  # annotators' sidebar starts collapsed
            expand.click()
        page.locator(".st-key-person_language_choice").get_by_role("combobox").click()
        page.get_by_role("option", name="Español", exact=True).click()
        _lang_is(page, "es")
        study = open_study("lang-study", engine=get_engine(doctor["url"]))
        assert language_svc.annotator_language(study, "dr_de") == "es"
        dispose_all()
        # The next sign-in, from another browser, starts in Spanish.
        other = browser.new_context(locale="de-DE").new_page()
        _sign_in(other, doctor["base"], doctor["code"])
        _lang_is(other, "es")
