"""The edit text of a legacy call's fix from the standard library's ``ast`` (``--check`` without libcst).

The libcst pass builds a fix in two steps: ``checks/legacy_call.layout_edits`` turns the legacy argument list
into the new one (text inserted around each argument, the dtype argument dropped, ``name=`` dropped), and
``layout.lay_out`` reads the new call back and lays it out within the line length.  This module takes the
same two steps from ``ast`` positions: each argument's span as libcst gives it (its keyword and its own
parentheses included: ``Source.vspan`` widens a node over the parentheses around it, within the brackets
that hold it), the new call read back with ``ast`` into ``layout_render``'s model and rendered by the same
``_render``.  ``tests/test_check_nolibcst.py`` checks that both give the same edits.

It covers the shape the fast pass hands it (``fast_legacy.fix_facts``): a call that holds no comment and no
argument over lines, an expression statement or the sole argument of a call (``T.evaluate(...)``), its arguments
in the legacy order.  ``Unsupported`` anywhere else: libcst makes the edits.
"""
from __future__ import annotations

import ast
import bisect
import os
import re
from itertools import accumulate
from typing import Optional

from ..findings import Edit, apply_edits, line_starts
from . import file_style
from .decide.legacy import kept_argument_edits, merge_point_edits
from .layout_render import _Arg, _Atom, _Call, _render, _Style, line_context, requote, str_width

DEFAULT_LINE_LENGTH = 88  # (layout.DEFAULT_LINE_LENGTH)
# a text's lines split once, each node's offsets read once and the file's habits (a token pass over the whole text)
# found once per text, not at each call laid out and each question (environment CPASYNC_MIGRATE_FAST_EDIT_MEMO=0 turns
# it off; off, a file of n legacy calls was tokenized n times: 400 calls in 28 kB took 20 s, 1,600 never ended)
MEMO = os.environ.get("CPASYNC_MIGRATE_FAST_EDIT_MEMO", "1") != "0"
# a window's line starts held in blocks (``_Starts``; environment CPASYNC_MIGRATE_FAST_LINEAR=0 turns it off, as
# ``fast.LINEAR``)
LINEAR = os.environ.get("CPASYNC_MIGRATE_FAST_LINEAR", "1") != "0"


# What may stand between tokens of a call that holds no comment (``root_span`` sends a call with a "#" to libcst).
_BLANK = " \t\r\n\\\x0c"


class Unsupported(Exception):
    """The ast side does not make this edit text exactly as libcst's path does: libcst decides."""


def _line_starts(text: str) -> list[int]:
    """``findings.line_starts`` summed by the interpreter's own iterators (a window of a large file has as many lines
    as the file)."""
    starts = list(accumulate(map((1).__add__, map(len, text.split("\n"))), initial=0))
    starts.pop()  # the offset one past the end
    return starts


# (LINEAR) a run of at least this many empty lines (a window's placeholder) is held as a ``range`` in ``_Starts``
_RUN = re.compile(r"\n{64,}|(?:\r\n){64,}")


def _breaks_after(text: str, lo: int, hi: int) -> list[int]:
    """The offsets just after each ``\n`` of ``text[lo:hi]``."""
    parts = text[lo:hi].split("\n")
    parts.pop()
    return list(accumulate(map((1).__add__, map(len, parts)), initial=lo))[1:]


