"""Python front end.

``analyze`` first runs a cheap, exact pass with the standard library's
``ast`` (several times faster than libcst, and libcst is not even imported):

* a file in which no call can resolve to ``ptx_cp_async`` has no findings;
* a file whose every candidate call resolves, unambiguously, to TVM's own
  wrapper (module-level imports only, the name never rebound) and has a
  non-access-pointer shape gets its CPA003 findings from this pass, exactly
  as the libcst pass would report them (same positions, code, message);
* anything else goes to the libcst pass in ``rewrite.py``.

Every finding of the libcst pass is a call whose callee is spelled
``<expr>.ptx_cp_async``, ``ptx_cp_async`` or a name imported as
``ptx_cp_async``; the filter keeps every file that has such a call.
"""
from __future__ import annotations

import ast
import re
from typing import Optional

from ..findings import Analysis, Finding, FrontEndOptions, Status

SUFFIXES = (".py", ".pyi")
INTRINSIC = "ptx_cp_async"
SUPPRESS_RE = re.compile(r"#\s*cpasync-migrate:\s*ignore\b")
TVM_MESSAGE = (
    "ptx_cp_async resolves to TVM's own wrapper, which keeps the legacy signature; a rewrite would break "
    "this call. Switch the file to TileLang (import tilelang.language as T) and run again, or pass "
    "--migrate-tvm to switch the call to TileLang's op"
)


def call_shape(rules, has_star: bool, total: int, keywords: list[str]) -> Optional[str]:
    """'legacy', 'new', None (not this API), or what is wrong (shared by both passes).

    Legacy is exactly the legacy arity (six) with every keyword a legacy parameter after the
    positional ones, or one fewer positional plus ``dtype=`` (TVMScript's dtype forwarding),
    or any call naming a parameter only the legacy signature has.  New is three or four
    arguments (``dtype=`` aside) whose keywords are new parameter names.  Any other shape,
    such as a fork's own seven-argument form, is not this API: None, and no finding.
    """
    if has_star:
        return "it uses *args or **kwargs"
    params = rules.legacy.python_params
    dtype_kw = rules.legacy.python_params[0]
    new_names = {p for g in rules.generations[1:] for p in g.python_params}
    legacy_only = set(params) - new_names - {dtype_kw}
    if any(k in legacy_only for k in keywords):
        return "legacy"
    npos = total - len(keywords)
    rest = [k for k in keywords if k != dtype_kw]
    if total == len(params):
        # positional first, then keywords for the parameters after them (dtype forwarded from the end)
        skip = 1 if dtype_kw in keywords else 0
        if set(rest) <= set(params[skip + npos:]):
            return "legacy"
    # the access-pointer forms: every parameter, or all but the optional predicate
    new_arity = {n for g in rules.generations[1:] for n in (len(g.python_params) - 1, len(g.python_params))}
    if len(rest) + npos in new_arity and set(rest) <= new_names:
        return "new"
    return None


class _Undecided(Exception):
    """The ast pass cannot answer exactly; libcst decides."""


_TYPE_PARAMS = tuple(getattr(ast, n) for n in ("TypeVar", "ParamSpec", "TypeVarTuple") if hasattr(ast, n))


def _scan(tree: ast.Module):
    """One walk over the tree: the candidate calls, the definitions, and the bindings.

    Returns (calls, defs, imports, other, nested): calls whose callee is ``<expr>.ptx_cp_async``
    or a name ``ptx_cp_async`` is bound to by ``from ... import ptx_cp_async as NAME``;
    function and class definitions; module-level import bindings; every name bound anywhere
    else; names bound by imports below module level.
    """
    imports: dict[str, list[str]] = {}
    other: set[str] = set()
    nested: set[str] = set()
    alias_names = {INTRINSIC}
    calls, defs = [], []
    top = set(id(s) for s in tree.body)
    AST, Call, Attribute, Name, Store, Del = ast.AST, ast.Call, ast.Attribute, ast.Name, ast.Store, ast.Del
    Import, ImportFrom, Defs = ast.Import, ast.ImportFrom, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
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
        elif t is Name:
            if isinstance(node.ctx, (Store, Del)):
                other.add(node.id)
        elif t is Attribute:
            pass
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
                        other.add(a.asname or a.name)
                    continue
                for a in node.names:
                    if a.name == "*":
                        names.append(("*", "*"))
                        continue
                    names.append((a.asname or a.name, f"{node.module}.{a.name}"))
            for bound, target in names:
                if id(node) in top:
                    imports.setdefault(bound, []).append(target)
                else:
                    nested.add(bound)
        elif t in Defs:
            other.add(node.name)
            defs.append(node)
        elif t is ast.arg:
            other.add(node.arg)
        elif t is ast.Global or t is ast.Nonlocal:
            other.update(node.names)
        elif t is ast.ExceptHandler:
            if node.name:
                other.add(node.name)
        elif t is ast.MatchAs or t is ast.MatchStar:
            if node.name:
                other.add(node.name)
        elif t is ast.MatchMapping:
            if node.rest:
                other.add(node.rest)
        elif t in _TYPE_PARAMS:
            other.add(node.name)
    calls = [c for c in calls if (isinstance(c.func, Attribute) and c.func.attr == INTRINSIC) or (
        isinstance(c.func, Name) and c.func.id in alias_names)]
    return calls, defs, imports, other, nested


