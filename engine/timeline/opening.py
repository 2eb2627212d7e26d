"""Opening a floor: the checks every new floor passes with its branch locked, linking its
inputs to their platform messages, and :func:`open_generating`, the turn's way in (see
:mod:`engine.timeline.service` for the rest of a floor's life)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from engine.ports import LatestFloor, UnitOfWork
from engine.timeline.checks import check_inputs
from engine.timeline.errors import BranchBusyError
from engine.timeline.lineage import build_lineage
from engine.timeline.values import Branch, Floor, NewMessage, Page, PlatformLink
from engine.variables import store

__all__ = ["OpenedFloor", "link_inputs", "next_floor", "open_generating", "settle_new_floor"]


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenedFloor:
    """A floor opened straight into ``generating`` with its first page."""

    floor: Floor
    page: Page
    floor_scope: Mapping[str, Any]


async def next_floor(
    uow: UnitOfWork, branch: Branch, branches: Sequence[Branch], inputs: Sequence[NewMessage]
) -> tuple[int, LatestFloor]:
    """Inside ``uow``: the checks every new floor passes, with the branch locked. Returns the
    new floor's number and what was found at the branch's head (``next_floor_writes`` set
    when explicit floor-scope writes may wait for the new floor). BranchBusyError while
    another floor or page of the branch is in progress."""
    check_inputs(inputs, where=f"branch {branch.name!r}")
    await uow.branches.lock(branch.id)
    found = await uow.floors.latest_for_open(branch.id)
    latest = found.floor
    if latest is not None and latest.state != "committed":
        raise BranchBusyError(
            f"branch {branch.name!r}: floor {latest.seq} is still {latest.state}"
        )
    if latest is not None and found.pending:
        raise BranchBusyError(f"branch {branch.name!r}: floor {latest.seq} is regenerating")
    # A failed floor keeps its number: the new floor goes after the newest one of any state.
    base = build_lineage(branch, branches).base
    seq = (base if found.newest_seq is None else max(found.newest_seq, base)) + 1
    if latest is None or latest.seq != seq - 1:
        found = replace(found, next_floor_writes=True)  # positioned after a failed floor
    return seq, found


async def settle_new_floor(
    uow: UnitOfWork,
    branch: Branch,
    floor: Floor,
    inputs: Sequence[NewMessage],
    found: LatestFloor,
) -> dict[str, Any]:
    """Inside ``uow``: link a new floor's inputs to their platform messages and materialise
    its floor scope (explicit writes made for it before it existed); returns that scope."""
    await link_inputs(uow, branch.session_id, floor, inputs)
    scope: dict[str, Any] = {}
    if found.next_floor_writes:  # rare: explicit floor-scope writes made before this floor
        scope = await store.floor_scope(uow, floor, None)
        if scope:
            await uow.variables.replace("floor", floor.id, scope)
    return scope


async def open_generating(
    uow: UnitOfWork,
    branch: Branch,
    branches: Sequence[Branch],
    inputs: Sequence[NewMessage],
    *,
    owner: str | None = None,
    speaker: str | None = None,
    seed: int | None = None,
) -> OpenedFloor:
    """Inside ``uow``: a turn's new floor after the branch's head, already ``generating``
    with ``inputs`` and a pending page 1; its floor scope (explicit writes made for it) is
    materialised. ``branches``: every branch of the session, read in ``uow``.
    BranchBusyError while another floor or page of the branch is in progress. The caller
    emits ``floor.created`` once ``uow`` has committed. ``owner``: the process lease the
    floor and page belong to; ``speaker`` and ``seed``: a group reply's member and its turn's
    activation seed (see :class:`~engine.timeline.values.Floor`)."""
    seq, found = await next_floor(uow, branch, branches, inputs)
    floor, page = await uow.floors.open_generating(
        branch_id=branch.id, seq=seq, inputs=inputs, owner=owner, speaker=speaker, seed=seed
    )
    scope = await settle_new_floor(uow, branch, floor, inputs, found)
    return OpenedFloor(floor=floor, page=page, floor_scope=scope)


async def link_inputs(
    uow: UnitOfWork, session_id: int, floor: Floor, inputs: Sequence[NewMessage]
) -> None:
    """Map each input's platform message to its floor, so a reply or deletion finds it."""
    for message in inputs:
        if message.platform_ref is not None:
            await uow.links.put(
                PlatformLink(
                    session_id=session_id,
                    platform_ref=message.platform_ref,
                    branch_id=floor.branch_id,
                    floor_id=floor.id,
                    page_id=None,
                    role="user",
                )
            )
