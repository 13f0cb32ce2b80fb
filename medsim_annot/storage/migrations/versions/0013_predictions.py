"""Predictions stored with a study, and the probability a slot was drawn with.

- ``predictions``: one row per version of a model's scores of a study (name, version 1, 2,
  ... per name, score column, source file and its SHA-256, pairs scored, when and by whom).
- ``prediction_scores``: the score of each pair in a version (unique per version and pair).
- ``assignments.draw_probability``: in a study with active serving (``--sampling active``),
  the probability with which the slot's pair was drawn into the sample; NULL in every other
  study (a plain nullable ADD COLUMN).

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "predictions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("study_id", sa.Integer, sa.ForeignKey("studies.id"), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("score_column", sa.String(200), nullable=False),
        sa.Column("source", sa.String(400), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("pairs", sa.Integer, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("actor", sa.String(400), nullable=True),
        sa.UniqueConstraint(
            "study_id", "name", "version", name="uq_predictions_study_name_version"
        ),
    )
    op.create_index("ix_predictions_study_id", "predictions", ["study_id"])
    op.create_table(
        "prediction_scores",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("prediction_id", sa.Integer, sa.ForeignKey("predictions.id"), nullable=False),
        sa.Column("item_id", sa.Integer, sa.ForeignKey("items.id"), nullable=False),
        sa.Column("score", sa.Float, nullable=False),
        sa.UniqueConstraint("prediction_id", "item_id", name="uq_prediction_scores_item"),
    )
    op.create_index("ix_prediction_scores_prediction_id", "prediction_scores", ["prediction_id"])
    op.add_column("assignments", sa.Column("draw_probability", sa.Float, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("assignments") as batch:
        batch.drop_column("draw_probability")
    op.drop_index("ix_prediction_scores_prediction_id", table_name="prediction_scores")
    op.drop_table("prediction_scores")
    op.drop_index("ix_predictions_study_id", table_name="predictions")
    op.drop_table("predictions")
