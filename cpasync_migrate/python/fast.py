"""The Python front end's first pass: a cheap, exact pass with the standard library's
``ast`` (several times faster than libcst, and libcst is not even imported):

* a file in which no call can resolve to ``ptx_cp_async`` has no findings;
* a file whose every candidate call resolves, unambiguously, to TVM's own
  wrapper (module-level imports only, the name never rebound) and has a
  non-access-pointer shape gets its CPA003 findings from this pass, exactly
  as the libcst pass would report them (same positions, code, message);
* a call of TileLang's (or TVM's) intrinsic in the access-pointer shape (an
  already-migrated call) is decided here too when no ``--from`` asks for a
  conversion: no finding, CPA004 (it still passes ``dtype=``) or the CPA005
  size warning, exactly as ``rewrite.py`` gives them; where the warning hangs
  on a pointer type the text does not show simply (a buffer bound more than
  once, a dtype spelled in a way this pass does not read), libcst decides;
* a read of the intrinsic as a value in a plain position (an argument, a list or dict, returned,
  ``.__call__``: ``fast_scan.value_reads``) is CPA008 here, exactly as ``checks/value_read.py``
  gives it; a read only tested is none (``route_rules.py`` decides both);
* anything else goes to the libcst pass in ``rewrite.py``: a read bound to a name, a walrus or a
  default, or looked up by a string (libcst follows the uses), a legacy call of
  TileLang's intrinsic that ``DECIDE_LEGACY`` below does not cover (it needs a rewrite), a module-level definition of the
  intrinsic or a runtime helper (``_defines``) that ``definitions_ast.py`` does
  not decide (a decorated one, say), a name bound by assignment to
  something that mentions the intrinsic and then called (``cp =
  T.ptx_cp_async``), ``getattr(..., "ptx_cp_async")``, a star import of
  TileLang's or TVM's namespace (it binds the bare names ``reach.py`` follows;
  other star imports bind nothing libcst's scopes or ``reach.py`` read), and a
  callee whose root name is bound by assignment (``L2 = T``).

``DECIDE_NEW_FORM`` (environment ``CPASYNC_MIGRATE_FAST_NEW_FORM=0`` turns it off)
switches the access-pointer decisions; off, such files go to libcst as before.
``DECIDE_DEFINITIONS`` (``CPASYNC_MIGRATE_FAST_DEFINITIONS=0``) switches the
definitions of ``definitions_ast.py`` (a fork's ``op.py``, a CuTeDSL runtime
module): on, a file whose sites are those definitions and calls this pass
decides never reaches libcst; off, it goes to libcst as before.
``DECIDE_READS`` (``CPASYNC_MIGRATE_FAST_READS=0``) switches the CPA008 decisions: off, a file whose
text may hold a read of the intrinsic as a value goes to libcst.
``DECIDE_LEGACY`` (``CPASYNC_MIGRATE_FAST_LEGACY=0``) switches the CPA002 findings this pass gives
itself: a call of TileLang's intrinsic in neither layout (or with ``*args``), whose message needs only
the argument count and keywords, and a legacy call whose argument list binds no legacy call or whose
destination's data pointer is neither a name nor ``<name>.data`` (``fast_legacy.py`` reads those facts,
``decide/legacy.py`` decides); off, such files go to libcst.  Every other legacy call goes to libcst,
which decides it and makes the edit text of its fix, except where the caller asks (``fixes``: ``--check``, and
write mode, ``--diff`` and ``--verify`` under ``python.fast_fixes``): ``DECIDE_FIXES``
(``CPASYNC_MIGRATE_FAST_FIXES=0`` turns it off) decides there a legacy call
whose facts ``fast_legacy.fix_facts`` reads (CPA001 with its fix's edit text from ``fast_edit.py``, or CPA002
with the reason); off, or for any other legacy call, the file goes to libcst as before.

``PARENTS`` (``CPASYNC_MIGRATE_FAST_PARENTS=0`` turns it off): a fix's layout asks only for the parents of calls
(``fast_edit.root_span``), which ``fast_scan.scan`` records in its own walk, and whether the text holds a lone
``\r`` is asked once per text; off, a map of every node's parent is built per text and the question asked at each
legacy call, as before.

Which check a call goes to is ``decide/dispatch.py``'s, as for the libcst pass (``rewrite.visit_call``);
what an access-pointer call's facts mean is ``decide/access_ptr.py``'s.

Every finding of the libcst pass is a call whose callee is spelled
``<expr>.ptx_cp_async``, ``ptx_cp_async`` or a name imported as
``ptx_cp_async``; the filter keeps every file that has such a call.
"""
from __future__ import annotations

