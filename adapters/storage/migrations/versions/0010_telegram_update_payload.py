"""several processes on one Telegram bot: each claimed update keeps its payload (the update's
JSON) so a live process can take over the updates of a process that died, and a partial index
finds the updates not done

Revision ID: 0010_telegram_update_payload
Revises: 0009_page_itemization
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_telegram_update_payload"
down_revision = "0009_page_itemization"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("telegram_update") as batch:
        batch.add_column(sa.Column("payload", sa.Text(), nullable=True))
    op.create_index(
        "ix_telegram_update_open",
        "telegram_update",
        ["bot_id", "update_id"],
        unique=False,
        sqlite_where=sa.text("done_at IS NULL"),
        postgresql_where=sa.text("done_at IS NULL"),
    )


def downgrade() -> None:
    op.drop_index(
        "ix_telegram_update_open",
        table_name="telegram_update",
        sqlite_where=sa.text("done_at IS NULL"),
        postgresql_where=sa.text("done_at IS NULL"),
    )
    with op.batch_alter_table("telegram_update") as batch:
        batch.drop_column("payload")
