"""Issue 33, "a first day that reads at a glance", in a real browser (Playwright + Debian's
chromium): the admin adjudicates from their own session on a page as wide as the window; a
new study is made from an .xlsx file and its codes carry the study, the sign-in address and
a printable sheet; a mistyped code stays in the field; the doctor sees the question above
the pair, the guideline at the first sign-in, and touch wording on a phone.

Skipped when /usr/bin/chromium is missing, unless MEDSIM_REQUIRE_BROWSER=1.
"""

from __future__ import annotations

import re

import pytest

from tests.streamlit_harness import choose_study, chromium, run_setup, sign_in_admin

pytestmark = [pytest.mark.slow, pytest.mark.browser]

QUESTION = "Could these two terms be used interchangeably in consultation notes?"
#: This module's studies in the shared server's store: SPLIT, made here, and NEW, made by
#: the admin in the browser.
SPLIT = "first-day-split"
NEW = "first-day-ward-7"

SETUP = """
import sys
import pandas as pd
from data_schemas.scales import BINARY
from medsim_annot.services import annotation as A
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.studies import create_study

n = 4
pairs = pd.DataFrame({"pair_id": [f"p{i}" for i in range(n)],
                      "term_1": [f"fever {i}" for i in range(n)],
                      "term_2": [f"pyrexia {i}" for i in range(n)],
                      "auto_label": [1] * n})
res = create_study(sys.argv[1], pairs, BINARY, ["a", "b", "c", "fresh"])
codes = {x["name"]: x["access_code"] for x in res["annotators"]}
for who, value in {"a": "same", "b": "not_same", "c": "dont_know"}.items():
    aid = authenticate_annotator(codes[who]).annotator_id
    for pos in range(n):
        A.submit_rating(aid, pos, value, elapsed_ms=3000, expected_version=0)
print(codes["fresh"])
"""


@pytest.fixture(scope="module")
def server(served_app, tmp_path_factory):
    """The run's shared app server (tests/conftest.py ``served_app``: no public URL, so
    the sign-in address is its ``base``); this module's studies there are named
    first-day-split and first-day-ward-7."""
    fresh = run_setup(SETUP, served_app["env"], SPLIT).strip().splitlines()[-1]
    tmp = tmp_path_factory.mktemp("first-day")
    return {**served_app, "fresh": fresh, "tmp": tmp}


@pytest.fixture(scope="module")
def browser(server):
    with chromium() as b:
        yield b


def test_the_admin_adjudicates_from_their_own_session_on_a_wide_page(server, browser):
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    sign_in_admin(page, server["base"], server["password"])
    # The admin pages use the window's width (the centred layout gave ~700 of 1,280 px).
    width = page.evaluate(
        "() => document.querySelector('[data-testid=stMainBlockContainer]')"
        ".getBoundingClientRect().width"
    )
    assert width > 900, width
    page.get_by_test_id("stSidebarNav").get_by_text("Adjudicate", exact=True).click()
    choose_study(page, "adj_study", SPLIT)
    counter = page.get_by_test_id("adj-counter")
    counter.get_by_text("0 of 4 decided").wait_for(timeout=60000)
    # The scale's own labels and plain need names.
    page.get_by_test_id("adj-options").get_by_text("Not same").wait_for()
    assert "Don't know" in page.get_by_test_id("adj-raters").inner_text()
    assert "Every rating differs" in page.get_by_test_id("adj-needs").inner_text()
    page.keyboard.press("2")  # Not same
    page.wait_for_selector('[data-testid="adj-options"] [aria-checked="true"]', timeout=30000)
    page.keyboard.press("r")  # rater error
    page.wait_for_selector('[data-testid="adj-reasons"] [aria-checked="true"]', timeout=30000)
    page.keyboard.press("Enter")
    page.get_by_test_id("adj-status").get_by_text("Not same (rater error)").wait_for(timeout=60000)
    counter.get_by_text("1 of 4 decided").wait_for(timeout=60000)  # the counter moved


