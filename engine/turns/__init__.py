"""engine.turns: the turn workflow and the application service front ends call.

- :mod:`.api` — the ``RoleplayService`` protocol and its values (front ends use only this).
- :mod:`.service` — ``TavernService``, a thin facade over the services of :mod:`.parts`, each
  a plain class named for what it owns: :mod:`.sessions`, :mod:`.session_settings`,
  :mod:`.branches`, :mod:`.turns` (with :mod:`.failures`), :mod:`.pages`, :mod:`.personas`,
  :mod:`.variables`, :mod:`.assets`, :mod:`.profile_store`, :mod:`.memory_access`,
  :mod:`.links`, :mod:`.transfer` (with :mod:`.st_lines`), :mod:`.previews` and
  :mod:`.recovery`.
- :mod:`.workflow` — one generation (director, streamed narrator with tools, summary tags,
  regex scripts, verifier), outside any transaction; :mod:`.turn_prompt` — its options and
  the prompt assembly.
- :mod:`.context` — what a turn reads in one unit of work (history window, variables, timed
  world-info state); :mod:`.parsed_assets` — the session's bound assets, parsed and cached.
- :mod:`.tools`, :mod:`.tool_builtins` — the per-session tool policy, the execution records
  and the box that runs a turn's calls; the built-in tools.
- :mod:`.profiles`, :mod:`.profile_store` — instance slots, LLM profiles, bindings, snapshots.
- :mod:`.greeting` — the card's first message on an empty branch.
- :mod:`.options`, :mod:`.notes` — the session options and the Author's Note.
- :mod:`.views` — floors as front ends show them; :mod:`.locks` — one generation per branch;
  :mod:`.events` — emitting events; :mod:`.errors` — the typed refusals.
"""
