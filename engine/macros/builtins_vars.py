"""Variable macros: ``setvar``/``getvar``/``addvar``/``incvar``/``decvar``/``hasvar``/``deletevar``
and their global forms, with aliases (``varexists``, ``flushvar``, ...) and Core Profile paths."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from engine.macros import diagnostics as d
from engine.macros import variables as v
from engine.macros.paths import PathError
from engine.macros.registry import ArgSpec, MacroArgumentError, MacroDef, MacroKeepRaw, Registry

if TYPE_CHECKING:
    from engine.macros.evaluator import MacroEnv

Handler = Callable[["MacroEnv", list[str]], object]


def _guard(
    scope: d.Scope,
    body: Callable[[MacroEnv, d.Scope, str, list[str]], object],
    *,
    writes: bool = False,
) -> Handler:
    """Wrap a variable operation: refuses writes to an empty name (as SillyTavern's store
    does) and turns path errors into warnings."""

    def handler(env: MacroEnv, args: list[str]) -> object:
        name = args[0]
        if not name:
            if writes:
                raise MacroArgumentError("the variable name is empty")
            return "false" if body is _has else ""
        try:
            return body(env, scope, name, args)
        except PathError as exc:
            code = d.MACRO_PARSE_FAILED if exc.code == "parse" else d.MACRO_ARG_TYPE_INVALID
            env.warn(code, f"macro '{env.call_name}': {exc.message}", name=env.call_name)
            raise MacroKeepRaw(exc.message) from exc

    return handler


def _source(env: MacroEnv) -> str:
    return env.call_name


def _set(env: MacroEnv, scope: d.Scope, name: str, args: list[str]) -> str:
    v.set_value(env, scope, name, args[1], _source(env))
    return ""


def _add(env: MacroEnv, scope: d.Scope, name: str, args: list[str]) -> str:
    v.add(env, scope, name, args[1], _source(env))
    return ""


def _step(amount: int) -> Callable[[MacroEnv, d.Scope, str, list[str]], object]:
    def body(env: MacroEnv, scope: d.Scope, name: str, args: list[str]) -> object:
        result = v.add(env, scope, name, amount, _source(env))
        return "" if result is None else v.display(result)

    return body


def _get(env: MacroEnv, scope: d.Scope, name: str, args: list[str]) -> str:
    return v.display(v.get(env, scope, name))


def _has(env: MacroEnv, scope: d.Scope, name: str, args: list[str]) -> str:
    return "true" if v.has(env, scope, name) else "false"


def _delete(env: MacroEnv, scope: d.Scope, name: str, args: list[str]) -> str:
    v.delete(env, scope, name, _source(env))
    return ""


def install(registry: Registry) -> None:
    """Register the variable macros for both views."""
    name = ArgSpec(name="name")
    value = ArgSpec(name="value")
    for scope, infix in (("local", ""), ("global", "global")):
        s: d.Scope = scope  # type: ignore[assignment]
        defs = [
            MacroDef(
                name=f"set{infix}var",
                handler=_guard(s, _set, writes=True),
                args=(name, value),
                writes=True,
            ),
            MacroDef(
                name=f"add{infix}var",
                handler=_guard(s, _add, writes=True),
                args=(name, value),
                writes=True,
            ),
            MacroDef(
                name=f"inc{infix}var",
                handler=_guard(s, _step(1), writes=True),
                args=(name,),
                writes=True,
            ),
            MacroDef(
                name=f"dec{infix}var",
                handler=_guard(s, _step(-1), writes=True),
                args=(name,),
                writes=True,
            ),
            MacroDef(name=f"get{infix}var", handler=_guard(s, _get), args=(name,)),
            MacroDef(
                name=f"has{infix}var",
                aliases=(f"{infix}varexists",),
                handler=_guard(s, _has),
                args=(name,),
            ),
            MacroDef(
                name=f"delete{infix}var",
                aliases=(f"flush{infix}var",),
                handler=_guard(s, _delete),
                args=(name,),
                writes=True,
            ),
        ]
        for definition in defs:
            registry.register(definition)
