"""Rating by touch next to rating by keys: taps, stored, refused double taps, tap -> next pair.

Headless Debian chromium (Playwright) against ``streamlit run serve.py`` (SQLite, a temporary
file), one study of 200 pairs per run. Three runs, each with the same schedule: PACED inputs
0.3 s apart on the pair painted, then DOUBLES double inputs (two back to back on one answer):

- keyboard: a desktop window (1280x800), the rating keys;
- phone: 390x844, an emulated touch screen, taps on the answer buttons;
- tablet: 820x1180, the same.

The keyboard run is the baseline the touch figures stand next to. Recorded in the page
(tests/widget_drive.py): each input, the pair before and after the widget took it, and the
first animation frame after it; "tap -> next pair" is that frame's time minus the input's
event time (page clock), and "handled -> painted" the same from the moment the page took the
input (without the time the input waited for a busy page). Goals: every accepted input stored exactly once (stored = accepted),
the second input of every double within the minimum view time refused, the next pair in the
frame after every accepted input, tap -> next pair median <= 16 ms (one frame at 60 Hz).
Environment: ``MEDSIM_BENCH_TOUCH_PACED`` (default 30), ``MEDSIM_BENCH_TOUCH_DOUBLES``
(default 5).
"""

from __future__ import annotations

import os
import statistics
import tempfile
from pathlib import Path

import pandas as pd

from medsim_annot.services.study_handle import open_study

PACED = int(os.environ.get("MEDSIM_BENCH_TOUCH_PACED", "30"))
DOUBLES = int(os.environ.get("MEDSIM_BENCH_TOUCH_DOUBLES", "5"))
N_PAIRS = 200
ROOT = Path(__file__).resolve().parents[1]


def _study(url: str, name: str) -> str:
    from data_schemas.scales import BINARY
    from medsim_annot.services.studies import create_study
    from medsim_annot.storage import get_engine

    pairs = pd.DataFrame(
        {
            "pair_id": [f"{name}{i}" for i in range(N_PAIRS)],
            "term_1": [f"{name} alpha {i}" for i in range(N_PAIRS)],
            "term_2": [f"{name} beta {i}" for i in range(N_PAIRS)],
        }
    )
    r = create_study(name, pairs, BINARY, ["doc"], engine=get_engine(url))
    return r["annotators"][0]["access_code"]


def _stored(url: str, study: str) -> int:
    from medsim_annot.services.studies import rating_history
    from medsim_annot.storage import get_engine

    return len(rating_history(open_study(study, engine=get_engine(url))))


def _one(browser, base: str, url: str, kind: str):
    from tests.widget_drive import (
        PHONE,
        RECORDER,
        TABLET,
        acts,
        figures,
        key_schedule,
        tap_schedule,
        wait_drawn,
    )

    code = _study(url, f"bench{kind}")
    spec = {"phone": PHONE, "tablet": TABLET}.get(
        kind, {"viewport": {"width": 1280, "height": 800}}
    )
    context = browser.new_context(**spec)
    page = context.new_page()
    page.goto(base + "/")
    page.get_by_label("Access code").fill(code)
    page.get_by_label("Access code").press("Enter")
    wait_drawn(page, timeout=60000)
    page.evaluate(RECORDER)
    if kind == "keyboard":
        key_schedule(page, ["1", "2"] * (PACED // 2), 0.3, DOUBLES)
        recorded = [a for a in acts(page, "keydown") if a["value"] in ("1", "2")]
    else:
        tap_schedule(page, ["same", "not_same"] * (PACED // 2), 0.3, DOUBLES)
        recorded = acts(page, "click")
    page.locator('[data-testid="medsim-save-status"]').get_by_text(
        "All saved", exact=True
    ).wait_for(timeout=60000)
    fig = figures(kind, recorded, _stored(url, f"bench{kind}"), DOUBLES)
    context.close()
    return fig


def run(report) -> None:
    from tests.streamlit_harness import CHROMIUM, chromium, streamlit_server

    if not CHROMIUM.exists():
        print(f"  skipped: {CHROMIUM} not found")
        return
    with tempfile.TemporaryDirectory() as d:
        url = f"sqlite:///{Path(d) / 'bench.db'}"
        env = {**os.environ, "MEDSIM_DATABASE_URL": url, "PYTHONPATH": str(ROOT)}
        from medsim_annot.storage import get_engine

        get_engine(url)  # migrate before the server starts
        with streamlit_server(env, Path(d) / "streamlit.log") as base, chromium() as browser:
            figs = {k: _one(browser, base, url, k) for k in ("keyboard", "phone", "tablet")}
    key = figs["keyboard"]
    key_med = statistics.median(key.next_ms) if key.next_ms else 0.0
    for kind, fig in figs.items():
        print(f"  {fig.line()}", flush=True)
        med = statistics.median(fig.next_ms) if fig.next_ms else float("nan")
        report(
            f"{kind}: input -> next pair painted, median",
            med,
            "ms",
            baseline=None if kind == "keyboard" else key_med,
            goal="<= 16 ms",
            ok=med <= 16,
        )
        draw = statistics.median(fig.draw_ms) if fig.draw_ms else float("nan")
        report(f"{kind}: input handled -> next pair painted, median", draw, "ms")
        report(
            f"{kind}: stored / accepted inputs ({fig.inputs} inputs)",
            fig.stored,
            "ratings",
            goal=f"= {fig.accepted}",
            ok=fig.stored == fig.accepted,
            lower_is_better=False,
        )
        report(
            f"{kind}: refused second inputs of {DOUBLES} doubles",
            fig.refused_double,
            "inputs",
            goal=f">= {fig.doubles_inside} (the doubles inside the minimum view time)",
            ok=fig.refused_double >= fig.doubles_inside and fig.refused == fig.refused_double,
            lower_is_better=False,
        )
        report(
            f"{kind}: next pair in the frame after the input",
            fig.same_frame,
            "inputs",
            goal=f"= {fig.accepted}",
            ok=fig.same_frame == fig.accepted,
            lower_is_better=False,
        )
