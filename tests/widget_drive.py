"""Driving the annotation widget by key or by touch in a real browser, and the figures of a run.

Shared by the browser tests (tests/test_browser_a11y.py) and the touch benchmark
(benchmarks/bench_touch.py). Every key press and every tap on an answer button is recorded in
the page itself: a capture listener notes the pair on screen before the widget sees the
input, a bubbling listener the pair after it, and a requestAnimationFrame callback queued at
the input the pair in the next frame and that frame's time. So "the next pair is drawn in the
same frame as the tap" is checked in the page (the frame after the input shows the next
pair), and the tap -> next pair time is the page's own clock, not Playwright's round trip.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from data_schemas.limits import MIN_VIEW_MS

#: A phone and a tablet in portrait, as the doctors hold them (CSS px; Playwright emulates the
#: touch screen, the mobile viewport and the device pixel ratio).
PHONE = {
    "viewport": {"width": 390, "height": 844},
    "device_scale_factor": 3,
    "is_mobile": True,
    "has_touch": True,
}
TABLET = {
    "viewport": {"width": 820, "height": 1180},
    "device_scale_factor": 2,
    "is_mobile": True,
    "has_touch": True,
}

RECORDER = """
() => {
  window.__acts = [];
  window.__cur = null;
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
  const on = (type) => {
    window.addEventListener(type, (e) => {
      let value = null;
      if (type === 'click') {
        const el = e.composedPath()[0];
        const b = el && el.closest && el.closest('[data-testid="medsim-option"]');
        if (!b) { window.__cur = null; return; }
        value = b.dataset.value;
      } else {
        value = e.key;
      }
      const rec = {type, value, before: snap(), t: e.timeStamp, h: performance.now()};
      window.__acts.push(rec);
      window.__cur = rec;
      requestAnimationFrame(() => { rec.frame = performance.now(); rec.frameSnap = snap(); });
    }, true);
    window.addEventListener(type, () => {
      if (window.__cur && !window.__cur.after) window.__cur.after = snap();
      window.__cur = null;
    }, false);
  };
  on('click');
  on('keydown');
}
"""


#: pages/components/annotator/annotator.js ORPHAN_AFTER_MS: a list untouched this long is a
#: gone tab's even without its pagehide mark.
ORPHAN_AFTER_MS = 20000

_GONE = """
(orphanMs) => {
  for (const k of Object.keys(localStorage)) {
    if (!k.startsWith('medsim-annot:')) continue;
    let saved = null;
    try { saved = JSON.parse(localStorage.getItem(k)); } catch (err) { continue; }
    if (!saved || !Array.isArray(saved.pending) || !saved.pending.length) continue;
    if (saved.closed) return 'marked closed';
    if (Date.now() - Number(saved.t || 0) >= orphanMs) return 'untouched for ' + orphanMs + ' ms';
  }
  return false;
}
"""


def open_after_a_closed_tab(tab, base: str, timeout: float = 60000) -> str:
    """Open the start page in *tab* and wait until this browser's storage shows a list of
    unsaved ratings as a gone tab's: marked closed by the closed tab's pagehide (a write the
    closing renderer makes as it goes, which another tab sees a moment later on a loaded
    machine), or untouched for :data:`ORPHAN_AFTER_MS`. The widget decides when it starts
    which lists are a gone tab's and offers only those: a sign-in before then skipped the
    list as a live tab's, and the kept ratings were never offered. Returns which of the two
    it was (for a failing test's message)."""
    tab.goto(base + "/")
    return str(tab.wait_for_function(_GONE, arg=ORPHAN_AFTER_MS, timeout=timeout).json_value())


def root_eval(page, body: str):
    """Evaluate *body* (a function of the widget's shadow root ``r``) in the page."""
    return page.evaluate(
        "() => { const r = document.querySelector('[data-testid=\"stBidiComponentIsolated\"]')"
        f".shadowRoot; return ({body})(r); }}"
    )


def option_centres(page) -> dict[str, tuple[float, float]]:
    """Each answer button's centre (page CSS px), by its stored value."""
    boxes = root_eval(
        page,
        "(r) => [...r.querySelectorAll('[data-testid=\"medsim-option\"]')].map(b => {"
        " const q = b.getBoundingClientRect(); return [b.dataset.value, q.x + q.width / 2,"
        " q.y + q.height / 2]; })",
    )
    return {v: (x, y) for v, x, y in boxes}


def wait_drawn(page, timeout: float = 30000) -> None:
    """Wait until a pair is on screen and its first frame is painted (two frames later)."""
    page.wait_for_selector('[data-testid="medsim-pair"]', state="visible", timeout=timeout)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


# The pair on screen (``after``: other than the pair drawn at that time) once it has been
# shown for the minimum view time, on the page's clock: its drawing time (``data-shown-at``,
# set by the widget where it starts the minimum view time) and the page's ``performance.now``.
_SHOWN = """
([after, minMs]) => {
  const host = document.querySelector('[data-testid="stBidiComponentIsolated"]');
  const r = host && host.shadowRoot;
  if (!r) return false;
  const main = r.querySelector('.medsim-main');
  const pair = r.querySelector('[data-testid="medsim-pair"]');
  if (!main || main.hidden || !pair || !pair.dataset.shownAt) return false;
  const at = Number(pair.dataset.shownAt);
  if (after !== null && at === after) return false;
  return performance.now() - at >= minMs ? at : false;
}
"""
#: Past the minimum view time by a little: the key's event time comes after the check anyway.
SHOWN_MARGIN_MS = 5


def wait_shown(page, after: float | None = None, timeout: float = 30000) -> float:
    """Wait until a pair is on screen (one drawn since *after*, the drawing time returned by
    an earlier call) and has been shown for the minimum view time, on the page's clock;
    return its drawing time. Use before a key or tap that must be taken, instead of a fixed
    sleep: a slow page makes it wait longer, never press too early."""
    handle = page.wait_for_function(
        _SHOWN, arg=[after, MIN_VIEW_MS + SHOWN_MARGIN_MS], timeout=timeout, polling=20
    )
    return float(handle.json_value())


def press_shown(page, key: str, after: float | None = None, timeout: float = 30000) -> float:
    """Press *key* once the pair on screen (drawn since *after*) has been shown for the
    minimum view time; return the drawing time of the pair the key rated (pass it as
    *after* to the next call, which then waits for the next pair)."""
    at = wait_shown(page, after, timeout)
    page.keyboard.press(key)
    return at


def _paced(page, paced_s: float | None, after: float | None) -> float | None:
    """Wait for the next input's moment: *paced_s* after the pair is painted (a doctor's
    rhythm, as the benchmark taps), or, with *paced_s* ``None``, as soon as the pair drawn
    since *after* has been shown for the minimum view time (:func:`wait_shown`, on the
    page's clock; the tests' pace: no input refused, no fixed sleep). Returns the drawing
    time to pass as *after* next (``None`` when paced)."""
    if paced_s is None:
        return wait_shown(page, after)
    wait_drawn(page)
    time.sleep(paced_s)
    return None


def tap_schedule(page, values: list[str], paced_s: float | None, doubles: int) -> None:
    """Tap the answer buttons for *values*, *paced_s* apart (after each pair is painted;
    ``None``: each once its pair has been shown for the minimum view time), then *doubles*
    double taps: two taps on one button back to back, as fast as the browser takes them."""
    centres = option_centres(page)
    at = None
    for v in values:
        at = _paced(page, paced_s, at)
        page.touchscreen.tap(*centres[v])
    for i in range(doubles):
        at = _paced(page, paced_s, at)
        x, y = centres[values[i % len(values)]]
        page.touchscreen.tap(x, y)
        page.touchscreen.tap(x, y)


def key_schedule(page, keys: list[str], paced_s: float | None, doubles: int) -> None:
    """The same with the keyboard: *keys* paced, then *doubles* double presses."""
    at = None
    for k in keys:
        at = _paced(page, paced_s, at)
        page.keyboard.press(k)
    for i in range(doubles):
        at = _paced(page, paced_s, at)
        page.keyboard.press(keys[i % len(keys)])
        page.keyboard.press(keys[i % len(keys)])


@dataclass
class Figures:
    """One run's inputs and what became of them."""

    kind: str
    inputs: int  # taps on an answer button (or rating key presses)
    accepted: int
    refused: int  # shown as ignored: within the minimum view time of the pair's drawing
    refused_double: int  # of those, the second input of a double tap / press
    doubles_inside: int  # doubles whose second input came within the minimum view time
    stored: int
    same_frame: int  # accepted inputs whose next frame showed the next pair
    next_ms: list[float]  # input (its event time) -> the frame with the next pair, page clock
    draw_ms: list[float]  # the page taking the input -> that frame (without input queueing)

    def line(self) -> str:
        med, p95 = _median_p95(self.next_ms)
        draw, _ = _median_p95(self.draw_ms)
        return (
            f"figures {self.kind}: inputs={self.inputs} stored={self.stored} "
            f"refused_double={self.refused_double} (of {self.doubles_inside} inside the "
            f"minimum view time; refused {self.refused}) "
            f"next pair in the same frame {self.same_frame}/{self.accepted}, "
            f"input->next pair median {med:.1f} ms p95 {p95:.1f} ms "
            f"(handled->painted median {draw:.1f} ms)"
        )


def _median_p95(values: list[float]) -> tuple[float, float]:
    ms = sorted(values)
    if not ms:
        return float("nan"), float("nan")
    return statistics.median(ms), ms[min(len(ms) - 1, int(0.95 * len(ms)))]


def acts(page, kind: str) -> list[dict]:
    """The recorded inputs of *kind* ("click" or "keydown") that rate."""
    return [a for a in page.evaluate("() => window.__acts") if a["type"] == kind]


def figures(kind: str, recorded: list[dict], stored: int, doubles: int) -> Figures:
    ok = [a for a in recorded if a["after"]["ignored"] == a["before"]["ignored"]]
    refused = [a for a in recorded if a["after"]["ignored"] > a["before"]["ignored"]]
    tail = recorded[len(recorded) - 2 * doubles :] if doubles else []
    firsts, seconds = tail[::2], tail[1::2]
    inside = [b for a, b in zip(firsts, seconds) if b["t"] - a["t"] < MIN_VIEW_MS]
    moved = [a for a in ok if a["after"].get("term") != a["before"].get("term")]
    return Figures(
        kind=kind,
        inputs=len(recorded),
        accepted=len(ok),
        refused=len(refused),
        refused_double=sum(1 for a in seconds if a in refused),
        doubles_inside=len(inside),
        stored=stored,
        same_frame=sum(
            1 for a in moved if a.get("frameSnap", {}).get("term") == a["after"]["term"]
        ),
        next_ms=[a["frame"] - a["t"] for a in moved if "frame" in a],
        draw_ms=[a["frame"] - a["h"] for a in moved if "frame" in a],
    )
