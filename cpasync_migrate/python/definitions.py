"""CPA006 / CPA007: a tree's own legacy definition of the Python API, and runtime helpers.

CPA006 legacy-api-definition: docs/codes/CPA006.md.
CPA007 legacy-runtime-helper: docs/codes/CPA007.md.

A definition joins the change set of the op it builds (``sets.py``), with the tree's callers of
the intrinsic; a runtime helper's new text is made by ``runtime_helpers.py``.  Facts (names, what a
legacy body forwards to, the new text) come from
``rules/python_api.toml``.
"""
from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from .. import codes
from ..findings import Applicability, Edit, Finding, Fix
from . import definition_rules as texts
from . import runtime_helpers
from .cst_util import is_docstring
from .context import Context



def find(ctx: Context, intrinsic: str) -> list[Finding]:
    """Findings for the module-level definitions of ``ctx.module`` (the file's context.py ``Context``)."""
    facts = ctx.rules.python_api
    if not facts:
        return []
    op = facts.get("helpers", {}).get("op")
    out = []
    plans = None
    for stmt in ctx.module.body:
        if not isinstance(stmt, cst.FunctionDef):
            continue
        name = stmt.name.value
        if name == intrinsic:
            f = definition(ctx, stmt, facts)
            if f is not None:
                out.append(f)
            continue
        message = texts.helper_message(facts, name, [p.name.value for p in stmt.params.params])
        if message is not None:
            if plans is None:
                plans = runtime_helpers.plans(ctx.text, facts)
            message, fix = _helper_fix(ctx, name, message, plans.get(name))
            out.append(_finding(ctx, stmt, codes.LEGACY_RUNTIME_HELPER, op, "reader", message, fix))
    return out


def _helper_fix(ctx: Context, name: str, message: str, plan) -> tuple:
    if ctx.target.form != "access_ptr":
        return message, None
    why = plan.why if plan is not None else "the standard library does not read it as a module-level helper"
    if why is not None:
        return texts.helper_outcome(message, why), None
    fix = Fix([Edit(s, e, r) for s, e, r in plan.edits], Applicability.UNSAFE, [texts.helper_assumption(name)],
              ctx.rules.steps(ctx.legacy.name, ctx.target.name), set_established=True)
    return texts.helper_outcome(message, None), fix


def definition(ctx: Context, fdef: cst.FunctionDef, facts: dict) -> Optional[Finding]:
    legacy = list(ctx.rules.legacy.python_params)
    params = fdef.params
    names = [p.name.value for p in params.params]
    if names != legacy or params.star_arg not in (cst.MaybeSentinel.DEFAULT, None) or params.kwonly_params \
            or params.star_kwarg is not None or params.posonly_params:
        return None
    why = _upstream_shape(ctx, fdef, legacy, facts.get("definition", {}))
    message, emit = texts.definition_message(facts, fdef.name.value, ctx.target, why)
    fix = _rewrite(ctx, fdef, facts, emit) if emit is not None else None
    return _finding(ctx, fdef, codes.LEGACY_API_DEFINITION, facts.get("definition", {}).get("op"), "definition", message, fix)


def _upstream_shape(ctx: Context, fdef: cst.FunctionDef, legacy: list[str], facts: dict) -> Optional[str]:
    """None when the body is the upstream one: an optional docstring and a forward of every parameter."""
    if any(p.default is not None for p in fdef.params.params):
        return texts.HAS_DEFAULTS
    body = list(fdef.body.body) if isinstance(fdef.body, cst.IndentedBlock) else []
    if body and is_docstring(body[0]):
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine) or len(body[0].body) != 1 \
            or not isinstance(body[0].body[0], cst.Return):
        return texts.NOT_ONE_FORWARD
    value = body[0].body[0].value
    if not isinstance(value, cst.Call):
        return texts.NOT_A_CALL
    forwards = set(facts.get("forwards_to", []))
    if not (ctx.qnames(value.func) & forwards):
        return texts.not_tvm_wrapper(ctx.node_text(value.func))
    args = [a.value.value if isinstance(a.value, cst.Name) and a.keyword is None and not a.star else None
            for a in value.args]
    if args != legacy:
        return texts.NOT_IN_ORDER
    return None


def _rewrite(ctx: Context, fdef: cst.FunctionDef, facts: dict, emit: dict) -> Fix:
    ps, _ = ctx.span(fdef.params.params[0])
    _, pe = ctx.span(fdef.params.params[-1])
    body = list(fdef.body.body)
    ret = body[1 if is_docstring(body[0]) else 0]
    line = ctx.pos(ret).start.line
    indent = re.match(r"[ \t]*", ctx.lines[line - 1]).group(0)
    rs = ctx.starts[line - 1]
    _, re_ = ctx.span(ret)  # the return statement, from its line's start to its end
    params_text, body_text = texts.new_text(facts, emit, ctx.target, indent, ctx.newline)
    edits = [Edit(ps, pe, params_text), Edit(rs, re_, body_text)]
    return Fix(edits, Applicability.SAFE, [], ctx.rules.steps(ctx.legacy.name, ctx.target.name))


def _finding(ctx: Context, node, code: str, op: Optional[str], role: str, message: str, fix: Optional[Fix]) -> Finding:
    r = ctx.pos(node)
    return Finding(path=ctx.path, line=r.start.line, column=r.start.column + 1, end_line=r.end.line,
                   end_column=r.end.column + 1, code=code, message=message, fix=fix,
                   function=node.name.value, op=op, role=role)
