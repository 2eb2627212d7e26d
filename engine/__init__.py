"""The tavernbot role-play engine.

Pure Python: it knows nothing of Discord, Telegram, databases or HTTP. Front ends and storage
reach it through the Protocols in :mod:`engine.ports`; everything it hands back is a frozen
dataclass. See ``DESIGN.md`` section 1 for the dependency rules (checked by import-linter).
"""

from engine.errors import EngineError

__all__ = ["EngineError"]
