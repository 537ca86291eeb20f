"""Lay a rewritten call out the way the file lays out its calls.

What it does: takes the edits that turn one legacy ``ptx_cp_async(...)`` into the access-pointer form
(``checks/legacy_call.py``'s ``layout_edits``), applies the ones inside the call, and replaces them with one
edit whose text is the new call laid out again: on one line when it fits, else split the way the call was
split, within the line length the project configures (``FrontEndOptions.line_length``: ``[tool.ruff] line-length``,
else ``[tool.black] line-length`` of the file's nearest pyproject.toml, else 88; the engine finds it).

Why: the new form is about 60 columns longer than the old one.  Splicing it into the old layout left
continuation lines at the wrong indent and one-line calls of 184-212 columns, so a file that ``ruff
format`` or black left unchanged no longer was after the migration.

Rules (each split is tried in this order, the first that fits wins, as black and ruff do):

1. **One line** when the whole line (what precedes the call on its line, the call, what follows it)
   fits and nothing forces a split: a comment inside the call, an argument that spans lines, or a
   *magic trailing comma* (the call's arguments ended with a comma).
2. Otherwise the arguments go on their own lines, one indent deeper than the line the call starts on:
   - **all on one line** between ``(`` and ``)`` when they fit there (black's right-hand split);
   - a **sole argument** that is itself a call is split in turn, and takes no trailing comma
     (``T.evaluate(T.ptx_cp_async(...))``: the ``T.evaluate`` of a one-line call is laid out with it);
   - else **one argument per line**, each laid out by these same rules (a ``T.tvm_access_ptr(...)``
     that does not fit on its line is split inside), with a trailing comma after the last.
3. What "the way the call was" means:
   - the continuation indent is the call's own (its first argument's line, less its first line's
     indent) when its arguments started on a new line; else the file's indent step (4 spaces when the
     file has no indented block);
   - a call whose arguments were aligned after ``(`` (a first argument on the ``(`` line) keeps that
     alignment, one argument per line under the first, where each fits there (else as above);
   - the trailing comma: kept where the call had one; left out where the call had its arguments on
     several lines without one; else as the file does (its multi-line lists of one item per line end
     with a comma, or not; with none, a comma, as the formatters add);
   - ``)`` stays after the last argument where the call put it there (unless a comment ends that line),
     else it goes on its own line at the call's line indent.
4. Comments stay with what they annotate: a comment after an argument's comma stays after it (two
   spaces before ``#``), a comment on its own line stays on its own line before the next argument (or
   before ``)``), a comment after ``(`` stays there.  An argument that spans lines (a parenthesized
   offset with comments) keeps its lines, moved by the distance its first line moved.
5. Widths count characters as black does (East Asian wide characters count 2, a tab 4).
6. An argument that is an operator chain (``(i * 16 + tx // 8) * BLOCK + tx % 8 * 8``) and does not fit
   on its line is split before each operator of its loosest-binding level, the pieces at the argument's
   indent (black's and ruff's delimiter split inside brackets).
7. Quotes: a string the fix inserts (a ``"float16"`` it spells out, ``"w"``) takes the file's quote
   style: single quotes where the file's one-line strings are mostly single-quoted (as ``ruff format``
   with ``quote-style = "single"`` leaves them), else double.  Text the fix copies (a declaration's
   dtype, copied verbatim) is kept as written: a double-quoted string the file holds is not changed.

A call this module cannot read back (an argument holding a multi-line string or a backslash
continuation, whose lines cannot be moved without changing it) keeps the spliced text.
"""
from __future__ import annotations

import os
import re
from typing import Optional

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from ..findings import Edit, apply_edits
from . import file_style
from .context import Context
from .layout_render import _Arg, _Atom, _Call, _render, _Style, line_context, requote, str_width

DEFAULT_LINE_LENGTH = 88
# The positions of the read-back call's nodes are computed only when an argument over several lines asks for
# them (environment ``CPASYNC_MIGRATE_LAZY_LAYOUT=0``: for every call, as before; tests/test_window.py).
LAZY_POSITIONS = os.environ.get("CPASYNC_MIGRATE_LAZY_LAYOUT", "1") != "0"

_NEWLINE_RE = re.compile(r"\r\n|\r|\n")


class _Unsupported(Exception):
    """The call holds something this module does not lay out; keep the spliced text."""


def lay_out(ctx: Context, node: cst.Call, edits: list[Edit]) -> list[Edit]:
    """The fix's edits with those inside ``node`` (or its one-line wrapper) replaced by one laid-out edit.

    ``ctx`` is the file's context (context.py): its ``text``, ``lines``, ``vspan``, ``pos``, ``parent``,
    ``newline``, ``opts.line_length``, ``file_style`` and the caches ``layout_unit``/``layout_habits`` are used.
    """
    edits = _requoted(ctx, node, edits)
    try:
        return _lay_out(ctx, node, edits)
    except _Unsupported:
        return edits


def _requoted(ctx: Context, node: cst.Call, edits: list[Edit]) -> list[Edit]:
    """The edits with the double-quoted strings they insert single-quoted, in a file that prefers single
    quotes (rule 7; ``layout_render.requote``)."""
    return requote(edits, _file_habits(ctx))


