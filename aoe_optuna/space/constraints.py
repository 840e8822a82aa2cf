"""Constraint rules: safe user expressions, and the common rule interface.

A rule reads columns (see :mod:`aoe_optuna.space.params`) and returns one violation
value per config, Optuna's convention: ``<= 0`` is feasible. User expressions
are parsed with :mod:`ast` and compiled against a whitelist (names, numbers,
arithmetic, comparisons, and/or/not, min/max); they are never ``eval``-ed, so
a spec cannot run code, touch attributes or allocate huge integers.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

Columns = Mapping[str, np.ndarray]

MAX_EXPRESSION_CHARS = 2000
MAX_DEPTH = 40
MAX_EXPONENT = 64


class ConstraintError(ValueError):
    """An expression that cannot be accepted; the message says why."""


class Rule(Protocol):
    """Anything that scores configs for feasibility."""

    name: str
    variables: frozenset[str]

    def violation(self, columns: Columns) -> np.ndarray:
        """Per config: <= 0 when the rule holds, > 0 by how much it is broken."""
        ...

    def describe(self, columns: Columns) -> str:
        """For a single config (columns of length 1): why the rule fails."""
        ...


def _undefined_by_zero(fn: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:
    """``fn(a, b)``, nan where ``b`` is 0: numpy's integer ``x % 0`` is a silent 0, which
    would let ``tile_m % (tile_n - 16) == 0`` hold at tile_n = 16; nan makes it fail."""
    if np.ndim(b) == 0:
        return fn(a, b)  # a constant divisor; 0 is refused when the rule is compiled
    b = np.asarray(b)
    zero = b == 0
    if not zero.any():
        return fn(a, b)
    return np.where(zero, np.nan, fn(np.asarray(a, dtype=float), np.where(zero, 1, b)))


_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: lambda a, b: _undefined_by_zero(operator.truediv, a, b),
    ast.FloorDiv: lambda a, b: _undefined_by_zero(operator.floordiv, a, b),
    ast.Mod: lambda a, b: _undefined_by_zero(operator.mod, a, b),
    ast.Pow: operator.pow,
}
_CMPOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_FUNCS = {"min": np.minimum, "max": np.maximum}

Compiled = Callable[[Columns], Any]


@dataclass(frozen=True)
class ExpressionRule:
    """A user constraint such as ``"tile_m * tile_k * 2 <= l0a_size"``."""

    name: str
    text: str
    variables: frozenset[str]
    _truth: Compiled
    _sides: tuple[Compiled, Compiled] | None

    def holds(self, columns: Columns) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            out = self._truth(columns)
        return np.broadcast_to(np.asarray(out, dtype=bool), _length(columns)).copy()

    def violation(self, columns: Columns) -> np.ndarray:
        ok = self.holds(columns)
        if self._sides is None:
            return np.where(ok, 0.0, 1.0)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            lhs = np.asarray(self._sides[0](columns), dtype=float)
            rhs = np.asarray(self._sides[1](columns), dtype=float)
            gap = np.abs(lhs - rhs) / np.maximum(np.abs(rhs), 1.0)
        gap = np.broadcast_to(np.nan_to_num(gap, nan=1.0, posinf=1e9), ok.shape)
        return np.where(ok, -gap, np.maximum(gap, 1e-9))

    def describe(self, columns: Columns) -> str:
        values = ", ".join(
            f"{v}={np.asarray(columns[v]).ravel()[0]}" for v in sorted(self.variables)
            if v in columns
        )
        return f"{self.name}: `{self.text}` is false" + (f" for {values}" if values else "")


def compile_expression(
    text: str,
    names: Mapping[str, float | None],
    categories: Mapping[str, tuple[str, ...]] | None = None,
    name: str | None = None,
) -> ExpressionRule:
    """Compile ``text`` into a vectorised rule.

    ``names`` maps each allowed variable to a constant (hardware figures) or
    ``None`` (a parameter, read from the columns). ``categories`` lists the
    names of unordered parameters, so ``layout == "z_major"`` compares codes.
    """
    if not isinstance(text, str) or not text.strip():
        raise ConstraintError("expected a non-empty expression string")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ConstraintError(f"expression longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ConstraintError(f"does not parse: {exc.msg} (column {exc.offset})") from None
    except (RecursionError, MemoryError, ValueError):
        raise ConstraintError("expression nested too deeply") from None
    compiler = _Compiler(names, categories or {})
    body = tree.body
    truth = compiler.compile(body, 0)
    sides = None
    if isinstance(body, ast.Compare) and len(body.ops) == 1 and not any(
        isinstance(side, ast.Constant) and isinstance(side.value, str)
        for side in (body.left, body.comparators[0])
    ):  # a category comparison has no numeric sides: its violation is 0/1
        sides = (compiler.compile(body.left, 1), compiler.compile(body.comparators[0], 1))
    return ExpressionRule(
        name=name or text.strip(),
        text=text.strip(),
        variables=frozenset(compiler.used),
        _truth=truth,
        _sides=sides,
    )


def _is_zero(compiled: Compiled) -> bool:
    """Whether a sub-expression of constants only is 0: Python's int division by it would
    raise mid-enumeration, where a column divisor of 0 gives inf or nan like numpy's."""
    try:
        value = compiled({})
    except KeyError:  # names a parameter: varies with the config
        return False
    return bool(np.ndim(value) == 0 and value == 0)


