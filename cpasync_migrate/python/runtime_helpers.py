"""CPA007's fix (docs/codes/CPA007.md): a runtime helper that a code generator prints calls of,
given one pointer per side.

TileLang's CuTeDSL backend prints ``tl.cp_async_gs(size, dst, dst_offset, src, src_offset)``
(and ``tl.cp_async_gs_conditional(..., cond)``); the Python runtime
(``tilelang/contrib/cutedsl/cpasync.py``) adds each offset to its pointer.  Under access
pointers the printer passes one pointer per side, the offset already applied
(``&((T*)data)[offset]``), and the helper must stop adding it: upstream's 28ada604f (PR #1746)
made exactly that change, ``def cp_async_gs(size, dst, src)``.

The text decides the new helper when, for every offset parameter ``P_offset`` (its name the
pointer parameter's name and the suffix of ``[helpers] offset_param``, right after it):

* every read of ``P_offset`` is either ``L + P_offset`` with ``L`` the parameter ``P`` itself or
  a local whose every binding in the helper is ``L = P`` or ``L = P.<attribute>`` (upstream's
  ``dst_ptr = dst.iterator`` / ``dst_ptr = dst``): it becomes ``L``; or a positional argument
  right after ``P`` in a call of another helper of the same module that is migrated too, at
  that helper's own offset place (``cp_async_gs(size, dst, dst_offset, ...)`` inside
  ``cp_async_gs_conditional``): the argument is dropped, as the callee drops the parameter;
* it is read at least once (a helper that ignores the offset would now see it applied), never
  bound again, and no parameter has a default value or is keyword-only or variadic.

Then the offset parameters are deleted from the signature.  The fix is unsafe alone (it assumes
the printer passes the offset-applied pointer); exact given the change set when the set also
migrates the printer that prints its calls (``sets.py``): then the old helper's
``ptr(P) + off`` and the new one's ``ptr(P')`` name the same address, ``P'`` being the access
pointer the printer now prints.

This module reads the text with the standard library's ``ast`` and is used by both the libcst
front end (``definitions.py``) and the fast pass (``definitions_ast.py``), so the two give the
same fix by construction.  Facts come from ``rules/python_api.toml`` (``[helpers]``).
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Optional

from ..findings import line_starts


@dataclass
class Plan:
    """The edits (character offsets into the module's text) of one helper's fix, or why there is none."""

    edits: Optional[list]  # [(start, end, replacement)]
    why: Optional[str]


class _Pos:
    def __init__(self, text: str):
        self.text = text
        self.starts = line_starts(text)
        self.lines = text.split("\n")

    def offset(self, line: int, byte_col: int) -> int:
        return self.starts[line - 1] + len(self.lines[line - 1].encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def start(self, node) -> int:
        return self.offset(node.lineno, node.col_offset)

    def end(self, node) -> int:
        return self.offset(node.end_lineno, node.end_col_offset)


def plans(text: str, facts: dict) -> dict:
    """Helper name -> :class:`Plan`, for every module-level legacy helper of ``text`` ({} when none)."""
    helpers_facts = facts["helpers"]
    names = set(helpers_facts["names"])
    offset_re = re.compile(helpers_facts["offset_param"])
    if not names:
        return {}
    if re.search(r"\r(?!\n)", text):
        why = "the file has a lone carriage return, whose lines the standard library counts otherwise"
        return {n: Plan(None, why) for n in names}
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return {n: Plan(None, "the standard library cannot parse the file") for n in names}
    pos = _Pos(text)
    defs = {}
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name in names:
            if stmt.name in defs:
                defs[stmt.name] = None  # defined twice: which one runs depends on order
            else:
                defs[stmt.name] = stmt
    pairs = {}  # helper -> {offset param index: pointer param name}
    out: dict = {}
    for name, fdef in defs.items():
        if fdef is None:
            out[name] = Plan(None, f"the module defines `{name}` more than once")
            continue
        got = _pairs(fdef, offset_re)
        if isinstance(got, str):
            out[name] = Plan(None, got)
        else:
            pairs[name] = got
    pending = {}
    for name, p in pairs.items():
        res = _uses(defs[name], p, pairs, pos)
        if isinstance(res, str):
            out[name] = Plan(None, res)
        else:
            pending[name] = res
    # a forward to another helper is right only when that helper is migrated too
    changed = True
    while changed:
        changed = False
        for name, (edits, callees) in list(pending.items()):
            bad = [c for c in callees if c not in pending]
            if bad:
                why = out[bad[0]].why if bad[0] in out else "it is not migrated"
                out[name] = Plan(None, f"it forwards its offsets to `{bad[0]}`, which is left ({why})")
                del pending[name]
                changed = True
    for name, (edits, _) in pending.items():
        out[name] = Plan(sorted(edits), None)
    return out


def _pairs(fdef, offset_re) -> "dict | str":
    a = fdef.args
    if a.posonlyargs or a.vararg is not None or a.kwonlyargs or a.kwarg is not None:
        return "its signature has positional-only, variadic or keyword-only parameters"
    if a.defaults:
        return "a parameter has a default value, so a caller may leave it out"
    params = [x.arg for x in a.args]
    out = {}
    for i, p in enumerate(params):
        if not offset_re.search(p):
            continue
        ptr = offset_re.sub("", p)
        if i == 0 or params[i - 1] != ptr:
            return f"the offset parameter `{p}` does not follow a pointer parameter `{ptr}`"
        out[i] = ptr
    return out


def _parents(fdef) -> dict:
    par = {}
    for n in ast.walk(fdef):
        for c in ast.iter_child_nodes(n):
            par[c] = n
    return par


def _derived(fdef, ptr: str, params: list) -> set:
    """Locals every binding of which is ``L = ptr`` or ``L = ptr.<attribute>``."""
    ok: dict = {}
    par = _parents(fdef)
    for n in ast.walk(fdef):
        if not (isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))):
            continue
        p = par.get(n)
        good = isinstance(n.ctx, ast.Store) and isinstance(p, ast.Assign) and p.targets == [n] and (
            (isinstance(p.value, ast.Name) and p.value.id == ptr)
            or (isinstance(p.value, ast.Attribute) and isinstance(p.value.value, ast.Name) and p.value.value.id == ptr))
        ok[n.id] = ok.get(n.id, True) and good
    # names bound in a nested scope or declared global/nonlocal are not this helper's plain locals
    for n in ast.walk(fdef):
        if isinstance(n, (ast.Global, ast.Nonlocal)):
            for x in n.names:
                ok[x] = False
    return {k for k, v in ok.items() if v and k not in params}


def _uses(fdef, pairs: dict, all_pairs: dict, pos: _Pos):
    """(edits, helpers forwarded to), or why the helper is left."""
    params = [x.arg for x in fdef.args.args]
    par = _parents(fdef)
    edits = []
    callees = []
    args = fdef.args.args
    for i, ptr in pairs.items():
        off = params[i]
        # the parameter goes: from after the pointer parameter to after the offset one
        edits.append((pos.end(args[i - 1]), pos.end(args[i]), ""))
        derived = _derived(fdef, ptr, params) | {ptr}
        reads = 0
        for n in ast.walk(fdef):
            if not (isinstance(n, ast.Name) and n.id == off):
                continue
            line = n.lineno
            if not isinstance(n.ctx, ast.Load):
                return f"`{off}` is bound again at line {line}"
            reads += 1
            p = par.get(n)
            if isinstance(p, ast.BinOp) and isinstance(p.op, ast.Add) and p.right is n and \
                    isinstance(p.left, ast.Name) and p.left.id in derived:
                edits.append((pos.start(p), pos.end(p), p.left.id))
                continue
            if isinstance(p, ast.Call) and isinstance(p.func, ast.Name) and p.func.id in all_pairs and n in p.args:
                k = p.args.index(n)
                callee = all_pairs[p.func.id]
                prev = p.args[k - 1] if k > 0 else None
                if not any(isinstance(x, ast.Starred) for x in p.args[:k + 1]) and k in callee and \
                        isinstance(prev, ast.Name) and prev.id == ptr:
                    edits.append((pos.end(prev), pos.end(n), ""))
                    if p.func.id not in callees:
                        callees.append(p.func.id)
                    continue
            return (f"`{off}` is read at line {line} other than added to `{ptr}` (or a local taken from it) or "
                    f"forwarded after `{ptr}` to a helper of the module")
        if not reads:
            return (f"`{off}` is never read: the helper ignores the offset, so a pointer with the offset applied "
                    "would change its address")
    return edits, callees
