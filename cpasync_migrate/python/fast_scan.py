"""The fast pass's one walk over a stdlib ``ast`` tree: candidate calls, definitions, bindings.

``scan`` collects what the decisions of ``fast.py`` and ``fast_sizes.py`` read; ``qualify``
gives a callee's dotted name through the module's imports (undecided where libcst's scopes
could answer otherwise); ``reaches_by_binding`` says when a call may reach the intrinsic
through an assignment libcst follows.  ``Undecided``: libcst decides the file.
"""
from __future__ import annotations

import ast
import bisect
import os
from typing import Optional

from .calls import INTRINSIC
from .decide.attributes import through

# The scan's own time (environment CPASYNC_MIGRATE_FAST_SCAN_QUICK=0 turns it off): node types with no fields are not
# visited; the scan records the mentions of the intrinsic (``Scan.mentions``), so ``value_reads`` walks only the
# top-level statements that hold one and ``reaches_by_binding`` reads only the assignments whose targets a call can
# reach (the alias chains followed by a search over their edges, not a pass over every assignment per name added);
# off, both walk every node, as before.
QUICK = os.environ.get("CPASYNC_MIGRATE_FAST_SCAN_QUICK", "1") != "0"


class Undecided(Exception):
    """The ast pass cannot answer exactly; libcst decides."""


_TYPE_PARAMS = tuple(getattr(ast, n) for n in ("TypeVar", "ParamSpec", "TypeVarTuple") if hasattr(ast, n))


