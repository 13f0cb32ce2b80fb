"""Failed sign-ins in the store, so every app process counts the same ones.

``signin_failures``: one row per failed sign-in (kind ``admin`` or ``access-code``, the
client's address or IPv6 /64, Unix time). Indexed by client and by time for the two counts
the throttle needs; old rows are deleted by the throttle itself.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "signin_failures",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("client", sa.String(100), nullable=False),
        sa.Column("at", sa.Float, nullable=False),
    )
    op.create_index("ix_signin_failures_client", "signin_failures", ["kind", "client", "at"])
    op.create_index("ix_signin_failures_at", "signin_failures", ["kind", "at"])


def downgrade() -> None:
    op.drop_index("ix_signin_failures_at", table_name="signin_failures")
    op.drop_index("ix_signin_failures_client", table_name="signin_failures")
    op.drop_table("signin_failures")
