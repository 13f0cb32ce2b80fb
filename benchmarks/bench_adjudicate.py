"""The Adjudicate page in a real browser: first pair after sign-in, and decision -> next pair.

Headless Debian chromium (Playwright) against ``streamlit run serve.py`` (started as the
tests start it, :mod:`tests.streamlit_harness`) on a SQLite store holding one binary study of
20,000 pairs x 3 current ratings (the dashboard benchmark's synthetic study, with the
ratings of about three pairs in four changed so that they need a decision: most against the
automatic label, some with three different answers). An adjudicator signs in with their
access code; timed:

* **first pair** — from the Enter of the sign-in to the first pair on screen, on a server
  that has just started (nothing computed yet);
* **decision -> next pair** — from the Enter that saves a decision (label ``1``, reason
  ``r``) to the next pair on screen; the median of :data:`DECISIONS` decisions.

Baseline, in the same run: today's path before the board was kept (issue 32, bug 2), which
rebuilt the gold table from the store and fitted Dawid–Skene again on every rerun and after
every decision — timed here as that rebuild's function calls at the same size
(:func:`rebuild_as_before`; the page's own work came on top of it). Beside them: the kept
board's own cold cost, :func:`board_from_nothing`.

Goal (issue 32): at 20,000 pairs, first pair ≤ 3 s after Enter on a cold server, decision ->
next pair ≤ 0.5 s. ``python -m benchmarks.bench_adjudicate --pairs 2000`` is a quick run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks._baseline import loadavg

N_PAIRS = 20_000
DECISIONS = 10
FIRST_GOAL = 3.0
NEXT_GOAL = 0.5
ROOT = Path(__file__).resolve().parents[1]
JUDGE = "Dr Bench"


def seed_study(url: str, n_pairs: int) -> tuple[str, str]:
    """A study of *n_pairs* pairs x 3 current ratings in the store at *url*, about three in
    four needing a decision, and an adjudicator; (study name, the adjudicator's code)."""
    from benchmarks.bench_dashboard import _store, synthetic
    from medsim_annot.services import activity
    from medsim_annot.services.people import adjudicators as people
    from medsim_annot.services.study_handle import open_study
    from medsim_annot.storage import dispose_all, get_engine

    name = f"bench-adjudicate-{n_pairs}"
    pairs, current = synthetic(n_pairs)
    rng = np.random.default_rng(32)
    u = rng.random(n_pairs)
    label = pairs["auto_label"].to_numpy(dtype=int)
    votes = current["rating"].to_numpy(dtype=object).reshape(n_pairs, 3)
    names = np.array(["not_same", "same"], dtype=object)
    against = u < 0.62  # two of three say the opposite of the automatic label
    votes[against, 0] = names[1 - label[against]]
    votes[against, 1] = names[1 - label[against]]
    votes[against, 2] = names[label[against]]
    split = (u >= 0.62) & (u < 0.72)  # three different answers: no majority
    votes[split] = np.array(["same", "not_same", "dont_know"], dtype=object)
    current["rating"] = votes.ravel()
    with activity.acting_as("admin:bench"):
        _store(pairs, current, name, get_engine(url))
        code = people.add_adjudicator(open_study(name, engine=get_engine(url)), JUDGE).access_code
    dispose_all()
    return name, code


def rebuild_as_before(study: str, engine) -> float:
    """Seconds of the board's rebuild before it was kept (issue 32, bug 2), which every rerun
    of the page and every decision paid: the gold table read and built from the store, the
    Dawid–Skene fit and its columns, the decision history, and the queue's group labels
    joined row by row, twice, as it did (the queue's small arithmetic left out)."""
    from data_schemas import columns as C
    from medsim_annot.services.adjudication.decisions import decisions_frame
    from medsim_annot.services.gold import table as gold_svc
    from medsim_annot.services.study_handle import open_study
    from medsim_annot.stats.aggregate import model_gold

    t0 = time.perf_counter()
    handle = open_study(study, engine=engine)
    gt = gold_svc.study_gold_table(handle)
    fit = model_gold(gt.ratings, "dawid-skene")
    gold_svc.add_model_columns(gt, "dawid-skene", fit=fit)
    decisions_frame(handle)
    cols = [c for c in C.GROUP_COLUMNS if c in gt.table.columns]
    for _ in range(2):
        gt.table[cols].astype("string").fillna("").agg(" / ".join, axis=1)
    return time.perf_counter() - t0


def board_from_nothing(study: str, engine) -> float:
    """Seconds of :func:`~medsim_annot.services.adjudication.board.board` with nothing kept
    (no board, no dashboard): what the first pair after a start costs on the server. The
    second of two calls: the first pays the process's first dashboard (lazy imports)."""
    from medsim_annot.services import dashboard
    from medsim_annot.services.adjudication import board
    from medsim_annot.services.study_handle import open_study

    seconds = []
    for _ in range(2):
        board.BOARDS.clear()
        dashboard.clear_cache()
        t0 = time.perf_counter()
        board.board(open_study(study, engine=engine))
        seconds.append(time.perf_counter() - t0)
    return seconds[-1]


def _position(page):
    return page.get_by_test_id("adj-position")


def sign_in_timed(page, base: str, code: str, timeout: float = 120) -> tuple[float, str]:
    """Type the adjudicator's code and press Enter; the seconds to the first pair on screen
    and the position line it shows."""
    page.goto(base + "/")
    field = page.get_by_label("Access code")
    field.wait_for(timeout=timeout * 1000)
    try:
        page.get_by_test_id("stStatusWidget").wait_for(state="hidden", timeout=60000)
    except Exception:
        pass
    time.sleep(0.5)
    field.fill(code)
    t0 = time.perf_counter()
    field.press("Enter")
    _position(page).get_by_text("Pair 1 of").wait_for(timeout=timeout * 1000)
    return time.perf_counter() - t0, _position(page).inner_text()


def decide_timed(page, before: str, timeout: float = 120) -> tuple[float, str]:
    """Decide the pair on screen (label 1, reason r, Enter); the seconds from the Enter to
    the next pair on screen, and its position line."""
    page.keyboard.press("1")
    page.wait_for_selector('[data-testid="adj-options"] [aria-checked="true"]', timeout=30000)
    page.keyboard.press("r")
    page.wait_for_selector('[data-testid="adj-reasons"] [aria-checked="true"]', timeout=30000)
    t0 = time.perf_counter()
    page.keyboard.press("Enter")
    deadline = t0 + timeout
    while time.perf_counter() < deadline:
        now = _position(page).inner_text()
        if now != before:
            return time.perf_counter() - t0, now
        time.sleep(0.01)
    raise TimeoutError("the next pair did not show")


def measure(n_pairs: int) -> dict[str, float]:
    """Seed, start the server, time in chromium; the figures and the baseline."""
    from medsim_annot.storage import dispose_all, get_engine
    from tests.streamlit_harness import chromium, start_streamlit

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        url = f"sqlite:///{tmp / 'bench.db'}"
        get_engine(url)
        study, code = seed_study(url, n_pairs)
        env = {**os.environ, "MEDSIM_DATABASE_URL": url, "PYTHONPATH": str(ROOT)}
        with chromium() as browser:
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            print(f"  load average before the start: {loadavg()}", flush=True)
            proc, base = start_streamlit(env, tmp / "streamlit.log")
            try:
                first, shown = sign_in_timed(page, base, code)
                print(f"  first screen: {shown!r}", flush=True)
                nexts = []
                for _ in range(DECISIONS):
                    seconds, shown = decide_timed(page, shown)
                    nexts.append(seconds)
                print(f"  last screen: {shown!r}", flush=True)
            finally:
                proc.terminate()
                proc.wait(10)
        print(f"  load average after: {loadavg()}", flush=True)
        before = rebuild_as_before(study, get_engine(url))
        cold = board_from_nothing(study, get_engine(url))
        dispose_all()
    return {"first": first, "next": statistics.median(nexts), "before": before, "cold": cold}


def run(report, n_pairs: int = N_PAIRS) -> None:
    from tests.streamlit_harness import CHROMIUM

    if not CHROMIUM.exists():
        print(f"  skipped: {CHROMIUM} not found")
        return
    f = measure(n_pairs)
    size = f"{n_pairs:,} pairs x 3, SQLite"
    report(
        f"Adjudicate: Enter -> first pair, cold server ({size})",
        f["first"],
        "s",
        baseline=f["before"],
        goal=f"≤ {FIRST_GOAL} s",
        ok=f["first"] <= FIRST_GOAL,
    )
    report(
        f"Adjudicate: decision -> next pair, median of {DECISIONS} ({size})",
        f["next"],
        "s",
        baseline=f["before"],
        goal=f"≤ {NEXT_GOAL} s",
        ok=f["next"] <= NEXT_GOAL,
    )
    report(f"Adjudication board() rebuilt from nothing, function call ({size})", f["cold"], "s")


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(ROOT))
    from benchmarks.__main__ import report as _report

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=N_PAIRS, help="pairs in the study")
    run(_report, parser.parse_args().pairs)