class Scan:
    """What one walk over a module finds (``scan``)."""

    __slots__ = ("calls", "defs", "imports", "other", "nested", "assigned", "bindings", "scopes",
                 "values", "callee_names", "getattr_intrinsic", "lookup_intrinsic", "alias_names", "loops",
                 "shadows", "memo", "call_parents", "mentions")


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
    subscript or ``.get`` names it in a string (``T.__dict__["ptx_cp_async"]``); ``loops``: every ``for``;
    ``call_parents``: id(call) -> its parent; ``mentions``: the attributes and names ``ptx_cp_async`` and
    the strings equal to it (``value_reads`` and ``reaches_by_binding`` start from them).
    """
    if shadows is None:
        shadows = _default_shadows()
    w = _Walk(tree, shadows)
    w.walk(tree)
    return w.result()


# Node types with no fields (contexts, operators): nothing of theirs is read, and they hold nothing (``QUICK``: not
# visited).
_LEAVES = frozenset(c for c in vars(ast).values() if isinstance(c, type) and issubclass(c, ast.AST) and
                    c is not ast.AST and not c._fields and issubclass(c, (ast.expr_context, ast.boolop, ast.operator,
                                                                          ast.unaryop, ast.cmpop)))


# Fields that never hold a node with fields (``QUICK``: not read): identifiers, strings, numbers, flags, a constant's
# value, contexts and operators; by node type (None: every type's).
_COMMON = frozenset({"id", "attr", "ctx", "arg", "asname", "module", "level", "kind", "type_comment", "conversion",
                     "is_async", "tag", "name", "op", "ops", "simple", "rest", "kwd_attrs"})
_NOT_NODES = {None: _COMMON, ast.Constant: _COMMON | {"value"}, ast.MatchSingleton: _COMMON | {"value"},
              ast.Global: _COMMON | {"names"}, ast.Nonlocal: _COMMON | {"names"}}
_FIELDS: dict = {}  # node type -> the fields the walk reads


class _Walk:
    """One scan's state and its steps, one per kind of node (``_STEPS``)."""

    def __init__(self, tree: ast.Module, shadows: dict):
        self.shadows = shadows
        self.imports: dict[str, list[str]] = {}
        self.other: set[str] = set()
        self.nested: set[str] = set()
        self.assigned: set[str] = set()
        self.bindings: dict[str, list] = {}
        self.alias_names = {INTRINSIC}
        self.calls, self.defs, self.scopes, self.values, self.loops = [], [], [], [], []
        self.callee_names: set[str] = set()
        self.getattr_intrinsic = False
        self.lookup_intrinsic = False
        self.kinds: dict[int, tuple] = {}  # id(node) -> (kind, its def (param) or statement / with item)
        self.top = set(id(s) for s in tree.body)
        self.call_parents: dict = {}  # id(call) -> its parent, for every call
        self.mentions: list = []

    def walk(self, tree: ast.Module) -> None:
        AST, Call, Name, Store = ast.AST, ast.Call, ast.Name, ast.Store
        steps, leaves, quick = _STEPS, (_LEAVES if QUICK else ()), QUICK
        call_parents, mentions, bind = self.call_parents, self.mentions, self.bind
        fields_of = _FIELDS if QUICK else None
        stack = [tree]
        pop, push = stack.pop, stack.append
        while stack:
            node = pop()
            t = type(node)
            if fields_of is None:
                fields = node._fields
            else:
                fields = fields_of.get(t)
                if fields is None:
                    fields = fields_of[t] = tuple(f for f in t._fields if f not in _NOT_NODES.get(t, _NOT_NODES[None]))
            for field in fields:
                v = getattr(node, field, None)
                if isinstance(v, list):
                    for x in v:
                        if isinstance(x, AST):
                            push(x)
                            if type(x) is Call:
                                call_parents[id(x)] = node
                elif isinstance(v, AST):
                    if type(v) in leaves:
                        continue
                    push(v)
                    if type(v) is Call:
                        call_parents[id(v)] = node
            if t is Name:  # (the commonest node: its step inline)
                if node.id == INTRINSIC and quick:
                    mentions.append(node)
                if type(node.ctx) is not ast.Load:
                    kind = self.kinds.get(id(node))
                    if kind is not None and type(node.ctx) is Store:
                        bind(node.id, node, kind[0], kind[1])
                    else:
                        bind(node.id, node, "other" if type(node.ctx) is Store else "uncertain")
                continue
            step = steps.get(t)
            if step is not None:
                step(self, node)

    def bind(self, name, node, kind="other", extra=None):
        self.other.add(name)
        self.bindings.setdefault(name, []).append((kind, node, extra))

    def call(self, node) -> None:
        self.calls.append(node)
        f = node.func
        if type(f) is ast.Name:
            self.callee_names.add(f.id)
            if f.id == "getattr" and any(type(a) is ast.Constant and a.value == INTRINSIC
                                         for a in list(node.args) + [k.value for k in node.keywords]):
                self.getattr_intrinsic = True
        elif type(f) is ast.Attribute and f.attr == "get" and any(type(a) is ast.Constant and a.value == INTRINSIC
                                                                  for a in node.args):
            self.lookup_intrinsic = True  # `T.__dict__.get("ptx_cp_async")`

    def subscript(self, node) -> None:
        if type(node.slice) is ast.Constant and node.slice.value == INTRINSIC:
            self.lookup_intrinsic = True  # `T.__dict__["ptx_cp_async"]`

    def attribute(self, node) -> None:
        if node.attr == INTRINSIC and QUICK:
            self.mentions.append(node)

    def constant(self, node) -> None:
        if QUICK and isinstance(node.value, str) and node.value == INTRINSIC:
            self.mentions.append(node)

    def assign(self, node) -> None:
        names = [x.id for x in node.targets if type(x) is ast.Name]
        self.assigned.update(names)
        self.values.append((names, node.value))
        kinds = self.kinds
        if len(node.targets) == 1 and type(node.targets[0]) is ast.Name:
            kinds[id(node.targets[0])] = ("assign", node)
        elif len(node.targets) > 1:
            for x in node.targets:
                if type(x) is ast.Name:
                    kinds[id(x)] = ("chain", node)  # `a = b = v`: rewrite.declaration_of follows it
        elif len(node.targets) == 1 and type(node.targets[0]) is ast.Tuple:
            for x in node.targets[0].elts:
                if type(x) is ast.Name:
                    kinds[id(x)] = ("tuple", node)  # rewrite.declaration_of unpacks these

    def annassign(self, node) -> None:
        if type(node.target) is ast.Name and node.value is not None:
            self.assigned.add(node.target.id)
            self.values.append(([node.target.id], node.value))
            self.kinds[id(node.target)] = ("annassign", node)

    def withitem(self, node) -> None:
        if type(node.optional_vars) is ast.Name:
            self.kinds[id(node.optional_vars)] = ("with", node)

    def import_(self, node) -> None:
        names = []
        if type(node) is ast.Import:
            for a in node.names:
                if a.asname:  # bound to the last module of the chain, reached attribute by attribute
                    head, *steps = a.name.split(".")
                    names.append((a.asname, through(head, steps, self.shadows)))
                else:
                    head = a.name.split(".")[0]
                    names.append((head, head))
        else:
            for a in node.names:
                if a.name == INTRINSIC and a.asname:
                    self.alias_names.add(a.asname)
            if node.level or node.module is None:
                for a in node.names:
                    self.bind(a.asname or a.name, node)
                return
            for a in node.names:
                if a.name == "*":
                    names.append(("*", node.module))
                    continue
                names.append((a.asname or a.name, through(node.module, (a.name,), self.shadows)))
        for bound, target in names:
            if id(node) in self.top:
                self.imports.setdefault(bound, []).append(target)
            else:
                self.nested.add(bound)
            self.bindings.setdefault(bound, []).append(("other", node, None))

    def function(self, node) -> None:
        self.bind(node.name, node)
        self.defs.append(node)
        self.scopes.append(("def", node))
        a = node.args
        for x in a.posonlyargs + a.args + a.kwonlyargs + [y for y in (a.vararg, a.kwarg) if y is not None]:
            self.kinds[id(x)] = ("param", node)
        positional = a.posonlyargs + a.args
        for x in positional[len(positional) - len(a.defaults):]:
            self.assigned.add(x.arg)  # reach.py follows a default to a module (a route it names)
        for x, d in zip(a.kwonlyargs, a.kw_defaults):
            if d is not None:
                self.assigned.add(x.arg)

    def namedexpr(self, node) -> None:
        if type(node.target) is ast.Name:
            self.assigned.add(node.target.id)

    def class_(self, node) -> None:
        self.bind(node.name, node)
        self.defs.append(node)
        self.scopes.append(("class", node))

    def lambda_(self, node) -> None:
        self.scopes.append(("lambda", node))

    def comprehension(self, node) -> None:
        self.scopes.append(("comp", node))

    def arg(self, node) -> None:
        kind = self.kinds.get(id(node))
        if kind is not None:
            self.bind(node.arg, node, "param", kind[1])
        else:
            self.bind(node.arg, node)

    def scope_words(self, node) -> None:
        for n in node.names:
            self.bind(n, node, "uncertain")

    def handler(self, node) -> None:
        if node.name:
            self.bind(node.name, node)

    def capture(self, node) -> None:
        name = node.rest if type(node) is ast.MatchMapping else node.name
        if name:
            self.bind(name, node, "uncertain")

    def result(self) -> Scan:
        s = Scan()
        s.shadows = self.shadows
        aliases = self.alias_names
        s.calls = [c for c in self.calls if (isinstance(c.func, ast.Attribute) and c.func.attr == INTRINSIC) or (
            isinstance(c.func, ast.Name) and c.func.id in aliases)]
        s.defs, s.imports, s.other, s.nested, s.assigned = self.defs, self.imports, self.other, self.nested, \
            self.assigned
        s.bindings, s.scopes, s.values, s.callee_names = self.bindings, self.scopes, self.values, self.callee_names
        s.getattr_intrinsic, s.alias_names, s.loops = self.getattr_intrinsic, aliases, self.loops
        s.lookup_intrinsic = self.lookup_intrinsic
        s.memo = {}  # what later questions index once per scan (fast_scopes.py)
        s.call_parents = self.call_parents
        s.mentions = self.mentions if QUICK else None
        return s


