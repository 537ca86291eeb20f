"""The facts of a legacy call that the fast pass reads from the stdlib ``ast`` (``decide/legacy.py`` decides).

``manual_reason`` reads what ``checks/legacy_call.py`` looks at before any buffer is looked up: how the
argument list binds the legacy parameters (``decide.legacy.bind``) and the shape of the destination's data
pointer (``decide.legacy.pointer_problem``).  Where those facts alone leave the call for a person, it returns
the reason, which is CPA002's whole verdict; anywhere else (the pointer is a name or ``<name>.data``, so the
buffers, their declarations and shared memory decide), or where the text of the pointer is not read here
exactly as libcst reads it (it spans lines, or parentheses may wrap it), None: libcst decides the call.

``verdict`` goes further in ``--check`` (``fast.DECIDE_FIXES``): the facts a fix needs (``fix_facts``: the
alias the call spells tilelang.language with, both buffers' declarations and element types, the call's dtype,
the byte count), read where the text gives them simply: each buffer bound once in the file, by an annotated
parameter of a function that is no macro or by a one-target assignment in a function around the call, its
dtype a string literal or a dtype attribute of TileLang's or TVM's namespace (or the declaration's default),
the call's dtype of the destination's width (no merged shared memory question), the bytes an integer
literal.  ``decide/legacy.py`` decides from them (CPA001 with its safety, or CPA002 with the reason) and
``fast_edit.py`` makes the fix's edit text as libcst's path makes it; anything else: libcst decides.
"""
from __future__ import annotations

import ast
import re
from typing import NamedTuple, Optional

from .. import codes
from ..findings import Fix
from . import fast_edit, fast_scopes
from .decide import legacy as decide
from .fast_scan import Undecided, qualify


class DTypeFacts(NamedTuple):
    """An element type as the text gives it: the text a fix writes for it, its canonical name and size."""

    text: str
    name: str
    size: int


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


# ------------------------------------------------------------------------------------------ a fix's facts

_SIMPLE_STRING = re.compile(r"""[rRuU]?(?:"[^"\\\r\n]*"|'[^'\\\r\n]*')""")


class PointerFacts(NamedTuple):
    """One data pointer ``<buffer>.data``: the buffer and its element type as its declaration gives it."""

    buffer: str
    dtype: DTypeFacts


class FixFacts(NamedTuple):
    """What ``checks/legacy_call.py`` reads to decide a legacy call's fix, as the fast pass reads it where the
    text gives it simply (``fix_facts``): the alias the call spells tilelang.language with, which argument
    each legacy parameter takes, both pointers with their buffers' element types, the call's dtype and the
    byte count."""

    alias: str
    bound: dict  # legacy parameter -> index among the call's arguments in source order
    dst: PointerFacts
    src: PointerFacts
    call_dtype: DTypeFacts
    nbytes: int


_FUNC = (ast.FunctionDef, ast.AsyncFunctionDef)


_resolve = fast_scopes.resolve  # (the scope that binds a name read somewhere: fast_scopes.py)


def _macro_decorated(fdef, s, rules) -> Optional[bool]:
    """``callers.decorated``: a TileLang/TVM decorator whose last name is a macro's (None: not read here)."""
    names = set(rules.shared_memory.get("functions", {}).get("macro", []))
    mods = set(rules.tilelang_modules) | set(rules.tvm_modules)
    for d in fdef.decorator_list:
        expr = d.func if type(d) is ast.Call else d
        if type(expr) not in (ast.Name, ast.Attribute):
            return None
        try:
            q = qualify(expr, s)
        except Undecided:
            return None
        if q is None:
            if type(expr) is ast.Name and expr.id in names:
                return None  # a local def or an unimported name called like a macro: libcst's scopes decide
            continue
        mod, _, last = q.rpartition(".")
        if last in names and (mod in mods or mod.split(".")[0] in ("tilelang", "tvm")):
            return True
    return False


def _declaration(name: str, call: ast.Call, s, rules):
    """The expression that declares buffer ``name`` as seen at ``call`` (``bindings.declaration_of`` where the
    name has one binding in the function whose scope the call reads it from: an annotated parameter of a
    function that is no macro, or a one-target assignment; no macro's calls route it:
    ``checks/legacy_call.through_callers``); None: libcst decides."""
    found = _resolve(name, call, s)
    if found is None or type(found[0]) not in _FUNC or len(found[1]) != 1:
        return None
    kind, node, extra = found[1][0]
    if kind == "param":
        a = extra.args
        if node not in a.posonlyargs + a.args + a.kwonlyargs or node.annotation is None:
            return None
        if _macro_decorated(extra, s, rules) is not False:
            return None
        return node.annotation, extra.body[0]
    if kind in ("assign", "annassign") and type(extra.value) is not ast.Name:  # (an alias `S = staged`: libcst)
        return extra.value, extra
    return None


