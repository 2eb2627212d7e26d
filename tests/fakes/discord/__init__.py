"""A loopback fake of Discord's REST API and gateway, driven by tests through real discord.py."""

from tests.fakes.discord.interactions import CommandNotSynced, InteractionRecord
from tests.fakes.discord.server import FakeDiscord, Limits
from tests.fakes.discord.world import Channel, Guild, Role, User

__all__ = [
    "Channel",
    "CommandNotSynced",
    "FakeDiscord",
    "Guild",
    "InteractionRecord",
    "Limits",
    "Role",
    "User",
]
