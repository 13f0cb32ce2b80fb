"""2 + 1 designs: a serving order for slots and one tiebreak per pair.

``assignments.order_key`` is the order in which an annotator's slots are served; positions
stay the slots' identity (the widget and ``expected_version`` refer to them) and are never
renumbered. Existing slots get ``position * 1024``, so a tiebreak slot can be placed between
two of them; the ``(annotator_id, order_key)`` index keeps "next unrated slot" an index walk.
``tiebreaks`` holds one row per pair that got a third rater: its unique ``item_id`` makes
"exactly one tiebreak slot per pair" true even when two annotators finish a pair at once.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

#: Gap between the serving order keys of two consecutive original slots.
ORDER_GAP = 1024


def upgrade() -> None:
    # Plain ADD COLUMN + UPDATE + index: no table rebuild on SQLite.
    op.add_column("assignments", sa.Column("order_key", sa.BigInteger, nullable=True))
    op.execute(f"UPDATE assignments SET order_key = position * {ORDER_GAP}")
    op.create_index("ix_assignments_annotator_order", "assignments", ["annotator_id", "order_key"])
    op.create_table(
        "tiebreaks",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("study_id", sa.Integer, sa.ForeignKey("studies.id"), nullable=False),
        sa.Column("item_id", sa.Integer, sa.ForeignKey("items.id"), nullable=False),
        sa.Column("annotator_id", sa.Integer, sa.ForeignKey("annotators.id"), nullable=False),
        sa.Column("assignment_id", sa.Integer, sa.ForeignKey("assignments.id"), nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.UniqueConstraint("item_id", name="uq_tiebreaks_item"),
    )
    op.create_index("ix_tiebreaks_study", "tiebreaks", ["study_id"])


def downgrade() -> None:
    op.drop_index("ix_tiebreaks_study", table_name="tiebreaks")
    op.drop_table("tiebreaks")
    op.drop_index("ix_assignments_annotator_order", table_name="assignments")
    op.drop_column("assignments", "order_key")
