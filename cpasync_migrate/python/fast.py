"""The Python front end's first pass: a cheap, exact pass with the standard library's
``ast`` (several times faster than libcst, and libcst is not even imported):

* a file in which no call can resolve to ``ptx_cp_async`` has no findings;
* a file whose every candidate call resolves, unambiguously, to TVM's own
  wrapper (module-level imports only, the name never rebound) and has a
  non-access-pointer shape gets its CPA003 findings from this pass, exactly
  as the libcst pass would report them (same positions, code, message);
* a call of TileLang's (or TVM's) intrinsic in the access-pointer shape (an
  already-migrated call) is decided here too when no ``--from`` asks for a
  conversion: no finding, CPA004 (it still passes ``dtype=``) or the CPA005
  size warning, exactly as ``rewrite.py`` gives them; where the warning hangs
  on a pointer type the text does not show simply (a buffer bound more than
  once, a dtype spelled in a way this pass does not read), libcst decides;
* anything else goes to the libcst pass in ``rewrite.py``: a legacy call of
  TileLang's intrinsic (it needs a rewrite), a module-level definition of the
  intrinsic or a runtime helper (``_defines``) that ``definitions_ast.py`` does
  not decide (a decorated one, say), a name bound by assignment to
  something that mentions the intrinsic and then called (``cp =
  T.ptx_cp_async``), ``getattr(..., "ptx_cp_async")``, a star import of
  TileLang's or TVM's namespace (it binds the bare names ``reach.py`` follows;
  other star imports bind nothing libcst's scopes or ``reach.py`` read), and a
  callee whose root name is bound by assignment (``L2 = T``).

``DECIDE_NEW_FORM`` (environment ``CPASYNC_MIGRATE_FAST_NEW_FORM=0`` turns it off)
switches the access-pointer decisions; off, such files go to libcst as before.
``DECIDE_DEFINITIONS`` (``CPASYNC_MIGRATE_FAST_DEFINITIONS=0``) switches the
definitions of ``definitions_ast.py`` (a fork's ``op.py``, a CuTeDSL runtime
module): on, a file whose sites are those definitions and calls this pass
decides never reaches libcst; off, it goes to libcst as before.

Every finding of the libcst pass is a call whose callee is spelled
``<expr>.ptx_cp_async``, ``ptx_cp_async`` or a name imported as
``ptx_cp_async``; the filter keeps every file that has such a call.
"""
from __future__ import annotations

import ast
import os
import re
from typing import Optional

from ..findings import Analysis, Finding, FrontEndOptions, Status
from .calls import DTYPE_KW_MESSAGE, INTRINSIC, SUPPRESS_RE, TVM_MESSAGE, call_shape

DECIDE_NEW_FORM = os.environ.get("CPASYNC_MIGRATE_FAST_NEW_FORM", "1") != "0"
DECIDE_DEFINITIONS = os.environ.get("CPASYNC_MIGRATE_FAST_DEFINITIONS", "1") != "0"


class _Undecided(Exception):
    """The ast pass cannot answer exactly; libcst decides."""


_TYPE_PARAMS = tuple(getattr(ast, n) for n in ("TypeVar", "ParamSpec", "TypeVarTuple") if hasattr(ast, n))


class _Scan:
    """What one walk over a module finds (``_scan``)."""

    __slots__ = ("calls", "defs", "imports", "other", "nested", "assigned", "bindings", "scopes",
                 "values", "callee_names", "getattr_intrinsic", "alias_names")


# Binding kinds a buffer or dtype lookup can use (rewrite.py's declaration_of / dtype_of_expr):
# "param" (a def's parameter), "assign" (the sole target of a one-target assignment), "annassign"
# (the target of an annotated assignment with a value), "with" (``with ... as NAME``); anything
# else binding the name is "other", or "uncertain" where libcst's scopes record it otherwise than
# Python binds it (``del``, match captures, ``global``/``nonlocal``, type parameters).
_DECL_KINDS = ("param", "assign", "annassign", "with", "tuple")


