"""A safe arithmetic evaluator for the ``calculate`` tool: a small recursive-descent parser, no eval.

Grammar: numbers (``1,234.5`` thousands separators allowed), ``+ - * / // % ^ **``, parentheses,
unary minus, and the functions ``abs round min max sqrt``. Exponents, magnitudes and nesting depth
are bounded so no input can make the tool spin, allocate without limit or exhaust the stack.

>>> calculate("2 * (3 + 4) - 1,000 / 8")
-111.0
>>> calculate("2 ^ 10")
1024
>>> calculate("max(1, 2,500)")
2500
"""

from __future__ import annotations

import math
import operator
import re

MAX_EXPRESSION_CHARS = 500
MAX_ABS_VALUE = 1e100
MAX_EXPONENT = 1000
# Levels of parentheses, function calls, signs and exponents together. Each level costs the
# recursive-descent parser up to five Python frames, and a caller (a vector worker, an eval loop)
# may already be deep in its own stack: 64 levels stays far from Python's recursion limit, and no
# real arithmetic nests that deep.
MAX_DEPTH = 64
_NUMBER = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?(?:e[+-]?\d+)?|\.\d+(?:e[+-]?\d+)?"
_TOKEN = re.compile(rf"\s*(?:({_NUMBER})|(\*\*|//|[-+*/%^(),])|([a-z]+))", re.IGNORECASE)
_BINARY = {"*": operator.mul, "/": operator.truediv, "//": operator.floordiv, "%": operator.mod}
_FUNCTIONS = {"abs": (1, abs), "round": (1, round), "sqrt": (1, math.sqrt), "min": (None, min), "max": (None, max)}


class CalculatorError(ValueError):
    """The expression is not valid arithmetic, or its value is out of bounds."""


def _tokenize(expr: str) -> list[tuple[str, str, int]]:
    tokens, pos = [], 0
    while pos < len(expr):
        if expr[pos].isspace():
            pos += 1
            continue
        m = _TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            raise CalculatorError(f"unexpected character {expr[pos]!r} at position {pos}")
        number, op, name = m.groups()
        start = m.start(m.lastindex)
        if number is not None:
            tokens.append(("num", number.replace(",", ""), start))
        elif op is not None:
            tokens.append(("op", op, start))
        else:
            tokens.append(("name", name.lower(), start))
        pos = m.end()
    return tokens


class _Parser:
    def __init__(self, tokens):
        self.tokens, self.i, self.depth = tokens, 0, 0

    def peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else ("end", "", -1)

    def take(self, value=None):
        tok = self.peek()
        if value is not None and tok[1] != value:
            where = f"position {tok[2]}" if tok[2] >= 0 else "the end"
            raise CalculatorError(f"expected {value!r} at {where}")
        self.i += 1
        return tok

    def expression(self):
        value = self.term()
        while self.peek()[1] in ("+", "-"):
            op = self.take()[1]
            value = _check(value + self.term() if op == "+" else value - self.term())
        return value

    def term(self):
        value = self.unary()
        while self.peek()[1] in ("*", "/", "//", "%"):
            op = self.take()[1]
            rhs = self.unary()
            if op != "*" and rhs == 0:
                raise CalculatorError("division by zero")
            value = _check(_BINARY[op](value, rhs))
        return value

    def unary(self):
        # Every recursive path of the grammar (parentheses, function arguments, signs, exponents)
        # passes through here, so this one counter bounds the recursion.
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise CalculatorError(f"expression is nested more than {MAX_DEPTH} levels deep")
        try:
            if self.peek()[1] in ("-", "+"):
                sign = -1 if self.take()[1] == "-" else 1
                return sign * self.unary()
            return self.power()
        finally:
            self.depth -= 1

    def power(self):
        base = self.atom()
        if self.peek()[1] in ("^", "**"):
            self.take()
            exponent = self.unary()
            if abs(exponent) > MAX_EXPONENT:
                raise CalculatorError(f"exponent {exponent} is too large (limit {MAX_EXPONENT})")
            try:
                return _check(base ** exponent)
            except (OverflowError, ZeroDivisionError) as e:
                raise CalculatorError(str(e)) from None
        return base

    def atom(self):
        kind, value, pos = self.take()
        if kind == "num":
            return _check(float(value) if ("." in value or "e" in value.lower()) else int(value))
        if value == "(":
            inner = self.expression()
            self.take(")")
            return inner
        if kind == "name":
            if value not in _FUNCTIONS:
                raise CalculatorError(f"unknown function {value!r}; known: {sorted(_FUNCTIONS)}")
            arity, fn = _FUNCTIONS[value]
            self.take("(")
            args = [self.expression()]
            while self.peek()[1] == ",":
                self.take()
                args.append(self.expression())
            self.take(")")
            if arity is not None and len(args) != arity:
                raise CalculatorError(f"{value}() takes {arity} argument(s), got {len(args)}")
            try:
                return _check(fn(*args))
            except ValueError as e:
                raise CalculatorError(f"{value}(): {e}") from None
        where = f"position {pos}" if pos >= 0 else "the end"
        raise CalculatorError(f"expected a number, '(' or a function at {where}")


def _check(value):
    if isinstance(value, complex) or (isinstance(value, float) and not math.isfinite(value)) \
            or abs(value) > MAX_ABS_VALUE:
        raise CalculatorError("result is out of range")
    return value


def calculate(expression: str):
    """Evaluate an arithmetic expression; raises :class:`CalculatorError` with the reason."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalculatorError(f"expression is longer than {MAX_EXPRESSION_CHARS} characters")
    tokens = _tokenize(expression)
    if not tokens:
        raise CalculatorError("empty expression")
    parser = _Parser(tokens)
    value = parser.expression()
    if parser.i != len(tokens):
        raise CalculatorError(f"unexpected {parser.peek()[1]!r} at position {parser.peek()[2]}")
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15 and "/" not in expression:
        return int(value)
    return value


def format_number(value) -> str:
    """A result as the tool prints it: integers plainly, floats to 6 significant decimals."""
    if isinstance(value, int):
        return str(value)
    return f"{value:.6g}" if abs(value) < 1e15 else repr(value)
