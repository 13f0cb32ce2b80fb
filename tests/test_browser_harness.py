"""The test harness's one chromium per test process (tests/streamlit_harness.py
``chromium``): consecutive blocks share it, each block's contexts are closed when it ends,
and once it is stopped (tests/conftest.py does so before a test that is not a real-browser
test) ``asyncio.run`` works again in the process."""

from __future__ import annotations

import asyncio

import pytest

from tests.streamlit_harness import chromium, close_browser, require_chromium

pytestmark = [pytest.mark.slow, pytest.mark.browser]


@pytest.fixture(autouse=True)
def _chromium_present():
    require_chromium()


def test_consecutive_blocks_share_one_chromium_and_close_their_contexts():
    with chromium() as first:
        kept = first.new_context()
        with chromium() as inner:
            assert inner is first
            page = inner.new_page()
            page.goto("data:text/html,<p>inner</p>")
            assert page.inner_text("p") == "inner"
        assert page.is_closed()  # the inner block's context is closed with it
        assert kept in first.contexts  # the outer block's is not, yet
    assert kept not in first.contexts
    with chromium() as second:
        assert second is first and second.is_connected()
        assert second.contexts == []


def test_a_stopped_chromium_leaves_asyncio_run_working_and_a_new_one_starts():
    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    with chromium() as browser:
        browser.new_page().goto("data:text/html,<p>x</p>")
        pending = answer()
        with pytest.raises(RuntimeError, match="running event loop"):
            asyncio.run(pending)  # what a later test would meet while chromium lives
        pending.close()
    close_browser()
    assert not browser.is_connected()
    assert asyncio.run(answer()) == 42
    with chromium() as again:
        assert again is not browser and again.is_connected()
