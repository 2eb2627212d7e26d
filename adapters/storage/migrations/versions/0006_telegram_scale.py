"""several processes on one Telegram bot: the update ids each process took (redelivery and
per-chat order) and role leases (the one long poller)

Revision ID: 0006_telegram_scale
Revises: 0005_web_token
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0006_telegram_scale'
down_revision = '0005_web_token'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('telegram_update',
    sa.Column('bot_id', sa.BigInteger(), autoincrement=False, nullable=False),
    sa.Column('update_id', sa.BigInteger(), autoincrement=False, nullable=False),
    sa.Column('chat_id', sa.BigInteger(), nullable=True),
    sa.Column('owner', sa.String(length=64), nullable=False),
    sa.Column('received_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('done_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('bot_id', 'update_id', name=op.f('pk_telegram_update'))
    )
    op.create_index('ix_telegram_update_chat', 'telegram_update',
                    ['bot_id', 'chat_id', 'update_id'], unique=False)
    op.create_table('role_lease',
    sa.Column('role', sa.String(length=100), nullable=False),
    sa.Column('holder', sa.String(length=64), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('role', name=op.f('pk_role_lease'))
    )


def downgrade() -> None:
    op.drop_table('role_lease')
    op.drop_index('ix_telegram_update_chat', table_name='telegram_update')
    op.drop_table('telegram_update')
