"""Windowed parsing of a C++ file: parse only the declarations a site can be in, to show it has none.

Most C++ files the prefilter passes name the intrinsic only in the access-pointer layout (a
``same_as`` test, a registration that declares no legacy arity): they have no site, and parsing
all of such a file costs more than the analysis.  :func:`analyze` parses a *window* of the file
(tree-sitter's included ranges, so every node keeps its byte offset in the file) and runs the
analyzer's walk over it; when the walk finds no site at all, the file's analysis is the empty
one.  Any site, any parse error, anything the window cannot bound sends the file to the whole-file
analysis, which then decides everything exactly as before: the window only ever answers "no site".
That analysis starts its parse from the window's tree (``REUSE``: tree-sitter reuses the nodes inside
the window, so the window's bytes are not parsed twice), and the window's walk only counts sites
(``CppContext.probe``: a family that knows it has a site adds it before building its message and fix).

The window (:func:`plan`) is cut by a cheap lexical scan of the whole file (comments, string, raw
string and character literals, preprocessor lines, braces) into *items* at namespace scope: each
top-level declaration (a function, a class, a registration statement), each namespace or
``extern "C"`` opening and its closing brace, each preprocessor line.  It keeps:

* every declaration that holds the intrinsic's name (``[intrinsic] name``; anywhere, also inside
  longer names): every consumer, construction, registration and macro site needs that name in its
  outermost function or statement (``CppAnalyzer._hot_ranges``);
* every declaration with two names matching ``[helpers] offset_param`` (``rules/cpp.toml``) and no
  ``;`` between them, or a comment, a literal, a preprocessor line or a brace between them (where a
  ``;`` need not end a statement): a legacy printer helper (CPA105) has offset-like second and fourth
  parameters, whatever else it is named;
* every preprocessor line that holds the intrinsic's name (a macro that names the op, CPA109);
* for the enclosing context the checks read: every namespace and ``extern "C"`` opening and
  closing, every ``using`` declaration at namespace scope (the op an unqualified spelling names),
  every preprocessor conditional line at namespace scope (``#if`` ... ``#endif``, so a kept
  declaration keeps its place in the tree);

each stretched to whole lines (a declaration sharing a line with a kept one is kept too).

Class members (``MEMBERS``).  A class, struct or union definition that names the intrinsic is cut as a
namespace body is: its head (up to the body's brace; a template header, the class key, names and bases, no
parenthesis or ``=``), each member as a declaration (an access label goes with the member after it; a nested
class that names it is cut alike) and its close (the closing brace to the declaration's end).  The same rules
keep the head, the close, the members that name it or hold two offset-like names, the conditional lines and the
``using`` members.  Why it keeps every site: a member function defined in its class is an outermost function
(``_hot_ranges``), so a member that does not hold the name holds no consumer or construction, as a function at
namespace scope does not.  A class body the scan cannot bound stays whole.  In the scan, a declaration's
closing brace followed by ``{`` goes on (a constructor's brace initialiser before its body); a scan that keeps
two declarations as one only keeps more.

An Op variable declared outside every function (``CppContext.file_op_vars``: at namespace scope, as a class's
member, or set by a constructor's initialiser list) or a predicate that tests its parameter for the op
(``CppContext.op_predicates``) makes every function that names it hot, though the function need not name the op:
its declaration names the op, so it is in the window, and the window sends the file whole when its name occurs
outside the window (``_names_closed``).

Whole-file lookups.  The checks that look beyond a site's own declaration (CPA105's overload and
forwarding search, a construction's argument-array helper and its users, the hoisted names'
search, the emitted spellings, the merge pass's check macro, the fix re-parse) run only where a
site exists, which sends the file whole, with one exception: a construction whose argument array
is a call of a helper of the file (``Call(t, op, MakeArgs(...))``) is a site or not by what that
helper returns, which the analyzer looks up file-wide by name; so when the window holds such a call
and its callee's name also occurs outside the window, the file goes whole.  The lookups that
remain (CPA105's search for a pointer-only overload or a forwarding helper) can only remove a site,
so a window without those declarations reports at least the whole file's sites.

The file goes whole (:func:`plan` returns None) when the scan cannot bound its items: an unclosed
comment or literal, unbalanced braces, a line splice (``\\``) outside a preprocessor line, a ``//``
comment continued by a splice, a preprocessor conditional that opens and closes at different brace
depths or inside and outside a declaration, a ``'`` the scan cannot read as a character literal or
a digit separator, a NUL character; and :func:`analyze` sends it whole when the window's parse has
an ERROR or MISSING node.  What a window cannot see: parse errors outside it, which the whole-file
analysis counts only to refuse a file that is mostly unparsable (more than half its bytes in
errors): a file of balanced braces and closed literals of which tree-sitter reads less than half is
the one case where the two answers could differ.  ``tests/test_cpp_window.py`` compares both on
every C++ fixture, and (slow) on every C++ file of the benchmark trees and the realcpp trees that
names a trigger.

``ENABLED`` (environment ``CPASYNC_MIGRATE_CPP_WINDOW=0`` turns it off) is the switch, ``MEMBERS``
(``CPASYNC_MIGRATE_CPP_WINDOW_MEMBERS=0``) the cut of classes;
``MIN_BYTES`` (``CPASYNC_MIGRATE_CPP_WINDOW_MIN_BYTES``, default 16384) the size from which a file is
windowed.
"""
from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass
from typing import Optional

