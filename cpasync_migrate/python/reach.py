"""Which calls reach the intrinsic: through imports, and through the bindings the text shows.

What: a callee reaches TileLang's (or TVM's) ``ptx_cp_async`` when its qualified name says so
(``T.ptx_cp_async`` with ``import tilelang.language as T``), and also when it is a name bound
once, by a plain assignment or a walrus, to something that does (``cp = T.ptx_cp_async``,
``(cp := T.ptx_cp_async)(...)``), a function's parameter never rebound whose default does
(``def f(..., cp=T.ptx_cp_async)``: its calls rest on the assumption that every caller leaves
the default, ``Reach.assumption``), an attribute of a name bound to the module
(``lang = tilelang.language`` or ``L2 = T``, then ``lang.ptx_cp_async``), or a bare
``ptx_cp_async`` that only ``from tilelang.language import *`` can bind.  Such calls are
migrated like the direct spelling.

Why: a CI lint that passes while a legacy call remains is worse than none.  Calls that may reach
the intrinsic along a route the tool does not follow exactly (``getattr(T, "ptx_cp_async")``,
``T.__dict__["ptx_cp_async"]``, a name bound more than once, or bound to an expression that
merely mentions the intrinsic, such as ``functools.partial(T.ptx_cp_async, ...)``) are reported
as left for a person, with the route.  Every other read of the intrinsic as a value is CPA008
(``checks/value_read.py``).

Pure: the service ``ctx.resolver`` of the file's context (context.py), made on first use; reads names
through it (``qnames``, ``assignments``, ``parent``, ``node_text``, ``module``, ``tl_modules``,
``tvm_modules``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst
from libcst.metadata import Assignment

from .context import Context
from .cst_util import dotted
from .decide import presence
from .decide.attributes import shadowed_module

_DEPTH = 6


@dataclass
class Reach:
    api: Optional[str]  # "tilelang" | "tvm" | None (not the intrinsic)
    # set when the call may reach the intrinsic along a route the tool does not follow exactly
    unresolved: Optional[str] = None
    # set when the route rests on an assumption a person can check (a parameter's default)
    assumption: Optional[str] = None


class Resolver:
    ctx: Context

    def __init__(self, ctx: Context, intrinsic: str):
        self.ctx = ctx
        self.intrinsic = intrinsic
        self.star = self._star_imports()

    def _star_imports(self) -> Optional[str]:
        for stmt in self.ctx.module.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for s in stmt.body:
                    if isinstance(s, cst.ImportFrom) and isinstance(s.names, cst.ImportStar) and s.module is not None \
                            and not s.relative:
                        mod = dotted(s.module)
                        if mod in self.ctx.tl_modules:
                            return "tilelang"
                        if mod in self.ctx.tvm_modules:
                            return "tvm"
        return None

    # ------------------------------------------------------------------ the callee

    def callee(self, func: cst.BaseExpression, depth: int = 0) -> Reach:
        names = sorted(self.ctx.qnames(func))
        readings = {self._reading(q) for q in names}
        if len(readings) > 1:  # bound more than once, to names that disagree
            return Reach(None, self._rebound(func, names))
        if readings - {None}:
            for q in names:
                r = self._through_module(func, q.rpartition(".")[0])
                if r.api is None:
                    return r
            return r
        if depth >= _DEPTH:
            return Reach(None)
        if isinstance(func, cst.Name):
            return self._through_name(func, depth)
        if isinstance(func, cst.NamedExpr):
            return self.callee(func.value, depth + 1)  # `(cp := T.ptx_cp_async)(...)` calls the value
        if isinstance(func, cst.Attribute) and func.attr.value == self.intrinsic:
            path = self.module_path(func.value, depth)
            if path is not None:
                return self._through_module(func, path)
            if self.module_of(func.value, depth, params=True) is not None:
                return Reach(None, f"reached through `{self.ctx.node_text(func)}`, whose module is a parameter's "
                                   f"default; spell the call `T.{self.intrinsic}(...)` so that it can be migrated")
            shadows = self.ctx.rules.attributes
            for q in sorted(self.ctx.qnames(func)):
                key = shadowed_module(q, shadows)
                if key is not None:
                    return Reach(None, f"reached through `{self.ctx.node_text(func)}`: `{key}` is "
                                       f"`{shadows[key]}` as an attribute in the releases the legacy form runs on, so "
                                       f"this names `{q}`, which those releases do not have; spell the call "
                                       f"`T.{self.intrinsic}(...)` so that it can be migrated")
            return Reach(None)
        if isinstance(func, (cst.Call, cst.Subscript)) and self.string_route(func) is not None:
            return Reach(None, f"reached through `{self.ctx.node_text(func)}`; spell the call "
                               f"`T.{self.intrinsic}(...)` so that it can be migrated")
        return Reach(None)

    def _reading(self, q: str) -> Optional[str]:
        """The API the qualified name ``q`` reaches: ``"tilelang"``, ``"tvm"``, or None (another module's
        name, or not the intrinsic).  A name bound more than once has one qualified name per binding."""
        mod, _, name = q.rpartition(".")
        if name != self.intrinsic:
            return None
        if mod in self.ctx.tl_modules:
            return "tilelang"
        return "tvm" if mod in self.ctx.tvm_modules else None

    def api_by_name(self, func) -> Optional[str]:
        """The API ``func`` reaches by its name; where its bindings disagree, TileLang's before TVM's (a
        value read is a finding either way; a callee whose bindings disagree is left for a person: ``callee``)."""
        readings = {self._reading(q) for q in self.ctx.qnames(func)}
        return "tilelang" if "tilelang" in readings else "tvm" if "tvm" in readings else None

    def _through_module(self, func, module: str) -> Reach:
        """The call ``func`` reaches the intrinsic through ``module`` (one of the rules' modules): its API, or
        why it is left for a person where no release of the target imports that module (``decide/presence.py``)."""
        if module not in self.ctx.tl_modules:
            return Reach("tvm")
        absent = presence.unimported(module, self.ctx.opts.target, self.ctx.rules)
        if absent:
            return Reach(None, f"reached through `{self.ctx.node_text(func)}`: {absent}")
        return Reach("tilelang")

    def _rebound(self, func, names: list) -> str:
        """Why a callee whose root is bound more than once to the qualified ``names``, with readings that
        disagree (``import tilelang.language as T`` and ``from tvm.script import tir as T``, one under a
        ``try``), cannot be decided from the text: which binding a call sees depends on the order the code runs."""
        root = func
        while isinstance(root, cst.Attribute):
            root = root.value
        name = root.value if isinstance(root, cst.Name) else self.ctx.node_text(func)
        return (f"reached through `{self.ctx.node_text(func)}`, whose `{name}` is bound more than once, to names "
                f"that disagree ({', '.join(names)}): which one a call sees depends on the order the code runs; "
                f"bind `{name}` once so that the call can be migrated")

    def _through_name(self, name: cst.Name, depth: int) -> Reach:
        asgs = self.ctx.assignments(name, name.value)
        if not asgs:
            if name.value == self.intrinsic and self.star:
                return Reach(self.star)  # only the star import can bind it
            return Reach(None)
        values = [self._assigned_value(a, params=True) for a in asgs]
        reaches = [self.callee(v, depth + 1) if v is not None else Reach(None) for v in values]
        apis = {r.api for r in reaches}
        if len(asgs) == 1 and values[0] is not None:
            r = reaches[0]
            param = next(iter(asgs)).node
            if isinstance(param, cst.Param) and r.api is not None and r.assumption is None:
                fn = self.ctx.parent(self.ctx.parent(param))
                r = Reach(r.api, r.unresolved,
                          f"every call of `{fn.name.value}` leaves its parameter `{name.value}` at its default "
                          f"`{self.ctx.node_text(values[0])}`")
            if r.api is not None or r.unresolved:
                return r
            if self._mentions(values[0]):
                return Reach(None, f"reached through `{name.value}`, bound to `{self.ctx.node_text(values[0])}`, "
                                   "which the tool does not follow")
            return Reach(None)
        if apis - {None}:
            return Reach(None, f"reached through `{name.value}`, which is bound more than once "
                               "(not every binding is the intrinsic)" if None in apis or len(apis) > 1 else
                         f"reached through `{name.value}`, which is bound more than once")
        return Reach(None)

    def _assigned_value(self, asg, params: bool = False) -> Optional[cst.BaseExpression]:
        """The value a binding gives its name: a one-target assignment's, an annotated assignment's, a
        walrus's, or (``params``) the default of a function's parameter (not a lambda's)."""
        if not isinstance(asg, Assignment):
            return None
        n = asg.node
        if isinstance(n, cst.Param):
            if params and n.default is not None and \
                    isinstance(self.ctx.parent(self.ctx.parent(n)), cst.FunctionDef):
                return n.default
            return None
        par = self.ctx.parent(n)
        if isinstance(par, cst.AssignTarget):
            stmt = self.ctx.parent(par)
            if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and par.target is n:
                return stmt.value
        if isinstance(par, cst.AnnAssign) and par.target is n and par.value is not None:
            return par.value
        if isinstance(par, cst.NamedExpr) and par.target is n:
            return par.value
        return None

    def module_of(self, expr: cst.BaseExpression, depth: int = 0, params: bool = False) -> Optional[str]:
        """'tilelang' / 'tvm' when ``expr`` is the module that holds the intrinsic (``module_path``)."""
        path = self.module_path(expr, depth, params)
        if path is None:
            return None
        return "tilelang" if path in self.ctx.tl_modules else "tvm"

    def module_path(self, expr: cst.BaseExpression, depth: int = 0, params: bool = False) -> Optional[str]:
        """The module (one of the rules' TileLang or TVM modules) ``expr`` is, when it holds the intrinsic: by
        its qualified name, through a name bound once to it, ``importlib.import_module("tilelang.language")``
        or ``sys.modules["tilelang.language"]``; with ``params``, also a function parameter's default."""
        for q in sorted(self.ctx.qnames(expr)):
            if q in self.ctx.tl_modules or q in self.ctx.tvm_modules:
                return q
        if depth < _DEPTH and isinstance(expr, cst.Name):
            asgs = self.ctx.assignments(expr, expr.value)
            if len(asgs) == 1:
                v = self._assigned_value(next(iter(asgs)), params=params)
                if v is not None:
                    return self.module_path(v, depth + 1, params)
        named = None
        if isinstance(expr, cst.Call) and len(expr.args) == 1 and expr.args[0].keyword is None and \
                "importlib.import_module" in self.ctx.qnames(expr.func):
            named = expr.args[0].value
        elif isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and \
                isinstance(expr.slice[0].slice, cst.Index) and "sys.modules" in self.ctx.qnames(expr.value):
            named = expr.slice[0].slice.value
        if isinstance(named, cst.SimpleString):
            try:
                mod = named.evaluated_value
            except Exception:  # noqa: BLE001
                return None
            if mod in self.ctx.tl_modules or mod in self.ctx.tvm_modules:
                return mod
        return None

    def string_route(self, node: cst.BaseExpression) -> Optional[str]:
        """'tilelang' / 'tvm' when ``node`` looks the intrinsic up by its name in a string:
        ``getattr(M, "ptx_cp_async"[, default])``, ``M.__dict__["ptx_cp_async"]``,
        ``vars(M)["ptx_cp_async"]`` or ``.get("ptx_cp_async")`` of those two, ``M`` the module."""
        if isinstance(node, cst.Call):
            if self.is_builtin(node.func, "getattr") and len(node.args) in (2, 3) and \
                    all(a.keyword is None and not a.star for a in node.args) and \
                    self._names_intrinsic(node.args[1].value):
                return self.module_of(node.args[0].value)
            f = node.func
            if isinstance(f, cst.Attribute) and f.attr.value == "get" and len(node.args) in (1, 2) and \
                    all(a.keyword is None and not a.star for a in node.args) and \
                    self._names_intrinsic(node.args[0].value):
                return self._namespace_of(f.value)
            return None
        if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index) \
                and node.slice[0].slice.star is None and self._names_intrinsic(node.slice[0].slice.value):
            return self._namespace_of(node.value)
        return None

    def _namespace_of(self, expr: cst.BaseExpression) -> Optional[str]:
        """``M.__dict__`` or ``vars(M)`` of the module that holds the intrinsic."""
        if isinstance(expr, cst.Attribute) and expr.attr.value == "__dict__":
            return self.module_of(expr.value)
        if isinstance(expr, cst.Call) and self.is_builtin(expr.func, "vars") and len(expr.args) == 1 and \
                expr.args[0].keyword is None and not expr.args[0].star:
            return self.module_of(expr.args[0].value)
        return None

    def is_builtin(self, func: cst.BaseExpression, name: str) -> bool:
        return isinstance(func, cst.Name) and func.value == name and (
            f"builtins.{name}" in self.ctx.qnames(func) or not self.ctx.assignments(func, name))

    def _names_intrinsic(self, expr: cst.BaseExpression) -> bool:
        if not isinstance(expr, cst.SimpleString):
            return False
        try:
            return expr.evaluated_value == self.intrinsic
        except Exception:  # noqa: BLE001 - odd prefixes
            return False

    def _mentions(self, expr: cst.BaseExpression) -> bool:
        """``expr`` holds a reference that resolves to the intrinsic (``partial(T.ptx_cp_async, ...)``, an import's
        alias of it, a lookup by its name in a string)."""
        found = []
        intrinsic = self.intrinsic
        by_name = self.api_by_name
        string_route = self.string_route
        module_of = self.module_of

        class V(cst.CSTVisitor):
            def visit_Call(self, node: cst.Call) -> None:
                if string_route(node) is not None:  # getattr(T, "ptx_cp_async"), T.__dict__.get(...)
                    found.append(node)

            def visit_Subscript(self, node: cst.Subscript) -> None:
                if string_route(node) is not None:  # T.__dict__["ptx_cp_async"]
                    found.append(node)

            def visit_Attribute(self, node: cst.Attribute) -> None:
                if node.attr.value == intrinsic and (by_name(node) is not None or
                                                     module_of(node.value, 0, True) is not None):
                    found.append(node)

            def visit_Name(self, node: cst.Name) -> None:
                if by_name(node) is not None:  # the bare name, or an import's alias of it (`cp`)
                    found.append(node)

        expr.visit(V())
        return bool(found)
