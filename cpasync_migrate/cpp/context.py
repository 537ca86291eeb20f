"""What every C++ check shares: the file, its parse tree, the rules, and the questions each site asks.

:class:`CppContext` holds one file (its text, tree-sitter tree and parse errors, the C++
rules of ``rules/cpp.toml`` and the source and target API generations) and answers the
questions every site family asks: which function a node is in and its qualified name,
whether a call names the intrinsic's Op (directly or through a local ``Op`` variable),
which IR op an unqualified spelling names in its context (``[op.context]`` of
``rules/cpp.toml``), whether a node is next to a parse error, and how the legacy and the
target argument layouts are worded in messages.

:class:`PendingSite` is a finding under construction.  Its message is kept in parts (what
the site is, what its fix does, why it is left or not edited) and put together only when the
finding is made, so that a suppressed site's message is the same without the fix part and
nothing has to be cut back out of a joined string.

The site families live in their own modules: ``constructions.py`` (CPA101, CPA102, CPA110),
``consumers.py`` (CPA103, CPA104, CPA106, CPA107), ``declarations.py`` (CPA105, CPA109) and
``merge.py`` (CPA111); ``analyzer.py`` walks the file once and gives each node to them.
"""
from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass, field
from typing import Optional

from ..clang_format import Style
from ..findings import Applicability, FrontEndOptions
from .. import codes
from . import reparse
from .cpprules import CppRules, load_cpp_rules
from .source import (Source, ancestors, error_nodes, named, nodes_around, nodes_around_any, nodes_of_types, squash,
                     whole_words)

# The lean walk (CPASYNC_MIGRATE_CPP_LEAN=0 turns it off): the nodes the checks read are found around the
# bytes that matter (the occurrences of the op's name, of an Op variable's name, of the offset-like names)
# by queries over those bytes alone, instead of queries that walk the whole tree or a whole function: the
# analyzer's walk (CppAnalyzer._lean_nodes), the function around a node (func_of) and a function's Op
# variables (op_vars).  tests/test_cpp_speedups.py compares both settings.
LEAN = os.environ.get("CPASYNC_MIGRATE_CPP_LEAN", "1") != "0"

_INT_RE = re.compile(r"^(\d+)([uUlL]*)$")


def int_value(text: str) -> Optional[int]:
    """The value of a C++ integer literal (``5``, ``6U``), else None."""
    m = _INT_RE.match(text.strip())
    return int(m.group(1)) if m else None


def int_suffix(text: str) -> str:
    """The suffix of a C++ integer literal (``"U"`` of ``6U``); "" when there is none."""
    m = _INT_RE.match(text.strip())
    return m.group(2) if m else ""


