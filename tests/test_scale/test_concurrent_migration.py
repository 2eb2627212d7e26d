"""Processes started together on a fresh PostgreSQL database migrate one after the other
(``adapters.storage.migrate.MIGRATION_LOCK_KEY``) instead of colliding in the catalogue."""

from __future__ import annotations

import asyncio
import os
import sys

from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from adapters.storage.migrate import head_revision
from tests.conftest import ROOT
from tests.test_scale.process_support import fresh_database

PROCESSES = 3
WAIT_S = 120.0


async def test_processes_migrating_one_fresh_database_at_once_all_succeed(pg_url: str) -> None:
    async with fresh_database(pg_url) as url:
        procs = [
            await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "bot",
                "db",
                "upgrade",
                cwd=ROOT,
                env={**os.environ, "DATABASE_URL": url},
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            for _ in range(PROCESSES)
        ]
        try:
            async with asyncio.timeout(WAIT_S):
                outcomes = [await proc.communicate() for proc in procs]
        finally:
            for proc in procs:
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
        for proc, (_, err) in zip(procs, outcomes, strict=True):
            assert proc.returncode == 0, err.decode()
        engine = create_async_engine(url)
        try:
            async with engine.connect() as conn:
                version = (
                    await conn.execute(text("select version_num from alembic_version"))
                ).all()
        finally:
            await engine.dispose()
        assert version == [(head_revision(),)]
