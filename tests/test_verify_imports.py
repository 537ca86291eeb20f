"""The package's import structure: the GPU runner stands alone, and no module-level import loop exists.

The runner (``cpasync_migrate.verify.gpu``) runs on a GPU machine that has numpy and cupy and none of
the migration's front ends, so importing it must load neither libcst nor tree-sitter nor the engine,
nor the verifier's own front end (the ``verify/build/`` package).  The import graph of the package, read from
the source with ``ast`` (never by importing it), has no cycle among module-level imports; imports
inside functions are reported separately.  No module of the package is one ``.gitignore`` matches
(hatchling would leave it out of the wheel).
"""
from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "cpasync_migrate"
RUNNER = "cpasync_migrate.verify.gpu"
FRONT_ENDS = ("libcst", "tree_sitter", "cpasync_migrate.engine", "cpasync_migrate.python", "cpasync_migrate.cpp",
              "cpasync_migrate.verify.build")


# ---------------------------------------------------------------------------------------------- runtime
def imported_by(module: str) -> set[str]:
    """Every module ``python -X importtime -c 'import MODULE'`` reports, in a fresh interpreter."""
    r = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], capture_output=True,
                       text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    out = set()
    for line in r.stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip()
            if name != "package":  # the header line
                out.add(name)
    return out


def _front_ends(mods: set[str]) -> list[str]:
    return sorted(m for m in mods if any(m == f or m.startswith(f + ".") for f in FRONT_ENDS))


def test_the_runner_imports_no_front_end():
    mods = imported_by(RUNNER)
    assert RUNNER in mods and "numpy" in mods  # the listing is read right
    assert _front_ends(mods) == []


def test_the_front_end_check_sees_a_front_end():
    # the same reading of -X importtime finds tree-sitter behind the C++ front end, and the verifier's
    # own front end behind the bundle writer: the test above could fail
    assert "tree_sitter" in _front_ends(imported_by("cpasync_migrate.cpp"))
    assert "cpasync_migrate.verify.build" in _front_ends(imported_by("cpasync_migrate.verify.bundle"))


def test_the_runner_starts_where_libcst_and_tree_sitter_cannot_be_imported():
    block = textwrap.dedent("""
        import runpy, sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("libcst", "tree_sitter", "tree_sitter_cpp"):
                    raise ImportError(f"{name} is not installed here")
        sys.meta_path.insert(0, Block())
        sys.argv = ["gpu", "--help"]
        runpy.run_module("cpasync_migrate.verify.gpu", run_name="__main__")
    """)
    r = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Run a cpasync-migrate GPU bundle" in r.stdout


