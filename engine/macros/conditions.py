"""``{{if}}`` conditions: SillyTavern truthiness, and Core Profile expressions.

A condition is a Core Profile expression when its text (outside nested macros) uses an
operator: ``== != > < >= <=``, ``and or not``, ``contains``, ``startsWith``, parentheses, or an
arithmetic sign standing alone (which is unsupported and keeps the block raw). Otherwise it is
SillyTavern's condition: resolve, then falsy only for ``''``, ``false``, ``0`` and ``off``.

Expression grammar (lowest precedence first)::

    or   := and ("or" and)*
    and  := not ("and" not)*
    not  := "not" not | cmp
    cmp  := operand [cmpop operand]          (no chaining)
    operand := "(" or ")" | literal | number | word | {{macro}}

Operands are evaluated lazily, so ``and``/``or`` short-circuit and the skipped side's write
macros never run. Failures keep the whole block raw with ``macro_condition_unsupported``
(a token outside the subset), ``macro_parse_failed`` (bad structure) or
``macro_arg_type_invalid`` (an ordering comparison of non-numbers).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from engine.macros import diagnostics as d
from engine.macros.jsvalues import JS_WHITESPACE, is_false_boolean, string_to_number
from engine.macros.nodes import Item
from engine.macros.paths import scan_quoted
from engine.macros.variables import display, get

if TYPE_CHECKING:
    from engine.macros.evaluator import MacroEnv

_TRIGGER = re.compile(
    r"==|!=|>=|<=|[<>()]|(?<!\S)[-+*/%](?!\S)"
    r"|(?<![\w])(?:and|or|not|contains|startswith)(?![\w])",
    re.IGNORECASE,
)
_SPACE = re.compile(rf"[{re.escape(JS_WHITESPACE)}]+")
_NUMBER = re.compile(r"-?(?:\d+(?:\.\d+)?|\.\d+)")
_WORD = re.compile(r"""[^\s()"'=!<>,+\-*/?;:\[\]{}|&%^~\\]+""")
_COMPARISONS = (">=", "<=", "==", "!=", ">", "<")
_KEYWORDS = {
    "and": "and",
    "or": "or",
    "not": "not",
    "contains": "contains",
    "startswith": "startsWith",
}
_VARIABLE = re.compile(r"([.$])([A-Za-z](?:[\w-]*\w)?)\Z")

# token kinds
_LP, _RP, _OP, _AND, _OR, _NOT, _VAL = range(7)


