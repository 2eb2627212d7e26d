"""The macro registry: built-in and extension macros, their aliases and argument specs, and the
context providers extensions use to put their data into a :class:`MacroContext`.

Names are case-insensitive. A definition declares positional arguments (an optional one makes
every later one optional), an optional list tail (``random``, ``pick``, ``//``), whether it
may be scoped (derived from its arity, as in SillyTavern), whether it writes state (write
macros are refused in read-only mode and in the ``commit`` phase) and a handler receiving the
evaluation environment and the evaluated arguments.
"""

from __future__ import annotations

import itertools
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from engine.errors import ConfigurationError, EngineError
from engine.macros.context import MacroContext

if TYPE_CHECKING:
    from engine.macros.evaluator import MacroEnv

ArgType = Literal["string", "integer", "number", "boolean"]
MacroHandler = Callable[["MacroEnv", list[str]], object]
ContextProvider = Callable[[MacroContext], None]

_INTEGER = re.compile(r"-?\d+\Z")
_BOOLEANS = frozenset({"on", "true", "1", "off", "false", "0"})
_NAME = re.compile(r"(?:[A-Za-z][A-Za-z0-9_-]*|//)\Z")
_GENERATIONS = itertools.count(1)


class MacroArgumentError(EngineError):
    """Raised by a handler when an argument is unusable; the macro stays raw and the message
    becomes a ``macro_arg_type_invalid`` warning."""


class MacroKeepRaw(EngineError):
    """Raised by a handler that already reported its problem: the macro stays raw."""


class MacroValueMissing(EngineError):
    """Raised by a handler when a value it needs was not supplied (``{{original}}``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ArgSpec:
    """One declared positional argument."""

    name: str
    type: ArgType = "string"
    optional: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class MacroDef:
    """A registered macro. ``list_args`` is ``(min, max)`` extra list items (``max`` ``None``
    for unbounded) beyond the declared arguments; ``strict`` arity failures keep the macro raw.
    ``delay_args`` hands the handler raw argument text (only ``if`` uses it); ``scoped=False``
    forbids the ``{{name}}...{{/name}}`` form even when the arity would allow it."""

    name: str
    handler: MacroHandler
    args: tuple[ArgSpec, ...] = ()
    aliases: tuple[str, ...] = ()
    list_args: tuple[int, int | None] | None = None
    strict: bool = True
    delay_args: bool = False
    writes: bool = False
    scoped: bool = True
    description: str = ""
    min_args: int = field(init=False)
    max_args: int = field(init=False)
    typed: bool = field(init=False)

    def __post_init__(self) -> None:
        minimum = len(self.args)
        for index, spec in enumerate(self.args):
            if spec.optional:
                minimum = index
                break
        object.__setattr__(self, "min_args", minimum)
        object.__setattr__(self, "max_args", len(self.args))
        object.__setattr__(self, "typed", any(spec.type != "string" for spec in self.args))

    def arity_ok(self, count: int) -> bool:
        """SillyTavern's ``isArgsValid``."""
        if self.list_args is None:
            return self.min_args <= count <= self.max_args
        list_min, list_max = self.list_args
        if count < self.min_args + list_min:
            return False
        return list_max is None or max(0, count - self.max_args) <= list_max

    def type_error(self, values: list[str]) -> str | None:
        """Why a declared argument has the wrong type, or ``None``."""
        for spec, value in zip(self.args, values, strict=False):
            kind = spec.type
            if kind == "string":
                continue
            text = value.strip()
            if kind == "integer" and not _INTEGER.match(text):
                return f"argument '{spec.name}' must be an integer, got {value!r}"
            if kind == "number":
                from engine.macros.jsvalues import string_to_number

                number = string_to_number(text)
                if number != number or number in (float("inf"), float("-inf")):
                    return f"argument '{spec.name}' must be a number, got {value!r}"
            if kind == "boolean" and text.lower() not in _BOOLEANS:
                return f"argument '{spec.name}' must be a boolean, got {value!r}"
        return None

    def accepts_content(self, inline_args: int) -> bool:
        """May this macro be scoped with ``inline_args`` arguments before its content? (Only when
        its arity leaves room for the content, and never when it is declared not scoped.)"""
        if self.list_args is not None or not self.scoped:
            return False
        return self.min_args <= inline_args + 1 <= self.max_args


