"""The address the sign-in throttle counts a client under (issue 34 item 9, issue 37 item 3).

``pages._ui.client_id`` with and without ``MEDSIM_TRUST_FORWARDED``, with and without
``X-Forwarded-For``, through one and several proxies; and ``serve.py`` pins uvicorn's
``FORWARDED_ALLOW_IPS`` so that a local client cannot choose its address with the header.
"""

from __future__ import annotations

import asyncio
import sys
import types

import pytest
import streamlit as st
import uvicorn

from medsim_annot import forwarded
from pages import _ui
from tests.conftest import ROOT


class _Context:
    def __init__(self, ip: str | None, xff: str | None):
        self.ip_address = ip
        self.headers = {"X-Forwarded-For": xff} if xff is not None else {}


def _client(monkeypatch, ip, xff, trust=None) -> str:
    if trust is None:
        monkeypatch.delenv("MEDSIM_TRUST_FORWARDED", raising=False)
    else:
        monkeypatch.setenv("MEDSIM_TRUST_FORWARDED", trust)
    monkeypatch.setattr(st, "context", _Context(ip, xff))
    return _ui.client_id()


@pytest.mark.parametrize(
    "ip, xff, trust, expected",
    [
        # No proxy trusted: the connection's address; the header is ignored.
        ("203.0.113.5", None, None, "203.0.113.5"),
        ("203.0.113.5", "198.51.100.1", None, "203.0.113.5"),
        (None, "198.51.100.1", None, "local"),  # loopback clients share "local"
        (None, "198.51.100.1", "0", "local"),
        # A proxy on this machine (MEDSIM_TRUST_FORWARDED=1): the hop it added.
        (None, "198.51.100.1", "1", "198.51.100.1"),
        (None, "6.6.6.6, 198.51.100.1", "1", "198.51.100.1"),  # a forged left hop is ignored
        (None, None, "1", "local"),
        # A peer that is not the trusted proxy cannot choose its address with the header.
        ("203.0.113.5", "198.51.100.1", "1", "203.0.113.5"),
        # Several hops: browser -> load balancer 10.0.0.2 -> nginx on this machine -> app.
        (None, "6.6.6.6, 198.51.100.1, 10.0.0.2", "127.0.0.1,10.0.0.0/24", "198.51.100.1"),
        (None, "198.51.100.1, 10.0.0.2", "127.0.0.1", "10.0.0.2"),  # LB not trusted: LB
        ("10.0.0.2", "198.51.100.1", "10.0.0.0/24", "198.51.100.1"),
        # Junk in the header stops the walk at the last trusted hop.
        (None, "198.51.100.1, not-an-address", "1", "local"),
        # IPv6 and mapped IPv4.
        ("2001:db8::7", None, None, "2001:db8::7"),
        (None, "::ffff:198.51.100.1", "1", "198.51.100.1"),
        (None, "[2001:db8::9]:4711", "1", "2001:db8::9"),
    ],
)
def test_client_id(monkeypatch, ip, xff, trust, expected):
    assert _client(monkeypatch, ip, xff, trust) == expected


def test_every_client_is_not_local(monkeypatch):
    """The mutant of issue 37 item 3 (every client counted as "local") dies here."""
    seen = {_client(monkeypatch, ip, None) for ip in ("203.0.113.5", "203.0.113.6", "2001:db8::1")}
    assert len(seen) == 3 and "local" not in seen


def test_a_bad_trusted_proxy_setting_is_refused():
    with pytest.raises(ValueError, match=r"MEDSIM_TRUST_FORWARDED: 'proxy\.example'"):
        forwarded.trusted_proxies("127.0.0.1, proxy.example")


def _served_client(monkeypatch, pin: bool) -> tuple[str, int] | None:
    """Load an app through uvicorn's own Config (as ``streamlit run serve.py`` does: the
    config is made before the app module is imported) and send it a request from loopback
    with a forged X-Forwarded-For; the client the app sees."""
    monkeypatch.delenv("FORWARDED_ALLOW_IPS", raising=False)
    seen: dict = {}

    async def inner(scope, receive, send):
        seen["client"] = scope.get("client")

    module = types.ModuleType("_medsim_pin_probe")

    def build():
        if pin:
            forwarded.pin_app_server()
        return inner

    module.__dict__["app"] = build
    monkeypatch.setitem(sys.modules, "_medsim_pin_probe", module)
    config = uvicorn.Config("_medsim_pin_probe:app", factory=True, log_level="error")
    config.load()
    scope = {
        "type": "http",
        "client": ("127.0.0.1", 50000),
        "headers": [(b"x-forwarded-for", b"6.6.6.6")],
        "scheme": "http",
    }
    asyncio.run(config.loaded_app(scope, None, None))
    return seen["client"]


def test_uvicorn_rewrites_the_address_unless_pinned(monkeypatch):
    # uvicorn's default: a loopback client picks its address with the header...
    assert _served_client(monkeypatch, pin=False)[0] == "6.6.6.6"
    # ...pinned (what serve.py does while uvicorn loads it): the connection's address.
    assert _served_client(monkeypatch, pin=True)[0] == "127.0.0.1"


def test_serve_pins_the_app_server():
    source = (ROOT / "serve.py").read_text(encoding="utf-8")
    assert "forwarded.pin_app_server()" in source


def test_a_served_app_sees_the_connection_not_the_forged_header(tmp_path):
    """``streamlit run`` makes uvicorn's config before it imports the app: the pin must
    still hold for the server that runs (a loopback client sending X-Forwarded-For)."""
    import os
    import urllib.request

    from tests.streamlit_harness import streamlit_server

    env = {k: v for k, v in os.environ.items() if k != "FORWARDED_ALLOW_IPS"}
    env["MEDSIM_DATABASE_URL"] = f"sqlite:///{tmp_path / 'probe.db'}"
    with streamlit_server(env, tmp_path / "probe.log", script="tests/forwarded_probe.py") as base:
        req = urllib.request.Request(base + "/probe", headers={"X-Forwarded-For": "6.6.6.6"})
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.read().decode() == "127.0.0.1"
