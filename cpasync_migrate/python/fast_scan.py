"""The fast pass's one walk over a stdlib ``ast`` tree: candidate calls, definitions, bindings.

``scan`` collects what the decisions of ``fast.py`` and ``fast_sizes.py`` read; ``qualify``
gives a callee's dotted name through the module's imports (undecided where libcst's scopes
could answer otherwise); ``reaches_by_binding`` says when a call may reach the intrinsic
through an assignment libcst follows.  ``Undecided``: libcst decides the file.
"""
from __future__ import annotations

import ast
from typing import Optional

from .calls import INTRINSIC
from .decide.attributes import through


class Undecided(Exception):
    """The ast pass cannot answer exactly; libcst decides."""


_TYPE_PARAMS = tuple(getattr(ast, n) for n in ("TypeVar", "ParamSpec", "TypeVarTuple") if hasattr(ast, n))


class Scan:
    """What one walk over a module finds (``scan``)."""

    __slots__ = ("calls", "defs", "imports", "other", "nested", "assigned", "bindings", "scopes",
                 "values", "callee_names", "getattr_intrinsic", "lookup_intrinsic", "alias_names", "loops",
                 "shadows", "memo", "call_parents")


# Binding kinds a buffer or dtype lookup can use (rewrite.py's declaration_of / dtype_of_expr):
# "param" (a def's parameter), "assign" (the sole target of a one-target assignment), "annassign"
# (the target of an annotated assignment with a value), "with" (``with ... as NAME``); anything
# else binding the name is "other", or "uncertain" where libcst's scopes record it otherwise than
# Python binds it (``del``, match captures, ``global``/``nonlocal``, type parameters).
_DECL_KINDS = ("param", "assign", "annassign", "with", "tuple")


def _default_shadows() -> dict:
    from ..rules import load_rules

    return load_rules().attributes