_STEPS = {ast.Call: _Walk.call, ast.Subscript: _Walk.subscript, ast.Attribute: _Walk.attribute,
          ast.Constant: _Walk.constant, ast.For: lambda w, n: w.loops.append(n), ast.Assign: _Walk.assign,
          ast.AnnAssign: _Walk.annassign, ast.withitem: _Walk.withitem, ast.Import: _Walk.import_,
          ast.ImportFrom: _Walk.import_, ast.FunctionDef: _Walk.function, ast.AsyncFunctionDef: _Walk.function,
          ast.NamedExpr: _Walk.namedexpr, ast.ClassDef: _Walk.class_, ast.Lambda: _Walk.lambda_,
          ast.ListComp: _Walk.comprehension, ast.SetComp: _Walk.comprehension, ast.DictComp: _Walk.comprehension,
          ast.GeneratorExp: _Walk.comprehension, ast.arg: _Walk.arg, ast.Global: _Walk.scope_words,
          ast.Nonlocal: _Walk.scope_words, ast.ExceptHandler: _Walk.handler, ast.MatchAs: _Walk.capture,
          ast.MatchStar: _Walk.capture, ast.MatchMapping: _Walk.capture,
          **{t: (lambda w, n: w.bind(n.name, n, "uncertain")) for t in _TYPE_PARAMS}}


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
    reach = _reaching(s) if QUICK else None
    for targets, value in s.values:
        if reach is not None and reach.isdisjoint(targets):
            continue  # no call reaches these targets: what taints them taints no callee
        direct = False
        for n in ast.walk(value):
            t = type(n)
            if (t is ast.Attribute and n.attr == INTRINSIC) or (t is ast.Name and n.id in names) or (
                    t is ast.Constant and n.value == INTRINSIC):
                direct = True
                break
        alias = value.id if type(value) is ast.Name else None
        mentions.append((targets, direct, alias))
    if QUICK:  # the same least fixed point, by a search over the alias edges: each assignment read once
        by_alias: dict = {}
        todo = []
        for targets, direct, alias in mentions:
            if direct:
                todo.extend(targets)
            elif alias is not None:
                by_alias.setdefault(alias, []).append(targets)
        while todo:
            n = todo.pop()
            if n not in tainted:
                tainted.add(n)
                for targets in by_alias.pop(n, ()):
                    todo.extend(targets)
        return bool(tainted & s.callee_names)
    changed = True  # (a pass over every assignment per name added: quadratic in a chain of aliases)
    while changed:
        changed = False
        for targets, direct, alias in mentions:
            if (direct or alias in tainted) and not set(targets) <= tainted:
                tainted.update(targets)
                changed = True
    return bool(tainted & s.callee_names)


