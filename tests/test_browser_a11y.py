"""Accessibility and rating by touch, in a real browser.

axe-core (the copy bundled with ``axe-playwright-python``) checks every page in both roles
against the WCAG 2.1 A and AA rules: no serious or critical violation anywhere (the widget's
shadow DOM included); the moderate and minor ones left are listed with their reasons in
docs/accessibility.md. The widget's own promises are checked directly: accessible names and
keys, a visible focus ring, one announcement per new pair, the current answer marked by more
than colour, no horizontal scroll at 200% zoom. The admin pages are walked by keys alone.

Touch: a phone (390x844) and a tablet (820x1180) with an emulated touch screen tap the answer
buttons: both terms visible without scrolling, every control at least 44x44 CSS px and on
screen, nothing behind a hover; every tap stored exactly once for the pair on screen, a double
tap inside the minimum view time refused, the next pair drawn in the frame after the tap, and
a rotation keeps the pair and the unsaved list. Each test writes a screenshot of its viewport
to its own output folder (tmp_path) and prints a figures line (tests/widget_drive.py).
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter

import pandas as pd
import pytest
from sqlalchemy import select

from data_schemas.limits import MIN_VIEW_MS
from data_schemas.scales import BINARY
from data_schemas.widget import RATINGS_PATH
from pages import _registry as registry
from tests.conftest import ROOT
from tests.streamlit_harness import (
    Frames,
    chromium,
    page_report,
    require_chromium,
    run_setup,
    sign_in_admin,
    streamlit_server,
)
from tests.widget_drive import (
    PHONE,
    RECORDER,
    TABLET,
    acts,
    figures,
    key_schedule,
    root_eval,
    tap_schedule,
    wait_drawn,
    wait_shown,
)

pytestmark = [pytest.mark.slow, pytest.mark.browser]

ADMIN_PASSWORD = "browser-a11y-admin-pw"
WCAG = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
BLOCKING = {"serious", "critical"}
#: Counts by impact per page, filled as the pages are checked and printed at the end of the
#: module (the table in docs/accessibility.md comes from this output).
AXE_COUNTS: dict[str, Counter] = {}


def _pairs(n: int, prefix: str) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "pair_id": [f"{prefix}p{i:03d}" for i in range(n)],
            "term_1": [f"{prefix} alpha {i}" for i in range(n)],
            "term_2": [f"{prefix} beta {i}" for i in range(n)],
        }
    )


def _engine(url: str):
    from medsim_annot.storage import get_engine

    return get_engine(url)


def _study(url: str, name: str, n: int) -> str:
    from medsim_annot.services.studies import create_study

    r = create_study(name, _pairs(n, name), BINARY, ["doc"], engine=_engine(url))
    return r["annotators"][0]["access_code"]


def _stored(url: str, study: str) -> list[tuple[str, str]]:
    """(first term as shown, value) of every rating of *study*, in id order."""
    from medsim_annot.storage import session_scope
    from medsim_annot.storage.models import Assignment, Item, Rating, Study

    with session_scope(_engine(url)) as s:
        rows = s.execute(
            select(Assignment.swapped, Item.term_1, Item.term_2, Rating.value)
            .join(Assignment, Assignment.id == Rating.assignment_id)
            .join(Item, Item.id == Rating.item_id)
            .join(Study, Study.id == Rating.study_id)
            .where(Study.name == study)
            .order_by(Rating.id)
        ).all()
    return [(r.term_2 if r.swapped else r.term_1, r.value) for r in rows]


SEED_DEMO = "from medsim_annot.services.demo import seed_demo\nassert seed_demo()['seeded']"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_chromium()
    tmp = tmp_path_factory.mktemp("a11y")
    url = f"sqlite:///{tmp / 'medsim.db'}"
    env = {
        **os.environ,
        "MEDSIM_DATABASE_URL": url,
        "MEDSIM_ADMIN_PASSWORD": ADMIN_PASSWORD,
        "PYTHONPATH": str(ROOT),
    }
    run_setup(SEED_DEMO, env)  # what `medsim demo` seeds
    with streamlit_server(env, tmp / "streamlit.log") as base:
        yield {"base": base, "url": url, "tmp": tmp, "env": env}
    if AXE_COUNTS:
        print("\naxe-core WCAG 2.1 A/AA violations by page (impact: rules):")
        for page, counts in AXE_COUNTS.items():
            print(f"  {page}: " + (", ".join(f"{k} {v}" for k, v in counts.items()) or "none"))


@pytest.fixture(scope="module")
def browser(server):
    with chromium() as b:
        yield b


def _axe(page, name: str) -> list[dict]:
    """Run axe-core's WCAG 2.1 A/AA rules on *page*; record the counts by impact under *name*;
    fail on any serious or critical violation (the message names rule, element and reason)."""
    from axe_playwright_python.sync_playwright import Axe

    options = {"runOnly": {"type": "tag", "values": WCAG}, "resultTypes": ["violations"]}
    # axe-core is put into the document once: Axe().run sends its ~550 kB script again on
    # every call (0.1-0.3 s of CPU each), and a Streamlit page changes without a new document.
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(Axe().axe_script)
    violations = page.evaluate("(options) => axe.run(options)", options)["violations"]
    AXE_COUNTS[name] = Counter(v["impact"] for v in violations)
    blocking = [
        f"{v['id']} ({v['impact']}): {n['target']} {n.get('failureSummary', '')}"
        for v in violations
        if v["impact"] in BLOCKING
        for n in v["nodes"]
    ]
    assert not blocking, f"{name}:\n" + "\n".join(blocking)
    return violations


def _settled(page) -> None:
    """Wait until the page's script run has finished (everything it draws is drawn)."""
    page.wait_for_function(
        "() => { const a = document.querySelector('[data-testid=\"stApp\"]');"
        " return a && a.dataset.testScriptState === 'notRunning'; }",
        timeout=60000,
    )


