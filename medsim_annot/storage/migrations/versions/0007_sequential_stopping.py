"""Sequential audit: groups that stop being served when their estimate is tight.

- ``assignments.withdrawn_at``: set when the slot's group stopped before the slot was rated
  (the row is kept; clearing it serves the slot again). Withdrawn unrated slots leave the
  annotator's total, the next-unrated lookups and the ``waiting`` count.
- ``annotators.queue_version``: bumped whenever slots of the annotator are withdrawn or
  restored, so every process's incremental progress count (``storage.annotation.progress``)
  recounts the queue's total.
- ``items.audit_group``: the pair's group of a study with ``--target-ci`` (its values of the
  group columns joined by `` / ``), indexed with the study for the per-rating check; and
  ``assignments (item_id)``, to reach a group's slots from its pairs.
- ``group_stops``: one row per stopped group of a study; its unique ``(study_id,
  audit_group)`` makes "stop once, log once" true when two ratings finish a group at once.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN (nullable or with a server default): no table rebuild on SQLite.
    op.add_column("assignments", sa.Column("withdrawn_at", sa.DateTime, nullable=True))
    op.add_column(
        "annotators",
        sa.Column("queue_version", sa.Integer, nullable=False, server_default="0"),
    )
    op.add_column("items", sa.Column("audit_group", sa.String(400), nullable=True))
    op.create_index("ix_items_study_group", "items", ["study_id", "audit_group"])
    # A group's slots by item (the per-rating check, the tiebreak's look at a pair's slots).
    op.create_index("ix_assignments_item", "assignments", ["item_id"])
    op.create_table(
        "group_stops",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("study_id", sa.Integer, sa.ForeignKey("studies.id"), nullable=False),
        sa.Column("audit_group", sa.String(400), nullable=False),
        sa.Column("stopped_at", sa.DateTime, nullable=False),
        sa.Column("detail_json", sa.Text, nullable=False, server_default="{}"),
        sa.UniqueConstraint("study_id", "audit_group", name="uq_group_stops_group"),
    )


def downgrade() -> None:
    op.drop_table("group_stops")
    op.drop_index("ix_assignments_item", table_name="assignments")
    op.drop_index("ix_items_study_group", table_name="items")
    with op.batch_alter_table("items") as batch:
        batch.drop_column("audit_group")
    with op.batch_alter_table("annotators") as batch:
        batch.drop_column("queue_version")
    with op.batch_alter_table("assignments") as batch:
        batch.drop_column("withdrawn_at")
