"""engine.turns: the turn workflow and the application service front ends call.

- :mod:`.api` — the ``RoleplayService`` protocol and its values (front ends use only this).
- :mod:`.service` — ``TavernService`` (built from :mod:`.base`, :mod:`.turn_ops`,
  :mod:`.session_ops`): respond, regenerate, continue, edit-and-regenerate,
  swipe, fork, history, variables, platform links, imports, previews, dry runs, exports, reset,
  LLM profiles; crash recovery on start.
- :mod:`.workflow` — one generation (director, assembly, streamed narrator with tools, summary
  tags, regex scripts, verifier), outside any transaction.
- :mod:`.context` — what a turn reads in one unit of work (assets, history window, variables,
  timed world-info state).
- :mod:`.tools` — the built-in tools, the per-session tool policy and execution records.
- :mod:`.profiles`, :mod:`.profile_store` — instance slots, LLM profiles, bindings, snapshots.
- :mod:`.greeting` — the card's first message on an empty branch.
- :mod:`.transfer` — imports, exports and dry runs; :mod:`.views` — floors as front ends show
  them; :mod:`.locks` — one generation per branch; :mod:`.errors` — the typed refusals.
"""
