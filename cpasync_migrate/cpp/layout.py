"""Lay out one C++ statement the way clang-format's LLVM-based styles do.

The rewrites replace whole statements (a builder's argument list shrinks to named access pointers, the
merge pass's branch gets new calls), and a repository that runs clang-format in CI must accept the
result as it accepted the original.  The tool does not need clang-format: this module re-implements the
part of its line breaking that the rewritten statements use, and declines (returns None) for anything
else, so the caller keeps the text it would have written without a layout.

What is modelled (``BasedOnStyle: LLVM`` and the styles derived from it, with their defaults
``AlignAfterOpenBracket: Align``, ``BinPackArguments: true``, ``Cpp11BracedListStyle: true``,
``BreakBeforeBinaryOperators: None``, ``AlignOperands: Align``): declarations with one declarator
(``T x = e;``, ``T x{...};``), assignments, ``return`` and expression statements whose expressions are
calls, brace lists, binary operators (not ``<<``), member and subscript expressions, qualified and
template names, literals and parenthesised expressions; and stream statements ``os << a << b ...;``
whose operands are single tokens (names, member reads, literals) or calls of such (``_lay_chain``).
Comments, lambdas, conditionals, casts, other ``<<`` chains, string concatenation, macros and non-ASCII
text are declined.

The search is clang-format's: a shortest path over "break here or not" at each token, with its
penalties (20 per binding level plus the token's own split penalty, 15 for the first break of a
nesting level, 1000000 per character past the column limit) and its rules for where a break may or
must go (after a comma or an opening bracket, after ``=`` and binary operators; not inside an
operand that follows a comma on the same line; not after the ``{`` of a list nested in a call or a
list; once a nested level breaks, the next argument of every outer level starts a line).
``tests/test_cpp_layout.py`` checks it against the clang-format wheel.
"""
from __future__ import annotations

import heapq
import os
import re
from dataclasses import dataclass
from typing import Optional

from ..clang_format import Style
from .source import parse_bytes

EXCESS = 1_000_000  # PenaltyExcessCharacter
FIRST_BREAK = 15  # the first line break of a nesting level
BINDING = 20  # per binding level
BREAK_ASSIGNMENT = 2  # PenaltyBreakAssignment
BREAK_FIRST_PARAMETER = 19  # PenaltyBreakBeforeFirstCallParameter (and any opening bracket)
_PRECEDENCE = {
    "||": 4, "&&": 5, "|": 6, "^": 7, "&": 8, "==": 9, "!=": 9, "<": 10, ">": 10, "<=": 10, ">=": 10,
    ">>": 12, "+": 13, "-": 13, "*": 14, "/": 14, "%": 14,
}
# A statement whose search visits more states, or queues more, is declined (kept as the rewrite wrote it).  The
# statements of the fixtures, of the benchmark trees and of the examples visit at most 4,220 states and queue at
# most 4,872; brackets nested ten deep around one argument grow the search about 1.8 times per level (at the old
# bound of 200,000 states, 80 levels in a 400-byte statement took 18 s and 2 GB).
_MAX_STATES = 20_000
_MAX_QUEUED = 60_000
# and whose queued states hold more levels of nesting in all (each queued state keeps its stack of levels: the
# memory; the same statements queue at most about 40,000)
_MAX_QUEUED_LEVELS = 400_000


@dataclass
class _Tok:
    text: str
    space: int = 1  # spaces before it when it stays on the line
    kind: str = "atom"  # atom, open, close, comma, semi, assign, binop, member, unary, keyword
    can_break: bool = False
    base_penalty: int = 0
    level: int = 0  # brackets around it (the opening bracket itself is outside)
    strength: int = 1  # clang-format's binding strength
    match: int = -1  # the matching bracket
    braced: bool = False  # an opening/closing brace of a list
    fake_open: int = 0  # binary expressions starting at this token
    fake_close: int = 0  # binary expressions ending at this token
    two: bool = False  # a comma or binary operator that is the only one of its list or expression
    extra: int = 0  # binary expressions starting here whose operands are indented (an argument)


class _Decline(Exception):
    pass