class _Starts:
    """``_line_starts(text)`` held in blocks, each run of empty lines (``_RUN``) one ``range``: a window of a large
    file (``window.py``) costs its own lines and one step per placeholder, not the file's line count.  A sequence
    (indexing, ``len``, ``bisect``) equal to the list."""

    def __init__(self, text: str, runs: list):
        blocks: list = [[0]]
        pos = 0
        for a, b in runs:
            if a > pos:
                blocks.append(_breaks_after(text, pos, a))
            blocks.append(range(a + 1, b + 1) if text[a] == "\n" else range(a + 2, b + 1, 2))
            pos = b
        blocks.append(_breaks_after(text, pos, len(text)))
        self.blocks = [b for b in blocks if len(b)]
        self.firsts = list(accumulate((len(b) for b in self.blocks), initial=0))
        self.n = self.firsts.pop()
        self._last = (0, self.blocks[0])  # the block asked last (a call's nodes lie in one)

    def __len__(self) -> int:
        return self.n

    def bounds(self, i: int, end: int) -> tuple[int, int]:
        """(``self[i]``, ``self[i + 1]`` or ``end`` past the last line), ``Source.off``'s two reads in one step."""
        first, block = self._last
        j = i - first
        if 0 <= j and j + 1 < len(block):
            return block[j], block[j + 1]
        return self[i], (self[i + 1] if i + 1 < self.n else end)

    def __getitem__(self, i: int) -> int:
        if i < 0:
            i += self.n
        first, block = self._last
        if not 0 <= i - first < len(block):
            if not 0 <= i < self.n:
                raise IndexError(i)
            k = bisect.bisect_right(self.firsts, i) - 1
            first, block = self._last = (self.firsts[k], self.blocks[k])
        return block[i - first]


def source_starts(text: str):
    """The line starts ``Source`` reads: ``_Starts`` where ``LINEAR`` and the text holds a run of empty lines."""
    if LINEAR and MEMO:
        runs = [m.span() for m in _RUN.finditer(text)]
        if runs:
            return _Starts(text, runs)
    return _line_starts(text) if MEMO else line_starts(text)


class Source:
    """Character offsets of ``ast`` positions (which count UTF-8 bytes in a line) in one text."""

    def __init__(self, text: str):
        self.text = text
        self.starts = source_starts(text)
        self._lines: Optional[list[str]] = None
        self._spans: dict = {}
        self._crlf: Optional[bool] = None
        self._style = None

    def file_style(self):
        """The text's ``file_style.FileStyle`` (its habits and indent unit, each found when first asked), made once
        per text (``MEMO``); None with ``MEMO`` off (each call laid out then reads them again)."""
        if MEMO and self._style is None:
            self._style = file_style.FileStyle(self.text)
        return self._style

    def lines(self) -> list[str]:
        """``text.splitlines(True)``, split once per text (``MEMO``; off: split at each call laid out)."""
        if not MEMO:
            return self.text.splitlines(True)
        if self._lines is None:
            self._lines = self.text.splitlines(True)
        return self._lines

    def off(self, lineno: int, col: int) -> int:
        st = self.starts
        if type(st) is _Starts:
            s, e = st.bounds(lineno - 1, len(self.text))
        else:
            s = st[lineno - 1]
            e = st[lineno] if lineno < len(st) else len(self.text)
        line = self.text[s:e]
        if line.isascii():
            return s + col
        return s + len(line.encode("utf-8", "surrogatepass")[:col].decode("utf-8", "replace"))

    def crlf(self) -> bool:
        """The text holds ``\\r\\n`` (``MEMO``: asked once per text, not at each call laid out)."""
        if not MEMO:
            return "\r\n" in self.text
        if self._crlf is None:
            self._crlf = "\r\n" in self.text
        return self._crlf

    def span(self, node) -> tuple[int, int]:
        """The node's character offsets (``MEMO``: read once per node; the tree outlives its ``Source``'s use)."""
        if MEMO:
            got = self._spans.get(node)
            if got is None:
                got = self._spans[node] = (self.off(node.lineno, node.col_offset),
                                           self.off(node.end_lineno, node.end_col_offset))
            return got
        return self.off(node.lineno, node.col_offset), self.off(node.end_lineno, node.end_col_offset)

    def vspan(self, node, lo: int, hi: int) -> tuple[int, int]:
        """The node's span with the parentheses around it (libcst's ``lpar``/``rpar``), looked for in
        ``text[lo:hi]`` (inside the brackets that hold the node, so a call's own parentheses are never taken)."""
        s, e = self.span(node)
        t = self.text
        while True:
            i = s - 1
            while i >= lo and t[i] in _BLANK:
                i -= 1
            j = e
            while j < hi and t[j] in _BLANK:
                j += 1
            if i >= lo and j < hi and t[i] == "(" and t[j] == ")":
                s, e = i, j + 1
            else:
                return s, e


