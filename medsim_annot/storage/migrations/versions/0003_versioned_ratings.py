"""Versioned ratings, credential versions, studies that are visible only once complete.

- ``ratings.revision``: the rating's number within its slot (1, 2, … in save order). A unique
  index on ``(assignment_id, revision)`` makes a save conditional on the version the page
  showed: of two writers that saw the same version, exactly one can store the next one.
  Existing rows are numbered by id (the append-only trigger is lifted for this backfill only).
  A rating without a revision is refused (NOT NULL on PostgreSQL, a trigger on SQLite, where
  the column carries a placeholder default of 0 that ``ALTER TABLE ADD COLUMN`` requires).
- ``annotators.credential_version``: bumped when an access code is issued again or revoked;
  a session opened with an older one is ended.
- ``studies.ready``: false while ``study create`` is still writing a big study in batches;
  annotators never see a study that is not ready.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_BACKFILL = (
    "UPDATE ratings SET revision = (SELECT count(*) FROM ratings r2 "
    "WHERE r2.assignment_id = ratings.assignment_id AND r2.id <= ratings.id)"
)


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    op.add_column(
        "annotators",
        sa.Column("credential_version", sa.Integer, nullable=False, server_default="1"),
    )
    op.add_column(
        "studies", sa.Column("ready", sa.Boolean, nullable=False, server_default=sa.true())
    )
    op.add_column("ratings", sa.Column("revision", sa.Integer, nullable=False, server_default="0"))
    if dialect == "sqlite":
        op.execute("DROP TRIGGER ratings_append_only_update")
        op.execute(_BACKFILL)
        op.execute(
            "CREATE TRIGGER ratings_append_only_update BEFORE UPDATE ON ratings "
            "BEGIN SELECT RAISE(ABORT, 'ratings are append-only'); END;"
        )
        op.execute(
            "CREATE TRIGGER ratings_revision_required BEFORE INSERT ON ratings "
            "WHEN NEW.revision < 1 "
            "BEGIN SELECT RAISE(ABORT, 'ratings.revision must be set (1, 2, ... per slot)'); END;"
        )
    else:
        op.execute("ALTER TABLE ratings DISABLE TRIGGER ratings_append_only")
        op.execute(_BACKFILL)
        op.execute("ALTER TABLE ratings ENABLE TRIGGER ratings_append_only")
        op.alter_column("ratings", "revision", server_default=None)
    op.create_index(
        "uq_ratings_assignment_revision", "ratings", ["assignment_id", "revision"], unique=True
    )


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    op.drop_index("uq_ratings_assignment_revision", table_name="ratings")
    if dialect == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS ratings_revision_required")
    op.drop_column("ratings", "revision")
    op.drop_column("studies", "ready")
    op.drop_column("annotators", "credential_version")