# ----------------------------------------------------------------------------- tokens
_ATOMIC = {
    "identifier", "field_identifier", "type_identifier", "namespace_identifier", "number_literal",
    "char_literal", "true", "false", "null", "nullptr", "this", "primitive_type", "qualified_identifier",
    "template_type", "template_function", "sized_type_specifier", "auto", "string_literal",
}
_PLAIN = {"field_expression", "subscript_expression", "pointer_expression", "unary_expression"}
_DECLINED_INSIDE = {
    "comment", "lambda_expression", "conditional_expression", "cast_expression", "concatenated_string",
    "raw_string_literal", "compound_literal_expression", "new_expression", "delete_expression",
    "comma_expression", "sizeof_expression", "initializer_pair", "ERROR",
}


def _norm(text: str) -> str:
    if "\n" in text and '"' in text:
        raise _Decline()
    s = re.sub(r"\s+", " ", text)
    s = re.sub(r"\s*(::|<|>|\.|->|\[|\]|\(|\))\s*", r"\1", s)
    return re.sub(r"\s*,\s*", ", ", s)


def _has(node, types) -> bool:
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type in types:
            return True
        stack.extend(n.children)
    return False


class _Tokens:
    def __init__(self, data: bytes):
        self.data = data
        self.toks: list[_Tok] = []
        self.chains: list[tuple[int, int]] = []  # token spans of member accesses on a call's result
        self.complex: list[tuple[int, int]] = []  # binary expressions whose breaking is not modelled

    def text(self, n) -> str:
        return self.data[n.start_byte:n.end_byte].decode()

    def add(self, text, kind="atom", space=1) -> int:
        self.toks.append(_Tok(text=text, kind=kind, space=space))
        return len(self.toks) - 1

    def atom(self, n) -> None:
        if _has(n, _DECLINED_INSIDE):
            raise _Decline()
        if n.type in ("string_literal", "char_literal"):
            text = self.text(n)  # verbatim: the spaces and brackets inside a literal are its value
            if "\n" in text:
                raise _Decline()
            self.add(text)
            return
        if _has(n, {"string_literal", "char_literal"}):
            raise _Decline()  # a literal inside a name (a template argument): not normalised, not modelled
        self.add(_norm(self.text(n)))

    def expr(self, n) -> None:
        """The tokens of the expression ``n``, by its kind (one method each); ``_Decline`` for a kind the layout
        does not model."""
        t = n.type
        if t in _DECLINED_INSIDE:
            raise _Decline()
        if t in _ATOMIC or (t in _PLAIN and not _has(n, {"call_expression", "initializer_list", "binary_expression",
                                                       "parenthesized_expression"})):
            if t in ("unary_expression", "pointer_expression"):
                self._unary(n)
                return
            self.atom(n)
            return
        step = {
            "call_expression": self._call, "field_expression": self._field,
            "subscript_expression": self._subscript, "initializer_list": self._braced,
            "parenthesized_expression": self._parenthesized, "binary_expression": self._binary,
            "unary_expression": self._unary, "pointer_expression": self._unary,
        }.get(t)
        if step is None:
            raise _Decline()
        step(n)

    def _unary(self, n) -> None:
        op, arg = n.child_by_field_name("operator"), n.child_by_field_name("argument")
        if op is None or arg is None:
            raise _Decline()
        self.add(self.text(op), "unary")
        start = len(self.toks)
        self.expr(arg)
        self.toks[start].space = 0

    def _call(self, n) -> None:
        fn, args = n.child_by_field_name("function"), n.child_by_field_name("arguments")
        if fn is None or args is None or args.type != "argument_list":
            raise _Decline()
        start = len(self.toks)
        self.expr(fn)
        self.group(args, "(", ")", space=0)
        if fn.type == "field_expression" and _has(fn.child_by_field_name("argument"), {"call_expression"}):
            self.chains.append((start, len(self.toks)))

    def _field(self, n) -> None:
        arg, op, field = n.child_by_field_name("argument"), n.child_by_field_name("operator"), \
            n.child_by_field_name("field")
        if arg is None or op is None or field is None:
            raise _Decline()
        start = len(self.toks)
        self.expr(arg)
        self.add(self.text(op), "member", space=0)
        self.add(_norm(self.text(field)), space=0)
        if _has(arg, {"call_expression"}):
            self.chains.append((start, len(self.toks)))

    def _subscript(self, n) -> None:
        arg = n.child_by_field_name("argument")
        idx = n.child_by_field_name("indices") or n.child_by_field_name("index")
        if arg is None or idx is None or _has(idx, {"call_expression", "initializer_list"}):
            raise _Decline()
        self.expr(arg)
        self.add(_norm(self.text(idx)), space=0)

    def _braced(self, n) -> None:
        self.group(n, "{", "}", space=1, braced=True)

    def _parenthesized(self, n) -> None:
        inner = [c for c in n.named_children]
        if len(inner) != 1:
            raise _Decline()
        o = self.add("(", "open")
        first = len(self.toks)
        self.expr(inner[0])
        self.toks[first].space = 0
        c = self.add(")", "close", space=0)
        self.toks[o].match, self.toks[c].match = c, o

    def _binary(self, n) -> None:
        left, op, right = n.child_by_field_name("left"), n.child_by_field_name("operator"), \
            n.child_by_field_name("right")
        o = self.text(op)
        if left is None or op is None or right is None or o not in _PRECEDENCE:
            raise _Decline()
        if o in ("<", ">", ">>") and not (self.data[op.start_byte - 1:op.start_byte].isspace()
                                         and self.data[op.end_byte:op.end_byte + 1].isspace()):
            raise _Decline()  # a template argument list the parser read as a comparison
        same = lambda x: x is not None and x.type == "binary_expression" and \
            _PRECEDENCE.get(self.text(x.child_by_field_name("operator"))) == _PRECEDENCE[o]
        start = len(self.toks)
        self.expr(left)
        j = self.add(o, "binop")
        self.toks[j].two = not (same(left) or same(right) or same(n.parent))
        self.expr(right)
        simple = not (_has(left, {"binary_expression"}) or _has(right, {"binary_expression"})) \
            and n.parent is not None and n.parent.type not in ("init_declarator", "assignment_expression",
                                                                "binary_expression")
        if not simple:
            self.complex.append((start, len(self.toks)))
        self.toks[start].fake_open += 1
        self.toks[-1].fake_close += 1

    def group(self, n, open_text, close_text, space, braced=False) -> None:
        kids = list(n.children)
        if not kids or kids[0].type != open_text or kids[-1].type != close_text:
            raise _Decline()
        items = [k for k in kids[1:-1] if k.type != ","]
        commas = [k for k in kids[1:-1] if k.type == ","]
        if len(commas) != max(len(items) - 1, 0):
            raise _Decline()  # a trailing comma: clang-format puts one element per line
        if braced and any(it.type == "initializer_list" for it in items):
            raise _Decline()  # a list of lists: clang-format's column layout
        o = self.add(open_text, "open", space=space)
        self.toks[o].braced = braced
        for j, it in enumerate(items):
            first = len(self.toks)
            self.expr(it)
            if j == 0:
                self.toks[first].space = 0
            if len(items) > 1 and (j > 0 or self.toks[first].fake_open):
                # a binary expression as one of several arguments: its operands are indented
                if j > 0 or it.type == "binary_expression":
                    self.toks[first].extra = 1 if it.type == "binary_expression" else 0
            if j < len(items) - 1:
                c = self.add(",", "comma", space=0)
                self.toks[c].two = len(items) == 2
        c = self.add(close_text, "close", space=0)
        self.toks[c].braced = braced
        self.toks[o].match, self.toks[c].match = c, o

    def statement(self, n) -> None:
        t = n.type
        if t == "return_statement":
            kids = [k for k in n.children]
            vals = [k for k in kids if k.is_named]
            if len(vals) != 1 or kids[-1].type != ";":
                raise _Decline()
            self.add("return", "keyword", space=0)
            self.expr(vals[0])
            self.add(";", "semi", space=0)
            return
        if t == "expression_statement":
            vals = [k for k in n.children if k.is_named]
            if len(vals) != 1 or n.children[-1].type != ";":
                raise _Decline()
            e = vals[0]
            if e.type == "assignment_expression":
                left, right = e.child_by_field_name("left"), e.child_by_field_name("right")
                op = e.child_by_field_name("operator")
                if left is None or right is None or (op is not None and self.text(op) != "="):
                    raise _Decline()
                self.expr(left)
                self.toks[0].space = 0
                self.add("=", "assign")
                self.expr(right)
            else:
                self.expr(e)
                self.toks[0].space = 0
            self.add(";", "semi", space=0)
            return
        if t == "declaration":
            ty = n.child_by_field_name("type")
            decls = n.children_by_field_name("declarator")
            if ty is None or len(decls) != 1 or decls[0].type != "init_declarator":
                raise _Decline()
            pre = [k for k in n.children if k.start_byte < ty.start_byte]
            if any(k.type != "type_qualifier" for k in pre):
                raise _Decline()
            head = " ".join([self.text(k) for k in pre] + [_norm(self.text(ty))])
            self.add(head, space=0)
            d = decls[0]
            name, value = d.child_by_field_name("declarator"), d.child_by_field_name("value")
            if name is None or value is None or name.type != "identifier":
                raise _Decline()
            self.add(self.text(name))
            if value.type == "initializer_list" and not any(k.type == "=" for k in d.children):
                self.group(value, "{", "}", space=0, braced=True)
            else:
                self.add("=", "assign")
                self.expr(value)
            self.add(";", "semi", space=0)
            return
        raise _Decline()


