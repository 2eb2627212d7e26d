"""The fake gateway: HELLO, IDENTIFY -> READY + GUILD_CREATE, heartbeats, RESUME, dispatches.

One :class:`GatewaySession` per IDENTIFY; it keeps its sequence number and a bounded buffer of
what it dispatched, so a RESUME after a dropped connection replays what the client missed (as
Discord does). Frames are plain JSON text, or a zlib stream when the client asks for
``compress=zlib-stream`` and the server allows it.

Sharding as Discord does it: an IDENTIFY with ``shard: [id, count]`` makes a session of that
shard, which gets READY, GUILD_CREATE and the events of the guilds whose
``(guild_id >> 22) % count == id`` only; events outside any guild (direct messages) go to
shard 0. An id outside ``0..count-1`` is closed with 4010 (invalid shard).
"""

from __future__ import annotations

import asyncio
import json
import secrets
import zlib
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import WSMsgType, web

if TYPE_CHECKING:
    from tests.fakes.discord.server import FakeDiscord

OP_DISPATCH = 0
OP_HEARTBEAT = 1
OP_IDENTIFY = 2
OP_RESUME = 6
OP_RECONNECT = 7
OP_REQUEST_MEMBERS = 8
OP_INVALID_SESSION = 9
OP_HELLO = 10
OP_HEARTBEAT_ACK = 11
CLOSE_INVALID_SHARD = 4010

HEARTBEAT_INTERVAL_MS = 10_000
REPLAY_BUFFER = 2_000  # dispatches kept per session for RESUME


@dataclass
class GatewaySession:
    """An identified session: survives its connection so that it can be resumed."""

    session_id: str
    intents: int
    seq: int = 0
    sent: deque[tuple[int, str, dict[str, Any]]] = field(
        default_factory=lambda: deque(maxlen=REPLAY_BUFFER)
    )
    conn: Connection | None = None
    shard: tuple[int, int] | None = None
    """``(shard_id, shard_count)`` from IDENTIFY; None for an unsharded session."""

    def owns(self, guild_id: int | None) -> bool:
        """Whether this session receives the events of ``guild_id`` (None: not in a guild)."""
        if self.shard is None:
            return True
        shard_id, count = self.shard
        if guild_id is None:
            return shard_id == 0
        return shard_of(guild_id, count) == shard_id


def shard_of(guild_id: int, shard_count: int) -> int:
    """The shard Discord puts a guild on."""
    return (guild_id >> 22) % shard_count


def event_guild(event: str, data: dict[str, Any]) -> int | None:
    """The guild an event belongs to (None for direct messages and the like)."""
    if "guild_id" in data and data["guild_id"] is not None:
        return int(data["guild_id"])
    if event.startswith("GUILD_") and "id" in data:
        return int(data["id"])
    return None


class Connection:
    """One websocket connection and its (optional) zlib stream."""

    def __init__(self, ws: web.WebSocketResponse, compress: bool) -> None:
        self.ws = ws
        self._zlib = zlib.compressobj() if compress else None
        self._lock = asyncio.Lock()

    async def send(self, payload: dict[str, Any]) -> None:
        """Send one gateway payload (text, or a sync-flushed zlib chunk)."""
        text = json.dumps(payload)
        async with self._lock:
            if self.ws.closed:
                return
            if self._zlib is None:
                await self.ws.send_str(text)
            else:
                data = self._zlib.compress(text.encode()) + self._zlib.flush(zlib.Z_SYNC_FLUSH)
                await self.ws.send_bytes(data)


