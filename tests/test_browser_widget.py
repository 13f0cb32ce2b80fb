"""The annotation widget in a real browser, and the page side of its versioned, ordered saves.

Playwright drives Debian's chromium against ``streamlit run serve.py`` (the run's shared app,
tests/conftest.py ``served_app``, but for the kill -9 and store-outage tests, which start
servers of their own). Every key press is
recorded in the page itself (a capture listener notes the pair on screen at the press, a
bubbling listener whether the widget took it or showed it as ignored), and the store is read
afterwards: every stored rating must be for the pair on screen at its press, in order, none
lost, none doubled.
"""

from __future__ import annotations

import os
import time

import pandas as pd
import pytest
from sqlalchemy import select

from data_schemas.limits import COMMENT_MAX_CHARS, MIN_VIEW_MS
from data_schemas.scales import BINARY, RELATEDNESS_0_3
from data_schemas.widget import BACKOFF_MS, RATINGS_PATH, WAIT_POLL_MS
from tests.ports import free_port
from tests.streamlit_harness import (
    chromium,
    start_streamlit,
)
from tests.widget_drive import open_after_a_closed_tab, press_shown, wait_shown

pytestmark = [pytest.mark.slow, pytest.mark.browser]

WIDGET = '[data-testid="stBidiComponentIsolated"]'
RECORDER = """
() => {
  window.__presses = [];
  const root = () => {
    const host = document.querySelector('[data-testid="stBidiComponentIsolated"]');
    return host && host.shadowRoot;
  };
  const snap = () => {
    const r = root();
    if (!r) return {};
    const pair = r.querySelector('[data-testid="medsim-pair"]');
    const main = r.querySelector('.medsim-main');
    const status = r.querySelector('[data-testid="medsim-save-status"]');
    return {
      term: r.querySelector('[data-testid="medsim-term-1"]').textContent,
      pos: main.hidden ? null : Number(pair.dataset.position),
      ignored: Number(status.dataset.ignored || 0),
    };
  };
  window.addEventListener('keydown', (e) => {
    window.__presses.push({key: e.key, before: snap(), t: performance.now()});
  }, true);
  window.addEventListener('keydown', () => {
    window.__presses[window.__presses.length - 1].after = snap();
  }, false);
}
"""


def _pairs(n: int, prefix: str = "") -> pd.DataFrame:
    return pd.DataFrame(
        {
            "pair_id": [f"{prefix}p{i:03d}" for i in range(n)],
            "term_1": [f"{prefix}alpha {i}" for i in range(n)],
            "term_2": [f"{prefix}beta {i}" for i in range(n)],
        }
    )


def _engine(url: str):
    from medsim_annot.storage import get_engine

    return get_engine(url)


def _study(url: str, name: str, n: int, scale=BINARY, annotators=("doc",)) -> dict[str, str]:
    from medsim_annot.services.studies import create_study

    r = create_study(name, _pairs(n, name), scale, list(annotators), engine=_engine(url))
    return {a["name"]: a["access_code"] for a in r["annotators"]}


def _stored(url: str, study: str, annotator: str) -> list[dict]:
    """Every rating row of *annotator* in id order, with the first term as it was shown."""
    from medsim_annot.storage import session_scope
    from medsim_annot.storage.models import Annotator, Assignment, Item, Rating, Study

    with session_scope(_engine(url)) as s:
        rows = s.execute(
            select(
                Assignment.position,
                Assignment.swapped,
                Item.term_1,
                Item.term_2,
                Rating.value,
                Rating.unclear,
                Rating.comment,
                Rating.elapsed_ms,
            )
            .join(Assignment, Assignment.id == Rating.assignment_id)
            .join(Item, Item.id == Rating.item_id)
            .join(Annotator, Annotator.id == Rating.annotator_id)
            .join(Study, Study.id == Rating.study_id)
            .where(Study.name == study, Annotator.name == annotator)
            .order_by(Rating.id)
        ).all()
    return [
        {
            "position": r.position,
            "term": r.term_2 if r.swapped else r.term_1,
            "value": r.value,
            "unclear": bool(r.unclear),
            "comment": r.comment or "",
            "elapsed_ms": r.elapsed_ms,
        }
        for r in rows
    ]


