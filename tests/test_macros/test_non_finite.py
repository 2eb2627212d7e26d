"""Issue 12: arithmetic that overflows to Infinity (or gives NaN) is a warning, never stored.

``{{setvar::m::1e308}}{{addvar::m::1e308}}`` used to store ``Infinity``, which SQLite prints as
invalid JSON, PostgreSQL refuses and an export cannot read back. Now the write is refused with
``macro_number_not_finite`` (message and position) and the variable keeps its value.
"""

from __future__ import annotations

import math

import pytest

from engine.macros import WARNING_CODES
from engine.macros.diagnostics import MACRO_NUMBER_NOT_FINITE
from engine.variables.values import first_non_finite
from tests.test_macros.util import codes, ctx, run


@pytest.mark.parametrize(
    ("template", "scope", "start"),
    [
        ("{{setvar::m::1e308}}{{addvar::m::1e308}}", "local", "1e308"),
        ("{{setglobalvar::m::1e308}}{{addglobalvar::m::1e308}}", "global", "1e308"),
        ("{{setvar::m::Infinity}}{{incvar::m}}", "local", "Infinity"),
        ("{{setvar::m::-Infinity}}{{decvar::m}}", "local", "-Infinity"),
        ("{{setvar::m::Infinity}}{{addvar::m::-Infinity}}", "local", "Infinity"),  # NaN
        ("{{.m = 1e308}}{{.m += 1e308}}", "local", "1e308"),
        ("{{.m = -1e308}}{{.m -= 1e308}}", "local", "-1e308"),
        ("{{$m = Infinity}}{{$m++}}", "global", "Infinity"),
    ],
)
def test_non_finite_result_warns_and_keeps_the_value(
    template: str, scope: str, start: str
) -> None:
    context = ctx()
    result = run(template, context)
    store = context.local if scope == "local" else context.global_vars
    assert store == {"m": start}  # the value set first, still text, never a float
    assert codes(result) == [MACRO_NUMBER_NOT_FINITE]
    warning = result.warnings[0]
    assert "'m'" in warning.message and "finite" in warning.message
    # The position is where the refused write stands in the template.
    assert warning.position == template.rindex("{{")
    assert [m.value for m in result.mutations] == [start]
    assert result.text == ""


def test_a_path_leaf_never_becomes_infinity_text() -> None:
    context = ctx(local={"a": {"b": "1e308"}})
    result = run("{{addvar::a.b::1e308}}{{getvar::a.b}}", context)
    assert codes(result) == [MACRO_NUMBER_NOT_FINITE]
    assert context.local == {"a": {"b": "1e308"}}
    assert result.text == "1e+308"


def test_extension_writes_of_non_finite_values_are_refused() -> None:
    from engine.macros import MacroDef, Registry, default_registry

    registry: Registry = default_registry().copy()

    def handler(env: object, args: list[str]) -> str:
        ok = env.set_variable("m", {"list": [1, math.nan]})  # type: ignore[attr-defined]
        return str(ok)

    registry.register(MacroDef(name="poke", handler=handler, writes=True))  # type: ignore[arg-type]
    context = ctx(local={"m": 1})
    result = run("{{poke}}", context, registry=registry)
    assert result.text == "False"
    assert codes(result) == [MACRO_NUMBER_NOT_FINITE]
    assert context.local == {"m": 1}


def test_finite_arithmetic_is_unchanged() -> None:
    context = ctx()
    result = run("{{setvar::m::1e307}}{{addvar::m::1e307}}{{incvar::n}}", context)
    assert codes(result) == []
    assert context.local == {"m": 2e307, "n": 1}


def test_the_code_is_a_known_warning_and_the_walker_finds_nested_values() -> None:
    assert MACRO_NUMBER_NOT_FINITE == "macro_number_not_finite"
    assert MACRO_NUMBER_NOT_FINITE in WARNING_CODES
    assert first_non_finite({"a": [1, {"b": -math.inf}]}) == -math.inf
    assert first_non_finite({"a": [1, "Infinity", 2.5]}) is None