class Gateway:
    """The websocket endpoint of a :class:`FakeDiscord`."""

    def __init__(self, server: FakeDiscord) -> None:
        self.server = server
        self.sessions: dict[str, GatewaySession] = {}
        self.identifies = 0
        self.resumes = 0
        self.connections = 0
        self._ready = asyncio.Event()

    @property
    def live(self) -> list[GatewaySession]:
        """Sessions with an open connection."""
        return [s for s in self.sessions.values() if s.conn is not None]

    @property
    def live_shards(self) -> list[int]:
        """The shard ids of the sessions with an open connection, sorted (one entry per
        session, so a shard identified twice shows twice)."""
        return sorted(s.shard[0] for s in self.live if s.shard is not None)

    async def handle(self, request: web.Request) -> web.WebSocketResponse:
        """Serve one client connection until it closes."""
        ws = web.WebSocketResponse(autoping=True, max_msg_size=0)
        await ws.prepare(request)
        self.connections += 1
        compress = self.server.allow_compression and (
            request.query.get("compress") == "zlib-stream"
        )
        conn = Connection(ws, compress)
        session: GatewaySession | None = None
        self.server.track_ws(ws)
        try:
            await conn.send({"op": OP_HELLO, "d": {"heartbeat_interval": HEARTBEAT_INTERVAL_MS}})
            async for msg in ws:
                if msg.type != WSMsgType.TEXT:
                    continue
                frame = json.loads(msg.data)
                session = await self._on_frame(conn, session, frame)
        finally:
            if session is not None and session.conn is conn:
                session.conn = None
            self.server.untrack_ws(ws)
        return ws

    async def _on_frame(
        self, conn: Connection, session: GatewaySession | None, frame: dict[str, Any]
    ) -> GatewaySession | None:
        op, data = frame.get("op"), frame.get("d")
        self.server.gateway_log.append((op, data))
        if op == OP_HEARTBEAT:
            await conn.send({"op": OP_HEARTBEAT_ACK})
        elif op == OP_IDENTIFY:
            if data.get("token") != self.server.token:
                await conn.ws.close(code=4004, message=b"Authentication failed")
                return session
            shard = data.get("shard")
            if shard is not None and not 0 <= shard[0] < shard[1]:
                await conn.ws.close(code=CLOSE_INVALID_SHARD, message=b"Invalid shard")
                return session
            self.identifies += 1
            session = GatewaySession(
                session_id=secrets.token_hex(8),
                intents=data["intents"],
                shard=(shard[0], shard[1]) if shard is not None else None,
            )
            self.sessions[session.session_id] = session
            session.conn = conn
            await self._ready_sequence(session)
        elif op == OP_RESUME:
            known = self.sessions.get(data.get("session_id", ""))
            if known is None or data.get("token") != self.server.token:
                await conn.send({"op": OP_INVALID_SESSION, "d": False})
                return session
            self.resumes += 1
            session = known
            session.conn = conn
            for seq, event, payload in list(session.sent):
                if seq > (data.get("seq") or 0):
                    await conn.send({"op": OP_DISPATCH, "s": seq, "t": event, "d": payload})
            await self._dispatch_to(session, "RESUMED", {})
        elif op == OP_REQUEST_MEMBERS:
            guild = self.server.guilds[int(data["guild_id"])]
            chunk = {
                "guild_id": str(guild.id),
                "members": [guild.member_payload(uid) for uid in guild.members],
                "chunk_index": 0,
                "chunk_count": 1,
                "nonce": data.get("nonce"),
            }
            await self._dispatch_to(session, "GUILD_MEMBERS_CHUNK", chunk)
        return session

    async def _ready_sequence(self, session: GatewaySession) -> None:
        srv = self.server
        ready = {
            "v": 10,
            "user": srv.bot.payload(),
            "session_id": session.session_id,
            "resume_gateway_url": srv.gateway_url,
            "guilds": [{"id": str(g), "unavailable": True} for g in srv.guilds if session.owns(g)],
            "private_channels": [],
            "relationships": [],
            "application": {"id": str(srv.app_id), "flags": 0},
            "session_type": "normal",
        }
        if session.shard is not None:
            ready["shard"] = list(session.shard)
        await self._dispatch_to(session, "READY", ready)
        for guild in srv.guilds.values():
            if session.owns(guild.id):
                await self._dispatch_to(session, "GUILD_CREATE", guild.payload())
        self._ready.set()
        srv.notify()

    async def _dispatch_to(
        self, session: GatewaySession | None, event: str, data: dict[str, Any]
    ) -> None:
        if session is None:
            return
        session.seq += 1
        session.sent.append((session.seq, event, data))
        if session.conn is not None:
            await session.conn.send({"op": OP_DISPATCH, "s": session.seq, "t": event, "d": data})

    async def dispatch(self, event: str, data: dict[str, Any]) -> None:
        """Send an event to every identified session of its guild's shard (buffered for those
        disconnected)."""
        guild_id = event_guild(event, data)
        for session in list(self.sessions.values()):
            if not session.owns(guild_id):
                continue
            payload = data
            if event.startswith("MESSAGE_REACTION") and not (
                session.intents & (1 << 10) or session.intents & (1 << 13)
            ):
                continue
            if event in ("MESSAGE_CREATE", "MESSAGE_UPDATE") and not (session.intents & (1 << 15)):
                payload = _without_content(data, self.server.bot.id)
            await self._dispatch_to(session, event, payload)

    async def wait_ready(self, wait_s: float) -> None:
        """Wait until a session got READY."""
        await asyncio.wait_for(self._ready.wait(), wait_s)

    async def drop(self, code: int = 4000) -> None:
        """Close every live connection with ``code`` (4000: the client resumes)."""
        for session in self.live:
            conn = session.conn
            session.conn = None
            if conn is not None:
                await conn.ws.close(code=code, message=b"fake reconnect")

    async def request_reconnect(self) -> None:
        """Send op 7 RECONNECT: the client closes and resumes."""
        for session in self.live:
            if session.conn is not None:
                await session.conn.send({"op": OP_RECONNECT, "d": None})


def _without_content(data: dict[str, Any], bot_id: int) -> dict[str, Any]:
    """Discord blanks content for bots without the MESSAGE_CONTENT intent, unless mentioned."""
    mentioned = any(m.get("id") == str(bot_id) for m in data.get("mentions", []))
    if mentioned or data.get("author", {}).get("id") == str(bot_id):
        return data
    return {**data, "content": "", "embeds": [], "attachments": []}