# ---------------------------------------------------------------------------------------------- static graph
def module_names(package_dir: Path) -> dict[str, Path]:
    """Dotted name -> file for every module of the package under ``package_dir``."""
    base = package_dir.parent
    out = {}
    for p in sorted(package_dir.rglob("*.py")):
        parts = list(p.relative_to(base).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def _imports(tree: ast.Module):
    """(node, inside a function) for every import statement of a module."""
    def walk(node, in_fn):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, in_fn
            yield from walk(child, in_fn or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    yield from walk(tree, False)


def import_graph(package_dir: Path) -> tuple[dict, dict]:
    """(module-level edges, edges of imports inside functions) among the package's own modules.

    ``from X import a`` is an edge to ``X.a`` where that is a module, else to ``X``; importing a
    submodule also runs its parent packages, but that edge is not drawn (every package's
    ``__init__`` would otherwise be in a loop with the submodules it imports)."""
    mods = module_names(package_dir)
    top, lazy = {m: set() for m in mods}, {m: set() for m in mods}
    for name, path in mods.items():
        is_pkg = path.name == "__init__.py"
        here = name if is_pkg else name.rpartition(".")[0]
        for node, in_fn in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    base = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                    frm = ".".join(base + ([node.module] if node.module else []))
                else:
                    frm = node.module or ""
                for a in node.names:
                    targets.append(f"{frm}.{a.name}" if f"{frm}.{a.name}" in mods else frm)
            for t in targets:
                while t and t not in mods:  # "import a.b.c" of a package module: its longest known prefix
                    t = t.rpartition(".")[0]
                if t and t != name:
                    (lazy if in_fn else top)[name].add(t)
    return top, lazy


def cycles(edges: dict) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out)


def reachable(edges: dict, start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        v = todo.pop()
        if v not in seen:
            seen.add(v)
            todo += edges.get(v, ())
    return seen


def test_no_module_level_import_cycle():
    top, _ = import_graph(PACKAGE)
    assert len(top) > 30 and top["cpasync_migrate.verify.bundle"]  # the graph was read
    assert cycles(top) == []


def test_imports_inside_functions_report():
    top, lazy = import_graph(PACKAGE)
    both = {m: top[m] | lazy[m] for m in top}
    found = cycles(both)
    print(f"import cycles through imports inside functions (shown with -s or -rP): {found or 'none'}")
    # the bundle's modules and the verifier's front door sit in none of them (the loop engine -> verify ->
    # gpu -> bundle -> engine is gone), and nothing the runner can reach, even lazily, is a front end
    gpu_side = {"cpasync_migrate.verify", "cpasync_migrate.verify.verifier", "cpasync_migrate.verify.bundle",
                "cpasync_migrate.verify.bundle_format", RUNNER}
    assert [c for c in found if gpu_side & set(c)] == []
    assert _front_ends(reachable(both, RUNNER)) == []


def test_the_cycle_check_finds_a_cycle(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from . import a\n")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("import pkg.c\n\ndef f():\n    from .. import a\n")
    (pkg / "c.py").write_text("from pkg.sub.b import x\n")
    top, lazy = import_graph(pkg)
    assert top["pkg.a"] == {"pkg.sub.b"} and lazy["pkg.sub.b"] == {"pkg.a"}
    assert cycles(top) == [["pkg.c", "pkg.sub.b"]]
    assert cycles({m: top[m] | lazy[m] for m in top}) == [["pkg.a", "pkg.c", "pkg.sub.b"]]


def test_no_private_name_crosses_a_verify_module_border():
    """What the verifier's modules share they import by public names, and no module makes another's
    object without its constructor to borrow a method (``Interpreter.__new__`` once lent ``binop``)."""
    own = {m.rpartition(".")[2] for m in module_names(PACKAGE / "verify")}
    bad = []
    files = sorted((PACKAGE / "verify").rglob("*.py"))  # the modules of verify/build/ too
    assert PACKAGE / "verify" / "build" / "statements.py" in files
    for p in files:
        where = p.relative_to(PACKAGE / "verify").as_posix()
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                bad += [f"{where}:{node.lineno}: {a.name}" for a in node.names if a.name.startswith("_")]
            elif isinstance(node, ast.Attribute) and node.attr == "__new__":
                bad.append(f"{where}:{node.lineno}: __new__")
            elif (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                  and isinstance(node.value, ast.Name) and node.value.id in own):
                bad.append(f"{where}:{node.lineno}: {node.value.id}.{node.attr}")
    assert bad == []


def test_no_module_of_the_package_is_ignored_by_git():
    """hatchling leaves out of the wheel and the sdist every file the root ``.gitignore`` matches, tracked
    or not (an unanchored ``build/`` there once matched the ``verify/build/`` package)."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    files = sorted(p.relative_to(ROOT).as_posix() for p in PACKAGE.rglob("*.py"))
    assert "cpasync_migrate/verify/build/statements.py" in files
    r = subprocess.run(["git", "check-ignore", "--no-index", "--stdin"], input="\n".join(files) + "\n",
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 1 and r.stdout == "", r.stdout + r.stderr  # 1: no path is ignored
