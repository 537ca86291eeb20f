"""Whether another file of the repository imports a module-level macro: the one cross-file question.

A fix of a call inside a public module-level ``T.macro`` rests on "only this file's kernels call
the macro".  The repository that holds the file answers it: its git work tree (``git grep -l -F`` over
tracked and untracked, not ignored, Python files), else the folder of its nearest ``pyproject.toml``
(walked by ``discovery``).  A file that names the macro and imports it from this module (``from
pkg.stage import stage``, ``from .stage import *`` when the name is exported, ``import pkg.stage``,
``importlib``) is an importer.  No importer: the assumption is dropped and the finding names the ground;
outside any repository it stays.

An importer's calls of the macro count like the module's own (``call_sites``; ``ast.parse`` only): each
assumption carries the reading the module's callers give (``Fix.importers``: the element type of a
parameter's buffer, or whether the kernels around the call merge the destination's scope), and each
importing call is read for the same reading by the front end's declaration rules as the stdlib pass
mirrors them (``fast_sizes.NewForm``) and by an upper bound of the merge pass's count.  Every call agrees:
the assumption is dropped and the finding names the importing files and calls; a call disagrees: the fix
is taken away (CPA002) and the message names each such call by file and line with both readings; a call
that cannot be read (``*args``, the macro bound to another name or passed on, a file over the size limit,
a call inside a macro of the importer, a kernel calling a function it does not show): the assumption stays
and says why.  A file that binds the macro at module level is itself a module others may import it from;
its importers are read too (``_REEXPORT_DEPTH`` links).

Why here and not in the front end: the answer depends on other files, so it must not be part of the
per-file analysis the results cache keeps (``cache.py`` keys an analysis by the file's own bytes).  The
engine asks this module after every analysis, cached or fresh; answers are kept for one run
(``forget``) and read no code of the scanned tree (``ast.parse`` only, never an import).
"""
from __future__ import annotations

import ast
import os
import re
import subprocess
from dataclasses import dataclass, field
from typing import Optional

from .gitrev import git  # every git process through one guard: the repository's configuration starts no program

_MAX_BYTES = 4 << 20  # a larger candidate is counted as an importer unread
_ROOTS: dict = {}  # folder -> (root, kind) or None, for one run
_ANSWERS: dict = {}  # (root, module path, name) -> Answer, for one run


@dataclass
class Answer:
    root: str
    kind: str  # "git work tree" | "project folder"
    files: list = field(default_factory=list)  # importers, relative to the root


def forget() -> None:
    """A run starts: files may have come or gone."""
    _ROOTS.clear()
    _ANSWERS.clear()
    _SITES.clear()


def repository_of(path: str) -> Optional[tuple[str, str]]:
    """(root, kind) of the repository that holds ``path``; None outside any."""
    folder = os.path.dirname(os.path.abspath(path))
    if folder in _ROOTS:
        return _ROOTS[folder]
    found = None
    try:
        r = git(["rev-parse", "--show-toplevel"], folder, limit=30)
        if r.returncode == 0 and r.stdout.strip():
            found = (os.path.realpath(r.stdout.decode("utf-8", "surrogateescape").strip()), "git work tree")
    except (OSError, subprocess.SubprocessError):
        pass
    if found is None:
        from pathlib import Path

        from .config import find_pyproject

        pp = find_pyproject(Path(folder))
        if pp is not None:
            found = (os.path.realpath(str(pp.parent)), "project folder")
    _ROOTS[folder] = found
    return found


def importers_of(path: str, name: str, exported: bool) -> Optional[Answer]:
    """The files of ``path``'s repository that import ``name`` from it; None outside any repository.
    ``exported``: a star import of the module binds the name."""
    repo = repository_of(path)
    if repo is None:
        return None
    root, kind = repo
    me = os.path.realpath(path)
    k = (root, me, name, exported)
    if k in _ANSWERS:
        return _ANSWERS[k]
    ans = Answer(root, kind)
    for cand in _candidates(root, kind, name):
        if os.path.realpath(cand) == me:
            continue
        if _imports(cand, me, root, name, exported):
            ans.files.append(os.path.relpath(cand, root))
    ans.files.sort()
    _ANSWERS[k] = ans
    return ans