def scan(tree: ast.Module, shadows: Optional[dict] = None) -> Scan:
    """One walk over the tree: the candidate calls, the definitions, and the bindings.

    ``shadows``: the rules' ``[attributes]`` (attributes that are not the submodule of their name,
    ``decide/attributes.py``); the default rules' when not given.

    ``calls``: calls whose callee is ``<expr>.ptx_cp_async`` or a name ``ptx_cp_async`` is bound
    to by ``from ... import ptx_cp_async as NAME``; ``defs``: function and class definitions;
    ``imports``: module-level import bindings; ``other``: every name bound anywhere else;
    ``nested``: names bound by imports below module level; ``assigned``: names that are a direct
    target of an assignment or a walrus, or a function's parameter with a default (libcst follows
    those); ``bindings``: name -> [(kind, node, extra)]
    for every binding occurrence (extra: the def of a parameter, the statement or with item of
    the other ``_DECL_KINDS``); ``scopes``: (kind, node) of every function, class, lambda and
    comprehension; ``values``: (target names, value) of every assignment; ``callee_names``: names
    called; ``getattr_intrinsic``: a ``getattr(..., "ptx_cp_async")`` occurs; ``lookup_intrinsic``: a
    subscript or ``.get`` names it in a string (``T.__dict__["ptx_cp_async"]``); ``loops``: every ``for``.
    """
    if shadows is None:
        shadows = _default_shadows()
    imports: dict[str, list[str]] = {}
    other: set[str] = set()
    nested: set[str] = set()
    assigned: set[str] = set()
    bindings: dict[str, list] = {}
    alias_names = {INTRINSIC}
    calls, defs, scopes, values, loops = [], [], [], [], []
    callee_names: set[str] = set()
    getattr_intrinsic = False
    lookup_intrinsic = False
    kinds: dict[int, tuple] = {}  # id(node) -> (kind, its def (param) or statement / with item)
    top = set(id(s) for s in tree.body)
    AST, Call, Attribute, Name, Store, Del = ast.AST, ast.Call, ast.Attribute, ast.Name, ast.Store, ast.Del
    Import, ImportFrom = ast.Import, ast.ImportFrom
    FuncDefs = (ast.FunctionDef, ast.AsyncFunctionDef)
    Comps = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)

    def bind(name, node, kind="other", extra=None):
        other.add(name)
        bindings.setdefault(name, []).append((kind, node, extra))

    call_parents: dict = {}  # id(call) -> its parent, for every call
    stack = [tree]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        for field in node._fields:
            v = getattr(node, field, None)
            if isinstance(v, list):
                for x in v:
                    if isinstance(x, AST):
                        push(x)
                        if type(x) is Call:
                            call_parents[id(x)] = node
            elif isinstance(v, AST):
                push(v)
                if type(v) is Call:
                    call_parents[id(v)] = node
        t = type(node)
        if t is Call:
            calls.append(node)
            f = node.func
            if type(f) is Name:
                callee_names.add(f.id)
                if f.id == "getattr" and any(type(a) is ast.Constant and a.value == INTRINSIC
                                             for a in list(node.args) + [k.value for k in node.keywords]):
                    getattr_intrinsic = True
            elif type(f) is Attribute and f.attr == "get" and any(type(a) is ast.Constant and a.value == INTRINSIC
                                                                  for a in node.args):
                lookup_intrinsic = True  # `T.__dict__.get("ptx_cp_async")`
        elif t is ast.Subscript:
            if type(node.slice) is ast.Constant and node.slice.value == INTRINSIC:
                lookup_intrinsic = True  # `T.__dict__["ptx_cp_async"]`
        elif t is Name:
            if isinstance(node.ctx, (Store, Del)):
                kind = kinds.get(id(node))
                if kind is not None and isinstance(node.ctx, Store):
                    bind(node.id, node, kind[0], kind[1])
                else:
                    bind(node.id, node, "other" if isinstance(node.ctx, Store) else "uncertain")
        elif t is Attribute:
            pass
        elif t is ast.For:
            loops.append(node)
        elif t is ast.Assign:
            names = [x.id for x in node.targets if type(x) is Name]
            assigned.update(names)
            values.append((names, node.value))
            if len(node.targets) == 1 and type(node.targets[0]) is Name:
                kinds[id(node.targets[0])] = ("assign", node)
            elif len(node.targets) > 1:
                for x in node.targets:
                    if type(x) is Name:
                        kinds[id(x)] = ("chain", node)  # `a = b = v`: rewrite.declaration_of follows it
            elif len(node.targets) == 1 and type(node.targets[0]) is ast.Tuple:
                for x in node.targets[0].elts:
                    if type(x) is Name:
                        kinds[id(x)] = ("tuple", node)  # rewrite.declaration_of unpacks these
        elif t is ast.AnnAssign:
            if type(node.target) is Name and node.value is not None:
                assigned.add(node.target.id)
                values.append(([node.target.id], node.value))
                kinds[id(node.target)] = ("annassign", node)
        elif t is ast.withitem:
            if type(node.optional_vars) is Name:
                kinds[id(node.optional_vars)] = ("with", node)
        elif t is Import or t is ImportFrom:
            names = []
            if t is Import:
                for a in node.names:
                    if a.asname:  # bound to the last module of the chain, reached attribute by attribute
                        head, *steps = a.name.split(".")
                        names.append((a.asname, through(head, steps, shadows)))
                    else:
                        head = a.name.split(".")[0]
                        names.append((head, head))
            else:
                for a in node.names:
                    if a.name == INTRINSIC and a.asname:
                        alias_names.add(a.asname)
                if node.level or node.module is None:
                    for a in node.names:
                        bind(a.asname or a.name, node)
                    continue
                for a in node.names:
                    if a.name == "*":
                        names.append(("*", node.module))
                        continue
                    names.append((a.asname or a.name, through(node.module, (a.name,), shadows)))
            for bound, target in names:
                if id(node) in top:
                    imports.setdefault(bound, []).append(target)
                else:
                    nested.add(bound)
                bindings.setdefault(bound, []).append(("other", node, None))
        elif t in FuncDefs:
            bind(node.name, node)
            defs.append(node)
            scopes.append(("def", node))
            a = node.args
            for x in a.posonlyargs + a.args + a.kwonlyargs + [y for y in (a.vararg, a.kwarg) if y is not None]:
                kinds[id(x)] = ("param", node)
            positional = a.posonlyargs + a.args
            for x in positional[len(positional) - len(a.defaults):]:
                assigned.add(x.arg)  # reach.py follows a default to a module (a route it names)
            for x, d in zip(a.kwonlyargs, a.kw_defaults):
                if d is not None:
                    assigned.add(x.arg)
        elif t is ast.NamedExpr:
            if type(node.target) is Name:
                assigned.add(node.target.id)
        elif t is ast.ClassDef:
            bind(node.name, node)
            defs.append(node)
            scopes.append(("class", node))
        elif t is ast.Lambda:
            scopes.append(("lambda", node))
        elif t in Comps:
            scopes.append(("comp", node))
        elif t is ast.arg:
            kind = kinds.get(id(node))
            if kind is not None:
                bind(node.arg, node, "param", kind[1])
            else:
                bind(node.arg, node)
        elif t is ast.Global or t is ast.Nonlocal:
            for n in node.names:
                bind(n, node, "uncertain")
        elif t is ast.ExceptHandler:
            if node.name:
                bind(node.name, node)
        elif t is ast.MatchAs or t is ast.MatchStar:
            if node.name:
                bind(node.name, node, "uncertain")
        elif t is ast.MatchMapping:
            if node.rest:
                bind(node.rest, node, "uncertain")
        elif t in _TYPE_PARAMS:
            bind(node.name, node, "uncertain")
    s = Scan()
    s.shadows = shadows
    s.calls = [c for c in calls if (isinstance(c.func, Attribute) and c.func.attr == INTRINSIC) or (
        isinstance(c.func, Name) and c.func.id in alias_names)]
    s.defs, s.imports, s.other, s.nested, s.assigned = defs, imports, other, nested, assigned
    s.bindings, s.scopes, s.values, s.callee_names = bindings, scopes, values, callee_names
    s.getattr_intrinsic, s.alias_names, s.loops = getattr_intrinsic, alias_names, loops
    s.lookup_intrinsic = lookup_intrinsic
    s.memo = {}  # what later questions index once per scan (fast_scopes.py)
    s.call_parents = call_parents
    return s