def short(text: str, limit: int = 60) -> str:
    """``text`` on one line, cut to ``limit`` characters (for quoting code in a message)."""
    s = " ".join(text.split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


@dataclass
class PendingSite:
    """A finding under construction (byte offsets), its message in parts.

    The finding's message is ``message``, then ``; fix: <fix_note>`` when the site has a
    fix, then ``; <outcome>`` when it is left for a person or not edited.
    """

    node: object
    code: str
    message: str = ""  # what the site is
    fix_note: Optional[str] = None  # what the fix does
    outcome: Optional[str] = None  # why it is not fixed: "left for a person: ..." or "not edited: ..."
    edits: list = field(default_factory=list)  # (start_byte, end_byte, replacement)
    applicability: Applicability = Applicability.SAFE
    assumptions: list = field(default_factory=list)
    set_established: bool = False  # the assumptions are facts a complete change set establishes (sets.py)
    needs_function: str = ""  # ... when it also rewrites this function's other member (a helper's definition)
    info: bool = False
    fixable: bool = False
    op: Optional[str] = None  # the IR op ("tir.ptx_cp_async" | "tl.ptx_cp_async")
    role: Optional[str] = None  # "builder" | "reader" | "definition"
    function: Optional[str] = None  # the finding's function where it is not the enclosing definition

    def leave(self, reason: str) -> None:
        """The site is left for a person, for ``reason``."""
        self.outcome = f"left for a person: {reason}"

    def park(self, reason: str) -> None:
        """The site is not edited, for ``reason`` (a parse problem): it becomes CPA108."""
        self.code = codes.CPP_SITE_NEAR_PARSE_ERROR
        self.outcome = f"not edited: {reason}"

    def full_message(self) -> str:
        out = self.message
        if self.fix_note is not None:
            out += f"; fix: {self.fix_note}"
        if self.outcome is not None:
            out += f"; {self.outcome}"
        return out

    def suppressed_message(self) -> str:
        """The message of the site suppressed by a comment: no fix is offered."""
        out = self.message
        if self.outcome is not None:
            out += f"; {self.outcome}"
        return out + "; suppressed by a comment"


class CppContext:
    """One C++ file and the questions every site family asks of it (see the module docstring).

    Typed state: the file (``text``, ``src``, ``errors``, ``nl``), the rules (``cpp``, ``legacy``,
    ``target``), the layout style rewritten code follows (``style``, clang_format.py's), and what the
    walk fills in.  The site families (constructions, consumers, declarations, the merge pass) are
    units holding it as ``ctx``: they add :class:`PendingSite` objects to ``sites`` and set ``tag``
    to the IR op and the role of the sites they are building.
    """

    text: str
    path: str
    options: FrontEndOptions
    cpp: CppRules
    src: Source
    errors: list
    style: Style
    # fns, fn_starts: every function definition in document order and their starts (properties: filled by
    # the walk, or by one query of the whole tree the first time they are asked for)
    dead_ranges: list[tuple[int, int]]  # dead branches (consumers.py): no site inside
    array_helpers_seen: set  # functions returning an argument array, already judged (constructions.py)
    hoisted: list  # (function, block start, block end) of each list whose access pointers were named
    outside: Optional[str]  # the text outside every function body, once asked for (constructions.py)
    tag: tuple  # (IR op, role) of the sites being built
    tested_ops: list  # IR ops the consumer branch being read tests, in order (consumers.py, merge.py)
    tested_opnode: object  # the op node of its first test
    sites: list[PendingSite]
    nl: str
    probe: bool

    def __init__(self, text: str, path: str, options: FrontEndOptions, window: Optional[list] = None,
                 old_tree=None, data: Optional[bytes] = None):
        self.text = text
        self.path = path
        self.options = options
        self.rules = options.rules
        self.cpp = load_cpp_rules(options.rules)
        # window: byte ranges parsed alone (window.py), None: the whole file; old_tree: a window's tree the
        # whole file's parse reuses; data: the text's UTF-8 bytes where the caller has them
        self.src = Source(text, window, old_tree, data)
        if window is None:
            reparse.remember(text, self.src.tree)  # the engine's re-parse check of this file's rewrite (reparse.py)
        self.errors = error_nodes(self.src.root)
        self.legacy = self.rules.legacy
        self.target = options.target
        self.style = getattr(options, "cpp_style", None) or Style()  # LLVM's 80 columns without a .clang-format
        self._op_vars: dict = {}
        self._file_op_vars: Optional[dict] = None  # name -> op call node (file_op_vars)
        self._predicates: Optional[dict] = None  # name -> (kind, op call nodes) (op_predicates)
        self._name_spans: Optional[list] = None
        # how the site being built reached its op, where the fixes do not follow it: an Op variable of file_op_vars,
        # a lookup by the registered name (op_getter); each a phrase for the message
        self.outer_op_uses: list = []
        self.dead_ranges = []
        self._fns: Optional[list] = None
        self._fn_starts: Optional[list[int]] = None
        self._around: dict = {}  # node id -> the function around it (func_of, LEAN)
        self._scopes: dict = {}  # node id -> its ScopeIndex (scope_index.py)
        self._defs_named: Optional[dict] = None  # short name -> [(definition, declarator)] (definitions_named)
        # the walk only asks whether the file has a site (window.py): a family that knows it adds one may add
        # it bare (no message, no fix) and return
        self.probe = False
        self.array_helpers_seen = set()
        self.hoisted = []
        self.outside = None
        self._usings: Optional[list] = None  # `using namespace X;` directives (filled on demand)
        self.tag = (None, None)
        self.tested_ops = []
        self.tested_opnode = None
        self.sites = []
        self.nl = "\r\n" if "\r\n" in text else "\n"

    # ------------------------------------------------------------------ util
    def text_of(self, node) -> str:
        return self.src.text_of(node)

    @property
    def fns(self) -> list:
        if self._fns is None:
            self._fns = nodes_of_types(self.src.root, ("function_definition",))
            self._fn_starts = [f.start_byte for f in self._fns]
        return self._fns

    @property
    def fn_starts(self) -> list[int]:
        if self._fn_starts is None:
            _ = self.fns
        return self._fn_starts

    def func_of(self, node):
        """The innermost function definition around ``node`` (not ``node`` itself)."""
        lo, hi = node.start_byte, node.end_byte
        if LEAN and lo < hi:  # the definitions around the node's bytes, found by a query over them
            key = node.id
            if key not in self._around:
                # those around its first byte (a query over the node's whole span would visit all of it)
                found = [f for f in nodes_around(self.src.root, ("function_definition",), [(lo, lo + 1)])[0]
                         if f != node and hi <= f.end_byte]
                self._around[key] = max(found, key=lambda f: (f.start_byte, -f.end_byte)) if found else None
            return self._around[key]
        fns, starts = self.fns, self.fn_starts
        # Enclosing definitions form a chain; the one that starts last is the innermost.
        for i in range(bisect.bisect_right(starts, lo) - 1, -1, -1):
            f = fns[i]
            if f.end_byte >= hi and f != node:
                return f
        return None

    def qualname(self, fn) -> Optional[str]:
        decl = self.fn_declarator(fn) if fn is not None else None
        return self.declarator_name(decl) if decl is not None else None

    @staticmethod
    def fn_declarator(fn):
        """A function definition's ``function_declarator`` (below pointer and reference declarators), or None."""
        decl = fn.child_by_field_name("declarator")
        while decl is not None and decl.type != "function_declarator":
            decl = decl.child_by_field_name("declarator")
        return decl

    def declarator_name(self, fdecl) -> str:
        inner = fdecl.child_by_field_name("declarator")
        name = squash(self.text_of(inner)) if inner is not None else "?"
        scopes = []
        for a in ancestors(fdecl):
            if a.type in ("class_specifier", "struct_specifier"):
                n = a.child_by_field_name("name")
                if n is not None:
                    scopes.append(self.text_of(n))
        if scopes:
            name = "::".join(list(reversed(scopes)) + [name])
        return name

    def is_op_call(self, node) -> bool:
        if node is None or node.type != "call_expression":
            return False
        args = node.child_by_field_name("arguments")
        fn = node.child_by_field_name("function")
        if args is None or fn is None or named(args):
            return False
        return self.cpp.is_op_spelling(self.text_of(fn))

    def op_getter(self, node) -> Optional[str]:
        """The IR op of ``Op::Get("tl.ptx_cp_async")`` (a getter of ``[op] getters`` called with one string that
        is a name of ``[op.registered]``), else None."""
        if node is None or node.type != "call_expression" or not self.cpp.op_getters:
            return None
        fn, args = node.child_by_field_name("function"), node.child_by_field_name("arguments")
        a = named(args) if args is not None else []
        if fn is None or len(a) != 1 or a[0].type != "string_literal" or squash(self.text_of(fn)) not in \
                self.cpp.op_getters:
            return None
        text = self.text_of(a[0])
        return self.cpp.op_registered.get(text[1:-1]) if text.startswith('"') and text.endswith('"') else None

    def op_vars(self, fn) -> dict:
        """Local variables of ``fn`` that hold the intrinsic's Op: name -> op call node."""
        if fn is None:
            return {}
        key = fn.id
        if key not in self._op_vars:
            found = {}
            body = fn.child_by_field_name("body")
            lo, hi = (body.start_byte, body.end_byte) if body is not None else (0, 0)
            # An Op variable's initialiser names the op: a body without the name declares none.
            data, name = self.src.data, self.cpp.op_name.encode()
            name_in_body = body is not None and data.find(name, lo, hi) != -1
            if name_in_body and LEAN:  # an Op variable's declaration holds the name: those around each occurrence
                occ = []
                i = data.find(name, lo, hi)
                while i != -1:
                    occ.append((i, i + len(name)))
                    i = data.find(name, i + 1, hi)
                seen = {n.id: n for around in nodes_around(body, ("declaration",), occ) for n in around}
                decls = sorted(seen.values(), key=lambda n: (n.start_byte, -n.end_byte))
            else:
                decls = nodes_of_types(body, ("declaration",), [(lo, hi)]) if name_in_body else []
            for n in decls:
                if n.start_byte < lo or n.end_byte > hi:
                    continue  # around the body, not in it
                ty = n.child_by_field_name("type")
                quals = "".join(self.text_of(c) for c in n.children if c.type == "type_qualifier")
                for d in n.children_by_field_name("declarator"):
                    if d.type != "init_declarator":
                        continue
                    val = d.child_by_field_name("value")
                    if (self.is_op_call(val) or self.op_getter(val)) and ty is not None and \
                            self.cpp.is_op_type(quals + self.text_of(ty)):
                        found[self.leaf_name(d.child_by_field_name("declarator"))] = val
            self._op_vars[key] = found
        return self._op_vars[key]

    def name_spans(self) -> list[tuple[int, int]]:
        """The byte spans of every occurrence of the op's name (also inside longer names), in order."""
        if self._name_spans is None:
            data, name = self.src.data, self.cpp.op_name.encode()
            occ = []
            i = data.find(name)
            while i != -1:
                occ.append((i, i + len(name)))
                i = data.find(name, i + 1)
            self._name_spans = occ
        return self._name_spans

    def file_op_vars(self) -> dict:
        """Op variables declared outside every function: at namespace scope (``static const Op& kCp =
        builtin::ptx_cp_async();``, a static member's definition), as a class's members (``const Op& cp_ = ...;``,
        ``Op cp_{...};``) or set by a constructor's initialiser list (``: cp_(builtin::ptx_cp_async())``): name ->
        the op call.  A function that reads one names no op itself, so its sites are found only through these
        (``CppAnalyzer``: the functions that name one are hot, and their sites are left for a person).  A name
        also declared otherwise is still taken: a site too many is reported, never one too few."""
        if self._file_op_vars is None:
            found: dict = {}
            occ = self.name_spans()
            kinds = ("declaration", "field_declaration", "field_initializer")
            # (each node once, in time linear in the file where occurrences lie deep inside one another)
            for n in sorted(nodes_around_any(self.src.root, kinds, occ) if occ else [], key=lambda n: n.start_byte):
                for var, val in self._declared_op_vars(n):
                    found.setdefault(var, val)
            self._file_op_vars = found
        return self._file_op_vars

    def op_predicates(self) -> dict:
        """Functions of the file that only test their one parameter for the op, so that a caller tests a call
        without naming the op: ``bool IsCpAsync(const Op& op) { return op == builtin::ptx_cp_async() || op ==
        tl::ptx_cp_async(); }`` (kind "op": called with ``X->op``) or ``bool IsCopy(const CallNode* c) { return
        c->op.same_as(builtin::ptx_cp_async()); }`` (kind "call": called with ``X``): short name -> (kind, the op
        call nodes it tests).  Like ``file_op_vars``, a site found through one is left for a person."""
        if self._predicates is None:
            found: dict = {}
            fns = {f.id: f for f in nodes_around_any(self.src.root, ("function_definition",), self.name_spans())}
            if self.file_op_vars():  # a predicate may test through one of them (whole names: they do not overlap)
                spans = [m.span() for m in whole_words(self.file_op_vars()).finditer(self.src.data)]
                fns.update((f.id, f) for f in nodes_around_any(self.src.root, ("function_definition",), spans))
            for fn in sorted(fns.values(), key=lambda f: f.start_byte):
                got = self._predicate(fn)
                decl = self.fn_declarator(fn) if got is not None else None
                inner = decl.child_by_field_name("declarator") if decl is not None else None
                if inner is not None:
                    found.setdefault(self.short_name(inner), got)
            self._predicates = found
        return self._predicates

    def _predicate(self, fn) -> Optional[tuple]:
        """(kind, op call nodes) when ``fn``'s body is ``return <tests of its one parameter, joined by ||>;``."""
        body = fn.child_by_field_name("body")
        stmts = named(body) if body is not None else []
        decl = self.fn_declarator(fn)
        plist = decl.child_by_field_name("parameters") if decl is not None else None
        params = named(plist) if plist is not None else []
        if len(stmts) != 1 or stmts[0].type != "return_statement" or not named(stmts[0]) or len(params) != 1:
            return None
        pname = self.leaf_name(params[0].child_by_field_name("declarator"))
        terms, stack = [], [named(stmts[0])[0]]
        while stack:
            t = stack.pop()
            while t.type == "parenthesized_expression" and len(named(t)) == 1:
                t = named(t)[0]
            if t.type == "binary_expression" and self.text_of(t.child_by_field_name("operator")) == "||":
                stack += [t.child_by_field_name("right"), t.child_by_field_name("left")]
            else:
                terms.append(t)
        saved = list(self.outer_op_uses)
        try:
            return self._predicate_terms(fn, pname, terms)
        finally:
            self.outer_op_uses = saved  # (the predicate's own op reads are not the caller's site's)

    def _predicate_terms(self, fn, pname: str, terms: list) -> Optional[tuple]:
        kinds, ops = set(), []
        for t in terms:
            if t.type == "binary_expression" and self.text_of(t.child_by_field_name("operator")) == "==":
                pairs = [(t.child_by_field_name("left"), t.child_by_field_name("right")),
                         (t.child_by_field_name("right"), t.child_by_field_name("left"))]
            elif t.type == "call_expression" and t.child_by_field_name("function") is not None and \
                    t.child_by_field_name("function").type == "field_expression" and \
                    self.text_of(t.child_by_field_name("function").child_by_field_name("field")) == self.cpp.same_as:
                a = named(t.child_by_field_name("arguments"))
                pairs = [(t.child_by_field_name("function").child_by_field_name("argument"), a[0])] if len(a) == 1 else []
            else:
                return None
            for subject, other in pairs:
                kind = self._subject_kind(subject, pname)
                opnode = self.op_node(other, fn) if kind is not None else None
                if opnode is not None:
                    kinds.add(kind)
                    ops.append(opnode)
                    break
            else:
                return None
        return (kinds.pop(), ops) if len(kinds) == 1 else None

    def _subject_kind(self, subject, pname: str) -> Optional[str]:
        """What a predicate tests of its parameter ``pname``: "op" (the parameter itself), "call" (``pname->op``)."""
        if subject is None:
            return None
        if subject.type == "identifier" and self.text_of(subject) == pname:
            return "op"
        if subject.type == "field_expression" and self.text_of(subject.child_by_field_name("argument")) == pname \
                and self.text_of(subject.child_by_field_name("field")) == self.cpp.op_field:
            return "call"
        return None

    def _declared_op_vars(self, n) -> list:
        """(name, op call) of each Op variable the declaration or member initialiser ``n`` sets outside a function."""
        if n.type == "field_initializer":
            kids = named(n)
            val = self._op_value(kids[-1]) if len(kids) == 2 and kids[0].type == "field_identifier" else None
            return [(self.text_of(kids[0]), val)] if val is not None else []
        ty = n.child_by_field_name("type")
        quals = "".join(self.text_of(c) for c in n.children if c.type == "type_qualifier")
        if ty is None or not self.cpp.is_op_type(quals + self.text_of(ty)):
            return []
        out = []
        if n.type == "field_declaration":
            val = self._op_value(n.child_by_field_name("default_value"))
            if val is not None:
                out = [(self.leaf_name(d), val) for d in n.children_by_field_name("declarator")]
        else:
            for d in n.children_by_field_name("declarator"):
                val = self._op_value(d.child_by_field_name("value")) if d.type == "init_declarator" else None
                if val is not None:
                    out.append((self.leaf_name(d.child_by_field_name("declarator")), val))
        if not out or self.func_of(n) is not None:
            return []  # none, or local variables (op_vars)
        return [(k, v) for k, v in out if k]

    def _op_value(self, v):
        """The op call an initialiser is (``= op()``, ``{op()}``, ``(op())``), else None."""
        if v is not None and v.type in ("initializer_list", "argument_list") and len(named(v)) == 1:
            v = named(v)[0]
        return v if self.is_op_call(v) or self.op_getter(v) else None

    def definitions_named(self, name: str) -> list:
        """(definition, its declarator) of each function definition of the file whose declarator's name, without
        its qualifiers, is ``name``, in the file's order (the file's definitions listed once)."""
        if self._defs_named is None:
            from collections import defaultdict

            self._defs_named = defaultdict(list)
            for fn in self.fns:
                d = self.fn_declarator(fn)
                inner = d.child_by_field_name("declarator") if d is not None else None
                if inner is not None:
                    self._defs_named[self.short_name(inner)].append((fn, d))
        return self._defs_named.get(name, [])

    def short_name(self, node) -> str:
        """A declarator's or callee's name without its qualifiers (``codegen::PrintCpAsyncAssembly``: the last part)."""
        return squash(self.text_of(node)).split("::")[-1]

    def scope_index(self, node):
        """What ``node`` (a function, its body, a class body) declares, assigns and names, by name; one walk of
        it per file (scope_index.py)."""
        from .scope_index import ScopeIndex

        idx = self._scopes.get(node.id)
        if idx is None:
            idx = self._scopes[node.id] = ScopeIndex(node, self.text_of, self.leaf_name)
        return idx

    def leaf_name(self, decl) -> str:
        while decl is not None and decl.type not in ("identifier", "field_identifier"):
            inner = decl.child_by_field_name("declarator")
            if inner is None:
                inner = next((c for c in decl.named_children if c.type in ("identifier", "field_identifier")), None)
            decl = inner
        return self.text_of(decl) if decl is not None else ""

    def op_node(self, node, fn):
        """The op-call node ``node`` denotes (itself, or an Op variable's initialiser: a local one of ``fn``, else one
        declared outside every function, noted in ``outer_op_uses``)."""
        if self.is_op_call(node):
            return node
        if self.op_getter(node):
            self.outer_op_uses.append(f"looked up by its registered name (`{squash(self.text_of(node))}`)")
            return node
        if node is not None and node.type == "field_expression" and self.text_of(
                node.child_by_field_name("argument")) == "this":
            node = node.child_by_field_name("field")  # `this->cp_`
        if node is not None and node.type in ("identifier", "field_identifier"):
            text = self.text_of(node)
            found = self.op_vars(fn).get(text) if node.type == "identifier" else None
            if found is None:
                found = self.file_op_vars().get(text)
                if found is not None:
                    self.outer_op_uses.append(f"`{text}`, an Op variable declared outside the function")
            if found is not None and self.op_getter(found):
                self.outer_op_uses.append(f"`{text}`, set by a lookup of its registered name "
                                          f"(`{squash(self.text_of(found))}`)")
            return found
        return None

    def ir_op(self, opcall) -> Optional[str]:
        """The IR op an op-call node names: by its qualifier, else by its context."""
        got = self.op_getter(opcall)
        if got is not None:
            return got
        fn = opcall.child_by_field_name("function") if opcall is not None else None
        if fn is None:
            return self.cpp.context_default
        op = self.cpp.op_of_scope(self.cpp.op_scope(self.text_of(fn)))
        return op if op is not None else self.context_op(opcall)

    def context_op(self, node) -> Optional[str]:
        """The op an unqualified ``ptx_cp_async()`` at ``node`` names ([op.context] in cpp.toml):
        the innermost enclosing namespace that names one, else the using-namespace directives in
        force there when they agree, else the rules' default."""
        for a in ancestors(node):
            if a.type != "namespace_definition":
                continue
            name = a.child_by_field_name("name")
            if name is None:
                name = next((c for c in a.named_children if c.type in ("namespace_identifier",
                                                                       "nested_namespace_specifier")), None)
            path = squash(self.text_of(name)) if name is not None else ""
            for key, op in self.cpp.context_namespaces.items():
                if path == key or path.endswith("::" + key):
                    return op
        if self._usings is None:
            self._usings = []
            if b"using" in self.src.data:
                for u in nodes_of_types(self.src.root, ("using_declaration",)):
                    if any(c.type == "namespace" for c in u.children):
                        target = next((c for c in u.named_children if c.type in ("identifier", "qualified_identifier")), None)
                        if target is not None:
                            self._usings.append((u, squash(self.text_of(target))))
        ops = set()
        for u, name in self._usings:
            scope = u.parent
            if u.start_byte < node.start_byte and scope is not None and scope.start_byte <= node.start_byte \
                    and node.end_byte <= scope.end_byte and name in self.cpp.context_using:
                ops.add(self.cpp.context_using[name])
        if len(ops) == 1:
            return ops.pop()
        return self.cpp.context_default

    def near_error(self, node) -> bool:
        if not self.errors:
            return False
        for a in ancestors(node):
            if a.type == "ERROR":
                return True
        stmt = node
        for a in [node, *ancestors(node)]:
            if a.type.endswith("statement") or a.type in ("declaration", "field_declaration"):
                stmt = a
                break
        lo, hi = stmt.start_byte, stmt.end_byte
        data = self.src.data
        while lo > 0 and data[lo - 1 : lo].isspace():
            lo -= 1
        while hi < len(data) and data[hi : hi + 1].isspace():
            hi += 1
        return any(e.start_byte <= hi and e.end_byte >= lo for e in self.errors)

    def in_dead(self, node) -> bool:
        return any(s <= node.start_byte and node.end_byte <= e for s, e in self.dead_ranges)

    def args_of(self, gen) -> tuple:
        """``gen``'s C++ argument names for the op of the site being built (``self.tag``):
        where that op's size keeps another meaning than the generation's (TVM's builtin keeps
        bytes under 0.1.9), the size is named by an earlier generation's name for that meaning."""
        op = self.tag[0]
        meaning = gen.size_meaning_for(op)
        if meaning == gen.size_meaning:
            return gen.cpp_args
        other = next((g for g in self.rules.generations if g.size_meaning == meaning and g.form == gen.form),
                     self.legacy)
        size_name = next((a for a in other.cpp_args if self.cpp.role(a) == "size"), None)
        return tuple(size_name if self.cpp.role(a) == "size" and size_name else a for a in gen.cpp_args)

    def arg_layout(self, gen, n: int) -> str:
        return "{" + ", ".join(self.args_of(gen)[:n]) + "}"

    def arg_name(self, gen, i: int) -> str:
        names = self.args_of(gen)
        return names[i] if i < len(names) else "?"

    def index_map(self) -> str:
        tgt = self.target
        tgt_args = self.args_of(tgt)
        parts = []
        for i, name in enumerate(self.legacy.cpp_args):
            role = self.cpp.role(name) or name
            if role.endswith("_offset"):
                side = role[: -len("_offset")]
                j = next((k for k, n in enumerate(tgt.cpp_args) if self.cpp.role(n) == side), None)
                parts.append(f"args[{i}] {name} -> offset inside args[{j}] {tgt_args[j]}")
            else:
                j = next((k for k, n in enumerate(tgt.cpp_args) if self.cpp.role(n) == role), None)
                if j is None:
                    parts.append(f"args[{i}] {name} -> no place")
                elif self.cpp.role(name) == "dst" or self.cpp.role(name) == "src":
                    parts.append(f"args[{i}] {name} -> data inside args[{j}] {tgt_args[j]}")
                else:
                    parts.append(f"args[{i}] {name} -> args[{j}] {tgt_args[j]}")
        sizes = "/".join(map(str, self.legacy.cpp_arity)) + " -> " + "/".join(map(str, tgt.cpp_arity))
        return "map " + ", ".join(parts) + f", args.size() {sizes}"

    def args_access(self, node, obj) -> bool:
        """``node`` is ``<obj>->args`` (or ``<obj>.args``)."""
        return (
            node is not None
            and node.type == "field_expression"
            and self.text_of(node.child_by_field_name("field")) == self.cpp.args_field
            and squash(self.text_of(node.child_by_field_name("argument"))) == obj
        )

    def delete_statement(self, st):
        """Delete a statement; whole lines when it stands alone on them."""
        data = self.src.data
        lo = data.rfind(b"\n", 0, st.start_byte) + 1
        hi = data.find(b"\n", st.end_byte)
        hi = len(data) if hi == -1 else hi + 1
        if data[lo : st.start_byte].strip() == b"" and data[st.end_byte : hi].strip() == b"":
            return (lo, hi, "")
        return (st.start_byte, st.end_byte, "")

    def parked_near_error(self, site, node) -> bool:
        """A site inside or next to a parse error is reported as CPA108 and not edited (True then)."""
        if not self.near_error(node):
            return False
        site.park("it is inside or next to a parse error")
        self.sites.append(site)
        return True