def _candidates(root: str, kind: str, name: str) -> list[str]:
    """Python files under ``root`` whose bytes hold ``name``."""
    if kind == "git work tree":
        r = git(["grep", "--untracked", "-l", "-z", "-F", "-e", name, "--", "*.py", "*.pyi"], root, limit=120)
        if r.returncode not in (0, 1):
            raise OSError(r.stderr.decode("utf-8", "replace").strip() or "git grep failed")
        return [os.path.join(root, n) for n in r.stdout.decode("utf-8", "surrogateescape").split("\0") if n]
    from .discovery import discover

    out = []
    needle = name.encode()
    for f in discover([root], (".py", ".pyi")):
        try:
            with open(f, "rb") as fh:
                if needle in fh.read(_MAX_BYTES + 1):
                    out.append(f)
        except OSError:
            out.append(f)  # cannot be read: it may import the name
    return out


def _module_parts(module: str, root: str) -> list[str]:
    rel = os.path.relpath(module, root)
    parts = rel[: -len(os.path.splitext(rel)[1])].split(os.sep)
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return parts


def _imports(cand: str, module: str, root: str, name: str, exported: bool) -> bool:
    """``cand`` imports ``name`` from ``module`` (or may: a file that cannot be read or parsed)."""
    try:
        with open(cand, "rb") as fh:
            raw = fh.read(_MAX_BYTES + 1)
        if len(raw) > _MAX_BYTES:
            return True
        tree = ast.parse(raw)
    except (OSError, SyntaxError, ValueError, MemoryError, RecursionError):
        return True
    target = _module_parts(module, root)
    here = os.path.relpath(os.path.dirname(os.path.realpath(cand)), root).split(os.sep)
    here = [] if here == ["."] else here

    def names_it(parts: list, relative: bool) -> bool:
        if not parts:
            return False
        return parts == target if relative else target[-len(parts):] == parts

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            mod = node.module.split(".") if node.module else []
            if node.level:
                base = here[: len(here) - (node.level - 1)] if node.level - 1 <= len(here) else None
                if base is None:
                    continue
                parts, relative = base + mod, True
            else:
                parts, relative = mod, False
            for a in node.names:
                if a.name == "*":
                    if exported and names_it(parts, relative):
                        return True
                elif a.name == name and names_it(parts, relative):
                    return True
                elif names_it(parts + [a.name], relative):
                    return True  # the module itself imported (`from pkg import stage_mod`), the name read off it
        elif isinstance(node, ast.Import):
            if any(names_it(a.name.split("."), False) for a in node.names):
                return True
        elif isinstance(node, ast.Call):
            f = node.func
            called = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if called in ("import_module", "__import__", "run_path", "spec_from_file_location"):
                return True  # a module imported by name at run time: it may be this one
    return False


# ---------------------------------------------------------------- the importers' calls

_RUNTIME_IMPORTS = ("import_module", "__import__", "run_path", "spec_from_file_location")
_REEXPORT_DEPTH = 3  # files that import the macro from a file that imports it, followed
_SITES: dict = {}  # (file, module, name, exported) -> Sites, for one run


@dataclass
class Site:
    """One call of the macro in an importing file."""

    file: str  # relative to the repository's root
    line: int
    call: ast.Call
    kernel: Optional[ast.FunctionDef]  # the prim_func whose body holds the call; None: see ``why``
    why: str = ""
    reader: object = None  # _Reader of the file


@dataclass
class Sites:
    """The calls of the macro the importing files make, or why some cannot be read."""

    sites: list = field(default_factory=list)
    unread: list = field(default_factory=list)  # "`file`: why", one per file or call that cannot be read