def _annotate(toks: list[_Tok]) -> None:
    level, strength = 0, 1
    stack = []
    for i, tk in enumerate(toks):
        if tk.kind == "close":
            level -= 1
            strength = stack.pop()
        tk.level, tk.strength = level, strength
        if tk.kind == "open":
            stack.append(strength)
            level += 1
            strength += 1
        if i == 0:
            continue
        prev = toks[i - 1]
        if tk.kind in ("close", "comma", "semi"):
            continue
        if prev.kind == "comma":
            tk.can_break, tk.base_penalty = True, 1
        elif prev.kind == "open":
            # the "{" of a list nested in a call or a list stays on the line of its first element
            nested_brace = prev.braced and i >= 2 and toks[i - 2].kind in ("open", "comma")
            tk.can_break, tk.base_penalty = not nested_brace, BREAK_FIRST_PARAMETER
        elif prev.kind == "assign":
            tk.can_break, tk.base_penalty = not (tk.kind == "open" and tk.braced), BREAK_ASSIGNMENT
        elif prev.kind == "binop":
            tk.can_break, tk.base_penalty = True, _PRECEDENCE[prev.text]


# ----------------------------------------------------------------------------- search
# A level of the stack: (indent, last_space, break_before_parameter, contains_break, no_line_break,
# no_break_in_operand, is_fake)
_INDENT, _LAST, _BBP, _CLB, _NLB, _NBO, _FAKE = range(7)


