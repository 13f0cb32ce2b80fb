"""What the browser painted when, measured in the page (issue 38).

:data:`PROBE` is installed once in a page (``page.evaluate``; Streamlit's page switches do
not reload it). From then on, every trusted click or Enter starts a new measurement at the
event's own time stamp (when the input happened, so a main thread busy at that moment is
counted as the wait it is). :func:`watch` names what is awaited: CSS selectors, with an
optional text, looked up (once the page's own main heading shows) in the main area's fresh elements (not a stale leftover of the
previous page) and in the shadow roots of the app's components. Each is marked at the
animation frame after it first shows (a box of non-zero height): the frame that paints it.
Layout shifts (``PerformanceObserver`` "layout-shift") are kept with their times, so
:func:`shift_after` sums what moved after a given mark (the charts arriving after the text).
"""

from __future__ import annotations

import time

PROBE = r"""
() => {
  if (window.__paint) return;
  const P = window.__paint = {start: null, marks: {}, targets: {}, shifts: [], longtasks: []};
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      if (P.start === null) continue;
      P.shifts.push({t: e.startTime - P.start, value: e.value});
    }
  }).observe({type: 'layout-shift'});
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      if (P.start !== null) P.longtasks.push([e.startTime - P.start, e.duration]);
    }
  }).observe({type: 'longtask'});
  const begin = (e) => {
    if (!e.isTrusted) return;
    P.start = e.timeStamp; P.marks = {}; P.shifts = []; P.longtasks = [];
    // Also looked for at every frame until all are marked (a shadow root's content can be
    // written before any observer of it exists): at most one frame late.
    const tick = () => {
      check();
      if (Object.keys(P.targets).some((k) => !(k in P.marks))) requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  };
  document.addEventListener('click', begin, true);
  document.addEventListener('keydown', (e) => { if (e.key === 'Enter') begin(e); }, true);
  const roots = () => {
    // The main area and the shadow roots of its components; each with the element that
    // tells whether it is a stale leftover of the previous page.
    const main = document.querySelector('[data-testid="stMain"]');
    if (!main) return [];
    const out = [[main, null]];
    for (const h of main.querySelectorAll('[data-testid="stBidiComponentIsolated"]')) {
      if (h.shadowRoot) out.push([h.shadowRoot, h]);
    }
    return out;
  };
  const stale = (el) => Boolean(el.closest('[data-stale="true"]'));
  const count = (spec) => {
    let n = 0;
    for (const [r, host] of roots()) {
      if (host && stale(host)) continue;
      for (const el of r.querySelectorAll(spec.css)) {
        if (!host && stale(el)) continue;
        if (spec.text && !(el.textContent || '').includes(spec.text)) continue;
        if (spec.has && !el.querySelector(spec.has)) continue;
        if (el.getBoundingClientRect().height > 0) n += 1;
      }
    }
    return n;
  };
  const headed = () => {
    if (!P.heading) return true;
    for (const [r, host] of roots()) {
      for (const h of r.querySelectorAll('h1')) {
        if (stale(host || h)) continue;
        if ((h.textContent || '').trim().startsWith(P.heading)) return true;
      }
    }
    return false;
  };
  const check = () => {
    if (P.start === null || !headed()) return;
    for (const [name, spec] of Object.entries(P.targets)) {
      if (name in P.marks || count(spec) < (spec.min || 1)) continue;
      P.marks[name] = null;
      requestAnimationFrame(() => { P.marks[name] = performance.now() - P.start; });
    }
  };
  // Changes inside a component's shadow root are not seen from the document: each shadow
  // root gets its own observer once it appears.
  const options = {subtree: true, childList: true, characterData: true, attributes: true};
  const observer = new MutationObserver(() => {
    for (const [r] of roots()) {
      if (r instanceof ShadowRoot && !r.__paintObserved) {
        r.__paintObserved = true;
        observer.observe(r, options);
      }
    }
    check();
  });
  observer.observe(document.body, options);
  P.watch = (targets, heading) => { P.targets = targets; P.heading = heading; };
}
"""


def install(page) -> None:
    """Install :data:`PROBE` in *page* (once; again is harmless)."""
    page.evaluate(PROBE)


def watch(page, targets: dict[str, dict], heading: str | None = None) -> None:
    """Await *targets* ({name: {"css", "text"?, "has"?, "min"?}}) from the next click or
    Enter on, counted only once the main heading reads *heading* (if given: the elements of
    the page left are not yet marked stale right after the click); call before that
    input."""
    page.evaluate("([t, h]) => window.__paint.watch(t, h)", [targets, heading])


def marks(page, names: list[str], timeout: float = 60) -> dict[str, float]:
    """Seconds from the input to the paint of each of *names*, waiting up to *timeout*."""
    deadline = time.monotonic() + timeout
    while True:
        got = page.evaluate("() => window.__paint.marks")
        if all(got.get(n) is not None for n in names) or time.monotonic() > deadline:
            missing = [n for n in names if got.get(n) is None]
            if missing:
                seen = page.evaluate(
                    "() => ({heading: window.__paint.heading, marks: window.__paint.marks,"
                    " h1: [...document.querySelectorAll('h1')].map(h => h.textContent)})"
                )
                raise TimeoutError(f"not painted within {timeout} s: {', '.join(missing)}; {seen}")
            return {n: got[n] / 1000 for n in names}
        time.sleep(0.05)


def shift_after(page, seconds: float) -> float:
    """The layout-shift score of every shift from *seconds* after the input on."""
    shifts = page.evaluate("() => window.__paint.shifts")
    return float(sum(s["value"] for s in shifts if s["t"] >= seconds * 1000))


def longtasks(page) -> list[tuple[float, float]]:
    """(start, duration) in seconds of each long task since the input."""
    return [(a / 1000, b / 1000) for a, b in page.evaluate("() => window.__paint.longtasks")]
