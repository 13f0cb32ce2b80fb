"""A shared ward computer in a real browser (issue 34, items 1 and 2).

- A pending list planted in the browser's storage for the next doctor (the review's attack:
  ``{"closed": true, "pending": [...]}`` with ``version: null`` at positions 0-2 and 7, and
  the tab id in sessionStorage pointing at it) is deleted unsent when he signs in: his
  answers stay, position 7 stays unrated, no request carries it.
- Ratings kept from the doctor's own earlier session are offered first: "Discard them"
  sends nothing; "Send them" stores them once.
- Sign-out sends what is pending, or asks (unreachable server: "Discard them and sign out"),
  and leaves nothing of the doctor's in localStorage or sessionStorage — no free-text
  comment either.

Served by the run's shared app (tests/conftest.py ``served_app``). Each fails on the code
before this change (the planted list was adopted and stored, kept lists were sent without
asking, sign-out left the list and its comments in the browser).
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from data_schemas.scales import BINARY
from data_schemas.widget import RATINGS_PATH
from tests.streamlit_harness import chromium
from tests.widget_drive import open_after_a_closed_tab, press_shown

pytestmark = [pytest.mark.slow, pytest.mark.browser]

KEPT = """() => {
  const out = {};
  for (const s of [localStorage, sessionStorage]) {
    for (let i = 0; i < s.length; i++) {
      const k = s.key(i);
      if (k.startsWith('medsim-annot:')) out[k] = s.getItem(k);
    }
  }
  return out;
}"""


def _engine(url: str):
    from medsim_annot.storage import get_engine

    return get_engine(url)


def _study(url: str, name: str, n: int) -> dict[str, str]:
    from medsim_annot.services.studies import create_study

    pairs = pd.DataFrame(
        {
            "pair_id": [f"{name}{i:03d}" for i in range(n)],
            "term_1": [f"{name} alpha {i}" for i in range(n)],
            "term_2": [f"{name} beta {i}" for i in range(n)],
        }
    )
    r = create_study(name, pairs, BINARY, ["doc"], engine=_engine(url))
    return {a["name"]: a["access_code"] for a in r["annotators"]}


def _who(url: str, code: str) -> str:
    from medsim_annot.services.people.annotators import authenticate_annotator
    from medsim_annot.services.rating_queue import session_key

    ident = authenticate_annotator(code, engine=_engine(url))
    assert ident is not None
    return session_key(ident.annotator_id, ident.study_id)


def _stored(url: str, study: str) -> list[tuple[int, str, str]]:
    from sqlalchemy import select

    from medsim_annot.storage import session_scope
    from medsim_annot.storage.models import Assignment, Rating, Study

    with session_scope(_engine(url)) as s:
        rows = s.execute(
            select(Assignment.position, Rating.value, Rating.comment)
            .join(Assignment, Assignment.id == Rating.assignment_id)
            .join(Study, Study.id == Rating.study_id)
            .where(Study.name == study)
            .order_by(Rating.id)
        ).all()
    return [(int(p), str(v), str(c or "")) for p, v, c in rows]


def _submit_code(page, base: str, code: str) -> None:
    page.goto(base + "/")
    _enter_code(page, code)


def _enter_code(page, code: str) -> None:
    page.get_by_label("Access code").fill(code)
    page.get_by_role("button", name="Sign in", exact=True).click()


def _sign_in(page, base: str, code: str) -> None:
    _submit_code(page, base, code)
    page.wait_for_selector('[data-testid="medsim-pair"]', state="visible", timeout=30000)


def _all_saved(page) -> None:
    page.locator('[data-testid="medsim-save-status"]').get_by_text(
        "All saved", exact=True
    ).wait_for(timeout=30000)


def _position(page) -> int:
    return int(page.get_attribute('[data-testid="medsim-pair"]', "data-position"))


def _click_sign_out(page) -> None:
    button = page.get_by_role("button", name="Sign out")
    button.wait_for(timeout=30000)
    expand = page.get_by_test_id("stExpandSidebarButton")
    if expand.count() and expand.is_visible():  # annotators' sidebar starts collapsed
        expand.click()
    button.click()


@pytest.fixture(scope="module")
def server(served_app):
    """The run's shared app server (tests/conftest.py ``served_app``); this module's studies
    there are named ward, offer and signout."""
    return served_app


@pytest.fixture(scope="module")
def browser(server):
    with chromium() as b:
        yield b


def test_a_list_planted_for_the_next_doctor_is_deleted_unsent(server, browser):
    url, base = server["url"], server["base"]
    codes = _study(url, "ward", 12)
    who = _who(url, codes["doc"])
    context = browser.new_context()
    page = context.new_page()
    _sign_in(page, base, codes["doc"])
    shown = None
    for _ in range(3):
        shown = press_shown(page, "1", shown)  # "same" at positions 0, 1, 2
    _all_saved(page)
    page.close()
    assert _stored(url, "ward") == [(0, "same", ""), (1, "same", ""), (2, "same", "")]
    # Someone else at the ward computer plants answers for him, as the review did.
    tab = context.new_page()
    tab.goto(base + "/")
    planted = [
        {"seq": i + 1, "position": p, "value": "not_same", "version": None, "elapsed_ms": 900}
        for i, p in enumerate([0, 1, 2, 7])
    ]
    tab.evaluate(
        """([who, pending]) => {
          sessionStorage.setItem(`medsim-annot:tab:${who}`, 'planted');
          const list = (extra) => JSON.stringify({t: Date.now(), closed: true, pending, ...extra});
          localStorage.setItem(`medsim-annot:${who}:planted`, list({}));
          localStorage.setItem(`medsim-annot:${who}:other`,
                               list({session: 'AAAAAAAAAAAAAAAAAAAAAA'}));
        }""",
        [who, planted],
    )
    bodies: list[dict] = []
    tab.on(
        "request",
        lambda r: (
            bodies.append(json.loads(r.post_data or "{}")) if r.url.endswith(RATINGS_PATH) else None
        ),
    )
    _sign_in(tab, base, codes["doc"])
    _all_saved(tab)
    assert _position(tab) == 3  # where he stood: nothing was adopted
    assert tab.locator('[data-testid="medsim-kept"]').is_hidden()  # not even offered
    assert not any(b.get("pending") for b in bodies)  # never sent
    assert _stored(url, "ward") == [(0, "same", ""), (1, "same", ""), (2, "same", "")]
    left = tab.evaluate(KEPT)
    assert not any("planted" in k or k.endswith(":other") for k in left)
    assert not any("not_same" in v for v in left.values())


def test_an_earlier_sessions_ratings_are_sent_only_when_the_doctor_says_so(server, browser):
    url, base = server["url"], server["base"]
    codes = _study(url, "offer", 12)
    context = browser.new_context()

    def leave_two_unsaved(start_pos: int) -> None:
        page = context.new_page()
        _sign_in(page, base, codes["doc"])
        assert _position(page) == start_pos
        page.route(f"**{RATINGS_PATH}", lambda route: route.abort())
        shown = press_shown(page, "1")
        press_shown(page, "2", shown)
        status = page.locator('[data-testid="medsim-save-status"]')
        status.get_by_text("2 not saved — will retry").wait_for(timeout=20000)
        page.close()  # gone with two ratings unsaved

    leave_two_unsaved(0)
    tab = context.new_page()
    gone = open_after_a_closed_tab(tab, base)
    _enter_code(tab, codes["doc"])
    kept = tab.locator('[data-testid="medsim-kept"]')
    kept.wait_for(state="visible", timeout=30000)
    assert "2 ratings from an earlier session" in kept.inner_text()
    # Nothing reached the store before the doctor answers (as in the widget's closed-tab test).
    assert _stored(url, "offer") == [], f"closed tab's list: {gone}"
    tab.locator('[data-testid="medsim-kept-discard"]').click()
    tab.wait_for_selector('[data-testid="medsim-pair"]', state="visible", timeout=30000)
    _all_saved(tab)
    # Nothing stored and the first pair on screen (the message says how the list was found).
    assert (_position(tab), _stored(url, "offer")) == (0, []), f"closed tab's list: {gone}"
    assert tab.evaluate(KEPT) == {k: v for k, v in tab.evaluate(KEPT).items() if "tab:" in k}
    tab.close()

    leave_two_unsaved(0)
    tab = context.new_page()
    gone = open_after_a_closed_tab(tab, base)
    _enter_code(tab, codes["doc"])
    tab.locator('[data-testid="medsim-kept"]').wait_for(state="visible", timeout=30000)
    assert _stored(url, "offer") == [], f"closed tab's list: {gone}"
    tab.locator('[data-testid="medsim-kept-send"]').click(timeout=30000)
    tab.wait_for_selector('[data-testid="medsim-pair"]', state="visible", timeout=30000)
    _all_saved(tab)
    assert (_position(tab), _stored(url, "offer")) == (
        2,
        [(0, "same", ""), (1, "not_same", "")],
    ), f"closed tab's list: {gone}"


def test_sign_out_sends_or_asks_then_leaves_nothing_in_the_browser(server, browser):
    url, base = server["url"], server["base"]
    codes = _study(url, "signout", 12)
    context = browser.new_context()
    page = context.new_page()
    _sign_in(page, base, codes["doc"])
    # The server cannot be reached: two ratings, one with a clinical comment, stay unsaved.
    page.route(f"**{RATINGS_PATH}", lambda route: route.abort())
    comment = page.locator('[data-testid="medsim-comment"]')
    comment.fill("Pt in bed 4 (J. Smith) said")
    page.keyboard.press("Tab")
    shown = press_shown(page, "1")
    press_shown(page, "2", shown)
    page.locator('[data-testid="medsim-save-status"]').get_by_text(
        "2 not saved — will retry"
    ).wait_for(timeout=20000)
    assert "bed 4" in json.dumps(page.evaluate(KEPT))
    _click_sign_out(page)
    ask = page.locator('[data-testid="medsim-signout"]')
    ask.wait_for(state="visible", timeout=30000)
    assert "2 ratings could not be saved" in ask.inner_text()
    page.locator('[data-testid="medsim-signout-discard"]').click()
    page.get_by_label("Access code").wait_for(timeout=30000)  # signed out
    assert page.evaluate(KEPT) == {}
    assert _stored(url, "signout") == []
    page.unroute(f"**{RATINGS_PATH}")

    # Reachable again: sign-out sends what is pending first, then clears.
    _sign_in(page, base, codes["doc"])
    page.route(f"**{RATINGS_PATH}", lambda route: route.abort())
    shown = press_shown(page, "1")
    press_shown(page, "2", shown)
    page.locator('[data-testid="medsim-save-status"]').get_by_text(
        "2 not saved — will retry"
    ).wait_for(timeout=20000)
    page.unroute(f"**{RATINGS_PATH}")
    _click_sign_out(page)
    page.get_by_label("Access code").wait_for(timeout=30000)
    assert page.evaluate(KEPT) == {}
    assert _stored(url, "signout") == [(0, "same", ""), (1, "not_same", "")]
