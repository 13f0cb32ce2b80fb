"""Index ratings by annotator and assignment (progress counts after a restart).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_ratings_annotator_assignment", "ratings", ["annotator_id", "assignment_id"])


def downgrade() -> None:
    op.drop_index("ix_ratings_annotator_assignment", table_name="ratings")
