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
* a path the rules do not list, or one not every release of the generation imports (``[presence]``:
  ``tilelang.language.ast`` in none, ``tilelang.cuda`` from 0.1.13, ``tvm.tir`` up to 0.1.9): no API the
  builder reads: inconclusive.  So is a file whose own import needs such a path (:func:`imports_problem`).

It answers ``(problem, foreign)``: a problem makes the kernel inconclusive naming the name and the
line; ``foreign`` says the text would not build.  The builder's own readings are unchanged.
"""
from __future__ import annotations

import ast

from ...rules import parse_version
from .copies import call_form, text_forms
from .module import KernelSource, ModuleInfo
from .names import Problem, Route, readings

ROOTS = ("tilelang", "tvm")


def api_of(path: str, rules) -> str:
    """What the dotted ``path`` (a callee) is: "tilelang", "tvm" or "unknown"."""
    owner = path.rpartition(".")[0]
    if owner in rules.tilelang_modules:
        return "tilelang"
    if owner in rules.tvm_modules:
        return "tvm"
    return "unknown"


def in_every_release(path: str, gen, rules) -> bool:
    """Whether every release ``gen`` covers imports ``path`` (rules ``[presence]``; a path under no entry: yes)."""
    keys = [k for k in rules.presence if path == k or path.startswith(k + ".")]
    if not keys:
        return True
    span = rules.presence[max(keys, key=len)]
    if not span:
        return False
    first, last = span
    if parse_version(first) > parse_version(gen.covers_min):
        return False
    return not last or (bool(gen.covers_max) and parse_version(gen.covers_max) <= parse_version(last))


def text_generations(mod: ModuleInfo, tree, meaning: str, forms) -> list:
    """The generations whose releases a text is built under: the target's (``forms`` given), else the legacy
    one for its legacy calls (or when it holds none) and the access-pointer one of ``meaning`` for the others."""
    rules = mod.rules
    want = set(forms) if forms is not None else {f for f, lines in text_forms(mod, tree).items() if lines}
    if not want:
        want = {"legacy"}
    out = []
    for g in rules.generations:
        f = "legacy" if g.form == "offset" else "access_ptr"
        if f in want and (f == "legacy" or g.size_meaning == meaning):
            out.append(g)
    return out


def imports_problem(mod: ModuleInfo, tree, gens) -> str:
    """An import of a TileLang/TVM path that not every release of ``gens`` has: the text may not load there."""
    for node in ast.walk(tree):
        paths = []
        if isinstance(node, ast.Import):
            paths = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            paths = [node.module] + [f"{node.module}.{a.name}" for a in node.names if a.name != "*"]
        for p in paths:
            if p.split(".")[0] not in ROOTS:
                continue
            gone = [g.name for g in gens if not in_every_release(p, g, mod.rules)]
            if gone:
                return (f"the import at line {node.lineno} needs {p}, which not every release of generation "
                        f"{gone[0]} has (rules/namespaces.toml [presence]): the text may not load there")
    return ""


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
    """Writes the builder does not follow: (paths rebound by attribute writes, a write to the import system,
    the first attribute write to an object not local to a function: a module, a module-level name, a computed
    object, any of which may be or hold TileLang's or TVM's API)."""
    names = mod.names
    paths = []
    loose = ""
    for obj, attr, line in names.attr_writes:
        r = names.route_of(obj)
        text = ast.unparse(obj)[:30] + (f".{attr}" if attr else " (an attribute the text does not give)")
        if isinstance(r, Route) and r.base.split(".")[0] in ROOTS:
            paths.append((r.path + (f".{attr}" if attr else ""), f"{text} is written at line {line}"))
        elif not loose and not names.local_root(obj):
            loose = f"{text} is written at line {line}"
    system = ""
    for node, line in names.import_writes:
        r = names.route_of(node)
        path = r.path if isinstance(r, Route) else ""
        if path == "sys.modules" or path.endswith(".reload") or (isinstance(node, ast.Name) and node.id == "reload"):
            system = f"{ast.unparse(node)[:30]} at line {line} changes what an import binds"
            break
    return paths, system, loose


def names_problem(mod: ModuleInfo, ks: KernelSource, gens) -> tuple:
    """``(problem, foreign)`` for the prim_func ``ks`` built under the generations ``gens`` (see the module
    docstring); empty strings when none."""
    rules, names = mod.rules, mod.names
    poisoned, system, loose = _poisoned(mod)
    written = poisoned[0][1] if poisoned else loose
    if written:  # TileLang looks its API up when the kernel is built: a write anywhere may change any of it
        return (f"{written}: the verifier does not follow writes to the attributes of modules or module-level "
                "objects, so what the kernel's TileLang and TVM names are is not known from the text"), ""
    again = [b for b in names.bindings_where_defined(ks.node) if b.kind != "def" or b.line != ks.node.lineno]
    if again:
        return (f"{ks.node.name!r} is bound again at line {again[0].line} ({again[0].kind}): which function the "
                f"name holds when the module is used is not known from the text"), ""
    nodes = _reached(ks)
    # and the statements the kernel's build-time names come from: the module's and its factories', outside defs
    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    around = [st for body in [names.body] + [f.body for f in ks.factory] for st in body if not isinstance(st, defs)]
    inside = {id(n) for node in nodes for n in ast.walk(node)}
    for node in nodes + around:
        for n in ast.walk(node):
            if not (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)):
                continue
            nominal = mod.qualname(n)
            if not nominal or nominal.split(".")[0] not in ROOTS:
                continue
            r = names.resolve(n)
            if isinstance(r, Problem):
                return f"{r.message} (read at line {n.lineno})", ""
            if r is None and id(n) not in inside:
                continue  # a name of a comprehension or function outside the kernel: not one the kernel reads
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
                p, f = _callee_problem(mod, n, gens)
                if p or f:
                    return p, f
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                p = _decorator_problem(mod, n)
                if p:
                    return p, ""
    return "", ""


def _paths(mod: ModuleInfo, expr) -> tuple:
    """``(paths, problem)``: every path ``expr`` reaches under the rules' attribute shadows.  (A path an attribute
    write may have changed never gets here: ``names_problem`` refuses a module with any such write first.)"""
    r = mod.names.route_of(expr)
    text = ast.unparse(expr)[:50]
    if isinstance(r, Problem):
        return [], f"{text} at line {expr.lineno}: {r.message}"
    if r is None:
        return [], f"{text} at line {expr.lineno} is not reached through an import"
    return readings(r, mod.rules.attributes), ""


def _callee_problem(mod: ModuleInfo, call: ast.Call, gens) -> tuple:
    rules = mod.rules
    paths, problem = _paths(mod, call.func)
    if problem:
        return problem, ""
    text, line = ast.unparse(call.func)[:50], call.lineno
    apis = {p: api_of(p, rules) for p in paths}
    odd = [p for p, a in apis.items() if a == "unknown"]
    if odd:
        return (f"{text} at line {line} reaches {odd[0]}, not a module whose ptx_cp_async the rules know ([tilelang], "
                "[tvm]): the verifier reads no API there"), ""
    form = call_form(mod, call)
    kinds = set(apis.values())
    if form == "access_ptr" and kinds != {"tilelang"}:
        tvm = next(p for p, a in apis.items() if a == "tvm")
        if kinds == {"tvm"}:
            return "", (f"{text} at line {line} is TVM's wrapper {tvm}, which takes only the legacy six-argument form "
                        "(the kernel does not build)")
        tl = next(p for p, a in apis.items() if a == "tilelang")
        return (f"{text} at line {line} reaches {tvm} (TVM's wrapper, legacy form only) in releases where the "
                f"attribute is the module rules/namespaces.toml [attributes] names, and {tl} (TileLang's op) where it "
                "is the subpackage: which signature the access-pointer call meets depends on the release"), ""
    # TVM's wrapper and TileLang's legacy op take the same six arguments and build the same IR call; a legacy
    # call under an access-pointer target is refused by the form check
    mine = [g for g in gens if (g.form == "offset") == (form == "legacy")]
    for p in paths:
        gone = [g.name for g in mine if not in_every_release(p, g, rules)]
        if gone:
            return (f"{text} at line {line} reaches {p}, which not every release of generation {gone[0]} imports "
                    "(rules/namespaces.toml [presence]): the verifier reads no API there"), ""
    return "", ""


def _decorator_problem(mod: ModuleInfo, fn) -> str:
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
        paths, problem = _paths(mod, d)
        if problem:
            return problem
        if o in ("prim_func", "macro"):
            kinds = {api_of(p, mod.rules) for p in paths}
            if len(kinds) != 1 or kinds == {"unknown"}:
                return (f"@{text} of {fn.name!r} at line {d.lineno} reaches {' or '.join(paths)}: which {o} it is "
                        "is not known from the text")
    return ""