def _same_binding(expr, a, b, s) -> bool:
    """``bindings.same_binding``: every name in ``expr`` read at ``a`` means the same at ``b`` (and is bound)."""
    for n in ast.walk(expr):
        if type(n) is ast.Name:
            x, y = _resolve(n.id, a, s), _resolve(n.id, b, s)
            if x is None or y is None or x[0] is not y[0] or not x[1] and n.id not in ("True", "False", "None"):
                return False
    return True


def _dtype(expr, span: tuple, src, s, rules, at, depth: int = 0) -> Optional[DTypeFacts]:
    """``bindings.dtype_of_expr`` of a dtype written as a string literal, a dtype attribute of TileLang's or
    TVM's namespace, or a name bound once, by a one-target assignment, to one of these, read at ``at``
    (``span``: its text, its own parentheses included); None where libcst reads it (the element type is not
    known from the text, a factory's parameter, ...)."""
    text = src.text[span[0]:span[1]]
    if type(expr) is ast.Name:
        found = _resolve(expr.id, at, s) if depth < 4 else None
        if found is None or len(found[1]) != 1 or found[1][0][0] not in ("assign", "chain"):
            return None
        stmt = found[1][0][2]
        inner = _dtype(stmt.value, src.span(stmt.value), src, s, rules, stmt, depth + 1)
        return None if inner is None else DTypeFacts(text, inner.name, inner.size)
    if type(expr) is ast.Constant and type(expr.value) is str:
        a, b = src.span(expr)
        if not _SIMPLE_STRING.fullmatch(src.text[a:b]):
            return None  # implicit concatenation, escapes, triple quotes: libcst's SimpleString differs
        name = rules.canonical_dtype(expr.value)
        size = rules.dtype_size(name)
        return DTypeFacts(text, name, size) if size is not None else None
    if type(expr) is ast.Attribute:
        try:
            q = qualify(expr, s)
        except Undecided:
            return None
        if q is None:
            return None
        mod = q.rpartition(".")[0]
        if (mod in rules.tilelang_modules or mod in rules.tvm_modules) and rules.dtype_size(expr.attr) is not None:
            name = rules.canonical_dtype(expr.attr)
            return DTypeFacts(text, name, rules.dtype_size(name))
    return None


def _declared_dtype(decl, at, call, src, s, rules) -> Optional[DTypeFacts]:
    """``bindings.decl_dtype_expr`` and the dtype it gives (a declaration call with no ``*args``/``**kwargs``; ``at``:
    where it is read), as the call sees it (``checks/legacy_call.pointer``: a dtype whose names mean something else
    at the call is spelled by its name)."""
    if type(decl) is not ast.Call or type(decl.func) not in (ast.Name, ast.Attribute):
        return None
    try:
        q = qualify(decl.func, s)
    except Undecided:
        return None
    if q is None:
        return None
    mod, _, fname = q.rpartition(".")
    if fname not in rules.declarations or not (mod in rules.tilelang_modules or mod in rules.tvm_modules):
        return None
    if any(type(a) is ast.Starred for a in decl.args) or any(k.arg is None for k in decl.keywords):
        return None
    spec = rules.declarations[fname]
    try:
        op, cl = fast_edit.call_parens(src, decl, *src.span(decl))
    except fast_edit.Unsupported:
        return None
    dexpr = next((k.value for k in decl.keywords if k.arg == spec["keyword"]), None)
    if dexpr is None and len(decl.args) > spec["position"]:
        dexpr = decl.args[spec["position"]]
    if dexpr is None:
        d = spec.get("default")
        if d is None:
            return None  # (libcst: CPA002, the declaration requires a dtype)
        d = rules.canonical_dtype(d)
        return DTypeFacts(f'"{d}"', d, rules.dtype_size(d))
    dt = _dtype(dexpr, src.vspan(dexpr, op + 1, cl), src, s, rules, at)
    if dt is not None and not _same_binding(dexpr, at, call, s):
        dt = DTypeFacts(f'"{dt.name}"', dt.name, dt.size)
    return dt


