"""Real-browser tests: Playwright (sync API) drives Debian's chromium against a running
``streamlit run serve.py`` with a temporary SQLite database (the run's shared app server,
tests/conftest.py ``served_app``; this module's studies are its own by name).

Skipped when /usr/bin/chromium is missing, unless MEDSIM_REQUIRE_BROWSER=1 (CI), which makes
a missing browser a failure.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pandas as pd
import pytest

from tests.conftest import ROOT, SERVED_APP_PASSWORD
from tests.streamlit_harness import chromium, run_setup, sign_in_admin
from tests.widget_drive import wait_shown

ADMIN_PASSWORD = SERVED_APP_PASSWORD
# Distinctive strings that must never reach an annotator's browser.
SECRETS = [
    "QQXDATASETALPHAQQ",
    "QQXDATASETBETAQQ",
    "QQXCONCEPTQQ",
    "QQXPAIRIDQQ",
    "auto_label",
    "levenshtein",
    "negative_strategy",
]
N_PAIRS = 14

pytestmark = [pytest.mark.slow, pytest.mark.browser]


def _pairs_frame() -> pd.DataFrame:
    n = N_PAIRS
    return pd.DataFrame(
        {
            "pair_id": [f"QQXPAIRIDQQ{i:02d}" for i in range(n)],
            "term_1": [f"myocardial infarction {i}" for i in range(n)],
            "term_2": [f"heart attack {i}" for i in range(n)],
            "auto_label": [str(i % 2) for i in range(n)],
            "dataset": [
                "QQXDATASETALPHAQQ" if i < n // 2 else "QQXDATASETBETAQQ" for i in range(n)
            ],
            "difficulty": ["hard"] * n,
            "negative_strategy": ["levenshtein"] * n,
            "concept_id_1": [f"QQXCONCEPTQQ{i}" for i in range(n)],
            "concept_id_2": [f"QQXCONCEPTQQ{i + 100}" for i in range(n)],
        }
    )


@pytest.fixture(scope="module")
def server(served_app, tmp_path_factory):
    """The run's shared app server (tests/conftest.py); this module's studies are named
    browser-study and blind-study."""
    tmp = tmp_path_factory.mktemp("browser")
    pairs_file = tmp / "pairs.csv"
    _pairs_frame().to_csv(pairs_file, index=False)
    return {**served_app, "pairs": pairs_file, "tmp": tmp}


@pytest.fixture(scope="module")
def browser(server):
    with chromium() as b:
        yield b


def _position(page) -> int:
    return int(page.get_attribute('[data-testid="medsim-pair"]', "data-position"))


def _wait_position(page, pos: int) -> None:
    page.wait_for_selector(
        f'[data-testid="medsim-pair"][data-position="{pos}"]', state="visible", timeout=60000
    )


def _press(page, key: str) -> None:
    """A key press as a doctor makes it: once the pair on screen has been shown for the
    minimum view time on the page's own clock (the widget ignores a press sooner), however
    slow the page is, instead of a fixed sleep."""
    wait_shown(page)
    page.keyboard.press(key)


def _widget_html(page) -> str:
    """The annotation widget's own DOM (a shadow root, which page.content() leaves out)."""
    return page.evaluate(
        "() => [...document.querySelectorAll('[data-testid=stBidiComponentIsolated]')]"
        ".map(h => h.shadowRoot ? h.shadowRoot.innerHTML : '').join('')"
    )


def _sign_in_annotator(page, base: str, code: str) -> None:
    page.goto(base + "/")
    page.get_by_label("Access code").fill(code)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_selector('[data-testid="medsim-pair"]', state="visible", timeout=60000)


def _sign_in_admin(page, base: str) -> None:
    sign_in_admin(page, base, ADMIN_PASSWORD, timeout=60000)


