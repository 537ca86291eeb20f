"""What a text holds that the verdicts must cover, read with a cheap walk of its syntax tree (stdlib
``ast``; independent of the kernel builder and of the rewriters):

* :func:`site_lines`: every line that names ``ptx_cp_async`` (a call, or the name taken as a value:
  ``cp = T.ptx_cp_async`` is a line no built site has, so a kernel reaching it is never called covered);
* :func:`factory_bindings`: for a kernel built inside factories, the values each factory parameter takes
  in the text: its default, every value the module's own calls pass (positionally or by keyword), and
  both values of a bool parameter.

The verifier builds each kernel under those bindings (and other sizes of its integer parameters) and
calls a kernel equivalent only when every site of both texts was built and checked under one of them.
"""
from __future__ import annotations

import ast
from typing import Optional

from ..rules import intrinsic_name
from .ir import CpAsync, Opaque, walk_stmts

MAX_BINDINGS = 16  # bindings a kernel is checked under, beyond its defaults


def _names_intrinsic(node) -> bool:
    name = intrinsic_name()  # rules/namespaces.toml, [intrinsic] name
    return (isinstance(node, ast.Attribute) and node.attr == name) or (isinstance(node, ast.Name) and node.id == name)


def site_lines(tree: ast.AST) -> list[int]:
    """Sorted lines of every reference to ``ptx_cp_async`` in ``tree``.  A plain name bound to it
    (``cp = T.ptx_cp_async``) is not a site itself; each call of that name is."""
    out = set()
    aliases, alias_values = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _names_intrinsic(node.value) and \
                all(isinstance(t, ast.Name) for t in node.targets):
            aliases.update(t.id for t in node.targets)
            alias_values.add(id(node.value))
    for node in ast.walk(tree):
        if _names_intrinsic(node) and id(node) not in alias_values:
            out.add(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in aliases:
            out.add(node.lineno)
    return sorted(out)


def reached_lines(tree: ast.Module, qualname: str) -> set:
    """The lines of the prim_func ``qualname`` and of every function it names, transitively (what a
    kernel proven by its unchanged text covers)."""
    defs: dict = {}
    target = None

    def walk(body, prefix):
        nonlocal target
        for st in body:
            if isinstance(st, (ast.FunctionDef, ast.ClassDef)):
                defs.setdefault(st.name, []).append(st)
                if prefix + st.name == qualname:
                    target = st
                walk(st.body, prefix + st.name + ".")

    walk(tree.body, "")
    if target is None:
        return set()
    lines, todo, done = set(), [target], set()
    while todo:
        fn = todo.pop()
        if id(fn) in done:
            continue
        done.add(id(fn))
        lines.update(range(fn.lineno, getattr(fn, "end_lineno", fn.lineno) + 1))
        for node in ast.walk(fn):
            if isinstance(node, ast.Name):
                todo.extend(defs.get(node.id, []))
    return lines


def _literal(node) -> tuple[bool, object]:
    try:
        return True, ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False, None


def _factories(tree: ast.Module, qualname: str) -> list[ast.FunctionDef]:
    """The functions enclosing the kernel ``qualname`` (outermost first; classes are walked through)."""
    parts = qualname.split(".")[:-1]
    out, body = [], tree.body
    for p in parts:
        nxt = None
        for st in body:
            if isinstance(st, (ast.FunctionDef, ast.ClassDef)) and st.name == p:
                nxt = st
        if nxt is None:
            return out
        if isinstance(nxt, ast.FunctionDef):
            out.append(nxt)
        body = nxt.body
    return out


def _params(fn: ast.FunctionDef) -> list[tuple[str, Optional[ast.AST]]]:
    a = fn.args
    pos = a.posonlyargs + a.args
    defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
    return list(zip((x.arg for x in pos), defaults)) + list(zip((x.arg for x in a.kwonlyargs), a.kw_defaults))


def _calls(tree: ast.Module, name: str):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Name) and f.id == name) or (isinstance(f, ast.Attribute) and f.attr == name):
                yield node