def call_parens(src: Source, call: ast.Call, lo: int, hi: int) -> tuple[int, int]:
    """(offset of the call's ``(``, offset of its ``)``), and the callee's span: ``Unsupported`` where the callee
    is parenthesized or a comment could sit between it and ``(``."""
    s, e = src.span(call)
    fs, fe = src.vspan(call.func, s, e)
    t = src.text
    i = fe
    while i < e and t[i] in " \t":
        i += 1
    if i >= e or t[i] != "(" or t[e - 1] != ")":
        raise Unsupported("the call's parentheses")
    return i, e - 1


def arg_nodes(call: ast.Call) -> list:
    """The call's arguments in source order: ``ast.expr`` (positional, ``ast.Starred``) and ``ast.keyword``."""
    items = list(call.args) + list(call.keywords)
    return sorted(items, key=lambda a: (a.lineno, a.col_offset))


def arg_span(src: Source, a, lo: int, hi: int) -> tuple[int, int]:
    """libcst's span of an argument: from its keyword (or star) to the end of its value's parentheses."""
    if isinstance(a, ast.keyword):
        vs, ve = src.vspan(a.value, lo, hi)
        return src.off(a.lineno, a.col_offset), ve
    if isinstance(a, ast.Starred):
        vs, ve = src.vspan(a.value, lo, hi)
        return src.off(a.lineno, a.col_offset), ve
    return src.vspan(a, lo, hi)


def value_of(a):
    return a.value if isinstance(a, (ast.keyword, ast.Starred)) else a


def argument_edits(src: Source, call: ast.Call, bound: dict, order: list, drop: str, before: dict, after: dict,
                   replace: dict) -> list[Edit]:
    """``checks/legacy_call.layout_edits`` for arguments in the legacy order (``bound``: parameter -> index in
    ``arg_nodes``); ``Unsupported`` where they are out of order (libcst re-emits the list)."""
    op, cl = call_parens(src, call, *src.span(call))
    lo, hi = op + 1, cl
    args = arg_nodes(call)
    keep = [bound[k] for k in order]
    if [i for i in range(len(args)) if i != bound[drop]] != keep:
        raise Unsupported("arguments out of order")
    t = src.text
    edits: list[Edit] = []
    di = bound[drop]
    ds, de = arg_span(src, args[di], lo, hi)
    if di + 1 < len(args):
        ns, _ = arg_span(src, args[di + 1], lo, hi)
        if "#" in t[de:ns]:
            raise Unsupported("a comment after the dtype")
        edits.append(Edit(ds, ns, ""))
    else:
        _, pe = arg_span(src, args[di - 1], lo, hi)
        if "#" in t[pe:ds]:
            raise Unsupported("a comment before the dtype")
        edits.append(Edit(pe, de, ""))
    for k in order:
        a = args[bound[k]]
        vs, ve = src.vspan(value_of(a), lo, hi)
        as_, _ = arg_span(src, a, lo, hi)
        edits += kept_argument_edits(k, as_, vs, ve, isinstance(a, ast.keyword), before, replace, after)
    return merge_point_edits(edits)


def root_span(src: Source, call: ast.Call, parents: dict) -> tuple[int, int]:
    """The span ``layout.lay_out`` re-renders: the call, or for a call on one line the outermost one-line call whose
    sole argument it is (``layout._wrapper``); ``Unsupported`` where this pass does not tell whether parentheses
    wrap the call (it is neither a statement's whole value nor the sole argument of a call), and for a call that
    holds a comment or an argument over lines (libcst moves their lines).  ``parents``: id(node) -> its parent, for
    every call at least (only calls are asked about: the call and the calls it is the sole argument of)."""
    t = src.text
    cs, ce = src.span(call)
    if "#" in t[cs:ce]:
        raise Unsupported("a comment (or a '#') in the call")
    if _wrapped(src, call, parents) is not False:
        raise Unsupported("parentheses may wrap the call")
    if "\n" in t[cs:ce] or "\r" in t[cs:ce]:
        op, cl = call_parens(src, call, cs, ce)
        for a in arg_nodes(call):
            a_s, a_e = arg_span(src, a, op + 1, cl)
            if "\n" in t[a_s:a_e] or "\r" in t[a_s:a_e]:
                raise Unsupported("an argument over lines")
        return cs, ce
    root, rs, re_ = call, cs, ce
    while True:
        par = parents.get(id(root))
        if type(par) is not ast.Call or par.args != [root] or par.keywords:
            return rs, re_
        ws, we = src.span(par)
        wrapped = _wrapped(src, par, parents)
        if "\n" in t[ws:we] or "\r" in t[ws:we] or "#" in t[ws:rs] + t[re_:we] or wrapped:
            return rs, re_
        if wrapped is None:
            raise Unsupported("parentheses may wrap the wrapper")
        root, rs, re_ = par, ws, we


