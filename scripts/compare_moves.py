"""Check a pure move: every function's syntax tree, by qualified name, on two revisions.

    python scripts/compare_moves.py BASE [HEAD] [--path cpasync_migrate/verify ...]

Reads the ``.py`` files under each ``--path`` (default: the package) at git revision BASE and at HEAD
(default: the working tree), ``ast.dump``s every function and method (docstrings left out, since a move
rewords them) under its qualified name (``module:Class.method``, wherever in the tree it lives), and
prints the names only one side has and the names whose trees differ.  A function split by step shows as
its changed body plus its new helpers; everything else the move touched must not appear.
Exit status: 0 when both sides hold the same trees, 1 otherwise.
"""
from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _files(rev, paths) -> dict:
    if rev is None:
        found = [f for d in paths for f in ([ROOT / d] if (ROOT / d).is_file() else sorted((ROOT / d).rglob("*.py")))]
        return {str(f.relative_to(ROOT)): f.read_text() for f in found}
    names = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev, "--", *paths], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split()
    return {n: subprocess.run(["git", "show", f"{rev}:{n}"], cwd=ROOT, check=True, capture_output=True,
                              text=True).stdout for n in names if n.endswith(".py")}


def _strip_doc(fn):
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        fn.body = body[1:] or [ast.Pass()]
    return fn


def functions(files: dict) -> dict:
    """{qualified name: ast.dump of the function without its docstring}; the module is the file's stem path."""
    out = {}
    for path, text in files.items():
        module = path[:-3].replace("/", ".")

        def walk(node, prefix):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    q = f"{prefix}{child.name}"
                    out[f"{module}:{q}"] = ast.dump(_strip_doc(child))
                    walk(child, q + ".")
                elif isinstance(child, ast.ClassDef):
                    walk(child, f"{prefix}{child.name}.")
        walk(ast.parse(text), "")
    return out


def compare(before: dict, after: dict) -> list[str]:
    lines = []
    moved_from = {d: q for q, d in before.items()}
    for q in sorted(set(before) | set(after)):
        if q in before and q in after:
            if before[q] != after[q]:
                lines.append(f"changed  {q}")
        elif q in after:
            src = moved_from.get(after[q])
            lines.append(f"moved    {src} -> {q}" if src and src not in after else f"added    {q}")
        elif before[q] not in after.values():
            lines.append(f"removed  {q}")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base")
    ap.add_argument("head", nargs="?")
    ap.add_argument("--path", action="append")
    a = ap.parse_args(argv)
    paths = a.path or ["cpasync_migrate"]
    lines = compare(functions(_files(a.base, paths)), functions(_files(a.head, paths)))
    print("\n".join(lines) if lines else "same syntax trees")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