def test_a_new_study_from_xlsx_and_codes_to_hand_out(server, browser):
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["term_1", "term_2", "auto_label"])
    for i in range(5):
        sheet.append([f"angina {i}", f"chest pain {i}", i % 2])
    xlsx = server["tmp"] / "ward.xlsx"
    book.save(xlsx)

    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    sign_in_admin(page, server["base"], server["password"])
    create = page.get_by_role("button", name="Create study")
    create.wait_for(timeout=60000)
    assert create.is_disabled()
    page.get_by_text("Still needed: a study name, a pairs file without problems").wait_for()
    page.get_by_label("Study name").fill(NEW)
    page.locator(".st-key-setup_upload input[type=file]").set_input_files(str(xlsx))
    page.get_by_text("5 valid pairs").wait_for(timeout=60000)
    page.get_by_label("One name per line").fill("dr_ahmed\ndr_baker")
    page.get_by_label("One name per line").press("Tab")
    page.wait_for_function(
        "() => { const b = [...document.querySelectorAll('button')]"
        ".find(x => x.innerText.includes('Create study'));"
        " return b && !b.disabled; }",
        timeout=60000,
    )
    create.click()
    box = page.locator(".st-key-setup_created")
    box.wait_for(timeout=60000)
    text = box.locator("code").inner_text()
    assert text.startswith(f"Study: {NEW}\n")
    assert f"Sign in at: {server['base']}/" in text
    assert re.search(r"dr_ahmed: [A-Z0-9-]+", text) and re.search(r"dr_baker: [A-Z0-9-]+", text)
    box.get_by_role("button", name="Download a printable sheet (HTML, a QR code each)").wait_for()
    with page.expect_download(timeout=60000) as got:
        box.get_by_role("button", name="Download a printable sheet (HTML, a QR code each)").click()
    sheet_html = got.value.path().read_text(encoding="utf-8")
    assert sheet_html.count('class="card"') == 2 and sheet_html.count("<svg") == 2
    # The page selects the new study in the manage section.
    chosen = page.locator(".st-key-setup_manage_study")
    shown = chosen.inner_text() + " ".join(
        chosen.locator("input").evaluate_all("xs => xs.map(x => x.value)")
    )
    assert NEW in shown, shown


def _sign_in(page, base: str, code: str) -> None:
    page.goto(base + "/")
    page.get_by_label("Access code").fill(code)
    page.get_by_role("button", name="Sign in", exact=True).click()


def test_a_failed_sign_in_keeps_the_code_and_the_doctor_sees_the_question(server, browser):
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    wrong = server["fresh"][:-2] + ("AA" if not server["fresh"].endswith("AA") else "BB")
    _sign_in(page, server["base"], wrong)
    page.get_by_text("This access code is not valid").wait_for(timeout=60000)
    assert page.get_by_label("Access code").input_value() == wrong  # kept, to be corrected
    page.get_by_label("Access code").fill(server["fresh"])
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_selector('[data-testid="medsim-pair"]', state="visible", timeout=60000)
    question = page.locator('[data-testid="medsim-question"]')
    assert question.inner_text() == QUESTION
    pair = page.locator('[data-testid="medsim-pair"]').bounding_box()
    asked = question.bounding_box()
    assert asked["y"] + asked["height"] <= pair["y"]  # one line above the pair
    # First sign-in: the guideline is open, inline below the pair (it does not cover it).
    page.get_by_text("Do not look them up").wait_for(timeout=30000)
    guide = page.get_by_test_id("stExpander").first.bounding_box()
    assert guide["y"] >= pair["y"] + pair["height"]
    assert "press Tab" in page.locator('[data-testid="medsim-comment-hint"]').inner_text()


def test_a_phone_gets_touch_wording(server, browser):
    context = browser.new_context(
        viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True
    )
    page = context.new_page()
    _sign_in(page, server["base"], server["fresh"])
    page.wait_for_selector('[data-testid="medsim-pair"]', state="visible", timeout=60000)
    hint = page.locator('[data-testid="medsim-comment-hint"]').inner_text()
    assert "tap your answer" in hint and "Tab" not in hint
    assert page.locator('[data-testid="medsim-question"]').inner_text() == QUESTION
