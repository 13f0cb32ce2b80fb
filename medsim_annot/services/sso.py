"""Single sign-on settings that decide whether SSO may run at all, and for how long.

* The identity cookie Streamlit sets after an OIDC sign-in is signed with ``[auth]
  cookie_secret``. Whoever knows that secret can sign a cookie for any e-mail address, an
  admin's included. So the app refuses single sign-on (and serves nothing but the reason)
  when the secret is missing, is the example's placeholder, or is shorter than
  :data:`MIN_COOKIE_SECRET_CHARS` characters.
* Streamlit keeps the identity cookie for 30 days; the app asks the provider again once the
  ID token is older than ``[medsim] sso_session_hours`` (default :data:`DEFAULT_SESSION_HOURS`).
* When the provider cannot be reached, Streamlit's login route answers a bare
  "Authentication error"; the start page checks the provider's discovery document first and
  says what happened instead.
"""

from __future__ import annotations

import math
import time
import urllib.error
import urllib.request
from collections.abc import Mapping

MIN_COOKIE_SECRET_CHARS = 32
#: Placeholders shipped in examples and documentation, refused whatever their length.
EXAMPLE_SECRETS = frozenset({"change-me", "changeme", "xxx", "secret"})
DEFAULT_SESSION_HOURS = 12.0
PROVIDER_TIMEOUT_S = 3.0
UNREACHABLE = (
    "The sign-in service is unreachable right now; try again in a moment, or use your "
    "access code (study admins: your admin name and password)."
)


def cookie_secret_problem(auth: Mapping) -> str | None:
    """Why the ``[auth]`` section's ``cookie_secret`` cannot protect SSO sessions, or ``None``.

    An empty *auth* (no single sign-on configured) has no problem."""
    if not auth:
        return None
    secret = str(auth.get("cookie_secret") or "")
    hint = (
        "Single sign-on is switched off: the [auth] cookie_secret in .streamlit/secrets.toml "
        "{what}. Anyone who knows it could sign in as any user. Set a long random value, e.g. "
        'the output of python -c "import secrets; print(secrets.token_urlsafe(48))", and '
        "restart the app (see docs/sso.md)."
    )
    if not secret.strip():
        return hint.format(what="is missing")
    if secret.strip().lower() in EXAMPLE_SECRETS:
        return hint.format(what="is still the example's placeholder")
    if len(secret) < MIN_COOKIE_SECRET_CHARS:
        return hint.format(what=f"has fewer than {MIN_COOKIE_SECRET_CHARS} characters")
    return None


def session_hours(medsim: Mapping) -> float:
    """``[medsim] sso_session_hours``: how long one provider sign-in lasts (default 12 h)."""
    raw = medsim.get("sso_session_hours", DEFAULT_SESSION_HOURS)
    try:
        hours = float(raw)
    except (TypeError, ValueError):
        raise ValueError(
            f"[medsim] sso_session_hours must be a number of hours, not {raw!r}"
        ) from None
    if not math.isfinite(hours) or hours <= 0:
        raise ValueError(f"[medsim] sso_session_hours must be positive, not {raw!r}")
    return hours


def session_expired(claims: Mapping, hours: float, *, now: float | None = None) -> bool:
    """Whether the provider sign-in behind *claims* is older than *hours*.

    The age runs from ``iat``, when the provider issued the ID token (a new sign-in gets a
    new token even while the provider's own session lasts), or without it ``auth_time``.
    Claims with neither cannot be aged and count as expired, so the provider is asked
    again."""
    now = time.time() if now is None else now
    for key in ("iat", "auth_time"):
        value = claims.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return now - float(value) > hours * 3600.0
    return True


def provider_unreachable(metadata_url: str, *, timeout: float = PROVIDER_TIMEOUT_S) -> bool:
    """Whether the provider's OpenID discovery document cannot be fetched right now."""
    if not metadata_url.startswith(("https://", "http://")):
        return True
    try:
        with urllib.request.urlopen(metadata_url, timeout=timeout) as response:
            return response.status != 200
    except (OSError, urllib.error.URLError, ValueError):
        return True