class _Compiler:
    """Turns a whitelisted AST into nested closures over numpy columns."""

    def __init__(self, names: Mapping[str, float | None], categories: Mapping[str, tuple]):
        self.names = names
        self.categories = categories
        self.used: set[str] = set()

    def compile(self, node: ast.AST, depth: int) -> Compiled:
        if depth > MAX_DEPTH:
            raise ConstraintError(f"expression nested deeper than {MAX_DEPTH} levels")
        d = depth + 1
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                if isinstance(node.value, bool):
                    value = int(node.value)
                    return lambda _c: value
                raise ConstraintError(
                    f"constant {node.value!r} is not a number (names only in comparisons "
                    "with an unordered parameter)"
                )
            if abs(node.value) > 1e15:
                raise ConstraintError(f"constant {node.value!r} is too large")
            value = node.value
            return lambda _c: value
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            if isinstance(node.op, ast.Pow):
                exp = node.right
                if not (
                    isinstance(exp, ast.Constant)
                    and isinstance(exp.value, int)
                    and not isinstance(exp.value, bool)
                    and 0 <= exp.value <= MAX_EXPONENT
                ):
                    raise ConstraintError(
                        f"exponents must be integer constants from 0 to {MAX_EXPONENT}"
                    )
            fn = _BINOPS[type(node.op)]
            left, right = self.compile(node.left, d), self.compile(node.right, d)
            if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)) and _is_zero(right):
                raise ConstraintError("divides by zero (its divisor is 0 whatever the config)")
            if isinstance(node.op, ast.Pow):
                return lambda c: np.power(np.asarray(left(c), dtype=float), right(c))
            return lambda c: fn(left(c), right(c))
        if isinstance(node, ast.UnaryOp):
            operand = self.compile(node.operand, d)
            if isinstance(node.op, ast.Not):
                return lambda c: np.logical_not(operand(c))
            if isinstance(node.op, ast.USub):
                return lambda c: -operand(c)
            if isinstance(node.op, ast.UAdd):
                return operand
        if isinstance(node, ast.BoolOp):
            parts = [self.compile(v, d) for v in node.values]
            combine = np.logical_and if isinstance(node.op, ast.And) else np.logical_or

            def boolop(c: Columns) -> Any:
                out = parts[0](c)
                for p in parts[1:]:
                    out = combine(out, p(c))
                return out

            return boolop
        if isinstance(node, ast.Compare):
            return self._compare(node, d)
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCS:
                raise ConstraintError("calls are not allowed (only min(...) and max(...))")
            if node.keywords or len(node.args) < 2:
                raise ConstraintError(f"{node.func.id}() takes two or more plain arguments")
            fn2 = _FUNCS[node.func.id]
            args = [self.compile(a, d) for a in node.args]

            def call(c: Columns) -> Any:
                out = args[0](c)
                for a in args[1:]:
                    out = fn2(out, a(c))
                return out

            return call
        if isinstance(node, ast.Attribute):
            raise ConstraintError("attribute access is not allowed")
        raise ConstraintError(f"{type(node).__name__} is not allowed in a constraint")

    def _name(self, ident: str) -> Compiled:
        if ident not in self.names:
            raise ConstraintError(
                f"unknown name {ident!r}; expected a parameter or hardware figure "
                f"({', '.join(sorted(self.names))})"
            )
        const = self.names[ident]
        if const is not None:
            return lambda _c: const
        self.used.add(ident)
        return lambda c: c[ident]

    def _compare(self, node: ast.Compare, depth: int) -> Compiled:
        operands = [node.left, *node.comparators]
        compiled: list[Compiled] = []
        for i, operand in enumerate(operands):
            if isinstance(operand, ast.Constant) and isinstance(operand.value, str):
                compiled.append(self._category_code(operands, i, node.ops))
            else:
                compiled.append(self.compile(operand, depth))
        fns = [_CMPOPS[type(op)] for op in node.ops if type(op) in _CMPOPS]
        if len(fns) != len(node.ops):
            raise ConstraintError("only <, <=, >, >=, ==, != comparisons are allowed")

        def compare(c: Columns) -> Any:
            values = [f(c) for f in compiled]
            out = fns[0](values[0], values[1])
            for k in range(1, len(fns)):
                out = np.logical_and(out, fns[k](values[k], values[k + 1]))
            return out

        return compare

    def _category_code(self, operands: list[ast.expr], i: int, ops: list[ast.cmpop]) -> Compiled:
        """A string literal compared with an unordered parameter becomes its code."""
        label = operands[i].value  # type: ignore[attr-defined]
        neighbours = [operands[j] for j in (i - 1, i + 1) if 0 <= j < len(operands)]
        for other in neighbours:
            if isinstance(other, ast.Name) and other.id in self.categories:
                choices = self.categories[other.id]
                if label not in choices:
                    raise ConstraintError(f"{other.id} has no choice {label!r}: {list(choices)}")
                if not all(isinstance(op, (ast.Eq, ast.NotEq)) for op in ops):
                    raise ConstraintError("names compare only with == and !=")
                code = choices.index(label)
                return lambda _c: code
        raise ConstraintError(f"string {label!r} must be compared with a categorical parameter")


def _length(columns: Columns) -> int:
    for col in columns.values():
        return int(np.asarray(col).shape[0]) if np.ndim(col) else 1
    return 1