def reaches_by_binding(s: Scan) -> bool:
    """A call may reach the intrinsic through a binding libcst follows and this pass does not.

    libcst (``reach.py``) follows a called name through its assignments: ``cp = T.ptx_cp_async``,
    ``cp2 = cp``, ``cp = functools.partial(T.ptx_cp_async, ...)``, ``cp = getattr(T,
    "ptx_cp_async")``.  A name is tainted when an assignment binds it to a value that mentions the
    intrinsic anywhere in it (an attribute or name ``ptx_cp_async``, an import alias of it, the
    string: libcst's ``_mentions`` and ``getattr`` routes) or that is a tainted name itself (an
    alias chain; libcst follows no name inside a larger expression, ``mod = compile(f)``); the file
    goes to libcst when a tainted name is called, or when a ``getattr`` names the intrinsic.  The name read as a value elsewhere (``__all__`` strings, a definition's
    body forwarding ``_tir_op.ptx_cp_async``, ``f = ptx_cp_async`` passed on, never called) reaches
    no call: libcst gives those no finding either.
    """
    if s.getattr_intrinsic:
        return True
    if not s.values:
        return False
    tainted: set[str] = set()
    names = s.alias_names
    mentions = []
    for targets, value in s.values:
        direct = False
        for n in ast.walk(value):
            t = type(n)
            if (t is ast.Attribute and n.attr == INTRINSIC) or (t is ast.Name and n.id in names) or (
                    t is ast.Constant and n.value == INTRINSIC):
                direct = True
                break
        alias = value.id if type(value) is ast.Name else None
        mentions.append((targets, direct, alias))
    changed = True
    while changed:
        changed = False
        for targets, direct, alias in mentions:
            if (direct or alias in tainted) and not set(targets) <= tainted:
                tainted.update(targets)
                changed = True
    return bool(tainted & s.callee_names)


