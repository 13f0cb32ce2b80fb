"""Named admins, SSO identities of annotators, per-study SSO switch, the actor of events.

The single admin password of ``settings.admin_password_scrypt`` (if any) becomes the admin
named ``admin``; its hash keeps its old scrypt parameters until that admin next signs in,
when it is re-hashed with the current ones.

Revision ID: 0005
Revises: 0002
Create Date: 2026-11-23
"""

import datetime as dt

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    admins = op.create_table(
        "admins",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("password_hash", sa.String(400), nullable=True),
        sa.Column("sso_identity", sa.String(320), nullable=True, unique=True),
        sa.Column("active", sa.Boolean, nullable=False, server_default=sa.true()),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )
    # Plain ADD COLUMN and indexes: no table rebuild on SQLite (the annotators table is
    # referenced by assignments and ratings).
    op.add_column("annotators", sa.Column("sso_identity", sa.String(320), nullable=True))
    op.create_index(
        "uq_annotators_study_sso", "annotators", ["study_id", "sso_identity"], unique=True
    )
    op.add_column(
        "studies",
        sa.Column("annotator_sso", sa.Boolean, nullable=False, server_default=sa.false()),
    )
    op.add_column("events", sa.Column("actor", sa.String(400), nullable=True))
    op.create_index("ix_events_at", "events", ["at"])

    conn = op.get_bind()
    old = conn.execute(
        sa.text("SELECT value FROM settings WHERE key = 'admin_password_scrypt'")
    ).scalar()
    if old:
        salt_hex, digest_hex = old.split("$", 1)
        conn.execute(
            admins.insert().values(
                name="admin",
                password_hash=f"scrypt${2**14}$8$1${salt_hex}${digest_hex}",
                active=True,
                created_at=dt.datetime.now(dt.UTC).replace(tzinfo=None),
            )
        )
        conn.execute(sa.text("DELETE FROM settings WHERE key = 'admin_password_scrypt'"))


def downgrade() -> None:
    op.drop_index("ix_events_at", table_name="events")
    op.drop_column("events", "actor")
    op.drop_column("studies", "annotator_sso")
    op.drop_index("uq_annotators_study_sso", table_name="annotators")
    op.drop_column("annotators", "sso_identity")
    op.drop_table("admins")