def _lay_out(ctx: Context, node: cst.Call, edits: list[Edit]) -> list[Edit]:
    text = ctx.text
    cs, ce = ctx.vspan(node)
    one_line = "\n" not in text[cs:ce] and "\r" not in text[cs:ce]
    root, rs, re_ = node, cs, ce
    if one_line:
        root, rs, re_ = _wrapper(ctx, node, cs, ce)
    inside = [e for e in edits if rs <= e.start and e.end <= re_]
    outside = [e for e in edits if e not in inside]
    if any(e.start < re_ and e.end > rs for e in outside):
        raise _Unsupported("an edit crosses the call")
    new = apply_edits(text[rs:re_], [Edit(e.start - rs, e.end - rs, e.replacement) for e in inside])
    to_original = _back_mapper(rs, inside)

    tree = _read(new, to_original, text)
    prefix, suffix, line_indent = line_context(text, rs, re_)
    style = _style(ctx, node, line_indent, one_line)
    lines = _render(tree, str_width(prefix), line_indent, str_width(suffix), style, top=True)
    out = ctx.newline.join(lines)
    if out == text[rs:re_]:
        return outside
    return outside + [Edit(rs, re_, out)]


def _wrapper(ctx: Context, node: cst.Call, cs: int, ce: int):
    """The outermost one-line call whose sole argument is the call (``T.evaluate(T.ptx_cp_async(...))``)."""
    root, rs, re_ = node, cs, ce
    while True:
        arg = ctx.parent(root)
        call = ctx.parent(arg) if isinstance(arg, cst.Arg) else None
        if not isinstance(call, cst.Call) or len(call.args) != 1 or arg.keyword is not None or arg.star:
            return root, rs, re_
        ws, we = ctx.vspan(call)
        t = ctx.text[ws:we]
        if "\n" in t or "\r" in t or "#" in ctx.text[ws:rs] + ctx.text[re_:we] or call.lpar:
            return root, rs, re_
        root, rs, re_ = call, ws, we


def _back_mapper(base: int, edits: list[Edit]):
    """Offset in the new text of the span -> offset in the original file (None inside inserted text)."""
    segs = []  # (new_start, new_end, orig_start) of text the edits left as it was
    new_pos = orig = 0
    for e in sorted(edits, key=lambda e: (e.start, e.end)):
        s, t = e.start - base, e.end - base
        segs.append((new_pos, new_pos + (s - orig), orig))
        new_pos += (s - orig) + len(e.replacement)
        orig = t
    segs.append((new_pos, None, orig))

    def back(p: int) -> Optional[int]:
        for ns, ne, os_ in segs:
            if ns <= p and (ne is None or p < ne):
                return base + os_ + (p - ns)
        return None

    return back


def _read(new: str, to_original, text: str) -> _Call:
    try:
        module = cst.parse_module(new)
    except Exception as e:  # noqa: BLE001
        raise _Unsupported(str(e)) from None
    body = module.body
    if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine) or len(body[0].body) != 1 \
            or not isinstance(body[0].body[0], cst.Expr) or not isinstance(body[0].body[0].value, cst.Call):
        raise _Unsupported("not one call")
    call = body[0].body[0].value
    if call.lpar:
        raise _Unsupported("parenthesized call")
    positions = None if LAZY_POSITIONS else MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    starts = [0] + [m.end() for m in _NEWLINE_RE.finditer(new)]

    def column_in_original(n) -> Optional[int]:
        nonlocal positions
        if positions is None:  # asked only for an argument over several lines
            positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        p = positions.get(n.lpar[0] if getattr(n, "lpar", None) else n)
        if p is None:
            return None
        o = to_original(starts[p.start.line - 1] + p.start.column)
        if o is None:
            return None
        return o - (max(text.rfind("\n", 0, o), text.rfind("\r", 0, o)) + 1)

    return _call(module, call, column_in_original)


def _comments(ws) -> tuple[Optional[str], list[str]]:
    if isinstance(ws, cst.ParenthesizedWhitespace):
        first = ws.first_line.comment.value if ws.first_line.comment else None
        return first, [el.comment.value for el in ws.empty_lines if el.comment]
    return None, []


def _call(module: cst.Module, call: cst.Call, column_in_original) -> _Call:
    head = module.code_for_node(call.func)
    if "\n" in head or "\r" in head or "#" in head:
        raise _Unsupported("a callee over lines")
    open_comment, pending = _comments(call.whitespace_before_args)
    args: list[_Arg] = []
    magic = False
    for i, a in enumerate(call.args):
        prefix = ""
        if a.star:
            prefix = a.star
        elif a.keyword is not None:
            prefix = a.keyword.value + "="
        trailing = []
        t, own = _comments(a.whitespace_after_arg)
        after: list[str] = []
        if t:
            trailing.append(t)
        after += own
        if isinstance(a.comma, cst.Comma):
            if i == len(call.args) - 1:
                magic = True
            for ws in (a.comma.whitespace_before, a.comma.whitespace_after):
                t, own = _comments(ws)
                if t and after:
                    after.append(t)  # after comments on lines of their own: on a line of its own after them
                elif t:
                    trailing.append(t)
                after += own
        if len(trailing) > 1:
            raise _Unsupported("two comments after one argument")
        args.append(_Arg(_value(module, a.value, column_in_original), prefix, pending, trailing[0] if trailing else None))
        pending = after
    if not call.args and (open_comment or pending):
        raise _Unsupported("comments in an empty call")
    return _Call(head, args, magic, open_comment, pending)