ENABLED = os.environ.get("CPASYNC_MIGRATE_CPP_WINDOW", "1") != "0"
MIN_BYTES = int(os.environ.get("CPASYNC_MIGRATE_CPP_WINDOW_MIN_BYTES", "16384"))
# A window that does not decide the file hands its tree to the whole file's parse, which reuses the nodes
# inside the window (tree-sitter's incremental parse over changed included ranges): each byte is parsed
# once.  CPASYNC_MIGRATE_CPP_WINDOW_REUSE=0 parses the whole file afresh; tests/test_cpp_window.py checks
# both give the same tree and the same analysis.
REUSE = os.environ.get("CPASYNC_MIGRATE_CPP_WINDOW_REUSE", "1") != "0"
MAX_SHARE = 0.5  # a window holding more of the file than this is not tried (the whole file is parsed)
# A class definition that names the op is cut into its head, its members and its close, as a namespace body is into its
# declarations, so the window keeps the members that name it, not the whole class (most of a pass's file is often one
# visitor class).  CPASYNC_MIGRATE_CPP_WINDOW_MEMBERS=0 keeps every such class whole, as before; tests/test_cpp_window.py
# checks that both give the whole file's analysis.
MEMBERS = os.environ.get("CPASYNC_MIGRATE_CPP_WINDOW_MEMBERS", "1") != "0"

# What the scan stops at, at namespace scope and inside a declaration (where ``;`` does not matter).
_STOP_NS = re.compile(rb"""[{};"'/#\\]""")
_STOP_IN = re.compile(rb"""[{}"'/#\\]""")
_SCOPE_HEAD = re.compile(rb"""\s*(?:(?:inline\s+)?namespace\b(?:\s*\[\[[^\]]*\]\])?[\w:\s]*|extern\s*"C(?:\+\+)?"\s*)""")
_CLASS_HEAD = re.compile(rb"\b(?:class|struct|union|enum)\b")
_USING = re.compile(rb"\s*using\b")
# Between two offset-like names, what may hold a ';' that does not end a statement: a comment, a literal, a
# preprocessor line, a brace (a lambda or an initializer in a default argument).
_OPAQUE = re.compile(rb"""[/"'#{]""")
_CONDITIONAL = re.compile(rb"#\s*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b")
_WORD_END = re.compile(rb"[A-Za-z0-9_]+$")
_RAW_PREFIXES = (b"R", b"LR", b"uR", b"UR", b"u8R")
_CHAR_PREFIXES = (b"L", b"u", b"U", b"u8")
# After a declaration's closing brace, what continues the same declaration (an initializer, a call on a
# lambda, the declarators after a class body are handled by _CLASS_HEAD).
_CONTINUES = b",=().-+*/&|<>?:!%^"
# A class definition's head (``MEMBERS``): a template header, then ``class``, ``struct`` or ``union`` and what names it and
# its bases, up to the body's brace; no parenthesis or ``=`` (a function returning a class, ``alignas(...)``: not cut).
# Linear in the head: a template header's angle brackets nest one deep at most (deeper ones: not cut).
_CLASS_DEF = re.compile(rb"(?:template\s*<[^{};<>]*+(?:<[^{};<>]*+>[^{};<>]*+)*+>\s*+)?(?:class|struct|union)\b[^{};=()]*+")
_MEMBER_DEPTH = 4  # classes nested deeper than this in a cut class stay whole (each level scans its body again)