def _place(toks, style, i, column, stack, newline, first_indent, sol_level, low_level):
    """The state after placing token ``i``; None where it may not go so; else (penalty, column,
    stack, sol_level, low_level)."""
    tk = toks[i]
    prev = toks[i - 1]
    stack = [list(s) for s in stack]
    # fake parentheses of binary expressions open before the token is placed
    top = stack[-1]
    penalty = 0
    if newline:
        if not tk.can_break or top[_NBO] or top[_NLB]:
            return None
        if prev.kind == "open" and prev.text == "(" and low_level < sol_level and low_level < tk.level:
            return None
        if prev.kind == "assign":
            column = max(top[_LAST], top[_INDENT]) + style.continuation
        else:
            column = top[_INDENT]
        if not top[_CLB]:
            penalty += FIRST_BREAK
        top[_CLB] = True
        penalty += BINDING * tk.strength + tk.base_penalty
        for s in stack[:-1]:
            s[_BBP] = True
        if prev.kind in ("comma", "binop"):
            top[_BBP] = False
        elif prev.kind not in ("open",) and tk.kind != "binop":
            top[_BBP] = True
        top[_LAST] = column
        sol_level = low_level = tk.level
    else:
        if prev.kind == "comma" and top[_BBP]:
            return None  # mustBreak: the next parameter after a nested break
        column += tk.space
        if prev.kind == "open":
            top[_INDENT] = column
            if prev.braced:
                top[_LAST] = column
        elif prev.kind == "comma":
            top[_LAST] = column
        if prev.kind in ("comma", "binop") and not prev.two:
            top[_NBO] = True
        low_level = min(low_level, tk.level)
    for k in range(tk.fake_open):
        parent = stack[-1]
        ind = column + (style.continuation if k == 0 and tk.extra else 0)
        stack.append([ind, column, False, False, parent[_NLB] or parent[_NBO], False, True])
    if tk.kind == "comma":
        # the operand after this comma starts fresh
        while stack[-1][_FAKE]:
            stack.pop()
        stack[-1][_NBO] = False
    column += len(tk.text)
    if column > style.column_limit:
        penalty += EXCESS * (column - style.column_limit)
    if tk.kind == "open":
        top = stack[-1]
        new_indent = top[_LAST] + style.continuation
        stack.append([new_indent, top[_LAST], False, False, top[_NLB] or top[_NBO], False, False])
    elif tk.kind == "close":
        while stack[-1][_FAKE]:
            stack.pop()
        stack.pop()
        low_level = min(low_level, tk.level)
    for _ in range(tk.fake_close):
        if len(stack) > 1 and stack[-1][_FAKE]:
            stack.pop()
    return penalty, column, stack, sol_level, low_level


