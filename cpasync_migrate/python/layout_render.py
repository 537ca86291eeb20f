"""The parser-free half of ``layout.py``: the laid-out call's model (``_Call``, ``_Arg``, ``_Atom``), its
rendering within the line length (``_render``, the rules in ``layout.py``'s docstring) and the quotes an
inserted string takes (``requote``).

``layout.py`` reads a rewritten call back with libcst and hands the model to ``_render``; the fast pass
(``fast_edit.py``) reads the same call back with the standard library's ``ast`` and hands over the same
model, so both lay a fix out by one code.  Nothing here imports a parser.
"""
from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Optional, Union

from ..findings import Edit

# line_context looks for the call's line end up to the first "\n", not through the rest of the text (a window of a
# large file is as long as the file's lines): environment CPASYNC_MIGRATE_FAST_EDIT_MEMO=0 turns it off, with fast_edit's
BOUNDED = os.environ.get("CPASYNC_MIGRATE_FAST_EDIT_MEMO", "1") != "0"


@dataclass
class _Atom:
    lines: list[str]  # the text of one argument as written; continuation lines keep their indent
    shift_from: Optional[int]  # column its first line had in the original text (None: not known)
    chain: Optional[list[str]] = None  # an operator chain's pieces ("a * b", "+ c"): where it may split

    def flat(self) -> Optional[str]:
        return self.lines[0] if len(self.lines) == 1 else None


@dataclass
class _Arg:
    node: Union["_Call", _Atom]
    prefix: str = ""  # "name=" or "*"
    leading: list[str] = field(default_factory=list)  # own-line comments before it
    trailing: Optional[str] = None  # comment after its comma


@dataclass
class _Call:
    head: str
    args: list[_Arg]
    magic: bool  # its arguments end with a comma: always split
    open_comment: Optional[str] = None  # comment after "("
    dangling: list[str] = field(default_factory=list)  # own-line comments before ")"

    def flat(self) -> Optional[str]:
        if self.magic or self.open_comment or self.dangling:
            return None
        parts = []
        for a in self.args:
            t = a.node.flat()
            if t is None or a.leading or a.trailing:
                return None
            parts.append(a.prefix + t)
        return f"{self.head}({', '.join(parts)})"


@dataclass
class _Style:
    width: int
    unit: str  # one continuation indent step
    comma: bool  # trailing comma after the last of one-per-line arguments
    close_own_line: bool
    visual: bool  # arguments aligned after "("


def line_context(text: str, rs: int, re_: int) -> tuple[str, str, str]:
    """(prefix, suffix, indent) of the call spanning ``text[rs:re_]``: its line's text before the call, the text
    after it up to the end of its last line, and the prefix's leading blanks."""
    ls = text.rfind("\n", 0, rs) + 1
    prefix = text[ls:rs]
    le = len(text)
    if BOUNDED:  # the first "\n" bounds the search for "\r" (a "\r\n" starts with one): not the rest of the text
        i = text.find("\n", re_)
        j = text.find("\r", re_, len(text) if i == -1 else i)
        le = min(x for x in (i, j, le) if x != -1)
    else:
        for nl in ("\r\n", "\n", "\r"):
            i = text.find(nl, re_)
            if i != -1:
                le = min(le, i)
    return prefix, text[re_:le], prefix[: len(prefix) - len(prefix.lstrip(" \t"))]


def str_width(s: str) -> int:
    if s.isascii() and "\t" not in s:
        return len(s)
    w = 0
    for ch in s:
        if ch == "\t":
            w += 4
        elif unicodedata.combining(ch):
            continue
        else:
            w += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return w


_DQ_STRING_RE = re.compile(r'"([^"\'\\\r\n]*)"')


def requote(edits: list[Edit], habits: tuple) -> list[Edit]:
    """The edits with the double-quoted strings they insert single-quoted, in a file that prefers single
    quotes (``habits``: ``file_style.habits``; ``layout.py``'s rule 7).  A string the file already holds as
    written (a declaration's dtype the fix copies verbatim) is kept."""
    _, quote, held = habits
    if quote != "'":
        return edits

    def one(m: re.Match) -> str:
        return m.group(0) if m.group(0) in held else f"'{m.group(1)}'"

    out = []
    for e in edits:
        r = _DQ_STRING_RE.sub(one, e.replacement) if '"' in e.replacement else e.replacement
        out.append(e if r == e.replacement else Edit(e.start, e.end, r))
    return out


# ------------------------------------------------------------------------------------------ render


def _shifted(atom: _Atom, col: int) -> list[str]:
    if atom.shift_from is None or len(atom.lines) == 1:
        return list(atom.lines)
    d = col - atom.shift_from
    out = [atom.lines[0]]
    for ln in atom.lines[1:]:
        if d >= 0:
            out.append(" " * d + ln if ln.strip() else ln)
        else:
            lead = len(ln) - len(ln.lstrip(" "))
            out.append(ln[min(lead, -d):])
    return out