def _sign_in(page, base: str, code: str) -> None:
    page.goto(base + "/")
    page.get_by_label("Access code").fill(code)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_selector('[data-testid="medsim-pair"]', state="visible", timeout=30000)


def _position(page) -> int:
    return int(page.get_attribute('[data-testid="medsim-pair"]', "data-position"))


def _all_saved(page, timeout: float = 30000) -> None:
    page.locator('[data-testid="medsim-save-status"]').get_by_text(
        "All saved", exact=True
    ).wait_for(timeout=timeout)


def _press_on_schedule(page, keys: list[str], gaps_ms: list[float]) -> None:
    """Press *keys*; key i+1 goes *gaps_ms[i]* after key i (wall clock, not after a wait)."""
    t = time.perf_counter()
    for i, key in enumerate(keys):
        if i:
            t += gaps_ms[i - 1] / 1000
            delay = t - time.perf_counter()
            if delay > 0:
                time.sleep(delay)  # the wall-clock schedule is what is tested (type-ahead)
        page.keyboard.press(key)


def _accepted(page) -> tuple[list[dict], int]:
    presses = page.evaluate("() => window.__presses")
    ok = [p for p in presses if p["after"]["ignored"] == p["before"]["ignored"]]
    return ok, len(presses) - len(ok)


@pytest.fixture(scope="module")
def server(served_app):
    """The run's shared app server (tests/conftest.py ``served_app``); this module's studies
    there are named fast, keys, design, tabs, twoone, rest and closed. The kill -9 and
    store-outage tests start servers of their own (their ``env`` is the shared one's with
    another store)."""
    return served_app


@pytest.fixture(scope="module")
def browser(server):
    with chromium() as b:
        yield b


def test_type_ahead_and_double_presses_rate_only_the_pair_on_screen(server, browser):
    url = server["url"]
    codes = _study(url, "fast", 60)
    page = browser.new_context().new_page()
    _sign_in(page, server["base"], codes["doc"])
    page.evaluate(RECORDER)
    # 20 keys 120 ms apart (type-ahead: the schedule is the thing tested, so a wall-clock
    # one), then 10 paced (each after its pair was shown), then three double presses: two
    # keys sent back to back, as fast as the browser takes them.
    keys = ["1", "2"] * 10 + ["2", "1"] * 5 + ["1", "2"] * 3
    _press_on_schedule(page, keys[:20], [120] * 19)
    # Paced: each key once its pair has been shown for the minimum view time (page clock);
    # the second key of a double press follows its first at once, as fast as it goes.
    shown = None
    for i, key in enumerate(keys[20:]):
        if i < 10 or i % 2 == 0:
            shown = press_shown(page, key, shown)
        else:
            page.keyboard.press(key)
    _all_saved(page)
    ok, ignored = _accepted(page)
    stored = _stored(url, "fast", "doc")
    want = {"1": "same", "2": "not_same"}
    # Every stored rating is for the pair on screen at its press, in press order.
    assert [(r["term"], r["value"]) for r in stored] == [
        (p["before"]["term"], want[p["key"]]) for p in ok
    ]
    assert len(ok) + ignored == len(keys)
    # A press within MIN_VIEW_MS of a pair being drawn is shown as ignored, never silent.
    status = page.locator('[data-testid="medsim-save-status"]')
    assert int(status.get_attribute("data-ignored") or 0) == ignored
    presses = page.evaluate("() => window.__presses")

    def was_ignored(p: dict) -> bool:
        return p["after"]["ignored"] > p["before"]["ignored"]

    # Paced presses are all taken.
    assert not any(was_ignored(p) for p in presses[20:30])
    # Each double press takes its first key. Its second key is ignored whenever it came
    # within MIN_VIEW_MS of the first (the widget counts from the next pair's drawing, which
    # follows the first key, so a slower second key may go either way on a loaded machine).
    firsts, seconds = presses[30::2], presses[31::2]
    assert not any(was_ignored(p) for p in firsts)
    gaps = [b["t"] - a["t"] for a, b in zip(firsts, seconds)]
    assert any(g < MIN_VIEW_MS for g in gaps), gaps
    for gap, second in zip(gaps, seconds):
        if gap < MIN_VIEW_MS:
            assert was_ignored(second), gaps
    assert all(r["elapsed_ms"] is not None and r["elapsed_ms"] >= MIN_VIEW_MS for r in stored)
    progress = page.locator('[data-testid="medsim-progress"]').inner_text()
    assert progress.startswith(f"{len(stored)} / 60 rated")


