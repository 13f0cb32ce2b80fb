"""Numbers that can mislead on a study lead's first day (issue 33, items 1-3), in chromium:

1. Embedding scoring: a result is shown only under the study (or file), filters and methods
   it was computed from; switching to an uploaded file after scoring does not crash; with no
   word embedding installed no word-embedding metric is offered.
2. Export: once pairs are adjudicated, "a majority or an adjudicated label" is the default
   requirement and keeps them; the success box counts the label sources; the page's minimum
   ratings is 1, so the default file holds no unrated pair.
3. Dashboard headline: "Rated pairs" counts the pairs with every planned rating, and the
   auto-label accuracy is computed on (and says) the pairs with two or more decisive ratings
   (the study of tests/test_dashboard_headline.py, figures computed there by hand).

Playwright drives Debian's chromium (tests/streamlit_harness.py). Skipped when
/usr/bin/chromium is missing, unless MEDSIM_REQUIRE_BROWSER=1.
"""

from __future__ import annotations

import pytest

from medsim_annot.services.adjudication import decisions as decisions_svc
from medsim_annot.services.demo import DEMO_DIR, seed_demo
from medsim_annot.services.gold import table as table_svc
from medsim_annot.services.people.adjudicators import add_adjudicator
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all, get_engine
from tests.streamlit_harness import choose_study, chromium, sign_in_admin
from tests.test_dashboard_headline import STUDY as FIRST_DAY
from tests.test_dashboard_headline import make_first_day

pytestmark = [pytest.mark.slow, pytest.mark.browser]

#: This module's copy of the demo's studies in the shared server's store. The binary one
#: sorts before every other study (pickers list names in code-point order), so the Export
#: page opens on it (the test also picks it, and checks the label default then).
BINARY = "0-numbers-demo-binary"
GRADED = "numbers-demo-relatedness"