def _freeze(stack):
    return tuple(tuple(s) for s in stack)


def _search(toks, style, first_indent):
    n = len(toks)
    start_col = first_indent + len(toks[0].text)
    stack0 = [[first_indent, first_indent, False, False, False, False, False]]
    for _ in range(toks[0].fake_open):
        stack0.append([first_indent, first_indent, False, False, False, False, True])
    if toks[0].kind == "open":
        raise _Decline()
    pen0 = EXCESS * max(0, start_col - style.column_limit)
    counter = levels = 0
    heap = [(pen0, counter, 1, start_col, _freeze(stack0), 0, 0, None)]
    seen = set()
    while heap:
        pen, _, i, col, stack, sol, low, path = heapq.heappop(heap)
        if i == n:
            breaks = set()
            while path is not None:
                j, nl, path = path
                if nl:
                    breaks.add(j)
            return breaks
        key = (i, col, stack, sol, low)
        if key in seen:
            continue
        seen.add(key)
        if len(seen) > _MAX_STATES:
            raise _Decline()
        for newline in (False, True):
            r = _place(toks, style, i, col, stack, newline, first_indent, sol, low)
            if r is None:
                continue
            p, c, st, s2, l2 = r
            counter += 1
            levels += len(st)
            if counter > _MAX_QUEUED or levels > _MAX_QUEUED_LEVELS:
                raise _Decline()
            heapq.heappush(heap, (pen + p, counter, i + 1, c, _freeze(st), s2, l2, (i, newline, path)))
    raise _Decline()


# A switch (CPASYNC_MIGRATE_CPP_LAYOUT_MEMO=0: every statement searched, as before; a measuring switch).  On: the
# search's answer remembered by the statement's shape, what the search reads of each token (its kind, length and
# attributes; the text only of brackets), so statements that differ only in their names' and numbers' spelling of
# one length are searched once.  The search costs about 0.1 s a statement (thousands of states): a generated
# function of hundreds of builders took a minute.  tests/test_cpp_layout.py checks the same layouts on and off.
MEMO = os.environ.get("CPASYNC_MIGRATE_CPP_LAYOUT_MEMO", "1") != "0"
_MEMO_SIZE = 512
_SEARCHED: dict = {}


def _shape(toks, style, first_indent) -> tuple:
    return (first_indent, style.column_limit, style.continuation,
            tuple((t.kind, len(t.text), t.text if t.kind != "atom" else None, t.space, t.can_break, t.base_penalty,
                   t.level, t.strength, t.match, t.braced, t.fake_open, t.fake_close, t.two, t.extra) for t in toks))


def _search_once(toks, style, first_indent):
    """``_search``'s breaks (a new set), remembered by the statement's shape; a decline is remembered too."""
    if not MEMO:
        return _search(toks, style, first_indent)
    key = _shape(toks, style, first_indent)
    got = _SEARCHED.get(key)
    if got is None:
        try:
            got = frozenset(_search(toks, style, first_indent))
        except _Decline:
            got = _DECLINED
        if len(_SEARCHED) >= _MEMO_SIZE:
            _SEARCHED.pop(next(iter(_SEARCHED)))  # the oldest
        _SEARCHED[key] = got
    if got is _DECLINED:
        raise _Decline()
    return set(got)


