"""Real-browser single sign-on settings: an identity cookie signed with the example's
``cookie_secret`` gets nothing, the SSO session lifetime, and an unreachable identity
provider. No provider runs here: the identity cookies are signed by the test exactly as
Streamlit signs them, which is what an attacker who knows the secret can do. Skipped
without /usr/bin/chromium unless MEDSIM_REQUIRE_BROWSER=1."""

from __future__ import annotations

import json
import os
import secrets
import time

import pytest

from tests.conftest import ROOT
from tests.ports import free_port
from tests.streamlit_harness import chromium, require_chromium, streamlit_server

pytestmark = [pytest.mark.slow, pytest.mark.browser]

COOKIE = "_streamlit_user"
CHIEF = {"sub": "chief-sub", "email": "chief@hospital.example", "email_verified": True}


def _forged_cookie(secret: str, base: str, claims: dict) -> dict:
    """A ``_streamlit_user`` cookie for *claims*, signed with *secret* as Streamlit does."""
    from itsdangerous import URLSafeTimedSerializer

    payload = dict(claims, origin=base, is_logged_in=True, provider="default")
    value = URLSafeTimedSerializer(secret, salt=COOKIE).dumps(json.dumps(payload))
    return {"name": COOKIE, "value": value, "url": base + "/", "httpOnly": True}


def _serve(tmp_path, secret: str, *, admins=("chief@hospital.example",)):
    port = free_port()
    secrets_file = tmp_path / "secrets.toml"
    secrets_file.write_text(
        "[auth]\n"
        f'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
        f'cookie_secret = "{secret}"\n'
        'client_id = "medsim-test"\n'
        'client_secret = "medsim-test-secret"\n'
        # Port 9 (discard) on loopback: nothing listens, the provider is unreachable.
        'server_metadata_url = "http://127.0.0.1:9/.well-known/openid-configuration"\n'
        "\n[medsim]\n"
        f"admins = {json.dumps(list(admins))}\n"
        "sso_session_hours = 12\n"
    )
    env = {
        **os.environ,
        "MEDSIM_DATABASE_URL": f"sqlite:///{tmp_path / 'medsim.db'}",
        "PYTHONPATH": str(ROOT),
    }
    env.pop("MEDSIM_ADMIN_PASSWORD", None)
    env.pop("MEDSIM_SSO_ADMINS", None)
    return streamlit_server(
        env, tmp_path / "streamlit.log", port=port, args=("--secrets.files", str(secrets_file))
    )


@pytest.fixture(scope="module")
def browser():
    require_chromium()
    with chromium() as b:
        yield b


def test_example_cookie_secret_serves_nothing_to_a_forged_admin_cookie(tmp_path, browser):
    with _serve(tmp_path, "CHANGE-ME") as base:
        context = browser.new_context()
        context.add_cookies([_forged_cookie("CHANGE-ME", base, {**CHIEF, "iat": time.time()})])
        page = context.new_page()
        page.goto(base + "/")
        page.get_by_text("Single sign-on is switched off").wait_for(timeout=60000)
        page.get_by_text("placeholder").first.wait_for()
        assert page.get_by_role("heading", name="Study setup").count() == 0
        assert page.get_by_label("Access code").count() == 0
        assert page.get_by_role("button", name="Sign in with SSO").count() == 0
        page.goto(base + "/setup")  # an admin page by URL: not served either
        page.get_by_text("Single sign-on is switched off").wait_for(timeout=60000)
        assert page.get_by_role("heading", name="Study setup").count() == 0
        context.close()


def test_session_lifetime_and_unreachable_provider(tmp_path, browser):
    secret = secrets.token_urlsafe(48)
    with _serve(tmp_path, secret) as base:
        # A fresh provider sign-in of a listed admin is one (so the forged cookies are real).
        context = browser.new_context()
        context.add_cookies([_forged_cookie(secret, base, {**CHIEF, "iat": time.time()})])
        page = context.new_page()
        page.goto(base + "/")
        page.get_by_role("heading", name="Study setup").wait_for(timeout=60000)
        context.close()

        # The same cookie from a sign-in 13 hours ago: the provider must be asked again.
        context = browser.new_context()
        old = time.time() - 13 * 3600
        context.add_cookies([_forged_cookie(secret, base, {**CHIEF, "iat": old})])
        page = context.new_page()
        page.goto(base + "/")
        page.get_by_role("button", name="Sign in with SSO").wait_for(timeout=60000)
        assert page.get_by_role("heading", name="Study setup").count() == 0

        # The provider is unreachable: the start page says so and keeps the access code.
        page.get_by_role("button", name="Sign in with SSO").click()
        page.get_by_text("The sign-in service is unreachable").wait_for(timeout=60000)
        assert page.url.startswith(base)
        assert "Authentication error" not in page.locator("body").inner_text()
        page.get_by_label("Access code").wait_for()
        context.close()
