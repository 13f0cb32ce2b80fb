"""Key press → next pair painted, measured in the browser.

Headless Debian chromium (Playwright) against ``streamlit run serve.py`` with a study of 1,200
pairs, on SQLite (a temporary file) and on PostgreSQL when ``MEDSIM_BENCH_POSTGRES_URL`` or
``MEDSIM_TEST_POSTGRES_URL`` is set. A script in the page records ``performance.now()`` at
keydown and, once the first term's text has changed, the ``requestAnimationFrame`` callback
of the frame that paints it; the difference is the figure.

Two ways of pressing: paced (a key every 0.3 s) and type-ahead (a key every 120 ms). The
baseline is the Annotate page as it was before the widget (every press a full rerun; kept in
``benchmarks/rerun_baseline/``), measured in the same run on the same study. Type-ahead
counts what happened to each press: rated, shown as ignored (the widget ignores a press
within MIN_VIEW_MS of a pair appearing, and says so), or lost (nothing stored, nothing
shown). Also measured: the server-side commit of one rating (``commit_pending`` of one
entry, i.e. ``submit_rating`` with its version), median.

The same widget is also driven by a doctor whose browser is German (every text of the widget
then comes from the German catalogue, numbers formatted by ``Intl`` and plural texts picked by
``Intl.PluralRules``), on the same server right after the English run: its key → next pair
is reported beside the English figure.

Goals: median ≤ 16 ms (the next frame at 60 Hz) and p95 ≤ 50 ms; type-ahead with zero lost presses;
commit median < 50 ms; German within 10% of English (median). Environment: ``MEDSIM_BENCH_PACED`` (presses, default 60),
``MEDSIM_BENCH_TYPEAHEAD`` (default 40).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import pandas as pd

from medsim_annot.services.study_handle import open_study

N_PAIRS = 1200
PACED = int(os.environ.get("MEDSIM_BENCH_PACED", "60"))
TYPEAHEAD = int(os.environ.get("MEDSIM_BENCH_TYPEAHEAD", "40"))
ROOT = Path(__file__).resolve().parents[1]

PROBE = """
() => {
  window.__lat = [];
  const roots = () => {
    const out = [document];
    for (const h of document.querySelectorAll('[data-testid="stBidiComponentIsolated"]')) {
      if (h.shadowRoot) out.push(h.shadowRoot);
    }
    return out;
  };
  const term = () => {
    for (const r of roots()) {
      const t = r.querySelector('[data-testid="medsim-term-1"]');
      if (t) return t.textContent;
    }
    return null;
  };
  const ignored = () => {
    for (const r of roots()) {
      const st = r.querySelector('[data-testid="medsim-save-status"]');
      if (st) return Number(st.dataset.ignored || 0);
    }
    return 0;
  };
  let pending = null;
  window.addEventListener('keydown', () => {
    // After the page's own handlers: a press the widget showed as ignored draws nothing.
    if (pending && ignored() !== pending.ignored) pending.cancel();
  }, false);
  window.addEventListener('keydown', () => {
    const t0 = performance.now();
    const before = term();
    const slot = window.__lat.length;
    window.__lat.push(null);
    const observers = [];
    pending = {ignored: ignored(), cancel: () => {
      observers.forEach((o) => o.disconnect());
      window.__lat[slot] = 'ignored';
    }};
    const done = () => {
      observers.forEach((o) => o.disconnect());
      requestAnimationFrame(() => { window.__lat[slot] = performance.now() - t0; });
    };
    const check = () => { if (term() !== before) { done(); return true; } return false; };
    for (const r of roots()) {
      const o = new MutationObserver(check);
      o.observe(r === document ? document.body : r,
        {subtree: true, childList: true, characterData: true});
      observers.push(o);
    }
    setTimeout(() => observers.forEach((o) => o.disconnect()), 5000);
  }, true);
}
"""


def _pg_url() -> str | None:
    return os.environ.get("MEDSIM_BENCH_POSTGRES_URL") or os.environ.get("MEDSIM_TEST_POSTGRES_URL")


def _study(url: str) -> tuple[str, dict[str, str]]:
    from data_schemas.scales import BINARY
    from medsim_annot.services.studies import create_study
    from medsim_annot.storage import get_engine

    name = f"bench-browser-{uuid.uuid4().hex[:8]}"
    pairs = pd.DataFrame(
        {
            "pair_id": [f"p{i}" for i in range(N_PAIRS)],
            "term_1": [f"term {i} alpha" for i in range(N_PAIRS)],
            "term_2": [f"term {i} beta" for i in range(N_PAIRS)],
        }
    )
    r = create_study(name, pairs, BINARY, ["widget", "rerun", "german"], engine=get_engine(url))
    return name, {a["name"]: a["access_code"] for a in r["annotators"]}


def _stored(url: str, study: str, annotator: str) -> int:
    from medsim_annot.services.studies import rating_history
    from medsim_annot.storage import get_engine

    hist = rating_history(open_study(study, engine=get_engine(url)))
    return int((hist["annotator"] == annotator).sum())


def _press(page, n: int, gap: float) -> None:
    t = time.perf_counter()
    for i in range(n):
        if i:
            t += gap
            delay = t - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
        page.keyboard.press("1" if i % 3 else "2")


def _latencies(page) -> list[float | None]:
    return page.evaluate("() => window.__lat")


def _ignored(page) -> int:
    loc = page.locator('[data-testid="medsim-save-status"]')
    return int(loc.get_attribute("data-ignored") or 0) if loc.count() else 0


def _settle(page, widget: bool) -> None:
    if widget:
        # "All saved" in any language: the status's state, not its words.
        page.wait_for_selector(
            '[data-testid="medsim-save-status"][data-state="saved"][data-pending="0"]',
            state="attached",
            timeout=120000,
        )
    time.sleep(2.0)


#: The sign-in form's words in the browser's language (the page follows it).
SIGN_IN = {"en-US": ("Access code", "Sign in"), "de-DE": ("Zugangscode", "Anmelden")}


def _run_app(
    browser,
    base: str,
    code: str | None,
    widget: bool,
    url: str,
    study: str,
    who: str,
    locale: str = "en-US",
):
    """Paced then type-ahead presses on one app, in a browser set to *locale*; returns
    latencies and press outcomes."""
    page = browser.new_context(locale=locale).new_page()
    page.set_default_timeout(120000)
    page.goto(base + "/")
    if code:
        label, button = SIGN_IN[locale]
        page.get_by_label(label).fill(code)
        page.get_by_role("button", name=button, exact=True).click()
    page.wait_for_selector('[data-testid="medsim-term-1"]', state="visible", timeout=60000)
    time.sleep(1.0)
    page.evaluate(PROBE)
    _press(page, PACED, 0.3)
    _settle(page, widget)
    paced = _latencies(page)
    stored_paced = _stored(url, study, who)
    ignored_paced = _ignored(page)
    page.evaluate(PROBE)
    _press(page, TYPEAHEAD, 0.12)
    _settle(page, widget)
    ahead = _latencies(page)
    stored = _stored(url, study, who) - stored_paced
    ignored = _ignored(page) - ignored_paced
    page.context.close()

    def drawn(xs):
        return [x for x in xs if isinstance(x, (int, float))]

    return {
        "paced": drawn(paced),
        "paced_lost": PACED - stored_paced - ignored_paced,
        "ahead": drawn(ahead),
        "ahead_rated": stored,
        "ahead_ignored": ignored,
        "ahead_lost": TYPEAHEAD - stored - ignored,
    }


def _commit_median(url: str, study: str) -> float:
    """Server-side commit of one rating as the page makes it: ``commit_pending`` of one
    entry (``submit_rating`` with its version, committed)."""
    from sqlalchemy import select

    from data_schemas.widget import RatingEntry
    from medsim_annot.services.rating_queue import commit_pending
    from medsim_annot.storage import get_engine, session_scope
    from medsim_annot.storage.models import Annotator, Study

    eng = get_engine(url)
    with session_scope(eng) as s:
        aid = s.scalar(
            select(Annotator.id)
            .join(Study, Study.id == Annotator.study_id)
            .where(Study.name == study, Annotator.name == "widget")
        )
    times, log = [], {}
    start = _stored(url, study, "widget") + 10
    for i in range(100):
        entry = RatingEntry(
            seq=10_000 + i, position=start + i, value="same", version=0, elapsed_ms=900
        )
        t0 = time.perf_counter()
        commit_pending(aid, [entry], acked=10_000 + i - 1, log=log, engine=eng)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def _serve(env: dict, log: Path, script: str):
    from tests.ports import free_port
    from tests.streamlit_harness import start_streamlit

    port = free_port()
    proc, _ = start_streamlit(env, log, port, script=script)
    return proc, f"http://127.0.0.1:{port}"


def _backend(report, label: str, url: str, browser, tmp: Path) -> None:
    from medsim_annot.storage import get_engine

    get_engine(url)
    study, codes = _study(url)
    env = {**os.environ, "MEDSIM_DATABASE_URL": url, "PYTHONPATH": str(ROOT)}
    proc, base = _serve(env, tmp / f"{label}-widget.log", "serve.py")
    try:
        w = _run_app(browser, base, codes["widget"], True, url, study, "widget")
        de = _run_app(browser, base, codes["german"], True, url, study, "german", "de-DE")
    finally:
        proc.terminate()
        proc.wait(10)
    env_b = {**env, "MEDSIM_BENCH_ACCESS_CODE": codes["rerun"]}
    proc, base = _serve(env_b, tmp / f"{label}-rerun.log", "benchmarks/rerun_baseline/app.py")
    try:
        b = _run_app(browser, base, None, False, url, study, "rerun")
    finally:
        proc.terminate()
        proc.wait(10)

    def pct(xs, q):
        return float(np.percentile(xs, q)) if xs else float("nan")

    for kind, gap in (("paced", "0.3 s"), ("ahead", "120 ms")):
        med, p95 = pct(w[kind], 50), pct(w[kind], 95)
        report(
            f"{label} key press → next pair painted, median ({gap} apart)",
            med,
            "ms",
            baseline=pct(b[kind], 50),
            goal="≤ 16 ms",
            ok=med <= 16,
        )
        report(
            f"{label} key press → next pair painted, p95 ({gap} apart)",
            p95,
            "ms",
            baseline=pct(b[kind], 95),
            goal="≤ 50 ms",
            ok=p95 <= 50,
        )
    for kind, gap in (("paced", "0.3 s"), ("ahead", "120 ms")):
        en_med, de_med = pct(w[kind], 50), pct(de[kind], 50)
        report(
            f"{label} German widget: key press → next pair painted, median ({gap} apart)",
            de_med,
            "ms",
            baseline=en_med,
            goal="within 10% of English (the baseline column)",
            ok=de_med <= en_med * 1.10,
        )
    report(
        f"{label} German widget: presses lost (of {PACED} paced, {TYPEAHEAD} type-ahead)",
        de["paced_lost"] + de["ahead_lost"],
        "presses",
        goal="0",
        ok=de["paced_lost"] + de["ahead_lost"] == 0,
    )
    report(
        f"{label} paced presses lost (of {PACED})",
        w["paced_lost"],
        "presses",
        baseline=b["paced_lost"],
        goal="0",
        ok=w["paced_lost"] == 0,
    )
    report(
        f"{label} type-ahead presses lost (of {TYPEAHEAD}, 120 ms apart)",
        w["ahead_lost"],
        "presses",
        baseline=b["ahead_lost"],
        goal="0",
        ok=w["ahead_lost"] == 0,
    )
    report(
        f"{label} type-ahead presses rated (of {TYPEAHEAD})",
        w["ahead_rated"],
        "presses",
        baseline=b["ahead_rated"],
        lower_is_better=False,
    )
    report(
        f"{label} type-ahead presses shown as ignored (< MIN_VIEW_MS after a pair appeared)",
        w["ahead_ignored"],
        "presses",
    )
    commit = _commit_median(url, study)
    report(
        f"{label} server-side commit of one rating, median",
        commit,
        "ms",
        goal="< 50 ms",
        ok=commit < 50,
    )


def run(report) -> None:
    from tests.streamlit_harness import CHROMIUM, chromium

    if not CHROMIUM.exists():
        print(f"  skipped: {CHROMIUM} not found")
        return
    with tempfile.TemporaryDirectory() as d, chromium() as browser:
        tmp = Path(d)
        _backend(report, "SQLite", f"sqlite:///{tmp / 'bench.db'}", browser, tmp)
        pg = _pg_url()
        if pg:
            _backend(report, "PostgreSQL", pg, browser, tmp)
        else:
            print("  PostgreSQL: skipped (set MEDSIM_BENCH_POSTGRES_URL)")
