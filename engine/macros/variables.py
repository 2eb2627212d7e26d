"""SillyTavern's variable-store semantics over the two macro views, with Core Profile paths.

Reads coerce numeric-looking strings to numbers (``"007"`` -> 7, ``"0x10"`` -> 16); ``add``
adds numbers, pushes onto JSON arrays or appends text (so ``incvar`` on text appends ``1``);
``set`` stores what it is given. Every write goes through :func:`write`, which applies the
phase, access and budget rules and records the mutation.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from engine.macros import paths
from engine.macros.diagnostics import (
    MACRO_MUTATION_LIMIT_EXCEEDED,
    MACRO_NUMBER_NOT_FINITE,
    MACRO_PREVIEW_SIDE_EFFECT_SUPPRESSED,
    Mutation,
    Scope,
)
from engine.macros.jsvalues import (
    JS_WHITESPACE,
    is_nan,
    js_falsy,
    js_number,
    json_stringify,
    number_to_string,
    string_to_number,
    to_display,
    to_number,
)
from engine.variables.values import first_non_finite

if TYPE_CHECKING:
    from engine.macros.evaluator import MacroEnv

MISSING: Any = paths.MISSING
_DELETE: Any = object()


def store_of(env: MacroEnv, scope: Scope) -> dict[str, Any]:
    """The dict behind a view."""
    return env.context.local if scope == "local" else env.context.global_vars


def coerce(value: Any) -> Any:
    """SillyTavern's getter: numeric-looking strings become numbers; missing becomes ``''``."""
    if value.__class__ is str:
        if not value or not value.strip(JS_WHITESPACE):
            return value
        number = string_to_number(value)
        return value if number != number else js_number(number)
    if value is MISSING or value is None:
        return ""
    if isinstance(value, bool):
        return value
    if isinstance(value, list):
        number = to_number(value)
        return value if is_nan(number) else js_number(number)
    return value


def lookup(env: MacroEnv, scope: Scope, key: str) -> tuple[bool, Any]:
    """``(exists, raw value)`` for a flat key or a path; raises :class:`paths.PathError`."""
    store = store_of(env, scope)
    value = store.get(key, MISSING)
    if value is not MISSING:
        return True, value
    if "." in key or "[" in key:
        path = paths.parse_path(key)
        if path.segments:
            return paths.read(store, path)
        value = store.get(path.root, MISSING)
    return value is not MISSING, value


def get(env: MacroEnv, scope: Scope, key: str) -> Any:
    """The coerced value (``''`` when missing)."""
    exists, value = lookup(env, scope, key)
    return coerce(value) if exists else ""


def has(env: MacroEnv, scope: Scope, key: str) -> bool:
    """Does the variable exist (a variable holding ``''`` exists)?"""
    return lookup(env, scope, key)[0]


def set_value(env: MacroEnv, scope: Scope, key: str, value: Any, source: str) -> bool:
    """Store ``value`` (a path writes a new copy of its root); False when refused."""
    store = store_of(env, scope)
    if key in store or ("." not in key and "[" not in key):
        return write(env, scope, key, value, source)
    path = paths.parse_path(key)
    if not path.segments:
        return write(env, scope, path.root, value, source)
    return write(env, scope, path.root, paths.written(store, path, value), source)


def delete(env: MacroEnv, scope: Scope, key: str, source: str) -> bool:
    """Delete a variable or a path's leaf; False when there was nothing to delete."""
    store = store_of(env, scope)
    if key in store:
        return write(env, scope, key, _DELETE, source)
    if "." not in key and "[" not in key:
        return False
    path = paths.parse_path(key)
    if not path.segments:
        return path.root in store and write(env, scope, path.root, _DELETE, source)
    new_root = paths.deleted(store, path)
    if new_root is MISSING:
        return False
    return write(env, scope, path.root, new_root, source)


def add(env: MacroEnv, scope: Scope, key: str, value: Any, source: str) -> Any:
    """SillyTavern's ``addvar``; returns the new value, or ``None`` when the write was refused."""
    current = get(env, scope, key)
    if js_falsy(current):
        current = 0
    pushed = _pushed(current, value)
    if pushed is not None:
        stored: Any = json_stringify(pushed) if current.__class__ is str else pushed
        return pushed if set_value(env, scope, key, stored, source) else None
    increment = to_number(value)
    base = to_number(current)
    if is_nan(increment) or is_nan(base):
        text = ("" if js_falsy(current) else to_display(current)) + to_display(value)
        return text if set_value(env, scope, key, text, source) else None
    total = base + increment
    if not math.isfinite(total):
        env.warn(
            MACRO_NUMBER_NOT_FINITE,
            f"'{key}' + {number_to_string(increment)} is {number_to_string(total)}, not a "
            f"finite number; '{key}' keeps its value",
        )
        return None
    result = js_number(total)
    # SillyTavern stores the number; inside a Core Profile path the leaf is stored as text,
    # as the Core Profile stores every scalar it writes.
    stored_number: Any = to_display(result) if paths.is_path(store_of(env, scope), key) else result
    return result if set_value(env, scope, key, stored_number, source) else None


def _pushed(current: Any, value: Any) -> list[Any] | None:
    if isinstance(current, list):
        return [*current, value]
    if current.__class__ is str and current.lstrip(JS_WHITESPACE).startswith("["):
        try:
            parsed = json.loads(current)
        except ValueError:
            return None
        if isinstance(parsed, list):
            return [*parsed, value]
    return None


def write(env: MacroEnv, scope: Scope, key: str, value: Any, source: str) -> bool:
    """Apply one write (``_DELETE`` deletes) unless the mutation budget is spent."""
    if env.mutation_count >= env.limits.max_mutations:
        env.warn_once(
            MACRO_MUTATION_LIMIT_EXCEEDED,
            f"write to '{key}' refused: more than {env.limits.max_mutations} writes "
            "(limit max_mutations)",
        )
        return False
    if value is not _DELETE:
        bad = first_non_finite(value)
        if bad is not None:
            # JSON has no NaN or Infinity: storage, exports and SQL would all break on it.
            env.warn(
                MACRO_NUMBER_NOT_FINITE,
                f"write to '{key}' refused: {number_to_string(bad)} is not a finite number; "
                f"'{key}' keeps its value",
            )
            return False
    store = store_of(env, scope)
    before = env.before_local if scope == "local" else env.before_global
    if key not in before:
        before[key] = store.get(key, MISSING)
    env.mutation_count += 1
    if value is _DELETE:
        store.pop(key, None)
        env.mutations.append(Mutation(kind="delete", scope=scope, key=key, source_macro=source))
    else:
        store[key] = value
        recorded = value if value.__class__ in (str, int, float) else _copy_json(value)
        env.mutations.append(
            Mutation(kind="set", scope=scope, key=key, value=recorded, source_macro=source)
        )
    if env.phase in ("preview", "dry_run"):
        env.warn(
            MACRO_PREVIEW_SIDE_EFFECT_SUPPRESSED,
            f"write to {scope} variable '{key}' is only previewed in phase {env.phase}",
        )
    return True


def _copy_json(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_json(v) for v in value]
    return value


def snapshot_value(env: MacroEnv, scope: Scope, key: str) -> Any:
    """A variable as it was when the evaluation started (bare ``{{name}}`` reads this)."""
    before = env.before_local if scope == "local" else env.before_global
    if key in before:
        return before[key]
    return store_of(env, scope).get(key, MISSING)


def display(value: Any) -> str:
    """A coerced value as macro output."""
    return value if value.__class__ is str else to_display(value)
