"""process leases: a lease per running process, the owner of each floor and page, and an
index on page status for recovery

Revision ID: 0003_lease
Revises: 0002_memory
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0003_lease'
down_revision = '0002_memory'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('process_lease',
    sa.Column('owner', sa.String(length=64), nullable=False),
    sa.Column('host', sa.String(length=200), nullable=False),
    sa.Column('pid', sa.Integer(), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('heartbeat_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('owner', name=op.f('pk_process_lease'))
    )
    # Plain ADD COLUMN of a nullable column: no table rebuild on SQLite.
    op.add_column('floor', sa.Column('owner', sa.String(length=64), nullable=True))
    op.add_column('page', sa.Column('owner', sa.String(length=64), nullable=True))
    op.create_index('ix_page_status', 'page', ['status'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_page_status', table_name='page')
    with op.batch_alter_table('page') as batch:
        batch.drop_column('owner')
    with op.batch_alter_table('floor') as batch:
        batch.drop_column('owner')
    op.drop_table('process_lease')