def _wrapped(src: Source, node, parents: dict) -> Optional[bool]:
    """Whether parentheses of its own wrap ``node`` (libcst's ``lpar``), where this pass tells: the whole value of
    an expression statement, or the sole argument of a call; None elsewhere."""
    par = parents.get(id(node))
    s, e = src.span(node)
    if type(par) is ast.Expr:
        return src.span(par) != (s, e)
    if type(par) is ast.Call and par.args == [node] and not par.keywords:
        try:
            op, cl = call_parens(src, par, *src.span(par))
        except Unsupported:
            return None
        t = src.text
        return bool(t[op + 1:s].strip(_BLANK) or t[e:cl].strip(_BLANK))
    return None


# ------------------------------------------------------------------------------ the new call, read back

_NEWLINE_RE = re.compile(r"\r\n|\r|\n")
_BINDING = {ast.BitOr: ("|", 1), ast.BitXor: ("^", 2), ast.BitAnd: ("&", 3), ast.LShift: ("<<", 4),
            ast.RShift: (">>", 4), ast.Add: ("+", 5), ast.Sub: ("-", 5), ast.Mult: ("*", 6), ast.Div: ("/", 6),
            ast.FloorDiv: ("//", 6), ast.Mod: ("%", 6), ast.MatMult: ("@", 6)}  # (layout._BINDING)


def read_back(new: str) -> _Call:
    """``layout._read`` of a one-line call: its model for ``_render``."""
    try:
        module = ast.parse(new)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise Unsupported("the new call does not parse") from None
    body = module.body
    if len(body) != 1 or type(body[0]) is not ast.Expr or type(body[0].value) is not ast.Call:
        raise Unsupported("not one call")
    src = Source(new)
    call = body[0].value
    if src.span(body[0]) != src.span(call):
        raise Unsupported("parenthesized call")
    for n in ast.walk(call):
        if type(n) is ast.GeneratorExp or type(n) is ast.JoinedStr:
            raise Unsupported("a generator or f-string argument")  # parentheses and braces libcst reads otherwise
    return _call(src, call, *src.span(call))


def _call(src: Source, call: ast.Call, s: int, e: int) -> _Call:
    t = src.text
    op, cl = call_parens(src, call, s, e)
    fs, fe = src.vspan(call.func, s, op)
    head = t[fs:fe]
    if "#" in head or "\n" in head or "\r" in head:
        raise Unsupported("a callee with a comment or over lines")
    args = []
    items = arg_nodes(call)
    for a in items:
        if isinstance(a, ast.keyword):
            prefix = "**" if a.arg is None else a.arg + "="
        elif isinstance(a, ast.Starred):
            prefix = "*"
        else:
            prefix = ""
        args.append(_Arg(_value(src, value_of(a), op + 1, cl), prefix))
    magic = False
    if items:
        _, le = src.vspan(value_of(items[-1]), op + 1, cl)
        magic = "," in t[le:cl]
    return _Call(head, args, magic)


def _value(src: Source, v, lo: int, hi: int):
    t = src.text
    vs, ve = src.vspan(v, lo, hi)
    if type(v) is ast.Call and (vs, ve) == src.span(v) and (v.args or v.keywords):
        try:
            op, _ = call_parens(src, v, vs, ve)
            fs, fe = src.vspan(v.func, vs, op)
            if fe == op:  # no space between the callee and "(" (layout._value)
                return _call(src, v, vs, ve)
        except Unsupported:
            pass
    code = t[vs:ve]
    if "\n" in code or "\r" in code:
        raise Unsupported("an argument over lines")  # (libcst moves its lines: _Atom.shift_from)
    return _Atom([code], None, _chain(src, v, vs, ve))


