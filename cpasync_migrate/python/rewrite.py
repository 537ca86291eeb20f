"""Find legacy ``ptx_cp_async`` calls in TileLang scripts and compute their rewrite.

Pure: takes text, returns findings whose fixes are character-offset edits.
Name resolution uses libcst's ScopeProvider (the qualified names its scopes give), so
aliases, ``from`` imports and local shadowing are handled as Python does.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from .. import codes
from ..findings import Analysis, Finding, FrontEndOptions, Status
from .calls import INTRINSIC, SUPPRESS_RE, call_shape
from .checks.access_ptr_call import AccessPtrCall
from .checks.legacy_call import LegacyCall
from .checks.value_read import ValueRead
from .context import Context
from .decide import dispatch
from . import parse_gate, positions, scopes


# What the analysis reads about nodes: positions (positions.py: libcst's PositionProvider's ranges)
# and scopes (scopes.py: libcst's ScopeProvider).  Qualified names come from the scopes on demand
# (QualifiedNameProvider would compute them for every node of the module in a traversal of its own;
# the analysis asks for a handful), and parents from the one rendering of positions.py (or the
# traversal below; ParentNodeProvider would make another).


class _Collector(cst.CSTVisitor):
    """One traversal of the module: every node's parent, the calls in document order, and what
    ``checks/value_read.py`` starts from (attributes named like the intrinsic, subscripts, imports)."""

    def __init__(self):
        super().__init__()
        self.parents: dict = {}
        self.calls: list = []
        self.attributes: list = []
        self.subscripts: list = []
        self.import_froms: list = []
        self._stack: list = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self._stack:
            self.parents[node] = self._stack[-1]
        self._stack.append(node)
        positions.note(self, node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._stack.pop()

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        pass

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        pass



class _Pass:
    """The libcst pass over one file: each call of the intrinsic classified and, where it can be, fixed.

    ``visit_call`` reads the API a call reaches (``ctx.which_api``: reach.py) and its shape, and
    ``decide/dispatch.py`` says which check it goes to.  The checks are units over the file's context
    (context.py), each in ``checks/``: ``legacy`` (legacy_call: CPA001/CPA002), ``access_ptr``
    (access_ptr_call: CPA004/CPA005, ``--from``), ``values`` (value_read: CPA008, after every call); the
    lookups are the context's services (``ctx.bindings``, ``ctx.imports``, ``ctx.smem``).
    ``ctx.analysed`` holds the calls the pass classified: those that reach the intrinsic, and those that
    may reach it along a route it names.
    """

    ctx: Context
    legacy: LegacyCall
    access_ptr: AccessPtrCall
    values: ValueRead

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.legacy = LegacyCall(ctx)
        self.access_ptr = AccessPtrCall(ctx)
        self.values = ValueRead(ctx)

    def visit_call(self, node: cst.Call) -> None:
        ctx = self.ctx
        reach = ctx.which_api(node.func)
        api = reach.api
        if api is not None or reach.unresolved:
            ctx.analysed.add(node)
        if api is None and not reach.unresolved:
            return
        call = dispatch.Call(api, self.call_shape(node), len(node.args),
                             tuple(a.keyword.value for a in node.args if a.keyword is not None),
                             isinstance(node.func, cst.NamedExpr), reach.unresolved or "")
        route = dispatch.route(call, ctx.opts.migrate_tvm)  # which check the call goes to (decide/dispatch.py)
        if route.check == dispatch.NONE:
            return
        r = ctx.pos(node)
        line_text = ctx.lines[r.start.line - 1] if r.start.line - 1 < len(ctx.lines) else ""
        finding = Finding(
            path=ctx.path,
            line=r.start.line,
            column=r.start.column + 1,
            end_line=r.end.line,
            end_column=r.end.column + 1,
            code=codes.LEGACY_CALL,
            message="",
            function=ctx.enclosing_function(node),
        )
        if route.check == dispatch.ACCESS_PTR:
            if dispatch.marks_migrated(call):
                ctx.migrated.add(finding.function or "")  # (half-migrated files: findings.half_migrated)
            if not self.access_ptr.check_access_ptr_call(node, finding):
                return  # already migrated, or nothing to convert: not a finding
        elif route.check == dispatch.LEGACY:
            self.legacy.check_legacy_call(node, finding, switch_callee=route.switch_callee,
                                          route_assumptions=[reach.assumption] if reach.assumption else [])
        else:  # TVM's wrapper (CPA003), or left for a person (CPA002)
            finding.code, finding.message = route.code, route.message
        if SUPPRESS_RE.search(line_text):
            finding.status = Status.SUPPRESSED
            finding.fix = None
        finding.role = dispatch.role(call, finding.legacy_site)
        ctx.findings.append(finding)

    def call_shape(self, node: cst.Call) -> str:
        """'legacy', 'new', or a description of what is wrong."""
        return call_shape(self.ctx.rules, any(a.star for a in node.args), len(node.args),
                          [a.keyword.value for a in node.args if a.keyword is not None])


def _python_error(text: str):
    """The SyntaxError Python's own parser gives for ``text`` (parsed only, never run), or None."""
    import ast
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
    except SyntaxError as e:
        return e if e.lineno else None
    except (ValueError, MemoryError, RecursionError):
        return None
    return None


