"""Which API each name of a kernel reaches, and whether the builder may read it as the one it models.

The kernel builder dispatches on the op a callee names (``ModuleInfo.op_name``: ``T.ptx_cp_async``
-> ``ptx_cp_async``).  :func:`names_problem` is the gate in front of it: for one prim_func (and the
macros it reaches) it checks, with :class:`~.names.NameModel`, that every name read as a
TileLang/TVM module is bound by exactly the import that reading assumed, and that every
``ptx_cp_async`` call and every ``prim_func``/``macro`` decorator reaches an API whose signature the
builder reads:

* TileLang's op (its module in ``rules/namespaces.toml`` ``[tilelang]``): the form of the text's
  generation (legacy, or access pointers);
* TVM's wrapper (``[tvm]``): the legacy six-argument form only (real 0.1.7.post1 builds the same IR
  call through it as through TileLang's op; 0.1.8's takes only those six arguments; 0.1.15 has no
  ``tvm.tir``), so an access-pointer call through it does not build;
* a path through an ``[attributes]`` step (``T.tir.ptx_cp_async``) is TVM's wrapper in releases
  where the attribute shadows the subpackage and TileLang's op where it does not: both agree on a
  legacy call; an access-pointer call is inconclusive (which one it is depends on the release);
* a path under ``[unbuilt]`` (``tilelang.language.ast``), or one the rules do not list: no API the
  builder reads: inconclusive.

It answers ``(problem, foreign)``: a problem makes the kernel inconclusive naming the name and the
line; ``foreign`` says the text would not build.  The builder's own readings are unchanged.
"""
from __future__ import annotations

import ast

from .copies import call_form
from .module import KernelSource, ModuleInfo
from .names import Problem, Route, readings

ROOTS = ("tilelang", "tvm")


def api_of(path: str, rules) -> str:
    """What the dotted ``path`` (a callee) is: "tilelang", "tvm", "unbuilt" or "unknown"."""
    owner = path.rpartition(".")[0]
    if any(p == m or p.startswith(m + ".") for m in rules.unbuilt_modules for p in (path, owner)):
        return "unbuilt"
    if owner in rules.tilelang_modules:
        return "tilelang"
    if owner in rules.tvm_modules:
        return "tvm"
    return "unknown"


def _reached(ks: KernelSource) -> list:
    """The prim_func and the macros it calls, transitively (by name, as the builder inlines them)."""
    nodes, todo = [], [ks.node]
    while todo:
        node = todo.pop()
        if any(node is n for n in nodes):
            continue
        nodes.append(node)
        todo.extend(ks.macros[n.id].node for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in ks.macros)
    return nodes


def _poisoned(mod: ModuleInfo) -> tuple:
    """Writes the builder does not follow: (paths rebound by attribute writes, a write to the import system)."""
    names = mod.names
    paths = []
    for obj, attr, line in names.attr_writes:
        r = names.route_of(obj)
        if isinstance(r, Route) and r.base.split(".")[0] in ROOTS:
            text = ast.unparse(obj)[:30] + (f".{attr}" if attr else " (an attribute the text does not give)")
            paths.append((r.path + (f".{attr}" if attr else ""), f"{text} is written at line {line}"))
    system = ""
    for node, line in names.import_writes:
        r = names.route_of(node)
        path = r.path if isinstance(r, Route) else ""
        if path == "sys.modules" or path.endswith(".reload") or (isinstance(node, ast.Name) and node.id == "reload"):
            system = f"{ast.unparse(node)[:30]} at line {line} changes what an import binds"
            break
    return paths, system


def names_problem(mod: ModuleInfo, ks: KernelSource) -> tuple:
    """``(problem, foreign)`` for the prim_func ``ks`` (see the module docstring); empty strings when none."""
    rules, names = mod.rules, mod.names
    poisoned, system = _poisoned(mod)
    nodes = _reached(ks)
    for node in nodes:
        for n in ast.walk(node):
            if not (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)):
                continue
            nominal = mod.qualname(n)
            if not nominal or nominal.split(".")[0] not in ROOTS:
                continue
            r = names.resolve(n)
            if isinstance(r, Problem):
                return f"{r.message} (read at line {n.lineno})", ""
            if r is None:
                return (f"{n.id!r} at line {n.lineno} is bound where it is read (a parameter or local name of its "
                        f"function), not by the import of {nominal}: what it is is not known from the text"), ""
            if r.path != nominal:
                return (f"{n.id!r} at line {n.lineno} is read as {nominal} but reaches {r.path} (line {r.line})"), ""
            if system:
                return f"{n.id!r} at line {n.lineno}: {system}, so what {nominal} is is not known from the text", ""
    for node in nodes:
        for n in ast.walk(node):
            if isinstance(n, ast.Call) and mod.op_name(n.func) == rules.intrinsic:
                p, f = _callee_problem(mod, n, poisoned)
                if p or f:
                    return p, f
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                p = _decorator_problem(mod, n, poisoned)
                if p:
                    return p, ""
    return "", ""