class _Reader:
    """One importing file, parsed with ``ast`` (never imported): its import bindings, parents and the
    front end's declaration rules as the stdlib pass mirrors them (``fast_sizes.NewForm``)."""

    def __init__(self, tree: ast.Module, text: str, rules):
        from types import SimpleNamespace

        from .python.fast_scan import scan
        from .python.fast_sizes import NewForm

        self.tree = tree
        self.rules = rules
        self.scan = scan(tree)
        self.decls = NewForm(self.scan, text.splitlines(), SimpleNamespace(rules=rules, target=None))
        self.parents = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        self.mods = set(rules.tilelang_modules) | set(rules.tvm_modules)

    def qualified(self, func) -> Optional[str]:
        """The callee's dotted name through the file's imports; None when its root is no import; raises
        ``fast_scan.Undecided`` where the binding is not plain."""
        from .python.fast_scan import qualify

        return qualify(func, self.scan)

    def is_api(self, func, names) -> Optional[str]:
        """The last name of a TileLang/TVM function ``func`` names, when it is in ``names``."""
        q = self.qualified(func)
        if q is None:
            return None
        mod, _, last = q.rpartition(".")
        if last in names and (mod in self.mods or mod.split(".")[0] in ("tilelang", "tvm")):
            return last
        return None

    def kernel_of(self, node) -> tuple[Optional[ast.FunctionDef], str]:
        from .python.fast_scan import Undecided

        cur = self.parents.get(node)
        while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            cur = self.parents.get(cur)
        if not isinstance(cur, ast.FunctionDef):
            return None, "is not inside a function"
        names = set(self.rules.shared_memory["functions"]["prim_func"])
        for d in cur.decorator_list:
            try:
                if self.is_api(d.func if isinstance(d, ast.Call) else d, names):
                    return cur, ""
            except Undecided:
                return None, f"is inside `{cur.name}`, whose decorator this reading does not resolve"
        return None, (f"is inside `{cur.name}`, which is not a prim_func (a macro calling it is followed only "
                      "within one file)")


def _all_of(tree: ast.Module):
    """The module's ``__all__``: a set of names, None without one, False when it is not a literal."""
    found = None
    for stmt in tree.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(
            stmt, (ast.AnnAssign, ast.AugAssign)) else []
        if not any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            continue
        v = stmt.value
        if isinstance(stmt, ast.AugAssign) or not isinstance(v, (ast.List, ast.Tuple)) or found is not None or \
                not all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in v.elts):
            return False
        found = {e.value for e in v.elts}
    return found


def _star_binds(tree: ast.Module, name: str) -> bool:
    listed = _all_of(tree)
    if listed is None:
        return not name.startswith("_")
    return listed is False or name in listed


def call_sites(path: str, name: str, exported: bool, rules, depth: int = 0, seen=None) -> Optional[Sites]:
    """The calls of the macro ``name`` defined at module level in ``path`` that the other files of its
    repository make (each importer's own, and those of files importing it from an importer); None outside
    any repository."""
    ans = importers_of(path, name, exported)
    if ans is None:
        return None
    me = os.path.realpath(path)
    k = (me, name, exported)
    if k in _SITES:
        return _SITES[k]
    seen = set(seen or ()) | {k}
    out = Sites()
    for rel in ans.files:
        _read_importer(_Importer(os.path.join(ans.root, rel), rel, me, ans.root, name, exported), rules, out,
                       depth, seen)
    _SITES[k] = out
    return out


@dataclass(frozen=True)
class _Importer:
    """One file that imports the macro, and what it is asked about: the macro ``name`` of ``module``."""

    path: str  # the importing file
    rel: str  # the same, relative to ``root``
    module: str  # the real path of the module defining the macro
    root: str  # the repository's root
    name: str  # the macro's name in the module
    exported: bool  # a star import of the module binds the name


@dataclass
class _Bound:
    """The importer's module-level names for the macro: bound to it, or to the module it is read off."""

    macro: dict = field(default_factory=dict)  # local name -> the import's line (a name bound to the macro itself)
    module: dict = field(default_factory=dict)  # local name -> the attribute path from it to the module


class _Unread(Exception):
    """A step of reading an importer stops: ``why`` the file's calls cannot all be read."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


def _read_importer(imp: _Importer, rules, out: Sites, depth: int, seen: set) -> None:
    """Add the importer's calls of the macro to ``out`` (and those of files importing it from there), or why
    they cannot all be read: read the file, find the names it binds to the macro, find their calls, follow
    the names a third file may import."""
    try:
        tree, text = _parse_importer(imp.path)
        bound = _bound_names(tree, imp)
        reader = _Reader(tree, text, rules)
        _macro_calls(reader, bound, imp, out)
        _rebound_calls(tree, bound, imp, rules, out, depth, seen)
    except _Unread as e:
        out.unread.append(f"`{imp.rel}` {e.why}")


def _parse_importer(path: str) -> tuple[ast.Module, str]:
    """The importer's syntax tree and text."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(_MAX_BYTES + 1)
        if len(raw) > _MAX_BYTES:
            raise _Unread(f"is over the size limit ({_MAX_BYTES >> 20} MiB), not read")
        text = raw.decode("utf-8")
        return ast.parse(text), text
    except (OSError, SyntaxError, ValueError, MemoryError, RecursionError) as e:
        raise _Unread(f"cannot be read ({type(e).__name__})") from None


