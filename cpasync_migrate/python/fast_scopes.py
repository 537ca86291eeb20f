"""Which scope binds a name read somewhere, for the fast pass's facts (``fast_legacy.py``), from a ``fast_scan.Scan``.

``resolve`` gives what libcst's scopes give for a name read at a node: the scope that binds it and its bindings
there.  A scope *holds* a node when the node lies in a function's or class's body (its decorators, defaults and
annotations are evaluated around it) or anywhere in a lambda or comprehension; a binding belongs to the innermost
scope that holds it.

``INDEX`` (environment ``CPASYNC_MIGRATE_FAST_SCOPE_INDEX=0`` turns it off) answers those questions from an index
built once per scan (``_Index``): the holding extents sorted, each with the innermost extent around it, so the
scopes around a node are found by one bisection and a walk outwards, each binding's scope is found once, and each
name's bindings are grouped by scope once.  The index is used only where the extents nest or are apart (checked
when it is built: no two overlap, none is repeated, none touches another); then the scopes holding a node are
exactly the chain it walks, and every answer is the one the scan over all scopes gives (off: every question scans
every scope, as before).  ``tests/test_fast_speedups.py`` checks both give the same findings and edits.
"""
from __future__ import annotations

import ast
import bisect
import os
from typing import Optional

INDEX = os.environ.get("CPASYNC_MIGRATE_FAST_SCOPE_INDEX", "1") != "0"

_FUNC = (ast.FunctionDef, ast.AsyncFunctionDef)


def _start(node) -> tuple:
    return node.lineno, node.col_offset


def _end(node) -> tuple:
    return node.end_lineno, node.end_col_offset


def _inside(node, outer) -> bool:
    return _start(outer) <= _start(node) and _end(node) <= _end(outer)


def _holds(kind: str, sc, node) -> bool:
    """The scope ``sc`` holds ``node``: a function's or class's body, a lambda or comprehension whole."""
    if kind in ("def", "class"):
        return _start(sc.body[0]) <= _start(node) and _end(node) <= _end(sc)
    return _inside(node, sc)


class _Index:
    """The holding extents of a scan's scopes, sorted (outer first where two start together), each with the
    position of the innermost extent around it; ``laminar`` False where two extents overlap, repeat or touch
    (then the index is not used)."""

    def __init__(self, scopes: list):
        spans = []
        for i, (k, sc) in enumerate(scopes):
            first = sc.body[0] if k in ("def", "class") else sc
            spans.append((_start(first), _end(sc), i))
        spans.sort(key=lambda x: (x[0], (-x[1][0], -x[1][1])))
        self.starts = [s for s, _, _ in spans]
        self.ends = [e for _, e, _ in spans]
        self.order = [i for _, _, i in spans]  # position in the sorted list -> index in scopes
        self.up: list = []
        self.laminar = True
        stack: list = []
        for j, (s, e, _) in enumerate(spans):
            while stack and self.ends[stack[-1]] < s:
                stack.pop()
            if stack and (self.ends[stack[-1]] < e or (self.starts[stack[-1]], self.ends[stack[-1]]) == (s, e)):
                self.laminar = False  # overlapping or repeated extents
            self.up.append(stack[-1] if stack else None)
            stack.append(j)
        self.owners: dict = {}  # id(binding node) -> its scope
        self.names: dict = {}  # name -> its bindings grouped by scope (None: not followed here)
        self.around: dict = {}  # id(node) -> the scopes holding it, as indices into scopes in their order

    def holding(self, node) -> list:
        """Indices (into the scan's scopes, in their order) of the scopes whose extent holds ``node``."""
        got = self.around.get(id(node))
        if got is not None:
            return got
        p, q = _start(node), _end(node)
        j = bisect.bisect_right(self.starts, p) - 1
        while j is not None and j >= 0 and self.ends[j] < p:
            j = self.up[j]
        while j is not None and j >= 0 and self.ends[j] < q:
            j = self.up[j]
        out = []
        while j is not None and j >= 0:
            out.append(self.order[j])
            j = self.up[j]
        out.sort()
        self.around[id(node)] = out
        return out


def _index(s) -> Optional[_Index]:
    memo = s.memo
    ix = memo.get("scopes")
    if ix is None:
        ix = memo["scopes"] = _Index(s.scopes)
    return ix if ix.laminar else None


def owner(binding, s):
    """The scope a binding binds in (a function, class, lambda or comprehension node), or None for the module."""
    kind, node, extra = binding
    if kind == "param":
        return extra
    ix = _index(s) if INDEX else None
    if ix is not None:
        got = ix.owners.get(id(node), ix)
        if got is ix:
            found = [s.scopes[i][1] for i in ix.holding(node) if s.scopes[i][1] is not node]
            got = ix.owners[id(node)] = _innermost(found)
        return got
    best = None
    for k, sc in s.scopes:
        if sc is not node and _holds(k, sc, node) and (best is None or _inside(sc, best)):
            best = sc
    return best


def _innermost(found: list):
    """The scan's choice among the scopes holding a node, in the scan's order."""
    best = None
    for sc in found:
        if best is None or _inside(sc, best):
            best = sc
    return best


def visible(node, s) -> Optional[list]:
    """The scopes a name read at ``node`` is looked up in, innermost first (a class's only from its own body);
    None inside a lambda or comprehension (libcst decides)."""
    ix = _index(s) if INDEX else None
    if ix is not None:
        around = [s.scopes[i] for i in ix.holding(node)]
    else:
        around = [(k, sc) for k, sc in s.scopes if _holds(k, sc, node)]
    if any(k in ("lambda", "comp") for k, _ in around):
        return None
    around.sort(key=lambda x: (x[1].lineno, x[1].col_offset), reverse=True)
    return [sc for i, (k, sc) in enumerate(around) if i == 0 or k != "class"]


def _grouped(name: str, s) -> Optional[dict]:
    """id(scope) -> (scope, the name's bindings there, in source order); None where this pass does not follow
    Python's rule exactly (``global``, ``nonlocal``, ``del``, match captures, a binding in a lambda or
    comprehension)."""
    bs = s.bindings.get(name, [])
    if any(k == "uncertain" for k, _, _ in bs):
        return None
    owners: dict = {}
    for b in bs:
        sc = owner(b, s)
        if sc is not None and type(sc) not in _FUNC and type(sc) is not ast.ClassDef:
            return None  # bound in a lambda or comprehension (a walrus there binds around it)
        owners.setdefault(id(sc), (sc, []))[1].append(b)
    return owners


def resolve(name: str, at, s) -> Optional[tuple]:
    """What libcst's scopes give for ``name`` read at ``at``: (the scope that binds it, None for the module; its
    bindings there, in source order); None where this pass does not follow Python's rule exactly (``global``,
    ``nonlocal``, ``del``, match captures, a comprehension or lambda around)."""
    ix = _index(s) if INDEX else None
    if ix is not None:
        owners = ix.names.get(name, ix)
        if owners is ix:
            owners = ix.names[name] = _grouped(name, s)
    else:
        owners = _grouped(name, s)
    if owners is None:
        return None
    chain = visible(at, s)
    if chain is None:
        return None
    for sc in chain:
        if id(sc) in owners:
            return owners[id(sc)]
    return owners.get(id(None), (None, []))
