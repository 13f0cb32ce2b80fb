"""Real-browser single sign-on: Streamlit's OIDC login against a real OpenID Connect
provider process (``oidc-provider-mock``) started by the test.

An admin on the configured ``admins`` list, a named admin linked by SSO identity and an
annotator linked to their SSO subject in a study that allows SSO each sign in and are mapped
to their role; signing out ends the session (and goes through the provider's end-session
page); a user on no list is refused. Skipped without /usr/bin/chromium unless
MEDSIM_REQUIRE_BROWSER=1.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.conftest import ROOT
from tests.ports import free_port
from tests.streamlit_harness import chromium, require_chromium, streamlit_server

pytestmark = [pytest.mark.slow, pytest.mark.browser]

USERS = [
    {
        "sub": "chief-sub",
        "email": "chief@hospital.example",
        "email_verified": True,
        "name": "Chief",
    },
    {"sub": "bob-sub", "email": "bob@hospital.example", "email_verified": True, "name": "Bob"},
    {
        "sub": "annie-sub",
        "email": "annie@hospital.example",
        "email_verified": True,
        "name": "Annie",
    },
    {"sub": "eve-sub", "email": "eve@elsewhere.example", "email_verified": True, "name": "Eve"},
    {"sub": "dora-sub", "email": "dora@hospital.example", "email_verified": True, "name": "Dora"},
]


def _wait_http(url: str, proc: subprocess.Popen, log, timeout: float = 30) -> None:
    deadline = time.time() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if proc.poll() is not None or time.time() > deadline:
            pytest.fail("OIDC provider did not start:\n" + log.read_text())
        time.sleep(0.2)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    require_chromium()
    tmp = tmp_path_factory.mktemp("browser_sso")
    url = f"sqlite:///{tmp / 'medsim.db'}"
    env = {
        **os.environ,
        "MEDSIM_DATABASE_URL": url,
        "PYTHONPATH": str(ROOT),
    }
    env.pop("MEDSIM_ADMIN_PASSWORD", None)
    env.pop("MEDSIM_SSO_ADMINS", None)
    script = """
import pandas as pd
from data_schemas.scales import BINARY
from medsim_annot.services import studies
from medsim_annot.services.people import admins, annotators, language, sso
from medsim_annot.services.study_handle import open_study
pairs = pd.DataFrame({"pair_id": ["p1", "p2"], "term_1": ["fever", "cough"],
                      "term_2": ["pyrexia", "sneeze"]})
studies.create_study("ward-study", pairs, BINARY, ["dr_annie", "dr_other"])
study = open_study("ward-study")
annotators.link_annotator_sso(study, "dr_annie", "annie-sub")
sso.set_annotator_sso(study, True)
admins.add_admin("bob", sso_identity="bob@hospital.example")
admins.add_admin("dora", sso_identity="dora@hospital.example")
language.set_admin_language("dora", "de")
"""
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, check=True, timeout=120)
    oidc_port, app_port = free_port(), free_port()
    oidc_log = tmp / "oidc.log"
    with open(oidc_log, "w") as log:
        oidc = subprocess.Popen(
            [sys.executable, "-m", "oidc_provider_mock", "--port", str(oidc_port)]
            + [a for u in USERS for a in ("--user-claims", json.dumps(u))],
            cwd=tmp,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    issuer = f"http://127.0.0.1:{oidc_port}"
    try:
        _wait_http(issuer + "/.well-known/openid-configuration", oidc, oidc_log)
        secrets_file = tmp / "secrets.toml"
        secrets_file.write_text(
            "[auth]\n"
            f'redirect_uri = "http://127.0.0.1:{app_port}/oauth2callback"\n'
            f'cookie_secret = "{secrets.token_urlsafe(32)}"\n'
            'client_id = "medsim-test"\n'
            'client_secret = "medsim-test-secret"\n'
            f'server_metadata_url = "{issuer}/.well-known/openid-configuration"\n'
            "\n[medsim]\n"
            'admins = ["chief@hospital.example"]\n'
        )
        with streamlit_server(
            env,
            tmp / "streamlit.log",
            port=app_port,
            args=("--secrets.files", str(secrets_file)),
        ) as base:
            yield {"base": base, "url": url, "tmp": tmp}
    finally:
        oidc.terminate()
        try:
            oidc.wait(10)
        except subprocess.TimeoutExpired:
            oidc.kill()


@pytest.fixture(scope="module")
def browser(server):
    with chromium() as b:
        yield b


def _sso_sign_in(browser, base: str, sub: str):
    """A fresh browser context: Sign in with SSO, pick *sub* on the provider's page."""
    page = browser.new_context().new_page()
    page.goto(base + "/")
    page.get_by_role("button", name="Sign in with SSO").click(timeout=30000)
    page.get_by_role("button", name=sub, exact=True).click(timeout=30000)
    return page


