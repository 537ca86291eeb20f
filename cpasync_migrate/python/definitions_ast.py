"""CPA006 / CPA007 from the standard library's ``ast``: ``definitions.py``'s findings without libcst.

A fork's ``tilelang/language/tir/op.py`` is a large file (thousands of lines) whose only site is
its own definition of the intrinsic; a CuTeDSL runtime module's only sites are its helpers.
Parsing such a file with libcst and its scopes costs a lint a large part of its run, so the
fast pass (``python/__init__.py``) asks this module for the same findings, fix included:

* ``find`` returns the findings exactly as ``definitions.find`` gives them (positions, code,
  message, role, op, the fix's edits, applicability and steps), or raises ``Undecided`` where
  this module does not follow the text as libcst does: a body on the ``def``'s own line, a
  body that is not the upstream shape but whose message would quote text libcst spans
  otherwise (parentheses around the callee), a callee whose name is bound more than once, a
  lone ``\\r`` (libcst and ``ast`` count lines differently there).  Both place a definition at
  its ``def`` (or ``async``), after its decorators.

The facts (names, what a legacy body forwards to, the new text) come from
``rules/python_api.toml``, as for ``definitions.py``; ``tests/test_python_fastpath.py`` checks
that both modules agree on every definition shape it holds.
"""
from __future__ import annotations

import ast
import re
from typing import Callable, Optional

from .. import codes
from ..findings import Applicability, Edit, Finding, Fix, line_starts
from . import definition_rules as texts
from . import runtime_helpers



class Undecided(Exception):
    """libcst decides this file."""


