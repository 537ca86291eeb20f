"""Small libcst helpers the Python front end's modules share: literals, dotted names, docstrings."""
from __future__ import annotations

from typing import Optional

import libcst as cst


def is_atom(node: cst.BaseExpression) -> bool:
    if node.lpar:
        return True
    return isinstance(
        node,
        (cst.Name, cst.Attribute, cst.Integer, cst.Float, cst.Call, cst.Subscript, cst.SimpleString),
    )


def string_value(node: cst.BaseExpression) -> Optional[str]:
    if isinstance(node, cst.SimpleString):
        try:
            v = node.evaluated_value
        except Exception:  # noqa: BLE001 - odd prefixes
            return None
        return v if isinstance(v, str) else None
    return None


def int_value(node: cst.BaseExpression) -> Optional[int]:
    if isinstance(node, cst.Integer) and not node.lpar:
        try:
            return int(node.value.replace("_", ""), 0)
        except ValueError:
            return None
    if isinstance(node, cst.Integer):
        return int(node.value.replace("_", ""), 0)
    return None


def names_in(expr: cst.CSTNode) -> set[str]:
    out: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            out.add(n.value)

        def visit_Attribute(self, n: cst.Attribute):
            # only the head of a dotted name is looked up
            head = n
            while isinstance(head, cst.Attribute):
                head = head.value
            head.visit(self)
            return False

    expr.visit(V())
    return out


def dotted(node) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return dotted(node.value) + "." + node.attr.value
    return ""


def is_docstring(stmt) -> bool:
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.Expr)
            and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))
