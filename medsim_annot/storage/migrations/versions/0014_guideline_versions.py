"""Guideline versions: ``guideline_versions`` keeps every revision of a study's guideline
(version 2, 3, ...; a study without a row is on version 1, the guideline it was created
with), and ``ratings.guideline_version`` records the version a rating was made under (NULL
for ratings saved before this migration: version 1 or unknown).

Revision ID: 0014
Revises: 0012
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "guideline_versions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("study_id", sa.Integer, sa.ForeignKey("studies.id"), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("note", sa.Text, nullable=False, server_default=""),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("actor", sa.String(400), nullable=True),
        sa.UniqueConstraint("study_id", "version", name="uq_guideline_versions_study_version"),
    )
    # A plain nullable ADD COLUMN: no rebuild of the append-only ratings table (its
    # triggers stay).
    op.add_column("ratings", sa.Column("guideline_version", sa.Integer, nullable=True))


def downgrade() -> None:
    # SQLite 3.35+ drops a column in place: no rebuild, the ratings triggers stay.
    op.drop_column("ratings", "guideline_version")
    op.drop_table("guideline_versions")