def _value(module: cst.Module, value: cst.BaseExpression, column_in_original):
    if isinstance(value, cst.Call) and not value.lpar and value.args \
            and module.code_for_node(value.whitespace_after_func) == "":
        try:
            return _call(module, value, column_in_original)
        except _Unsupported:
            pass
    code = module.code_for_node(value)
    lines = _NEWLINE_RE.split(code)
    if len(lines) > 1:
        if '"""' in code or "'''" in code or re.search(r"\\\r?\n", code):
            raise _Unsupported("an argument whose lines cannot move")
        return _Atom(lines, column_in_original(value))
    return _Atom(lines, None, _chain(module, value))


# Each binary operator's token and how tightly it binds (Python's precedence): a chain splits at its
# loosest level.  ``**`` (right-associative, split last by the formatters) is not split.
_BINDING = {cst.BitOr: ("|", 1), cst.BitXor: ("^", 2), cst.BitAnd: ("&", 3), cst.LeftShift: ("<<", 4),
            cst.RightShift: (">>", 4), cst.Add: ("+", 5), cst.Subtract: ("-", 5), cst.Multiply: ("*", 6),
            cst.Divide: ("/", 6), cst.FloorDivide: ("//", 6), cst.Modulo: ("%", 6), cst.MatrixMultiply: ("@", 6)}


def _chain(module: cst.Module, value: cst.BaseExpression) -> Optional[list[str]]:
    """``a * b + c - d`` -> ``["a * b", "+ c", "- d"]``: the operands of the unparenthesized top-level
    operators of the loosest level, each after the first led by its operator (None: not such a chain)."""
    if not isinstance(value, cst.BinaryOperation) or value.lpar or type(value.operator) not in _BINDING:
        return None
    level = _BINDING[type(value.operator)][1]
    rest: list[str] = []
    cur: cst.BaseExpression = value
    while isinstance(cur, cst.BinaryOperation) and not cur.lpar \
            and _BINDING.get(type(cur.operator), ("", 0))[1] == level:
        rest.append(f"{_BINDING[type(cur.operator)][0]} {module.code_for_node(cur.right)}")
        cur = cur.left
    return [module.code_for_node(cur)] + rest[::-1]


# ------------------------------------------------------------------------------------------ style


def _style(ctx: Context, node: cst.Call, line_indent: str, one_line: bool) -> _Style:
    text = ctx.text
    width = ctx.opts.line_length or DEFAULT_LINE_LENGTH
    unit = _file_unit(ctx)
    if one_line or not node.args:
        return _Style(width, unit, _file_comma(ctx), True, False)
    first = node.args[0]
    visual = not isinstance(node.whitespace_before_args, cst.ParenthesizedWhitespace)
    if not visual:
        ln = ctx.pos(first).start.line
        first_line = ctx.lines[ln - 1]
        ind = first_line[: len(first_line) - len(first_line.lstrip(" \t"))]
        if ind.startswith(line_indent) and len(ind) > len(line_indent):
            unit = ind[len(line_indent):]
    last = node.args[-1]
    _, ve = ctx.vspan(last.value)
    _, ce = ctx.vspan(node)
    between = text[ve:ce - 1]
    close_own_line = "\n" in between or "\r" in between
    had_comma = isinstance(last.comma, cst.Comma)
    arg_lines = {ctx.pos(a).start.line for a in node.args}
    if had_comma:
        comma = True
    elif len(arg_lines) > 1:
        comma = False  # one per line (or several lines) without a trailing comma: keep it so
    else:
        comma = _file_comma(ctx)
    return _Style(width, unit, comma, close_own_line, visual)


def _file_unit(ctx: Context) -> str:
    """The file's indentation unit (file_style.py), read once per file: from the whole file's style when
    the context holds it (a window of a large file), else from the context's text."""
    got = ctx.layout_unit
    if got is None:
        whole = ctx.file_style
        got = ctx.layout_unit = whole.unit() if whole is not None else file_style.indent_unit(ctx.lines)
    return got


def _file_comma(ctx: Context) -> bool:
    """Whether the file's lists of one item per line end with a comma (no such list: yes)."""
    return _file_habits(ctx)[0]


def _file_habits(ctx: Context) -> tuple[bool, str, frozenset]:
    """The file's trailing-comma and quote habits (file_style.habits), read once per file: from the whole
    file's style when ``ctx`` is a window of it (window.py)."""
    got = ctx.layout_habits
    if got is None:
        whole = ctx.file_style
        got = ctx.layout_habits = whole.habits() if whole is not None else file_style.habits(ctx.text)
    return got
