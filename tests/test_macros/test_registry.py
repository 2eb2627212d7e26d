"""The registry: extension macros, argument specs, scoping, providers, cache, cycles."""

from __future__ import annotations

import pytest

from engine.errors import ConfigurationError
from engine.macros import (
    ArgSpec,
    MacroArgumentError,
    MacroDef,
    MacroEnv,
    Registry,
    TemplateCache,
    default_registry,
    parse,
)
from engine.macros.cache import parse_template
from engine.macros.nodes import Scoped
from tests.test_macros.util import codes, ctx, run, text


@pytest.fixture
def registry() -> Registry:
    return default_registry().copy()


def test_extension_macro_with_aliases_types_and_env(registry: Registry) -> None:
    seen: list[tuple[str, bool, int]] = []

    @registry.macro(
        "shout",
        args=[ArgSpec(name="word"), ArgSpec(name="times", type="integer", optional=True)],
        aliases=["yell"],
    )
    def shout(env: MacroEnv, args: list[str]) -> str:
        seen.append((env.call_name, env.call_scoped, env.call_position))
        return (args[0].upper() + "!") * int(args[1] if len(args) > 1 else 1)

    result = run("{{shout::hi}} {{YELL::{{user}}::2}} {{shout::a::x}}", registry=registry)
    assert result.text == "HI! ALICE!ALICE! {{shout::a::x}}"
    assert codes(result) == ["macro_arg_type_invalid"]
    assert seen[0] == ("shout", False, 0)
    assert text("{{shout}} hey {{/shout}}", registry=registry) == "HEY!"


def test_handler_errors_keep_the_macro_raw(registry: Registry) -> None:
    def fails(env: MacroEnv, args: list[str]) -> str:
        raise ValueError("boom")

    def refuses(env: MacroEnv, args: list[str]) -> str:
        raise MacroArgumentError("no thanks")

    registry.register(MacroDef(name="fails", handler=fails))
    registry.register(MacroDef(name="refuses", handler=refuses))
    result = run("{{fails}}|{{refuses}}", registry=registry)
    assert result.text == "{{fails}}|{{refuses}}"
    assert codes(result) == ["macro_internal_error", "macro_arg_type_invalid"]


def test_handler_results_are_normalised(registry: Registry) -> None:
    registry.register(MacroDef(name="data", handler=lambda env, args: {"a": [1, 2.0]}))
    registry.register(MacroDef(name="nothing", handler=lambda env, args: None))
    registry.register(MacroDef(name="num", handler=lambda env, args: 1e21))
    assert text("{{data}}|[{{nothing}}]|{{num}}", registry=registry) == '{"a":[1,2]}|[]|1e+21'


def test_invalid_names_are_refused(registry: Registry) -> None:
    with pytest.raises(ConfigurationError, match="not a valid macro identifier"):
        registry.register(MacroDef(name="bad name", handler=lambda env, args: ""))
    with pytest.raises(ConfigurationError, match="already registered"):
        registry.register(MacroDef(name="user", handler=lambda env, args: ""), replace=False)


def test_unregister_and_generation_invalidate_parses(registry: Registry) -> None:
    before = registry.generation
    registry.register(
        MacroDef(name="box", handler=lambda env, args: f"[{args[0]}]", args=(ArgSpec(name="v"),))
    )
    assert registry.generation != before
    assert text("{{box}}x{{/box}}", registry=registry) == "[x]"
    registry.unregister("box")
    assert registry.get("box") is None
    assert codes(run("{{box::x}}", registry=registry)) == ["macro_arg_arity_invalid"]


def test_providers_fill_extra(registry: Registry) -> None:
    registry.register_provider(lambda context: context.extra.update(label="from provider"))
    registry.register(
        MacroDef(name="myLabel", handler=lambda env, args: env.context.extra.get("label", ""))
    )
    context = registry.apply_providers(ctx())
    assert text("{{myLabel}}", context, registry=registry) == "from provider"


def test_dynamic_macros_string_callable_and_definition() -> None:
    dynamic = {
        "greet": "Hi {{user}}",
        "Stamp": lambda env: f"by {env.char}",
        "twice": MacroDef(
            name="twice", handler=lambda env, args: args[0] * 2, args=(ArgSpec(name="v"),)
        ),
    }
    out = text("{{greet}}|{{STAMP}}|{{twice::ab}}|{{user}}", dynamic_macros=dynamic)
    assert out == "Hi {{user}}|by Bob|abab|Alice"


