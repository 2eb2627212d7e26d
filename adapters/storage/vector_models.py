"""The table of unit vectors: one embedding per retrievable unit of a memory record.

A row is keyed by the unit (``record_id``, ``unit_index``: see :mod:`engine.memory.units`) and
holds the model that made it, the vector's dimension, a hash of the unit's text when embedded
and the vector itself: ``REAL[]`` on PostgreSQL, a JSON list on SQLite. Cosine similarity is
computed by the engine over the candidates a turn already loads, so no vector index is needed
(the pgvector extension is not required). No foreign key: a purged record's vectors are swept
by the embed job (:meth:`adapters.storage.vector_repo.SqlVectorStore.prune`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, REAL, Integer, String
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Mapped, mapped_column

from adapters.storage.memory_models import ID_LENGTH
from adapters.storage.models import Base

MODEL_NAME_LENGTH = 200
"""Longest embedding model name stored."""
TEXT_HASH_LENGTH = 32
"""Room for the unit text's hash (the engine keeps 16 hex characters)."""

VECTOR_TYPE = JSON().with_variant(ARRAY(REAL), "postgresql")
"""A float list: ``REAL[]`` on PostgreSQL, JSON elsewhere."""


class MemoryUnitVectorRow(Base):
    """The vector of one unit under one model (see :class:`engine.memory.ports.UnitVector`)."""

    __tablename__ = "memory_unit_vector"

    record_id: Mapped[str] = mapped_column(String(ID_LENGTH), primary_key=True)
    unit_index: Mapped[int] = mapped_column(Integer, primary_key=True)
    model: Mapped[str] = mapped_column(String(MODEL_NAME_LENGTH))
    dims: Mapped[int] = mapped_column(Integer)
    text_hash: Mapped[str] = mapped_column(String(TEXT_HASH_LENGTH))
    vector: Mapped[Any] = mapped_column(VECTOR_TYPE)
    created_at: Mapped[datetime] = mapped_column()
