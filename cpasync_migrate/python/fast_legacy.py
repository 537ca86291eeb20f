"""The facts of a legacy call that the fast pass reads from the stdlib ``ast`` (``decide/legacy.py`` decides).

``manual_reason`` reads what ``checks/legacy_call.py`` looks at before any buffer is looked up: how the
argument list binds the legacy parameters (``decide.legacy.bind``) and the shape of the destination's data
pointer (``decide.legacy.pointer_problem``).  Where those facts alone leave the call for a person, it returns
the reason, which is CPA002's whole verdict; anywhere else (the pointer is a name or ``<name>.data``, so the
buffers, their declarations and shared memory decide), or where the text of the pointer is not read here
exactly as libcst reads it (it spans lines, or parentheses may wrap it), None: libcst decides the call.
"""
from __future__ import annotations

import ast
from typing import Optional

from .decide import legacy as decide


def _offset(lines: list, lineno: int, col: int) -> tuple:
    """(line index, character column) of an ast position (columns count UTF-8 bytes)."""
    return lineno - 1, len(lines[lineno - 1].encode("utf-8")[:col].decode("utf-8", "replace"))


def _text(node: ast.expr, call: ast.Call, lines: list) -> Optional[str]:
    """The expression's text as libcst's ``node_text`` gives it (its own parentheses included); None where this
    pass does not read it so: it spans lines, or the character before it could open a parenthesis of its own."""
    if node.lineno != node.end_lineno:
        return None
    i, start = _offset(lines, node.lineno, node.col_offset)
    _, end = _offset(lines, node.end_lineno, node.end_col_offset)
    line = lines[i]
    before = line[:start].rstrip(" \t")
    if not before:
        return None  # the argument opens a line: what stands before it is on another
    if before[-1] == "(":
        # only the call's own parenthesis, right after the callee
        if call.func.end_lineno != node.lineno:
            return None
        _, fend = _offset(lines, call.func.end_lineno, call.func.end_col_offset)
        if line[fend:start].strip(" \t") != "(":
            return None
    elif before[-1] not in ",=":
        return None
    return line[start:end]


def manual_reason(call: ast.Call, params: list, lines: list) -> Optional[str]:
    """Why a legacy call (no ``*args``/``**kwargs``: ``calls.call_shape``) is left for a person, where its argument
    list or its destination's data pointer alone says so; None where libcst decides."""
    keywords = [k.arg for k in call.keywords]
    try:
        where = decide.bind(params, len(call.args), keywords)
    except decide.NotMigrated as e:
        return str(e)
    how, i = where[params[1]]  # the destination's data pointer
    v = call.args[i] if how == "pos" else next(k.value for k in call.keywords if k.arg == i)
    if type(v) is ast.Name or type(v) is ast.Attribute and v.attr == "data" and type(v.value) is ast.Name:
        return None  # the buffer decides: libcst
    text = _text(v, call, lines)
    if text is None:
        return None
    return decide.pointer_problem(decide.OTHER, text)