def test_back_change_unclear_comment_reminder_and_end(server, browser):
    url = server["url"]
    codes = _study(url, "keys", 12, scale=RELATEDNESS_0_3)
    page = browser.new_context().new_page()
    _sign_in(page, server["base"], codes["doc"])
    page.evaluate(RECORDER)
    shown = None
    for _ in range(10):
        shown = press_shown(page, "2", shown)
    page.locator('[data-testid="medsim-reminder"]').wait_for(state="visible")
    assert _position(page) == 10
    page.keyboard.press("Backspace")
    assert _position(page) == 9
    assert (
        "Saved answer: 2 Related" in page.locator('[data-testid="medsim-saved-note"]').inner_text()
    )
    # Back redraws pair 9: the key after Backspace waits for that drawing's minimum view
    # time, and must be taken (not shown as ignored).
    shown = press_shown(page, "3", shown)  # a change: appended, then to the first unrated slot
    assert _position(page) == 10
    page.keyboard.press("u")  # the unclear flag has no minimum view time
    assert page.get_attribute('[data-testid="medsim-unclear"]', "aria-pressed") == "true"
    comment = page.locator('[data-testid="medsim-comment"]')
    assert comment.get_attribute("maxlength") == str(COMMENT_MAX_CHARS)
    comment.click()
    page.keyboard.type("1 2 u ok")  # typing in the comment field never rates
    assert _position(page) == 10
    page.keyboard.press("Tab")
    shown = press_shown(page, "1", shown)
    assert _position(page) == 11
    press_shown(page, "0", shown)
    page.locator('[data-testid="medsim-end"]').wait_for(state="visible")
    _, ignored = _accepted(page)
    assert ignored == 0  # every rating key was taken, the one after Backspace too
    _all_saved(page)
    assert "Every rating is saved" in page.locator('[data-testid="medsim-end"]').inner_text()
    page.keyboard.press("Backspace")
    assert _position(page) == 11
    stored = _stored(url, "keys", "doc")
    assert [r["position"] for r in stored] == list(range(10)) + [9, 10, 11]
    assert [r["value"] for r in stored[9:11]] == ["2", "3"]  # history kept
    assert stored[11] | {"term": None, "elapsed_ms": None} == {
        "position": 10,
        "term": None,
        "value": "1",
        "unclear": True,
        "comment": "1 2 u ok",
        "elapsed_ms": None,
    }
    # A reload starts a new session: sign in again and resume at the end screen.
    page.reload()
    page.get_by_label("Access code").fill(codes["doc"])
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.locator('[data-testid="medsim-end"]').wait_for(state="visible", timeout=30000)


