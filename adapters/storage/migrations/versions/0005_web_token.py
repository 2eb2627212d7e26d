"""web page access tokens: the digest of each token, its kind (read or admin) and its realm

Revision ID: 0005_web_token
Revises: 0004_speaker
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0005_web_token'
down_revision = '0004_speaker'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('web_token',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('digest', sa.String(length=64), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('realm', sa.String(length=240), nullable=True),
    sa.Column('label', sa.String(length=100), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_web_token')),
    sa.UniqueConstraint('digest', name=op.f('uq_web_token_digest'))
    )


def downgrade() -> None:
    op.drop_table('web_token')
