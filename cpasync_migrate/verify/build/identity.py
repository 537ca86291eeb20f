"""The identity of a kernel's text: what a built kernel is, and what its meaning depends on.

:class:`BuiltKernel` is one prim_func's result (its IR or the reason it has none).
:func:`fingerprint` is the text of the prim_func and of everything it can reach in the module
(equal fingerprints mean the kernel's meaning cannot have changed); :func:`definitions` maps
each name to the statements that bind it, for it.  :func:`foreign_construct` finds a
TileLang-only construct reached through TVM's namespace (the text would not build).
"""
from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Optional

from ..ir import Kernel, Unsupported
from .module import KernelSource, MacroDef, ModuleInfo, Unknown, bound_names


@dataclass
class BuiltKernel:
    qualname: str
    line: int
    kernel: Optional[Kernel]
    error: Optional[Unsupported]
    fingerprint: str = ""  # the prim_func's text and everything it can reach
    foreign: str = ""  # a TileLang-only construct spelled through TVM's namespace (the text would not build)
    int_params: dict = field(default_factory=dict)  # factory parameters with integer defaults, not bound


def definitions(tree: ast.Module) -> dict:
    """Every statement of the module that binds a name, by name (at any depth, in text order)."""
    out: dict = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            for n in bound_names(node):
                out.setdefault(n, []).append(node)
    for v in out.values():
        v.sort(key=lambda n: (n.lineno, n.col_offset))
    return out


def _names_in(node) -> set:
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
    return out


def _free_names(fn) -> set:
    """Names a function mentions but does not bind itself (parameters and local bindings excluded)."""
    local = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
    for n in ast.walk(fn):
        if n is not fn and isinstance(n, ast.stmt):
            local.update(bound_names(n))
    return _names_in(fn) - local


# A definition's text read from the text's lines split once (environment CPASYNC_MIGRATE_VERIFY_SEGMENTS=0: by
# ast.get_source_segment, as before); tests/test_verify_identity.py checks both give the same text.
SEGMENTS = os.environ.get("CPASYNC_MIGRATE_VERIFY_SEGMENTS", "1") != "0"


@lru_cache(maxsize=4)
def _lines(text: str) -> list:
    """``text`` split after each ``\r\n``, ``\r`` or ``\n`` (as ``ast.get_source_segment`` splits it), once per
    text: that function splits the whole text again at every call, character by character, and a module of many
    kernels asked it for each definition each kernel reaches (quadratic: 200 kernels in 310 kB never ended)."""
    return re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)


def _segment(text: str, node) -> Optional[str]:
    """``ast.get_source_segment(text, node)`` from the lines split once (``_lines``)."""
    end_line, end_col = getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)
    if end_line is None or end_col is None:
        return None
    lines = _lines(text)
    first, last = node.lineno - 1, end_line - 1
    if first == last:
        return lines[first].encode()[node.col_offset:end_col].decode()
    return "".join([lines[first].encode()[node.col_offset:].decode(), *lines[first + 1:last],
                    lines[last].encode()[:end_col].decode()])


def _def_text(text: str, node) -> str:
    if isinstance(node, ast.For):
        return "for " + ast.unparse(node.target) + " in " + ast.unparse(node.iter)
    if isinstance(node, ast.With):
        return "with " + ", ".join(ast.unparse(i) for i in node.items)
    deco = "".join("@" + ast.unparse(d) + "\n" for d in getattr(node, "decorator_list", []))
    segment = _segment(text, node) if SEGMENTS else ast.get_source_segment(text, node)
    return deco + (segment or ast.unparse(node))


def imports(tree: ast.Module) -> list:
    """Every import statement of the module, as text (in ``ast.walk`` order)."""
    return [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]


def fingerprint(text: str, ks: KernelSource, tree: Optional[ast.Module] = None, defs: Optional[dict] = None,
                imported: Optional[list] = None) -> str:
    """The text of the prim_func and of everything it can reach: every statement anywhere in the module
    that binds a name the prim_func (or, transitively, such a statement) mentions, every import, and the
    headers of the enclosing factories.  Equal fingerprints mean the kernel's meaning cannot have changed."""
    parts = [_def_text(text, ks.node)]
    for f in ks.factory:
        parts.append("factory " + f.name + "(" + ast.unparse(f.args) + ")")
    if tree is not None:
        defs = defs if defs is not None else definitions(tree)
        parts.extend(imported if imported is not None else imports(tree))
        seen_nodes: set = set()
        todo = list(_free_names(ks.node))
        for f in ks.factory:
            todo.extend(_names_in(f.args))
            todo.extend(_names_in(ast.Module(body=f.decorator_list, type_ignores=[])))
        seen_names: set = set()
        reached = []
        while todo:
            n = todo.pop()
            if n in seen_names:
                continue
            seen_names.add(n)
            for d in defs.get(n, []):
                if id(d) in seen_nodes or d is ks.node:
                    continue
                seen_nodes.add(id(d))
                reached.append(d)
                if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and \
                        any(d is f for f in ks.factory):
                    continue  # a factory's body is reached through the names it binds
                if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    todo.extend(_free_names(d))
                    todo.extend(_names_in(ast.Module(body=d.decorator_list, type_ignores=[])))
                elif isinstance(d, (ast.For, ast.With)):
                    todo.extend(_names_in(ast.Module(body=[ast.Expr(d.iter)] if isinstance(d, ast.For) else
                                                     [ast.Expr(i.context_expr) for i in d.items], type_ignores=[])))
                else:
                    todo.extend(_names_in(d))
        reached.sort(key=lambda d: (d.lineno, d.col_offset))
        for d in reached:
            if any(d is f for f in ks.factory):
                continue
            parts.append(_def_text(text, d))
    for name in sorted(ks.env):
        v = ks.env[name]
        if isinstance(v, MacroDef):
            parts.append(name + ":" + _def_text(text, v.node))
        elif isinstance(v, Unknown):
            parts.append(f"{name}=?{v.reason}")
        else:
            parts.append(f"{name}={v!r}")
    return "\n".join(parts)


# TileLang's own language constructs: TVM's TVMScript namespace (tvm.script.tir) has none of them
TILELANG_ONLY = {"Kernel", "alloc_shared", "alloc_fragment", "alloc_local", "Parallel", "Pipelined", "copy", "fill",
                 "clear", "access_ptr", "gemm", "Tensor", "get_thread_binding", "use_swizzle", "annotate_layout"}


def foreign_construct(mod: ModuleInfo, ks: KernelSource) -> str:
    """A TileLang-only construct the kernel (or a macro it sees) reaches through ``tvm``: the text would not build."""
    nodes = [ks.node] + [m.node for m in ks.macros.values()]
    for node in nodes:
        for n in ast.walk(node):
            if isinstance(n, ast.Attribute) and n.attr in TILELANG_ONLY:
                q = mod.qualname(n)
                if q and q.split(".")[0] == "tvm":
                    return f"{ast.unparse(n)} resolves to {q}, which TVM does not define (line {n.lineno})"
    return ""