def test_calibration_duplicates_through_the_widget_and_revoked_code_stops(server, browser):
    from medsim_annot.services.design import DesignOptions, create_designed_study
    from medsim_annot.services.people.annotators import revoke_code
    from medsim_annot.services.study_handle import open_study

    url = server["url"]
    r = create_designed_study(
        "design",
        _pairs(8, "design"),
        BINARY,
        ["doc_a", "doc_b"],
        DesignOptions(per_item=1, calibration=2, duplicates=0.5, seed=3),
        engine=_engine(url),
    )
    codes = {a["name"]: a["access_code"] for a in r.annotators}
    page = browser.new_context().new_page()
    _sign_in(page, server["base"], codes["doc_a"])
    page.evaluate(RECORDER)
    total = int(
        page.locator('[data-testid="medsim-progress"]').inner_text().split("/")[1].split()[0]
    )
    shown = None
    for i in range(total):
        shown = press_shown(page, "1" if i % 2 else "2", shown)
    page.locator('[data-testid="medsim-end"]').wait_for(state="visible")
    _all_saved(page)
    ok, ignored = _accepted(page)
    assert ignored == 0
    stored = _stored(url, "design", "doc_a")
    assert [r["term"] for r in stored] == [p["before"]["term"] for p in ok]
    assert [r["position"] for r in stored] == list(range(total))
    # The swapped duplicate slots showed the second term first.
    assert any(t.startswith("designbeta") for t in (r["term"] for r in stored))

    other = browser.new_context().new_page()
    posts: list[str] = []
    other.on("request", lambda r: posts.append(r.url) if r.url.endswith(RATINGS_PATH) else None)
    _sign_in(other, server["base"], codes["doc_b"])
    other.evaluate(RECORDER)
    shown = press_shown(other, "1")
    _all_saved(other)
    revoke_code(open_study("design", engine=_engine(url)), "doc_b")
    press_shown(other, "2", shown)
    ended = other.locator('[data-testid="medsim-ended"]')
    ended.wait_for(state="visible", timeout=20000)
    assert "replaced or revoked" in ended.inner_text()
    status = other.locator('[data-testid="medsim-save-status"]')
    pending = status.get_attribute("data-pending")  # the refused "2", kept in the browser
    posts_before, presses_before = len(posts), other.evaluate("() => window.__presses.length")
    other.keyboard.press("1")  # the widget has stopped: nothing is taken
    # First the positive signal that the page handled the key: the recorder's bubbling
    # listener, which runs after the widget's own, saw it. Then nothing new is pending, and
    # no request goes out within a bounded second (a rating sent a moment later would).
    other.wait_for_function(
        "(n) => { const p = window.__presses; return p.length > n"
        " && p[p.length - 1].key === '1' && p[p.length - 1].after !== undefined; }",
        arg=presses_before,
        timeout=10000,
    )
    assert status.get_attribute("data-pending") == pending
    other.wait_for_timeout(1000)  # bounded: a late send would show as a request here
    assert posts[posts_before:] == []
    assert len(_stored(url, "design", "doc_b")) == 1


def test_kill_9_with_unacknowledged_ratings_then_the_new_server_takes_them_once(
    server, browser, tmp_path
):
    url = f"sqlite:///{tmp_path / 'crash.db'}"
    env = {**server["env"], "MEDSIM_DATABASE_URL": url}
    codes = _study(url, "crash", 30)
    port = free_port()
    log = tmp_path / "streamlit.log"
    proc, _ = start_streamlit(env, log, port)
    base = f"http://127.0.0.1:{port}"
    try:
        page = browser.new_context().new_page()
        # The page's clock runs as usual but can be moved on: after the restart the test
        # skips the widget's retry backoff (up to max(BACKOFF_MS), by then 15 s) instead of
        # sitting it out; the retry itself is still the widget's own timer firing.
        page.clock.install()
        _sign_in(page, base, codes["doc"])
        page.evaluate(RECORDER)
        # The endpoint acknowledges a press within milliseconds: hold its answers back so
        # that the server dies with ratings unacknowledged.
        page.route(f"**{RATINGS_PATH}", lambda route: route.abort())
        shown = None
        for key in ["1", "2", "1", "2", "1", "2"]:
            shown = press_shown(page, key, shown)
        unacked = int(page.get_attribute('[data-testid="medsim-save-status"]', "data-pending"))
        proc.kill()  # SIGKILL: no shutdown, whatever was in flight is lost
        proc.wait(10)
        page.unroute(f"**{RATINGS_PATH}")
        assert unacked == 6
        ok, ignored = _accepted(page)
        assert ignored == 0 and len(ok) == 6
        proc, _ = start_streamlit(env, log, port)
        # The same tab: the widget's resend reaches the new server, which accepts its token
        # (tokens live in the store, not in the process) — the kept ratings are saved without
        # a new sign-in, and the doctor carries on. The resend waits on the widget's backoff
        # timer: the page's clock jumps past its longest step, and the timer fires.
        page.clock.fast_forward(max(BACKOFF_MS))
        _all_saved(page)
        assert _position(page) == 6
        # A reload opens a new session: a clean sign-in page (no list of page files), then
        # the queue resumes where it stood.
        page.reload()
        page.get_by_label("Access code").wait_for(timeout=30000)
        assert page.get_by_text("dashboard", exact=True).count() == 0
        page.get_by_label("Access code").fill(codes["doc"])
        page.get_by_role("button", name="Sign in", exact=True).click()
        page.wait_for_selector('[data-testid="medsim-pair"]', state="visible", timeout=30000)
        _all_saved(page)
        assert _position(page) == 6
        stored = _stored(url, "crash", "doc")
        want = {"1": "same", "2": "not_same"}
        assert [(r["term"], r["value"]) for r in stored] == [
            (p["before"]["term"], want[p["key"]]) for p in ok
        ]
    finally:
        proc.terminate()
        proc.wait(10)


