"""Queries of the ratings endpoint's bearer tokens (``rating_tokens``, migration 0008).

Typed functions; :mod:`medsim_annot.services.people.tokens` calls them and never builds a query.
Only a token's SHA-256 is ever stored or looked up.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import CursorResult, delete, select
from sqlalchemy.orm import Session

from .models import Annotator, RatingToken, Study


@dataclass(frozen=True)
class TokenRow:
    """A token with what its check needs: the annotator's state now."""

    token_id: int
    annotator_id: int
    study_id: int
    credential_version: int
    expires_at: dt.datetime
    active: bool
    current_credential: int
    ready: bool
    session_key: str | None


def insert_token(
    s: Session,
    *,
    token_hash: str,
    annotator_id: int,
    credential_version: int,
    now: dt.datetime,
    expires_at: dt.datetime,
    session_key: str | None = None,
) -> None:
    """Store a new token (by its hash) inside transaction *s*, for page session
    *session_key*."""
    s.add(
        RatingToken(
            token_hash=token_hash,
            annotator_id=annotator_id,
            credential_version=credential_version,
            created_at=now,
            expires_at=expires_at,
            session_key=session_key,
        )
    )


def token_by_hash(s: Session, token_hash: str) -> TokenRow | None:
    """The token hashing to *token_hash* with its annotator's state, or ``None`` (one indexed
    read)."""
    row = s.execute(
        select(
            RatingToken.id,
            RatingToken.annotator_id,
            Annotator.study_id,
            RatingToken.credential_version,
            RatingToken.expires_at,
            Annotator.active,
            Annotator.credential_version,
            Study.ready,
            RatingToken.session_key,
        )
        .join(Annotator, Annotator.id == RatingToken.annotator_id)
        .join(Study, Study.id == Annotator.study_id)
        .where(RatingToken.token_hash == token_hash)
    ).first()
    return TokenRow(*row) if row else None  # type: ignore[call-arg]


def delete_token(s: Session, token_hash: str) -> int:
    """Delete the token hashing to *token_hash*; returns how many rows went (0 or 1)."""
    done: CursorResult = s.execute(delete(RatingToken).where(RatingToken.token_hash == token_hash))  # type: ignore[assignment]
    return int(done.rowcount or 0)


def delete_expired(s: Session, now: dt.datetime) -> int:
    """Delete every token that expired before *now* (tidying; they are refused anyway)."""
    done: CursorResult = s.execute(delete(RatingToken).where(RatingToken.expires_at < now))  # type: ignore[assignment]
    return int(done.rowcount or 0)