def _sign_in(page, base: str, code: str, *, touch: bool = False) -> None:
    page.goto(base + "/")
    field = page.get_by_label("Access code")
    field.fill(code)
    button = page.get_by_role("button", name="Sign in", exact=True)
    if touch:
        button.tap()
    else:
        field.press("Enter")
    wait_drawn(page)


def _all_saved(page, timeout: float = 30000) -> None:
    page.locator('[data-testid="medsim-save-status"]').get_by_text(
        "All saved", exact=True
    ).wait_for(timeout=timeout)


def _shot(page, tmp_path, name: str, full_page: bool = False) -> None:
    """A screenshot of the viewport for the docs: in the test's tmp_path, and also under
    $MEDSIM_TEST_OUTPUT when set (a folder that outlives pytest's rotation of tmp_path)."""
    page.screenshot(path=str(tmp_path / f"{name}.png"), full_page=full_page)
    out = os.environ.get("MEDSIM_TEST_OUTPUT")
    if out:
        os.makedirs(out, exist_ok=True)
        page.screenshot(path=os.path.join(out, f"{name}.png"), full_page=full_page)


def _no_horizontal_scroll(page) -> None:
    over = page.evaluate(
        "() => [document.scrollingElement, document.querySelector('[data-testid=\"stMain\"]'),"
        " document.querySelector('[data-testid=\"stAppViewContainer\"]')]"
        ".filter(Boolean).map(e => [e.scrollWidth, e.clientWidth])"
    )
    assert all(sw <= cw + 1 for sw, cw in over), over