def _bound_names(tree: ast.Module, imp: _Importer) -> _Bound:
    """The module-level names the importer binds to the macro or its module; stops at an import by name at run
    time, an import of it inside a block and a name bound more than once."""
    target = _module_parts(imp.module, imp.root)
    here = os.path.relpath(os.path.dirname(os.path.realpath(imp.path)), imp.root).split(os.sep)
    here = [] if here == ["."] else here
    bound = _Bound()
    top = {id(s) for s in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            called = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if called in _RUNTIME_IMPORTS:
                raise _Unread(f"imports a module by name at run time (line {node.lineno})")
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        found = _import_binds(node, target, here, imp)
        if found is None:
            continue
        for local, path in found:
            if id(node) not in top:
                raise _Unread(f"imports it inside a block (line {node.lineno}), which this reading does not follow")
            if len(ast_bindings(tree, local)) > 1:
                raise _Unread(f"binds `{local}` more than once")
            if path is None:
                bound.macro[local] = node.lineno
            else:
                bound.module[local] = path
    return bound


def _import_binds(node, target: list, here: list, imp: _Importer) -> Optional[list]:
    """(local name, None: the macro | the attribute path to the module) of each name the import statement binds
    to the macro or its module (``target``: the module's dotted parts; ``here``: the importer's folder's); None
    for a relative import from above the root."""
    found = []
    if isinstance(node, ast.ImportFrom):
        mod = node.module.split(".") if node.module else []
        if node.level:
            if node.level - 1 > len(here):
                return None
            parts, relative = here[: len(here) - (node.level - 1)] + mod, True
        else:
            parts, relative = mod, False

        def names_it(p):
            return bool(p) and (p == target if relative else target[-len(p):] == p)
        for a in node.names:
            if a.name == "*":
                if imp.exported and names_it(parts):
                    found.append((imp.name, None))
            elif a.name == imp.name and names_it(parts):
                found.append((a.asname or a.name, None))
            elif names_it(parts + [a.name]):
                found.append((a.asname or a.name, []))
    else:
        for a in node.names:
            p = a.name.split(".")
            if target[-len(p):] == p:
                found.append((a.asname, []) if a.asname else (p[0], p[1:]))
    return found


def _macro_calls(reader: _Reader, bound: _Bound, imp: _Importer, out: Sites) -> None:
    """Each call of the macro through the bound names, to ``out.sites`` as found; stops at a use that is not
    a call."""
    for node in ast.walk(reader.tree):
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)):
            continue
        if node.id in bound.macro:
            ref = node
        elif node.id in bound.module:
            ref = node
            for part in bound.module[node.id] + [imp.name]:
                par = reader.parents.get(ref)
                if not (isinstance(par, ast.Attribute) and par.value is ref and par.attr == part):
                    ref = None
                    break
                ref = par
            if ref is None:
                continue  # another name of the module (or the module itself read)
        else:
            continue
        par = reader.parents.get(ref)
        if not (isinstance(par, ast.Call) and par.func is ref):
            raise _Unread(f"uses the macro other than by a call at line {ref.lineno} (bound to another name or "
                          "passed on)")
        kernel, why = reader.kernel_of(par)
        out.sites.append(Site(imp.rel, par.lineno, par, kernel, why and f"the call at `{imp.rel}:{par.lineno}` {why}",
                              reader))


def _rebound_calls(tree: ast.Module, bound: _Bound, imp: _Importer, rules, out: Sites, depth: int,
                   seen: set) -> None:
    """The calls made by files importing the macro from the importer, which binds it at module level too (to
    ``out`` as found, ``_REEXPORT_DEPTH`` links deep)."""
    from .python.fast_scan import Undecided

    for local, line in bound.macro.items():
        # a name of the macro this file binds at module level: a third file may import it from here
        k = (os.path.realpath(imp.path), local, _star_binds(tree, local))
        if k in seen:
            continue
        if depth >= _REEXPORT_DEPTH:
            raise _Unread(f"binds the macro as `{local}` (line {line}), and files import it from there too deeply "
                          "to follow")
        try:
            more = call_sites(imp.path, local, k[2], rules, depth + 1, seen)
        except (OSError, subprocess.SubprocessError, Undecided) as e:
            raise _Unread(f"binds the macro as `{local}`, and the files importing it from there cannot be searched: "
                          f"{e}") from None
        if more is not None:
            out.sites.extend(more.sites)
            out.unread.extend(more.unread)