class ConditionError(Exception):
    """The condition cannot be evaluated; ``code`` is the warning code to report."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def is_expression(items: list[Item]) -> bool:
    """Does the condition use Core Profile operators?"""
    return any(item.__class__ is str and _TRIGGER.search(item) for item in items)


def st_truthy(text: str) -> bool:
    """SillyTavern: falsy only for ``''`` and ``off``/``false``/``0`` (trimmed, any case)."""
    return not (text == "" or is_false_boolean(text))


def cp_truthy(text: str) -> bool:
    """Core Profile: falsy for ``''``, ``false``, ``0`` and ``off`` after trim and lower-casing."""
    return text.strip(JS_WHITESPACE).lower() not in ("", "false", "0", "off")


def _tokenize(items: list[Item]) -> list[tuple[int, Any]]:
    tokens: list[tuple[int, Any]] = []
    for item in items:
        if item.__class__ is not str:
            tokens.append((_VAL, ("macro", item)))
            continue
        text: str = item
        i = 0
        n = len(text)
        while i < n:
            space = _SPACE.match(text, i)
            if space:
                i = space.end()
                continue
            ch = text[i]
            if ch == "(":
                tokens.append((_LP, None))
                i += 1
                continue
            if ch == ")":
                tokens.append((_RP, None))
                i += 1
                continue
            op = next((o for o in _COMPARISONS if text.startswith(o, i)), None)
            if op is not None:
                tokens.append((_OP, op))
                i += len(op)
                continue
            if ch in "'\"":
                quoted = scan_quoted(text, i)
                if quoted is None:
                    raise ConditionError(d.MACRO_PARSE_FAILED, "unclosed quote in if condition")
                value, i = quoted
                tokens.append((_VAL, ("quoted", value)))
                continue
            number = _NUMBER.match(text, i)
            if number:
                tokens.append((_VAL, ("word", number.group())))
                i = number.end()
                continue
            word = _WORD.match(text, i)
            if word:
                lowered = word.group().lower()
                keyword = _KEYWORDS.get(lowered)
                if keyword in ("and", "or", "not"):
                    tokens.append(({"and": _AND, "or": _OR, "not": _NOT}[keyword], None))
                elif keyword is not None:
                    tokens.append((_OP, keyword))
                else:
                    tokens.append((_VAL, ("word", word.group())))
                i = word.end()
                continue
            raise ConditionError(
                d.MACRO_CONDITION_UNSUPPORTED,
                f"'{ch}' is not supported in an if condition (operators: == != > < >= <= "
                "and or not contains startsWith, parentheses)",
            )
    return tokens


class _Parser:
    def __init__(self, tokens: list[tuple[int, Any]]) -> None:
        self.tokens = tokens
        self.i = 0

    def peek(self) -> int:
        return self.tokens[self.i][0] if self.i < len(self.tokens) else -1

    def fail(self, message: str) -> ConditionError:
        return ConditionError(d.MACRO_PARSE_FAILED, f"if condition: {message}")

    def parse(self) -> Any:
        if not self.tokens:
            return ("val", ("word", ""))
        node = self.parse_or()
        if self.i != len(self.tokens):
            raise self.fail("unexpected text after the expression")
        return node

    def parse_or(self) -> Any:
        node = self.parse_and()
        while self.peek() == _OR:
            self.i += 1
            node = ("or", node, self.parse_and())
        return node

    def parse_and(self) -> Any:
        node = self.parse_not()
        while self.peek() == _AND:
            self.i += 1
            node = ("and", node, self.parse_not())
        return node

    def parse_not(self) -> Any:
        if self.peek() == _NOT:
            self.i += 1
            return ("not", self.parse_not())
        return self.parse_cmp()

    def parse_cmp(self) -> Any:
        left = self.parse_primary()
        if self.peek() == _OP:
            op = self.tokens[self.i][1]
            self.i += 1
            right = self.parse_primary()
            if left[0] != "val" or right[0] != "val":
                raise self.fail(f"'{op}' needs a value on each side")
            return ("cmp", op, left[1], right[1])
        return left

    def parse_primary(self) -> Any:
        kind = self.peek()
        if kind == _LP:
            self.i += 1
            node = self.parse_or()
            if self.peek() != _RP:
                raise self.fail("missing ')'")
            self.i += 1
            return node
        if kind == _VAL:
            value = self.tokens[self.i][1]
            self.i += 1
            return ("val", value)
        if kind == -1:
            raise self.fail("the expression ends too early")
        raise self.fail("a value is missing")


def parse_expression(items: list[Item]) -> Any:
    """The expression tree of a condition; raises :class:`ConditionError`."""
    return _Parser(_tokenize(items)).parse()


def _strip_quotes(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _finite(text: str) -> float | None:
    if not text.strip(JS_WHITESPACE):
        return None
    number = string_to_number(text)
    if number != number or number in (float("inf"), float("-inf")):
        return None
    return number


class ExpressionEvaluator:
    """Evaluates an expression tree, resolving operands lazily through the env."""

    def __init__(self, env: MacroEnv, depth: int, delta: int) -> None:
        self.env = env
        self.depth = depth
        self.delta = delta

    def value(self, operand: tuple[str, Any]) -> str:
        kind, payload = operand
        if kind == "quoted":
            return payload  # type: ignore[no-any-return]
        if kind == "word":
            match = _VARIABLE.match(payload)
            if match:
                scope = "local" if match.group(1) == "." else "global"
                return display(get(self.env, scope, match.group(2)))  # type: ignore[arg-type]
            return payload  # type: ignore[no-any-return]
        text = self.env.eval_items([payload], self.depth, self.delta)
        return _strip_quotes(text)

    def truth(self, node: Any) -> bool:
        tag = node[0]
        if tag == "or":
            return self.truth(node[1]) or self.truth(node[2])
        if tag == "and":
            return self.truth(node[1]) and self.truth(node[2])
        if tag == "not":
            return not self.truth(node[1])
        if tag == "val":
            return cp_truthy(self.value(node[1]))
        _, op, left_operand, right_operand = node
        left = self.value(left_operand)
        right = self.value(right_operand)
        if op in ("==", "!="):
            a, b = _finite(left), _finite(right)
            equal = a == b if a is not None and b is not None else left == right
            return equal if op == "==" else not equal
        if op == "contains":
            return right in left
        if op == "startsWith":
            return left.startswith(right)
        a, b = _finite(left), _finite(right)
        if a is None or b is None:
            raise ConditionError(
                d.MACRO_ARG_TYPE_INVALID,
                f"'{op}' compares numbers, got {left!r} and {right!r}",
            )
        if op == ">":
            return a > b
        if op == "<":
            return a < b
        if op == ">=":
            return a >= b
        return a <= b