# ------------------------------------------------------------------------------ axe, both roles
def test_every_page_in_both_roles_has_no_serious_or_critical_violation(server, browser):
    from medsim_annot.services import annotation as A
    from medsim_annot.services.design import DesignOptions, create_designed_study
    from medsim_annot.services.people.annotators import authenticate_annotator

    base, url = server["base"], server["url"]
    code = _study(url, "axe", 4)
    page = browser.new_context().new_page()
    page.goto(base + "/")
    page.get_by_label("Access code").wait_for(timeout=30000)
    _axe(page, "sign-in")
    _sign_in(page, base, code)
    _axe(page, "Annotate (a pair)")
    key_schedule(page, ["1"] * 4, None, 0)  # each key once its pair is shown
    page.locator('[data-testid="medsim-end"]').wait_for(state="visible")
    _all_saved(page)
    _axe(page, "Annotate (end screen)")

    # The waiting screen: a 2 + 1 study whose doctor has rated her queue while the others
    # have not (their pairs may still bring her a tiebreak pair).
    eng = _engine(url)
    r = create_designed_study(
        "axewait",
        _pairs(6, "axewait"),
        BINARY,
        ["doc_a", "doc_b", "doc_c"],
        DesignOptions(per_item=2, tiebreak=True, seed=4),
        engine=eng,
    )
    codes = {a["name"]: a["access_code"] for a in r.annotators}
    who = authenticate_annotator(codes["doc_c"], engine=eng).annotator_id
    for v in A.get_window(who, 0, 100, engine=eng):
        A.submit_rating(who, v.position, "same", engine=eng)
    waiting = browser.new_context().new_page()
    waiting.goto(base + "/")
    waiting.get_by_label("Access code").fill(codes["doc_c"])
    waiting.get_by_label("Access code").press("Enter")
    end = waiting.locator('[data-testid="medsim-end"]')
    end.get_by_text("Waiting for other doctors").wait_for(timeout=30000)
    _axe(waiting, "Annotate (waiting screen)")

    admin = browser.new_context().new_page()
    sign_in_admin(admin, base, ADMIN_PASSWORD, timeout=30000)
    admin.get_by_role("heading", name="New study").wait_for(timeout=30000)
    _settled(admin)
    _axe(admin, "Study setup")
    for spec in registry.admin_pages()[1:]:  # every admin page after Study setup
        title = spec.title
        admin.get_by_test_id("stSidebarNav").get_by_text(title, exact=True).click()
        admin.get_by_role("heading", name=spec.heading or title).first.wait_for(timeout=60000)
        _settled(admin)
        _axe(admin, title)