def _reaching(s: Scan) -> set:
    """The names from which a called name is reached through alias assignments (``b = a``: a reaches b): the called
    names, and the value of every alias assignment whose targets hold one of them, to a fixed point.  A taint of
    any other name reaches no called name, so ``reaches_by_binding`` reads only the assignments to these."""
    out = set(s.callee_names)
    aliases = [(targets, value.id) for targets, value in s.values if type(value) is ast.Name]
    if QUICK:  # the same fixed point by a search from the called names (8,000 chained aliases: 22 s before)
        sources: dict = {}
        for targets, source in aliases:
            for t in targets:
                sources.setdefault(t, []).append(source)
        todo = list(out)
        while todo:
            for source in sources.pop(todo.pop(), ()):
                if source not in out:
                    out.add(source)
                    todo.append(source)
        return out
    changed = True
    while changed:
        changed = False
        for targets, source in aliases:
            if source not in out and not out.isdisjoint(targets):
                out.add(source)
                changed = True
    return out


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


def enclosing(defs: list, node, memo: Optional[dict] = None) -> Optional[str]:
    """Dotted names of the function and class definitions around ``node`` (its ancestors in the tree).

    A definition's extent starts at its first decorator; extents of AST nodes nest, so the
    definitions whose extent holds the node's are exactly its ancestors.
    """
    pos, end = (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)
    tree = _nesting(defs, memo) if QUICK and memo is not None else None
    if tree is not None:  # from the last definition starting at or before the node, up its parents
        ext, starts, parents = tree
        i = bisect.bisect_right(starts, pos) - 1
        while i != -1 and not end <= ext[i][1]:
            i = parents[i]
        names = []
        while i != -1:
            names.append(ext[i][2])
            i = parents[i]
        return ".".join(reversed(names)) or None
    around = []
    for start, stop, name in _extents(defs, memo):
        if start <= pos and end <= stop:
            around.append((start, name))
    return ".".join(name for _, name in sorted(around)) or None


def _nesting(defs: list, memo: dict):
    """(extents sorted by start, their starts, the index of each one's parent or -1), computed once per scan (a
    file of thousands of definitions asked once per finding walked every definition each time); None when two
    extents overlap without nesting (not seen in an AST: the caller then looks at each)."""
    if "nesting" not in memo:
        ext = sorted(_extents(defs, memo), key=lambda e: (e[0], (-e[1][0], -e[1][1])))
        parents, stack, ok = [], [], True
        for i, (start, stop, _) in enumerate(ext):
            while stack and ext[stack[-1]][1] <= start:
                stack.pop()
            if stack and stop > ext[stack[-1]][1]:
                ok = False
                break
            parents.append(stack[-1] if stack else -1)
            stack.append(i)
        memo["nesting"] = (ext, [e[0] for e in ext], parents) if ok else None
    return memo["nesting"]


def _extents(defs: list, memo: Optional[dict]) -> list:
    """(start, decorators included; end; name) of each definition (``QUICK``, given the scan's ``memo``: computed
    once per scan)."""
    if QUICK and memo is not None and "extents" in memo:
        return memo["extents"]
    out = [(min([(d.lineno, d.col_offset)] + [(x.lineno, x.col_offset) for x in d.decorator_list]),
            (d.end_lineno, d.end_col_offset), d.name) for d in defs]
    if QUICK and memo is not None:
        memo["extents"] = out
    return out


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
    walk = _Reads(tree, s)
    out = []
    for node in walk.cands:
        read = _read_of(node, walk, s, tl, tvm, path, roots)
        if read is not None:
            out.append((node, read))
    return out


