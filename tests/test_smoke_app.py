"""Smoke test: `streamlit run serve.py` (what `make run` does) serves the pages, answers
/_stcore/health, and serves the ratings endpoint beside them; the shipped settings are the
production ones (no file watcher)."""

from __future__ import annotations

import json
import os
import tomllib
import urllib.error
import urllib.request

from data_schemas.widget import RATINGS_PATH
from tests.conftest import ROOT
from tests.streamlit_harness import streamlit_server


def test_streamlit_serves_health_pages_and_the_ratings_endpoint(tmp_path):
    env = {**os.environ, "MEDSIM_DATABASE_URL": f"sqlite:///{tmp_path / 'smoke.db'}"}
    with streamlit_server(env, tmp_path / "streamlit.log") as base:
        with urllib.request.urlopen(base + "/_stcore/health", timeout=5) as r:
            assert r.status == 200 and r.read().strip() == b"ok"
        with urllib.request.urlopen(base + "/", timeout=5) as r:
            assert r.status == 200
        req = urllib.request.Request(base + RATINGS_PATH, data=b"{}", method="POST")
        try:
            urllib.request.urlopen(req, timeout=5)
            raise AssertionError("the endpoint answered a request without a token")
        except urllib.error.HTTPError as exc:
            assert exc.code == 401 and json.loads(exc.read())["error"] == "unauthorized"


def test_shipped_settings_are_the_production_ones():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["server"]["fileWatcherType"] == "none"
    assert config["server"]["runOnSave"] is False
    assert config["runner"]["postScriptGC"] is False  # a full GC held each run's last messages
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    run = make.split("\nrun:", 1)[1].split("\n\n", 1)[0]
    assert "streamlit run serve.py" in run and "fileWatcherType" not in run
