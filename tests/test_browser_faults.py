"""App servers failing under annotators in real browsers.

SQLite: one app server is killed with SIGKILL while an annotator rates; after a restart the
annotator signs in again and resumes at the first pair without a rating. PostgreSQL: two app
servers on one database with an annotator on each; one server is killed mid-run, the other
annotator keeps rating undisturbed, and the first resumes on a restarted server. In both,
every acknowledged rating (the next pair was drawn) is stored exactly once.
"""

from __future__ import annotations

import os
import signal
from concurrent.futures import ThreadPoolExecutor, wait

import pytest

from medsim_annot.services.study_handle import open_study
from tests.conftest import ROOT
from tests.faults import make_study
from tests.streamlit_harness import chromium, require_chromium, start_streamlit
from tests.widget_drive import wait_shown

PAIRS = 12
WAIT_MS = 90000  # a loaded CI machine starts streamlit pages slowly


def _ready(page, pos: int) -> None:
    """The annotation widget draws the pair at *pos* (widget elements sit in an open shadow
    root, which Playwright's CSS selectors pierce)."""
    page.wait_for_selector(
        f'[data-testid="medsim-pair"][data-position="{pos}"]', state="visible", timeout=WAIT_MS
    )


def _all_saved(page) -> None:
    """The widget reports every rating acknowledged by the server (committed)."""
    page.locator('[data-testid="medsim-save-status"]').get_by_text(
        "All saved", exact=True
    ).wait_for(timeout=WAIT_MS)


def _sign_in(page, base: str, code: str) -> int:
    page.goto(base + "/", timeout=WAIT_MS)
    page.get_by_label("Access code").fill(code, timeout=WAIT_MS)
    page.get_by_role("button", name="Sign in", exact=True).click(timeout=WAIT_MS)
    page.wait_for_selector('[data-testid="medsim-pair"]', state="visible", timeout=WAIT_MS)
    return int(page.get_attribute('[data-testid="medsim-pair"]', "data-position"))


def _rate(page, start: int, n: int, acked: list[int]) -> None:
    for pos in range(start, start + n):
        _ready(page, pos)
        wait_shown(page, timeout=WAIT_MS)  # past the minimum view time, on the page's clock
        page.keyboard.press("1" if pos % 2 else "2")
        _ready(page, pos + 1)
        _all_saved(page)
        acked.append(pos)  # the widget shows it saved: the server acknowledged it


def _stored(study: str, name: str) -> list[str]:
    from medsim_annot.services.studies import rating_history

    hist = rating_history(open_study(study))
    return hist.loc[hist["annotator"] == name, "pair_id"].tolist()


@pytest.fixture
def app_env(backend_url):
    require_chromium()
    return {**os.environ, "MEDSIM_DATABASE_URL": backend_url, "PYTHONPATH": str(ROOT)}


def test_app_server_killed_mid_run_and_two_servers(app_env, backend_url, tmp_path):
    from medsim_annot.services.people.annotators import issue_code
    from medsim_annot.storage import get_engine

    codes = {}
    engine = get_engine(backend_url)
    idents = make_study("s", PAIRS, ["doc_a", "doc_b"], engine=engine)
    for ident in idents:  # make_study signed them in; fresh codes to type in the browser
        codes[ident.name] = issue_code(open_study("s"), ident.name)
    postgres = engine.dialect.name == "postgresql"
    # Server starts wait mostly on the child process: on PostgreSQL the two servers start
    # side by side (threads that only start and poll them; the browser stays in this one).
    pool = ThreadPoolExecutor(2)
    starting = [
        pool.submit(start_streamlit, app_env, tmp_path / f"{n}.log") for n in "ab"[: 1 + postgres]
    ]
    wait(starting)
    procs = [f.result()[0] for f in starting if f.exception() is None]
    for f in starting:
        if f.exception() is not None:  # a start failed: stop the other, report the failure
            for p in procs:
                p.kill()
            pool.shutdown()
            f.result()
    a_proc, a_base = starting[0].result()
    b_proc, b_base = starting[1].result() if postgres else (None, a_base)
    try:
        with chromium() as browser:
            pa = browser.new_context().new_page()
            pb = browser.new_context().new_page()
            acked_a: list[int] = []
            acked_b: list[int] = []
            assert _sign_in(pa, a_base, codes["doc_a"]) == 0
            assert _sign_in(pb, b_base, codes["doc_b"]) == 0
            _rate(pa, 0, 3, acked_a)
            _rate(pb, 0, 3, acked_b)
            if postgres:  # doc_b's server is another process: it keeps working
                wait_shown(pb, timeout=WAIT_MS)  # past the minimum view time
                pb.keyboard.press("1")
            os.kill(a_proc.pid, signal.SIGKILL)  # mid-run, maybe mid-save of doc_b on SQLite
            a_proc.wait(30)
            restart = pool.submit(start_streamlit, app_env, tmp_path / "a2.log")
            try:
                if postgres:  # while the killed server's replacement starts
                    _ready(pb, 4)
                    _all_saved(pb)
                    acked_b.append(3)
                    _rate(pb, 4, 2, acked_b)
            finally:
                wait([restart])
                if restart.exception() is None:
                    procs.append(restart.result()[0])
            a2_proc, a2_base = restart.result()
            # Sign in again (a new session): resume at the first pair without a rating.
            assert _sign_in(pa, a2_base, codes["doc_a"]) == len(acked_a)
            _rate(pa, len(acked_a), 2, acked_a)
            if not postgres:
                assert _sign_in(pb, a2_base, codes["doc_b"]) == len(acked_b)
                _rate(pb, len(acked_b), 2, acked_b)
    finally:
        pool.shutdown()
        for p in procs:
            if p is not None and p.poll() is None:
                p.kill()
                p.wait(30)
    for name, acked in (("doc_a", acked_a), ("doc_b", acked_b)):
        stored = _stored("s", name)
        assert sorted(stored) == sorted(f"p{i}" for i in acked), name  # once each, none lost
    if not postgres:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