# ------------------------------------------------------------------------------ the widget
def test_widget_keyboard_names_focus_announcement_zoom_and_figures(server, browser, tmp_path):
    base, url = server["base"], server["url"]
    code = _study(url, "keys", 40)
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    _sign_in(page, base, code)
    page.evaluate(RECORDER)

    # Every control has an accessible name and a key (aria-keyshortcuts), and no hover-only
    # text (no title tooltips).
    controls = root_eval(
        page,
        "(r) => [...r.querySelectorAll('button, input')].filter(e => !e.closest('[hidden]'))"
        ".map(e => ({name: e.getAttribute('aria-label') || (e.labels && e.labels[0]"
        " ? e.labels[0].textContent : e.textContent).trim(), key: e.getAttribute("
        "'aria-keyshortcuts'), tag: e.tagName, title: e.title}))",
    )
    assert controls and all(c["name"] for c in controls), controls
    assert all(c["key"] for c in controls if c["tag"] == "BUTTON"), controls
    assert not any(c["title"] for c in controls), controls

    # Focus is visible: Tab reaches the answer buttons and draws a ring of at least 2 px.
    page.keyboard.press("Tab")
    ring = None
    for _ in range(40):
        ring = root_eval(
            page,
            "(r) => { const e = r.activeElement; if (!e || e.dataset.testid !== 'medsim-option')"
            " return null; const s = getComputedStyle(e); return [s.outlineStyle,"
            " parseFloat(s.outlineWidth)]; }",
        )
        if ring:
            break
        page.keyboard.press("Tab")
    assert ring and ring[0] != "none" and ring[1] >= 2, ring
    page.evaluate("() => document.activeElement && document.activeElement.blur()")

    # The new pair is announced once per pair through the one live region; the save status,
    # which changes at every press, is no live region.
    live = root_eval(
        page,
        "(r) => [...r.querySelectorAll('[aria-live], [role=status], [role=alert]')]"
        ".map(e => e.dataset.testid || e.className)",
    )
    assert "medsim-save-status" not in live, live
    page.evaluate(
        "() => { window.__said = []; const r = document.querySelector("
        "'[data-testid=\"stBidiComponentIsolated\"]').shadowRoot;"
        " const a = r.querySelector('[data-testid=\"medsim-announce\"]');"
        " new MutationObserver(() => window.__said.push(a.textContent))"
        ".observe(a, {childList: true, characterData: true, subtree: true}); }"
    )
    keys = ["1", "2"] * 6
    key_schedule(page, keys, None, 3)  # each key once its pair is shown
    _all_saved(page)
    said = page.evaluate("() => window.__said")
    recorded = [a for a in acts(page, "keydown") if a["value"] in ("1", "2")]
    stored = _stored(url, "keys")
    fig = figures("desktop keyboard", recorded, len(stored), 3)
    ok = [a for a in recorded if a["after"]["ignored"] == a["before"]["ignored"]]
    want = {"1": "same", "2": "not_same"}
    assert stored == [(a["before"]["term"], want[a["value"]]) for a in ok]
    assert len(said) == len(ok) and len(set(said)) == len(said), said  # once per new pair
    assert all("versus" in s for s in said)
    assert fig.same_frame == fig.accepted
    _check_doubles(recorded, 3)

    # Colour is never the only carrier: Back to a rated pair marks its answer with a check
    # mark and a thicker border, and says it in words.
    page.keyboard.press("Backspace")
    current = root_eval(
        page,
        "(r) => { const b = r.querySelector('.medsim-current'); const s = getComputedStyle(b,"
        " '::before'); return [s.content, parseFloat(getComputedStyle(b).borderTopWidth)]; }",
    )
    assert "✓" in current[0] and current[1] >= 2, current
    note = page.locator('[data-testid="medsim-saved-note"]').inner_text()
    assert note.startswith("Saved answer:")

    _shot(page, tmp_path, "desktop-keyboard")
    # 200% zoom of a 1280x800 window: 640x400 CSS px; no horizontal scroll, the page and the
    # widget still usable.
    page.set_viewport_size({"width": 640, "height": 400})
    wait_drawn(page)
    _no_horizontal_scroll(page)
    assert root_eval(page, "(r) => r.host.scrollWidth <= r.host.clientWidth + 1")
    _shot(page, tmp_path, "desktop-zoom-200", full_page=True)
    _axe(page, "Annotate (200% zoom)")
    print(f"\n{fig.line()}\nscreenshots: {tmp_path}")


def _check_doubles(recorded: list[dict], doubles: int) -> None:
    """Each double input takes its first and refuses its second whenever the second came
    within the minimum view time of the first (on a loaded machine a slow second input may
    come later and is then rightly taken); at least one did."""
    tail = recorded[len(recorded) - 2 * doubles :]
    firsts, seconds = tail[::2], tail[1::2]

    def refused(a: dict) -> bool:
        return a["after"]["ignored"] > a["before"]["ignored"]

    assert not any(refused(a) for a in recorded[: len(recorded) - 2 * doubles])
    assert not any(refused(a) for a in firsts)
    gaps = [b["t"] - a["t"] for a, b in zip(firsts, seconds)]
    assert any(g < MIN_VIEW_MS for g in gaps), gaps
    for gap, second in zip(gaps, seconds):
        if gap < MIN_VIEW_MS:
            assert refused(second), gaps


