"""Where a buffer and a dtype come from, as the text binds them (the libcst pass).

A buffer named at a call is looked up through the scopes libcst gives: its declaration (a
call of a declaration function, an annotation of a parameter, a ``with ... as`` target),
followed through plain aliases (``S = staged``) and tuple unpacking of declarations; its
dtype argument (or the declaring function's default, rules/namespaces.toml); a dtype
expression resolved to a literal, a dtype attribute or a name bound once; integer
constants the text fixes.  Every lookup answers only what the text decides: otherwise it
returns None (no single binding) or raises ``NoFix`` with the reason.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst
from libcst.metadata import Assignment

from .context import Context, DType, NoFix
from .cst_util import int_value, names_in, string_value

_ALIAS_DEPTH = 4  # links of `S = staged` followed to a buffer's declaration

_BUILTIN_NAMES = frozenset({"True", "False", "None"})


class Bindings:
    """Declarations, aliases, dtypes and constants of one module: the service ``ctx.bindings``.

    Reads the tree through the context (``ctx.assignments``, ``ctx.parent``, ``ctx.pos``, ``ctx.node_text``,
    ``ctx.qnames``, ``ctx.qualified_names``, ``ctx.resolver``) and the rules (``ctx.rules``)."""

    ctx: Context

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def declaration_of(self, at: cst.CSTNode, name: str,
                       depth: int = 0) -> Optional[tuple[cst.CSTNode, cst.BaseExpression]]:
        """The declaring call (or subscript) of buffer ``name`` visible at ``at``.

        Returns (context node, declaration expression), or None when no
        single declaration is visible.  Followed as Python binds them: a plain alias
        (``S = staged``: the declaration of ``staged`` seen at that statement, up to
        ``_ALIAS_DEPTH`` links; a chain ``S = W = staged`` binds each target to the one value) and tuple unpacking of as many declarations
        (``a_s, b_s = T.alloc_shared(...), T.alloc_shared(...)``; tuples only: TileLang's
        parser rejects a list target).
        """
        decls = self.declarations_of(at, name, depth)
        if decls is None or len(decls) != 1:
            return None
        return decls[0]

    def declarations_of(self, at: cst.CSTNode, name: str,
                        depth: int = 0) -> Optional[list[tuple[cst.CSTNode, cst.BaseExpression]]]:
        """Every declaration of buffer ``name`` that reaches ``at`` (one per binding the scope holds, each read
        as ``declaration_of`` reads one); None when a binding is not a declaration the text shows."""
        decls = []
        for asg in sorted(self.ctx.assignments(at, name), key=self._source_order):
            if not isinstance(asg, Assignment):
                return None
            n = asg.node
            if isinstance(n, cst.Param):
                if n.annotation is None:
                    return None
                decls.append((n, n.annotation.annotation))
                continue
            par = self.ctx.parent(n)
            if isinstance(par, cst.AssignTarget):
                stmt = self.ctx.parent(par)
                if isinstance(stmt, cst.Assign) and par.target is n:  # `S = v`, or a chain `S = W = v`
                    if isinstance(stmt.value, cst.Name):
                        if stmt.value.value == name or depth >= _ALIAS_DEPTH:
                            return None
                        found = self.declaration_of(stmt, stmt.value.value, depth + 1)
                        if found is None:
                            return None
                        decls.append(found)
                        continue
                    decls.append((stmt, stmt.value))
                    continue
                return None
            if isinstance(par, cst.Element):
                found = self._unpacked(par, n)
                if found is None:
                    return None
                decls.append(found)
                continue
            if isinstance(par, cst.AnnAssign) and par.target is n and par.value is not None:
                decls.append((par, par.value))
                continue
            if isinstance(par, cst.AsName):
                witem = self.ctx.parent(par)
                if isinstance(witem, cst.WithItem):
                    decls.append((witem, witem.item))
                    continue
            return None
        return decls

    def _source_order(self, asg) -> tuple:
        """Where a binding is in the file (bindings are listed, and named in messages, in the file's order)."""
        try:
            p = self.ctx.pos(asg.node).start
            return (p.line, p.column)
        except Exception:  # noqa: BLE001 - a binding without a position (a builtin): first
            return (0, 0)

    def no_declaration_why(self, at: cst.CSTNode, name: str) -> str:
        """Why ``declaration_of(at, name)`` found none: several declarations reach ``at`` (each named with the
        element type it gives), or none is visible."""
        decls = self.declarations_of(at, name)
        if not decls or len(decls) < 2:
            return "no single declaration of it is visible there"
        return (f"{len(decls)} declarations of it reach the call ({self.readings(decls, name)}); "
                "which one holds is not decided by the text")

    def readings(self, decls: list, name: str) -> str:
        """``line N: T.alloc_shared(...) (uint8)`` for each declaration."""
        parts = []
        for ctx_node, decl in decls:
            try:
                dexpr, fname = self.decl_dtype_expr(decl)
                dt = self.declared_default(fname, name) if dexpr is None else \
                    (self.dtype_of_expr(dexpr, ctx_node).name or self.ctx.node_text(dexpr))
            except NoFix:
                dt = "unknown type"
            parts.append(f"line {self.ctx.pos(decl).start.line}: `{self.ctx.node_text(decl)}`, {dt}")
        return "; ".join(parts)

    def _unpacked(self, element: cst.Element, n: cst.Name):
        """``a, b = X, Y`` (or a chain ``a, b = c, d = X, Y``): (the statement, the value matching ``n``) when ``X``, ``Y`` are declarations
        (calls or subscripts, never names, so no value reads a name the statement rebinds)."""
        tup = self.ctx.parent(element)
        if not isinstance(tup, cst.Tuple):
            return None  # (TileLang's parser rejects a list target: `[a, b] = ...`)
        target = self.ctx.parent(tup)
        if not isinstance(target, cst.AssignTarget) or target.target is not tup:
            return None
        stmt = self.ctx.parent(target)
        if not isinstance(stmt, cst.Assign) or not isinstance(stmt.value, cst.Tuple):
            return None  # (a chain `lo, hi = a_s, b_s = X, Y` binds each tuple target to the one value)
        names, values = tup.elements, stmt.value.elements
        if len(names) != len(values) or any(isinstance(e, cst.StarredElement) for e in (*names, *values)) or \
                not all(isinstance(e.value, cst.Name) for e in names):
            return None
        i = next(i for i, e in enumerate(names) if e is element)
        value = values[i].value
        if not isinstance(value, (cst.Call, cst.Subscript)):
            return None
        return stmt, value

    def decl_dtype_expr(self, decl: cst.BaseExpression) -> tuple[Optional[cst.BaseExpression], str]:
        """The dtype argument of a declaration expression.

        Returns (expr or None for the API default, declaring function name);
        raises NoFix when the expression is not a known declaration.
        """
        if isinstance(decl, cst.Subscript):  # T.Buffer[(M, N), "float16"]
            fname = self.decl_function(decl.value)
            if fname is None:
                raise NoFix("the buffer's declaration is not a TileLang buffer declaration")
            elems = [e.slice for e in decl.slice]
            vals = [e.value for e in elems if isinstance(e, cst.Index)]
            if len(vals) >= 2:
                return vals[1], fname
            return None, fname
        if not isinstance(decl, cst.Call):
            raise NoFix("the buffer's declaration is not a call")
        fname = self.decl_function(decl.func)
        if fname is None:
            raise NoFix(f"the buffer is declared by `{self.ctx.node_text(decl.func)}`, not a known buffer declaration")
        spec = self.ctx.rules.declarations[fname]
        positional = [a for a in decl.args if a.keyword is None and not a.star]
        if any(a.star for a in decl.args):
            raise NoFix("the buffer's declaration uses *args/**kwargs")
        for a in decl.args:
            if a.keyword is not None and a.keyword.value == spec["keyword"]:
                return a.value, fname
        if len(positional) > spec["position"]:
            return positional[spec["position"]].value, fname
        return None, fname

    def declared_default(self, fname: str, buf: str) -> str:
        """The dtype ``fname`` gives a buffer declared without one (rules/namespaces.toml); NoFix when it
        requires one (TileLang's ``alloc_shared``: such a kernel does not build)."""
        d = self.ctx.rules.declarations[fname].get("default")
        if d is None:
            raise NoFix(f"`{buf}` is declared by {fname} without a dtype, which {fname} requires")
        return self.ctx.rules.canonical_dtype(d)

    def decl_function(self, func: cst.BaseExpression) -> Optional[str]:
        for q in self.ctx.qnames(func):
            mod, _, name = q.rpartition(".")
            if name in self.ctx.rules.declarations and (mod in self.ctx.tl_modules or mod in self.ctx.tvm_modules):
                return name
        if isinstance(func, cst.Name) and func.value in self.ctx.rules.declarations and \
                not self.ctx.assignments(func, func.value):
            if self.ctx.resolver.star:  # the resolver knows the module's star imports
                return func.value  # only `from tilelang.language import *` can bind it
        return None

    def same_binding(self, a: cst.CSTNode, b: cst.CSTNode, expr: cst.BaseExpression) -> bool:
        """Every name in ``expr`` (evaluated at ``a``) means the same at ``b``."""
        for n in names_in(expr):
            if self.ctx.assignments(a, n) != self.ctx.assignments(b, n):
                return False
            if not self.ctx.assignments(a, n) and n not in _BUILTIN_NAMES:
                return False
        return True

    def dtype_of_expr(self, expr: cst.BaseExpression, at: cst.CSTNode, depth: int = 0) -> DType:
        """Resolve a dtype expression as seen at ``at`` (the declaration)."""
        text = self.ctx.node_text(expr)
        s = string_value(expr)
        if s is not None:
            name = self.ctx.rules.canonical_dtype(s)
            size = self.ctx.rules.dtype_size(name)
            if size is None:
                raise NoFix(f"unknown element type {s!r}")
            return DType(text, name, size)
        if isinstance(expr, cst.Attribute):
            mods = {q.name.rpartition(".")[0] for q in self.ctx.qualified_names(expr)}
            attr = expr.attr.value
            if mods & (self.ctx.tl_modules | self.ctx.tvm_modules) and self.ctx.rules.dtype_size(attr) is not None:
                name = self.ctx.rules.canonical_dtype(attr)
                return DType(text, name, self.ctx.rules.dtype_size(name))
            raise NoFix(f"dtype expression `{text}` is not a known dtype")
        if isinstance(expr, cst.Name) and depth < 4:
            asgs = self.ctx.assignments(at, expr.value)
            if not asgs:  # `float16` under `from tilelang.language import *`
                for q in self.ctx.qnames(expr):
                    mod, _, attr = q.rpartition(".")
                    if mod in self.ctx.tl_modules | self.ctx.tvm_modules and self.ctx.rules.dtype_size(attr) is not None:
                        name = self.ctx.rules.canonical_dtype(attr)
                        return DType(text, name, self.ctx.rules.dtype_size(name))
            if len(asgs) == 1:
                (asg,) = asgs
                if isinstance(asg, Assignment):
                    n = asg.node
                    if isinstance(n, cst.Param):
                        d = DType(text, None, None)
                        if n.default is not None:
                            try:
                                inner = self.dtype_of_expr(n.default, n, depth + 1)
                            except NoFix:
                                inner = None
                            if inner is not None and inner.size is not None:
                                d.assumed_size = inner.size
                                d.assumed_name = inner.name
                        return d
                    par = self.ctx.parent(n)
                    if isinstance(par, cst.AssignTarget):
                        stmt = self.ctx.parent(par)
                        if isinstance(stmt, cst.Assign) and par.target is n:  # one target or a chain
                            inner = self.dtype_of_expr(stmt.value, stmt, depth + 1)
                            return DType(text, inner.name, inner.size, inner.assumptions,
                                         inner.assumed_size, inner.assumed_name)
            return DType(text, None, None)
        raise NoFix(f"dtype expression `{text}` is not a string, a dtype attribute or a name")

    def const_int(self, name: cst.Name, at: cst.CSTNode, depth: int = 0) -> Optional[int]:
        """Value of a name bound exactly once (not a parameter) to integer arithmetic on constants."""
        if depth > 8:
            return None
        asgs = self.ctx.assignments(at, name.value)
        if len(asgs) != 1:
            return None
        (asg,) = asgs
        if not isinstance(asg, Assignment) or isinstance(asg.node, cst.Param):
            return None
        n = asg.node
        par = self.ctx.parent(n)
        value = None
        if isinstance(par, cst.AssignTarget):
            stmt = self.ctx.parent(par)
            if isinstance(stmt, cst.Assign) and par.target is n:  # one target or a chain `a = b = 8`
                value = stmt.value
        elif isinstance(par, cst.Element):
            tup = self.ctx.parent(par)
            tgt = self.ctx.parent(tup)
            if isinstance(tup, (cst.Tuple, cst.List)) and isinstance(tgt, cst.AssignTarget):
                stmt = self.ctx.parent(tgt)
                idx = [e for e in tup.elements].index(par)
                if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and \
                        isinstance(stmt.value, (cst.Tuple, cst.List)) and len(stmt.value.elements) == len(tup.elements):
                    value = stmt.value.elements[idx].value
        if value is None:
            return None
        return self._eval_int(value, value, depth + 1)  # names in the value mean what they mean there

    def _eval_int(self, e: cst.BaseExpression, at: cst.CSTNode, depth: int) -> Optional[int]:
        iv = int_value(e)
        if iv is not None:
            return iv
        if isinstance(e, cst.Name):
            return self.const_int(e, at, depth)
        if isinstance(e, cst.BinaryOperation):
            a = self._eval_int(e.left, at, depth)
            b = self._eval_int(e.right, at, depth)
            if a is None or b is None:
                return None
            op = e.operator
            if isinstance(op, cst.Add):
                return a + b
            if isinstance(op, cst.Subtract):
                return a - b
            if isinstance(op, cst.Multiply):
                return a * b
            if isinstance(op, cst.FloorDivide) and b:
                return a // b
        return None

    def decl_ndim(self, decl: cst.BaseExpression) -> Optional[int]:
        shape = None
        if isinstance(decl, cst.Subscript):
            vals = [e.slice.value for e in decl.slice if isinstance(e.slice, cst.Index)]
            shape = vals[0] if vals else None
        elif isinstance(decl, cst.Call):
            fname = self.decl_function(decl.func)
            pos = 1 if fname == "match_buffer" else 0
            positional = [a for a in decl.args if a.keyword is None]
            kw = [a for a in decl.args if a.keyword is not None and a.keyword.value == "shape"]
            if kw:
                shape = kw[0].value
            elif len(positional) > pos:
                shape = positional[pos].value
        if shape is None:
            return None
        if isinstance(shape, (cst.Tuple, cst.List)):
            return len(shape.elements)
        if isinstance(shape, (cst.Integer, cst.Name, cst.BinaryOperation)):
            return 1
        return None