class _Unbounded(Exception):
    """The scan cannot bound the file's items: the file is analysed whole."""


@dataclass
class Item:
    start: int
    end: int  # past its last byte
    kind: str  # "decl", "open", "close", "directive"
    conditional: bool = False  # a preprocessor conditional line (#if ... #endif)
    using: bool = False  # a using declaration at namespace scope
    head: int = -1  # (a declaration) its first brace at its own depth, -1: none


def _skip_space(data: bytes, i: int, n: int) -> int:
    """Past whitespace and comments from ``i`` (a block comment that does not end: ``_Unbounded``)."""
    while i < n:
        c = data[i]
        if c in b" \t\r\n\f\v":
            i += 1
        elif data.startswith(b"//", i):
            j = data.find(b"\n", i)
            if j == -1:
                return n
            if data[j - 1:j] == b"\\" or data[j - 2:j] == b"\\\r":
                raise _Unbounded("a // comment continued by a line splice")
            i = j + 1
        elif data.startswith(b"/*", i):
            j = data.find(b"*/", i + 2)
            if j == -1:
                raise _Unbounded("an unclosed block comment")
            i = j + 2
        else:
            break
    return i


def _line_end(data: bytes, i: int, n: int) -> int:
    """Past the end of the preprocessor line starting at ``i`` (its splices followed)."""
    while True:
        j = data.find(b"\n", i)
        if j == -1:
            return n
        k = j - 1
        if k >= 0 and data[k:k + 1] == b"\r":
            k -= 1
        if k >= 0 and data[k:k + 1] == b"\\":
            i = j + 1
            continue
        # a block comment opened on the line and closed on a later one would carry the line on
        line = data[i:j]
        opened = line.rfind(b"/*")
        if opened != -1 and line.find(b"*/", opened + 2) == -1 and b"//" not in line[:opened]:
            raise _Unbounded("a block comment that carries a preprocessor line on")
        return j + 1


def _string_end(data: bytes, i: int, n: int) -> int:
    """Past the string literal whose opening quote is at ``i``."""
    j = i + 1
    while True:
        k = data.find(b'"', j)
        if k == -1:
            raise _Unbounded("an unclosed string literal")
        if data.find(b"\n", j, k) != -1:
            raise _Unbounded("a string literal across lines")
        bs = 0
        while data[k - 1 - bs] == 0x5C and k - 1 - bs >= j:  # backslashes before the quote
            bs += 1
        if bs % 2 == 0:
            return k + 1
        j = k + 1


def _raw_end(data: bytes, i: int, n: int) -> int:
    """Past the raw string literal whose quote (after its ``R``) is at ``i``."""
    p = data.find(b"(", i + 1, i + 18)
    if p == -1:
        raise _Unbounded("a raw string without its delimiter")
    delim = data[i + 1:p]
    if any(c in b' ()\\\t\v\f\n"' for c in delim):
        raise _Unbounded("a raw string delimiter the scan does not read")
    k = data.find(b")" + delim + b'"', p + 1)
    if k == -1:
        raise _Unbounded("an unclosed raw string literal")
    return k + len(delim) + 2


def _char_end(data: bytes, i: int, n: int) -> Optional[int]:
    """Past the character literal at ``i``; None for a digit separator (``1'000``)."""
    m = _WORD_END.search(data, max(0, i - 64), i)
    if m is not None and m.end() == i:
        word = m.group()
        if word[:1].isdigit():
            return None
        if word not in _CHAR_PREFIXES:
            raise _Unbounded("a quote after a name")
    j = i + 1
    while True:
        k = data.find(b"'", j)
        if k == -1 or data.find(b"\n", j, k) != -1:
            raise _Unbounded("an unclosed character literal")
        bs = 0
        while data[k - 1 - bs] == 0x5C and k - 1 - bs >= j:
            bs += 1
        if bs % 2 == 0:
            return k + 1
        j = k + 1


def scan(data: bytes) -> list[Item]:
    """The file's items at namespace scope, in order (``_Unbounded`` when they cannot be bounded)."""
    return _scan(data, 0, False)[0]


