"""The Adjudicate page in a real browser (Playwright + Debian's chromium), keyboard only:
an adjudicator signs in with their code, sees every rater's answer and comment, decides a
pair with key presses and the decision is stored with its event. An annotator of the same
study, signed in at the same time, receives none of it (page HTML, the widget's shadow DOM
and every websocket frame are scanned).

Skipped when /usr/bin/chromium is missing, unless MEDSIM_REQUIRE_BROWSER=1.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
import sqlalchemy as sa

from tests.conftest import ROOT
from tests.streamlit_harness import chromium, require_chromium, streamlit_server

pytestmark = [pytest.mark.slow, pytest.mark.browser]

#: Strings only the adjudicator may see: another rater's comment, the adjudicator's name
#: and the reason text of a decision already made, plus the words of adjudication itself.
SECRETS = ["QQXOTHERCOMMENTQQ", "QQXJUDGEQQ", "QQXREASONTEXTQQ", "adjudicat", "label_source"]

SETUP = """
import pandas as pd
from data_schemas.scales import BINARY
from medsim_annot.services.adjudication import board as adj_board
from medsim_annot.services.adjudication import decisions as adj_dec
from medsim_annot.services.people import adjudicators as adj_people
from medsim_annot.services import annotation as A
from medsim_annot.services.people.annotators import authenticate_annotator
from medsim_annot.services.studies import create_study
from medsim_annot.services.study_handle import open_study

n = 6
pairs = pd.DataFrame({"pair_id": [f"p{i}" for i in range(n)],
                      "term_1": [f"fever {i}" for i in range(n)],
                      "term_2": [f"pyrexia {i}" for i in range(n)],
                      "auto_label": [1] * n})
res = create_study("adj-study", pairs, BINARY, ["a", "b", "c", "viewer"])
codes = {x["name"]: x["access_code"] for x in res["annotators"]}
answers = {"a": ["same"] * n, "b": ["not_same"] * n, "c": ["dont_know"] * n}
for who, values in answers.items():
    aid = authenticate_annotator(codes[who]).annotator_id
    for pos, value in enumerate(values):
        A.submit_rating(aid, pos, value, comment="QQXOTHERCOMMENTQQ" if who == "b" else "",
                        elapsed_ms=3000, expected_version=0)
judge = adj_people.add_adjudicator(open_study("adj-study"), "QQXJUDGEQQ")
adj_dec.decide(open_study("adj-study"), "p5", label="same", reason="other", reason_text="QQXREASONTEXTQQ",
           adjudicator="QQXJUDGEQQ", seen_version=0)