def ast_bindings(tree: ast.Module, name: str) -> list:
    """Every statement or target that binds ``name`` anywhere in the module."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.append(node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                bound = a.asname or (a.name.split(".")[0] if isinstance(node, ast.Import) else a.name)
                if bound == name or (a.name == "*" and isinstance(node, ast.ImportFrom)):
                    out.append(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            out.append(node)
        elif isinstance(node, ast.arg) and node.arg == name:
            out.append(node)
        elif isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            out.append(node)
    return out


# ---------------------------------------------------------------- the readings an importing call gives

def _argument(call: ast.Call, param: str, index) -> Optional[ast.expr]:
    for k in call.keywords:
        if k.arg == param:
            return k.value
    if index is not None and index < len(call.args):
        return call.args[index]
    return None


def dtype_reading(site: Site, q: dict) -> tuple[Optional[str], str]:
    """The element type the call passes for the macro's parameter (``q``: its name, position, whether it is
    a buffer or a pointer), read as the per-file analysis reads a caller's buffer; (None, why) where the text
    does not decide it."""
    from .python.fast_scan import Undecided
    from .python.fast_sizes import _NoFix

    call, at = site.call, f"`{site.file}:{site.line}`"
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None, f"the call at {at} passes *args or **kwargs"
    e = _argument(call, q["param"], q.get("index"))
    if e is None:
        return None, f"the call at {at} does not pass `{q['param']}` plainly"
    if q.get("data") and isinstance(e, ast.Name):
        buf = e.id
    elif not q.get("data") and isinstance(e, ast.Attribute) and e.attr == "data" and isinstance(e.value, ast.Name):
        buf = e.value.id
    else:
        return None, f"the call at {at} passes `{ast.unparse(e)}` for `{q['param']}`, not a buffer it can read"
    r = site.reader
    try:
        found = r.decls.decl_of(buf, call)
        if found is None:
            return None, f"the call at {at} passes `{buf}`, and no single declaration of it is visible there"
        ctx_node, decl = found
        dexpr = r.decls.decl_dtype(decl)
        if dexpr is None:
            fname = r.qualified(decl.func).rpartition(".")[2]
            d = r.rules.declarations[fname].get("default")
            if d is None:
                return None, f"the call at {at} passes `{buf}`, declared without a dtype"
            return r.rules.canonical_dtype(d), ""
        name, _ = r.decls.dtype_of_expr(dexpr, ctx_node)
    except (Undecided, _NoFix, AttributeError, KeyError):
        return None, f"the call at {at} passes `{buf}`, whose declaration this reading does not follow"
    if name is None:
        return None, f"the call at {at} passes `{buf}`, whose dtype `{ast.unparse(dexpr)}` is not known there"
    return name, ""


def merge_reading(site: Site, q: dict, calls_in_kernel: int, site_calls: set) -> tuple[Optional[bool], str]:
    """Whether the importing kernel around the call merges the macro's destination (``q``: the scope and the
    macro's own allocations, ``calls_in_kernel`` times; ``site_calls``: ids of the macro's calls), counted as
    the merge pass counts, bounded from above: False when it can have fewer than two allocations of the scope;
    True when it has at least two literal ones; (None, why) else."""
    from .python.fast_scan import Undecided

    if site.kernel is None:
        return None, site.why
    r, k = site.reader, site.kernel
    facts = r.rules.shared_memory
    scope, static = q["scope"], facts["static_scope"]
    allocations = facts["allocations"]
    workspaces = set(facts["workspaces"]["ops"])
    builtins = set(facts["functions"]["python_builtins"])
    at = f"`{k.name}` (`{site.file}:{k.lineno}`)"
    if q.get("allocs") is None:
        return None, f"the macro's own allocations are not bounded by its text, so {at} is not counted"
    count = q["allocs"] * calls_in_kernel
    literal = 0
    stack = list(k.body)
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return None, f"{at} defines `{getattr(n, 'name', 'a lambda')}` in its body, which is not counted"
        stack.extend(ast.iter_child_nodes(n))
        if not isinstance(n, ast.Call) or id(n) in site_calls:
            continue
        try:
            q_name = r.qualified(n.func)
        except Undecided:
            return None, f"{at} calls `{ast.unparse(n.func)}` (line {n.lineno}), which this reading does not resolve"
        if q_name is None:
            if isinstance(n.func, ast.Name) and n.func.id in builtins and not ast_bindings(r.tree, n.func.id):
                continue
            if isinstance(n.func, ast.Attribute):
                continue  # a method of a value the kernel holds (S.access_ptr(...))
            return None, f"{at} calls `{ast.unparse(n.func)}` (line {n.lineno}), which may allocate"
        mod, _, last = q_name.rpartition(".")
        if not (mod in r.mods or mod.split(".")[0] in ("tilelang", "tvm")):
            return None, f"{at} calls `{ast.unparse(n.func)}` (line {n.lineno}), which may allocate"
        if last in workspaces:
            return None, f"{at} calls `{last}` (line {n.lineno}), which may add a workspace of its own"
        spec = allocations.get(last)
        if spec is None or any(kw.arg == "data" for kw in n.keywords):
            continue
        arg = next((kw.value for kw in n.keywords if kw.arg == spec["keyword"]), None)
        if arg is None and len(n.args) > spec["position"]:
            arg = n.args[spec["position"]]
        lit = spec["default"] if arg is None else arg.value if isinstance(arg, ast.Constant) and \
            isinstance(arg.value, str) else None
        # only allocations of the destination's scope count: the merge pass merges the dynamic and the static
        # ones apart (0.1.7.post1's MergeSharedMemoryAllocations, as python/smem.py counts)
        if lit is None or lit == scope:
            count += 1  # an upper bound: a bool tile of alloc_shared is static, an unused one is dropped
            literal += lit == scope
    least = facts["min_allocations"]
    if count < least:
        return False, f"{at} has at most {count} {scope} allocation(s), never merged"
    if literal >= least and scope != static:
        return True, f"{at} has {literal} {scope} allocations, merged when they are used"
    return None, f"{at} may have {count} {scope} allocations, which would merge"


def _judge(sites: Sites, q: dict, macro: str) -> tuple[list, list, list]:
    """(agreeing grounds, unread reasons, disagreements) of the importing calls for one question."""
    unread = list(sites.unread)
    bad, agree = [], []
    per_kernel: dict = {}
    site_calls = {id(s.call) for s in sites.sites}
    for s in sites.sites:
        if s.kernel is not None:
            per_kernel[id(s.kernel)] = per_kernel.get(id(s.kernel), 0) + 1
    for s in sites.sites:
        if q.get("kind") == "dtype":
            got, why = dtype_reading(s, q)
            if got is None:
                unread.append(why)
            elif got != q["dtype"]:
                bad.append(f"`{s.file}:{s.line}` passes {got} for `{q['param']}` where this file's calls pass "
                           f"{q['dtype']}")
            else:
                agree.append(f"`{s.file}:{s.line}`")
        elif q.get("kind") == "merge":
            if s.kernel is None:
                unread.append(s.why)
                continue
            got, why = merge_reading(s, q, per_kernel[id(s.kernel)], site_calls)
            if got is None:
                unread.append(why)
            elif got != q["merged"]:
                bad.append(f"the call at `{s.file}:{s.line}`: {why}, where this file's kernels "
                           f"{'merge' if q['merged'] else 'do not merge'}")
            else:
                agree.append(f"`{s.file}:{s.line}`")
        else:
            unread.append("its question is not one this version reads")
    return agree, list(dict.fromkeys(unread)), bad


# ---------------------------------------------------------------- the engine's hook

_NOTE = re.compile(r" \(unsafe fix: rests on \d+ assumption\(s\)\)")


def settle(path: str, findings: list, rules_dir: Optional[str] = None) -> None:
    """Answer the importer question of every fix that rests on it (``Fix.importers``: assumption ->
    (macro, exported, reading)), in place: drop the assumptions the repository refutes and say on what
    ground; where an importing call gives another reading, take the fix away and name both readings."""
    rules = _LazyRules(rules_dir)
    for f in findings:
        fx = f.fix
        if fx is None or not fx.importers:
            continue
        st = _Settled()
        for a in fx.assumptions:
            q = fx.importers.get(a)
            if q is None:
                st.kept.append(a)
            else:
                _settle_assumption(path, a, q, rules, st)
        st.grounds.extend(st.agreed_grounds())
        if st.disagree:
            _take_fix_away(f, st.disagree)
        elif st.grounds or st.kept != fx.assumptions:
            _restate(f, st)


class _LazyRules:
    """The rules, loaded the first time an importing call is to be read (once per ``settle``)."""

    def __init__(self, rules_dir: Optional[str]):
        self.rules_dir, self.value = rules_dir, None

    def get(self):
        if self.value is None:
            from .rules import load_rules

            self.value = load_rules(self.rules_dir)
        return self.value


@dataclass
class _Settled:
    """What the repository says of one fix's importer assumptions, gathered over them in order."""

    kept: list = field(default_factory=list)  # the assumptions that stay, an answered one with why
    grounds: list = field(default_factory=list)  # why the dropped ones are dropped
    disagree: list = field(default_factory=list)  # importing calls that give another reading
    agreed: dict = field(default_factory=dict)  # (kind, root, macro, importers) -> [agreeing calls, readings]

    def agreed_grounds(self) -> list:
        """One ground per repository and macro whose importing calls all agree (or that never call it)."""
        return [f"the other files of the {kind} {root} that import the macro `{macro}` ({names}) "
                + (f"call it at {', '.join(calls)} with this file's readings ({'; '.join(whats)})"
                   if calls else "never call it")
                for (kind, root, macro, names), (calls, whats) in self.agreed.items()]


