"""Nagle's algorithm is off on the connections the app server accepts (medsim_annot/tcp.py).

Streamlit binds its listening socket with protocol number 0 and asyncio sets TCP_NODELAY only
for IPPROTO_TCP sockets, so without :func:`medsim_annot.tcp.install` every kept-alive request
(each rating the widget posts) waited ~40 ms for a delayed ACK. The option is read on the
server's side of a real accepted connection."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from asyncio import base_events

import pytest

from medsim_annot import tcp
from tests.conftest import ROOT


def _streamlit_like_listener() -> socket.socket:
    """A listening socket made as Streamlit 1.67's ``_bind_socket`` makes it."""
    sock = socket.socket(family=socket.AF_INET)  # protocol 0, as Streamlit's
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.setblocking(False)
    return sock


def _server_side_nodelay() -> int:
    """TCP_NODELAY of the server's side of one connection accepted by an asyncio server."""

    async def run() -> int:
        seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                s = transport.get_extra_info("socket")
                seen.set_result(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        listener = _streamlit_like_listener()
        server = await asyncio.get_running_loop().create_server(Probe, sock=listener)
        port = listener.getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            return await asyncio.wait_for(seen, timeout=10)
        finally:
            writer.close()
            server.close()
            await server.wait_closed()

    return asyncio.run(run())


def test_streamlit_like_listener_has_protocol_zero():
    with _streamlit_like_listener() as s:
        assert s.proto == 0


def test_asyncio_alone_leaves_nagle_on(monkeypatch):
    """The reason for the workaround: when this fails, asyncio (or the socket) changed and
    medsim_annot/tcp.py can go."""
    monkeypatch.setattr(base_events, "_set_nodelay", tcp.ASYNCIO_SET_NODELAY)
    assert _server_side_nodelay() == 0


def test_install_turns_nagle_off_on_accepted_connections(monkeypatch):
    monkeypatch.setattr(base_events, "_set_nodelay", tcp.ASYNCIO_SET_NODELAY)
    tcp.install()
    tcp.install()  # idempotent
    assert tcp.installed()
    assert _server_side_nodelay() != 0


def test_install_leaves_other_sockets_alone(monkeypatch):
    monkeypatch.setattr(base_events, "_set_nodelay", tcp.ASYNCIO_SET_NODELAY)
    tcp.install()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        base_events._set_nodelay(udp)  # type: ignore[attr-defined]  # no error, no option


@pytest.mark.timeout(120)
def test_serve_py_installs_it_before_the_app_is_made():
    """What `make run` and `make serve` start (serve.py) has the fix in place."""
    code = (
        "import runpy, sys; sys.path.insert(0, '.'); ns = runpy.run_path('serve.py');"
        "from medsim_annot import tcp; print(tcp.installed(), type(ns['app']).__name__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=110
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[:1] == ["True"], out.stdout + out.stderr
