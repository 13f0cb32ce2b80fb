"""Real browsers on an active-serving study (issue 36): three doctors rate at once in three
chromium contexts; the group stops when its (inverse-probability weighted) interval is
tight, every stored rating is there exactly once, only drawn pairs are served, and nothing
of the model (its name, its scores) reaches a doctor's browser. Served by the run's shared
app (tests/conftest.py ``served_app``)."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from data_schemas.scales import BINARY
from medsim_annot.services import stopping as S
from medsim_annot.services.active_serving import create_active_study
from medsim_annot.services.design import DesignOptions
from medsim_annot.services.studies import rating_history
from medsim_annot.services.study_handle import open_study
from medsim_annot.storage import dispose_all, get_engine
from tests.streamlit_harness import chromium

pytestmark = [pytest.mark.slow, pytest.mark.browser]

MODEL = "QQXMODELNAMEQQ"
N = 60
DOCTORS = ["doc_a", "doc_b", "doc_c"]


def _world():
    rng = np.random.default_rng(36)
    label = np.arange(N) % 2
    sure = rng.random(N) < 0.75
    right = np.where(sure, True, rng.random(N) < 0.5)
    same = (label == 1) == right
    p = np.where(sure, np.where(label == 1, 0.9712345, 0.0312345), 0.5012345)
    pairs = pd.DataFrame(
        {
            "pair_id": [f"QQXPAIRQQ{i}" for i in range(N)],
            "term_1": [f"finding {i}" for i in range(N)],
            "term_2": [f"disorder {i}" for i in range(N)],
            "auto_label": label,
            "dataset": "g",
        }
    )
    return pairs, same, p


@pytest.fixture(scope="module")
def server(served_app, tmp_path_factory):
    """The study ``active3`` in the run's shared app server (tests/conftest.py
    ``served_app``)."""
    tmp = tmp_path_factory.mktemp("browser_active")
    url = served_app["url"]
    pairs, same, p = _world()
    scores = tmp / "scores.csv"
    pd.DataFrame({"pair_id": pairs["pair_id"], "p": p}).to_csv(scores, index=False)
    engine = get_engine(url)
    res = create_active_study(
        "active3",
        pairs,
        BINARY,
        DOCTORS,
        DesignOptions(
            group_by=["dataset"],
            seed=4,
            per_item=1,
            target_ci=0.25,
            min_positives=4,
            min_negatives=4,
        ),
        scores,
        prediction_name=MODEL,
        engine=engine,
    )
    codes = {a["name"]: a["access_code"] for a in res.annotators}
    yield {"base": served_app["base"], "url": url, "codes": codes, "same": same}
    dispose_all()


def _sign_in(page, base: str, code: str) -> None:
    page.goto(base + "/")
    page.get_by_label("Access code").fill(code)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_selector('[data-testid="medsim-pair"]', state="visible", timeout=60000)


def _ended(page) -> bool:
    return page.locator('[data-testid="medsim-end"]').is_visible()


def _widget_html(page) -> str:
    return page.evaluate(
        "() => [...document.querySelectorAll('[data-testid=stBidiComponentIsolated]')]"
        ".map(h => h.shadowRoot ? h.shadowRoot.innerHTML : '').join('')"
    )


def test_three_browsers_rate_an_active_study(server):
    same = server["same"]
    with chromium() as browser:
        pages = {}
        for d in DOCTORS:
            page = browser.new_context().new_page()
            _sign_in(page, server["base"], server["codes"][d])
            pages[d] = page
        html: list[str] = []
        presses = 0
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            active = [d for d, pg in pages.items() if not _ended(pg)]
            if not active:
                break
            for d in active:
                page = pages[d]
                if _ended(page):
                    continue
                pos = page.get_attribute('[data-testid="medsim-pair"]', "data-position")
                term = page.locator('[data-testid="medsim-term-1"]').inner_text()
                i = int(term.rsplit(" ", 1)[1])
                time.sleep(0.25)  # a doctor looks at the pair first (MIN_VIEW_MS)
                page.keyboard.press("1" if same[i] else "2")
                presses += 1
                page.wait_for_function(
                    "(pos) => { const p = document.querySelector("
                    "'[data-testid=stBidiComponentIsolated]');"
                    " const root = p && p.shadowRoot;"
                    " if (!root) return false;"
                    " const end = root.querySelector('[data-testid=medsim-end]');"
                    " const pair = root.querySelector('[data-testid=medsim-pair]');"
                    " return (end && !end.hidden) || (pair && pair.dataset.position !== pos); }",
                    arg=pos,
                    timeout=60000,
                )
            for pg in pages.values():
                html.append(_widget_html(pg))
        for pg in pages.values():
            assert _ended(pg)
            pg.locator('[data-testid="medsim-save-status"]').get_by_text("All saved").wait_for(
                timeout=60000
            )
            html.append(_widget_html(pg) + pg.content())
    study = open_study("active3", engine=get_engine(server["url"]))
    hist = rating_history(study)
    assert len(hist) == presses  # every press stored, once
    assert not hist.duplicated(subset=["annotator", "pair_id"]).any()
    status = S.audit_status(study)
    assert status is not None and "active PPI++" in status.method
    assert status.groups["status"].tolist() == ["stopped"]
    blob = "\n".join(html)
    for secret in (MODEL, "QQXPAIRQQ", "9712345", "0312345", "5012345", "auto_label"):
        assert secret not in blob, secret