class _Text:
    """Character offsets of ``ast`` positions (line, UTF-8 byte column) in one file's text."""

    def __init__(self, text: str):
        if re.search(r"\r(?!\n)", text):
            raise Undecided  # ast breaks lines at a lone \r, libcst's positions do not
        self.text = text
        self.starts = line_starts(text)
        self.lines = text.split("\n")
        self.newline = "\r\n" if "\r\n" in text else "\n"

    def col(self, line: int, byte_col: int) -> int:
        return len(self.lines[line - 1].encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def offset(self, line: int, byte_col: int) -> int:
        return self.starts[line - 1] + self.col(line, byte_col)

    def start(self, node) -> int:
        return self.offset(node.lineno, node.col_offset)

    def end(self, node) -> int:
        return self.offset(node.end_lineno, node.end_col_offset)

    def segment(self, node) -> str:
        return self.text[self.start(node):self.end(node)]


def find(tree: ast.Module, text: str, path: str, options, intrinsic: str, qualify: Callable) -> list[Finding]:
    """The module-level definitions ``definitions.find`` reports, in module order.

    ``qualify(expr)``: the dotted name an expression names through the module's imports (None
    when its root is no import), raising for a name this pass cannot resolve as libcst does.
    """
    facts = options.rules.python_api
    if not facts:
        return []
    helper_names = set(facts.get("helpers", {}).get("names", []))
    src = None
    plans = None
    out = []
    for stmt in tree.body:
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if stmt.name != intrinsic and stmt.name not in helper_names:
            continue
        if src is None:
            src = _Text(text)
        _indented(stmt, src)
        if stmt.name == intrinsic:
            f = _definition(stmt, src, path, options, facts, qualify)
            if f is not None:
                out.append(f)
            continue
        message = texts.helper_message(facts, stmt.name, [a.arg for a in stmt.args.args])
        if message is not None:
            if plans is None:
                plans = runtime_helpers.plans(text, facts)
            message, fix = _helper_fix(stmt.name, message, plans, options)
            out.append(_finding(stmt, src, path, codes.LEGACY_RUNTIME_HELPER, facts["helpers"].get("op"), "reader", message, fix))
    return out


def _helper_fix(name: str, message: str, plans: dict, options):
    """CPA007's message and fix, from ``runtime_helpers.py`` as ``definitions.py`` takes them."""
    if options.target.form != "access_ptr":
        return message, None
    plan = plans.get(name)
    why = plan.why if plan is not None else "the standard library does not read it as a module-level helper"
    if why is not None:
        return texts.helper_outcome(message, why), None
    rules = options.rules
    fix = Fix([Edit(s, e, r) for s, e, r in plan.edits], Applicability.UNSAFE, [texts.helper_assumption(name)],
              rules.steps(rules.legacy.name, options.target.name), set_established=True)
    return texts.helper_outcome(message, None), fix


def _definition(fdef, src: _Text, path: str, options, facts: dict, qualify) -> Optional[Finding]:
    rules = options.rules
    legacy = list(rules.legacy.python_params)
    a = fdef.args
    if [x.arg for x in a.args] != legacy or a.vararg is not None or a.kwonlyargs or a.kwarg is not None \
            or a.posonlyargs:
        return None
    why = _upstream_shape(fdef, src, legacy, facts.get("definition", {}), qualify)
    message, emit = texts.definition_message(facts, fdef.name, options.target, why)
    fix = _rewrite(fdef, src, facts, emit, rules, options.target) if emit is not None else None
    return _finding(fdef, src, path, codes.LEGACY_API_DEFINITION, facts.get("definition", {}).get("op"), "definition", message,
                    fix)


def _indented(fdef, src: _Text) -> None:
    """The body is an indented block (libcst's ``IndentedBlock``), not ``def f(...): stmt``."""
    first = fdef.body[0]
    if src.lines[first.lineno - 1][:src.col(first.lineno, first.col_offset)].strip():
        raise Undecided


def _own_lines(body: list) -> None:
    """Each statement of the body on lines of its own (libcst groups ``a; b`` into one line)."""
    for prev, nxt in zip(body, body[1:]):
        if prev.end_lineno >= nxt.lineno:
            raise Undecided


def _upstream_shape(fdef, src: _Text, legacy: list[str], facts: dict, qualify) -> Optional[str]:
    if fdef.args.defaults:
        return texts.HAS_DEFAULTS
    body = list(fdef.body)
    _own_lines(body)
    if body and _is_docstring(body[0]):
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], ast.Return):
        return texts.NOT_ONE_FORWARD
    value = body[0].value
    if not isinstance(value, ast.Call):
        return texts.NOT_A_CALL
    forwards = set(facts.get("forwards_to", []))
    q = qualify(value.func)
    if q is None or q not in forwards:
        text = src.segment(value.func)
        if src.text[src.end(value.func):].lstrip().startswith(")"):
            raise Undecided  # parentheses around the callee: libcst's text includes them
        return texts.not_tvm_wrapper(text)
    if value.keywords or any(isinstance(x, ast.Starred) for x in value.args):
        return texts.NOT_IN_ORDER
    args = [x.id if isinstance(x, ast.Name) else None for x in value.args]
    if args != legacy:
        return texts.NOT_IN_ORDER
    return None


def _rewrite(fdef, src: _Text, facts: dict, emit: dict, rules, target) -> Fix:
    ps = src.start(fdef.args.args[0])
    pe = src.end(fdef.args.args[-1])  # (no defaults: _upstream_shape)
    body = list(fdef.body)
    ret = body[1 if _is_docstring(body[0]) else 0]
    indent = re.match(r"[ \t]*", src.lines[ret.lineno - 1]).group(0)
    rs = src.starts[ret.lineno - 1]
    params_text, body_text = texts.new_text(facts, emit, target, indent, src.newline)
    edits = [Edit(ps, pe, params_text), Edit(rs, src.end(ret), body_text)]
    return Fix(edits, Applicability.SAFE, [], rules.steps(rules.legacy.name, target.name))


def _finding(node, src: _Text, path: str, code: str, op: Optional[str], role: str, message: str,
             fix: Optional[Fix]) -> Finding:
    return Finding(path=path, line=node.lineno, column=src.col(node.lineno, node.col_offset) + 1,
                   end_line=node.end_lineno, end_column=src.col(node.end_lineno, node.end_col_offset) + 1,
                   code=code, message=message, fix=fix, function=node.name, op=op, role=role)


def _is_docstring(stmt) -> bool:
    """libcst's docstring test: an expression statement of a plain or concatenated string (bytes too)."""
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and \
        isinstance(stmt.value.value, (str, bytes))