_DECLINED = object()


def _render(toks, style, first_indent, breaks) -> str:
    # replay to get the columns
    stack = [[first_indent, first_indent, False, False, False, False, False]]
    for _ in range(toks[0].fake_open):
        stack.append([first_indent, first_indent, False, False, False, False, True])
    col = first_indent + len(toks[0].text)
    out = [toks[0].text]
    sol = low = 0
    for i in range(1, len(toks)):
        nl = i in breaks
        r = _place(toks, style, i, col, stack, nl, first_indent, sol, low)
        assert r is not None
        _, c, stack, sol, low = r
        if nl:
            out.append("\n" + " " * (c - len(toks[i].text)) + toks[i].text)
        else:
            out.append(" " * toks[i].space + toks[i].text)
        col = c
    return "".join(out)


def layout_statement(text: str, indent: int, style: Style) -> Optional[str]:
    """``text`` (one statement, any line breaks) laid out for a first line at column ``indent``: the
    first line without its indentation, the others with theirs, joined by ``\\n``; None when the
    statement holds something this layout does not model."""
    if not text.isascii():
        return None
    data = ("void f() {\n" + text + "\n}\n").encode()
    tree = parse_bytes(data)
    root = tree.root_node
    if root.has_error:
        return None
    fns = [c for c in root.named_children]
    if len(fns) != 1 or fns[0].type != "function_definition":
        return None
    body = fns[0].child_by_field_name("body")
    stmts = [c for c in body.named_children] if body is not None else []
    if len(stmts) != 1:
        return None
    tk = _Tokens(data)
    try:
        chain = _stream_chain(tk, stmts[0])
        if chain is not None:
            return _lay_chain(chain, indent, style)
        tk.statement(stmts[0])
        toks = tk.toks
        _annotate(toks)
        if style.column_limit <= 0:
            breaks = set()
        else:
            breaks = _search_once(toks, style, indent)
        if any(a < b < e for a, e in tk.chains + tk.complex for b in breaks):
            return None  # clang-format breaks call chains before their "." / "->": not modelled
        return _render(toks, style, indent, breaks)
    except (_Decline, RecursionError):
        return None


# ----------------------------------------------------------------------------- stream statements
_CHAIN_ATOMS = {"identifier", "field_expression", "qualified_identifier", "string_literal", "number_literal",
                "char_literal", "this"}


def _chain_operand(tk: _Tokens, n) -> str:
    """One operand of a stream chain as one-line text; _Decline for what the chain layout does not model:
    anything but a name, member read or literal, or a call whose arguments are such."""
    if n.type in ("string_literal", "char_literal"):
        text = tk.text(n)  # verbatim: the spaces inside a literal are its value
        if "\n" in text or n.type == "string_literal" and not text.startswith('"'):
            raise _Decline()
        return text
    if n.type in ("identifier", "qualified_identifier", "number_literal", "this"):
        if _has(n, _DECLINED_INSIDE):
            raise _Decline()
        return _norm(tk.text(n))
    if n.type == "field_expression":
        if _has(n, {"call_expression", "subscript_expression"} | _DECLINED_INSIDE):
            raise _Decline()
        return _norm(tk.text(n))
    if n.type == "call_expression":
        fn, args = n.child_by_field_name("function"), n.child_by_field_name("arguments")
        if fn is None or args is None or fn.type not in ("identifier", "qualified_identifier", "field_expression") \
                or _has(fn, {"call_expression"}):
            raise _Decline()
        for a in args.named_children:
            if a.type not in _CHAIN_ATOMS | {"subscript_expression"} or a.type == "string_literal" or \
                    _has(a, {"call_expression", "string_literal", "char_literal"}):
                raise _Decline()
        if _has(n, _DECLINED_INSIDE):
            raise _Decline()
        return _norm(tk.text(n))
    raise _Decline()


