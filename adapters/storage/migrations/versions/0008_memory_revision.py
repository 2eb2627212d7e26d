"""memory revisions and story dates: a revision per realm that every change of its memory
records or relations bumps (by triggers, so every writer counts), and each record's in-story
date

Revision ID: 0008_memory_revision
Revises: 0007_unit_vectors
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = "0008_memory_revision"
down_revision = "0007_unit_vectors"
branch_labels = None
depends_on = None

_SQLITE_BUMP = """
INSERT INTO memory_revision (realm_id, revision) VALUES ({realm}, 1)
ON CONFLICT (realm_id) DO UPDATE SET revision = memory_revision.revision + 1;
"""
_RELATION_REALM = "(SELECT realm_id FROM memory_record WHERE id = {row}.source_id)"
# Every column but the use marks: marking records used happens on every turn, feeds only the
# decay tie-break, and the process that marks patches its own cached copy.
_CHANGED = (
    "kind, scope, scope_id, realm_id, session_id, origin_branch, text, provenance_source, "
    "provenance_floor, provenance_message_ref, provenance_job_id, created_at, created_floor, "
    "key, tier, importance, confidence, lifecycle, updated_at, coverage_start, coverage_end, "
    "ended_branch, ended_floor, token_estimate, flags, story_date"
)
# (table, event, the realm expression of the changed row)
_TRIGGERS = (
    ("memory_record", "INSERT", "NEW.realm_id"),
    ("memory_record", f"UPDATE OF {_CHANGED}", "NEW.realm_id"),
    ("memory_record", "DELETE", "OLD.realm_id"),
    ("memory_relation", "INSERT", _RELATION_REALM.format(row="NEW")),
    # A relation is deleted before its record (a purge): the record's realm is still there.
    ("memory_relation", "DELETE", _RELATION_REALM.format(row="OLD")),
)


def _name(table: str, event: str) -> str:
    return f"{table}_revision_{event.split()[0].lower()}"


def upgrade() -> None:
    op.create_table(
        "memory_revision",
        sa.Column("realm_id", sa.String(length=64), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("realm_id", name=op.f("pk_memory_revision")),
    )
    # Plain ADD COLUMN of a nullable column: no table rebuild on SQLite.
    op.add_column("memory_record", sa.Column("story_date", sa.String(length=64), nullable=True))
    postgres = op.get_bind().dialect.name == "postgresql"
    for table, event, realm in _TRIGGERS:
        name = _name(table, event)
        row = "OLD" if event == "DELETE" else "NEW"
        bump = _SQLITE_BUMP.format(realm=realm)
        if postgres:
            op.execute(
                f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$\n"
                f"BEGIN {bump} RETURN {row}; END $$"
            )
            op.execute(
                f"CREATE TRIGGER {name} AFTER {event} ON {table} "
                f"FOR EACH ROW EXECUTE FUNCTION {name}()"
            )
        else:
            op.execute(
                f"CREATE TRIGGER {name} AFTER {event} ON {table} FOR EACH ROW BEGIN {bump} END"
            )


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    for table, event, _ in _TRIGGERS:
        name = _name(table, event)
        op.execute(f"DROP TRIGGER IF EXISTS {name}" + (f" ON {table}" if postgres else ""))
        if postgres:
            op.execute(f"DROP FUNCTION IF EXISTS {name}()")
    with op.batch_alter_table("memory_record") as batch:
        batch.drop_column("story_date")
    op.drop_table("memory_revision")
