"""memory unit vectors: one embedding per retrievable unit, with its model, dimension and text
hash (REAL[] on PostgreSQL, JSON on SQLite)

Revision ID: 0007_unit_vectors
Revises: 0006_telegram_scale
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = '0007_unit_vectors'
down_revision = '0006_telegram_scale'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('memory_unit_vector',
    sa.Column('record_id', sa.String(length=64), nullable=False),
    sa.Column('unit_index', sa.Integer(), nullable=False),
    sa.Column('model', sa.String(length=200), nullable=False),
    sa.Column('dims', sa.Integer(), nullable=False),
    sa.Column('text_hash', sa.String(length=32), nullable=False),
    sa.Column('vector', sa.JSON().with_variant(postgresql.ARRAY(sa.REAL()), 'postgresql'),
              nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('record_id', 'unit_index', name=op.f('pk_memory_unit_vector'))
    )


def downgrade() -> None:
    op.drop_table('memory_unit_vector')