def _scan(data: bytes, start: int, body: bool) -> tuple[list[Item], int]:
    """(items, end): the items from ``start`` at namespace scope; ``body``: ``start`` is inside a class body, whose
    members are read as a namespace's declarations, and ``end`` is its closing brace (else the file's length).

    Over 80 lines: one pass of a byte lexer whose states (comment, literal, preprocessor line, brace depth,
    open ``#if``, the declaration being scanned) are shared by every branch; split, each step would take and
    return all of them."""
    n = len(data)
    items: list[Item] = []
    scopes: list[int] = []  # brace depth of each open namespace / extern "C" body
    conds: list[tuple] = []  # (declaration start or -1, brace depth) of each open #if
    depth = 0
    decl = -1  # start of the declaration being scanned (-1: at namespace scope, between items)
    decl_depth = 0  # namespace depth the declaration started at
    head_end = -1  # where the declaration's first brace at its own depth is (-1: none yet)
    i = start
    stop = -1  # (body) the class body's closing brace
    while True:
        if decl == -1:
            i = _skip_space(data, i, n)
            if i >= n:
                break
            if data[i] == 0x23:  # '#': a preprocessor line between items
                e = _line_end(data, i, n)
                item = Item(i, e, "directive")
                m = _CONDITIONAL.match(data, i)
                if m:
                    item.conditional = True
                    _conditional(m.group(1), conds, -1, depth)
                items.append(item)
                i = e
                continue
            if data[i] == 0x7D:  # '}' closing a namespace
                if body and not scopes and not depth:
                    stop = i  # the class body's end
                    break
                if not scopes or scopes[-1] != depth:
                    raise _Unbounded("a closing brace without its opening")
                if any(d == depth and s == -1 for s, d in conds):
                    raise _Unbounded("a conditional across a namespace's end")
                scopes.pop()
                depth -= 1
                items.append(Item(i, i + 1, "close"))
                i += 1
                continue
            decl, decl_depth, head_end = i, depth, -1
        m = (_STOP_NS if depth == decl_depth else _STOP_IN).search(data, i)
        if m is None:
            raise _Unbounded("a declaration without its end")
        c, j = data[m.start()], m.start()
        if c == 0x7B:  # {
            if depth == decl_depth:
                head = data[decl:j]
                if head_end == -1 and _SCOPE_HEAD.fullmatch(head):
                    items.append(Item(decl, j + 1, "open"))
                    depth += 1
                    scopes.append(depth)
                    decl = -1
                    i = j + 1
                    continue
                if head_end == -1:
                    head_end = j
            depth += 1
            i = j + 1
        elif c == 0x7D:  # }
            if depth == decl_depth:  # the namespace's end after a declaration without its ';' (a macro)
                _end_decl(items, conds, decl, j, head_end)
                decl, i = -1, j
                continue
            depth -= 1
            i = j + 1
            if depth == decl_depth:
                k = _skip_space(data, i, n)
                nxt = data[k:k + 1]
                if nxt == b";":
                    _end_decl(items, conds, decl, k + 1, head_end)
                    decl, i = -1, k + 1
                elif nxt and (nxt in _CONTINUES or (nxt == b"{" and MEMBERS) or (
                        (nxt.isalpha() or nxt == b"_") and _CLASS_HEAD.search(data, decl, head_end))):
                    pass  # the declaration goes on: an initializer, declarators after a class body
                else:
                    _end_decl(items, conds, decl, i, head_end)
                    decl = -1
        elif c == 0x3B:  # ; at the declaration's own depth
            _end_decl(items, conds, decl, j + 1, head_end)
            decl, i = -1, j + 1
        elif c == 0x22:  # "
            w = _WORD_END.search(data, max(0, j - 8), j)
            if w is not None and w.end() == j and w.group() in _RAW_PREFIXES:
                i = _raw_end(data, j, n)
            else:
                i = _string_end(data, j, n)
        elif c == 0x27:  # '
            e = _char_end(data, j, n)
            i = j + 1 if e is None else e
        elif c == 0x2F:  # /
            if data.startswith(b"//", j) or data.startswith(b"/*", j):
                i = _skip_space(data, j, n)
            else:
                i = j + 1
        elif c == 0x23:  # '#': a preprocessor line inside a declaration, when it starts its line
            ls = data.rfind(b"\n", 0, j) + 1
            if data[ls:j].strip():
                i = j + 1  # '#' or '##' inside a macro argument: text
            else:
                mc = _CONDITIONAL.match(data, j)
                if mc:
                    _conditional(mc.group(1), conds, decl, depth)
                i = _line_end(data, j, n)
        else:  # a backslash
            if data.startswith(b"\n", j + 1) or data.startswith(b"\r\n", j + 1):
                raise _Unbounded("a line splice outside a preprocessor line")
            i = j + 1
    if decl != -1 or scopes or depth or conds or body and stop == -1:
        raise _Unbounded("the file ends inside a declaration, a namespace or a conditional")
    return items, (n if stop == -1 else stop)


