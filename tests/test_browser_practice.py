"""The practice round in a real browser (issue 39, item 1): a doctor answers practice pairs,
sees each reference answer and explanation, gets no real pair while below the threshold,
and gets the real queue after an admin unlocks them by name.

Playwright drives Debian's chromium against the run's shared app server (tests/conftest.py
``served_app``; this module's studies are prac and back)."""

from __future__ import annotations

import pandas as pd
import pytest

from data_schemas.scales import BINARY
from tests.streamlit_harness import chromium
from tests.widget_drive import press_shown, wait_shown

pytestmark = [pytest.mark.slow, pytest.mark.browser]

REAL = "ZZREAL"
PRACTICE = [("same", "Pyrexia is the clinical word for fever."), ("not_same", "Organs differ.")]


def _engine(url: str):
    from medsim_annot.storage import get_engine

    return get_engine(url)


@pytest.fixture(scope="module")
def server(served_app):
    """The run's shared app server (tests/conftest.py ``served_app``); this module's studies
    there are named prac and back."""
    return served_app


@pytest.fixture(scope="module")
def browser(server):
    with chromium() as b:
        yield b


def _study(url: str) -> str:
    from medsim_annot.services.studies import create_study

    rows = [
        {
            "term_1": f"{REAL} a{i}",
            "term_2": f"{REAL} b{i}",
            "practice_answer": "",
            "explanation": "",
        }
        for i in range(3)
    ] + [
        {
            "term_1": f"practice a{k}",
            "term_2": f"practice b{k}",
            "practice_answer": ans,
            "explanation": why,
        }
        for k, (ans, why) in enumerate(PRACTICE)
    ]
    from data_schemas.pairs import validate_pairs

    res = create_study(
        "prac",
        validate_pairs(pd.DataFrame(rows)),
        BINARY,
        ["doc"],
        config={"practice": {"min_pairs": 2, "threshold": 1.0}},
        engine=_engine(url),
    )
    return res["annotators"][0]["access_code"]


_FEEDBACK_SHOWN = """
([after, minMs]) => {
  const host = document.querySelector('[data-testid="stBidiComponentIsolated"]');
  const r = host && host.shadowRoot;
  const fb = r && r.querySelector('[data-testid="medsim-feedback"]');
  if (!fb || fb.hidden || !fb.dataset.shownAt) return false;
  const at = Number(fb.dataset.shownAt);
  if (after !== null && at === after) return false;
  return performance.now() - at >= minMs ? at : false;
}
"""


def _feedback(page, after):
    at = page.wait_for_function(_FEEDBACK_SHOWN, arg=[after, 120], timeout=30000, polling=20)
    return float(at.json_value())


def _text(page, testid: str) -> str:
    return page.locator(f'[data-testid="{testid}"]').inner_text()


def test_practice_feedback_gate_and_admin_unlock(server, browser):
    from medsim_annot.services.practice.gate import unlock
    from medsim_annot.services.studies import rating_history
    from medsim_annot.services.study_handle import open_study

    code = _study(server["url"])
    page = browser.new_context().new_page()
    page.goto(server["base"] + "/")
    page.get_by_label("Access code").fill(code)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_selector('[data-testid="medsim-practice"]', state="visible", timeout=30000)
    assert _text(page, "medsim-term-1") == "practice a0"
    assert _text(page, "medsim-practice-heading") == "Practice pair 1"
    # A wrong answer: the reference answer and the explanation are shown.
    shown = press_shown(page, "2")
    fb_at = _feedback(page, None)
    assert "Reference answer: Same" in _text(page, "medsim-feedback-reference")
    assert PRACTICE[0][1] in _text(page, "medsim-feedback-explanation")
    assert "Not same" in _text(page, "medsim-feedback-yours")
    # The same keys move on: the next practice pair, answered right.
    page.keyboard.press("1")
    shown = press_shown(page, "2", shown)
    assert _text(page, "medsim-term-1") == "practice a1"
    fb_at = _feedback(page, fb_at)
    assert "Reference answer: Not same" in _text(page, "medsim-feedback-reference")
    assert PRACTICE[1][1] in _text(page, "medsim-feedback-explanation")
    # 1 of 2 exactly as the reference (50% < 100%): more practice, no real pair.
    assert "50%" in _text(page, "medsim-practice-progress")
    page.keyboard.press("1")
    shown = wait_shown(page, shown)
    assert _text(page, "medsim-term-1") == "practice a0"
    assert REAL not in page.locator('[data-testid="medsim-annotator"]').inner_text()
    assert rating_history(open_study("prac", engine=_engine(server["url"]))).empty
    # The admin unlocks the doctor by name: the next press brings the real queue.
    unlock(open_study("prac", engine=_engine(server["url"])), "doc", by="admin:lead")
    page.keyboard.press("1")  # the practice pair on screen has been shown long enough
    page.wait_for_selector('[data-testid="medsim-practice"]', state="hidden", timeout=30000)
    page.get_by_text(f"{REAL} a0", exact=True).wait_for(timeout=30000)
    assert page.get_attribute('[data-testid="medsim-pair"]', "data-position") == "0"
    press_shown(page, "1", shown)
    page.locator('[data-testid="medsim-save-status"]').get_by_text(
        "All saved", exact=True
    ).wait_for(timeout=30000)
    h = rating_history(open_study("prac", engine=_engine(server["url"])))
    assert list(h["rating"]) == ["same"] and list(h["pair_id"]) != ["P0"]


