"""Real browser: the start page and an admin's pages fetch nothing from outside the app's
own host (hospital networks block or log outside calls; the tab icon used to come from an
outside font host). Skipped without /usr/bin/chromium unless MEDSIM_REQUIRE_BROWSER=1."""

from __future__ import annotations

import os
from urllib.parse import urlparse

import pytest

from tests.conftest import ROOT
from tests.streamlit_harness import chromium, require_chromium, sign_in_admin, streamlit_server

pytestmark = [pytest.mark.slow, pytest.mark.browser]

PASSWORD = "offsite-admin-password"


def test_no_request_leaves_the_app_host(tmp_path):
    require_chromium()
    env = {
        **os.environ,
        "MEDSIM_DATABASE_URL": f"sqlite:///{tmp_path / 'medsim.db'}",
        "MEDSIM_ADMIN_PASSWORD": PASSWORD,
        "PYTHONPATH": str(ROOT),
    }
    with streamlit_server(env, tmp_path / "streamlit.log") as base, chromium() as browser:
        page = browser.new_page()
        hosts: set[str] = set()
        page.on("request", lambda r: hosts.add(urlparse(r.url).netloc))
        page.goto(base + "/")
        page.get_by_label("Access code").wait_for(timeout=60000)
        page.wait_for_timeout(2000)
        sign_in_admin(page, base, PASSWORD)
        page.wait_for_timeout(2000)
        outside = {h for h in hosts if h and h != urlparse(base).netloc}
        assert not outside, f"requests left the app's host: {sorted(outside)}"