import ast
import gc
import os
import re
from typing import Optional

from .. import codes
from ..findings import Analysis, Finding, FrontEndOptions, Status
from . import fast_edit, fast_legacy, route_rules
from .calls import INTRINSIC, SUPPRESS_RE, call_shape
from .decide import access_ptr, dispatch, legacy, presence
from .decide.attributes import shadowed_module
from .fast_legacy import manual_reason
from .fast_scan import (
    Undecided,
    enclosing,
    qualify,
    reaches_by_binding,
    scan,
    used_as_value,
    value_reads,
)
from .fast_sizes import NewForm

DECIDE_NEW_FORM = os.environ.get("CPASYNC_MIGRATE_FAST_NEW_FORM", "1") != "0"
DECIDE_DEFINITIONS = os.environ.get("CPASYNC_MIGRATE_FAST_DEFINITIONS", "1") != "0"
DECIDE_READS = os.environ.get("CPASYNC_MIGRATE_FAST_READS", "1") != "0"
DECIDE_LEGACY = os.environ.get("CPASYNC_MIGRATE_FAST_LEGACY", "1") != "0"
DECIDE_FIXES = os.environ.get("CPASYNC_MIGRATE_FAST_FIXES", "1") != "0"
PARENTS = os.environ.get("CPASYNC_MIGRATE_FAST_PARENTS", "1") != "0"
# the per-window readers cost the window's own definitions, not the whole file's line count that its placeholders
# carry (the gates below, ``fast_edit.Source``'s line starts, ``_Decision``'s lines; environment
# CPASYNC_MIGRATE_FAST_LINEAR=0 turns it off)
LINEAR = os.environ.get("CPASYNC_MIGRATE_FAST_LINEAR", "1") != "0"
# the cyclic collector paused while one text is decided (environment CPASYNC_MIGRATE_FAST_GC_PAUSE=0 turns it off): a
# parsed module is some hundred thousand objects without cycles, freed by their counts when the text is done; with the
# collector running, the parse and the scan's allocations set off young and full collections that walk them all while
# they live.  It changes no result, only when collections run.
GC_PAUSE = os.environ.get("CPASYNC_MIGRATE_FAST_GC_PAUSE", "1") != "0"


_NAME = re.escape(INTRINSIC)
_CALL_TEXT = re.compile(rf"{_NAME}(?:\s|\\|#[^\n]*)*\(|{_NAME}(?:\s|\\)+as(?:\s|\\)")
_DEF_BEFORE = re.compile(r"(?:^|[^\w.])def(?:\s|\\)+$")


# The intrinsic used as a value (``cp = T.ptx_cp_async``, ``getattr(T, "ptx_cp_async")``, a bare name
# bound by an import): a call through that binding can reach it.
_VALUE_TEXT = re.compile(rf"""(?<![\w'"]){_NAME}(?!\w|\s*\(|['"])|['"]{_NAME}['"]""")


# A read of the intrinsic as a value needs its name not followed by "(" or an import's alias of it (a lookup by its
# name in a string sends the file to libcst before: ``Scan.getattr_intrinsic``, ``Scan.lookup_intrinsic``).
_NAME_READ = re.compile(rf"""(?<![\w'"]){_NAME}(?!\w|\s*\(|['"])""")


# (LINEAR) the same three gates with the literal name first and the look back after it: the regex engine then skips
# to each occurrence of the name instead of trying the pattern at every position (a window of a large file is
# mostly its placeholders' line breaks: trying every position there cost each window the whole file's length).
# ``(?<![\w'"])N`` is ``N(?<![\w'"]N)``; ``['"]N['"]`` is found where ``N(?<=['"]N)['"]`` is (only whether one
# exists is asked); ``\bdef`` is ``def(?<!\wdef)``.
_NAME_READ_L = re.compile(rf"""{_NAME}(?<![\w'"]{_NAME})(?!\w|\s*\(|['"])""")
_VALUE_TEXT_L = re.compile(rf"""{_NAME}(?:(?<![\w'"]{_NAME})(?!\w|\s*\(|['"])|(?<=['"]{_NAME})['"])""")


