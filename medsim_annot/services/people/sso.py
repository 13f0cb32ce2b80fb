"""Single sign-on: whether SSO may run at all and for how long, and who an SSO user is.

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

Roles (:func:`sso_role`): an SSO user is an admin when one of their identities is in the
configured ``admins`` list or is the SSO identity of a named admin; otherwise an adjudicator
when an admin linked that identity to one; otherwise an annotator when an admin linked that
identity to an annotator of a study that allows SSO sign-in; otherwise refused. The
identities are the e-mail address (lower-cased) only when the provider says it is verified
(``email_verified`` true, as a boolean or the string ``"true"``: some providers, Microsoft
Entra ID among them, send no such claim and let users edit the address), and the subject id.
The two are separate namespaces: a configured identity with an ``@`` is an e-mail address
and matches only a verified ``email`` claim; one without, or written ``sub:ID``, is a
subject id and matches only the ``sub`` claim (:func:`~.names.normalise_identity`).
"""

from __future__ import annotations

import math
import os
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from medsim_annot.i18n import N_, fmt_int, t
from medsim_annot.services.people import members
from medsim_annot.services.people.adjudicators import ADJUDICATORS, AdjudicatorIdentity
from medsim_annot.services.people.admins import AdminIdentity, in_transaction, named_identity
from medsim_annot.services.people.annotators import ANNOTATORS, AnnotatorIdentity
from medsim_annot.services.people.names import SUB_PREFIX, normalise_identity
from medsim_annot.services.study_handle import Study
from medsim_annot.storage import Engine
from medsim_annot.storage import admins as store

MIN_COOKIE_SECRET_CHARS = 32
#: Placeholders shipped in examples and documentation, refused whatever their length.
EXAMPLE_SECRETS = frozenset({"change-me", "changeme", "xxx", "secret"})
#: Words of placeholders: a secret holding one was typed by a person, not generated.
PLACEHOLDER_WORDS = ("change-me", "changeme", "change_me", "placeholder", "your-secret")
#: Different characters a secret must use (32 random hex digits use about 14; fewer than
#: 8 about once in a million draws).
MIN_SECRET_SYMBOLS = 8
#: Bits a secret must hold by the frequency of its characters (32 random hex digits hold
#: about 115 by this count; fewer than 80 in about one draw in a million).
MIN_SECRET_BITS = 80
DEFAULT_SESSION_HOURS = 12.0
PROVIDER_TIMEOUT_S = 3.0
UNREACHABLE = N_(
    "The sign-in service is unreachable right now; try again in a moment, or use your "
    "access code (study admins: your admin name and password)."
)


def cookie_secret_problem(auth: Mapping) -> str | None:
    """Why the ``[auth]`` section's ``cookie_secret`` cannot protect SSO sessions, or ``None``.

    An empty *auth* (no single sign-on configured) has no problem."""
    if not auth:
        return None
    secret = str(auth.get("cookie_secret") or "")
    if not secret.strip():
        why = t(
            "Single sign-on is switched off: the [auth] cookie_secret in "
            ".streamlit/secrets.toml is missing."
        )
    elif secret.strip().lower() in EXAMPLE_SECRETS:
        why = t(
            "Single sign-on is switched off: the [auth] cookie_secret in "
            ".streamlit/secrets.toml is still the example's placeholder."
        )
    elif len(secret) < MIN_COOKIE_SECRET_CHARS:
        why = t(
            "Single sign-on is switched off: the [auth] cookie_secret in "
            ".streamlit/secrets.toml has fewer than {n} characters.",
            n=fmt_int(MIN_COOKIE_SECRET_CHARS),
        )
    elif weak := weak_secret(secret):
        why = t(
            "Single sign-on is switched off: the [auth] cookie_secret in "
            ".streamlit/secrets.toml is too easy to guess ({reason}).",
            reason=weak,
        )
    else:
        return None
    fix = t(
        "Anyone who knows it could sign in as any user. Set a long random value, e.g. the "
        'output of `python -c "import secrets; print(secrets.token_urlsafe(48))"`, and '
        "restart the app (see docs/sso.md)."
    )
    return f"{why} {fix}"


