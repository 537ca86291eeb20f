"""What a name in a kernel's file reaches: one import, several possible ones, or none.

:class:`NameModel` reads a module's scopes the way Python binds names (module, function, class and
comprehension scopes; ``global`` and ``nonlocal``; a walrus binds in the enclosing function) and
records every binding of every name with its line.  :meth:`NameModel.resolve` answers, for one
name node, where the name's value comes from:

* a :class:`Route` (an import, or a module-level alias ``cp = T.ptx_cp_async`` bound once): a real
  module path and the attribute steps taken from it (``import tilelang.language.tir as X`` is the
  package ``tilelang`` and the steps ``language``, ``tir``; ``from tilelang.language.tir import op``
  is the module ``tilelang.language.tir`` and the step ``op``);
* ``None``: the name is not bound by an import where it is read (a parameter, a local variable);
* a :class:`Problem` naming the name and the lines, when the text allows more than one reading:
  the name bound more than once where one of the bindings is an import (under ``try``/``if``, a
  second import, a rebinding, ``del``, ``global`` in a function), a name only a ``from M import *``
  can bind when there are several of them, a star import after the import that binds it, or the
  module's names rebound by string (``globals()``, ``exec``, ...).

:meth:`NameModel.readings` follows a route's attribute steps through ``rules/namespaces.toml``
``[attributes]`` (an attribute that is not the submodule of that name in some releases) and gives
every dotted path the route can reach.  Which API such a path is, and what that means for a call,
is :mod:`.apis`'s job.  The model reads the syntax tree only; the user's code is never imported.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Optional, Union

WHOLE_FILE = "*"  # a rebinding by string whose name the text does not give: every module name


@dataclass(frozen=True)
class Route:
    """A real module ``base`` (imported by its path) and the attribute steps ``attrs`` taken from it."""

    base: str
    attrs: tuple = ()
    line: int = 0  # the binding's line

    @property
    def path(self) -> str:
        return ".".join((self.base,) + tuple(self.attrs))

    def then(self, *attrs) -> "Route":
        return Route(self.base, tuple(self.attrs) + tuple(attrs), self.line)


@dataclass(frozen=True)
class Problem:
    """A name whose binding the text does not decide (the message names it and the lines)."""

    message: str


@dataclass
class Binding:
    kind: str  # "import", "alias", "star", or how else the name is bound ("assignment", "def", "del", ...)
    line: int
    route: Optional[Route] = None


@dataclass
class _Scope:
    kind: str  # "module" | "function" | "class" | "comprehension"
    parent: Optional["_Scope"]
    bindings: dict = field(default_factory=dict)  # name -> [Binding]
    declared_global: set = field(default_factory=set)
    declared_nonlocal: set = field(default_factory=set)

    def add(self, name: str, b: Binding) -> None:
        self.bindings.setdefault(name, []).append(b)


def import_bindings(node) -> list:
    """``(name, Route or None, line)`` for each name an import statement binds (a relative import's: None)."""
    out = []
    if isinstance(node, ast.Import):
        for a in node.names:
            parts = a.name.split(".")
            if a.asname:
                out.append((a.asname, Route(parts[0], tuple(parts[1:]), node.lineno), node.lineno))
            else:
                out.append((parts[0], Route(parts[0], (), node.lineno), node.lineno))
    elif isinstance(node, ast.ImportFrom):
        for a in node.names:
            if a.name == "*":
                continue
            route = Route(node.module, (a.name,), node.lineno) if node.module and not node.level else None
            out.append((a.asname or a.name, route, node.lineno))
    return out


class NameModel:
    """Every binding of every name of a module, by scope (see the module docstring)."""

    def __init__(self, tree: ast.Module, api_modules=()):
        # modules whose star import binds only their own API names (rules [tilelang] and [tvm]; real TileLang
        # binds no alias such as T there: tests/test_verify_names_realtl.py); any other may rebind any name
        self.api_modules = frozenset(api_modules)
        self.body = tree.body
        self.module = _Scope("module", None)
        self._scope_of: dict = {}  # id(Name node) -> the scope it is read in
        self._pending: list = []  # (scope, name, Binding): placed once global/nonlocal are known
        self.stars: list = []  # (module, line, top): every `from M import *` (top: unguarded, at module level)
        self.rebound: dict = {}  # module name -> where it is rebound by string ("globals()['T'] = ..." at line n)
        # attribute writes (`T.ptx_cp_async = f`, `del T.tir`, `setattr(T, name, f)`): (object node, attribute
        # or None when the text does not give it, line); and writes to the import system (sys.modules, reload)
        self.attr_writes: list = []
        self.import_writes: list = []  # (node, line)
        self._visit_body(tree.body, self.module, top=True)
        self._loose_namespaces(tree)
        for scope, name, b in self._pending:
            self._target(scope, name).add(name, b)
        self._aliases: dict = {}  # module-level `name = <dotted name>`: name -> the value's node
        for st in tree.body:
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) and \
                    isinstance(st.value, (ast.Name, ast.Attribute)):
                self._aliases[st.targets[0].id] = st.value
        self._resolving: set = set()

    # ------------------------------------------------------------------ reading the scopes
    def _target(self, scope: _Scope, name: str) -> _Scope:
        if name in scope.declared_global:
            return self.module
        if name in scope.declared_nonlocal:
            s = scope.parent
            while s is not None and not (s.kind == "function" and name in s.bindings):
                s = s.parent
            return s or self.module
        return scope

    def _bind(self, scope: _Scope, name: str, kind: str, line: int, route: Optional[Route] = None) -> None:
        self._pending.append((scope, name, Binding(kind, line, route)))

    def _visit_body(self, body, scope: _Scope, top: bool = False) -> None:
        for st in body:
            self._visit(st, scope, top)

    def _visit(self, node, scope: _Scope, top: bool = False) -> None:
        line = getattr(node, "lineno", 0)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in node.decorator_list:
                self._visit(d, scope)
            self._visit_args_outside(node.args, scope)
            if node.returns is not None:
                self._visit(node.returns, scope)
            self._bind(scope, node.name, "def", line)
            inner = _Scope("function", scope)
            self._declare(node.body, inner)
            self._bind_args(node.args, inner, line)
            self._visit_body(node.body, inner)
            return
        if isinstance(node, ast.Lambda):
            self._visit_args_outside(node.args, scope)
            inner = _Scope("function", scope)
            self._bind_args(node.args, inner, line)
            self._visit(node.body, inner)
            return
        if isinstance(node, ast.ClassDef):
            for d in node.decorator_list + node.bases + [k.value for k in node.keywords]:
                self._visit(d, scope)
            self._bind(scope, node.name, "class", line)
            inner = _Scope("class", scope)
            self._declare(node.body, inner)
            self._visit_body(node.body, inner)
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            inner = _Scope("comprehension", scope)
            for i, g in enumerate(node.generators):
                self._visit(g.iter, scope if i == 0 else inner)
                self._visit(g.target, inner)
                for c in g.ifs:
                    self._visit(c, inner)
            for part in ((node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,)):
                self._visit(part, inner)
            return
        if isinstance(node, ast.NamedExpr):
            s = scope
            while s.kind == "comprehension":
                s = s.parent
            self._bind(s, node.target.id, "walrus (:=)", line)
            self._visit(node.value, scope)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for name, route, ln in import_bindings(node):
                self._bind(scope, name, "import" if route is not None else "relative import", ln, route)
            if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
                self.stars.append((node.module if not node.level else None, line, top and scope is self.module))
            return
        if isinstance(node, ast.Name):
            self._scope_of[id(node)] = scope
            if isinstance(node.ctx, ast.Store):
                self._bind(scope, node.id, "assignment", line)
            elif isinstance(node.ctx, ast.Del):
                self._bind(scope, node.id, "del", line)
            return
        if isinstance(node, ast.ExceptHandler) and node.name:
            self._bind(scope, node.name, "except ... as", line)
        if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            self._bind(scope, node.name, "match capture", line)
        if isinstance(node, ast.MatchMapping) and node.rest:
            self._bind(scope, node.rest, "match capture", line)
        self._record_writes(node, line)
        for child in ast.iter_child_nodes(node):
            # an `if`/`try`/loop body is a guard: a star import there is not known to run
            self._visit(child, scope, top and isinstance(node, ast.Module))

    def _record_writes(self, node, line: int) -> None:
        """Writes that can change what a name or an import is: by string, by attribute, to sys.modules."""
        if isinstance(node, ast.Call):
            self._rebinding_by_string(node)
            f = node.func
            if isinstance(f, ast.Name) and f.id in ("setattr", "delattr") and node.args:
                key = node.args[1] if len(node.args) > 1 else None
                name = key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None
                self.attr_writes.append((node.args[0], name, line))
            elif isinstance(f, ast.Attribute) and f.attr in ("update", "setdefault", "pop", "__setitem__",
                                                              "__delitem__", "clear", "popitem"):
                self.import_writes.append((f.value, line))
            elif isinstance(f, (ast.Name, ast.Attribute)) and \
                    (f.id if isinstance(f, ast.Name) else f.attr) in ("reload", "__import__", "import_module"):
                self.import_writes.append((f, line))
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
            self.attr_writes.append((node.value, node.attr, line))
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)):
            self.import_writes.append((node.value, line))
        if isinstance(node, ast.Assign) or isinstance(node, ast.Delete):
            for t in (node.targets if isinstance(node, (ast.Assign, ast.Delete)) else []):
                if isinstance(t, ast.Subscript) and _is_call_of(t.value, ("globals", "vars")):
                    key = t.slice
                    name = key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else WHOLE_FILE
                    self.rebound.setdefault(name, f"{ast.unparse(t)[:40]} at line {line}")

    def _loose_namespaces(self, tree) -> None:
        """``globals()``/``vars()`` used other than indexed or through one of its methods (``g = globals()``,
        ``f(vars())``): whatever holds it can rebind any module name by string."""
        held = set()
        for n in ast.walk(tree):
            if isinstance(n, (ast.Subscript, ast.Attribute)) and _is_call_of(n.value, ("globals", "vars")):
                held.add(id(n.value))
        for n in ast.walk(tree):
            if _is_call_of(n, ("globals", "vars")) and id(n) not in held:
                self.rebound.setdefault(WHOLE_FILE, f"{n.func.id}() at line {n.lineno}")
                return

    def _rebinding_by_string(self, call: ast.Call) -> None:
        """``exec``/``eval`` of text (a constant one: the names it binds), ``globals()``/``vars()`` used
        other than by a constant key: the module's names can be rebound by string."""
        f = call.func
        if not isinstance(f, ast.Name):
            if isinstance(f, ast.Attribute) and _is_call_of(f.value, ("globals", "vars")) and \
                    f.attr in ("update", "setdefault", "pop", "__setitem__", "clear", "popitem"):
                self.rebound.setdefault(WHOLE_FILE, f"{ast.unparse(call)[:40]} at line {call.lineno}")
            return
        if f.id in ("exec", "eval"):
            arg = call.args[0] if call.args else None
            where = f"{f.id}() at line {call.lineno}"
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                try:
                    inner = NameModel(ast.parse(arg.value))
                except SyntaxError:
                    self.rebound.setdefault(WHOLE_FILE, where)
                    return
                for n in inner.module.bindings:
                    self.rebound.setdefault(n, where)
                if inner.stars or inner.rebound:
                    self.rebound.setdefault(WHOLE_FILE, where)
            else:
                self.rebound.setdefault(WHOLE_FILE, where)

    def _declare(self, body, scope: _Scope) -> None:
        """The ``global``/``nonlocal`` names of a function or class body (not of the scopes inside it)."""
        todo = list(body)
        while todo:
            n = todo.pop()
            if isinstance(n, ast.Global):
                scope.declared_global.update(n.names)
                for name in n.names:  # the function can rebind the module's name: that is a binding
                    self._bind(scope, name, f"global in a function (line {n.lineno})", n.lineno)
            elif isinstance(n, ast.Nonlocal):
                scope.declared_nonlocal.update(n.names)
            elif not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                todo.extend(ast.iter_child_nodes(n))

    def _visit_args_outside(self, args: ast.arguments, scope: _Scope) -> None:
        """Defaults and annotations are evaluated where the function is defined."""
        for d in args.defaults + [d for d in args.kw_defaults if d is not None]:
            self._visit(d, scope)
        for a in args.posonlyargs + args.args + args.kwonlyargs + [x for x in (args.vararg, args.kwarg) if x]:
            if a.annotation is not None:
                self._visit(a.annotation, scope)

    def _bind_args(self, args: ast.arguments, scope: _Scope, line: int) -> None:
        for a in args.posonlyargs + args.args + args.kwonlyargs + [x for x in (args.vararg, args.kwarg) if x]:
            self._bind(scope, a.arg, "parameter", getattr(a, "lineno", line))

    # ------------------------------------------------------------------ answers
    def local_root(self, node) -> bool:
        """Whether the object an attribute write ``node.x = ...`` (or ``setattr(node, ...)``) changes is reached
        from a name local to a function (a parameter or a local variable, ``self`` of a method); a module-level
        name, a builtin or a computed object (``getattr(T, "tir")``, ``f()``) is not."""
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        if not isinstance(node, ast.Name):
            return False
        s = self._scope_of.get(id(node))
        while s is not None and s.kind != "module":
            if node.id in s.declared_global:
                return False
            if s.kind != "class" and node.id in s.bindings:
                return True
            s = s.parent
        return False

    def bindings_where_defined(self, fn: ast.FunctionDef) -> list:
        """Every binding of ``fn``'s name in the scope its ``def`` runs in (the ``def`` itself included)."""
        for d in fn.decorator_list:
            while isinstance(d, (ast.Attribute, ast.Call, ast.Subscript)):
                d = d.func if isinstance(d, ast.Call) else d.value
            if isinstance(d, ast.Name) and id(d) in self._scope_of:
                return self._target(self._scope_of[id(d)], fn.name).bindings.get(fn.name, [])
        return self.module.bindings.get(fn.name, [])

    def resolve(self, node: ast.Name) -> Union[Route, Problem, None]:
        """Where the value of the name read at ``node`` comes from (see the module docstring)."""
        scope = self._scope_of.get(id(node), self.module)
        name = node.id
        s = scope
        while s is not None:
            if name in s.declared_global and s is not self.module:
                s = self.module
                continue
            if name in s.bindings and (s is scope or s.kind != "class"):
                return self._of(name, s)
            s = s.parent
        return self._unbound(name)

    def _of(self, name: str, scope: _Scope):
        bs = scope.bindings[name]
        r = self._binding(name, scope, bs)
        if scope is self.module and isinstance(r, Route):
            first = min(b.line for b in bs)
            rebound = self.rebound.get(name) or self.rebound.get(WHOLE_FILE)
            if rebound:
                return Problem(f"{name!r} in the module is bound at line {first} and can be rebound by string "
                               f"({rebound}): which module it is is not known from the text")
            late = [(m, ln) for m, ln, _ in self.stars if ln > first and m not in self.api_modules]
            if late:
                m, ln = late[0]
                return Problem(f"{name!r} in the module is bound at line {first}; `from {m or '.'} import *` at "
                               f"line {ln} can rebind it: which module it is is not known from the text")
        return r

    def _binding(self, name: str, scope: _Scope, bs: list):
        where = f"{name!r} in {'the module' if scope is self.module else 'its function'}"
        routes = [b for b in bs if b.kind == "import"]
        if len(bs) == 1 and routes:
            return routes[0].route
        if routes and all(b.kind == "import" for b in bs) and len({(b.route.base, b.route.attrs) for b in routes}) == 1:
            return routes[0].route  # the same import twice
        if not routes:
            if len(bs) == 1 and scope is self.module and bs[0].kind == "assignment":
                return self._alias(name)
            return None
        shown = "; ".join(f"line {b.line}: {_describe(b)}" for b in sorted(bs, key=lambda b: b.line))
        return Problem(f"{where} is bound {len(bs)} times ({shown}): which binding a call reaches depends on "
                       "the order the text runs in, so it is not known from the text")

    def _alias(self, name: str):
        """A module-level ``name = <dotted name>`` bound once: the route of its value."""
        value = self._aliases.get(name)
        if value is None or name in self._resolving:
            return None
        self._resolving.add(name)
        try:
            return self.route_of(value)
        finally:
            self._resolving.discard(name)

    def _unbound(self, name: str):
        """A name no statement binds: only a star import can give it a value."""
        stars = [(m, ln, top) for m, ln, top in self.stars]
        if not stars:
            return None
        rebound = self.rebound.get(name) or self.rebound.get(WHOLE_FILE)
        if len(stars) == 1 and stars[0][2] and stars[0][0] and not rebound:
            return Route(stars[0][0], (name,), stars[0][1])
        shown = ", ".join(f"`from {m or '.'} import *` at line {ln}" + ("" if top else " (under a guard)")
                          for m, ln, top in stars)
        return Problem(f"{name!r} is bound by no statement of the text; only {shown} can bind it"
                       + (f" (and {rebound})" if rebound else "") + ": which module it comes from is not known")

    def route_of(self, node) -> Union[Route, Problem, None]:
        """The route of a dotted name expression (``T.tir.ptx_cp_async``), or the first problem on it."""
        attrs = []
        while isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        r = self.resolve(node)
        if isinstance(r, Route):
            return r.then(*reversed(attrs))
        return r


def readings(route: Route, shadows: dict) -> list:
    """Every dotted path ``route`` reaches: an attribute step onto a path ``shadows`` (rules
    ``[attributes]``) names is that module in some releases and the submodule in others."""
    paths = [route.base]
    for a in route.attrs:
        nxt = []
        for p in paths:
            q = f"{p}.{a}"
            nxt.append(q)
            if q in shadows:
                nxt.append(shadows[q])
        paths = nxt
    return sorted(set(paths))


def _describe(b: Binding) -> str:
    if b.kind == "import" and b.route is not None:
        return f"import of {b.route.path}"
    return b.kind


def _is_call_of(node, names) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names
