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

CODE_DEFINITION = codes.LEGACY_API_DEFINITION
CODE_HELPER = codes.LEGACY_RUNTIME_HELPER


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
    helpers = facts.get("helpers", {})
    helper_names = set(helpers.get("names", []))
    offset_re = re.compile(helpers.get("offset_param", "_offset$"))
    src = None
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
            f = _definition(stmt, src, path, options, facts.get("definition", {}), qualify)
            if f is not None:
                out.append(f)
        else:
            params = [a.arg for a in stmt.args.args]
            if sum(1 for p in params if offset_re.search(p)) >= 2:
                out.append(_finding(stmt, src, path, CODE_HELPER, helpers.get("op"), "reader", (
                    f"runtime helper `{stmt.name}({', '.join(params)})` takes the legacy shape (a pointer and an "
                    "offset per side); under access pointers the code generator prints one pointer per side: give "
                    "it a pointer-only form and change the printer that calls it in the same change"), None))
    return out


def _definition(fdef, src: _Text, path: str, options, facts: dict, qualify) -> Optional[Finding]:
    rules = options.rules
    legacy = list(rules.legacy.python_params)
    a = fdef.args
    if [x.arg for x in a.args] != legacy or a.vararg is not None or a.kwonlyargs or a.kwarg is not None \
            or a.posonlyargs:
        return None
    target = options.target
    new_params = list(target.python_params)
    signature = f"{fdef.name}({', '.join(new_params[:-1])}, {new_params[-1]}=None)"
    op = facts.get("op")
    why = _upstream_shape(fdef, src, legacy, facts, qualify)
    emit = facts.get("emit", {}).get(target.name)
    if why is None and emit is None:
        why = f"the rules hold no rewrite of the definition for {target.name}"
    if why is not None:
        return _finding(fdef, src, path, CODE_DEFINITION, op, "definition", (
            f"the tree's own definition of ptx_cp_async keeps the legacy signature; change it by hand to "
            f"`def {signature}` building `{op}` from the access pointers, together with its callers: {why}"), None)
    fix = _rewrite(fdef, src, new_params, op, emit, rules, target)
    return _finding(fdef, src, path, CODE_DEFINITION, op, "definition", (
        f"the tree's own definition of ptx_cp_async keeps the legacy signature; migrate it to `def {signature}` "
        "with its callers (its docstring still describes the legacy parameters)"), fix)


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
        return "a parameter has a default value, so a caller may leave it out"
    body = list(fdef.body)
    _own_lines(body)
    if body and _is_docstring(body[0]):
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], ast.Return):
        return "its body is not a single forward to TVM's wrapper"
    value = body[0].value
    if not isinstance(value, ast.Call):
        return "its body does not return a call"
    forwards = set(facts.get("forwards_to", []))
    q = qualify(value.func)
    if q is None or q not in forwards:
        text = src.segment(value.func)
        if src.text[src.end(value.func):].lstrip().startswith(")"):
            raise Undecided  # parentheses around the callee: libcst's text includes them
        return f"it returns `{text}(...)`, not TVM's wrapper"
    if value.keywords or any(isinstance(x, ast.Starred) for x in value.args):
        return "it does not forward its parameters unchanged and in order"
    args = [x.id if isinstance(x, ast.Name) else None for x in value.args]
    if args != legacy:
        return "it does not forward its parameters unchanged and in order"
    return None


def _rewrite(fdef, src: _Text, new_params: list[str], op: str, emit: dict, rules, target) -> Fix:
    values = {f"p{i}": p for i, p in enumerate(new_params)}
    ps = src.start(fdef.args.args[0])
    pe = src.end(fdef.args.args[-1])  # (no defaults: _upstream_shape)
    params_text = emit["params"].format(**values)
    body = list(fdef.body)
    start = 1 if _is_docstring(body[0]) else 0
    ret = body[start]
    line = ret.lineno
    indent = re.match(r"[ \t]*", src.lines[line - 1]).group(0)
    rs = src.starts[line - 1]
    re_ = src.end(ret)
    body_text = emit["body"].format(indent=indent, nl=src.newline, op=op, **values)
    body_text = body_text[: -len(src.newline)] if body_text.endswith(src.newline) else body_text
    edits = [Edit(ps, pe, params_text), Edit(rs, re_, body_text)]
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
