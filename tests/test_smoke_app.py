"""Smoke test: `streamlit run app.py` serves, and /_stcore/health answers 200."""

from __future__ import annotations

import os
import urllib.request

from tests.streamlit_harness import streamlit_server


def test_streamlit_serves_health(tmp_path):
    env = {**os.environ, "MEDSIM_DATABASE_URL": f"sqlite:///{tmp_path / 'smoke.db'}"}
    with streamlit_server(env, tmp_path / "streamlit.log") as base:
        with urllib.request.urlopen(base + "/_stcore/health", timeout=5) as r:
            assert r.status == 200 and r.read().strip() == b"ok"
        with urllib.request.urlopen(base + "/", timeout=5) as r:
            assert r.status == 200