# ------------------------------------------------------------------------------ touch
@pytest.mark.parametrize("device", ["phone", "tablet"])
def test_rating_by_touch(server, browser, tmp_path, device):
    base, url = server["base"], server["url"]
    study = f"touch{device}"
    code = _study(url, study, 40)
    spec = PHONE if device == "phone" else TABLET
    context = browser.new_context(**spec)
    page = context.new_page()
    _sign_in(page, base, code, touch=True)
    page.evaluate(RECORDER)
    height = spec["viewport"]["height"]
    width = spec["viewport"]["width"]

    # Both terms, the answer buttons, Back and the comment on screen without scrolling; every
    # control at least 44x44 CSS px; nothing that only a hover shows.
    boxes = root_eval(
        page,
        "(r) => Object.fromEntries([['t1', '[data-testid=\"medsim-term-1\"]'],"
        " ['t2', '[data-testid=\"medsim-term-2\"]'], ['back', '[data-testid=\"medsim-back\"]'],"
        " ['comment', '[data-testid=\"medsim-comment\"]']].map(([k, s]) => {"
        " const q = r.querySelector(s).getBoundingClientRect();"
        " return [k, [q.top, q.bottom, q.left, q.right, q.width, q.height]]; }).concat("
        "[...r.querySelectorAll('[data-testid=\"medsim-option\"]')].map((b, i) => {"
        " const q = b.getBoundingClientRect();"
        " return ['option' + i, [q.top, q.bottom, q.left, q.right, q.width, q.height]]; })))",
    )
    assert page.evaluate("() => document.scrollingElement.scrollTop") == 0
    for name, (top, bottom, left, right, w, h) in boxes.items():
        assert top >= 0 and bottom <= height and left >= 0 and right <= width, (name, boxes)
        if name not in ("t1", "t2"):
            assert w >= 44 and h >= 44, (name, boxes)
    css = root_eval(
        page,
        "(r) => [...r.styleSheets].flatMap(s => [...s.cssRules]).map(x => x.cssText).join('\\n')",
    )
    assert ":hover" not in css
    assert not root_eval(page, "(r) => [...r.querySelectorAll('[title]')].length")
    _no_horizontal_scroll(page)
    _axe(page, f"Annotate ({device})")
    _shot(page, tmp_path, f"{device}-touch")

    values = ["same", "not_same"] * 5
    tap_schedule(page, values, None, 3)  # each tap once its pair is shown
    _all_saved(page)
    recorded = acts(page, "click")
    stored = _stored(url, study)
    fig = figures(f"{device} touch", recorded, len(stored), 3)
    ok = [a for a in recorded if a["after"]["ignored"] == a["before"]["ignored"]]
    # Every tap stored exactly once, for the pair on screen at the tap, in order.
    assert stored == [(a["before"]["term"], a["value"]) for a in ok]
    assert fig.inputs == len(values) + 6 and fig.stored == fig.accepted
    assert fig.same_frame == fig.accepted
    _check_doubles(recorded, 3)

    # Rotation keeps the pair and the unsaved list: two taps while the endpoint is cut off
    # (kept, "not saved — will retry"), turn the device, then let them through.
    def cut(route):
        route.abort()

    page.route(f"**{RATINGS_PATH}", cut)
    centres = root_eval(
        page,
        "(r) => [...r.querySelectorAll('[data-testid=\"medsim-option\"]')].map(b => {"
        " const q = b.getBoundingClientRect(); return [q.x + q.width / 2, q.y + q.height / 2]; })",
    )
    at = None
    for _ in range(2):
        at = wait_shown(page, at)  # a pair drawn since the last tap, shown long enough
        page.touchscreen.tap(*centres[0])
    status = page.locator('[data-testid="medsim-save-status"]')
    status.get_by_text("2 not saved — will retry").wait_for(timeout=30000)
    before = root_eval(
        page,
        "(r) => [r.querySelector('[data-testid=\"medsim-pair\"]').dataset.position,"
        " r.querySelector('[data-testid=\"medsim-term-1\"]').textContent]",
    )
    kept = page.evaluate(
        "() => Object.keys(localStorage).filter(k => k.startsWith('medsim-annot:'))"
        ".map(k => JSON.parse(localStorage.getItem(k)).pending.length)"
    )
    page.set_viewport_size({"width": height, "height": width})  # landscape
    page.wait_for_function(f"() => window.innerWidth === {height}")
    wait_drawn(page)
    after = root_eval(
        page,
        "(r) => [r.querySelector('[data-testid=\"medsim-pair\"]').dataset.position,"
        " r.querySelector('[data-testid=\"medsim-term-1\"]').textContent]",
    )
    assert after == before and kept == [2]
    assert status.get_attribute("data-pending") == "2"
    t1 = root_eval(
        page,
        "(r) => r.querySelector('[data-testid=\"medsim-term-1\"]').getBoundingClientRect().bottom",
    )
    t2 = root_eval(
        page,
        "(r) => r.querySelector('[data-testid=\"medsim-term-2\"]').getBoundingClientRect().bottom",
    )
    assert max(t1, t2) <= width  # both terms still on screen, turned
    _shot(page, tmp_path, f"{device}-touch-landscape")
    page.unroute(f"**{RATINGS_PATH}")
    _all_saved(page, timeout=60000)
    final = _stored(url, study)
    assert final[: len(stored)] == stored and len(final) == len(stored) + 2
    assert [v for _, v in final[len(stored) :]] == ["same", "same"]
    print(f"\n{fig.line()}\nscreenshots: {tmp_path}")


