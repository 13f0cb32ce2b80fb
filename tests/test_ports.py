"""The test servers start on ports they own: a port another process listens on is never
mistaken for ours (the CI failure of stop 40: two servers behind nginx, one of them another
test's, answered with another store's queue)."""

from __future__ import annotations

import http.server
import os
import threading

import pytest

from tests.conftest import ROOT
from tests.nginx_proxy import NGINX, Nginx
from tests.ports import free_port, owns_port
from tests.streamlit_harness import start_streamlit


class _Healthy(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def stranger():
    """Another worker's server on a loopback port: it answers every health check with 200."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Healthy)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_owns_port_tells_our_listener_from_anothers(stranger):
    assert owns_port(os.getpid(), stranger)
    assert not owns_port(os.getppid(), stranger)
    assert not owns_port(os.getpid(), free_port())


def test_a_fixed_port_held_by_another_process_fails_the_start(stranger, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with pytest.raises(pytest.fail.Exception, match="another process holds it"):
        start_streamlit(env, tmp_path / "server.log", stranger, timeout=60, script="serve.py")


def test_nginx_moves_off_a_port_another_process_holds(stranger, tmp_path):
    if not NGINX.exists():
        pytest.skip(f"{NGINX} not found")
    proxy = Nginx(tmp_path / "nginx", (free_port(), free_port()))
    proxy.https_port = stranger  # as if another server took it after it was picked
    (proxy.folder / "medsim.conf").write_text(
        (proxy.folder / "medsim.conf")
        .read_text()
        .replace(f"127.0.0.1:{proxy.base.rsplit(':', 1)[1]} ssl", f"127.0.0.1:{stranger} ssl"),
        encoding="utf-8",
    )
    with proxy:
        assert proxy.https_port != stranger
        assert owns_port(proxy.proc.pid, proxy.https_port)  # type: ignore[union-attr]