def _scan(tree: ast.Module) -> _Scan:
    """One walk over the tree: the candidate calls, the definitions, and the bindings.

    ``calls``: calls whose callee is ``<expr>.ptx_cp_async`` or a name ``ptx_cp_async`` is bound
    to by ``from ... import ptx_cp_async as NAME``; ``defs``: function and class definitions;
    ``imports``: module-level import bindings; ``other``: every name bound anywhere else;
    ``nested``: names bound by imports below module level; ``assigned``: names that are a direct
    target of an assignment (libcst follows those); ``bindings``: name -> [(kind, node, extra)]
    for every binding occurrence (extra: the def of a parameter, the statement or with item of
    the other ``_DECL_KINDS``); ``scopes``: (kind, node) of every function, class, lambda and
    comprehension; ``values``: (target names, value) of every assignment; ``callee_names``: names
    called; ``getattr_intrinsic``: a ``getattr(..., "ptx_cp_async")`` occurs.
    """
    imports: dict[str, list[str]] = {}
    other: set[str] = set()
    nested: set[str] = set()
    assigned: set[str] = set()
    bindings: dict[str, list] = {}
    alias_names = {INTRINSIC}
    calls, defs, scopes, values = [], [], [], []
    callee_names: set[str] = set()
    getattr_intrinsic = False
    kinds: dict[int, tuple] = {}  # id(node) -> (kind, its def (param) or statement / with item)
    top = set(id(s) for s in tree.body)
    AST, Call, Attribute, Name, Store, Del = ast.AST, ast.Call, ast.Attribute, ast.Name, ast.Store, ast.Del
    Import, ImportFrom = ast.Import, ast.ImportFrom
    FuncDefs = (ast.FunctionDef, ast.AsyncFunctionDef)
    Comps = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)

    def bind(name, node, kind="other", extra=None):
        other.add(name)
        bindings.setdefault(name, []).append((kind, node, extra))

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
            elif isinstance(v, AST):
                push(v)
        t = type(node)
        if t is Call:
            calls.append(node)
            f = node.func
            if type(f) is Name:
                callee_names.add(f.id)
                if f.id == "getattr" and any(type(a) is ast.Constant and a.value == INTRINSIC
                                             for a in list(node.args) + [k.value for k in node.keywords]):
                    getattr_intrinsic = True
        elif t is Name:
            if isinstance(node.ctx, (Store, Del)):
                kind = kinds.get(id(node))
                if kind is not None and isinstance(node.ctx, Store):
                    bind(node.id, node, kind[0], kind[1])
                else:
                    bind(node.id, node, "other" if isinstance(node.ctx, Store) else "uncertain")
        elif t is Attribute:
            pass
        elif t is ast.Assign:
            names = [x.id for x in node.targets if type(x) is Name]
            assigned.update(names)
            values.append((names, node.value))
            if len(node.targets) == 1 and type(node.targets[0]) is Name:
                kinds[id(node.targets[0])] = ("assign", node)
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
                    if a.asname:
                        names.append((a.asname, a.name))
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
                    names.append((a.asname or a.name, f"{node.module}.{a.name}"))
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
    s = _Scan()
    s.calls = [c for c in calls if (isinstance(c.func, Attribute) and c.func.attr == INTRINSIC) or (
        isinstance(c.func, Name) and c.func.id in alias_names)]
    s.defs, s.imports, s.other, s.nested, s.assigned = defs, imports, other, nested, assigned
    s.bindings, s.scopes, s.values, s.callee_names = bindings, scopes, values, callee_names
    s.getattr_intrinsic, s.alias_names = getattr_intrinsic, alias_names
    return s


def _reaches_by_binding(s: _Scan) -> bool:
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