def used_as_value(tree: ast.Module) -> bool:
    """The intrinsic's name is read other than as a callee or an import: an attribute or name in a
    value position, or the string of a ``getattr`` (the rule before ``reaches_by_binding``; kept for
    ``DECIDE_NEW_FORM`` off)."""
    callees = set()
    refs = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            callees.add(id(node.func))
        elif isinstance(node, ast.Attribute) and node.attr == INTRINSIC:
            refs.append(node)
        elif isinstance(node, ast.Name) and node.id == INTRINSIC and isinstance(node.ctx, ast.Load):
            refs.append(node)
        elif isinstance(node, ast.Constant) and node.value == INTRINSIC:
            refs.append(node)
    return any(id(r) not in callees for r in refs)


def qualify(func: ast.expr, s: Scan) -> Optional[str]:
    """The callee's qualified name; None when its root is never imported (then it is no module's function).

    A root bound by an assignment (``L2 = T``) is followed by libcst (``reach.py``): undecided.
    """
    imports, other, nested = s.imports, s.other, s.nested
    parts = []
    cur = func
    while isinstance(cur, ast.Attribute):
        parts.append(cur.attr)
        cur = cur.value
    if not isinstance(cur, ast.Name):
        raise Undecided
    root = cur.id
    if root not in imports and root not in nested:
        if root in s.assigned:
            raise Undecided
        return None
    if root in other or root in nested or len(set(imports[root])) != 1:
        raise Undecided
    return through(imports[root][0], reversed(parts), s.shadows)


def enclosing(defs: list, node) -> Optional[str]:
    """Dotted names of the function and class definitions around ``node`` (its ancestors in the tree).

    A definition's extent starts at its first decorator; extents of AST nodes nest, so the
    definitions whose extent holds the node's are exactly its ancestors.
    """
    pos, end = (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)
    around = []
    for d in defs:
        start = min([(d.lineno, d.col_offset)] + [(x.lineno, x.col_offset) for x in d.decorator_list])
        if start <= pos and end <= (d.end_lineno, d.end_col_offset):
            around.append((start, d.name))
    return ".".join(name for _, name in sorted(around)) or None


# A call of the intrinsic needs its name followed by "(" (whitespace, comments and line
# continuations may sit between), or a name imported "as" an alias.  Without either, no call
# can resolve to it: the file has no findings, decided without parsing.  A name followed by
# "(" right after the keyword "def" is a definition's header, never a call.


# ---------------------------------------------------------------- reads of the intrinsic as a value (CPA008)

_TESTS = (ast.If, ast.While, ast.Assert, ast.IfExp)


def _dotted(node) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    parts.append(node.id)
    return ".".join(reversed(parts))


