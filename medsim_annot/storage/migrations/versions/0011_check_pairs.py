"""Check pairs: ``items.check_answer``, the known answer of a pair an admin marked as a
check pair (a value of the study's scale, as ratings store it); NULL for every other pair.
The answer lives on the item, never on the assignment: the slot an annotator is served is
the same kind of row whether its pair is a check pair or not.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A plain nullable ADD COLUMN: no table rebuild on SQLite.
    op.add_column("items", sa.Column("check_answer", sa.String(100), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("items") as batch:
        batch.drop_column("check_answer")