class Registry:
    """Macro definitions by lower-cased name (aliases included) and context providers.

    ``generation`` changes on every registration, so parsed templates cached under an older
    generation are not reused (scoped pairing depends on the registry).
    """

    def __init__(self) -> None:
        self._by_name: dict[str, MacroDef] = {}
        self._primary: dict[str, MacroDef] = {}
        self._providers: list[ContextProvider] = []
        self._lock = threading.Lock()
        self.generation = next(_GENERATIONS)

    def register(self, definition: MacroDef, *, replace: bool = True) -> MacroDef:
        """Add (or replace) a macro; returns it unchanged."""
        names = (definition.name, *definition.aliases)
        for name in names:
            if not _NAME.match(name):
                raise ConfigurationError(
                    f"macro name {name!r} is not a valid macro identifier "
                    "(a letter, then letters, digits, '_' or '-')"
                )
            if not replace and name.lower() in self._by_name:
                raise ConfigurationError(f"macro {name!r} is already registered")
        with self._lock:
            for name in names:
                self._by_name[name.lower()] = definition
            self._primary[definition.name.lower()] = definition
            self.generation = next(_GENERATIONS)
        return definition

    def macro(
        self,
        name: str,
        *,
        args: Iterable[ArgSpec] = (),
        aliases: Iterable[str] = (),
        list_args: tuple[int, int | None] | None = None,
        strict: bool = True,
        writes: bool = False,
        scoped: bool = True,
        description: str = "",
    ) -> Callable[[MacroHandler], MacroHandler]:
        """Decorator form of :meth:`register`; the handler is returned unchanged."""

        def decorate(handler: MacroHandler) -> MacroHandler:
            self.register(
                MacroDef(
                    name=name,
                    handler=handler,
                    args=tuple(args),
                    aliases=tuple(aliases),
                    list_args=list_args,
                    strict=strict,
                    writes=writes,
                    scoped=scoped,
                    description=description,
                )
            )
            return handler

        return decorate

    def unregister(self, name: str) -> None:
        """Remove a macro and its aliases (no error when it is not registered)."""
        with self._lock:
            definition = self._by_name.get(name.lower())
            if definition is None:
                return
            for alias in (definition.name, *definition.aliases):
                self._by_name.pop(alias.lower(), None)
            self._primary.pop(definition.name.lower(), None)
            self.generation = next(_GENERATIONS)

    def get(self, name: str) -> MacroDef | None:
        """The definition for a (case-insensitive) name or alias."""
        return self._by_name.get(name.lower())

    def lookup(self, lower_name: str) -> MacroDef | None:
        """The definition for an already lower-cased name (the evaluator's hot path)."""
        return self._by_name.get(lower_name)

    def can_accept(self, lower_name: str, inline_args: int) -> bool:
        """Scoped pairing rule: unknown names may take content, list macros never do."""
        definition = self._by_name.get(lower_name)
        return True if definition is None else definition.accepts_content(inline_args)

    def definitions(self) -> list[MacroDef]:
        """Every registered macro once, by primary name."""
        return sorted(self._primary.values(), key=lambda d: d.name.lower())

    def register_provider(self, provider: ContextProvider) -> ContextProvider:
        """Add a context provider (it fills ``context.extra`` for an extension's macros)."""
        with self._lock:
            self._providers.append(provider)
        return provider

    def apply_providers(self, context: MacroContext) -> MacroContext:
        """Run every provider on ``context`` (when a context is built, never per evaluation)."""
        for provider in list(self._providers):
            provider(context)
        return context

    def copy(self) -> Registry:
        """An independent registry with the same definitions and providers."""
        other = Registry()
        other._by_name = dict(self._by_name)
        other._primary = dict(self._primary)
        other._providers = list(self._providers)
        return other


_DEFAULT: Registry | None = None
_DEFAULT_LOCK = threading.Lock()


def default_registry() -> Registry:
    """The process-wide registry with every built-in macro (built on first use)."""
    global _DEFAULT
    if _DEFAULT is None:
        with _DEFAULT_LOCK:
            if _DEFAULT is None:
                from engine.macros.catalog import install_builtins

                registry = Registry()
                install_builtins(registry)
                _DEFAULT = registry
    return _DEFAULT