def _used_as_value(tree: ast.Module) -> bool:
    """The intrinsic's name is read other than as a callee or an import: an attribute or name in a
    value position, or the string of a ``getattr``."""
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


def _qualify(func: ast.expr, imports, other, nested) -> Optional[str]:
    """The callee's qualified name; None when its root is never imported (then it is no module's function)."""
    parts = []
    cur = func
    while isinstance(cur, ast.Attribute):
        parts.append(cur.attr)
        cur = cur.value
    if not isinstance(cur, ast.Name):
        raise _Undecided
    root = cur.id
    if root not in imports and root not in nested:
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


def _may_call(text: str) -> bool:
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


def _fast(text: str, path: str, options: FrontEndOptions) -> Optional[Analysis]:
    """Findings from the ast pass, or None when libcst must decide."""
    names = [INTRINSIC, *options.rules.python_api.get("helpers", {}).get("names", [])]
    may_define = re.search(r"\bdef\s+(?:%s)\b" % "|".join(map(re.escape, names)), text) is not None
    if not may_define and not _may_call(text):
        return Analysis([])
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if _defines(tree, options):
        return None
    if not _may_call(text):
        return Analysis([])
    if _used_as_value(tree):
        return None  # a binding of the intrinsic may be called under another name: libcst follows it
    calls, defs, imports, other, nested = _scan(tree)
    if not calls:
        return Analysis([])
    rules = options.rules
    tl = set(rules.tilelang_modules)
    tvm = set(rules.tvm_modules)
    if "*" in imports or "*" in nested:
        return None  # a star import may bind any name: libcst decides
    try:
        picked = []
        for c in calls:
            q = _qualify(c.func, imports, other, nested)
            if q is None:
                continue
            mod, _, name = q.rpartition(".")
            if name != INTRINSIC:
                continue  # an alias of something else: not the intrinsic
            if mod in tl:
                return None
            if mod not in tvm:
                continue  # some other library's ptx_cp_async
            kind = call_shape(rules, any(isinstance(a, ast.Starred) for a in c.args) or
                              any(k.arg is None for k in c.keywords),
                              len(c.args) + len(c.keywords), [k.arg for k in c.keywords if k.arg])
            if kind is None:
                continue  # not this API's shape (a fork's own form): no finding
            if kind == "new" or (options.migrate_tvm and kind == "legacy"):
                return None
            picked.append(c)
    except _Undecided:
        return None
    lines = text.splitlines(True)
    out = []
    for c in picked:
        first = lines[c.lineno - 1]
        last = lines[c.end_lineno - 1]
        col = len(first.encode("utf-8")[: c.col_offset].decode("utf-8", "replace")) + 1
        end_col = len(last.encode("utf-8")[: c.end_col_offset].decode("utf-8", "replace")) + 1
        f = Finding(path=path, line=c.lineno, column=col, end_line=c.end_lineno, end_column=end_col,
                    code="CPA003", message=TVM_MESSAGE, function=_enclosing(defs, c))
        if SUPPRESS_RE.search(first):
            f.status = Status.SUPPRESSED
        out.append(f)
    out.sort(key=lambda f: (f.line, f.column))
    return Analysis(out)


def analyze(text: str, path: str, options: FrontEndOptions, fast: bool = True) -> Analysis:
    if fast:
        quick = _fast(text, path, options)
        if quick is not None:
            return quick
    from .rewrite import analyze as full

    return full(text, path, options)


def reparse_problem(old_text: str, new_text: str) -> Optional[str]:
    from .rewrite import reparse_problem as rp

    return rp(old_text, new_text)