@pytest.fixture(scope="module")
def server(served_app):
    """The run's shared app server (tests/conftest.py ``served_app``: no word embedding, an
    empty Hugging Face cache); this module's studies there are the demo's, named
    0-numbers-demo-binary and numbers-demo-relatedness, and tests/test_dashboard_headline.py's
    first-day."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEDSIM_ADMIN_PASSWORD", served_app["password"])  # no demo password set
        made = seed_demo(
            only_if_empty=False, engine=get_engine(served_app["url"]), names=(BINARY, GRADED)
        )
    assert [r["study"] for r in made["studies"]] == [BINARY, GRADED], made["studies"]
    facts = _seed(served_app["url"])
    return {**served_app, **facts}


ADJUDICATED = 3


def _seed(url: str) -> dict:
    """Adjudicate three no-majority pairs of the demo's binary study; return what the export
    must show."""
    eng = get_engine(url)
    study = open_study(BINARY, engine=eng)
    table = table_svc.study_gold_table(study).table
    open_pairs = table[table["no_majority"] & (table["n_ratings"] > 0)]["pair_id"]
    add_adjudicator(study, "Dr Lead")
    for pid in list(open_pairs)[:ADJUDICATED]:
        decisions_svc.decide(
            study,
            str(pid),
            label="same",
            reason="rater_error",
            adjudicator="Dr Lead",
            seen_version=0,
        )
    majority = int((~table["no_majority"] & (table["n_ratings"] > 0)).sum())
    facts = {
        "pairs": len(table),
        "rated": int((table["n_ratings"] > 0).sum()),
        "majority": majority,
    }
    make_first_day(eng)
    dispose_all()
    return facts


@pytest.fixture(scope="module")
def browser(server):
    with chromium() as b:
        yield b


def _admin_page(server, browser, title: str, heading: str):
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    sign_in_admin(page, server["base"], server["password"], timeout=60000)
    page.get_by_test_id("stSidebarNav").get_by_text(title, exact=True).click()
    page.get_by_role("heading", name=heading).wait_for(timeout=30000)
    return page


def _settle(page) -> None:
    """Wait until the app has finished running the script."""
    page.wait_for_timeout(500)
    page.get_by_test_id("stStatusWidget").wait_for(state="hidden", timeout=120000)


def _choose(page, key: str, option: str) -> None:
    page.locator(f".st-key-{key}").get_by_role("combobox").click()
    page.get_by_role("option", name=option, exact=True).click()
    _settle(page)


def _no_exception(page) -> None:
    assert page.get_by_test_id("stException").count() == 0, page.locator("body").inner_text()[:3000]


def test_scoring_result_belongs_to_its_study_file_and_methods(server, browser):
    page = _admin_page(server, browser, "Embedding scoring", "Embedding scoring")
    page.get_by_role("button", name="Score and evaluate").wait_for(timeout=60000)
    choose_study(page, "scoring_study", BINARY)
    _settle(page)
    # No word embedding installed: no word-embedding metric is offered (or pre-selected).
    assert page.get_by_text("Word-embedding metrics").count() == 0
    assert page.locator(".st-key-scoring_metrics").count() == 0

    page.get_by_role("button", name="Score and evaluate").click()
    page.get_by_text("Task: binary", exact=False).wait_for(timeout=120000)
    _settle(page)
    _no_exception(page)

    # Another study: the binary study's result is gone.
    _choose(page, "scoring_study", GRADED)
    _no_exception(page)
    assert page.get_by_role("heading", name="3. Results").count() == 0
    assert page.get_by_text("Task: binary", exact=False).count() == 0

    # Score the graded study, then a change of method drops its result too.
    page.get_by_role("button", name="Score and evaluate").click()
    page.get_by_text("Task: graded", exact=False).wait_for(timeout=120000)
    _settle(page)
    page.get_by_text("Normalised Levenshtein (rapidfuzz)").click()
    _settle(page)
    assert page.get_by_text("Task: graded", exact=False).count() == 0
    page.get_by_text("Normalised Levenshtein (rapidfuzz)").click()
    _settle(page)
    page.get_by_role("button", name="Score and evaluate").click()
    page.get_by_text("Task: graded", exact=False).wait_for(timeout=120000)
    _settle(page)

    # An uploaded binary pairs file after a graded result: no crash, no stale result.
    page.get_by_text("Upload a pairs or gold file").click()
    _settle(page)
    page.locator(".st-key-scoring_upload input[type=file]").set_input_files(
        str(DEMO_DIR / "demo_pairs.csv")
    )
    page.get_by_text("demo_pairs.csv").first.wait_for(timeout=30000)
    _settle(page)
    _no_exception(page)
    assert page.get_by_text("Task: graded", exact=False).count() == 0
    page.get_by_role("button", name="Score and evaluate").click()
    page.get_by_text("Task: binary", exact=False).wait_for(timeout=120000)
    _settle(page)
    _no_exception(page)


def test_export_keeps_adjudicated_pairs_and_no_unrated_pair(server, browser):
    page = _admin_page(server, browser, "Export", "Gold export")
    page.get_by_role("button", name="Prepare export").wait_for(timeout=60000)
    first = page.locator(".st-key-export_study")
    shown = first.inner_text() + " ".join(
        first.locator("input").evaluate_all("xs => xs.map(x => x.value)")
    )
    assert BINARY in shown, f"the Export page should open on {BINARY} (first by name): {shown}"
    choose_study(page, "export_study", BINARY)
    _settle(page)
    # Adjudicated pairs exist: the requirement defaults to a majority or an adjudicated label.
    choice = page.get_by_role("radio", name="A majority or an adjudicated label")
    assert choice.is_checked()
    page.get_by_role("button", name="Prepare export").click()
    expected = server["majority"] + ADJUDICATED
    box = page.get_by_test_id("stAlertContentSuccess")
    box.wait_for(timeout=60000)
    text = box.inner_text()
    assert f"{expected} of {server['pairs']} pairs ready" in text, text
    assert f"{ADJUDICATED} adjudicated" in text, text

    # No requirement: the page's minimum of 1 rating leaves the unrated pairs out.
    page.get_by_role("radio", name="No requirement").check(force=True)
    page.get_by_role("button", name="Prepare export").click()
    page.get_by_text(f"{server['rated']} of {server['pairs']} pairs ready").wait_for(timeout=60000)
    assert server["rated"] < server["pairs"]
    _no_exception(page)


def _metric(page, label: str) -> str:
    metric = page.get_by_test_id("stMetric").filter(has_text=label).first
    metric.wait_for(timeout=60000)
    return metric.get_by_test_id("stMetricValue").inner_text()


def test_dashboard_headline_counts_complete_pairs_and_says_what_accuracy_is_on(server, browser):
    page = _admin_page(server, browser, "Dashboard", "QA dashboard")
    _settle(page)
    _choose(page, "dashboard_study", FIRST_DAY)
    page.get_by_text("Auto-label accuracy").first.wait_for(timeout=60000)
    _settle(page)
    assert _metric(page, "Rated pairs") == "1 / 15"
    assert _metric(page, "Auto-label accuracy") == "0.50"
    page.get_by_text("on 2 pairs with ≥ 2 decisive ratings").wait_for(timeout=30000)
    page.get_by_text("with every planned rating; 3 with ≥ 2 ratings, 15 with ≥ 1").wait_for(
        timeout=30000
    )
    _no_exception(page)