def test_send_back_mid_session_keeps_the_unsaved_rating_until_practice_is_passed(server, browser):
    from medsim_annot.services.practice.gate import send_back_to_practice, unlock
    from medsim_annot.services.practice.setup import set_practice
    from medsim_annot.services.studies import create_study, rating_history
    from medsim_annot.services.study_handle import open_study

    url = server["url"]
    from data_schemas.pairs import validate_pairs

    rows = pd.DataFrame(
        {
            "term_1": [f"{REAL} c{i}" for i in range(3)] + ["practice c0", "practice c1"],
            "term_2": [f"{REAL} d{i}" for i in range(3)] + ["practice d0", "practice d1"],
            "practice_answer": ["", "", "", "same", "not_same"],
            "explanation": ["", "", "", "Synonyms.", "Different organs."],
        }
    )
    code = create_study("back", validate_pairs(rows), BINARY, ["doc"], engine=_engine(url))[
        "annotators"
    ][0]["access_code"]
    study = open_study("back", engine=_engine(url))
    set_practice(study, min_pairs=2, threshold=1.0)
    unlock(study, "doc", by="admin:lead")
    page = browser.new_context().new_page()
    page.goto(server["base"] + "/")
    page.get_by_label("Access code").fill(code)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_selector('[data-testid="medsim-pair"]', state="visible", timeout=30000)
    assert _text(page, "medsim-term-1").startswith(REAL)
    shown = press_shown(page, "1")
    page.locator('[data-testid="medsim-save-status"]').get_by_text(
        "All saved", exact=True
    ).wait_for(timeout=30000)
    # The admin sends the doctor back; the next press is kept, and practice appears.
    send_back_to_practice(study, "doc", by="admin:lead", reason="drift")
    shown = press_shown(page, "2", shown)
    page.wait_for_selector('[data-testid="medsim-practice"]', state="visible", timeout=30000)
    assert _text(page, "medsim-term-1") == "practice c0"
    assert len(rating_history(study)) == 1
    assert page.get_attribute('[data-testid="medsim-save-status"]', "data-pending") == "1"
    # Pass the practice round (2 of 2 exactly): the kept rating is saved, the queue resumes.
    shown = press_shown(page, "1", shown)
    fb_at = _feedback(page, None)
    page.keyboard.press("1")
    press_shown(page, "2", shown)
    _feedback(page, fb_at)
    assert _text(page, "medsim-feedback-passed") != ""
    page.locator('[data-testid="medsim-save-status"]').get_by_text(
        "All saved", exact=True
    ).wait_for(timeout=30000)
    page.keyboard.press("1")
    page.wait_for_selector('[data-testid="medsim-practice"]', state="hidden", timeout=30000)
    assert _text(page, "medsim-term-1").startswith(REAL)
    h = rating_history(study)
    assert list(h["rating"]) == ["same", "not_same"]
