"""Real browser: no page of any role fetches anything from outside the app's own host
(hospital networks block or log outside calls; the tab icon used to come from an outside font
host). The start page, then every page of the registry as its role sees it: the annotator's,
the adjudicator's and each admin page, each waited for by its own content (no fixed waits).
Skipped without /usr/bin/chromium unless MEDSIM_REQUIRE_BROWSER=1."""

from __future__ import annotations

from urllib.parse import urlparse

import pandas as pd
import pytest

from data_schemas.scales import BINARY
from medsim_annot.services.people import adjudicators
from medsim_annot.services.studies import create_study
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all, get_engine
from pages import _registry as registry
from tests.streamlit_harness import chromium, sign_in_admin

pytestmark = [pytest.mark.slow, pytest.mark.browser]

STUDY = "offsite"  # the module's study in the run's shared app (tests/conftest.py served_app)


def _study(url: str) -> tuple[str, str]:
    """A study of four pairs, each rated by nobody yet: an annotator's and an adjudicator's
    access codes."""
    eng = get_engine(url)
    pairs = pd.DataFrame(
        {
            "pair_id": [f"p{i}" for i in range(4)],
            "term_1": [f"fever {i}" for i in range(4)],
            "term_2": [f"pyrexia {i}" for i in range(4)],
        }
    )
    res = create_study(STUDY, pairs, BINARY, ["doc"], engine=eng)
    judge = adjudicators.add_adjudicator(open_study(STUDY, engine=eng), "judge")
    dispose_all()
    return res["annotators"][0]["access_code"], judge.access_code


def _settled(page) -> None:
    """The page's script run is over: everything it fetches at load has been asked for."""
    page.wait_for_function(
        "() => { const a = document.querySelector('[data-testid=\"stApp\"]');"
        " return a && a.dataset.testScriptState === 'notRunning'; }",
        timeout=60000,
    )
    page.wait_for_load_state("networkidle", timeout=60000)


def _sign_in_with_code(page, base: str, code: str) -> None:
    page.goto(base + "/")
    page.get_by_label("Access code").fill(code, timeout=60000)
    page.get_by_label("Access code").press("Enter")


def test_no_page_of_any_role_fetches_from_outside_the_app_host(served_app):
    base = served_app["base"]
    doc, judge = _study(served_app["url"])
    visited: list[str] = []
    with chromium() as browser:
        hosts: dict[str, str] = {}

        def page_of_new_context():
            page = browser.new_context().new_page()
            page.on("request", lambda r: hosts.setdefault(urlparse(r.url).netloc, r.url))
            return page

        page = page_of_new_context()
        page.goto(base + "/")
        page.get_by_label("Access code").wait_for(timeout=60000)
        _settled(page)
        visited.append("sign-in")

        (annotate,) = registry.pages_for("annotator")
        page = page_of_new_context()
        _sign_in_with_code(page, base, doc)
        page.wait_for_selector('[data-testid="medsim-pair"]', state="visible", timeout=60000)
        _settled(page)
        visited.append(annotate.title)

        (adjudicate,) = registry.pages_for("adjudicator")
        page = page_of_new_context()
        _sign_in_with_code(page, base, judge)
        page.get_by_role("heading", name=adjudicate.heading).first.wait_for(timeout=60000)
        _settled(page)
        visited.append(adjudicate.title)

        page = page_of_new_context()
        sign_in_admin(page, base, served_app["password"])
        for n, spec in enumerate(registry.admin_pages()):
            if n:  # the first admin page is where the sign-in lands
                nav = page.get_by_test_id("stSidebarNav")
                nav.get_by_text(spec.title, exact=True).click()
            page.get_by_role("heading", name=spec.heading).first.wait_for(timeout=60000)
            _settled(page)
            visited.append(spec.title)
    outside = {h: u for h, u in hosts.items() if h and h != urlparse(base).netloc}
    assert not outside, f"requests left the app's host: {outside}"
    assert visited == ["sign-in"] + [p.title for p in registry.PAGES], visited