def _settle_assumption(path: str, a: str, q: tuple, rules: _LazyRules, st: _Settled) -> None:
    """Ask the repository one assumption's question (``q``: macro, exported, the reading) and add the answer to
    ``st``: kept (outside any repository, not searchable, calls not all read), a ground, or disagreements."""
    macro, exported = q[0], q[1]
    reading = q[2] if len(q) > 2 else None
    try:
        ans = importers_of(path, macro, exported)
        if ans is not None and ans.files and reading is not None:
            sites = call_sites(path, macro, exported, rules.get())
        else:
            sites = None
    except (OSError, subprocess.SubprocessError) as e:
        st.kept.append(f"{a} [the repository could not be searched: {e}]")
        return
    if ans is None:
        st.kept.append(a)  # outside any repository: nothing answers it
        return
    one = len(ans.files) == 1
    if not ans.files:
        g = f"no other file in the {ans.kind} {ans.root} imports the macro `{macro}`"
        if g not in st.grounds:
            st.grounds.append(g)
    elif sites is None:
        st.kept.append(f"{a}: {', '.join(f'`{x}`' for x in ans.files)} in the {ans.kind} {ans.root} "
                       f"import{'s' if one else ''} it, and {'its' if one else 'their'} calls are not read")
    else:
        agree, unread, bad = _judge(sites, reading, macro)
        names = ", ".join(f"`{x}`" for x in ans.files)
        if bad:
            st.disagree.extend(b for b in bad if b not in st.disagree)
        elif unread:
            st.kept.append(f"{a}: {names} in the {ans.kind} {ans.root} import{'s' if one else ''} it, and not every "
                           f"call is read: {'; '.join(unread)}")
        else:
            what = (f"{reading['dtype']} for `{reading['param']}`" if reading.get("kind") == "dtype"
                    else f"kernels that {'merge' if reading['merged'] else 'do not merge'} {reading['scope']} memory")
            g = st.agreed.setdefault((ans.kind, ans.root, macro, names), [[], []])
            g[0].extend(x for x in agree if x not in g[0])
            g[1].append(what)


def _take_fix_away(f, disagree: list) -> None:
    """An importing call reads the macro otherwise: the finding is left for a person and names each call."""
    from . import codes

    f.fix = None
    f.code = codes.LEGACY_CALL_MANUAL
    f.message = ("legacy ptx_cp_async cannot be migrated automatically: the files importing the macro call "
                 "it with another reading than this file's: " + "; ".join(disagree)
                 + "; one rewrite cannot serve them all")


def _restate(f, st: _Settled) -> None:
    """The fix keeps only the assumptions left; its message counts them and names the grounds (safe when none
    is left)."""
    from .findings import Applicability

    fx = f.fix
    fx.assumptions = st.kept
    fx.importers = {}
    note = f" (unsafe fix: rests on {len(st.kept)} assumption(s))" if st.kept else ""
    m = _NOTE.sub(lambda _: note, f.message, count=1)
    if not st.kept:
        fx.applicability = Applicability.SAFE
    if st.grounds:
        m += ("; " if st.kept else "; safe: ") + "; ".join(st.grounds)
    f.message = m