class _Reads:
    """The candidate reads of the intrinsic (attributes and names read, strings equal to it), in the order of one
    walk over the tree, with their parents (``parents``) and the file's uses of each name (``used``).

    ``QUICK`` (where the intrinsic has no alias): only the top-level statements that hold one of the scan's
    mentions are walked, last first, as a walk of the whole tree meets them; every node's parent is the same in
    its statement's walk, every candidate is a mention, and the uses are counted over the whole tree when first
    asked for.  Anywhere a mention is not found in the statements walked, the whole tree is walked."""

    def __init__(self, tree: ast.Module, s: Scan):
        self.tree, self.aliases = tree, s.alias_names
        self.parents: dict = {}
        self.cands: list = []
        self._used: Optional[dict] = None
        if QUICK and s.mentions is not None and self.aliases == {INTRINSIC}:
            starts = [min([(x.lineno, x.col_offset)] + [(d.lineno, d.col_offset)
                                                         for d in getattr(x, "decorator_list", ())])
                      for x in tree.body]
            held = {bisect.bisect_right(starts, (m.lineno, m.col_offset)) - 1 for m in s.mentions}
            for k in sorted((k for k in held if k >= 0), reverse=True):
                self.parents[id(tree.body[k])] = tree
                self._walk(tree.body[k], None)
            if all(id(m) in self.parents for m in s.mentions):
                return
            self.parents, self.cands = {}, []
        self._used = {}
        self._walk(tree, self._used)

    def used(self, name: str) -> int:
        """How many Name nodes spell ``name`` (any context), strings and global/nonlocal names counted twice."""
        if self._used is None:
            self._used = {}
            self._walk(self.tree, self._used, record=False)
        return self._used.get(name, 0)

    def _walk(self, top, used: Optional[dict], record: bool = True) -> None:
        parents, cands, aliases = self.parents, self.cands, self.aliases
        AST = ast.AST
        stack = [top]
        pop, push = stack.pop, stack.append
        while stack:
            node = pop()
            for field in node._fields:
                v = getattr(node, field, None)
                if type(v) is list:
                    for x in v:
                        if isinstance(x, AST):
                            if record:
                                parents[id(x)] = node
                            push(x)
                elif isinstance(v, AST):
                    if record:
                        parents[id(v)] = node
                    push(v)
            t = type(node)
            if t is ast.Attribute:
                if record and node.attr == INTRINSIC and type(node.ctx) is ast.Load:
                    cands.append(node)
            elif t is ast.Name:
                if used is not None:
                    used[node.id] = used.get(node.id, 0) + 1
                if record and node.id in aliases and type(node.ctx) is ast.Load:
                    cands.append(node)
            elif t is ast.Constant:
                if isinstance(node.value, str):
                    if used is not None:
                        used[node.value] = used.get(node.value, 0) + 2
                    if record and node.value == INTRINSIC:
                        cands.append(node)
            elif (t is ast.Global or t is ast.Nonlocal) and used is not None:
                for n in node.names:
                    used[n] = used.get(n, 0) + 2


def _read_of(node, walk: _Reads, s: Scan, tl: set, tvm: set, path: str, roots):
    """The route_rules.Read of one candidate, None where it is no read this pass reports (``value_reads``)."""
    from . import route_rules as rr

    parents = walk.parents
    par = parents.get(id(node))
    if type(node) is ast.Constant:
        if type(par) is ast.Subscript or type(par) is ast.Call and (
                type(par.func) is ast.Name and par.func.id == "getattr" or
                type(par.func) is ast.Attribute and par.func.attr == "get"):
            raise Undecided  # a string lookup: libcst reads it (reach.string_route)
        return None  # `__all__`, hasattr, a docstring: no read
    q = qualify(node, s)
    if q is None:
        return None
    mod, _, name = q.rpartition(".")
    if name != INTRINSIC or (mod not in tl and mod not in tvm):
        return None
    api = "tilelang" if mod in tl else "tvm"
    if type(par) is ast.Call and par.func is node:
        return None  # the callee of a call the passes analyse
    if _defines_api(par, node, parents, path, roots):
        return None  # the read is the whole value of the API's own definition
    route = _route(node, par, parents)
    if route is None:
        return None
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
            return None  # the API's own definition (checks/value_read.py: its carrier)
        if target == INTRINSIC or walk.used(target) > 1:
            raise Undecided  # the API's own re-export, or a name the file uses: libcst
    read = rr.Read(api, _dotted(node), route[0], route[1], callee=callee)
    return read if rr.is_finding(read) else None


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
