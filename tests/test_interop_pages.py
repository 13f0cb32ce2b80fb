"""AppTest of the interop parts of the pages: the Export page's Hugging Face format gives
the same folder as the service (as one ZIP), and the Embedding scoring page offers
installed model packages and models of the local Hugging Face cache."""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from medsim_annot.services.demo import seed_demo
from medsim_annot.services.interop import export_gold_hf
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import get_engine

ROOT = Path(__file__).resolve().parents[1]
ADMIN = {"auth_role": "admin"}


@pytest.fixture
def app_db(db_url, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    return db_url


def _page(name: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / name), default_timeout=120)
    for k, v in ADMIN.items():
        at.session_state[k] = v
    return at.run()


def test_export_page_hf_zip_equals_service_folder(app_db, tmp_path):
    seed_demo(engine=get_engine())
    at = _page("export.py")
    assert not at.exception, at.exception
    at.selectbox(key="export_format").select("hf")
    at.radio(key="export_label_required").set_value("A majority")
    at.number_input(key="export_min_ratings").set_value(0)  # as the service's default
    at.text_input(key="export_license").input("cc-by-4.0")
    at.checkbox(key="export_split").check()
    at.number_input(key="export_seed").set_value(5)
    at.button[0].click().run()
    assert not at.exception, at.exception
    assert at.success and "Hugging Face dataset folder" in at.success[0].value
    res = at.session_state["export_result"]
    # a safe slug of the study name (never the raw name in a path) plus the session's random
    # part (the link cannot be guessed from the content)
    assert re.fullmatch(r"gold-demo-binary-hf-[0-9a-f]{16}\.zip", res["name"]), res["name"]
    out = tmp_path / "hf"
    result = export_gold_hf(
        open_study("demo-binary"),
        out,
        license="cc-by-4.0",
        split=True,
        seed=5,
        require_majority=True,
    )
    with zipfile.ZipFile(io.BytesIO(res["data"])) as z:
        names = sorted(z.namelist())
        assert names == sorted(
            f"gold-demo-binary/{p}"
            for p in (
                "README.md",
                "croissant.json",
                "data/test.parquet",
                "data/train.parquet",
                "manifest.json",
            )
        )
        for f in result.manifest["files"]:
            assert z.read(f"gold-demo-binary/{f['path']}") == (out / f["path"]).read_bytes()
    assert json.loads(res["manifest"]) == result.manifest
