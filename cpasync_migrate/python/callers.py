"""What a ``T.macro`` parameter is bound to: the arguments of every call of the macro in the file.

What: for a pointer argument of a legacy call that is a macro's parameter (``S.data`` with ``S`` a
buffer parameter, or a pointer parameter ``dst_ptr``), find each call of the macro in this file and
the argument it passes there, and read that argument's buffer declaration at the call site.

Why: the macro's own annotation (``smem: T.Tensor(..., "float32")``) is not what TileLang uses; the
buffers the callers pass are.  Trusting an annotation that disagrees with the callers writes pointer
arithmetic in the wrong type.  When every caller passes buffers of one element type, that type is
exact; when they disagree, one rewrite cannot serve them all.

Pure: reads the tree through the rewrite context (``scope_of``, ``parent``, ``qnames``, ``pos``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst
from libcst.metadata import Assignment

from .context import Context


@dataclass
class Binding:
    site: cst.Call  # the macro's call
    expr: cst.BaseExpression  # the argument passed for the parameter there


@dataclass
class Route:
    macro: cst.FunctionDef
    param: cst.Param
    bindings: list  # Binding, one per call of the macro in the file (empty: none is visible)
    public: bool  # a module-level macro another file could import and call
    why_unknown: str = ""  # set when a reference to the macro is not a plain call


def param_route(ctx: Context, at: cst.CSTNode, name: str, macro_names: set) -> Optional[Route]:
    """The route of parameter ``name`` of the T.macro around ``at``; None when it is not one."""
    asgs = ctx.assignments(at, name)
    if len(asgs) != 1:
        return None
    (asg,) = asgs
    if not isinstance(asg, Assignment) or not isinstance(asg.node, cst.Param):
        return None
    param = asg.node
    fdef = ctx.parent(ctx.parent(param))  # Param -> Parameters -> FunctionDef
    if not isinstance(fdef, cst.FunctionDef) or not decorated(ctx, fdef, macro_names):
        return None
    route = Route(fdef, param, [], isinstance(ctx.parent(fdef), cst.Module) and exported(ctx, fdef.name.value) is not None)
    scope = ctx.scope_of(fdef)
    try:
        defs = [a for a in scope[fdef.name.value] if isinstance(a, Assignment)] if scope is not None else []
    except Exception:  # noqa: BLE001
        defs = []
    if len(defs) != 1 or defs[0].node is not fdef:
        route.why_unknown = f"the macro `{fdef.name.value}` is bound more than once"
        return route
    params = list(fdef.params.params)
    index = params.index(param) if param in params else None
    for acc in defs[0].references:
        call = ctx.parent(acc.node)
        if not (isinstance(call, cst.Call) and call.func is acc.node):
            route.why_unknown = f"the macro `{fdef.name.value}` is used other than by a call"
            route.bindings = []
            return route
        expr = _argument(call, param.name.value, index)
        if expr is None:
            route.why_unknown = f"a call of `{fdef.name.value}` does not pass `{param.name.value}` plainly"
            route.bindings = []
            return route
        route.bindings.append(Binding(call, expr))
    return route


def _argument(call: cst.Call, name: str, index: Optional[int]) -> Optional[cst.BaseExpression]:
    if any(a.star for a in call.args):
        return None
    for a in call.args:
        if a.keyword is not None and a.keyword.value == name:
            return a.value
    positional = [a for a in call.args if a.keyword is None]
    if index is not None and index < len(positional):
        return positional[index].value
    return None


def decorated(ctx: Context, fdef: cst.FunctionDef, names: set) -> bool:
    """``fdef`` has a TileLang/TVM decorator whose last name is in ``names`` (``@T.macro``, ``@T.prim_func(...)``)."""
    mods = ctx.tl_modules | ctx.tvm_modules
    for d in fdef.decorators:
        expr = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
        for q in ctx.qnames(expr):
            mod, _, last = q.rpartition(".")
            if last in names and (mod in mods or mod.split(".")[0] in ("tilelang", "tvm")):
                return True
    return False


def exported(ctx: Context, name: str) -> Optional[bool]:
    """Whether another module can import the module-level ``name``: None when it cannot (a private ``_name``
    that a literal ``__all__`` does not list is the module's own); else whether a star import binds it
    (a literal ``__all__`` lists it, or there is none and the name is public)."""
    listed = _all_names(ctx)
    if listed is None:  # no __all__
        return None if name.startswith("_") else True
    if listed is False:  # an __all__ the text does not spell out: it may list the name
        return True
    if name in listed:
        return True
    return None if name.startswith("_") else False


def _all_names(ctx: Context):
    """The module's ``__all__`` as a set of names; None when it has none; False when it is not a literal."""
    found = None
    for stmt in ctx.module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for s in stmt.body:
            targets = []
            if isinstance(s, cst.Assign):
                targets = [t.target for t in s.targets]
            elif isinstance(s, (cst.AnnAssign, cst.AugAssign)):
                targets = [s.target]
            if not any(isinstance(t, cst.Name) and t.value == "__all__" for t in targets):
                continue
            v = getattr(s, "value", None)
            if isinstance(s, cst.AugAssign) or not isinstance(v, (cst.List, cst.Tuple)) or found is not None:
                return False
            names = set()
            for e in v.elements:
                if not isinstance(e.value, cst.SimpleString):
                    return False
                names.add(e.value.evaluated_value)
            found = names
    return found
