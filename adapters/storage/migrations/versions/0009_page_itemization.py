"""page itemizations: how each generated page's prompt was assembled, one JSON row per page
written with the page's commit; and when each web token was last used

Revision ID: 0009_page_itemization
Revises: 0008_memory_revision
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = "0009_page_itemization"
down_revision = "0008_memory_revision"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "page_itemization",
        sa.Column("page_id", sa.Integer(), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["page_id"], ["page.id"], name=op.f("fk_page_itemization_page_id_page")
        ),
        sa.PrimaryKeyConstraint("page_id", name=op.f("pk_page_itemization")),
    )
    with op.batch_alter_table("web_token") as batch:
        batch.add_column(sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("web_token") as batch:
        batch.drop_column("last_used_at")
    op.drop_table("page_itemization")