def _render(node, col: int, indent: str, tail: int, style: _Style, top: bool = False) -> list[str]:
    """Lines of ``node`` starting at column ``col`` of a line indented ``indent``; ``tail`` columns follow it.

    The first line is the node's text only (the caller puts it after what precedes it); the others are
    whole lines.
    """
    if isinstance(node, _Atom):
        if node.chain and col + str_width(node.lines[0]) + tail > style.width:
            return [node.chain[0]] + [indent + piece for piece in node.chain[1:]]
        return _shifted(node, col)
    w = style.width
    flat = node.flat()
    if flat is not None and col + str_width(flat) + tail <= w:
        return [flat]
    inner = indent + style.unit
    iw = str_width(inner)
    close_own = style.close_own_line if top else True
    visual = style.visual if top else False
    comma = style.comma if top else (style.comma or node.magic)
    if top and node.magic:
        comma = True
    if visual and node.args and not node.args[0].leading and not node.open_comment \
            and _fits_aligned(node, col, tail, style, comma, close_own):
        return _aligned(node, col, indent, tail, style, comma, close_own)
    simple = not node.magic and not node.open_comment and not node.dangling \
        and all(not a.leading and not a.trailing for a in node.args)
    if simple and node.args and all(a.node.flat() is not None for a in node.args):
        body = ", ".join(a.prefix + a.node.flat() for a in node.args)
        if iw + str_width(body) + (0 if close_own else tail + 1) <= w:
            if close_own:
                return [node.head + "(", inner + body, indent + ")"]
            return [node.head + "(", inner + body + ")"]
    if simple and len(node.args) == 1 and isinstance(node.args[0].node, _Call) and not node.args[0].prefix:
        sub = _render(node.args[0].node, iw, inner, 0 if close_own else tail + 1, style)
        lines = [node.head + "(", inner + sub[0], *sub[1:]]
        if close_own:
            return lines + [indent + ")"]
        lines[-1] += ")"
        return lines
    first = node.head + "("
    if node.open_comment:
        first += "  " + node.open_comment
    lines = [first]
    for i, a in enumerate(node.args):
        last = i == len(node.args) - 1
        for c in a.leading:
            lines.append(inner + c)
        after, room = _after_arg(a, last, comma, close_own, tail)
        sub = _render(a.node, iw + len(a.prefix), inner, room, style)
        lines.append(inner + a.prefix + sub[0])
        lines.extend(sub[1:])
        lines[-1] += after
    for c in node.dangling:
        lines.append(inner + c)
    if close_own or node.dangling or node.args and node.args[-1].trailing:
        lines.append(indent + ")")
    else:
        lines[-1] += ")"
    return lines


def _after_arg(a, last: bool, comma: bool, close_own: bool, tail: int) -> tuple[str, int]:
    """The text after an argument on its line (its comma, its comment) and the columns that line needs
    beyond the argument (that text, and for the last argument the ")" and what follows the call when
    the ")" does not go on a line of its own)."""
    after = ("," if not last or comma else "") + ("  " + a.trailing if a.trailing else "")
    return after, str_width(after) + (tail + 1 if last and not close_own else 0)


def _fits_aligned(node: _Call, col: int, tail: int, style: _Style, comma: bool, close_own: bool) -> bool:
    """Every argument fits on its line at the column after "(" (else the call is split the hanging way)."""
    acol = col + str_width(node.head) + 1
    for i, a in enumerate(node.args):
        t = a.node.flat()
        if t is None:
            return False
        _, room = _after_arg(a, i == len(node.args) - 1, comma, close_own, tail)
        if acol + str_width(a.prefix + t) + room > style.width:
            return False
    return True


def _aligned(node: _Call, col: int, indent: str, tail: int, style: _Style, comma: bool, close_own: bool) -> list[str]:
    """One argument per line, aligned under the first, which follows "(" (the call's own layout)."""
    acol = col + str_width(node.head) + 1
    pad = " " * acol
    lines: list[str] = []
    for i, a in enumerate(node.args):
        last = i == len(node.args) - 1
        if i:
            for c in a.leading:
                lines.append(pad + c)
        after, room = _after_arg(a, last, comma, close_own, tail)
        sub = _render(a.node, acol + len(a.prefix), pad, room, style)
        head = (node.head + "(") if i == 0 else pad
        lines.append(head + a.prefix + sub[0])
        lines.extend(sub[1:])
        lines[-1] += after
    for c in node.dangling:
        lines.append(pad + c)
    if close_own or node.dangling or node.args[-1].trailing:
        lines.append(indent + ")")
    else:
        lines[-1] += ")"
    return lines
