"""Loopback fakes of the outside world (model server, Discord, Telegram) and port fakes."""
