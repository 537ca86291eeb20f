"""Find and migrate legacy ``ptx_cp_async`` IR calls in C++ (tree-sitter-cpp): the walk over one file.

:class:`CppAnalyzer` parses the file once, collects the nodes that can matter (function
definitions and declarators, macro definitions, and the if statements and calls in the
byte ranges that name the op: see :meth:`CppAnalyzer._hot_ranges`; with the lean walk,
``context.LEAN``, only those around the bytes that matter, by queries over those bytes:
:meth:`CppAnalyzer._lean_nodes`) and hands each to its site family:

- ``constructions.py``: CPA101, CPA102 (calls that build the op), CPA110 (its registration);
- ``consumers.py``: CPA103, CPA104, CPA106, CPA107 (branches that read the op's arguments);
- ``merge.py``: CPA111 (the shared-memory merge pass's legacy branch);
- ``declarations.py``: CPA105 (printer helpers), CPA109 (macros that name the op);
- ``context.py``: what they share (the file, the rules, op spellings and contexts,
  :class:`~.context.PendingSite`); the codes are ``cpasync_migrate/codes.py``'s.

Any family may report CPA108 (a site inside or next to a parse error, not edited).  Every
finding carries the IR op it concerns (``Finding.op``: TVM's builtin or TileLang's own op, by
the spelling or, unqualified, by the file's context; see ``[op.context]`` in
``rules/cpp.toml``) and its part in that op's change (``Finding.role``): "builder" for
constructions, "reader" for consumers, printer helpers, dead and dual-layout branches and
macros that test the op, "definition" for registrations.

After the walk, :meth:`CppAnalyzer._finish` turns the sites into findings: suppressed sites
lose their fix, and the fixes are checked together (no two overlap; the rewritten text
parses no worse than the original).  Everything here is pure: text in, findings with
character-offset edits out.
"""
from __future__ import annotations

import bisect
import os
import re
from typing import Optional

from .. import codes
from ..findings import Analysis, Edit, Finding, Fix, FrontEndOptions, Status, apply_edits
from .constructions import ConstructionChecks
from .consumers import ConsumerChecks
from . import context
from .context import CppContext, PendingSite
from .declarations import DeclarationChecks
from .merge import MergeRebase
from .source import error_summary, nodes_around, nodes_around_any, nodes_of_types, whole_words

_AROUND_NAME = ("function_definition", "preproc_def", "preproc_function_def", "declaration", "if_statement",
                "call_expression")
# The fixes' re-parse check parses the rewritten text incrementally from the file's tree (the edits told to
# tree-sitter), instead of whole (CPASYNC_MIGRATE_CPP_INCREMENTAL_CHECK=0); tests/test_cpp_speedups.py
# compares the error counts of both parses, and the analyses.
INCREMENTAL_CHECK = os.environ.get("CPASYNC_MIGRATE_CPP_INCREMENTAL_CHECK", "1") != "0"
# The fixes' overlap check and the incremental re-parse's line numbers by index (CPASYNC_MIGRATE_CPP_EDIT_INDEX=0: each
# edit compared with every edit taken before it, and each position's line counted from the file's start): a file of
# n fixes cost n squared (1,600 consumer branches in 1 MB: 24 s).  tests/test_cpp_speedups.py checks the same fixes.
EDIT_INDEX = os.environ.get("CPASYNC_MIGRATE_CPP_EDIT_INDEX", "1") != "0"
# A switch (CPASYNC_MIGRATE_CPP_AROUND_ANY=0: the nodes around each occurrence of the op's name asked one query per
# occurrence, every node around it handed back each time, as before; a measuring switch).  On: each node once, by
# source.nodes_around_any (an `else if` chain of 5,000 branches testing the op took 53 s).
AROUND_ANY = os.environ.get("CPASYNC_MIGRATE_CPP_AROUND_ANY", "1") != "0"
_BUCKET = 4096  # bytes of the file per bucket of the overlap index