def factory_bindings(tree: ast.Module, qualname: str, fixed: frozenset = frozenset()) -> tuple[dict, list]:
    """``(defaults, bindings)`` for the kernel ``qualname``: the literal defaults of its factories'
    parameters (those named in ``fixed``, the ``--bind`` names, left out), and the other bindings the text
    gives them (each a dict of the parameters it changes): one per call of a factory in the module, one per
    other value a parameter takes in those calls (alone), and the other value of each bool parameter."""
    defaults: dict = {}
    bindings: list = []
    seen = set()

    def add(b: dict):
        b = {k: v for k, v in b.items() if k not in fixed}
        if not b or all(k in defaults and defaults[k] == v and type(defaults[k]) is type(v) for k, v in b.items()):
            return
        key = tuple(sorted((k, repr(v)) for k, v in b.items()))
        if key not in seen:
            seen.add(key)
            bindings.append(b)

    values: dict = {}
    for fn in _factories(tree, qualname):
        params = _params(fn)
        for name, d in params:
            if name in fixed or d is None:
                continue
            ok, v = _literal(d)
            if ok:
                defaults[name] = v
        for call in _calls(tree, fn.name):
            b = {}
            if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                continue
            for (name, _), a in zip(params, call.args):
                ok, v = _literal(a)
                if ok:
                    b[name] = v
            names = {n for n, _ in params}
            for k in call.keywords:
                ok, v = _literal(k.value)
                if ok and k.arg in names:
                    b[k.arg] = v
            for k, v in b.items():
                values.setdefault(k, []).append(v)
            add(b)
    for k, vs in values.items():
        for v in vs:
            add({k: v})
    for k, v in defaults.items():
        if isinstance(v, bool):
            add({k: not v})
    return defaults, bindings[:MAX_BINDINGS]


def bind_value(v) -> object:
    """``v`` as a ``binds`` value (strings are read as Python literals there: give them as one)."""
    return repr(v) if isinstance(v, str) else v


def covering_kernel(tree: ast.Module, line: int) -> Optional[str]:
    """The qualified name of the prim_func whose text holds ``line`` (None: no prim_func does)."""
    best = None

    def walk(body, prefix):
        nonlocal best
        for st in body:
            if isinstance(st, (ast.FunctionDef, ast.ClassDef)):
                q = prefix + st.name
                end = getattr(st, "end_lineno", st.lineno)
                if st.lineno <= line <= end:
                    if isinstance(st, ast.FunctionDef) and any(
                            (isinstance(d, ast.Attribute) and d.attr == "prim_func") or
                            (isinstance(d, ast.Name) and d.id == "prim_func") or
                            (isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and
                             d.func.attr == "prim_func") for d in st.decorator_list):
                        best = q
                    walk(st.body, q + ".")

    walk(tree.body, "")
    return best


# ---------------------------------------------------------------- what the checks built
def built_site_lines(bk) -> set:
    """The cp.async site lines a built kernel (a ``BuiltKernel``) holds."""
    if bk is None or bk.kernel is None:
        return set()
    return {st.line for st in walk_stmts(bk.kernel.body)
            if isinstance(st, CpAsync) or (isinstance(st, Opaque) and st.site)}


def record(covered: tuple, bo, bn, unchanged: bool, trees: tuple) -> None:
    """Add to ``covered`` (a set of lines per text) the site lines a checked kernel pair covers: those it
    built, and for a kernel judged by its unchanged text, every site line inside its prim_func."""
    for side, bk, tree in ((0, bo, trees[0]), (1, bn, trees[1])):
        covered[side].update(built_site_lines(bk))
        if unchanged and bk is not None:
            reach = reached_lines(tree, bo.qualname)
            covered[side].update(ln for ln in site_lines(tree) if ln in reach)


def uncovered(trees: tuple, covered: tuple) -> list:
    """``(text, line, kernel or None)`` for every site line of either text that ``covered`` lacks."""
    missing = []
    for side, tree in enumerate(trees):
        for ln in site_lines(tree):
            if ln not in covered[side]:
                missing.append((("old", "new")[side], ln, covering_kernel(tree, ln)))
    return missing