def _sign_out(page, base: str) -> None:
    button = page.get_by_role("button", name="Sign out")
    button.wait_for(timeout=30000)
    expand = page.get_by_test_id("stExpandSidebarButton")
    if expand.count() and expand.is_visible():  # annotators' sidebar starts collapsed
        expand.click()
    button.click()
    page.get_by_role("button", name="End session").click(timeout=30000)  # the provider
    page.get_by_role("button", name="Sign in with SSO").wait_for(timeout=30000)
    assert page.url.startswith(base)


def test_admin_on_the_list_signs_in_and_out(server, browser):
    base = server["base"]
    page = _sso_sign_in(browser, base, "chief-sub")
    page.get_by_role("heading", name="Study setup").wait_for(timeout=30000)
    page.get_by_text("Signed in as study admin chief@hospital.example").wait_for()
    nav = page.get_by_test_id("stSidebarNav")
    nav.get_by_text("Activity", exact=True).click()
    page.get_by_role("heading", name="Activity").wait_for(timeout=30000)
    _sign_out(page, base)
    page.goto(base + "/")  # the identity cookie is gone: still signed out after a reload
    page.get_by_role("button", name="Sign in with SSO").wait_for(timeout=30000)
    assert page.get_by_role("heading", name="Study setup").count() == 0


def test_named_admin_by_sso_identity_is_named_in_the_event_log(server, browser):
    base = server["base"]
    page = _sso_sign_in(browser, base, "bob-sub")
    page.get_by_text("Signed in as study admin bob").wait_for(timeout=30000)
    page.get_by_role("tab", name="Issue code").click()
    page.get_by_role("button", name="Issue a new code (the old one stops working)").click()
    page.get_by_text("New access code for").wait_for(timeout=30000)
    page.close()
    from medsim_annot.services import activity
    from medsim_annot.storage import dispose_all, get_engine

    engine = get_engine(server["url"])
    log = activity.activity(engine=engine)
    issued = log[log["action"] == "code_issued"]
    assert issued["actor"].tolist() == ["admin:bob"]
    dispose_all()


def test_an_sso_sign_in_puts_the_stored_language_in_the_session(server, browser):
    """Dora's profile says German; her browser says English (the default): German pages."""
    page = _sso_sign_in(browser, server["base"], "dora-sub")
    page.wait_for_function("document.documentElement.lang === 'de'", timeout=30000)
    page.close()


def test_linked_annotator_gets_only_the_annotate_page(server, browser):
    base = server["base"]
    page = _sso_sign_in(browser, base, "annie-sub")
    page.get_by_text("Signed in as dr_annie").wait_for(timeout=30000)
    assert page.get_by_test_id("stSidebarNav").count() == 0
    page.goto(base + "/setup")  # an admin page by URL: not even in this session's app
    page.get_by_text("Page not found").wait_for(timeout=30000)
    page.keyboard.press("Escape")
    page.get_by_text("Signed in as dr_annie").wait_for(timeout=30000)
    assert page.get_by_role("heading", name="Study setup").count() == 0
    _sign_out(page, base)


def test_user_not_on_any_list_is_refused(server, browser):
    base = server["base"]
    page = _sso_sign_in(browser, base, "eve-sub")
    page.get_by_text("is not a study admin").wait_for(timeout=30000)
    page.get_by_text("eve@elsewhere.example").first.wait_for()
    assert page.get_by_role("heading", name="Study setup").count() == 0
    assert page.get_by_label("Access code").count() == 0
    _sign_out(page, base)


def test_annotator_of_a_study_without_sso_is_refused(server, browser):
    from medsim_annot.services.people import sso
    from medsim_annot.services.study_handle import open_study
    from medsim_annot.storage import dispose_all, get_engine

    engine = get_engine(server["url"])
    sso.set_annotator_sso(open_study("ward-study", engine=engine), False)
    dispose_all()
    try:
        page = _sso_sign_in(browser, server["base"], "annie-sub")
        page.get_by_text("is not a study admin").wait_for(timeout=30000)
        page.close()
    finally:
        engine = get_engine(server["url"])
        sso.set_annotator_sso(open_study("ward-study", engine=engine), True)
        dispose_all()
