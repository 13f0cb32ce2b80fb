"""The Adjudicate page in a real browser (Playwright + Debian's chromium), keyboard only:
an adjudicator signs in with their code, sees every rater's answer and comment, decides a
pair with key presses and the decision is stored with its event. An annotator of the same
study, signed in at the same time, receives none of it (page HTML, the widget's shadow DOM,
every websocket frame and every HTTP response body, the ratings endpoint's JSON included,
are scanned), while the presses it makes are taken and stored.

Served by the run's shared app (tests/conftest.py served_app; the study is named
adj-study). Skipped when /usr/bin/chromium is missing, unless MEDSIM_REQUIRE_BROWSER=1.
"""

from __future__ import annotations

from urllib.parse import urlparse

import pytest
import sqlalchemy as sa

from data_schemas.widget import RATINGS_PATH
from tests.streamlit_harness import chromium, run_setup
from tests.widget_drive import press_shown

pytestmark = [pytest.mark.slow, pytest.mark.browser]

#: Strings only the adjudicator may see: another rater's comment, the adjudicator's name
#: and the reason text of a decision already made, plus the words of adjudication itself.
SECRETS = ["QQXOTHERCOMMENTQQ", "QQXJUDGEQQ", "QQXREASONTEXTQQ", "adjudicat", "label_source"]

STUDY = "adj-study"  # the module's study in the shared app's store

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
def server(served_app):
    """The run's shared app server (tests/conftest.py), with this module's study."""
    judge, viewer = run_setup(SETUP, served_app["env"]).strip().splitlines()[-2:]
    return {"base": served_app["base"], "url": served_app["url"], "judge": judge, "viewer": viewer}


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


class _Responses:
    """Every HTTP response *page* receives (documents, scripts, the ratings endpoint's JSON),
    its body read as the request finishes; :meth:`collect` returns the (url, body) pairs
    read since the last call. A body the browser no longer holds (it can drop one once the
    page navigates) fails the test, except for the app's bundled static files under
    ``/static/`` (fonts, scripts: the same bytes for every visitor, built before any study
    existed, so they cannot carry a study's data)."""

    def __init__(self, page) -> None:
        self._got: list[tuple[str, bytes]] = []
        self._unread: list[str] = []
        page.on("requestfinished", self._read)

    def _read(self, request) -> None:
        response = request.response()
        if response is None or request.url.startswith("data:"):
            return
        if 300 <= response.status < 400:  # a redirect has no body; its target is read
            return
        try:
            self._got.append((request.url, response.body()))
        except Exception as exc:  # named in the failure of collect()
            if not urlparse(request.url).path.startswith("/static/"):
                self._unread.append(f"{request.url}: {exc}")

    def collect(self) -> list[tuple[str, bytes]]:
        assert not self._unread, f"responses not read: {self._unread}"
        got, self._got = self._got, []
        return got


def _wait_position(page, pos: int) -> None:
    page.wait_for_selector(
        f'[data-testid="medsim-pair"][data-position="{pos}"]', state="visible", timeout=60000
    )


def _all_saved(page) -> None:
    page.locator('[data-testid="medsim-save-status"]').get_by_text(
        "All saved", exact=True
    ).wait_for(timeout=60000)


def _ratings_of(url: str, annotator: str) -> list[str]:
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        rows = conn.exec_driver_sql(
            "SELECT r.value FROM ratings r JOIN annotators a ON a.id = r.annotator_id "
            "JOIN studies s ON s.id = r.study_id WHERE s.name = ? AND a.name = ? ORDER BY r.id",
            (STUDY, annotator),
        ).all()
    engine.dispose()
    return [str(v) for (v,) in rows]


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
        responses = _Responses(viewer)
        _sign_in_by_keyboard(viewer, base, server["viewer"])
        viewer.wait_for_selector('[data-testid="medsim-pair"]', state="visible", timeout=60000)
        seen = [viewer.content(), _shadow_html(viewer)]
        shown = None
        for n, key in enumerate(("1", "2"), start=1):
            # Pressed once the pair has been on screen for the minimum view time (a sooner
            # press is ignored), and taken: the next pair is drawn and the rating saved.
            shown = press_shown(viewer, key, after=shown)
            _wait_position(viewer, n)
            _all_saved(viewer)
            seen += [viewer.content(), _shadow_html(viewer)]
        annotating = list(frames)
        bodies = responses.collect()
        # Asking for the Adjudicate page by its address gives the sign-in page (the address
        # itself comes back in the frames, so only the data is looked for there).
        viewer.goto(base + "/adjudicate")
        viewer.get_by_label("Access code").wait_for(timeout=60000)
        assert viewer.get_by_test_id("medsim-adjudicator").count() == 0
        after = [viewer.content(), _shadow_html(viewer)]
        later = responses.collect()
    assert annotating, "no websocket traffic captured"
    # The scan is not blind: the ratings endpoint's answers (the pairs the widget drew, as
    # JSON) are among the responses read, with the terms the viewer saw.
    api = [body for url, body in bodies if RATINGS_PATH in url]
    assert api and any(b"pyrexia" in body for body in api), [url for url, _ in bodies]
    for secret in SECRETS:
        for html in seen:
            assert secret not in html
        for f in annotating:
            assert secret.encode() not in f, f"{secret} reached the annotator's browser"
        for url, body in bodies:
            assert secret.encode() not in body, f"{secret} reached the annotator in {url}"
    for secret in SECRETS[:3]:
        for html in after:
            assert secret not in html
        for f in frames:
            assert secret.encode() not in f, f"{secret} reached the annotator's browser"
        for url, body in later:
            assert secret.encode() not in body, f"{secret} reached the annotator in {url}"
    # The viewer's two presses were stored (as ratings of the viewer, nothing else).
    assert _ratings_of(server["url"], "viewer") == ["same", "not_same"]
    engine = sa.create_engine(server["url"])
    with engine.connect() as conn:
        rows = conn.exec_driver_sql(
            "SELECT i.pair_id, a.label, a.reason, a.flag_guideline, e.kind FROM adjudications a "
            "JOIN items i ON i.id = a.item_id JOIN events e ON e.id = a.event_id "
            "JOIN studies s ON s.id = i.study_id WHERE s.name = ? ORDER BY a.id",
            (STUDY,),
        ).all()
    engine.dispose()
    assert rows[-1][:3] == (pair_id, "same", "guideline_gap")
    assert bool(rows[-1][3]) and rows[-1][4] == "pair_adjudicated"
