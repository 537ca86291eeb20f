"""The kernel builder's expressions: Python expressions of a kernel body as IR expressions.

:class:`ExpressionBuilder` reads names, operators, comparisons, subscripts, ``buf.shape[i]``
and calls (casts, ``T.min``/``T.max``, integer division, bit operations, math functions,
``T.get_thread_binding``) into :mod:`~cpasync_migrate.verify.ir` expressions;
:func:`const_expr` makes an IR constant of a Python value and :func:`fold` folds integer
constant subexpressions.  A part of :class:`~.statements.KernelBuilder` over
:class:`~.context.KernelContext`; what it calls in the other parts is declared in ``parts.py``.
"""
from __future__ import annotations

import ast
from typing import Optional

from ..ir import Bin, Cast, Cmp, Const, Expr, Load, Logic, Math, Select, Unary, Unsupported, Var
from .context import KernelContext
from .module import BIN_OPS, CMP_OPS, MISSING, PY_OPS, Scope
from .parts import CopyPart, StatementPart
from .signatures import MATH_SIGNATURE

MATH_FNS = {"exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs", "fabs", "sin", "cos", "tanh", "floor", "ceil",
            "round", "trunc", "sigmoid"}


class ExpressionBuilder(KernelContext, CopyPart, StatementPart):
    """A part of :class:`~.statements.KernelBuilder`: expressions (see the module docstring).  It reads buffers
    and subscripts through :class:`~.parts.CopyPart` and binds threads through :class:`~.parts.StatementPart`."""

    # expressions -----------------------------------------------------------------
    def expr(self, node, scope: Scope) -> Expr:
        line = getattr(node, "lineno", None)
        if isinstance(node, ast.Constant):
            return const_expr(node.value, line, f"constant {node.value!r} used as a value")
        if isinstance(node, ast.Name):
            b = scope.lookup(node.id)
            if b is MISSING:
                if node.id in ("True", "False"):
                    return Const(node.id == "True", "bool")
                raise Unsupported(f"name {node.id!r} is not known in the kernel", line)
            kind = b[0]
            if kind == "var":
                return Var(b[1])
            if kind == "expr":
                return b[1]
            if kind == "const":
                return const_expr(b[1], line)
            if kind == "unknown":
                raise Unsupported(b[1].reason, line)
            raise Unsupported(f"{node.id!r} ({kind}) used as a value", line)
        if isinstance(node, ast.BinOp):
            op = BIN_OPS.get(type(node.op))
            if op is None:
                raise Unsupported(f"operator {type(node.op).__name__}", line)
            return fold(Bin(op, self.expr(node.left, scope), self.expr(node.right, scope)))
        if isinstance(node, ast.UnaryOp):
            a = self.expr(node.operand, scope)
            if isinstance(node.op, ast.USub):
                return fold(Unary("neg", a))
            if isinstance(node.op, ast.UAdd):
                return a
            if isinstance(node.op, ast.Not):
                return Unary("not", a)
            return Unary("bnot", a)
        if isinstance(node, ast.Compare):
            parts = []
            left = self.expr(node.left, scope)
            for o, c in zip(node.ops, node.comparators):
                if type(o) not in CMP_OPS:
                    raise Unsupported(f"comparison {type(o).__name__}", line)
                right = self.expr(c, scope)
                parts.append(Cmp(CMP_OPS[type(o)], left, right))
                left = right
            out = parts[0]
            for p in parts[1:]:
                out = Logic("and", out, p)
            return out
        if isinstance(node, ast.BoolOp):
            vals = [self.expr(v, scope) for v in node.values]
            out = vals[0]
            for v in vals[1:]:
                out = Logic("and" if isinstance(node.op, ast.And) else "or", out, v)
            return out
        if isinstance(node, ast.IfExp):
            return Select(self.expr(node.test, scope), self.expr(node.body, scope), self.expr(node.orelse, scope))
        if isinstance(node, ast.Subscript):
            if isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
                return const_expr(self.shape_dim(node, scope), line)
            buf, idx = self.subscript(node, scope)
            return Load(buf, idx)
        if isinstance(node, ast.Call):
            return self.call_expr(node, scope)
        if isinstance(node, ast.Attribute):
            ok, v = self.try_cval(node, scope)
            if ok and not isinstance(v, str):
                return const_expr(v, line)
        raise Unsupported(f"expression {ast.unparse(node)[:60]!r}", line)

    def shape_dim(self, node: ast.Subscript, scope: Scope) -> int:
        buf = self.buffer_of(node.value.value, scope)
        i = self.cval(node.slice, scope)
        return buf.shape[i]

    def call_expr(self, node: ast.Call, scope: Scope) -> Expr:
        line = node.lineno
        op = self.op(node.func)
        fname = node.func.id if isinstance(node.func, ast.Name) and op is None else None
        if op == "if_then_else":
            b = self.bind_call(op, node, scope)
            return Select(self.expr(b["cond"], scope), self.expr(b["t"], scope), self.expr(b["f"], scope))
        if op in ("Cast", "cast"):
            b = self.bind_call(op, node, scope)
            return Cast(self.dtype(b["dtype"], scope), self.expr(b["value"], scope))
        if op in ("min", "max") or fname in ("min", "max"):
            b = self.bind_call(op or fname, node, scope)
            return fold(Bin(op or fname, self.expr(b["a"], scope), self.expr(b["b"], scope)))
        if op in ("floordiv", "floormod", "truncdiv", "truncmod"):
            b = self.bind_call(op, node, scope)
            name = {"floordiv": "fdiv", "floormod": "fmod", "truncdiv": "tdiv", "truncmod": "tmod"}[op]
            return fold(Bin(name, self.expr(b["a"], scope), self.expr(b["b"], scope)))
        if op in ("ceildiv", "cdiv"):
            b = self.bind_call(op, node, scope)
            a, d = self.expr(b["lhs"], scope), self.expr(b["rhs"], scope)
            return fold(Bin("fdiv", Bin("sub", Bin("add", a, d), Const(1, "int32")), d))
        if op in ("shift_left", "shift_right", "bitwise_and", "bitwise_or", "bitwise_xor"):
            b = self.bind_call(op, node, scope)
            name = {"shift_left": "shl", "shift_right": "shr", "bitwise_and": "band", "bitwise_or": "bor",
                    "bitwise_xor": "bxor"}[op]
            return fold(Bin(name, self.expr(b["x"], scope), self.expr(b["y"], scope)))
        if op in MATH_FNS:
            b = self.bind_call(MATH_SIGNATURE, node, scope)
            return Math(op, (self.expr(b["x"], scope),))
        if op == "get_thread_binding":
            dn = self.bind_call(op, node, scope).get("dim")
            dim = self.cval(dn, scope) if dn is not None else 0
            self.bind_thread(None, ("threadIdx", int(dim)), None, scope)
            ir = [k for k, v in self.thread_vars.items() if v == ("threadIdx", int(dim))][-1]
            return Var(ir)
        if op is not None:
            dt = self.rules.canonical_dtype(op)
            if self.rules.dtype_size(dt) is not None:
                b = self.bind_call("dtype_cast", node, scope)
                return Cast(dt, self.expr(b["expr"], scope))
        ok, v = self.try_cval(node, scope)
        if ok and isinstance(v, (int, float, bool)):
            return const_expr(v, line)
        raise Unsupported(f"call of {ast.unparse(node.func)[:40]!r} in an expression", line)


def const_expr(v, line=None, message: Optional[str] = None) -> Expr:
    """A Python constant as an IR constant (bool, int32 or float32); anything else is unsupported."""
    if isinstance(v, bool):
        return Const(v, "bool")
    if isinstance(v, int):
        return Const(v, "int32")
    if isinstance(v, float):
        return Const(v, "float32")
    raise Unsupported(message or f"value {v!r} used as a number", line)


def fold(e: Expr) -> Expr:
    """Fold integer constant subexpressions (keeps the tree otherwise)."""
    if isinstance(e, Bin) and isinstance(e.a, Const) and isinstance(e.b, Const) and \
            e.a.dtype == "int32" and e.b.dtype == "int32":
        a, b = e.a.value, e.b.value
        if e.op in PY_OPS and not (e.op in ("fdiv", "fmod") and b == 0):
            return Const(PY_OPS[e.op](a, b), "int32")
        if e.op == "min":
            return Const(min(a, b), "int32")
        if e.op == "max":
            return Const(max(a, b), "int32")
    if isinstance(e, Unary) and e.op == "neg" and isinstance(e.a, Const) and e.a.dtype != "bool":
        return Const(-e.a.value, e.a.dtype)
    return e