print(judge.access_code)
print(codes["viewer"])
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_chromium()
    tmp = tmp_path_factory.mktemp("adjudicate")
    url = f"sqlite:///{tmp / 'medsim.db'}"
    env = {**os.environ, "MEDSIM_DATABASE_URL": url, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", SETUP],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    judge, viewer = out.stdout.strip().splitlines()[-2:]
    with streamlit_server(env, tmp / "streamlit.log") as base:
        yield {"base": base, "url": url, "judge": judge, "viewer": viewer}


def _shadow_html(page) -> str:
    return page.evaluate(
        "() => [...document.querySelectorAll('[data-testid=stBidiComponentIsolated]')]"
        ".map(h => h.shadowRoot ? h.shadowRoot.innerHTML : '').join('')"
    )


def _sign_in_by_keyboard(page, base: str, code: str) -> None:
    page.goto(base + "/")
    page.get_by_label("Access code").wait_for(timeout=60000)
    page.keyboard.press("Tab")  # focus moves into the form's first field
    page.get_by_label("Access code").focus()
    page.keyboard.type(code)
    page.keyboard.press("Enter")


def _press(page, key: str, shows: str | None = None) -> None:
    """Press *key*; with *shows*, wait until the element the key changes (a CSS selector,
    shadow roots pierced) is on the page: the next key only goes after the last one took."""
    page.keyboard.press(key)
    if shows is not None:
        page.wait_for_selector(shows, state="attached", timeout=30000)


def test_adjudicator_decides_by_keyboard_and_annotator_sees_nothing(server):
    base = server["base"]
    with chromium() as browser:
        judge = browser.new_context().new_page()
        _sign_in_by_keyboard(judge, base, server["judge"])
        head = judge.get_by_test_id("adj-position")
        head.get_by_text("Pair 1 of 5").wait_for(timeout=60000)
        raters = judge.get_by_test_id("adj-raters").inner_text()
        assert "QQXOTHERCOMMENTQQ" in raters and "Not same" in raters and "\t3\t" in raters
        first = head.inner_text()
        _press(judge, "n")  # next pair, then back
        judge.get_by_test_id("adj-position").get_by_text("Pair 2 of 5").wait_for(timeout=60000)
        _press(judge, "p")
        judge.get_by_test_id("adj-position").get_by_text("Pair 1 of 5").wait_for(timeout=60000)
        assert judge.get_by_test_id("adj-position").inner_text() == first
        pair_id = first.split(" · ")[1]
        _press(judge, "1", '[data-testid="adj-options"] [aria-checked="true"]')  # same
        _press(judge, "g", '[data-testid="adj-reasons"] [aria-checked="true"]')  # guideline gap
        _press(judge, "f", '[data-testid="adj-flag"][aria-pressed="true"]')  # flag it
        checked = judge.locator('[data-testid="adj-options"] [aria-checked="true"]')
        assert checked.get_attribute("data-value") == "same"
        _press(judge, "Enter")
        judge.get_by_test_id("adj-status").get_by_text(f"Saved {pair_id}").wait_for(timeout=60000)
        # The decided pair leaves the list of undecided pairs.
        judge.get_by_test_id("adj-position").get_by_text("of 4").wait_for(timeout=60000)

        viewer = browser.new_context().new_page()
        frames: list[bytes] = []
        viewer.on(
            "websocket",
            lambda ws: ws.on(
                "framereceived",
                lambda f: frames.append(f if isinstance(f, bytes) else f.encode()),
            ),
        )
        _sign_in_by_keyboard(viewer, base, server["viewer"])
        viewer.wait_for_selector('[data-testid="medsim-pair"]', state="visible", timeout=60000)
        seen = [viewer.content(), _shadow_html(viewer)]
        for key in ("1", "2"):
            _press(viewer, key)
            time.sleep(0.5)
            seen += [viewer.content(), _shadow_html(viewer)]
        annotating = list(frames)
        # Asking for the Adjudicate page by its address gives the sign-in page (the address
        # itself comes back in the frames, so only the data is looked for there).
        viewer.goto(base + "/adjudicate")
        viewer.get_by_label("Access code").wait_for(timeout=60000)
        assert viewer.get_by_test_id("medsim-adjudicator").count() == 0
        after = [viewer.content(), _shadow_html(viewer)]
    assert annotating, "no websocket traffic captured"
    for secret in SECRETS:
        for html in seen:
            assert secret not in html
        for f in annotating:
            assert secret.encode() not in f, f"{secret} reached the annotator's browser"
    for secret in SECRETS[:3]:
        for html in after:
            assert secret not in html
        for f in frames:
            assert secret.encode() not in f, f"{secret} reached the annotator's browser"
    engine = sa.create_engine(server["url"])
    with engine.connect() as conn:
        rows = conn.exec_driver_sql(
            "SELECT i.pair_id, a.label, a.reason, a.flag_guideline, e.kind FROM adjudications a "
            "JOIN items i ON i.id = a.item_id JOIN events e ON e.id = a.event_id "
            "ORDER BY a.id"
        ).all()
    engine.dispose()
    assert rows[-1][:3] == (pair_id, "same", "guideline_gap")
    assert bool(rows[-1][3]) and rows[-1][4] == "pair_adjudicated"
