"""Which address a request comes from, when a reverse proxy forwards it.

The sign-in throttle counts failures per client address (:mod:`medsim_annot.services.people.throttle`),
so the address must be one a client cannot choose. Two rules:

- **The app server never rewrites the address.** uvicorn trusts ``X-Forwarded-For`` from
  the addresses in ``FORWARDED_ALLOW_IPS``, by default loopback: any program on the app's
  machine could then pick its own address by sending the header. ``serve.py`` pins
  ``FORWARDED_ALLOW_IPS`` to nothing (:func:`pin_app_server`), so the address the app sees is
  the TCP peer's.
- **The app reads the header only from the proxies it is told to trust**
  (:func:`trusted_proxies`: ``MEDSIM_TRUST_FORWARDED``): walking ``X-Forwarded-For`` from
  the right, each hop added by a trusted proxy is skipped and the first other address is the
  client (:func:`client_address`). A header from anyone else is ignored.

``MEDSIM_TRUST_FORWARDED``: unset, empty or ``0``/``false``/``no`` — trust no proxy; ``1``/
``true``/``yes`` — the proxy runs on this machine (``127.0.0.1`` and ``::1``); otherwise a
comma-separated list of the proxies' addresses (IPs or networks like ``10.0.0.0/24``).
"""

from __future__ import annotations

import ipaddress
import os
import sys
from types import FrameType

import uvicorn

_LOOPBACK = ("127.0.0.1", "::1")
_OFF = ("", "0", "false", "no")
_ON = ("1", "true", "yes")

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def trusted_proxies(setting: str | None = None) -> tuple[Network, ...]:
    """The proxies ``MEDSIM_TRUST_FORWARDED`` (or *setting*) trusts; a bad entry is refused
    with a :class:`ValueError` naming it."""
    raw = os.environ.get("MEDSIM_TRUST_FORWARDED", "") if setting is None else setting
    raw = raw.strip()
    if raw.lower() in _OFF:
        return ()
    entries = _LOOPBACK if raw.lower() in _ON else [e.strip() for e in raw.split(",") if e.strip()]
    out = []
    for e in entries:
        try:
            out.append(ipaddress.ip_network(e, strict=False))
        except ValueError:
            raise ValueError(
                f"MEDSIM_TRUST_FORWARDED: {e!r} is not an IP address or network (give the "
                "reverse proxy's addresses, comma-separated, or 1 for a proxy on this machine)"
            ) from None
    return tuple(out)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    text = text.strip()
    if text.startswith("[") and "]" in text:  # [v6]:port
        text = text[1 : text.index("]")]
    elif text.count(":") == 1:  # v4:port
        text = text.split(":", 1)[0]
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return None
    mapped = getattr(ip, "ipv4_mapped", None)
    return mapped or ip


def _trusted(ip, proxies: tuple[Network, ...]) -> bool:
    return any(ip.version == n.version and ip in n for n in proxies)


def client_address(
    peer: str | None, forwarded_for: str | None, proxies: tuple[Network, ...]
) -> str:
    """The client's address: the connection's *peer* (``None``: loopback, as Streamlit
    reports it), unless the peer is a trusted proxy; then the right-most hop of
    *forwarded_for* not added by a trusted proxy. A hop that is not an address stops the
    walk at the last trusted hop (a client cannot make itself anonymous that way).

    >>> local = trusted_proxies("1")
    >>> client_address(None, "6.6.6.6, 10.0.0.9", local)
    '10.0.0.9'
    >>> client_address("10.0.0.9", "6.6.6.6", local)
    '10.0.0.9'
    >>> client_address(None, "6.6.6.6", ())
    'local'
    """
    here = _address(peer) if peer else ipaddress.ip_address("127.0.0.1")
    if here is None:
        return peer or "local"
    if not _trusted(here, proxies):
        return "local" if here.is_loopback else str(here)
    hops = [h for h in (forwarded_for or "").split(",") if h.strip()]
    last = here
    for hop in reversed(hops):
        ip = _address(hop)
        if ip is None:
            break
        if not _trusted(ip, proxies):
            return str(ip)
        last = ip
    return "local" if last.is_loopback else str(last)


def pin_app_server(allow: str = "") -> None:
    """Make uvicorn trust no ``X-Forwarded-For`` (*allow*: the ``FORWARDED_ALLOW_IPS`` to
    use): for every server configured later through the environment, and for the one whose
    loading runs this call (uvicorn reads the variable when its config is made, which is
    before it imports the app)."""
    os.environ["FORWARDED_ALLOW_IPS"] = allow
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        config = frame.f_locals.get("self")
        if isinstance(config, uvicorn.Config) and not config.loaded:
            config.forwarded_allow_ips = allow
        frame = frame.f_back