def _period(text: str) -> int | None:
    """The shortest period of *text* when it repeats (the last repeat may be cut short)."""
    for p in range(1, len(text) // 2 + 1):
        if text[p:] == text[:-p]:
            return p
    return None


def weak_secret(secret: str) -> str | None:
    """Why *secret* (long enough) is still easy to guess, or ``None``: it holds an example's
    placeholder, repeats a shorter text, uses fewer than :data:`MIN_SECRET_SYMBOLS`
    different characters, is mostly runs or steps (``aaaa``, ``abcd``, ``1234``), or holds
    fewer than :data:`MIN_SECRET_BITS` bits by the frequency of its characters. A
    heuristic: it refuses what a person types as a placeholder or a pattern, and passes the
    output of ``secrets.token_urlsafe(32)`` or ``secrets.token_hex(16)``; it cannot tell a
    random-looking string someone made up from a random one.

    >>> weak_secret("CHANGE-ME" * 4)
    'it holds a placeholder'
    >>> weak_secret("Xk9#Xk9#" * 5)
    'it repeats a 4-character text'
    >>> weak_secret("abcdefghijklmnopqrstuvwxyz0123456789")
    'it is mostly runs or steps of characters'
    >>> weak_secret("Vq3Jd0sPzL8mYt2WcKx7Ra1NbE5uGh4FoQ9iSe6T") is None
    True
    """
    low = secret.lower()
    if any(word in low for word in PLACEHOLDER_WORDS):
        return t("it holds a placeholder")
    period = _period(secret)
    if period is not None:
        return t("it repeats a {n}-character text", n=fmt_int(period))
    if len(set(secret)) < MIN_SECRET_SYMBOLS:
        return t("it uses fewer than {n} different characters", n=fmt_int(MIN_SECRET_SYMBOLS))
    steps = sum(1 for a, b in zip(secret, secret[1:], strict=False) if abs(ord(a) - ord(b)) <= 1)
    if steps * 3 > 2 * (len(secret) - 1):  # two thirds of neighbours are runs or steps
        return t("it is mostly runs or steps of characters")
    counts = Counter(secret)
    n = len(secret)
    bits = -sum(c * math.log2(c / n) for c in counts.values())
    if bits < MIN_SECRET_BITS:
        return t(
            "it holds about {bits} bits, fewer than {minimum}",
            bits=fmt_int(bits),
            minimum=fmt_int(MIN_SECRET_BITS),
        )
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


# ---------------------------------------------------------------------- single sign-on
@dataclass(frozen=True)
class SsoOutcome:
    """Where an SSO user may go: ``admin`` (with *admin*), ``adjudicator`` (with the
    *adjudicators* it is, one per study; the first is used), ``annotator`` (with one or more
    *studies* to choose from) or ``refused``."""

    role: str
    identity: str
    admin: AdminIdentity | None = None
    annotators: tuple[AnnotatorIdentity, ...] = ()
    adjudicators: tuple[AdjudicatorIdentity, ...] = ()


def email_verified(claims: dict) -> bool:
    """Whether the provider vouches for the ``email`` claim (missing means no)."""
    flag = claims.get("email_verified")
    return flag is True or (isinstance(flag, str) and flag.strip().lower() == "true")


def sso_identities(claims: dict) -> list[str]:
    """The stored forms an ID token's *claims* may match, each in its own namespace: the
    e-mail address (lower-cased) only when verified, and the subject id as ``sub:ID`` and,
    when it has no ``@`` (which would make it read as an e-mail address) and does not start
    with ``sub:`` (which would make it read as the written form of another subject), as
    ``ID``.

    >>> sso_identities({"sub": "X"}), sso_identities({"sub": "sub:X"})
    (['X', 'sub:X'], ['sub:sub:X'])
    """
    out = []
    email = str(claims.get("email") or "").strip()
    if email and "@" in email and not email.startswith(SUB_PREFIX) and email_verified(claims):
        out.append(email.lower())
    sub = str(claims.get("sub") or "").strip()
    if sub:
        # The bare form only when it cannot be read as something else: with an "@" it would
        # be an e-mail address, and starting with "sub:" it would be the written form of
        # another subject (a subject literally "sub:X" must not match "sub:X", meant for X).
        if "@" not in sub and not sub.startswith(SUB_PREFIX):
            out.append(sub)
        out.append(SUB_PREFIX + sub)
    return out


def shown_identity(claims: dict) -> str:
    """How the app names an SSO user: the verified e-mail address, else the subject id."""
    email = str(claims.get("email") or "").strip()
    if email and email_verified(claims):
        return email.lower()
    return str(claims.get("sub") or "").strip()


def sso_role(
    claims: dict, *, admins: Iterable[str] = (), engine: Engine | None = None
) -> SsoOutcome:
    """Map a signed-in SSO user to a role (see the module docstring)."""
    ids = sso_identities(claims)
    shown = shown_identity(claims)
    configured = {normalise_identity(a) for a in admins if str(a).strip()}
    configured |= {
        normalise_identity(a)
        for a in os.environ.get("MEDSIM_SSO_ADMINS", "").split(",")
        if a.strip()
    }
    hit = next((i for i in ids if i in configured), None)
    if hit is not None:
        return SsoOutcome("admin", shown, admin=AdminIdentity(name=hit, via="sso"))
    row = in_transaction(engine, store.admin_by_sso, ids)
    if row is not None:
        named = named_identity(row.name, engine=engine)
        if named is not None:
            return SsoOutcome("admin", shown, admin=named)
    judges = members.by_sso(ADJUDICATORS, ids, engine=engine)
    if judges:
        return SsoOutcome("adjudicator", shown, adjudicators=tuple(judges))
    found = members.by_sso(ANNOTATORS, ids, engine=engine)
    if found:
        return SsoOutcome("annotator", shown, annotators=tuple(found))
    return SsoOutcome("refused", shown)


def sso_links(study: Study) -> dict[str, str | None]:
    """Annotator name -> linked SSO identity (or ``None``) for *study*."""
    return in_transaction(study.engine, store.sso_links, study.id)


def annotator_sso_enabled(study: Study) -> bool:
    """Whether *study* lets its linked annotators sign in by SSO."""
    return in_transaction(study.engine, store.study_annotator_sso, study.id)


def set_annotator_sso(study: Study, enabled: bool) -> None:
    """Allow (or stop) SSO sign-in for the linked annotators of *study*."""
    in_transaction(study.engine, store.set_study_annotator_sso, study.id, enabled)
