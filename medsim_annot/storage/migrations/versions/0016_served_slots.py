"""What the ratings endpoint served to which session and when: ``served_slots``; the session
a ratings token belongs to (``rating_tokens.session_key``); the browser's own time on a pair
beside the time the server vouches for (``ratings.browser_ms``).

One row per (annotator, session, slot position) served, with the token that fetched it and
when it was first served (written by one insert per served window; a slot served again
keeps its first time). The endpoint refuses a rating of a slot that was not served to the
rating's session within the kept-list lifetime, and stores as ``elapsed_ms`` the browser's
figure capped by the server's time between serving and saving (the browser's own figure is
kept in ``browser_ms``). Rows older than that lifetime are tidied away when tokens are
minted.

Revision ID: 0016
Revises: 0012
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "served_slots",
        sa.Column(
            "annotator_id",
            sa.Integer,
            sa.ForeignKey("annotators.id"),
            primary_key=True,
        ),
        sa.Column("session_key", sa.String(43), primary_key=True),
        sa.Column("position", sa.Integer, primary_key=True),
        sa.Column("token_id", sa.Integer, nullable=False),
        sa.Column("served_at", sa.DateTime, nullable=False),
    )
    op.create_index("ix_served_slots_served_at", "served_slots", ["served_at"])
    op.add_column("rating_tokens", sa.Column("session_key", sa.String(43), nullable=True))
    op.add_column("ratings", sa.Column("browser_ms", sa.Integer, nullable=True))


def downgrade() -> None:
    # Plain ALTER TABLE (SQLite 3.35+ and PostgreSQL): a batch copy of ``ratings`` would
    # drop its append-only triggers.
    op.execute("ALTER TABLE ratings DROP COLUMN browser_ms")
    op.execute("ALTER TABLE rating_tokens DROP COLUMN session_key")
    op.drop_index("ix_served_slots_served_at", table_name="served_slots")
    op.drop_table("served_slots")