class _Taken:
    """The byte ranges of the edits taken so far, and whether an edit overlaps one (``clashes``: ``a < te and ta < b``,
    or an insertion at the start of an insertion, ``a == b == ta``); indexed by ``_BUCKET``-byte buckets of the file
    (``EDIT_INDEX``), else a list searched whole."""

    def __init__(self):
        self.spans: list = []
        self.buckets: dict = {}

    def add(self, a: int, b: int) -> None:
        if not EDIT_INDEX:
            self.spans.append((a, b))
            return
        for k in range(a // _BUCKET, b // _BUCKET + 1):
            self.buckets.setdefault(k, []).append((a, b))

    def clashes(self, edits) -> bool:
        for e in edits:
            a, b = e.start, e.end
            near = self.spans if not EDIT_INDEX else [
                t for k in range(max(a - 1, 0) // _BUCKET, b // _BUCKET + 1) for t in self.buckets.get(k, ())]
            if any(a < te and ta < b or (a == b == ta) for ta, te in near):
                return True
        return False


_MAX_WORD_QUERIES = 2000  # more occurrences of the Op variables' names than this: one query over the hot ranges
_MACROS = ("preproc_def", "preproc_function_def")
_CLUSTER_GAP = 512  # offset-like names closer than this are searched for their declarators by one query


def _holds(data: bytes, words: list[bytes], lo: int, hi: int) -> bool:
    for w in words:
        if data.find(w, lo, hi) != -1:
            return True
    return False


# A switch (CPASYNC_MIGRATE_CPP_WORDS_RX=0: a node's bytes searched for each op word in turn, as before; a measuring
# switch).  On: for all of them at once, by one regular expression of the file's op words (every Op variable is a
# word: 1,600 lambdas holding the op made 1,600 words, searched in each of as many calls: 5 s).
WORDS_RX = os.environ.get("CPASYNC_MIGRATE_CPP_WORDS_RX", "1") != "0"


def _holder(words: list[bytes]):
    """``holds(data, lo, hi)``: whether ``data[lo:hi]`` holds one of ``words``."""
    if WORDS_RX and len(words) >= 2 and max(map(len, words)) <= 200:
        try:
            search = re.compile(_trie_pattern(words)).search
        except (re.error, RecursionError, OverflowError):
            search = None
        if search is not None:
            return lambda data, lo, hi: search(data, lo, hi) is not None
    return lambda data, lo, hi: _holds(data, words, lo, hi)


def _trie_pattern(words: list[bytes]) -> bytes:
    """A regular expression that matches where one of ``words`` starts, as a tree of their common prefixes (an
    alternation of thousands of words is tried word by word at every position; the tree, a byte at a time).  A word
    that ends where another goes on matches alone: the search asks only whether one is there."""
    trie: dict = {}
    for w in words:
        node = trie
        for b in w:
            if node.get(None):
                break  # a shorter word ends here: it matches first
            node = node.setdefault(b, {})
        else:
            node.clear()
            node[None] = True

    def emit(node: dict) -> bytes:
        if node.get(None):
            return b""
        parts = []
        for b, child in sorted((k, v) for k, v in node.items() if k is not None):
            lit = bytes([b])
            while not child.get(None) and len(child) == 1:  # a run without branches: one literal
                (b2, child), = child.items()
                lit += bytes([b2])
            parts.append(re.escape(lit) + emit(child))
        return parts[0] if len(parts) == 1 else b"(?:" + b"|".join(parts) + b")"

    return emit(trie)


def _file_by_kind(n, macros: dict, decls: dict, nodes: dict) -> bool:
    """A node around an occurrence of the op's name put with its kind (macro definitions, declarations, the ifs and
    calls); True for a function definition, which the caller keeps."""
    kind = n.type
    if kind == "function_definition":
        return True
    (macros if kind in _MACROS else decls if kind == "declaration" else nodes)[n.id] = n
    return False


class CppAnalyzer(CppContext):
    """One C++ file's legacy ``ptx_cp_async`` sites: ``CppAnalyzer(text, path, options).run()``.

    The analyzer is the file's :class:`~.context.CppContext` and its walk; the site families are
    units holding it as ``ctx``, each given the others it calls (declared in ``parts.py``).
    """

    gate = True  # look for consumers and constructions only in _hot_ranges; tests compare both settings

    def __init__(self, text: str, path: str, options: FrontEndOptions, window: Optional[list] = None,
                 old_tree=None, data: Optional[bytes] = None):
        super().__init__(text, path, options, window, old_tree, data)
        self.constructions = ConstructionChecks(self)
        self.merge = MergeRebase(self, constructions=self.constructions)
        self.consumers = ConsumerChecks(self, self.merge)
        self.merge.consumers = self.consumers
        self.declarations = DeclarationChecks(self)

    def run(self) -> Analysis:
        err = self._whole_file_error()
        if err is not None:
            return err
        self.collect()
        return Analysis(findings=self._finish())

    def collect(self, until_site: bool = False) -> None:
        """Walk the file and give each node to its site family (``self.sites``); window.py calls it alone,
        ``until_site``: stopping once there is a site (it only asks whether there is one)."""
        if context.LEAN and self.gate:
            ifs, calls, fdecls, macros = self._lean_nodes()
            words = self._words  # a node whose condition or bytes hold no op word is not handed on
        else:
            ifs, calls, fdecls, macros = self._all_nodes()
            words = None
        data = self.src.data
        holds = _holder(words) if words is not None else None
        for s in ifs:
            if words is not None:
                cond = s.child_by_field_name("condition")
                if cond is None or not holds(data, cond.start_byte, cond.end_byte):
                    continue
            self._tagged(self.consumers.consumer, s)
            if until_site and self.sites:
                return
        for c in calls:
            if words is not None and not holds(data, c.start_byte, c.end_byte):
                continue
            if not self.in_dead(c):
                self._tagged(self.constructions.construction, c)
                self._tagged(self.constructions.registration, c)
                self._tagged(self.consumers.asserted, c)
                if until_site and self.sites:
                    return
        for f in fdecls:
            self.declarations.helper(f)
        for m in macros:
            self.declarations.macro(m)

    def _all_nodes(self) -> tuple[list, list, list, list]:
        """(if statements, calls, function declarators, macro definitions) to check, in document order: every
        definition, declarator and macro of the file, the ifs and calls in ``_hot_ranges`` (all with ``gate``
        off); ``fns`` is filled on the way."""
        fdecls, macros, fns = [], [], []
        for n in nodes_of_types(self.src.root, ("function_definition", "function_declarator",
                                                "preproc_function_def", "preproc_def")):
            kind = n.type
            if kind == "function_definition":
                fns.append(n)
            elif kind == "function_declarator":
                fdecls.append(n)
            else:
                macros.append(n)
        self._fns, self._fn_starts = fns, [f.start_byte for f in fns]
        ifs, calls = [], []
        for n in nodes_of_types(self.src.root, ("if_statement", "call_expression"),
                                self._hot_ranges() if self.gate else None):
            (ifs if n.type == "if_statement" else calls).append(n)
        return ifs, calls, fdecls, macros

    def _lean_nodes(self) -> tuple[list, list, list, list]:
        """What :meth:`_all_nodes` gives the checks, found around the bytes that matter (LEAN).

        Around each occurrence of the op's name (one query over its bytes): its outermost function
        definition (the hot ranges are those, and the occurrences outside every function, as
        ``_hot_ranges`` has them), the macro definitions (a macro site names the op in its value), the
        declarations (an Op variable's initialiser names the op: the names they declare with it are the
        *op words*, with the op's name), and the ifs and calls.  Around each occurrence of another op
        word (as a whole name), its ifs and calls; of those, the ones over a hot range are kept.  A
        consumer's condition and a construction's or registration's call hold an op word (the op spelled
        there, or an Op variable), so every node the checks could take a site from is among them, in
        the same order; :meth:`collect` then drops those whose condition or bytes hold none.  A printer
        helper (CPA105) has two parameters named like ``[helpers] offset_param``: the declarators around
        two or more such names (every declarator when the pattern is not a plain suffix)."""
        data, root = self.src.data, self.src.root
        name = self.cpp.op_name.encode()
        width = len(name)
        occ = [a for a, _ in self.name_spans()]
        tops: dict = {}
        macros: dict = {}
        decls: dict = {}
        nodes: dict = {}
        loose_at = []
        if AROUND_ANY:
            self._around_any(occ, width, tops, macros, decls, nodes, loose_at)
        for o, around in zip(occ, () if AROUND_ANY else nodes_around(root, _AROUND_NAME, [(o, o + width) for o in occ])):
            top = None
            for n in around:
                if _file_by_kind(n, macros, decls, nodes) and (top is None or n.start_byte < top.start_byte):
                    top = n
            if top is None:
                loose_at.append(o)
            else:
                tops[top.id] = top
        spans = sorted((t.start_byte, t.end_byte) for t in tops.values())
        hot = sorted(set(spans + [(o, o + width) for o in loose_at] + self._outer_var_functions()))
        self._words = sorted(set(self._declared_words(decls.values())) |
                             {n.encode("utf-8", "surrogatepass") for n in (*self.file_op_vars(), *self.op_predicates())})
        self._word_nodes(nodes, hot)
        ifs, calls = [], []
        for n in sorted(nodes.values(), key=lambda n: (n.start_byte, -n.end_byte)):
            (ifs if n.type == "if_statement" else calls).append(n)
        return ifs, calls, self._helper_declarators(), sorted(macros.values(), key=lambda n: (n.start_byte, -n.end_byte))

    def _around_any(self, occ: list, width: int, tops: dict, macros: dict, decls: dict, nodes: dict,
                    loose_at: list) -> None:
        """What :meth:`_lean_nodes`'s loop over the occurrences fills in, from the nodes around any of them
        (``nodes_around_any``, linear where occurrences lie deep inside one another): each occurrence's outermost
        function definition is one of those not inside another that holds an occurrence, and an occurrence
        inside none of them is loose."""
        fdefs = [n for n in nodes_around_any(self.src.root, _AROUND_NAME, [(o, o + width) for o in occ])
                 if _file_by_kind(n, macros, decls, nodes)]
        end = -1
        outer = []
        for f in sorted(fdefs, key=lambda n: (n.start_byte, -n.end_byte)):
            if f.start_byte >= end:  # not inside the last outermost one (definitions nest or are apart)
                outer.append(f)
                tops[f.id] = f
                end = f.end_byte
        starts = [f.start_byte for f in outer]
        for o in occ:
            j = bisect.bisect_right(starts, o) - 1
            if j < 0 or not o + width <= outer[j].end_byte:
                loose_at.append(o)

    def _declared_words(self, decls) -> list[bytes]:
        """The op words: the op's name and each name the declarations declare with an initialiser naming it."""
        data, name = self.src.data, self.cpp.op_name.encode()
        words = {name}
        for d in decls:
            for dec in d.children_by_field_name("declarator"):
                val = dec.child_by_field_name("value") if dec.type == "init_declarator" else None
                if val is not None and data.find(name, val.start_byte, val.end_byte) != -1:
                    leaf = self.leaf_name(dec.child_by_field_name("declarator"))
                    if leaf:
                        words.add(leaf.encode("utf-8", "surrogatepass"))
        return sorted(words)

    def _word_nodes(self, nodes: dict, hot: list) -> None:
        """Add to ``nodes`` the ifs and calls around each occurrence of an op word other than the op's name
        (as a whole name) that lie over a hot range, as the query over the hot ranges has them."""
        data, root = self.src.data, self.src.root
        extra = [w for w in self._words if w != self.cpp.op_name.encode()]
        if not extra:
            return
        at = [m.span() for m in whole_words(extra).finditer(data)]
        if len(at) > _MAX_WORD_QUERIES:  # a common name: the hot ranges' ifs and calls, by one query over them
            found = [nodes_of_types(root, ("if_statement", "call_expression"), hot)]
        else:
            found = nodes_around(root, ("if_statement", "call_expression"), at)
        starts = [a for a, _ in hot]
        for around in found:
            for n in around:
                if n.id in nodes:
                    continue
                k = bisect.bisect_left(starts, n.end_byte) - 1  # the last hot range starting before its end
                if any(hot[j][1] > n.start_byte for j in range(k, -1, -1) if hot[j][0] < n.end_byte):
                    nodes[n.id] = n

    def _helper_declarators(self) -> list:
        """The function declarators around two or more offset-like names (every one when ``[helpers]
        offset_param`` is not a plain suffix), in document order."""
        from .window import _offset_regex

        data, root = self.src.data, self.src.root
        offset = _offset_regex(self.cpp)
        if offset is None:
            return nodes_of_types(root, ("function_declarator",))
        spans_off = [m.span() for m in offset.finditer(data)]
        starts_off = [a for a, _ in spans_off]
        ends_off = [b for _, b in spans_off]
        clusters: list = []  # the names' spans, those less than _CLUSTER_GAP bytes apart in one range
        for a, b in spans_off:
            if clusters and a - clusters[-1][1] < _CLUSTER_GAP:
                clusters[-1][1] = b
            else:
                clusters.append([a, b])
        fdecls = []
        for d in nodes_of_types(root, ("function_declarator",), [tuple(c) for c in clusters]):
            # the names wholly inside the declarator: those ending in it, less those starting before it
            inside = bisect.bisect_right(ends_off, d.end_byte) - bisect.bisect_left(starts_off, d.start_byte)
            if inside >= 2:
                fdecls.append(d)
        return fdecls

    def _tagged(self, method, node) -> None:
        """Run ``method(node)``; the sites it adds get the op and role it left in ``self.tag``, and are left for a
        person where it reached the op in a way the fixes do not follow (``outer_op_uses``: an Op variable declared
        outside the function, a lookup by the registered name, ``==``, a predicate of the file; ``_outside``)."""
        n0 = len(self.sites)
        self.tag = (None, None)
        self.outer_op_uses = []
        method(node)
        op, role = self.tag
        for site in self.sites[n0:]:
            site.op = site.op or op
            site.role = site.role or role
            if self.outer_op_uses and not site.info:
                self._outside(site, self.outer_op_uses[0])

    def _outside(self, site, how: str) -> None:
        """A site whose op the fixes do not follow (``how`` says how it was reached): reported, never edited."""
        if site.code == codes.CPP_CONSUMER_REWRITABLE:
            site.code = codes.CPP_CONSUMER_MANUAL
        site.fixable, site.edits, site.fix_note = False, [], None
        site.leave(f"its op is {how}: not rewritten")

    def _hot_ranges(self) -> list[tuple[int, int]]:
        """Byte ranges outside which no if statement or call can be a consumer or a construction.

        Both need an Op node: a call spelled with the op's name inside the node itself, or a
        local Op variable of the enclosing function, whose initialiser names the op.  So a node
        can matter only when it contains the name or lies in a top-level function that does:
        the ranges are those functions, and each occurrence of the name outside every function.
        (Only the outermost function is known to hold the name; the analysis itself decides.)
        """
        data, name = self.src.data, self.cpp.op_name.encode()
        occ = [a for a, _ in self.name_spans()]
        ranges = self._outermost_holding(self.name_spans())
        loose = []
        for o in occ:
            k = bisect.bisect_right(ranges, (o, len(data) + 1)) - 1
            if k < 0 or not (ranges[k][0] <= o and o + len(name) <= ranges[k][1]):
                loose.append((o, o + len(name)))
        return sorted(set(ranges + loose + self._outer_var_functions()))

    def _outer_var_functions(self) -> list[tuple[int, int]]:
        """The spans of the outermost functions that name an Op variable declared outside every function
        (``file_op_vars``) or a predicate of the file that tests for the op (``op_predicates``): their ifs and
        calls may reach the op through it, so they are hot too."""
        names = {*self.file_op_vars(), *self.op_predicates()}
        if not names:
            return []
        return self._outermost_holding([m.span() for m in whole_words(names).finditer(self.src.data)])

    def _outermost_holding(self, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """The spans of the outermost function definitions that hold one of ``spans`` (in order, apart)."""
        starts = [a for a, _ in spans]
        out, end = [], -1
        for f in self.fns:  # document order: a nested definition starts inside its outer one
            if f.start_byte < end:
                continue
            end = f.end_byte
            j = bisect.bisect_left(starts, f.start_byte)
            if j < len(spans) and spans[j][1] <= end:
                out.append((f.start_byte, end))
        return out

    def _whole_file_error(self) -> Optional[Analysis]:
        if "\x00" in self.text:
            return Analysis(findings=[], error="the file holds NUL characters; not C++ text", error_line=1)
        if not self.errors:
            return None
        covered = sum(e.end_byte - e.start_byte for e in self.errors)
        body = len(self.src.data.strip()) or 1
        if covered * 2 > body:
            first = min(self.errors, key=lambda e: e.start_byte)
            line, col = self.src.linecol(self.src.char_offset(first.start_byte))
            return Analysis(
                findings=[],
                error=f"tree-sitter-cpp cannot parse most of the file (parse errors cover {covered} of {body} bytes)",
                error_line=line,
                error_column=col,
            )
        return None

    # ------------------------------------------------------------- finish
    def _finish(self) -> list[Finding]:
        """The findings of the sites, in document order, with the fixes that pass :meth:`_check_fixes`."""
        sites = sorted(self.sites, key=lambda x: x.node.start_byte)
        candidates: list[tuple[PendingSite, list[Edit]]] = []
        suppressed = set()
        for site in sites:
            if site.info:
                continue
            line = self.src.linecol(self.src.char_offset(site.node.start_byte))[0]
            if self.cpp.suppress_comment in self.src.line_text(line):
                suppressed.add(id(site))
                continue
            if site.fixable and site.edits:
                candidates.append((site, [Edit(self.src.char_offset(a), self.src.char_offset(b), r)
                                          for a, b, r in site.edits]))
        fixes = self._check_fixes(candidates, self._steps())
        out = []
        for site in sites:
            start, end = self.src.span(site.node)
            line, col = self.src.linecol(start)
            eline, ecol = self.src.linecol(end)
            if site.info:
                status, message = Status.INFO, site.full_message()
            elif id(site) in suppressed:
                status, message = Status.SUPPRESSED, site.suppressed_message()
            else:
                status, message = None, site.full_message()
            out.append(Finding(
                path=self.path,
                line=line,
                column=col,
                end_line=eline,
                end_column=ecol,
                code=site.code,
                message=message,
                fix=fixes.get(id(site)),
                function=site.function or self.qualname(self.func_of(site.node)),
                status=status,
                legacy_site=not site.info,
                op=site.op,
                role=site.role,
            ))
        return out

    def _check_fixes(self, candidates, steps) -> dict:
        """The fix of each candidate (in document order) by ``id`` of its site, unless its edits
        overlap an earlier fix's or the rewritten text would have more parse errors than the
        original (the site then says so, and the latter becomes CPA108).

        The candidates that do not overlap are first checked together, with one parse (the
        engine's final check of the file then finds that text remembered); only when that
        fails is each checked on its own, so that the fix that breaks the parse is refused.
        Either way the result is the one the one-by-one check gives whenever each fix
        parses on its own.
        """
        fixes: dict = {}
        if not candidates:
            return fixes
        base = len(self.errors)
        error_summary(self.text, self.src.root)

        taken = _Taken()
        free = []
        for c in candidates:
            if not taken.clashes(c[1]):
                free.append(c)
                for e in c[1]:
                    taken.add(e.start, e.end)
        together = apply_edits(self.text, [e for _, edits in free for e in edits])
        root = self._reparsed(together, [b for site, _ in free for b in site.edits]) if INCREMENTAL_CHECK else None
        together_ok = error_summary(together, root)[0] <= base
        taken = _Taken()
        for site, edits in candidates:
            if taken.clashes(edits):
                site.leave("its edits would overlap another site's")
            elif together_ok or error_summary(apply_edits(self.text, edits))[0] <= base:
                fixes[id(site)] = Fix(edits=edits, applicability=site.applicability,
                                      assumptions=list(site.assumptions), steps=list(steps),
                                      set_established=site.set_established and bool(site.assumptions),
                                      needs_function=site.needs_function)
                for e in edits:
                    taken.add(e.start, e.end)
            else:
                site.park("the rewritten text would not parse")
        return fixes

    def _reparsed(self, new_text: str, byte_edits: list):
        """The parse tree of ``new_text`` (this file with ``byte_edits`` applied: byte ranges of the original,
        disjoint), parsed incrementally from the file's tree (INCREMENTAL_CHECK): only what the edits touch is
        parsed again; None where the edits do not match the text (the caller parses it whole)."""
        from .source import parse_bytes

        old = self.src.data
        new = new_text.encode("utf-8", "surrogatepass")
        if len(new) != len(old) + sum(len(r.encode("utf-8", "surrogatepass")) - (b - a) for a, b, r in byte_edits):
            return None
        tree = self.src.tree.copy()

        breaks = [m.start() for m in re.finditer(b"\n", old)] if EDIT_INDEX and len(byte_edits) > 16 else None

        def point(b: int) -> tuple[int, int]:
            if breaks is None:
                return (old.count(b"\n", 0, b), b - (old.rfind(b"\n", 0, b) + 1))
            i = bisect.bisect_left(breaks, b)  # the line breaks before b
            return (i, b - (breaks[i - 1] + 1 if i else 0))

        for a, b, r in sorted(byte_edits, reverse=True):  # from the end: the bytes before each edit are the original's
            rb = r.encode("utf-8", "surrogatepass")
            start = point(a)
            lines = rb.count(b"\n")
            end = (start[0] + lines, len(rb) - (rb.rfind(b"\n") + 1)) if lines else (start[0], start[1] + len(rb))
            tree.edit(start_byte=a, old_end_byte=b, new_end_byte=a + len(rb), start_point=start,
                      old_end_point=point(b), new_end_point=end)
        return parse_bytes(new, tree).root_node

    def _steps(self) -> list[str]:
        try:
            return self.rules.steps(self.options.source.name, self.target.name)
        except Exception:
            return [f"{self.legacy.name}->{self.target.name}"]
