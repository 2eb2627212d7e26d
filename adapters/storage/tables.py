"""The Core table handles every repository and statement module uses (one place, so a
statement never names a table through a second, differently typed handle)."""

from __future__ import annotations

from typing import cast

from sqlalchemy import Table

from adapters.storage.memory_models import MemoryJobRow, MemoryRecordRow, MemoryRelationRow
from adapters.storage.models import (
    AssetRow,
    BranchRow,
    FloorRow,
    MessageRow,
    PageRow,
    PlatformLinkRow,
    ProcessLeaseRow,
    RealmRow,
    SessionRow,
    VariableLogRow,
    VariableSnapshotRow,
    VariableValueRow,
)
from adapters.storage.telegram_models import RoleLeaseRow, TelegramUpdateRow
from adapters.storage.vector_models import MemoryUnitVectorRow

# SQLAlchemy types a mapped class's ``__table__`` as the wider ``FromClause``; a declarative
# class with columns always has a ``Table`` there, which the statements need (``.c``, inserts).
REALM = cast(Table, RealmRow.__table__)
SESSION = cast(Table, SessionRow.__table__)
BRANCH = cast(Table, BranchRow.__table__)
FLOOR = cast(Table, FloorRow.__table__)
PAGE = cast(Table, PageRow.__table__)
MESSAGE = cast(Table, MessageRow.__table__)
LINK = cast(Table, PlatformLinkRow.__table__)
ASSET = cast(Table, AssetRow.__table__)
LEASE = cast(Table, ProcessLeaseRow.__table__)
LOG = cast(Table, VariableLogRow.__table__)
VALUE = cast(Table, VariableValueRow.__table__)
SNAPSHOT = cast(Table, VariableSnapshotRow.__table__)
RECORD = cast(Table, MemoryRecordRow.__table__)
RELATION = cast(Table, MemoryRelationRow.__table__)
JOB = cast(Table, MemoryJobRow.__table__)
TELEGRAM_UPDATE = cast(Table, TelegramUpdateRow.__table__)
ROLE_LEASE = cast(Table, RoleLeaseRow.__table__)
UNIT_VECTOR = cast(Table, MemoryUnitVectorRow.__table__)
