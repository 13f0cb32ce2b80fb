"""Bearer tokens of the ratings endpoint: ``rating_tokens``; ``ratings (annotator_id,
rated_at)`` for its write cap.

One row per token the Annotate page minted: the token's SHA-256 (unique), the annotator and
the credential version it was minted for, and its expiry. Every server process checks tokens
here, so any of them can serve any request. The write cap counts an annotator's ratings of
the last minute through the new index (no counter to update per request).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rating_tokens",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("annotator_id", sa.Integer, sa.ForeignKey("annotators.id"), nullable=False),
        sa.Column("credential_version", sa.Integer, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("expires_at", sa.DateTime, nullable=False),
    )
    op.create_index("ix_rating_tokens_annotator_id", "rating_tokens", ["annotator_id"])
    op.create_index("ix_rating_tokens_expires_at", "rating_tokens", ["expires_at"])
    op.create_index("ix_ratings_annotator_rated_at", "ratings", ["annotator_id", "rated_at"])


def downgrade() -> None:
    op.drop_index("ix_ratings_annotator_rated_at", table_name="ratings")
    op.drop_table("rating_tokens")
