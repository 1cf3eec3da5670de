"""tiledb-py's query-condition syntax (a Python expression: comparisons, ``and``/``or``/``&``/
``|``, ``not``, ``in``/``not in``, ``attr("name")``, ``dim("name")``, ``val(...)``) translated
into the engine's ``--where`` text (docs/cli.md), which the engine parses against the schema."""

from __future__ import annotations

import ast
import math

import numpy as np

from ._tessera import TileDBError

_CMP = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
_FLIP = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _field(name: str) -> str:
    if name.isidentifier() and name.lower() not in ("and", "or", "not", "in", "is", "null", "true", "false", "nan", "inf", "infinity"):
        return name
    return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"


def _literal(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return repr(f)
    if isinstance(v, bytes):
        v = v.decode("utf-8", "surrogateescape")
    if isinstance(v, str):
        out = []
        for ch in v:
            if ch in "\\'":
                out.append("\\" + ch)
            elif ch == "\n":
                out.append("\\n")
            elif ch == "\t":
                out.append("\\t")
            elif ch == "\r":
                out.append("\\r")
            elif ch == "\0":
                out.append("\\0")
            else:
                out.append(ch)
        return "'" + "".join(out) + "'"
    if isinstance(v, np.datetime64):
        return str(int(v.astype(np.int64)))
    raise TileDBError(f"unsupported value in query condition: {v!r}")


class _Translator:
    def __init__(self, schema):
        self.schema = schema

    def is_field(self, name: str) -> bool:
        return self.schema.has_attr(name) or self.schema.domain.has_dim(name)

    def field_of(self, node):
        name = self._field_name(node)
        if name is not None and not self.schema.sparse and self.schema.domain.has_dim(name) and not self.schema.has_attr(name):
            raise TileDBError(f"Cannot apply query condition to dimensions on dense arrays. {name} is a dimension.")
        return name

    def _field_name(self, node):
        if isinstance(node, ast.Name):
            if self.is_field(node.id):
                return node.id
            return None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("attr", "dim"):
            if len(node.args) != 1 or not isinstance(node.args[0], ast.Constant) or not isinstance(node.args[0].value, str):
                raise TileDBError(f"{node.func.id}() takes one string")
            name = node.args[0].value
            if node.func.id == "attr" and not self.schema.has_attr(name):
                raise TileDBError(f"Attribute {name!r} not found in array schema")
            if node.func.id == "dim" and not self.schema.domain.has_dim(name):
                raise TileDBError(f"Dimension {name!r} not found in array schema")
            return name
        return None

    def value_of(self, node):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = self.value_of(node.operand)
            if not isinstance(v, (int, float)):
                raise TileDBError("a sign applies to numbers only")
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "val":
            if len(node.args) != 1:
                raise TileDBError("val() takes one value")
            return self.value_of(node.args[0])
        if isinstance(node, ast.Name):
            if node.id in ("nan", "NaN"):
                return float("nan")
            if node.id in ("inf", "Inf"):
                return float("inf")
            raise TileDBError(f"{node.id!r} is not an attribute or dimension of the array")
        raise TileDBError(f"unsupported value in query condition: {ast.dump(node)}")

    def visit(self, node) -> str:
        if isinstance(node, ast.Expression):
            return self.visit(node.body)
        if isinstance(node, ast.BoolOp):
            op = " and " if isinstance(node.op, ast.And) else " or "
            return "(" + op.join(self.visit(v) for v in node.values) + ")"
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr)):
            op = " and " if isinstance(node.op, ast.BitAnd) else " or "
            return "(" + self.visit(node.left) + op + self.visit(node.right) + ")"
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.Invert)):
            return "not (" + self.visit(node.operand) + ")"
        if isinstance(node, ast.Compare):
            parts = []
            left = node.left
            for op, right in zip(node.ops, node.comparators):
                parts.append(self.compare(left, op, right))
                left = right
            return parts[0] if len(parts) == 1 else "(" + " and ".join(parts) + ")"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("isnull", "notnull"):
            f = self.field_of(node.args[0]) if node.args else None
            if f is None:
                raise TileDBError(f"{node.func.id}() takes an attribute")
            return f"{_field(f)} is {'not ' if node.func.id == 'notnull' else ''}null"
        raise TileDBError(f"unsupported query condition syntax: {ast.unparse(node)!r}")

    def compare(self, left, op, right) -> str:
        if isinstance(op, (ast.In, ast.NotIn)):
            f = self.field_of(left)
            if f is None:
                raise TileDBError(f"the left side of 'in' must be an attribute or dimension: {ast.unparse(left)!r}")
            if not isinstance(right, (ast.List, ast.Tuple, ast.Set)):
                raise TileDBError("'in' needs a list of values")
            vals = [self.value_of(e) for e in right.elts]
            if not vals:
                raise TileDBError("'in' needs at least one value")
            neg = "not " if isinstance(op, ast.NotIn) else ""
            return f"{_field(f)} {neg}in [" + ", ".join(_literal(v) for v in vals) + "]"
        if isinstance(op, (ast.Is, ast.IsNot)):
            # as tiledb-py: the null test is written `a == None` / `a != None`
            word = "is not" if isinstance(op, ast.IsNot) else "is"
            raise TileDBError(f"the `{word}` operator is not supported (a null test is written `a == None`)")
        sym = _CMP.get(type(op))
        if sym is None:
            raise TileDBError(f"unsupported comparison operator {type(op).__name__}")
        fl, fr = self.field_of(left), self.field_of(right)
        if fl is not None and fr is None:
            v = self.value_of(right)
            if v is None:
                return f"{_field(fl)} is {'not ' if sym == '!=' else ''}null"
            return f"{_field(fl)} {sym} {_literal(v)}"
        if fr is not None and fl is None:
            v = self.value_of(left)
            return f"{_field(fr)} {_FLIP[sym]} {_literal(v)}"
        if fl is not None and fr is not None:
            raise TileDBError("comparisons between two fields are not supported")
        raise TileDBError(f"a comparison needs an attribute or dimension: {ast.unparse(left)} ... {ast.unparse(right)}")


def translate(cond, schema):
    """The engine's condition text for a tiledb-py condition (a string or a `QueryCondition`),
    or None."""
    if cond is None:
        return None
    if isinstance(cond, QueryCondition):
        cond = cond.expression
    if not isinstance(cond, str):
        raise TileDBError(f"cond must be a string, got {type(cond).__name__}")
    if not cond.strip():
        raise TileDBError("empty query condition")
    try:
        tree = ast.parse(cond.strip(), mode="eval")
    except SyntaxError as e:
        raise TileDBError(f"invalid query condition {cond!r}: {e.msg}") from None
    return _Translator(schema).visit(tree)


class QueryCondition:
    """A query condition in tiledb-py's syntax (``QueryCondition("a > 5 and b == 'x'")``)."""

    def __init__(self, expression: str, ctx=None):
        if not isinstance(expression, str):
            raise TileDBError("a QueryCondition takes a string")
        self.expression = expression

    def __repr__(self) -> str:
        return f"QueryCondition({self.expression!r})"