def test_nested_evaluation_from_a_handler_and_cycle_detection(registry: Registry) -> None:
    registry.register(MacroDef(name="echo", handler=lambda env, args: env.evaluate("<{{user}}>")))
    registry.register(MacroDef(name="loop", handler=lambda env, args: env.evaluate("{{loop}}")))
    assert text("{{echo}}", registry=registry) == "<Alice>"
    result = run("{{loop}}", registry=registry)
    assert "macro_cycle_detected" in codes(result)
    assert "macro_cycle_detected" in codes(run("{{loop}}", dynamic_macros={"loop": "{{loop}}"}))


def test_scoping_rules_follow_arity() -> None:
    registry = default_registry()
    assert registry.can_accept("if", 1) and not registry.can_accept("if", 2)
    assert registry.can_accept("setvar", 1) and registry.can_accept("reverse", 0)
    assert not registry.can_accept("user", 0) and not registry.can_accept("random", 0)
    assert registry.can_accept("unknownthing", 3)


def test_template_cache_is_bounded_and_keyed_by_generation(registry: Registry) -> None:
    cache = TemplateCache(max_templates=3)
    for n in range(10):
        cache.get(f"{{{{user}}}} {n}", registry)
    assert len(cache) == 3
    first = cache.get("{{box}}x{{/box}}", registry)
    assert cache.get("{{box}}x{{/box}}", registry) is first
    registry.register(
        MacroDef(name="box", handler=lambda env, args: "", args=(ArgSpec(name="v"),))
    )
    again = cache.get("{{box}}x{{/box}}", registry)
    assert again is not first and isinstance(again.items[0], Scoped)
    cache.clear()
    assert len(cache) == 0


def test_parse_template_without_cache() -> None:
    template = parse_template("<USER> hi", default_registry())
    assert template.src == "{{user}} hi" and template.original == "<USER> hi"
    assert parse("x") is parse("x")


def test_every_builtin_has_a_description_or_known_name() -> None:
    names = {d.name.lower() for d in default_registry().definitions()}
    for expected in (
        "user",
        "char",
        "if",
        "setvar",
        "getglobalvar",
        "pick",
        "roll",
        "datetimeformat",
        "instructuserprefix",
        "authorsnote",
        "summary",
        "timediff",
        "//",
    ):
        assert expected in names
    assert len(names) >= 100


def test_extension_handlers_read_and_write_variables_under_the_write_rules(
    registry: Registry,
) -> None:
    def bump(env: MacroEnv, args: list[str]) -> str:
        current = env.get_variable("score")
        ok = env.set_variable("score", (current or 0) + 1)
        return f"{current}->{env.get_variable('score')} {ok}"

    registry.register(MacroDef(name="bump", handler=bump))
    context = ctx(local={"score": "4"})
    result = run("{{bump}}", context, registry=registry)
    assert result.text == "4->5 True"
    assert [m.key for m in result.mutations] == ["score"]
    blocked = run("{{bump}}", ctx(local={"score": "4"}), registry=registry, access="read_only")
    assert blocked.text == "4->4 False"
    assert codes(blocked) == ["macro_write_forbidden"] and blocked.mutations == ()


def test_card_fields_collapse_newlines_when_asked() -> None:
    context = ctx(settings={"collapse_newlines": True})
    context.card.description = "a\n\n\nb\r"
    assert text("{{description}}", context) == "a\nb"


def test_an_extension_can_refuse_the_scoped_form(registry: Registry) -> None:
    registry.macro("tag", args=[ArgSpec(name="v")], scoped=False)(lambda env, args: f"<{args[0]}>")
    assert text("{{tag::x}}", registry=registry) == "<x>"
    assert text("{{tag}}x{{/tag}}", registry=registry) == "{{tag}}x{{/tag}}"


def test_template_cache_is_bounded_by_characters(registry: Registry) -> None:
    cache = TemplateCache(max_templates=100, max_chars=1_000)
    for n in range(10):
        cache.get(f"{n} {{{{user}}}}" + "x" * 300, registry)
    assert len(cache) == 3