def _stream_chain(tk: _Tokens, stmt) -> Optional[list[str]]:
    """``[head, operand, ...]`` for an expression statement ``head << operand << ...;``; None for any
    other statement (the general layout takes it); _Decline for a chain whose operands it does not model."""
    if stmt.type != "expression_statement" or stmt.children[-1].type != ";":
        return None
    vals = [k for k in stmt.children if k.is_named]
    if len(vals) != 1:
        return None
    e = vals[0]

    def is_shift(x) -> bool:
        op = x.child_by_field_name("operator") if x.type == "binary_expression" else None
        return op is not None and tk.text(op) == "<<"

    if not is_shift(e):
        return None
    operands = []
    while is_shift(e):
        operands.append(e.child_by_field_name("right"))
        e = e.child_by_field_name("left")
    if e is None or e.type not in ("identifier", "field_expression") or _has(e, {"call_expression"}) or \
            any(x is None for x in operands):
        raise _Decline()
    return [_norm(tk.text(e))] + [_chain_operand(tk, x) for x in reversed(operands)]


def _forces_break(operand: str) -> bool:
    """clang-format's mustBreak before a ``<<`` that follows ``endl`` or a literal ending in a newline."""
    return operand.endswith('\\n"') or operand == "'\\n'" or operand.split("::")[-1] == "endl"


def _lay_chain(chain: list[str], indent: int, style: Style) -> Optional[str]:
    """clang-format's layout of ``head << a << b ...;`` (LLVM, ``AlignOperands: Align``): a line breaks only
    before a ``<<``, and a continuation line starts with its ``<<`` under the first one.  Every such break
    costs the same (split penalty 1 plus 20 for the binding level, the level's first break 15 once), so the
    cheapest layout is the one with the fewest lines, and among those clang-format's search (no break tried
    first at each token) keeps the one that fills each line as far as it goes: a greedy fill.  A break is
    forced after an operand that is a literal ending in a newline (``"...\\n"``, ``'\\n'``) or ``endl``
    when more follows, once the statement does not fit on one line (one that fits is never broken).
    A break costs 25 after a string literal ending in ``:`` or ``=`` (a label): such a chain is declined.
    Breaking before the first ``<<`` (PenaltyBreakFirstLessLess, 120) or inside an operand is not
    modelled: where the head and its first operand, or an operand under the first ``<<``, do not fit the
    column limit, or a break before the first ``<<`` would save a line, the chain is declined (None)."""
    head, ops = chain[0], chain[1:]
    one_line = head + "".join(" << " + o for o in ops) + ";"
    if style.column_limit <= 0 or indent + len(one_line) <= style.column_limit:
        return one_line  # a statement that fits stays on its line, whatever would force a break
    if any(_label(o) for o in ops[:-1]):
        return None  # a break after "name:" / "x=" costs 25, not 2: not modelled
    lines = _fill(head, ops, indent, indent + len(head) + 1, style)
    if lines is None:
        return None
    # breaking before the first "<<" costs PenaltyBreakFirstLessLess (120) but aligns the rest at the
    # continuation indent; where that would save a line the choice is clang-format's sum: not modelled
    alt = _fill(head, ops, indent, indent + style.continuation, style, break_first=True)
    if alt is not None and len(alt) < len(lines):
        return None
    return "\n".join(lines)


def _label(operand: str) -> bool:
    """clang-format's isLabelString: a string literal whose trimmed text ends in ``:`` or ``=``."""
    if not operand.startswith('"'):
        return False
    content = operand[1:-1].strip() if operand.endswith('"') else operand[1:].strip()
    return len(content) > 1 and content[-1] in ":="


def _fill(head: str, ops: list[str], indent: int, align: int, style: Style, break_first=False):
    """The lines of a greedy fill, continuation lines starting ``<<`` at column ``align`` (the first line
    without its indentation, ``;`` on the last); None where a line is too wide.  ``break_first``: the
    head alone on the first line, the first ``<<`` starting the second."""
    lines = [head] if break_first else [head + " << " + ops[0]]
    rest = ops if break_first else ops[1:]
    col = indent + len(lines[0])
    forced = break_first or _forces_break(ops[0])
    for j, o in enumerate(rest):
        piece = " << " + o
        semi = 1 if j == len(rest) - 1 else 0
        if forced or col + len(piece) + semi > style.column_limit:
            lines.append(" " * align + "<< " + o)
            col = align + 3 + len(o)
        else:
            lines[-1] += piece
            col += len(piece)
        forced = _forces_break(o)
    lines[-1] += ";"
    widths = [indent + len(lines[0])] + [len(x) for x in lines[1:]]
    return None if max(widths) > style.column_limit else lines
