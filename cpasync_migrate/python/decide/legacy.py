"""CPA001 / CPA002 of a legacy call: what its argument list binds, whether its pointers have the shape an access
pointer takes, its fix's safety and its message, apart from any parse tree.

The facts, as either pass reads them: the number of positional arguments and the keyword names in source order
(``bind``), the shape of a data pointer (``pointer_problem``: a name, ``<name>.data``, or anything else with its
text), the assumptions a fix rests on (``fix_safety``), and, once each pointer's element type is known, the
extents, the element count and the text around each access pointer (``extent``, ``element_count``,
``access_ptr_before``, ``access_ptr_after``).  ``checks/legacy_call.py`` (libcst) asks this module while it
builds a fix; the fast pass asks it for a legacy call whose verdict these facts alone decide (a call left for a
person before any buffer is looked up) and, in ``--check``, for the fix of a legacy call whose facts the
standard library's ``ast`` gives simply (``fast_legacy.py`` reads them, ``fast_edit.py`` makes the edit text).

This module imports no parser.
"""
from __future__ import annotations

from typing import Optional

from ...findings import Applicability, Edit

FIX_MESSAGE = "legacy offset-form ptx_cp_async; migrate to access pointers"

# The shapes of a data pointer (``pointer_problem``).
NAME, DATA, OTHER = "name", "data", "other"


class NotMigrated(Exception):
    """The legacy call cannot be migrated automatically; the message says why."""


def manual_message(why: str) -> str:
    """CPA002's message for a legacy call that is left for a person, and why."""
    return f"legacy ptx_cp_async cannot be migrated automatically: {why}"


def bind(params: list, npos: int, keywords: list) -> dict:
    """Which argument each legacy parameter takes: parameter -> ("pos", index among the positional arguments)
    or ("kw", keyword name); ``NotMigrated`` where the list binds no call of the legacy signature.

    TVMScript's dtype forwarding: with the dtype given as a keyword, the positional arguments shift left."""
    dtype_kw = params[0]
    order = params[1:] if dtype_kw in keywords else params
    if npos > len(order):
        raise NotMigrated("too many positional arguments")
    bound = {p: ("pos", i) for i, p in zip(range(npos), order)}
    for k in keywords:
        if k not in params:
            raise NotMigrated(f"unknown keyword argument {k}=")
        if k in bound:
            raise NotMigrated(f"argument {k} given twice")
        bound[k] = ("kw", k)
    missing = [p for p in params if p not in bound]
    if missing:
        raise NotMigrated("missing argument(s) " + ", ".join(missing))
    return bound


def pointer_problem(shape: str, text: str) -> Optional[str]:
    """Why a data pointer of ``shape`` (``NAME``, ``DATA`` for ``<name>.data``, ``OTHER``), spelled ``text``, takes
    no access pointer; None when it can."""
    if shape in (NAME, DATA):
        return None
    return f"the data pointer `{text}` is not a buffer's `.data` or a name: tvm_access_ptr takes the buffer's data Var"


def fix_safety(assumptions: list) -> tuple:
    """(applicability, the message's note) of a fix resting on ``assumptions``: safe without any, else unsafe
    (applied with ``--unsafe-fixes``), the note counting them."""
    if assumptions:
        return Applicability.UNSAFE, f" (unsafe fix: rests on {len(assumptions)} assumption(s))"
    return Applicability.SAFE, ""


def retyped_note(call_dtype_text: str, why: str) -> str:
    """The note of a destination typed by the call's dtype (merged dynamic shared memory: ``smem.py`` says why)."""
    return (f"; the destination's offset counts elements of the call's dtype {call_dtype_text} "
            f"(merged shared memory: {why})")


def extent(nbytes: int, size: int, what: str) -> str:
    """An access pointer's extent: ``nbytes`` in elements of ``size`` bytes (``what``: the element type, named in
    the reason); ``NotMigrated`` where the bytes are no whole number of elements."""
    if nbytes % size:
        raise NotMigrated(f"{nbytes} bytes is not a whole number of {what} elements")
    return str(nbytes // size)


def element_count(target, nbytes: int, size: int, what: str) -> int:
    """The size argument of a generation that counts elements (``target.size_meaning == "num_elems"``): ``nbytes``
    in elements of the one common pointer type (``size`` bytes, named ``what``); ``NotMigrated`` where the bytes
    are no whole number of elements or no cp.async width of ``target``."""
    if nbytes % size:
        raise NotMigrated(f"{nbytes} bytes is not a whole number of {what} elements")
    if nbytes not in target.widths:
        raise NotMigrated(f"{nbytes} bytes is not a cp.async width ({'/'.join(map(str, target.widths))})")
    return nbytes // size


def access_ptr_before(alias: str, target, dtype_text: str) -> str:
    """The text a fix puts before a data pointer: ``T.tvm_access_ptr(T.type_annotation(<dtype>), `` (the names
    are ``target``'s, rules/tilelang-*.toml; ``alias``: the name the file spells tilelang.language with)."""
    return f"{alias}.{target.access_ptr}({alias}.{target.type_annotation}({dtype_text}), "


def access_ptr_after(extent_text: str, rw_mask) -> str:
    """The text a fix puts after an offset: the access pointer's extent and rw mask, and its closing parenthesis."""
    return f", {extent_text}, {rw_mask})"


def kept_argument_edits(k: str, arg_start: int, value_start: int, value_end: int, keyword: bool,
                   before: dict, replace: dict, after: dict) -> list:
    """The edits of one kept argument ``k`` of a fix, in place: a keyword's ``name=`` dropped (the text up to its
    value, or replaced by what goes before it), else what goes before it inserted; its value replaced; what goes
    after it inserted (the libcst pass's and the fast pass's in-place fixes both emit through this one function)."""
    out = []
    if keyword:
        out.append(Edit(arg_start, value_start, before.get(k, "")))
    elif k in before:
        out.append(Edit(value_start, value_start, before[k]))
    if k in replace:
        out.append(Edit(value_start, value_end, replace[k]))
    if k in after:
        out.append(Edit(value_end, value_end, after[k]))
    return out


def merge_point_edits(edits: list) -> list:
    """A fix's edits in order, those that touch the same point combined so they apply in order (the libcst
    pass's and the fast pass's edit lists go through this one function)."""
    edits = sorted(edits, key=lambda e: (e.start, e.end))
    out: list = []
    for e in edits:
        if out and out[-1].end == e.start and (out[-1].start == out[-1].end or e.start == e.end):
            prev = out.pop()
            out.append(Edit(prev.start, e.end, prev.replacement + e.replacement))
        else:
            out.append(e)
    return out