def fix_facts(call: ast.Call, s, src, options, lo: int, hi: int) -> Optional[FixFacts]:
    """The facts of a legacy call of TileLang's intrinsic (``lo``/``hi``: inside its parentheses), where the text
    gives them simply; None where libcst reads them (a route, an alias, a macro's parameter, a dtype in a
    variable, merged shared memory, ...)."""
    rules = options.rules
    f = call.func
    if type(f) is not ast.Attribute or type(f.value) is not ast.Name:
        return None
    alias = f.value.id
    try:
        q = qualify(f.value, s)
    except Undecided:
        return None
    # ``imports.own_alias``: a module-level import of tilelang.language, bound nowhere else (so seen unchanged)
    if q != rules.emit_module or len(s.bindings.get(alias, [])) != 1 or alias in s.nested or alias in s.other:
        return None
    params = list(rules.legacy.python_params)
    keywords = [k.arg for k in call.keywords]
    try:
        where = decide.bind(params, len(call.args), keywords)
    except decide.NotMigrated:
        return None
    args = fast_edit.arg_nodes(call)
    index = {id(a): i for i, a in enumerate(args)}
    bound = {}
    for p, (how, i) in where.items():
        node = call.args[i] if how == "pos" else next(k for k in call.keywords if k.arg == i)
        bound[p] = index[id(node)]
    k_dtype, k_dptr, _, k_sptr, _, k_bytes = params
    ptrs = []
    for k in (k_dptr, k_sptr):
        v = fast_edit.value_of(args[bound[k]])
        if not (type(v) is ast.Attribute and v.attr == "data" and type(v.value) is ast.Name) or \
                src.vspan(v, lo, hi) != src.span(v):
            return None
        buf = v.value.id
        decl = _declaration(buf, call, s, rules)
        if decl is None:
            return None
        dt = _declared_dtype(decl[0], decl[1], call, src, s, rules)
        if dt is None:
            return None
        ptrs.append(PointerFacts(buf, dt))
    cd = fast_edit.value_of(args[bound[k_dtype]])
    call_dtype = _dtype(cd, src.vspan(cd, lo, hi), src, s, rules, call)
    if call_dtype is None:
        return None
    size = fast_edit.value_of(args[bound[k_bytes]])
    if type(size) is not ast.Constant or type(size.value) is not int:
        return None
    return FixFacts(alias, bound, ptrs[0], ptrs[1], call_dtype, size.value)


def verdict(call: ast.Call, s, src, parents: dict, options, style=None) -> Optional[tuple]:
    """(code, message, fix) of a legacy call of TileLang's intrinsic, decided from ``fix_facts`` (``src``: a
    ``fast_edit.Source`` of the text; ``parents``: id(node) -> parent node; ``style``: the whole file's
    ``file_style.FileStyle`` when the text is a window of it); None where libcst decides."""
    try:
        rs, re_ = fast_edit.root_span(src, call, parents)
        op, cl = fast_edit.call_parens(src, call, *src.span(call))
    except fast_edit.Unsupported:
        return None
    facts = fix_facts(call, s, src, options, op + 1, cl)
    if facts is None:
        return None
    target, rules = options.target, options.rules
    dst, sp, nbytes = facts.dst.dtype, facts.src.dtype, facts.nbytes
    if dst.size != facts.call_dtype.size:
        return None  # the destination's offset may count the call's dtype (merged shared memory): libcst
    k_dtype, k_dptr, k_doff, k_sptr, k_soff, k_bytes = rules.legacy.python_params
    replace = {}
    try:
        if target.size_meaning == "num_elems":
            if dst.size != sp.size:
                return None  # one common pointer type, an offset divided: libcst
            replace[k_bytes] = str(decide.element_count(target, nbytes, dst.size, dst.name))
        n_dst = decide.extent(nbytes, dst.size, dst.name)
        n_src = decide.extent(nbytes, sp.size, sp.name)
    except decide.NotMigrated as e:
        return codes.LEGACY_CALL_MANUAL, decide.manual_message(str(e)), None
    if options.style == "access_ptr" and target.buffer_access_ptr:
        return None  # T.access_ptr(buf[off], ...): libcst
    T = facts.alias
    before = {k_dptr: decide.access_ptr_before(T, target, dst.text), k_sptr: decide.access_ptr_before(T, target, sp.text)}
    after = {k_doff: decide.access_ptr_after(n_dst, target.dst_rw_mask),
             k_soff: decide.access_ptr_after(n_src, target.src_rw_mask)}
    try:
        edits = fast_edit.argument_edits(src, call, facts.bound, [k_dptr, k_doff, k_sptr, k_soff, k_bytes], k_dtype,
                                         before, after, replace)
        edits = fast_edit.lay_out(src, call, rs, re_, edits, options.line_length, style)
    except fast_edit.Unsupported:
        return None
    applic, note = decide.fix_safety([])
    return codes.LEGACY_CALL, decide.FIX_MESSAGE + note, Fix(edits, applic, [], rules.steps(rules.legacy.name,
                                                                                          target.name), {})