def _facts(module: cst.Module):
    """The module's metadata (provider -> {node: value}) and its nodes (parents, calls, ...: ``_Collector``'s
    lists): scopes (scopes.py), positions, parents and nodes from one rendering (positions.py), as their
    switches allow."""
    metadata = scopes.resolve(module)
    if positions.WALK:
        seen = positions.Walk(module)
        pos = seen.positions if positions.ENABLED else None
    else:
        seen = _Collector()
        module.visit(seen)
        pos = positions.Positions(module) if positions.ENABLED else None
    if pos is None:
        pos = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    metadata[PositionProvider] = pos
    return metadata, seen


def analyze(text: str, path: str, options: FrontEndOptions, style=None) -> Analysis:
    """``style``: the file_style.FileStyle of the whole file when ``text`` is a window of it (window.py)."""
    refused = parse_gate.refusal(text)  # libcst is given only what Python reads, nested within a bound
    if refused is not None:
        return Analysis([], error=refused.message, error_line=refused.line, error_column=refused.column)
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as e:
        py = _python_error(text)
        if py is not None:  # Python's own position and words (libcst's point past the error)
            return Analysis([], error=f"cannot parse: {py.msg}", error_line=py.lineno, error_column=py.offset or 1)
        return Analysis([], error=f"cannot parse: {e.message}", error_line=e.raw_line, error_column=e.raw_column + 1)
    except Exception as e:  # noqa: BLE001 - libcst raises a few other types on odd input
        return Analysis([], error=f"cannot parse: {e}")
    ctx = Context(text, path, module, options)
    ctx.file_style = style
    ctx.metadata, seen = _facts(module)
    ctx.parents = seen.parents
    run = _Pass(ctx)
    for call in seen.calls:
        run.visit_call(call)
    run.values.check_value_reads(seen.calls, seen.attributes, seen.subscripts, seen.import_froms)
    from .definitions import find as find_definitions

    defs = find_definitions(ctx, INTRINSIC)
    if defs:
        # the definition's own forward to TVM's wrapper is part of the definition's site
        inside = [(d.line, d.end_line) for d in defs if d.code == codes.LEGACY_API_DEFINITION]
        ctx.findings = [f for f in ctx.findings
                        if not (f.code == codes.TVM_NAMESPACE_CALL and any(a <= f.line and f.end_line <= b for a, b in inside))]
    ctx.findings.extend(defs)
    ctx.findings.sort(key=lambda f: (f.line, f.column))
    return Analysis(ctx.findings, migrated=sorted(ctx.migrated))


def reparse_problem(old_text: str, new_text: str) -> Optional[str]:
    refused = parse_gate.refusal(new_text)
    if refused is not None:
        return f"the rewritten text does not parse (line {refused.line or 1}: {refused.message})"
    try:
        cst.parse_module(new_text)
    except cst.ParserSyntaxError as e:
        return f"the rewritten text does not parse (line {e.raw_line}: {e.message})"
    return None

