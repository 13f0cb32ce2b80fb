"""Initial schema: studies, items, annotators, assignments, append-only ratings, events, settings.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "studies",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("scale_json", sa.Text, nullable=False),
        sa.Column("guideline", sa.Text, nullable=False, server_default=""),
        sa.Column("config_json", sa.Text, nullable=False, server_default="{}"),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )
    op.create_table(
        "items",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("study_id", sa.Integer, sa.ForeignKey("studies.id"), nullable=False, index=True),
        sa.Column("pair_id", sa.String(200), nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("term_1", sa.Text, nullable=False),
        sa.Column("term_2", sa.Text, nullable=False),
        sa.Column("auto_label", sa.Integer, nullable=True),
        sa.Column("dataset", sa.String(200), nullable=False, server_default=""),
        sa.Column("difficulty", sa.String(20), nullable=False, server_default=""),
        sa.Column("negative_strategy", sa.String(40), nullable=False, server_default=""),
        sa.Column("concept_id_1", sa.String(100), nullable=False, server_default=""),
        sa.Column("concept_id_2", sa.String(100), nullable=False, server_default=""),
        sa.Column("meta_json", sa.Text, nullable=False, server_default="{}"),
        sa.UniqueConstraint("study_id", "pair_id", name="uq_items_study_pair"),
    )
    op.create_table(
        "annotators",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("study_id", sa.Integer, sa.ForeignKey("studies.id"), nullable=False, index=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("code_hash", sa.String(64), nullable=True, unique=True),
        sa.Column("active", sa.Boolean, nullable=False, server_default=sa.true()),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.UniqueConstraint("study_id", "name", name="uq_annotators_study_name"),
    )
    op.create_table(
        "assignments",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("study_id", sa.Integer, sa.ForeignKey("studies.id"), nullable=False, index=True),
        sa.Column("annotator_id", sa.Integer, sa.ForeignKey("annotators.id"), nullable=False),
        sa.Column("item_id", sa.Integer, sa.ForeignKey("items.id"), nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("kind", sa.String(20), nullable=False, server_default="main"),
        sa.Column("swapped", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.UniqueConstraint("annotator_id", "position", name="uq_assignments_position"),
    )
    op.create_index("ix_assignments_annotator_item", "assignments", ["annotator_id", "item_id"])
    op.create_table(
        "ratings",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("study_id", sa.Integer, sa.ForeignKey("studies.id"), nullable=False),
        sa.Column("annotator_id", sa.Integer, sa.ForeignKey("annotators.id"), nullable=False),
        sa.Column("item_id", sa.Integer, sa.ForeignKey("items.id"), nullable=False),
        sa.Column("assignment_id", sa.Integer, sa.ForeignKey("assignments.id"), nullable=False),
        sa.Column("value", sa.String(100), nullable=False),
        sa.Column("unclear", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("comment", sa.Text, nullable=False, server_default=""),
        sa.Column("rated_at", sa.DateTime, nullable=False),
        sa.Column("elapsed_ms", sa.Integer, nullable=True),
        sa.Column("source", sa.String(20), nullable=False, server_default="app"),
    )
    op.create_index("ix_ratings_assignment", "ratings", ["assignment_id", "id"])
    op.create_index("ix_ratings_study", "ratings", ["study_id", "id"])
    op.create_table(
        "events",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("study_id", sa.Integer, sa.ForeignKey("studies.id"), nullable=True, index=True),
        sa.Column("annotator_id", sa.Integer, sa.ForeignKey("annotators.id"), nullable=True),
        sa.Column("kind", sa.String(60), nullable=False),
        sa.Column("detail_json", sa.Text, nullable=False, server_default="{}"),
        sa.Column("at", sa.DateTime, nullable=False),
    )
    op.create_table(
        "settings",
        sa.Column("key", sa.String(100), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    # Ratings are append-only history: refuse UPDATE and DELETE in the database itself.
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        for action in ("UPDATE", "DELETE"):
            op.execute(
                f"CREATE TRIGGER ratings_append_only_{action.lower()} BEFORE {action} ON ratings "
                "BEGIN SELECT RAISE(ABORT, 'ratings are append-only'); END;"
            )
    elif dialect == "postgresql":
        op.execute(
            "CREATE FUNCTION medsim_ratings_append_only() RETURNS trigger AS $$ BEGIN "
            "RAISE EXCEPTION 'ratings are append-only'; END; $$ LANGUAGE plpgsql;"
        )
        op.execute(
            "CREATE TRIGGER ratings_append_only BEFORE UPDATE OR DELETE ON ratings "
            "FOR EACH ROW EXECUTE FUNCTION medsim_ratings_append_only();"
        )


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS ratings_append_only ON ratings")
        op.execute("DROP FUNCTION IF EXISTS medsim_ratings_append_only()")
    for name in ("settings", "events", "ratings", "assignments", "annotators", "items", "studies"):
        op.drop_table(name)
