"""Practice round: ``practice_pairs`` (terms, reference answer, explanation),
``practice_ratings`` (append-only practice answers per round) and ``practice_status`` (where
an annotator stands with the gate). Practice lives in tables of its own so that nothing that
reads ``items`` or ``ratings`` (the queue, gold, agreement, audits, exports) can see it.

Revision ID: 0015
Revises: 0012
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "practice_pairs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("study_id", sa.Integer, sa.ForeignKey("studies.id"), nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("pair_id", sa.String(200), nullable=False),
        sa.Column("term_1", sa.Text, nullable=False),
        sa.Column("term_2", sa.Text, nullable=False),
        sa.Column("answer", sa.String(100), nullable=False),
        sa.Column("explanation", sa.Text, nullable=False, server_default=""),
        sa.UniqueConstraint("study_id", "position", name="uq_practice_pairs_position"),
    )
    op.create_index("ix_practice_pairs_study_id", "practice_pairs", ["study_id"])
    op.create_table(
        "practice_ratings",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("study_id", sa.Integer, sa.ForeignKey("studies.id"), nullable=False),
        sa.Column("annotator_id", sa.Integer, sa.ForeignKey("annotators.id"), nullable=False),
        sa.Column(
            "practice_pair_id", sa.Integer, sa.ForeignKey("practice_pairs.id"), nullable=False
        ),
        sa.Column("round", sa.Integer, nullable=False),
        sa.Column("serial", sa.Integer, nullable=False),
        sa.Column("value", sa.String(100), nullable=False),
        sa.Column("rated_at", sa.DateTime, nullable=False),
        sa.Column("elapsed_ms", sa.Integer, nullable=True),
    )
    op.create_index(
        "uq_practice_ratings_serial",
        "practice_ratings",
        ["annotator_id", "round", "serial"],
        unique=True,
    )
    op.create_index("ix_practice_ratings_study", "practice_ratings", ["study_id", "id"])
    op.create_table(
        "practice_status",
        sa.Column("annotator_id", sa.Integer, sa.ForeignKey("annotators.id"), primary_key=True),
        sa.Column("study_id", sa.Integer, sa.ForeignKey("studies.id"), nullable=False),
        sa.Column("round", sa.Integer, nullable=False, server_default="0"),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("changed_at", sa.DateTime, nullable=False),
    )
    op.create_index("ix_practice_status_study_id", "practice_status", ["study_id"])


def downgrade() -> None:
    op.drop_table("practice_status")
    op.drop_table("practice_ratings")
    op.drop_table("practice_pairs")
