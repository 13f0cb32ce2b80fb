"""Nagle's algorithm off for every TCP connection the app server accepts.

Streamlit (1.67) binds its listening socket as ``socket.socket(family)``, so the socket (and
every connection accepted on it) reports protocol number 0. asyncio turns ``TCP_NODELAY`` on
only for sockets whose protocol is ``IPPROTO_TCP`` (``asyncio.base_events._set_nodelay``), so
the app's connections keep Nagle's algorithm on. With a kept-alive connection, a small
response written in two pieces (headers, then body) waits for the client's delayed ACK:
about 40 ms per request on Linux, for every rating the widget posts and every health check.

:func:`install` widens asyncio's check to any TCP stream socket (protocol 0 on an IPv4 or IPv6
stream socket *is* TCP). ``serve.py`` calls it before the server starts. It is idempotent,
and ``tests/test_tcp_nodelay.py`` also checks that asyncio alone still leaves the option off,
so the workaround can go once Streamlit or asyncio change.
"""

from __future__ import annotations

import socket
from asyncio import base_events
from typing import Any

_STREAM_FAMILIES = {socket.AF_INET, socket.AF_INET6}
_TCP_PROTOCOLS = {0, socket.IPPROTO_TCP}
ASYNCIO_SET_NODELAY = base_events._set_nodelay  # type: ignore[attr-defined]  # asyncio's own


def _set_nodelay(sock: Any) -> None:
    if (
        sock.family in _STREAM_FAMILIES
        and sock.type == socket.SOCK_STREAM
        and sock.proto in _TCP_PROTOCOLS
    ):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def install() -> None:
    """Make asyncio set ``TCP_NODELAY`` on accepted sockets of protocol 0 too."""
    if hasattr(socket, "TCP_NODELAY"):
        base_events._set_nodelay = _set_nodelay  # type: ignore[attr-defined]


def installed() -> bool:
    return getattr(base_events, "_set_nodelay", None) is _set_nodelay
