"""Bearer tokens of the ratings endpoint.

The Annotate page mints a token for the signed-in annotator and the credential version of
their session (:func:`mint_token`); the widget sends it in the ``Authorization`` header
(never a cookie, so another site cannot make the browser send it: no CSRF). Only its SHA-256
is stored, in the study store, so every server process accepts it. A token ends when

- it expires (:data:`~data_schemas.widget.TOKEN_TTL_S` after minting),
- the annotator's code is issued again or revoked (the credential version moves on, or the
  annotator is inactive),
- the session signs out (:func:`end_token`).

Each token belongs to a signed-in page session (``session``, random; the tokens one Annotate
page mints over its life share it): the endpoint records what it served per session and takes
a rating only for a slot served to the session the rating names (docs/security.md).

The endpoint's limits (requests and writes per annotator) are counted and reserved in the
store by :mod:`medsim_annot.services.endpoint_quota`, in the same transaction as the check.

:func:`check_token` is the one check; it raises :class:`TokenRefusedError` with the error code
of the contract (``ended``, ``expired``, ``unauthorized``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from dataclasses import dataclass

from data_schemas.widget import KEPT_TTL_S, TOKEN_TTL_S
from medsim_annot.i18n import N_, t
from medsim_annot.storage import Engine, get_engine, session_scope, utcnow, with_retry
from medsim_annot.storage import served as served_store
from medsim_annot.storage import tokens as store

#: Longest token accepted for a lookup (a minted one has 43 characters).
_TOKEN_MAX = 128


class TokenRefusedError(Exception):
    """The request's token does not open the endpoint. ``code``: the contract's error code."""

    def __init__(self, code: str, reason: str):
        super().__init__(reason)
        self.code = code
        self.reason = reason


@dataclass(frozen=True)
class Grant:
    """What a good token allows: rate and save for *annotator_id* under *credential*.
    ``session``: the page session the token was minted for."""

    token_id: int
    annotator_id: int
    study_id: int
    credential: int
    session: str = ""


@dataclass(frozen=True)
class MintedToken:
    token: str
    expires_at: dt.datetime
    session: str = ""


def new_session() -> str:
    """A new page session id (128 random bits)."""
    return secrets.token_urlsafe(16)


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode("ascii", "ignore")).hexdigest()


def mint_token(
    annotator_id: int,
    credential: int,
    *,
    ttl_s: int = TOKEN_TTL_S,
    session: str | None = None,
    engine: Engine | None = None,
) -> MintedToken:
    """A new token (256 random bits) for *annotator_id* under credential version
    *credential*, valid *ttl_s* seconds, for page session *session* (``None``: a new one,
    :func:`new_session`); only its hash is stored. Expired tokens, and the record of slots
    served longer than :data:`~data_schemas.widget.KEPT_TTL_S` ago, are tidied away in the
    same transaction."""
    token = secrets.token_urlsafe(32)
    session = session or new_session()
    now = utcnow()
    expires = now + dt.timedelta(seconds=int(ttl_s))

    def run() -> None:
        with session_scope(engine or get_engine()) as s:
            store.delete_expired(s, now)
            served_store.delete_served_before(s, now - dt.timedelta(seconds=KEPT_TTL_S))
            store.insert_token(
                s,
                token_hash=_hash(token),
                annotator_id=int(annotator_id),
                credential_version=int(credential),
                now=now,
                expires_at=expires,
                session_key=session,
            )

    with_retry(run)
    return MintedToken(token, expires, session)


def end_token(token: str | None, *, engine: Engine | None = None) -> bool:
    """Delete *token* (sign-out); ``True`` if it existed."""
    if not token:
        return False

    def run() -> bool:
        with session_scope(engine or get_engine()) as s:
            return store.delete_token(s, _hash(token)) > 0

    return with_retry(run)


_ENDED = N_(
    "this session has ended: the access code was replaced or revoked — sign in again "
    "(ask the study admin for a new code if needed)"
)
TOKEN_NEEDED = N_("a ratings token is needed (Authorization: Bearer)")


def bearer(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header value, or ``None``."""
    if not header:
        return None
    scheme, _, value = header.strip().partition(" ")
    value = value.strip()
    if scheme.lower() != "bearer" or not value or len(value) > _TOKEN_MAX:
        return None
    return value


def check_token(s, token: str | None, *, now: dt.datetime | None = None) -> Grant:
    """The grant of *token* inside store transaction *s*; raises :class:`TokenRefusedError`."""
    if not token:
        raise TokenRefusedError("unauthorized", t(TOKEN_NEEDED))
    row = store.token_by_hash(s, _hash(token))
    if row is None:
        raise TokenRefusedError("expired", t("this ratings token is not known (ended or expired)"))
    if not row.active or row.current_credential != row.credential_version:
        raise TokenRefusedError("ended", t(_ENDED))
    now = now or utcnow()
    if row.expires_at <= now:
        raise TokenRefusedError("expired", t("this ratings token has expired"))
    return Grant(
        token_id=row.token_id,
        annotator_id=row.annotator_id,
        study_id=row.study_id,
        credential=row.credential_version,
        # A token minted before sessions were recorded is a session of its own.
        session=row.session_key or f"token-{row.token_id:010d}",
    )
