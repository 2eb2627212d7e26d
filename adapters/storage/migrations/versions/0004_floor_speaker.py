"""group role-play: each floor records its speaker (a group member's name; NULL on a solo
session's floors, meaning the session's character) and the activation seed of a group turn

Revision ID: 0004_speaker
Revises: 0003_lease
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0004_speaker'
down_revision = '0003_lease'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN of nullable columns: no table rebuild on SQLite.
    op.add_column('floor', sa.Column('speaker', sa.String(length=200), nullable=True))
    op.add_column('floor', sa.Column('seed', sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('floor') as batch:
        batch.drop_column('seed')
        batch.drop_column('speaker')
