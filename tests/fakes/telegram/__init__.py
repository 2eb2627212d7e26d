"""A loopback fake of the Telegram Bot API for end-to-end tests through the real aiogram client."""

from tests.fakes.telegram.server import Call, FakeTelegramServer

__all__ = ["Call", "FakeTelegramServer"]
