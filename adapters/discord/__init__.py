"""adapters.discord: the Discord front end on discord.py 2.x (the only package importing it).

Build a :class:`DiscordRunner` with a :class:`~engine.turns.api.RoleplayService` and
:class:`DiscordOptions`, then ``await runner.run()`` (or ``start()`` / ``close()``).

- A bound channel is a session (``/tavern start`` with a character the guild imported, or
  ``channels`` in the options); its threads are branches; a DM is a private session when
  ``allow_dms`` is on. A new chat opens with the card's greeting, posted as the character by
  ``/tavern start`` (or ``/character set`` before anyone has written) and stored as floor 1.
- Deleting a message hides its floor or page; ``/session export`` still writes it (marked
  ``is_system``, as SillyTavern marks hidden messages) unless ``include_hidden`` is off.
- Replies go through a webhook with the character's name: its own webhook wearing its card's
  picture when the card has one, else the channel's shared webhook (the bot with the name in
  bold without Manage Webhooks); they stream by edits within one shared budget, and split at
  2000 characters without breaking markdown.
- 🔄 ◀️ ▶️ on the latest reply regenerate and swipe; a failed turn's notice stands where the
  reply would have been, and 🔄 on it (or on the input) retries that floor.
- Slash commands answer ephemerally; ``/session set option value`` changes one session's
  options (the names of :mod:`engine.turns.options`, game masters only).
- Intents: guilds, guild and DM messages, message content (privileged), guild and DM
  reactions; guild members is optional (``members_intent``). See :func:`client.build_intents`.
- Several processes on one token: ``shard_count`` and ``shard_ids`` make the client discord.py's
  ``AutoShardedClient`` serving those shards only (:func:`client.build_client`); the process
  holding shard 0 publishes the commands (:attr:`DiscordOptions.syncs_commands`).
"""

from adapters.discord.options import DiscordOptions
from adapters.discord.runner import DiscordRunner

__all__ = ["DiscordOptions", "DiscordRunner"]