def _paths(mod: ModuleInfo, expr, poisoned) -> tuple:
    """``(paths, problem)``: every path ``expr`` reaches under the rules' attribute shadows."""
    r = mod.names.route_of(expr)
    text = ast.unparse(expr)[:50]
    if isinstance(r, Problem):
        return [], f"{text} at line {expr.lineno}: {r.message}"
    if r is None:
        return [], f"{text} at line {expr.lineno} is not reached through an import"
    paths = readings(r, mod.rules.attributes)
    for p in paths:
        for q, why in poisoned:
            if p == q or p.startswith(q + ".") or q.startswith(p + "."):
                return [], f"{text} at line {expr.lineno} reaches {p}, and {why}: what it is is not known from the text"
    return paths, ""


def _callee_problem(mod: ModuleInfo, call: ast.Call, poisoned) -> tuple:
    rules = mod.rules
    paths, problem = _paths(mod, call.func, poisoned)
    if problem:
        return problem, ""
    text, line = ast.unparse(call.func)[:50], call.lineno
    apis = {p: api_of(p, rules) for p in paths}
    odd = [p for p, a in apis.items() if a in ("unbuilt", "unknown")]
    if odd:
        why = ("a module real TileLang does not import (rules/namespaces.toml [unbuilt])" if apis[odd[0]] == "unbuilt"
               else "not a module whose ptx_cp_async the rules know ([tilelang], [tvm])")
        return f"{text} at line {line} reaches {odd[0]}, {why}: the verifier reads no API there", ""
    kinds = set(apis.values())
    if call_form(mod, call) == "legacy" or kinds == {"tilelang"}:
        # TVM's wrapper and TileLang's legacy op take the same six arguments and build the same IR call; a
        # legacy call under an access-pointer target is refused by the form check
        return "", ""
    tvm = next(p for p, a in apis.items() if a == "tvm")
    if kinds == {"tvm"}:
        return "", (f"{text} at line {line} is TVM's wrapper {tvm}, which takes only the legacy six-argument form "
                    "(the kernel does not build)")
    tl = next(p for p, a in apis.items() if a == "tilelang")
    return (f"{text} at line {line} reaches {tvm} (TVM's wrapper, legacy form only) in releases where the attribute "
            f"is the module rules/namespaces.toml [attributes] names, and {tl} (TileLang's op) where it is the "
            "subpackage: which signature the access-pointer call meets depends on the release"), ""


def _decorator_problem(mod: ModuleInfo, fn, poisoned) -> str:
    """A prim_func or macro with a decorator that is not TileLang's or TVM's, or whose prim_func/macro is not one
    API in every release (TVM's TVMScript prim_func is modelled: real TileLang lowers such kernels)."""
    decos = [d.func if isinstance(d, ast.Call) else d for d in fn.decorator_list]
    ops = [mod.op_name(d) for d in decos]
    if not any(o in ("prim_func", "macro") for o in ops):
        return ""
    for d, o in zip(decos, ops):
        text = ast.unparse(d)[:50]
        if o is None:
            return (f"decorator @{text} of {fn.name!r} at line {d.lineno} is not TileLang's: what it makes of the "
                    "function is not known from the text")
        paths, problem = _paths(mod, d, poisoned)
        if problem:
            return problem
        if o in ("prim_func", "macro"):
            kinds = {api_of(p, mod.rules) for p in paths}
            if len(kinds) != 1 or kinds <= {"unbuilt", "unknown"}:
                return (f"@{text} of {fn.name!r} at line {d.lineno} reaches {' or '.join(paths)}: which {o} it is "
                        "is not known from the text")
    return ""
