"""A person's language and the study's own texts per language.

``annotators.language``, ``adjudicators.language``, ``admins.language``: the language the
person's pages are in (a code such as ``de``; NULL: the browser's, then English), set by an
admin or chosen by the person. Plain nullable ADD COLUMNs: no table rebuild.

``study_texts``: the study's own texts in one language (the guideline, the scale's question,
option labels and descriptions, as JSON), append-only: the texts of a study in a language
are its row with the highest id. ``guideline_version`` is the guideline version the
translated guideline was written for (a revised guideline makes it fall back to the study's
own text).

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

PEOPLE = ("annotators", "adjudicators", "admins")


def upgrade() -> None:
    for table in PEOPLE:
        op.add_column(table, sa.Column("language", sa.String(20), nullable=True))
    op.create_table(
        "study_texts",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("study_id", sa.Integer, sa.ForeignKey("studies.id"), nullable=False),
        sa.Column("language", sa.String(20), nullable=False),
        sa.Column("texts_json", sa.Text, nullable=False),
        sa.Column("guideline_version", sa.Integer, nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("actor", sa.String(400), nullable=True),
    )
    op.create_index("ix_study_texts_study_language", "study_texts", ["study_id", "language", "id"])


def downgrade() -> None:
    op.drop_index("ix_study_texts_study_language", table_name="study_texts")
    op.drop_table("study_texts")
    # SQLite 3.35+ drops a column in place: no rebuild.
    for table in reversed(PEOPLE):
        op.drop_column(table, "language")
