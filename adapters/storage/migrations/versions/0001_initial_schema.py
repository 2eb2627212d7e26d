"""initial schema

Revision ID: 0001
Revises: 
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('realm',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('platform', sa.String(length=32), nullable=False),
    sa.Column('key', sa.String(length=200), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_realm')),
    sa.UniqueConstraint('platform', 'key', name='uq_realm_platform_key')
    )
    op.create_table('variable_value',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('scope', sa.String(length=16), nullable=False),
    sa.Column('owner_id', sa.Integer(), nullable=False),
    sa.Column('key', sa.String(length=200), nullable=False),
    sa.Column('value', sa.JSON(), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_variable_value')),
    sa.UniqueConstraint('scope', 'owner_id', 'key', name='uq_variable_value_scope_owner_key')
    )
    op.create_table('asset',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('realm_id', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('data', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['realm_id'], ['realm.id'], name=op.f('fk_asset_realm_id_realm')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_asset')),
    sa.UniqueConstraint('realm_id', 'kind', 'name', name='uq_asset_realm_kind_name')
    )
    op.create_table('session',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('realm_id', sa.Integer(), nullable=False),
    sa.Column('platform', sa.String(length=32), nullable=False),
    sa.Column('key', sa.String(length=200), nullable=False),
    sa.Column('settings', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['realm_id'], ['realm.id'], name=op.f('fk_session_realm_id_realm')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_session')),
    sa.UniqueConstraint('platform', 'key', name='uq_session_platform_key')
    )
    op.create_index(op.f('ix_session_realm_id'), 'session', ['realm_id'], unique=False)
    op.create_table('branch',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('session_id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('parent_id', sa.Integer(), nullable=True),
    sa.Column('fork_floor', sa.Integer(), nullable=True),
    sa.Column('fork_page', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['parent_id'], ['branch.id'], name=op.f('fk_branch_parent_id_branch')),
    sa.ForeignKeyConstraint(['session_id'], ['session.id'], name=op.f('fk_branch_session_id_session')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_branch')),
    sa.UniqueConstraint('session_id', 'name', name='uq_branch_session_name')
    )
    op.create_table('floor',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('branch_id', sa.Integer(), nullable=False),
    sa.Column('seq', sa.Integer(), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('active_page', sa.Integer(), nullable=True),
    sa.Column('hidden', sa.Boolean(), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['branch_id'], ['branch.id'], name=op.f('fk_floor_branch_id_branch')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_floor'))
    )
    op.create_index('ix_floor_state', 'floor', ['state'], unique=False)
    op.create_index('ix_floor_branch_state_seq', 'floor', ['branch_id', 'state', 'seq'], unique=False)
    op.create_index('uq_floor_live_seq', 'floor', ['branch_id', 'seq'], unique=True, sqlite_where=sa.text("state != 'failed'"), postgresql_where=sa.text("state != 'failed'"))
    op.create_table('page',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('floor_id', sa.Integer(), nullable=False),
    sa.Column('number', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('hidden', sa.Boolean(), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('meta', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['floor_id'], ['floor.id'], name=op.f('fk_page_floor_id_floor')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_page')),
    sa.UniqueConstraint('floor_id', 'number', name='uq_page_floor_number')
    )
    op.create_table('message',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('floor_id', sa.Integer(), nullable=False),
    sa.Column('page_id', sa.Integer(), nullable=True),
    sa.Column('seq', sa.Integer(), nullable=False),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.Column('speaker_id', sa.String(length=200), nullable=True),
    sa.Column('speaker_name', sa.String(length=200), nullable=True),
    sa.Column('raw', sa.Text(), nullable=False),
    sa.Column('display', sa.Text(), nullable=False),
    sa.Column('hidden', sa.Boolean(), nullable=False),
    sa.Column('platform_ref', sa.String(length=200), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['floor_id'], ['floor.id'], name=op.f('fk_message_floor_id_floor')),
    sa.ForeignKeyConstraint(['page_id'], ['page.id'], name=op.f('fk_message_page_id_page')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_message'))
    )
    op.create_index('ix_message_floor', 'message', ['floor_id', 'page_id', 'seq'], unique=False)
    op.create_table('platform_link',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('session_id', sa.Integer(), nullable=False),
    sa.Column('platform_ref', sa.String(length=200), nullable=False),
    sa.Column('branch_id', sa.Integer(), nullable=False),
    sa.Column('floor_id', sa.Integer(), nullable=False),
    sa.Column('page_id', sa.Integer(), nullable=True),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.ForeignKeyConstraint(['branch_id'], ['branch.id'], name=op.f('fk_platform_link_branch_id_branch')),
    sa.ForeignKeyConstraint(['floor_id'], ['floor.id'], name=op.f('fk_platform_link_floor_id_floor')),
    sa.ForeignKeyConstraint(['page_id'], ['page.id'], name=op.f('fk_platform_link_page_id_page')),
    sa.ForeignKeyConstraint(['session_id'], ['session.id'], name=op.f('fk_platform_link_session_id_session')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_platform_link')),
    sa.UniqueConstraint('session_id', 'platform_ref', name='uq_platform_link_session_ref')
    )
    op.create_table('variable_log',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('source', sa.String(length=16), nullable=False),
    sa.Column('scope', sa.String(length=16), nullable=False),
    sa.Column('key', sa.String(length=200), nullable=False),
    sa.Column('op', sa.String(length=8), nullable=False),
    sa.Column('value', sa.JSON(), nullable=True),
    sa.Column('realm_id', sa.Integer(), nullable=False),
    sa.Column('session_id', sa.Integer(), nullable=False),
    sa.Column('branch_id', sa.Integer(), nullable=True),
    sa.Column('seq', sa.Integer(), nullable=True),
    sa.Column('floor_id', sa.Integer(), nullable=True),
    sa.Column('page_id', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['branch_id'], ['branch.id'], name=op.f('fk_variable_log_branch_id_branch')),
    sa.ForeignKeyConstraint(['floor_id'], ['floor.id'], name=op.f('fk_variable_log_floor_id_floor')),
    sa.ForeignKeyConstraint(['page_id'], ['page.id'], name=op.f('fk_variable_log_page_id_page')),
    sa.ForeignKeyConstraint(['realm_id'], ['realm.id'], name=op.f('fk_variable_log_realm_id_realm')),
    sa.ForeignKeyConstraint(['session_id'], ['session.id'], name=op.f('fk_variable_log_session_id_session')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_variable_log'))
    )
    op.create_index('ix_variable_log_key', 'variable_log', ['key', 'realm_id'], unique=False)
    op.create_index('ix_variable_log_page', 'variable_log', ['page_id', 'scope'], unique=False)
    op.create_index('ix_variable_log_position', 'variable_log', ['branch_id', 'scope', 'seq'], unique=False)
    op.create_table('variable_snapshot',
    sa.Column('page_id', sa.Integer(), nullable=False),
    sa.Column('data', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['page_id'], ['page.id'], name=op.f('fk_variable_snapshot_page_id_page')),
    sa.PrimaryKeyConstraint('page_id', name=op.f('pk_variable_snapshot'))
    )


def downgrade() -> None:
    op.drop_table('variable_snapshot')
    op.drop_index('ix_variable_log_position', table_name='variable_log')
    op.drop_index('ix_variable_log_page', table_name='variable_log')
    op.drop_index('ix_variable_log_key', table_name='variable_log')
    op.drop_table('variable_log')
    op.drop_table('platform_link')
    op.drop_index('ix_message_floor', table_name='message')
    op.drop_table('message')
    op.drop_table('page')
    op.drop_index('uq_floor_live_seq', table_name='floor', sqlite_where=sa.text("state != 'failed'"), postgresql_where=sa.text("state != 'failed'"))
    op.drop_index('ix_floor_state', table_name='floor')
    op.drop_index('ix_floor_branch_state_seq', table_name='floor')
    op.drop_table('floor')
    op.drop_table('branch')
    op.drop_index(op.f('ix_session_realm_id'), table_name='session')
    op.drop_table('session')
    op.drop_table('asset')
    op.drop_table('variable_value')
    op.drop_table('realm')