# ------------------------------------------------------------------------------ admin by keys
def _tab_to(page, test: str, limit: int = 250, back: bool = False) -> None:
    """Press Tab (Shift+Tab with *back*) until the focused element passes *test* (a JS
    expression of ``e``, the focused element)."""
    for _ in range(limit):
        if page.evaluate(f"() => {{ const e = document.activeElement; return !!e && ({test}); }}"):
            return
        page.keyboard.press("Shift+Tab" if back else "Tab")
    raise AssertionError(f"focus never reached {test}")


def _text_is(text: str) -> str:
    """The element's visible text (its last line: a sidebar link's icon comes first) is *text*."""
    return (
        f"(e.innerText || e.getAttribute('aria-label') || '').trim().split('\\n').pop().trim()"
        f" === {text!r}"
    )


# The Browse-files button of the uploader labelled "Pairs file" (Study setup has a second
# uploader below it, for check pairs, whose button looks the same).
_PAIRS_UPLOAD = (
    "e.tagName === 'BUTTON' && !!e.closest('[data-testid=\"stFileUploader\"]') && e.closest("
    "'[data-testid=\"stFileUploader\"]').innerText.trim().startsWith('Pairs file')"
)


def _file_dialog_by_keys(page, frames: Frames):
    """Tab (or Shift+Tab, when the focus starts below it) to the "Pairs file" uploader's
    button and press Space once: the file dialog. Space, not Enter: on Streamlit's uploader
    Enter reaches both the button and the drop zone around it, which open the dialog twice
    in one gesture, and chromium then shows none (reproduced by hand: Enter opens nothing,
    Space and a click do). No second press: a dropped key event is a failure to see (with
    the page's frames), not something to retry away."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    _settled(page)  # no script run redraws the uploader under the focus
    below = page.evaluate(
        "() => { const u = [...document.querySelectorAll('[data-testid=\"stFileUploader\"]')]"
        ".find(x => x.innerText.trim().startsWith('Pairs file'));"
        " const a = document.activeElement;"
        " return !!(u && a && a !== document.body"
        " && (u.compareDocumentPosition(a) & Node.DOCUMENT_POSITION_FOLLOWING)"
        " && !u.contains(a)); }"
    )
    _tab_to(page, _PAIRS_UPLOAD, back=below)
    # The script run is over, but on a loaded machine the browser may still be rendering
    # its last deltas: press only once the page's main thread has been idle (then a frame).
    page.evaluate(
        "() => new Promise((done) => requestIdleCallback("
        "() => requestAnimationFrame(() => done(true)), {timeout: 10000}))"
    )
    frames.note("focus on the Pairs file button; page idle; Space")
    try:
        with page.expect_file_chooser(timeout=20000) as chooser:
            page.keyboard.press("Space")
    except PlaywrightTimeoutError as exc:
        focused = f"() => {{ const e = document.activeElement; return !!e && ({_PAIRS_UPLOAD}); }}"
        raise AssertionError(
            "one Space on the Pairs file uploader's button opened no file dialog within 20 s"
            f" (focus still on it: {page.evaluate(focused)}); " + page_report(page, frames)
        ) from exc
    return chooser.value


def test_admin_pages_by_keyboard_alone(server, browser, tmp_path):
    """Study setup -> create a study -> Dashboard -> Export, with keys only (the pairs file is
    chosen in the file dialog the keyboard opens)."""
    base = server["base"]
    pairs = tmp_path / "kbd-pairs.csv"
    _pairs(12, "kbd").to_csv(pairs, index=False)
    page = browser.new_context(accept_downloads=True).new_page()
    # Playwright turns chromium's file-chooser interception on when a first "filechooser"
    # listener is added, without waiting for it; a listener from the start has it on long
    # before the Space below (a first listener added just before the key could lose the race).
    page.on("filechooser", lambda chooser: None)
    frames = Frames(page)
    sign_in_admin(page, base, ADMIN_PASSWORD, timeout=30000)
    page.get_by_role("heading", name="New study").wait_for(timeout=30000)
    _settled(page)  # the sign-in's run is over: nothing redraws under the focus from here
    page.evaluate("() => document.body.focus()")
    _tab_to(page, "e.getAttribute('aria-label') === 'Study name'")
    page.keyboard.type("keyboard-study")
    # Leaving the field sends the name: wait for that rerun to finish, and for the name kept.
    runs = frames.count("sent", "rerun_script")
    page.keyboard.press("Tab")

    def rerun_finished() -> bool:
        """A rerun was sent after the Tab, and a script run finished after the last one."""
        ways = [(w, text) for _, w, text in frames.rows if w in ("sent", "recv")]
        sent = [i for i, (w, text) in enumerate(ways) if w == "sent" and text.startswith("rerun")]
        return len(sent) > runs and any(
            w == "recv" and text.startswith("script_finished") for w, text in ways[sent[-1] :]
        )

    deadline = time.monotonic() + 60
    while not (
        rerun_finished()
        and page.evaluate(
            "() => document.querySelector('[data-testid=\"stApp\"]')"
            ".dataset.testScriptState === 'notRunning'"
        )
    ):
        assert time.monotonic() < deadline, "no rerun after the study name:\n" + frames.text()
        page.wait_for_timeout(100)
    assert page.get_by_label("Study name").input_value() == "keyboard-study"
    _file_dialog_by_keys(page, frames).set_files(str(pairs))
    page.get_by_text("12 valid pairs").wait_for(timeout=60000)
    _tab_to(
        page,
        "e.getAttribute('aria-label') && e.getAttribute('aria-label')"
        ".startsWith('One name per line')",
    )
    page.keyboard.type("kbd_a")
    page.keyboard.press("Tab")
    page.wait_for_function(
        "() => { const b = [...document.querySelectorAll('button')]"
        ".find(x => x.innerText.includes('Create study')); return b && !b.disabled; }",
        timeout=60000,
    )
    _tab_to(page, "e.tagName === 'BUTTON' && e.innerText.includes('Create study')")
    page.keyboard.press("Enter")
    page.locator(".st-key-setup_created").wait_for(timeout=60000)
    assert re.search(r"kbd_a: [A-Z0-9-]+", page.locator(".st-key-setup_created code").inner_text())

    for title, heading in (("Dashboard", "QA dashboard"), ("Export", "Gold export")):
        page.evaluate("() => document.body.focus()")
        _tab_to(page, f"e.tagName === 'A' && {_text_is(title)}")
        page.keyboard.press("Enter")
        page.get_by_role("heading", name=heading).first.wait_for(timeout=60000)
    page.evaluate("() => document.body.focus()")
    _tab_to(page, f"e.tagName === 'BUTTON' && {_text_is('Prepare export')}")
    page.keyboard.press("Enter")
    page.get_by_text(re.compile(r"\d+ of \d+ pairs ready")).first.wait_for(timeout=60000)
    _tab_to(page, "e.tagName === 'BUTTON' && /^Download gold-/.test(e.innerText.trim())")
    with page.expect_download(timeout=30000) as dl:
        page.keyboard.press("Enter")
    assert dl.value.suggested_filename.startswith("gold-")
    _shot(page, tmp_path, "admin-keyboard", full_page=True)
