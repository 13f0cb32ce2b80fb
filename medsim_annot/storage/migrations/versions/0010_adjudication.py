"""Adjudication: adjudicators of a study and their append-only decisions.

- ``adjudicators``: named people who settle pairs, per study; an access code (hashed) and/or
  a linked SSO identity, like annotators, in a table of their own because they are not blind.
- ``adjudications``: one row per decision; ``(item_id, revision)`` unique, so two
  adjudicators saving on the same version cannot both store the next; UPDATE and DELETE are
  refused by a trigger (a change is a new row); each row names the event that recorded it.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "adjudicators",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("study_id", sa.Integer, sa.ForeignKey("studies.id"), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("code_hash", sa.String(64), nullable=True, unique=True),
        sa.Column("sso_identity", sa.String(320), nullable=True),
        sa.Column("active", sa.Boolean, nullable=False),
        sa.Column("credential_version", sa.Integer, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.UniqueConstraint("study_id", "name", name="uq_adjudicators_study_name"),
    )
    op.create_index("ix_adjudicators_study_id", "adjudicators", ["study_id"])
    op.create_table(
        "adjudications",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("study_id", sa.Integer, sa.ForeignKey("studies.id"), nullable=False),
        sa.Column("item_id", sa.Integer, sa.ForeignKey("items.id"), nullable=False),
        sa.Column("adjudicator_id", sa.Integer, sa.ForeignKey("adjudicators.id"), nullable=False),
        sa.Column("revision", sa.Integer, nullable=False),
        sa.Column("label", sa.String(100), nullable=False),
        sa.Column("reason", sa.String(40), nullable=False),
        sa.Column("reason_text", sa.Text, nullable=False),
        sa.Column("flag_guideline", sa.Boolean, nullable=False),
        sa.Column("decided_at", sa.DateTime, nullable=False),
        sa.Column("event_id", sa.Integer, sa.ForeignKey("events.id"), nullable=False),
    )
    op.create_index(
        "uq_adjudications_item_revision", "adjudications", ["item_id", "revision"], unique=True
    )
    op.create_index("ix_adjudications_study", "adjudications", ["study_id", "id"])
    # Decisions are history: refuse UPDATE and DELETE in the database itself, as for ratings.
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        for action in ("UPDATE", "DELETE"):
            op.execute(
                f"CREATE TRIGGER adjudications_append_only_{action.lower()} BEFORE {action} "
                "ON adjudications BEGIN SELECT RAISE(ABORT, 'adjudications are append-only'); "
                "END;"
            )
    elif dialect == "postgresql":
        op.execute(
            "CREATE FUNCTION medsim_adjudications_append_only() RETURNS trigger AS $$ BEGIN "
            "RAISE EXCEPTION 'adjudications are append-only'; END; $$ LANGUAGE plpgsql;"
        )
        op.execute(
            "CREATE TRIGGER adjudications_append_only BEFORE UPDATE OR DELETE ON adjudications "
            "FOR EACH ROW EXECUTE FUNCTION medsim_adjudications_append_only();"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS adjudications_append_only ON adjudications")
        op.execute("DROP FUNCTION IF EXISTS medsim_adjudications_append_only()")
    op.drop_table("adjudications")
    op.drop_index("ix_adjudicators_study_id", table_name="adjudicators")
    op.drop_table("adjudicators")