def test_admin_creates_study_annotator_rates_resumes_and_changes(server, browser):
    base = server["base"]
    admin = browser.new_context().new_page()
    _sign_in_admin(admin, base)
    admin.get_by_label("Study name").fill("browser-study")
    admin.locator(".st-key-setup_upload input[type=file]").set_input_files(str(server["pairs"]))
    admin.get_by_text(f"{N_PAIRS} valid pairs").wait_for(timeout=60000)
    admin.get_by_label("One name per line").fill("doc_a\ndoc_b")
    admin.get_by_label("One name per line").press("Tab")
    create = admin.get_by_role("button", name="Create study")
    admin.wait_for_function(
        "() => { const b = [...document.querySelectorAll('button')]"
        ".find(x => x.innerText.includes('Create study'));"
        " return b && !b.disabled; }",
        timeout=60000,
    )
    create.click()
    admin.locator(".st-key-setup_created").wait_for(timeout=60000)
    codes_text = admin.locator(".st-key-setup_created code").inner_text()
    codes = dict(re.findall(r"(doc_[ab]): ([A-Z0-9-]+)", codes_text))
    assert set(codes) == {"doc_a", "doc_b"}

    page = browser.new_context().new_page()
    _sign_in_annotator(page, base, codes["doc_a"])
    assert _position(page) == 0
    pressed = {}
    keys = ["1", "2", "1", "3", "2", "1", "1", "2", "3", "1"]
    for i, key in enumerate(keys):
        assert _position(page) == i
        _press(page, key)
        _wait_position(page, i + 1)
        pressed[i] = key
    page.get_by_text(f"10 / {N_PAIRS} rated").wait_for()
    page.locator('[data-testid="medsim-save-status"]').get_by_text("All saved").wait_for()

    page.reload()  # a reload starts a new session: sign in again, resume at pair 11
    _sign_in_annotator(page, base, codes["doc_a"])
    assert _position(page) == 10
    page.get_by_text(f"10 / {N_PAIRS} rated").wait_for()

    terms_before = page.locator('[data-testid="medsim-term-1"]').inner_text()
    _press(page, "Backspace")
    _wait_position(page, 9)
    assert page.locator('[data-testid="medsim-term-1"]').inner_text() != terms_before
    changed_term = page.locator('[data-testid="medsim-term-1"]').inner_text()
    _press(page, "2")  # was "1": a change, saved as a new rating
    _wait_position(page, 10)
    page.locator('[data-testid="medsim-save-status"]').get_by_text("All saved").wait_for()

    out = server["tmp"] / "export.csv"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "medsim_annot",
            "study",
            "export",
            "browser-study",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        env=server["env"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    exported = pd.read_csv(out, dtype=str, keep_default_na=False)
    mine = exported[exported["annotator"] == "doc_a"]
    assert len(mine) == 10
    assert mine["pair_id"].is_unique
    assert (exported["annotator"] == "doc_b").sum() == 0
    want = {"1": "same", "2": "not_same", "3": "dont_know"}
    counts = mine["rating"].value_counts().to_dict()
    expected = pd.Series([want[k] for k in keys[:9]] + [want["2"]]).value_counts().to_dict()
    assert counts == expected
    # The changed pair holds the new value.
    number = changed_term.rsplit(" ", 1)[1]
    changed = mine[mine["pair_id"] == f"QQXPAIRIDQQ{int(number):02d}"]
    assert changed["rating"].tolist() == ["not_same"]


def test_annotator_is_blind_and_cannot_open_admin_pages(server, browser):
    env = server["env"]
    code = (
        "import pandas as pd, json; from data_schemas.scales import RELATEDNESS_0_3;"
        "from medsim_annot.services.studies import create_study, load_pairs;"
        f"p = load_pairs({str(server['pairs'])!r});"
        "r = create_study('blind-study', p, RELATEDNESS_0_3, ['viewer']);"
        "print(r['annotators'][0]['access_code'])"
    )
    access = run_setup(code, env).strip().splitlines()[-1]

    page = browser.new_context().new_page()
    frames: list[bytes] = []
    page.on(
        "websocket",
        lambda ws: ws.on(
            "framereceived", lambda f: frames.append(f if isinstance(f, bytes) else f.encode())
        ),
    )
    _sign_in_annotator(page, server["base"], access)
    seen_html = [page.content(), _widget_html(page)]
    for key in ["0", "3", "2"]:
        pos = _position(page)
        _press(page, key)
        _wait_position(page, pos + 1)
        seen_html += [page.content(), _widget_html(page)]
    _press(page, "u")  # unclear flag on the 0-3 scale
    assert page.get_attribute('[data-testid="medsim-unclear"]', "aria-pressed") == "true"
    _press(page, "Backspace")
    page.locator('[data-testid="medsim-save-status"]').get_by_text("All saved").wait_for()
    # The guideline fold is open at a first sign-in (issue 33): its text is on the page.
    page.get_by_text("Guidelines and scale").first.wait_for()
    page.get_by_text("Schulz et al. (COLING 2020)").first.wait_for()
    seen_html += [page.content(), _widget_html(page)]
    assert "Extremely related" in seen_html[-1]  # the widget's own DOM was captured
    # Annotators get only the Annotate page; admin pages are not even in their navigation.
    assert page.get_by_role("heading", name="Study setup").count() == 0
    for path in ("/setup", "/dashboard", "/export", "/scoring"):
        page.goto(server["base"] + path)
        page.get_by_label("Access code").wait_for(timeout=60000)
        assert page.get_by_role("heading", name="Study setup").count() == 0
        assert page.locator(".st-key-setup_name").count() == 0
        seen_html.append(page.content())
    assert frames, "no websocket traffic captured"
    for secret in SECRETS:
        for html in seen_html:
            assert secret not in html
        for f in frames:
            assert secret.encode() not in f, f"{secret} was sent to the annotator's browser"
