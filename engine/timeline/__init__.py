"""engine.timeline: realms, sessions, branches, floors, pages and messages.

- :mod:`.values` — the frozen values storage returns (``Session``, ``Branch``, ``Floor``...).
- :mod:`.states` — the floor and page state machines (compare-and-set in storage).
- :mod:`.lineage` — which floors of which branches a branch sees.
- :mod:`.service` — ``TimelineService``: sessions, forks, floors, pages, commit, recovery.
- :mod:`.history` — ``HistoryService``: floors along a branch, platform-message links.
- :mod:`.assets` — ``AssetService``: cards, presets, world books, regex sets per realm.
- :mod:`.errors` — the typed refusals.
"""