def _used_as_value(tree: ast.Module) -> bool:
    """The intrinsic's name is read other than as a callee or an import: an attribute or name in a
    value position, or the string of a ``getattr`` (the rule before ``_reaches_by_binding``; kept for
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


def _qualify(func: ast.expr, s: _Scan) -> Optional[str]:
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
        raise _Undecided
    root = cur.id
    if root not in imports and root not in nested:
        if root in s.assigned:
            raise _Undecided
        return None
    if root in other or root in nested or len(set(imports[root])) != 1:
        raise _Undecided
    return ".".join([imports[root][0]] + list(reversed(parts)))


def _enclosing(defs: list, node) -> Optional[str]:
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
_CALL_TEXT = re.compile(r"ptx_cp_async(?:\s|\\|#[^\n]*)*\(|ptx_cp_async(?:\s|\\)+as(?:\s|\\)")
_DEF_BEFORE = re.compile(r"(?:^|[^\w.])def(?:\s|\\)+$")


# The intrinsic used as a value (``cp = T.ptx_cp_async``, ``getattr(T, "ptx_cp_async")``, a bare name
# bound by an import): a call through that binding can reach it.
_VALUE_TEXT = re.compile(r"""(?<![\w'"])ptx_cp_async(?!\w|\s*\(|['"])|['"]ptx_cp_async['"]""")


def may_call(text: str) -> bool:
    if _VALUE_TEXT.search(text):
        return True
    for m in _CALL_TEXT.finditer(text):
        if m.group().endswith("(") and _DEF_BEFORE.search(text, max(0, m.start() - 64), m.start()):
            continue
        return True
    return False


def _defines(tree: ast.Module, options: FrontEndOptions) -> bool:
    """A module-level def that definitions.py reports: the intrinsic with the legacy parameters, or a
    runtime helper with two offset parameters (libcst decides those files)."""
    helpers = options.rules.python_api.get("helpers", {})
    names = set(helpers.get("names", []))
    offset = re.compile(helpers.get("offset_param", "_offset$"))
    legacy = list(options.rules.legacy.python_params)
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = [a.arg for a in node.args.args]
        if node.name == INTRINSIC and params == legacy:
            return True
        if node.name in names and sum(1 for p in params if offset.search(p)) >= 2:
            return True
    return False


class _NoFix(Exception):
    """What ``rewrite.NoFix`` is there: the pointer type cannot be read, so no size warning."""


_SIMPLE_STR = re.compile(r"""[uU]?(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')\Z""")


class _NewForm:
    """CPA004 / CPA005 for a call in the access-pointer shape, as ``rewrite._Context.visit_call`` gives them.

    Mirrors ``new_form_parts``, ``access_pointer_dtype``, ``declaration_of``, ``decl_dtype_expr``,
    ``dtype_of_expr`` and ``size_warning`` on the stdlib tree.  Names are looked up only where the
    text decides them here: a name bound once in the file whose scope is the module or a function
    around the lookup; anything else that could change the answer raises ``_Undecided``.
    """

    def __init__(self, s: _Scan, lines: list[str], options: FrontEndOptions):
        self.s = s
        self.lines = lines
        self.rules = options.rules
        self.target = options.target
        self.mods = set(self.rules.tilelang_modules) | set(self.rules.tvm_modules)

    # ------------------------------------------------------------ positions and scopes

    @staticmethod
    def _pos(node):
        return (node.lineno, node.col_offset)

    def _innermost(self, node):
        """The scope a binding belongs to: ('module', None) or ('def', F); undecided for any other scope."""
        p, e = self._pos(node), (node.end_lineno, node.end_col_offset)
        best = None
        for kind, sc in self.s.scopes:
            if sc is node:
                continue
            if kind == "def":
                start, end = self._pos(sc.body[0]), (sc.body[-1].end_lineno, sc.body[-1].end_col_offset)
            else:
                start, end = self._pos(sc), (sc.end_lineno, sc.end_col_offset)
            if start <= p and e <= end and (best is None or start >= best[0]):
                best = (start, kind, sc)
        if best is None:
            return None
        if best[1] != "def":
            raise _Undecided  # a class body, lambda or comprehension binds it
        return best[2]

    def _visible(self, name: str, at) -> list:
        """The bindings of ``name`` that a lookup at ``at`` sees, as libcst's scopes give them.

        Python's rule: the innermost function around ``at`` (or the module) that binds the name
        holds every binding the lookup sees.  Undecided where a binding is not in a function or
        the module, is one libcst records otherwise, or ``at`` is in the signature or decorators
        of a function that binds the name.
        """
        bs = self.s.bindings.get(name, [])
        if not bs:
            return []
        placed = []
        for b in bs:
            kind, node, extra = b
            if kind == "uncertain":
                raise _Undecided
            if kind == "param":
                placed.append((extra, b))
            else:
                where = extra if kind in ("assign", "annassign", "tuple") else \
                    extra.context_expr if kind == "with" else node
                placed.append((self._innermost(where), b))
        p = self._pos(at)
        chain = []
        for kind, sc in self.s.scopes:
            if kind != "def":
                continue
            if self._pos(sc.body[0]) <= p <= (sc.body[-1].end_lineno, sc.body[-1].end_col_offset):
                chain.append(sc)
            elif min([self._pos(sc)] + [self._pos(d) for d in sc.decorator_list]) <= p <= \
                    (sc.end_lineno, sc.end_col_offset) and any(f is sc for f, _ in placed):
                raise _Undecided  # which scope libcst reads a signature in is not this pass's to say
        chain.sort(key=lambda f: self._pos(f.body[0]), reverse=True)
        for f in chain + [None]:
            seen = [b for g, b in placed if g is f]
            if seen:
                return seen
        return []

    # ------------------------------------------------------------ names and text

    def _qname_parts(self, func):
        """(module, name) of what ``func`` names through imports; None when its root is no import."""
        q = _qualify(func, self.s)
        if q is None:
            return None
        mod, _, name = q.rpartition(".")
        return mod, name

    def _segment(self, node) -> str:
        if node.lineno != node.end_lineno:
            raise _Undecided
        b = self.lines[node.lineno - 1].encode("utf-8")
        return b[node.col_offset:node.end_col_offset].decode("utf-8", "replace")

    @staticmethod
    def _positional(call: ast.Call):
        if call.keywords or any(type(a) is ast.Starred for a in call.args):
            raise _Undecided  # libcst's argument list mixes them in source order
        return call.args

    # ------------------------------------------------------------ dtypes

    def dtype_of_expr(self, expr, at, depth: int = 0):
        """(name, size) as ``dtype_of_expr`` resolves it; size None when unknown."""
        if type(expr) is ast.Constant and isinstance(expr.value, (str, bytes)):
            if not _SIMPLE_STR.match(self._segment(expr)):
                raise _Undecided  # implicit concatenation, prefixes, triple quotes: libcst reads those otherwise
            if not isinstance(expr.value, str):
                raise _NoFix
            name = self.rules.canonical_dtype(expr.value)
            size = self.rules.dtype_size(name)
            if size is None:
                raise _NoFix
            return name, size
        if type(expr) is ast.Attribute:
            q = self._qname_parts(expr)
            if q is not None and q[0] in self.mods and self.rules.dtype_size(expr.attr) is not None:
                name = self.rules.canonical_dtype(expr.attr)
                return name, self.rules.dtype_size(name)
            raise _NoFix
        if type(expr) is ast.Name and depth < 4:
            bs = self.s.bindings.get(expr.id, [])
            if not any(k == "assign" for k, _, _ in bs):
                return None, None  # a parameter, a loop variable, unbound: the type is not known from the text
            seen = self._visible(expr.id, at)
            if len(seen) != 1 or seen[0][0] != "assign":
                return None, None
            return self.dtype_of_expr(seen[0][2].value, seen[0][2], depth + 1)
        raise _NoFix

    def decl_of(self, name: str, at):
        """(context node, declaration expression) as ``declaration_of`` finds it; None when none."""
        seen = self._visible(name, at)
        if len(seen) != 1:
            return None
        kind, node, extra = seen[0]
        if kind == "param":
            return (node, node.annotation) if node.annotation is not None else None
        if kind == "tuple" or (kind == "assign" and type(extra.value) is ast.Name):
            raise _Undecided  # unpacking and aliases: rewrite.declaration_of follows them
        if kind in ("assign", "annassign"):
            return extra, extra.value
        if kind == "with":
            return extra.context_expr, extra.context_expr
        return None

    def decl_dtype(self, decl):
        """The dtype expression of a declaration (None: the API default), as ``decl_dtype_expr``."""
        if type(decl) is ast.Subscript:
            raise _Undecided  # T.Buffer[...]: libcst's slice elements are not ast's
        if type(decl) is not ast.Call:
            raise _NoFix
        q = self._qname_parts(decl.func)
        if q is None or q[1] not in self.rules.declarations or q[0] not in self.mods:
            raise _NoFix  # (a bare name only a star import binds: star imports went to libcst before)
        spec = self.rules.declarations[q[1]]
        if any(type(a) is ast.Starred for a in decl.args) or any(k.arg is None for k in decl.keywords):
            raise _NoFix
        for k in decl.keywords:
            if k.arg == spec["keyword"]:
                return k.value
        if len(decl.args) > spec["position"]:
            return decl.args[spec["position"]]
        return None

    def pointer_dtype(self, expr, call):
        """(name, size) of a new-form argument, as ``access_pointer_dtype``."""
        if type(expr) is not ast.Call:
            raise _NoFix
        q = self._qname_parts(expr.func)
        names = {q[1]} if q is not None and q[0] in self.mods else set()
        g = self.target
        args = self._positional(expr) if names & {g.access_ptr, g.buffer_access_ptr} else []
        if g.access_ptr in names and args:
            ta = args[0]
            if type(ta) is ast.Call and self._positional(ta):
                tq = self._qname_parts(ta.func)
                if tq is None:
                    raise _Undecided  # libcst's qualified names of an unimported root are its own
                if tq[1] == g.type_annotation:
                    return self.dtype_of_expr(ta.args[0], call)
            raise _NoFix
        if g.buffer_access_ptr and g.buffer_access_ptr in names and args:
            sub = args[0]
            if type(sub) is ast.Subscript and type(sub.value) is ast.Name:
                found = self.decl_of(sub.value.id, call)
                if found is not None:
                    dexpr = self.decl_dtype(found[1])
                    if dexpr is not None:
                        return self.dtype_of_expr(dexpr, found[0])
            raise _NoFix
        raise _NoFix

    # ------------------------------------------------------------ the call

    def size_warning(self, call: ast.Call) -> Optional[str]:
        rules, g = self.rules, self.target
        pos = call.args
        names_size = {gen.python_params[2] for gen in rules.generations[1:]}
        if len(pos) < 2:
            return None
        if len(pos) > 2:
            size = pos[2]
        else:
            named = [k.value for k in call.keywords if k.arg in names_size]
            if len(named) > 1:
                raise _Undecided
            if not named:
                return None
            size = named[0]
        if type(size) is not ast.Constant or type(size.value) is not int:
            return None  # not an integer literal: no warning whatever the pointers are
        value = size.value
        if g.size_meaning != "num_elems" and value in g.widths and \
                all(value % k == 0 for k in set(rules.dtype_sizes.values())):
            return None  # a width every element size divides: no warning whatever the pointers are
        try:
            dst = self.pointer_dtype(pos[0], call)
            src = self.pointer_dtype(pos[1], call)
        except _NoFix:
            return None
        if dst[1] is None or src[1] is None:
            return None
        (dname, dsize), (sname, ssize) = dst, src
        widths = "/".join(map(str, g.widths))
        if g.size_meaning == "num_elems":
            if dsize != ssize:
                return (f"the pointer types {dname} and {sname} differ in width; {g.name} derives the copy "
                        f"width from each side and needs them equal")
            if value * dsize not in g.widths:
                hint = ""
                if value in g.widths and value % dsize == 0:
                    hint = (f"; if it was written for 0.1.8 with a byte count, run with --from 0.1.8 to convert it "
                            f"to {value // dsize} elements")
                return (f"size {value} means {value} {dname} elements = {value * dsize} bytes under {g.name}, "
                        f"not a cp.async width ({widths}){hint}")
            return None
        for name, k in ((dname, dsize), (sname, ssize)):
            if value % k:
                return f"size {value} bytes is not a whole number of {name} elements of its access pointer"
        if value not in g.widths:
            return f"size {value} bytes is not a cp.async width ({widths}) under {g.name}"
        return None


def findings(text: str, path: str, options: FrontEndOptions) -> Optional[Analysis]:
    """Findings from the ast pass, or None when libcst must decide."""
    return decide(text, path, options)[0]


def decide(text: str, path: str, options: FrontEndOptions):
    """(findings or None, why libcst decides or what decided it): ``findings`` with its reason, for the benchmark."""
    names = [INTRINSIC, *options.rules.python_api.get("helpers", {}).get("names", [])]
    may_define = re.search(r"\bdef\s+(?:%s)\b" % "|".join(map(re.escape, names)), text) is not None
    if not may_define and not may_call(text):
        return Analysis([]), "text"
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None, "syntax"
    defined = []
    s = None
    if _defines(tree, options):
        if not DECIDE_DEFINITIONS:
            return None, "definition"
        from . import definitions_ast

        s = _scan(tree)
        try:
            defined = definitions_ast.find(tree, text, path, options, INTRINSIC, lambda e: _qualify(e, s))
        except (definitions_ast.Undecided, _Undecided):
            return None, "definition"
    if not may_call(text):
        return Analysis(defined), "text"
    if s is None:
        s = _scan(tree)
    if DECIDE_NEW_FORM:
        if _reaches_by_binding(s):
            return None, "binding"  # a name bound to the intrinsic is called: libcst follows it
    elif _used_as_value(tree):
        return None, "value"
    if not s.calls:
        return Analysis(defined), "no call"
    rules = options.rules
    tl = set(rules.tilelang_modules)
    tvm = set(rules.tvm_modules)
    if "*" in s.nested or any(m in tl or m in tvm for m in s.imports.get("*", [])):
        return None, "star import"  # TileLang's or TVM's star import binds the bare names: libcst decides
    lines = text.splitlines(True)
    new_form = None
    dtype_kw = rules.legacy.python_params[0]
    converting = options.source.form == "access_ptr" and options.source.name != options.target.name
    out = []
    try:
        for c in s.calls:
            q = _qualify(c.func, s)
            if q is None:
                continue
            mod, _, name = q.rpartition(".")
            if name != INTRINSIC:
                continue  # an alias of something else: not the intrinsic
            if mod not in tl and mod not in tvm:
                continue  # some other library's ptx_cp_async
            kind = call_shape(rules, any(isinstance(a, ast.Starred) for a in c.args) or
                              any(k.arg is None for k in c.keywords),
                              len(c.args) + len(c.keywords), [k.arg for k in c.keywords if k.arg])
            if kind is None:
                continue  # not this API's shape (a fork's own form): no finding
            if kind == "new":
                if not DECIDE_NEW_FORM:
                    return None, "new form"
                if any(k.arg == dtype_kw for k in c.keywords):
                    code, message, info = "CPA004", DTYPE_KW_MESSAGE, False
                elif converting:
                    return None, "--from"  # convert_new: libcst
                else:
                    if new_form is None:
                        new_form = _NewForm(s, lines, options)
                    message = new_form.size_warning(c)
                    if message is None:
                        continue  # already migrated: not a finding
                    code, info = "CPA005", True
                f = _finding(c, lines, path, code, message, s.defs)
                if info:
                    f.legacy_site, f.status, f.severity = False, Status.INFO, "warning"
                if SUPPRESS_RE.search(lines[c.lineno - 1]):
                    f.status = Status.SUPPRESSED
                if mod in tl and f.legacy_site:
                    f.role = "caller"
                out.append(f)
                continue
            if mod in tl:
                return None, "legacy call"
            if options.migrate_tvm and kind == "legacy":
                return None, "--migrate-tvm"
            f = _finding(c, lines, path, "CPA003", TVM_MESSAGE, s.defs)
            if SUPPRESS_RE.search(lines[c.lineno - 1]):
                f.status = Status.SUPPRESSED
            out.append(f)
    except _Undecided:
        return None, "undecided"
    if defined:
        # the definition's own forward to TVM's wrapper is part of the definition's site (as rewrite.analyze)
        inside = [(d.line, d.end_line) for d in defined if d.code == "CPA006"]
        out = [f for f in out if not (f.code == "CPA003" and any(a <= f.line and f.end_line <= b for a, b in inside))]
        out.extend(defined)
    out.sort(key=lambda f: (f.line, f.column))
    return Analysis(out), "decided"


def _finding(c: ast.Call, lines: list[str], path: str, code: str, message: str, defs) -> Finding:
    first = lines[c.lineno - 1]
    last = lines[c.end_lineno - 1]
    col = len(first.encode("utf-8")[: c.col_offset].decode("utf-8", "replace")) + 1
    end_col = len(last.encode("utf-8")[: c.end_col_offset].decode("utf-8", "replace")) + 1
    return Finding(path=path, line=c.lineno, column=col, end_line=c.end_lineno, end_column=end_col,
                   code=code, message=message, function=_enclosing(defs, c))