def _may_read(text: str, s) -> bool:
    """Whether ``fast_scan.value_reads`` must walk the tree (it finds nothing in a file where this is False)."""
    return len(s.alias_names) > 1 or (_NAME_READ_L if LINEAR else _NAME_READ).search(text) is not None


def may_call(text: str) -> bool:
    if (_VALUE_TEXT_L if LINEAR else _VALUE_TEXT).search(text):
        return True
    for m in _CALL_TEXT.finditer(text):
        if m.group().endswith("(") and _DEF_BEFORE.search(text, max(0, m.start() - 64), m.start()):
            continue
        return True
    return False


def _defines(tree: ast.Module, options: FrontEndOptions) -> bool:
    """A module-level def that definitions.py reports: the intrinsic with the legacy parameters, or a
    runtime helper with two offset parameters (libcst decides those files)."""
    helpers = options.rules.python_api["helpers"]
    names = set(helpers["names"])
    offset = re.compile(helpers["offset_param"])
    legacy = list(options.rules.legacy.python_params)
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = [a.arg for a in node.args.args]
        if node.name == INTRINSIC and params == legacy:
            return True
        if node.name in names and sum(1 for p in params if offset.search(p)) >= 2:
            return True
    return False


def findings(text: str, path: str, options: FrontEndOptions, fixes: bool = False, style=None) -> Optional[Analysis]:
    """Findings from the ast pass, or None when libcst must decide.  ``fixes``: legacy calls may be decided here
    with their fixes (``--check``: ``DECIDE_FIXES``); ``style``: the whole file's ``file_style.FileStyle`` when
    ``text`` is a window of it (a fix is laid out by it)."""
    return decide(text, path, options, fixes, style)[0]


class _ToLibcst(Exception):
    """libcst decides the file; ``reason`` says why (``decide``'s second value)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def decide(text: str, path: str, options: FrontEndOptions, fixes: bool = False, style=None):
    """(findings or None, why libcst decides or what decided it): ``findings`` with its reason, for the benchmark.

    The steps: the text's gate, the parse, the definitions (``_definitions``), the bindings libcst follows, the
    reads of the intrinsic as a value (``_Decision.reads``), each call (``_Decision.call``), the findings put
    together (``_combined``); a step that leaves the file to libcst raises ``_ToLibcst`` with the reason."""
    paused = GC_PAUSE and gc.isenabled()
    if paused:
        gc.disable()
    try:
        return _decide(text, path, options, fixes, style)
    except _ToLibcst as e:
        return None, e.reason
    finally:
        if paused:
            gc.enable()


def _decide(text: str, path: str, options: FrontEndOptions, fixes: bool, style):
    names = [INTRINSIC, *options.rules.python_api.get("helpers", {}).get("names", [])]
    head = r"def(?<!\wdef)" if LINEAR else r"\bdef"  # (LINEAR: the literal first, as ``_NAME_READ_L``)
    may_define = re.search(head + r"(?:\s|\\)+(?:%s)\b" % "|".join(map(re.escape, names)), text) is not None
    calls = may_call(text)
    if not may_define and not calls:
        return Analysis([]), "text"
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None, "syntax"
    defined = []
    s = None
    if may_define and _defines(tree, options):
        s, defined = _definitions(tree, text, path, options)
    if not calls:
        return Analysis(defined), "text"
    if s is None:
        s = scan(tree, options.rules.attributes)
    if DECIDE_NEW_FORM:
        if reaches_by_binding(s):
            raise _ToLibcst("binding")  # a name bound to the intrinsic is called: libcst follows it
    elif used_as_value(tree):
        raise _ToLibcst("value")
    d = _Decision(text, path, options, fixes, style, tree, s)
    if s.lookup_intrinsic:
        raise _ToLibcst("lookup")  # `T.__dict__["ptx_cp_async"]`: libcst reads it (reach.string_route)
    reads = d.reads()
    if not s.calls:
        return Analysis(sorted(defined + reads, key=lambda f: (f.line, f.column))), "no call"
    if d.star:
        raise _ToLibcst("star import")  # TileLang's or TVM's star import binds the bare names: libcst decides
    out = []
    try:
        for c in s.calls:
            f = d.call(c)
            if f is not None:
                out.append(f)
    except Undecided:
        return None, "undecided"
    return _combined(out, defined, reads, d.migrated), "decided"


def _definitions(tree: ast.Module, text: str, path: str, options: FrontEndOptions) -> tuple:
    """(the scan, the findings of ``definitions_ast.py``) of a file with a module-level definition it reports."""
    if not DECIDE_DEFINITIONS:
        raise _ToLibcst("definition")
    from . import definitions_ast

    s = scan(tree, options.rules.attributes)
    try:
        return s, definitions_ast.find(tree, text, path, options, INTRINSIC, lambda e: qualify(e, s))
    except (definitions_ast.Undecided, Undecided):
        raise _ToLibcst("definition") from None


def _combined(out: list, defined: list, reads: list, migrated: set) -> Analysis:
    """The calls' findings with the definitions' and the reads', in order."""
    if defined:
        # the definition's own forward to TVM's wrapper is part of the definition's site (as rewrite.analyze)
        inside = [(d.line, d.end_line) for d in defined if d.code == codes.LEGACY_API_DEFINITION]
        out = [f for f in out if not (f.code == codes.TVM_NAMESPACE_CALL and any(a <= f.line and f.end_line <= b for a, b in inside))]
        out.extend(defined)
    out.extend(reads)
    out.sort(key=lambda f: (f.line, f.column))
    return Analysis(out, migrated=sorted(migrated))