def _conditional(word: bytes, conds: list, decl: int, depth: int) -> None:
    if word in (b"if", b"ifdef", b"ifndef"):
        conds.append((decl, depth))
        return
    if not conds or conds[-1] != (decl, depth):
        raise _Unbounded("a preprocessor conditional across a declaration or a brace")
    if word == b"endif":
        conds.pop()


def _end_decl(items: list, conds: list, start: int, end: int, head: int = -1) -> None:
    if conds and conds[-1][0] == start:
        raise _Unbounded("a declaration that ends inside its own conditional")
    items.append(Item(start, end, "decl", head=head))


def _members(data: bytes, items: list[Item], name: bytes, level: int = 0) -> list[Item]:
    """``items`` with each class definition that names the op cut into its head (an ``open`` item), its members
    (read as a namespace body's declarations, nested classes cut alike) and its close (``}`` to the end of the
    declaration, a ``close`` item); a class whose body the scan cannot bound stays whole (``MEMBERS``)."""
    out: list[Item] = []
    for it in items:
        parts = None
        if level < _MEMBER_DEPTH and it.kind == "decl" and it.head != -1 and data.find(name, it.start, it.end) != -1 \
                and _CLASS_DEF.fullmatch(data, it.start, it.head):
            try:
                members, close = _scan(data, it.head + 1, True)
                if close < it.end:
                    parts = [Item(it.start, it.head + 1, "open"), *_members(data, members, name, level + 1),
                             Item(close, it.end, "close")]
            except (_Unbounded, IndexError):
                parts = None
        out.extend(parts or (it,))
    return out


def _offset_regex(cpp) -> Optional[re.Pattern]:
    """The names matching ``[helpers] offset_param`` as a search over text, when the pattern is a plain
    suffix (``_offset$``); None otherwise (the window cannot find the helpers then)."""
    pat = cpp.offset_param.pattern
    if not re.fullmatch(r"\w+\$", pat):
        return None
    return re.compile(re.escape(pat[:-1]).encode() + rb"(?![A-Za-z0-9_])")


def plan(data: bytes, cpp) -> Optional[list[tuple[int, int]]]:
    """The byte ranges of ``data`` to parse (ordered, disjoint, whole lines); None: parse the whole file."""
    if b"\x00" in data:
        return None
    offset = _offset_regex(cpp)
    if offset is None:
        return None
    try:
        items = scan(data)
    except (_Unbounded, IndexError):
        return None
    name = cpp.op_name.encode()
    if MEMBERS:
        items = _members(data, items, name)
    starts = [it.start for it in items]
    keep = [False] * len(items)
    i = data.find(name)
    while i != -1:  # every occurrence of the name: its item
        k = bisect.bisect_right(starts, i) - 1
        if k >= 0 and i < items[k].end:
            keep[k] = True
        i = data.find(name, i + 1)
    last: dict = {}
    for m in offset.finditer(data):  # two offset-like names in one item, no ';' between them
        k = bisect.bisect_right(starts, m.start()) - 1
        if k < 0 or m.start() >= items[k].end or items[k].kind != "decl" or keep[k]:
            continue
        prev = last.get(k)
        if prev is not None and (data.find(b";", prev, m.start()) == -1 or _OPAQUE.search(data, prev, m.start())):
            keep[k] = True
        last[k] = m.end()
    for k, it in enumerate(items):
        if it.kind in ("open", "close") or it.conditional or (it.kind == "decl" and _USING.match(data, it.start)):
            keep[k] = True
    return _line_ranges(data, items, keep)


def _line_ranges(data: bytes, items: list[Item], keep: list[bool]) -> list[tuple[int, int]]:
    """The kept items stretched to whole lines; an item sharing a line with a kept one is kept too."""
    n = len(data)
    # the line ends are searched in the bytes where asked (a list of every newline cost a tenth of the plan)

    def lstart(b: int) -> int:  # past the last newline before byte b
        return data.rfind(b"\n", 0, b) + 1

    def lend(b: int) -> int:  # past the newline of the line holding byte b - 1
        j = data.find(b"\n", max(b - 1, 0))
        return j + 1 if j != -1 else n

    changed = True
    while changed:  # a sweep to the right, then one to the left, until no item is added
        changed = False
        for k in range(len(items) - 1):
            if keep[k] and not keep[k + 1] and items[k + 1].start < lend(items[k].end):
                keep[k + 1] = changed = True
        for k in range(len(items) - 1, 0, -1):
            if keep[k] and not keep[k - 1] and items[k - 1].end > lstart(items[k].start):
                keep[k - 1] = changed = True
    out: list[tuple[int, int]] = []
    for k, it in enumerate(items):
        if keep[k]:
            a, b = lstart(it.start), lend(it.end)
            if out and a <= out[-1][1]:
                out[-1] = (out[-1][0], max(out[-1][1], b))
            else:
                out.append((a, b))
    return out


