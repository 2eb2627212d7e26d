"""Group role-play: several characters in one session, as SillyTavern's group chats.

- :mod:`engine.group.settings` the group's members, muted members, activation strategy and
  generation mode (:class:`GroupSettings`), with :data:`MAX_GROUP_MEMBERS`;
- :mod:`engine.group.activation` which members answer a turn (:func:`activate`), reproducibly
  from a seed.

Pure values and functions: storage keeps the settings, the turn service asks who speaks, and
:class:`engine.prompt.inputs.GroupPrompt` carries the group into prompt assembly. The package
sits beside ``engine.prompt`` rather than inside it because who speaks is decided before any
prompt exists (and a swipe re-runs one reply without deciding again).
"""