class _Decision:
    """What the decisions of one file's calls share: the text, its tree and scan, the rules' module sets, and what
    is built once when first needed (the size facts, the source offsets and parents a fix is laid out by)."""

    def __init__(self, text: str, path: str, options: FrontEndOptions, fixes: bool, style, tree, s):
        self.text, self.path, self.options, self.fixes, self.style, self.tree, self.s = \
            text, path, options, fixes, style, tree, s
        rules = self.rules = options.rules
        self.tl = set(rules.tilelang_modules)
        self.tvm = set(rules.tvm_modules)
        self.star = "*" in s.nested or any(m in self.tl or m in self.tvm for m in s.imports.get("*", []))
        self.lines = text.splitlines(True)
        self.new_form = None
        self.fix_src = self.parents = None  # (for legacy calls decided with their fixes)
        self.dtype_kw = rules.legacy.python_params[0]
        self.migrated: set = set()
        self.lone_cr: Optional[bool] = None

    def reads(self) -> list:
        """CPA008 of the reads of the intrinsic as a value (``fast_scan.value_reads``)."""
        s = self.s
        if not _may_read(self.text, s):
            return []
        if not DECIDE_READS:
            raise _ToLibcst("value")
        if self.star:
            raise _ToLibcst("star import")  # a bare name read under TileLang's or TVM's star import: libcst
        try:
            return [_read_finding(r, self.lines, self.path, s)
                    for r in value_reads(self.tree, s, self.tl, self.tvm, self.path)]
        except Undecided:
            raise _ToLibcst("value") from None  # a read whose value libcst follows (bound to a name, looked up by string)

    def call(self, c: ast.Call) -> Optional[Finding]:
        """The finding of one candidate call; None where it is none (another function, already migrated)."""
        s, rules, options = self.s, self.rules, self.options
        q = qualify(c.func, s)
        if q is None:
            return None
        mod, _, name = q.rpartition(".")
        if name != INTRINSIC:
            return None  # an alias of something else: not the intrinsic
        if mod not in self.tl and mod not in self.tvm:
            if shadowed_module(q, rules.attributes):
                raise _ToLibcst("attribute route")  # through a shadowing attribute to no known module: libcst
            return None  # some other library's ptx_cp_async
        keywords = tuple(k.arg for k in c.keywords if k.arg)
        absent = presence.unimported(mod, options.target, rules) if mod in self.tl else None
        call = dispatch.Call(None if absent else "tilelang" if mod in self.tl else "tvm",
                             call_shape(rules, any(isinstance(a, ast.Starred) for a in c.args) or
                                        any(k.arg is None for k in c.keywords),
                                        len(c.args) + len(c.keywords), list(keywords)),
                             len(c.args) + len(c.keywords), keywords,
                             unresolved=f"reached through `{ast.get_source_segment(self.text, c.func)}`: {absent}"
                             if absent else "")
        route = dispatch.route(call, options.migrate_tvm)  # (the callee here is never a walrus: qualify)
        if route.check == dispatch.NONE:
            return None
        info = False
        fix = None
        if route.check == dispatch.ACCESS_PTR:
            got = self._access_ptr(c, call, keywords)
            if got is None:
                return None  # already migrated: not a finding
            code, message, info = got
        elif route.check == dispatch.LEGACY:
            code, message, fix = self._legacy(c, route)
        elif route.check == dispatch.MANUAL and not DECIDE_LEGACY:
            raise _ToLibcst("neither form")
        else:  # TVM's wrapper (CPA003), or TileLang's op in an argument layout no release takes (CPA002)
            code, message = route.code, route.message
        lines = self.lines
        f = _finding(c, lines, self.path, code, message, s)
        f.fix = fix
        if info:
            f.legacy_site, f.status, f.severity = False, Status.INFO, "warning"
        if SUPPRESS_RE.search(lines[c.lineno - 1]):
            f.status = Status.SUPPRESSED
            f.fix = None
        f.role = dispatch.role(call, f.legacy_site)
        return f

    def _lone_cr(self) -> bool:
        """The text holds a lone ``\\r`` (``PARENTS``: asked once per text, not at each legacy call)."""
        if not PARENTS:
            return re.search(r"\r(?!\n)", self.text) is not None
        if self.lone_cr is None:
            self.lone_cr = re.search(r"\r(?!\n)", self.text) is not None
        return self.lone_cr

    def _access_ptr(self, c: ast.Call, call, keywords: tuple) -> Optional[tuple]:
        """(code, message, info) of a call in the access-pointer shape; None where it is no finding."""
        if not DECIDE_NEW_FORM:
            raise _ToLibcst("new form")
        options = self.options
        if dispatch.marks_migrated(call):
            self.migrated.add(enclosing(self.s.defs, c, self.s.memo) or "")  # (half-migrated files: findings.half_migrated)
        question = access_ptr.check(self.dtype_kw in keywords, options.source, options.target)
        if question == access_ptr.CONVERT:
            raise _ToLibcst("--from")  # convert_new: libcst
        if question == access_ptr.DTYPE_KEYWORD:
            return codes.DTYPE_KEYWORD_ON_NEW_CALL, access_ptr.DTYPE_KW_MESSAGE, False
        if self.new_form is None:
            self.new_form = NewForm(self.s, self.lines, options)
        message = self.new_form.size_warning(c)
        if message is None:
            return None
        return codes.SUSPICIOUS_SIZE, message, True

    def _legacy(self, c: ast.Call, route) -> tuple:
        """(code, message, fix) of a legacy call: CPA002 where its arguments leave it for a person, else the verdict
        with its fix (``--check``: ``DECIDE_FIXES``); libcst anywhere else."""
        rules = self.rules
        why = manual_reason(c, list(rules.legacy.python_params), self.lines) if DECIDE_LEGACY else None
        if why is not None:
            return codes.LEGACY_CALL_MANUAL, legacy.manual_message(why), None
        found = None
        if self.fixes and DECIDE_FIXES and not route.switch_callee and not self._lone_cr():
            if self.fix_src is None:
                self.fix_src = fast_edit.Source(self.text)
                if LINEAR and fast_edit.MEMO:
                    self.fix_src._lines = self.lines  # (the same ``splitlines(True)`` of the same text: split once)
                self.parents = self.s.call_parents if PARENTS else _parents(self.tree)
            found = fast_legacy.verdict(c, self.s, self.fix_src, self.parents, self.options, self.style)
        if found is None:
            raise _ToLibcst("--migrate-tvm" if route.switch_callee else "legacy call")
        return found


def _parents(tree: ast.Module) -> dict:
    """id(node) -> its parent, for every node of the tree."""
    out = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            out[id(child)] = node
    return out


def _read_finding(read: tuple, lines: list[str], path: str, s) -> Finding:
    """CPA008 for one of ``fast_scan.value_reads``'s reads (the decision is ``route_rules``')."""
    node, r = read
    f = _finding(node, lines, path, codes.INTRINSIC_READ_AS_VALUE, route_rules.message(r), s)
    if SUPPRESS_RE.search(lines[node.lineno - 1]):
        f.status = Status.SUPPRESSED
    return f


def _finding(c: ast.Call, lines: list[str], path: str, code: str, message: str, s) -> Finding:
    first = lines[c.lineno - 1]
    last = lines[c.end_lineno - 1]
    col = len(first.encode("utf-8")[: c.col_offset].decode("utf-8", "replace")) + 1
    end_col = len(last.encode("utf-8")[: c.end_col_offset].decode("utf-8", "replace")) + 1
    return Finding(path=path, line=c.lineno, column=col, end_line=c.end_lineno, end_column=end_col,
                   code=code, message=message, function=enclosing(s.defs, c, s.memo))


