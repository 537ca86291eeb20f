"""Whether another file of the repository imports a module-level macro: the one cross-file question.

What: a fix of a call inside a public module-level ``T.macro`` rests on "only this file's kernels call
the macro".  The repository that holds the file answers it: its git work tree (``git grep -l -F`` over
tracked and untracked, not ignored, Python files), else the folder of its nearest ``pyproject.toml``
(walked by ``discovery``).  A file that names the macro and imports it from this module (``from
pkg.stage import stage``, ``from .stage import *`` when the name is exported, ``import pkg.stage``,
``importlib``) is an importer.  No importer: the assumption is dropped and the finding names the ground;
an importer: the assumption stays and names the importing files; outside any repository it stays.

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

_MAX_BYTES = 4 << 20  # a larger candidate is counted as an importer unread
_ROOTS: dict = {}  # folder -> (root, kind) or None, for one run
_ANSWERS: dict = {}  # (root, module path, name) -> Answer, for one run
_GIT_ENV = {"GIT_PAGER": "cat", "PAGER": "cat", "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"}


@dataclass
class Answer:
    root: str
    kind: str  # "git work tree" | "project folder"
    files: list = field(default_factory=list)  # importers, relative to the root


def forget() -> None:
    """A run starts: files may have come or gone."""
    _ROOTS.clear()
    _ANSWERS.clear()


def repository_of(path: str) -> Optional[tuple[str, str]]:
    """(root, kind) of the repository that holds ``path``; None outside any."""
    folder = os.path.dirname(os.path.abspath(path))
    if folder in _ROOTS:
        return _ROOTS[folder]
    found = None
    try:
        r = subprocess.run(["git", "--no-pager", "-c", "core.fsmonitor=false", "rev-parse", "--show-toplevel"],
                           cwd=folder, capture_output=True, timeout=30, env={**os.environ, **_GIT_ENV})
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
        r = subprocess.run(["git", "--no-pager", "-c", "core.fsmonitor=false", "grep", "--untracked", "-l", "-z",
                            "-F", "-e", name, "--", "*.py", "*.pyi"],
                           cwd=root, capture_output=True, timeout=120, env={**os.environ, **_GIT_ENV})
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


# ---------------------------------------------------------------- the engine's hook

_NOTE = re.compile(r" \(unsafe fix: rests on \d+ assumption\(s\)\)")


def settle(path: str, findings: list) -> None:
    """Answer the importer question of every fix that rests on it (``Fix.importers``: assumption ->
    (macro, exported)), in place: drop the assumptions the repository refutes and say on what ground."""
    for f in findings:
        fx = f.fix
        if fx is None or not fx.importers:
            continue
        grounds = []
        kept = []
        for a in fx.assumptions:
            q = fx.importers.get(a)
            if q is None:
                kept.append(a)
                continue
            macro, exported = q
            try:
                ans = importers_of(path, macro, exported)
            except (OSError, subprocess.SubprocessError) as e:
                kept.append(f"{a} [the repository could not be searched: {e}]")
                continue
            if ans is None:
                kept.append(a)  # outside any repository: nothing answers it
            elif ans.files:
                kept.append(f"{a}: {', '.join(f'`{x}`' for x in ans.files)} in the {ans.kind} {ans.root} "
                            f"import{'s' if len(ans.files) == 1 else ''} it, and {'its' if len(ans.files) == 1 else 'their'} "
                            "calls are not read")
            else:
                g = f"no other file in the {ans.kind} {ans.root} imports the macro `{macro}`"
                if g not in grounds:
                    grounds.append(g)
        if not grounds and kept == fx.assumptions:
            continue
        from .findings import Applicability

        fx.assumptions = kept
        fx.importers = {}
        note = f" (unsafe fix: rests on {len(kept)} assumption(s))" if kept else ""
        m = _NOTE.sub(lambda _: note, f.message, count=1)
        if not kept:
            fx.applicability = Applicability.SAFE
        if grounds:
            m += ("; " if kept else "; safe: ") + "; ".join(grounds)
        f.message = m