def _chain(src: Source, v, vs: int, ve: int) -> Optional[list[str]]:
    """``layout._chain``: the operands of an unparenthesized operator chain's loosest level."""
    if type(v) is not ast.BinOp or (vs, ve) != src.span(v) or type(v.op) not in _BINDING:
        return None
    t = src.text
    level = _BINDING[type(v.op)][1]
    rest: list[str] = []
    cur = v
    lo, hi = vs, ve
    while type(cur) is ast.BinOp and _BINDING.get(type(cur.op), ("", 0))[1] == level:
        rs, re_ = src.vspan(cur.right, lo, hi)
        rest.append(f"{_BINDING[type(cur.op)][0]} {t[rs:re_]}")
        ls, le = src.vspan(cur.left, lo, hi)
        if (ls, le) != src.span(cur.left):
            cur = None
            break
        cur, hi = cur.left, le
    left = t[ls:le]
    return [left] + rest[::-1]


# ------------------------------------------------------------------------------------------ lay out

def lay_out(src: Source, call: ast.Call, rs: int, re_: int, edits: list[Edit], line_length: int,
            style=None) -> list[Edit]:
    """``layout.lay_out`` of a call that holds no comment (``rs``..``re_``: the span ``root_span`` gave): the edits
    requoted by the file's habit, applied, and the new call laid out again, the way the old ``call`` was laid out
    (``layout._style``).  ``style``: the whole file's ``file_style.FileStyle`` when the text is a window of it."""
    text = src.text
    if style is None:
        style = src.file_style()
    habits = style.habits() if style is not None else file_style.habits(text)
    edits = requote(edits, habits)
    if any(not (rs <= e.start and e.end <= re_) for e in edits):
        raise Unsupported("an edit outside the call")
    new = apply_edits(text[rs:re_], [Edit(e.start - rs, e.end - rs, e.replacement) for e in edits])
    tree = read_back(new)
    prefix, suffix, line_indent = line_context(text, rs, re_)
    lstyle = _style(src, call, line_indent, line_length, habits, style)
    lines = _render(tree, str_width(prefix), line_indent, str_width(suffix), lstyle, top=True)
    out = ("\r\n" if src.crlf() else "\n").join(lines)
    if out == text[rs:re_]:
        return []
    return [Edit(rs, re_, out)]


def _style(src: Source, call: ast.Call, line_indent: str, line_length: int, habits: tuple, style) -> _Style:
    """``layout._style``: how the old call was laid out (its continuation indent, trailing comma, where its ``)``
    stood, arguments aligned after ``(``), or, for a call on one line, the file's habits."""
    text = src.text
    width = line_length or DEFAULT_LINE_LENGTH
    lines = src.lines()  # (as the libcst pass's context indexes them)
    unit = style.unit() if style is not None else file_style.indent_unit(lines)
    cs, ce = src.span(call)
    args = arg_nodes(call)
    if ("\n" not in text[cs:ce] and "\r" not in text[cs:ce]) or not args:
        return _Style(width, unit, habits[0], True, False)
    op, cl = call_parens(src, call, cs, ce)
    spans = [arg_span(src, a, op + 1, cl) for a in args]
    visual = "\n" not in text[op + 1:spans[0][0]] and "\r" not in text[op + 1:spans[0][0]]
    if not visual:
        first_line = lines[args[0].lineno - 1]
        ind = first_line[: len(first_line) - len(first_line.lstrip(" \t"))]
        if ind.startswith(line_indent) and len(ind) > len(line_indent):
            unit = ind[len(line_indent):]
    _, ve = src.vspan(value_of(args[-1]), op + 1, cl)
    between = text[ve:ce - 1]
    close_own_line = "\n" in between or "\r" in between
    if "," in between:
        comma = True
    elif len({_line_of(src, s) for s, _ in spans}) > 1:
        comma = False  # one per line (or several lines) without a trailing comma: keep it so
    else:
        comma = habits[0]
    return _Style(width, unit, comma, close_own_line, visual)


def _line_of(src: Source, offset: int) -> int:
    import bisect

    return bisect.bisect_right(src.starts, offset)
