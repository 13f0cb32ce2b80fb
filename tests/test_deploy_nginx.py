"""The nginx configuration docs/deploy.md gives is the file the benchmark runs, and Debian's
nginx accepts it (``nginx -t``) and serves it: /_stcore/metrics answers 404 and the security
headers are sent."""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request

import pytest

from tests.conftest import need
from tests.nginx_proxy import CONF, NGINX, Nginx, doc_block
from tests.ports import free_port


def test_deploy_doc_shows_the_tested_file():
    assert doc_block() == CONF.read_text(encoding="utf-8")


def _nginx() -> None:
    need(NGINX.exists(), f"{NGINX} not found (apt-get install nginx)", "MEDSIM_REQUIRE_NGINX")


def test_nginx_accepts_the_config(tmp_path):
    _nginx()
    proxy = Nginx(tmp_path, (free_port(), free_port()))
    result = proxy.check()
    assert result.returncode == 0, result.stderr
    assert "test is successful" in result.stderr


def test_nginx_serves_the_config(tmp_path):
    """Blocked metrics, security headers and the HTTP → HTTPS redirect (no app server
    behind it: the pages answer 502, which is nginx's own answer)."""
    _nginx()
    ctx = ssl._create_unverified_context()  # the throw-away certificate of this test
    with Nginx(tmp_path, (free_port(), free_port())) as proxy:
        with pytest.raises(urllib.error.HTTPError) as metrics:
            urllib.request.urlopen(proxy.base + "/_stcore/metrics", context=ctx, timeout=10)
        assert metrics.value.code == 404
        with pytest.raises(urllib.error.HTTPError) as page:
            urllib.request.urlopen(proxy.base + "/", context=ctx, timeout=10)
        assert page.value.code == 502
        headers = page.value.headers
        assert headers["Content-Security-Policy"] == "frame-ancestors 'none'"
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["Strict-Transport-Security"].startswith("max-age=")

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args, **kwargs):
                return None

        opener = urllib.request.build_opener(NoRedirect)
        with pytest.raises(urllib.error.HTTPError) as plain:
            opener.open(f"http://127.0.0.1:{proxy.http_port}/x", timeout=10)
        assert plain.value.code == 301
        assert plain.value.headers["Location"].startswith("https://")
