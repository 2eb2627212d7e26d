"""engine.variables: the five scopes ``page -> floor -> branch -> chat -> global``.

- :mod:`.values` — ``Mutation``, ``VariableState``, log and history entries, scope names.
- :mod:`.fold` — what a mutation log means (deltas, ``DELETED``).
- :mod:`.store` — how state is kept: materialised heads, snapshots, bounded folds.
- :mod:`.service` — ``VariableService``: read anywhere, explicit writes, history.
"""