def test_two_tabs_the_stale_tab_is_refused_and_shown_the_current_answer(server, browser):
    url = server["url"]
    codes = _study(url, "tabs", 5)
    context = browser.new_context()
    tab_a, tab_b = context.new_page(), context.new_page()
    _sign_in(tab_a, server["base"], codes["doc"])
    _sign_in(tab_b, server["base"], codes["doc"])
    press_shown(tab_b, "1")
    _all_saved(tab_b)
    press_shown(tab_a, "2")  # tab A still shows pair 1 unrated: its version is stale
    notice = tab_a.locator('[data-testid="medsim-notice"]')
    notice.get_by_text("changed in another window").wait_for(timeout=20000)
    assert "current answer: Same" in notice.inner_text()
    _all_saved(tab_a)
    assert _position(tab_a) == 0
    assert "Saved answer: Same" in tab_a.locator('[data-testid="medsim-saved-note"]').inner_text()
    stored = _stored(url, "tabs", "doc")
    assert [(r["position"], r["value"]) for r in stored] == [(0, "same")]


def test_store_unavailable_mid_session_says_not_saved_and_recovers(server, browser, tmp_path):
    """PostgreSQL stops accepting connections mid-session (as while it restarts): the page
    stays, the widget says "not saved — will retry", and saves once the store is back."""
    import uuid

    import sqlalchemy as sa

    from medsim_annot.storage import dispose_all
    from tests.conftest import need

    base_url = os.environ.get("MEDSIM_TEST_POSTGRES_URL", "")
    need(bool(base_url), "MEDSIM_TEST_POSTGRES_URL is not set", "MEDSIM_REQUIRE_POSTGRES")
    name = "medsim_w_" + uuid.uuid4().hex[:10]
    admin = sa.create_engine(
        base_url.replace("postgresql://", "postgresql+psycopg://", 1), isolation_level="AUTOCOMMIT"
    )

    def sql(statement: str) -> None:
        with admin.connect() as conn:
            conn.exec_driver_sql(statement)

    sql(f'CREATE DATABASE "{name}"')
    url = base_url.rsplit("/", 1)[0] + "/" + name
    proc = None
    try:
        codes = _study(url, "pg", 10)
        dispose_all()
        port = free_port()
        proc, _ = start_streamlit(
            {**server["env"], "MEDSIM_DATABASE_URL": url}, tmp_path / "streamlit.log", port
        )
        page = browser.new_context().new_page()
        _sign_in(page, f"http://127.0.0.1:{port}", codes["doc"])
        shown = press_shown(page, "1")
        _all_saved(page)
        sql(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        sql(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'")
        press_shown(page, "2", shown)
        status = page.locator('[data-testid="medsim-save-status"]')
        status.get_by_text("1 not saved — will retry").wait_for(timeout=60000)
        assert page.locator('[data-testid="medsim-term-1"]').inner_text() == "pgalpha 2"
        sql(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        _all_saved(page, timeout=60000)
        stored = _stored(url, "pg", "doc")
        assert [(r["term"], r["value"]) for r in stored] == [
            ("pgalpha 0", "same"),
            ("pgalpha 1", "not_same"),
        ]
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(10)
        dispose_all()
        sql(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


def test_tiebreak_pair_arrives_while_the_doctor_works_and_on_the_waiting_screen(server, browser):
    """2 + 1 study, three doctors: the doctor in the browser rates while the other two
    disagree (service API) on pairs she does not hold; each tiebreak pair is served to her
    within her next few pairs (serving order, not position order), the progress total grows,
    and once her queue is done the "waiting for other doctors" screen turns into the next
    tiebreak pair when it arrives."""
    from medsim_annot.services import annotation as A
    from medsim_annot.services.design import DesignOptions, create_designed_study
    from medsim_annot.services.people.annotators import authenticate_annotator

    url = server["url"]
    eng = _engine(url)
    r = create_designed_study(
        "twoone",
        _pairs(12, "twoone"),
        BINARY,
        ["doc_a", "doc_b", "doc_c"],
        DesignOptions(per_item=2, tiebreak=True, seed=4),
        engine=eng,
    )
    codes = {a["name"]: a["access_code"] for a in r.annotators}
    ids = {n: authenticate_annotator(c, engine=eng).annotator_id for n, c in codes.items()}

    def held(name: str) -> dict[str, int]:
        views = A.get_window(ids[name], 0, 200, engine=eng)
        return {min(v.term_1, v.term_2): v.position for v in views}

    theirs = sorted(set(held("doc_a")) & set(held("doc_b")) - set(held("doc_c")))
    assert len(theirs) >= 2

    def disagree(term: str) -> None:
        A.submit_rating(ids["doc_a"], held("doc_a")[term], "same", engine=eng)
        A.submit_rating(ids["doc_b"], held("doc_b")[term], "not_same", engine=eng)

    def total() -> int:
        text = page.locator('[data-testid="medsim-progress"]').inner_text()
        return int(text.split("/")[1].split()[0])

    page = browser.new_context().new_page()
    page.clock.install()  # runs as usual; moved on below past the waiting screen's poll
    _sign_in(page, server["base"], codes["doc_c"])
    page.evaluate(RECORDER)
    start = total()
    shown = None
    for _ in range(2):
        shown = press_shown(page, "1", shown)
    _all_saved(page)
    disagree(theirs[0])
    # The pair on screen when the slot was added stays hers to finish; her next press tells
    # the server where she is, and the widget learns of the new slot (the total grows).
    on_screen = page.locator('[data-testid="medsim-term-1"]').inner_text()
    shown = press_shown(page, "1", shown)
    page.locator('[data-testid="medsim-progress"]').get_by_text(
        f"/ {start + 1} rated", exact=False
    ).wait_for(timeout=30000)
    # From there the tiebreak pair comes within her next few pairs.
    shown = []
    terms: list[str] = []
    for _ in range(4):
        shown = wait_shown(page, shown)
        terms.append(page.locator('[data-testid="medsim-term-1"]').inner_text())
        page.keyboard.press("1")
        if theirs[0] in terms:
            break
    assert on_screen != theirs[0] and theirs[0] in terms, (on_screen, terms)
    _all_saved(page)
    assert total() == start + 1
    stored = _stored(url, "twoone", "doc_c")
    tb = [s for s in stored if s["term"] == theirs[0]]
    assert len(tb) == 1 and tb[0]["position"] == start  # the new position past the end
    # Her other pairs were served in queue order around it, none skipped or doubled.
    assert [s["position"] for s in stored if s["term"] != theirs[0]] == list(range(len(stored) - 1))

    # Finish her queue: the waiting screen with its count (pairs the others have not rated).
    for _ in range(total() - len(stored)):
        shown = press_shown(page, "2", shown)
    end = page.locator('[data-testid="medsim-end"]')
    end.get_by_text("Waiting for other doctors").wait_for(timeout=20000)
    waiting = int(end.get_attribute("data-waiting"))
    assert waiting >= 1 and f"{waiting} pair{'s' * (waiting != 1)} may still" in end.inner_text()
    # Another disagreement: the waiting screen turns into the new pair by itself, at its
    # next poll (every WAIT_POLL_MS): the page's clock jumps to it instead of waiting.
    disagree(theirs[1])
    page.clock.fast_forward(WAIT_POLL_MS)
    page.locator('[data-testid="medsim-term-1"]').get_by_text(theirs[1], exact=True).wait_for(
        state="visible", timeout=15000
    )
    assert total() == start + 2
    press_shown(page, "1", shown)
    end.get_by_text("Waiting for other doctors").wait_for(timeout=20000)
    _all_saved(page)
    assert [s["term"] for s in _stored(url, "twoone", "doc_c")][-1] == theirs[1]


def test_presses_travel_to_the_ratings_endpoint_not_through_a_page_rerun(server, browser):
    """Each press reaches the JSON endpoint with the bearer token in a header (no cookie)
    and nothing goes over Streamlit's websocket while the doctor rates: no rerun per press."""
    url = server["url"]
    codes = _study(url, "rest", 20)
    page = browser.new_context().new_page()
    frames: list[object] = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda payload: frames.append(payload)))
    posts: list = []
    page.on("request", lambda r: posts.append(r) if r.url.endswith(RATINGS_PATH) else None)
    _sign_in(page, server["base"], codes["doc"])
    page.evaluate(RECORDER)
    _all_saved(page)
    # The sign-in's own runs are over once the socket has been quiet for a second (bounded:
    # a page that keeps sending fails here rather than later).
    deadline = time.monotonic() + 30
    while True:
        count = len(frames)
        page.wait_for_timeout(1000)
        if len(frames) == count:
            break
        assert time.monotonic() < deadline, "the page kept sending websocket frames"
    frames_before, posts_before = len(frames), len(posts)
    shown = None
    for key in ["1", "2"] * 4:
        shown = press_shown(page, key, shown)
    # Every press acknowledged (nothing pending, all eight taken), then a bounded second
    # for any late frame a press might cause.
    _all_saved(page)
    page.wait_for_function("() => window.__presses.length === 8 && window.__presses[7].after")
    page.wait_for_timeout(1000)
    assert len(frames) == frames_before  # not one websocket message: no page rerun
    sent = posts[posts_before:]
    assert len(sent) >= 1
    for request in sent:
        headers = request.all_headers()
        assert request.method == "POST" and headers["authorization"].startswith("Bearer ")
        assert "cookie" not in headers
    ok, ignored = _accepted(page)
    want = {"1": "same", "2": "not_same"}
    stored = _stored(url, "rest", "doc")
    assert ignored == 0 and [(r["term"], r["value"]) for r in stored] == [
        (p["before"]["term"], want[p["key"]]) for p in ok
    ]
    assert _position(page) == 8


def test_closing_the_tab_keeps_unsaved_ratings_for_the_next_sign_in(server, browser):
    """Ratings not yet acknowledged when the tab closes are kept in this browser's storage
    (per study and annotator), the tab asks before leaving while anything is unsaved, and
    the next sign-in in another tab (a new session) offers them and, once the doctor says
    "Send them", sends them: all stored, once, in order."""
    url = server["url"]
    codes = _study(url, "closed", 20)
    context = browser.new_context()
    page = context.new_page()
    _sign_in(page, server["base"], codes["doc"])
    page.evaluate(RECORDER)
    page.route(f"**{RATINGS_PATH}", lambda route: route.abort())  # nothing gets through
    shown = None
    for key in ["1", "2", "2", "1", "1"]:
        shown = press_shown(page, key, shown)
    status = page.locator('[data-testid="medsim-save-status"]')
    status.get_by_text("5 not saved — will retry").wait_for(timeout=20000)
    ok, ignored = _accepted(page)
    assert ignored == 0 and len(ok) == 5
    # Leaving asks first while anything is unsaved (here: the doctor stays).
    dialogs: list[str] = []

    def stay(dialog) -> None:
        dialogs.append(dialog.type)
        dialog.dismiss()

    page.on("dialog", stay)
    page.close(run_before_unload=True)
    deadline = time.time() + 10
    while not dialogs and time.time() < deadline:
        page.wait_for_timeout(100)  # Playwright delivers the dialog event while it waits
    assert dialogs == ["beforeunload"] and not page.is_closed()
    page.remove_listener("dialog", stay)
    page.close()  # now gone, with five ratings unsaved
    assert _stored(url, "closed", "doc") == []
    tab = context.new_page()
    open_after_a_closed_tab(tab, server["base"])
    tab.get_by_label("Access code").fill(codes["doc"])
    tab.get_by_role("button", name="Sign in", exact=True).click()
    kept = tab.locator('[data-testid="medsim-kept"]')
    kept.wait_for(state="visible", timeout=30000)
    assert "5 ratings from an earlier session" in kept.inner_text()
    assert _stored(url, "closed", "doc") == []  # nothing is sent before the doctor says so
    tab.locator('[data-testid="medsim-kept-send"]').click()
    tab.wait_for_selector('[data-testid="medsim-pair"]', state="visible", timeout=30000)
    _all_saved(tab)
    want = {"1": "same", "2": "not_same"}
    stored = _stored(url, "closed", "doc")
    assert [(r["term"], r["value"]) for r in stored] == [
        (p["before"]["term"], want[p["key"]]) for p in ok
    ]
    assert _position(tab) == 5
    # Acknowledged: nothing is left in the browser's storage for a later sign-in.
    left = tab.evaluate(
        "() => Object.keys(localStorage).filter((k) => k.startsWith('medsim-annot:'))"
    )
    assert left == []