def value_reads(tree: ast.Module, s: Scan, tl: set, tvm: set, path: str = "") -> list:
    """(node, route_rules.Read) of each read of the intrinsic as a value that this pass decides and that
    is a finding, routes as ``route_rules`` names them (the libcst pass's ``checks/value_read.py`` finds the
    same).  ``Undecided`` where libcst must decide: a string lookup (``getattr``, ``__dict__``), a read
    that is the value of an assignment, a walrus or a default, or inside one whose name the file uses.
    A read held by a module-level binding of the intrinsic's own name in a file of TileLang's or TVM's
    package (``ptx_cp_async = _dtype_forward(_tir_op.ptx_cp_async)``: ``route_rules.defines_api``, read at
    ``path``) is the API's own definition: no finding, as libcst decides it."""
    from . import route_rules as rr

    roots = rr.api_roots(tl, tvm)

    parents: dict = {}
    cands = []
    used: dict = {}  # name -> how many Name nodes spell it (any context), strings and global/nonlocal included
    aliases = s.alias_names
    AST = ast.AST
    stack = [tree]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        for field in node._fields:
            v = getattr(node, field, None)
            if type(v) is list:
                for x in v:
                    if isinstance(x, AST):
                        parents[id(x)] = node
                        push(x)
            elif isinstance(v, AST):
                parents[id(v)] = node
                push(v)
        t = type(node)
        if t is ast.Attribute:
            if node.attr == INTRINSIC and type(node.ctx) is ast.Load:
                cands.append(node)
        elif t is ast.Name:
            used[node.id] = used.get(node.id, 0) + 1
            if node.id in aliases and type(node.ctx) is ast.Load:
                cands.append(node)
        elif t is ast.Constant:
            if isinstance(node.value, str):
                used[node.value] = used.get(node.value, 0) + 2
                if node.value == INTRINSIC:
                    cands.append(node)
        elif t is ast.Global or t is ast.Nonlocal:
            for n in node.names:
                used[n] = used.get(n, 0) + 2
    out = []
    for node in cands:
        par = parents.get(id(node))
        if type(node) is ast.Constant:
            if type(par) is ast.Subscript or type(par) is ast.Call and (
                    type(par.func) is ast.Name and par.func.id == "getattr" or
                    type(par.func) is ast.Attribute and par.func.attr == "get"):
                raise Undecided  # a string lookup: libcst reads it (reach.string_route)
            continue  # `__all__`, hasattr, a docstring: no read
        q = qualify(node, s)
        if q is None:
            continue
        mod, _, name = q.rpartition(".")
        if name != INTRINSIC or (mod not in tl and mod not in tvm):
            continue
        api = "tilelang" if mod in tl else "tvm"
        if type(par) is ast.Call and par.func is node:
            continue  # the callee of a call the passes analyse
        if _defines_api(par, node, parents, path, roots):
            continue  # the read is the whole value of the API's own definition
        route = _route(node, par, parents)
        if route is None:
            continue
        callee = ""
        if route[0] == rr.ARGUMENT:
            callee = _callee_name((par if type(par) is ast.Call else parents[id(par)]).func, s)
        # the innermost binding whose value holds the read (libcst follows its uses)
        prev, cur = node, par
        while not isinstance(cur, ast.stmt):
            if type(cur) is ast.NamedExpr or type(cur) is ast.arguments:
                raise Undecided
            prev, cur = cur, parents.get(id(cur))
        if type(cur) is ast.Assign and cur.value is prev and len(cur.targets) == 1 and \
                type(cur.targets[0]) is ast.Name or type(cur) is ast.AnnAssign and cur.value is prev and \
                type(cur.target) is ast.Name:
            target = (cur.targets[0] if type(cur) is ast.Assign else cur.target).id
            if target == INTRINSIC and rr.defines_api(path, _module_level(cur, parents), target, roots):
                continue  # the API's own definition (checks/value_read.py: its carrier)
            if target == INTRINSIC or used.get(target, 0) > 1:
                raise Undecided  # the API's own re-export, or a name the file uses: libcst
        read = rr.Read(api, _dotted(node), route[0], route[1], callee=callee)
        if rr.is_finding(read):
            out.append((node, read))
    return out


def _module_level(stmt, parents) -> bool:
    """The statement binds in the module's scope: no function, class or lambda holds it."""
    cur = parents.get(id(stmt))
    while cur is not None:
        if type(cur) in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda):
            return False
        cur = parents.get(id(cur))
    return True