def _helper_calls_closed(an, ranges: list[tuple[int, int]]) -> bool:
    """No construction in the window takes its argument array from a call whose callee's name also
    occurs outside the window (the analyzer looks that helper and its users up file-wide).

    A call constructor's callee ends with the last part of one of ``[op] call_constructors``: each
    occurrence of that word in the window is climbed from to the call it names, if any."""
    from .source import named, squash, whole_words

    cpp, data, root = an.cpp, an.src.data, an.src.root
    word = whole_words({c.split("::")[-1] for c in cpp.call_constructors})
    outside = []
    pos = 0
    for a, b in ranges:
        outside.append((pos, a))
        pos = b
    outside.append((pos, len(data)))
    for lo, hi in ranges:
        for m in word.finditer(data, lo, hi):
            node = root.descendant_for_byte_range(m.start(), m.end())
            while node is not None and node.type not in ("call_expression", "translation_unit") and \
                    node.type in ("identifier", "qualified_identifier", "namespace_identifier", "template_type",
                                  "type_identifier", "template_function", "scoped_identifier"):
                node = node.parent
            call = node
            if call is None or call.type != "call_expression":
                continue
            fn = call.child_by_field_name("function")
            if fn is None or squash(an.text_of(fn)) not in cpp.call_constructors:
                continue
            args = call.child_by_field_name("arguments")
            a = named(args) if args is not None else []
            if len(a) < 3 or a[2].type != "call_expression":
                continue
            callee = a[2].child_by_field_name("function")
            text = squash(an.text_of(callee)) if callee is not None else ""
            short = re.split(r"::|->|\.", text)[-1]
            if not short:
                return False
            pat = whole_words([short])
            if any(pat.search(data, x, y) for x, y in outside if x < y):
                return False
    return True


def _names_closed(an, ranges: list[tuple[int, int]], names: list) -> bool:
    """No name of ``names`` (Op variables outside every function, predicates testing for the op: a function that
    names one is hot though it need not name the op, CppAnalyzer._outer_var_functions) occurs outside the window."""
    if not names:
        return True
    from .source import whole_words

    data, pat = an.src.data, whole_words(names)
    pos = 0
    for a, b in [*ranges, (len(data), len(data))]:
        if pos < a and pat.search(data, pos, a):
            return False
        pos = b
    return True


def analyze(text: str, path: str, options):
    """The file's analysis when a window shows it has no site (the empty analysis); None otherwise
    (the caller analyses the whole file)."""
    return attempt(text, path, options)[0]


def attempt(text: str, path: str, options, data: Optional[bytes] = None):
    """``(analysis, tree)``: the analysis as :func:`analyze` gives it; where that is None and a window was
    parsed, ``tree`` is the window's tree (its nodes are reused by the whole file's parse when ``REUSE``
    is on), else None."""
    if not ENABLED:
        return None, None
    if data is None:
        data = text.encode("utf-8", "surrogatepass")
    if len(data) < MIN_BYTES:
        return None, None
    from ..findings import Analysis
    from .analyzer import CppAnalyzer
    from .cpprules import load_cpp_rules

    ranges = plan(data, load_cpp_rules(options.rules))
    if ranges is None or sum(b - a for a, b in ranges) > len(data) * MAX_SHARE:
        return None, None  # little to gain from a window of most of the file, and a site would cost both parses
    an = CppAnalyzer(text, path, options, window=ranges, data=data)
    tree = an.src.tree if REUSE else None
    if an.errors or an.src.root.has_error:
        return None, tree
    if not _helper_calls_closed(an, ranges):
        return None, tree
    if not _names_closed(an, ranges, [*an.file_op_vars(), *an.op_predicates()]):
        return None, tree
    an.probe = True  # sites are only counted
    an.collect(until_site=True)
    if an.sites:
        return None, tree
    return Analysis(findings=[]), None
