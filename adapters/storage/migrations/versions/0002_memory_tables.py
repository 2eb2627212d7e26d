"""memory tables: records, relations and job states

Revision ID: 0002_memory
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0002_memory'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('memory_job',
    sa.Column('job_type', sa.String(length=32), nullable=False),
    sa.Column('scope_key', sa.String(length=300), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('revision', sa.Integer(), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('next_run_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('lease_owner', sa.String(length=200), nullable=True),
    sa.Column('leased_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('lease_expires_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('takeovers', sa.Integer(), nullable=False),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('last_success_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('job_type', 'scope_key', name=op.f('pk_memory_job'))
    )
    op.create_index('ix_memory_job_due', 'memory_job', ['status', 'next_run_at'], unique=False)
    op.create_table('memory_record',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('scope', sa.String(length=16), nullable=False),
    sa.Column('scope_id', sa.String(length=200), nullable=False),
    sa.Column('realm_id', sa.String(length=64), nullable=False),
    sa.Column('session_id', sa.String(length=64), nullable=True),
    sa.Column('origin_branch', sa.String(length=64), nullable=True),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('provenance_source', sa.String(length=16), nullable=False),
    sa.Column('provenance_floor', sa.Integer(), nullable=False),
    sa.Column('provenance_message_ref', sa.String(length=200), nullable=True),
    sa.Column('provenance_job_id', sa.String(length=300), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('created_floor', sa.Integer(), nullable=False),
    sa.Column('key', sa.String(length=200), nullable=True),
    sa.Column('tier', sa.Integer(), nullable=True),
    sa.Column('importance', sa.Float(), nullable=False),
    sa.Column('confidence', sa.Float(), nullable=False),
    sa.Column('lifecycle', sa.String(length=16), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_used_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_used_floor', sa.Integer(), nullable=True),
    sa.Column('coverage_start', sa.Integer(), nullable=True),
    sa.Column('coverage_end', sa.Integer(), nullable=True),
    sa.Column('ended_branch', sa.String(length=64), nullable=True),
    sa.Column('ended_floor', sa.Integer(), nullable=True),
    sa.Column('token_estimate', sa.Integer(), nullable=False),
    sa.Column('flags', sa.JSON(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_memory_record'))
    )
    op.create_index('ix_memory_record_key', 'memory_record', ['realm_id', 'key'], unique=False)
    op.create_index('ix_memory_record_realm_session', 'memory_record', ['realm_id', 'session_id', 'lifecycle'], unique=False)
    op.create_index('ix_memory_record_scope', 'memory_record', ['scope', 'scope_id', 'kind', 'lifecycle'], unique=False)
    op.create_table('memory_relation',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('source_id', sa.String(length=64), nullable=False),
    sa.Column('target_id', sa.String(length=64), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('floor_no', sa.Integer(), nullable=False),
    sa.Column('note', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['source_id'], ['memory_record.id'], name=op.f('fk_memory_relation_source_id_memory_record')),
    sa.ForeignKeyConstraint(['target_id'], ['memory_record.id'], name=op.f('fk_memory_relation_target_id_memory_record')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_memory_relation'))
    )
    op.create_index('ix_memory_relation_source', 'memory_relation', ['source_id'], unique=False)
    op.create_index('ix_memory_relation_target', 'memory_relation', ['target_id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_memory_relation_target', table_name='memory_relation')
    op.drop_index('ix_memory_relation_source', table_name='memory_relation')
    op.drop_table('memory_relation')
    op.drop_index('ix_memory_record_scope', table_name='memory_record')
    op.drop_index('ix_memory_record_realm_session', table_name='memory_record')
    op.drop_index('ix_memory_record_key', table_name='memory_record')
    op.drop_table('memory_record')
    op.drop_index('ix_memory_job_due', table_name='memory_job')
    op.drop_table('memory_job')