def _defines_api(par, node, parents, path: str, roots) -> bool:
    """``node`` is the whole value of a one-name (annotated) assignment of the intrinsic's own name that
    ``route_rules.defines_api`` calls the API's own definition (``checks/value_read._whole_value_binding``)."""
    from . import route_rules as rr

    if type(par) is ast.Assign and par.value is node and len(par.targets) == 1 and type(par.targets[0]) is ast.Name:
        target = par.targets[0].id
    elif type(par) is ast.AnnAssign and par.value is node and type(par.target) is ast.Name:
        target = par.target.id
    else:
        return False
    return target == INTRINSIC and rr.defines_api(path, _module_level(par, parents), target, roots)


def _callee_name(func, s: Scan) -> str:
    """The callee's qualified name where ``route_rules.INSPECTORS`` may hold it (a name bound nowhere is the
    builtin); ``Undecided`` where libcst's scopes could answer otherwise (a builtin's name bound somewhere)."""
    if type(func) is ast.Name and func.id not in s.imports and func.id not in s.nested:
        if func.id in s.other:
            from . import route_rules as rr

            if f"builtins.{func.id}" in rr.INSPECTORS:
                raise Undecided
            return ""
        return f"builtins.{func.id}"
    try:
        return qualify(func, s) or ""
    except Undecided:
        if type(func) is ast.Attribute and func.attr in {q.rpartition(".")[2] for q in _inspectors()}:
            raise
        return ""  # not an inspector's name: only membership in INSPECTORS matters


def _inspectors():
    from . import route_rules as rr

    return rr.INSPECTORS


def _route(node, par, parents) -> Optional[tuple]:
    """(route, detail) of a read by its parent, as ``checks/value_read.py`` names it; None when it is only
    tested; ``Undecided`` where the parent is a binding (libcst follows its uses) or the ast loses the
    difference (a tuple subscript: ``x[a, b]`` or ``x[(a, b)]``)."""
    from . import route_rules as rr

    t = type(par)
    if t is ast.Expr or t is ast.Compare or t is ast.UnaryOp and type(par.op) is ast.Not:
        return None
    if t in _TESTS and par.test is node:
        return None
    if t is ast.Assign or t is ast.AnnAssign or t is ast.NamedExpr or t is ast.arguments:
        if getattr(par, "value", None) is node or t is ast.arguments:
            raise Undecided
        return rr.OTHER, ""  # an annotation, a target's index
    if t is ast.Call:
        if node in par.args:
            return rr.ARGUMENT, _dotted(par.func)
        return rr.OTHER, ""
    if t is ast.keyword:
        grand = parents.get(id(par))
        if par.arg is not None and type(grand) is ast.Call:
            return rr.ARGUMENT, _dotted(grand.func)
        return rr.OTHER, ""
    if t is ast.List or t is ast.Tuple or t is ast.Set:
        grand = parents.get(id(par))
        if t is ast.Tuple and type(grand) is ast.Subscript and grand.slice is par:
            raise Undecided
        kind = {ast.List: "list", ast.Tuple: "tuple", ast.Set: "set"}[t]
        if t is not ast.Set and type(grand) is ast.Assign and grand.value is par and \
                any(type(x) in (ast.Tuple, ast.List) for x in grand.targets):
            return rr.UNPACKED, kind
        return rr.ELEMENT, kind
    if t is ast.Dict:
        for k, v in zip(par.keys, par.values):
            if v is node:
                return (rr.DICT_VALUE, "") if k is not None else (rr.OTHER, "")  # `{**x}`: not a value
        return rr.DICT_KEY, ""
    if t is ast.Attribute and par.value is node:
        return rr.ATTRIBUTE, par.attr
    if t is ast.Subscript:
        return (rr.SUBSCRIPTED, "") if par.value is node else (rr.OTHER, "")
    if t is ast.Return:
        return rr.RETURNED, ""
    if t is ast.Yield or t is ast.YieldFrom:
        return rr.YIELDED, ""
    if t is ast.Lambda and par.body is node:
        return rr.LAMBDA_BODY, ""
    return rr.OTHER, ""
