"""The ratings endpoint's quota per annotator, counted and reserved in the store.

``endpoint_quota``: one row per annotator: the start of the current rate window (Unix
seconds), the requests and the rating writes counted in it, and the last grant. Every app
process reserves writes with one ``UPDATE`` on this row, so two parallel requests cannot both
read "room left" before either writes (issue 34 item 6).

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "endpoint_quota",
        sa.Column(
            "annotator_id",
            sa.Integer,
            sa.ForeignKey("annotators.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("window_start", sa.Float, nullable=False),
        sa.Column("requests", sa.Integer, nullable=False, server_default="0"),
        sa.Column("writes", sa.Integer, nullable=False, server_default="0"),
        sa.Column("granted", sa.Integer, nullable=False, server_default="0"),
    )


def downgrade() -> None:
    op.drop_table("endpoint_quota")
