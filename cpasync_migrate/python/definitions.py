"""CPA006 / CPA007: a tree's own legacy definition of the Python API, and runtime helpers.

CPA006 legacy-api-definition.
  What: ``def ptx_cp_async(dtype, shared_ptr, shared_offset, global_ptr, global_offset, bytes)``
  at module level: a TileLang fork's own wrapper (``tilelang/language/tir/op.py``).
  Why: every kernel of the tree calls it; migrating the callers and not the definition (or
  the reverse) leaves a fork whose API and callers disagree.  It joins the change set of the
  op it builds (``sets.py``), with the tree's callers of the intrinsic.
  Example: a body that forwards its parameters to TVM's wrapper
  (``return _tvm_op.ptx_cp_async(dtype, shared_ptr, ...)``) becomes the target generation's
  signature building the same op from access pointers, as upstream PR #1590 rewrote it.
  Fix safety: safe in that upstream shape (the text shows every parameter forwarded as is);
  none otherwise, with the exact new signature in the message.

CPA007 legacy-runtime-helper.
  What: a runtime helper a code generator prints calls of, taking the legacy shape
  (``cp_async_gs(size, dst, dst_offset, src, src_offset)`` of TileLang's CuTeDSL backend).
  Why: under access pointers the code generator prints one pointer per side; a helper that
  still adds an offset would add it twice, or be called with the wrong number of arguments.
  Fix safety: none (give it a pointer-only form and change the printer with it).

Facts (names, what a legacy body forwards to, the new text) come from
``rules/python_api.toml``.
"""
from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from .. import codes
from ..findings import Applicability, Edit, Finding, Fix
from .cst_util import is_docstring

CODE_DEFINITION = codes.LEGACY_API_DEFINITION
CODE_HELPER = codes.LEGACY_RUNTIME_HELPER


def find(ctx, intrinsic: str) -> list[Finding]:
    """Findings for the module-level definitions of ``ctx.module`` (a rewrite ``_Context``)."""
    facts = ctx.rules.python_api
    if not facts:
        return []
    helpers = facts.get("helpers", {})
    helper_names = set(helpers.get("names", []))
    offset_re = re.compile(helpers.get("offset_param", "_offset$"))
    out = []
    for stmt in ctx.module.body:
        if not isinstance(stmt, cst.FunctionDef):
            continue
        name = stmt.name.value
        if name == intrinsic:
            f = definition(ctx, stmt, facts.get("definition", {}))
            if f is not None:
                out.append(f)
        elif name in helper_names:
            params = [p.name.value for p in stmt.params.params]
            if sum(1 for p in params if offset_re.search(p)) >= 2:
                out.append(_finding(ctx, stmt, CODE_HELPER, helpers.get("op"), "reader", (
                    f"runtime helper `{name}({', '.join(params)})` takes the legacy shape (a pointer and an offset "
                    "per side); under access pointers the code generator prints one pointer per side: give it a "
                    f"pointer-only form and change the printer that calls it in the same change"), None))
    return out


def definition(ctx, fdef: cst.FunctionDef, facts: dict) -> Optional[Finding]:
    legacy = list(ctx.rules.legacy.python_params)
    params = fdef.params
    names = [p.name.value for p in params.params]
    if names != legacy or params.star_arg not in (cst.MaybeSentinel.DEFAULT, None) or params.kwonly_params \
            or params.star_kwarg is not None or params.posonly_params:
        return None
    target = ctx.target
    new_params = list(target.python_params)
    signature = f"{fdef.name.value}({', '.join(new_params[:-1])}, {new_params[-1]}=None)"
    op = facts.get("op")
    why = _upstream_shape(ctx, fdef, legacy, facts)
    emit = facts.get("emit", {}).get(target.name)
    if why is None and emit is None:
        why = f"the rules hold no rewrite of the definition for {target.name}"
    if why is not None:
        return _finding(ctx, fdef, CODE_DEFINITION, op, "definition", (
            f"the tree's own definition of ptx_cp_async keeps the legacy signature; change it by hand to "
            f"`def {signature}` building `{op}` from the access pointers, together with its callers: {why}"), None)
    fix = _rewrite(ctx, fdef, new_params, op, emit)
    return _finding(ctx, fdef, CODE_DEFINITION, op, "definition", (
        f"the tree's own definition of ptx_cp_async keeps the legacy signature; migrate it to `def {signature}` "
        "with its callers (its docstring still describes the legacy parameters)"), fix)


def _upstream_shape(ctx, fdef: cst.FunctionDef, legacy: list[str], facts: dict) -> Optional[str]:
    """None when the body is the upstream one: an optional docstring and a forward of every parameter."""
    if any(p.default is not None for p in fdef.params.params):
        return "a parameter has a default value, so a caller may leave it out"
    body = list(fdef.body.body) if isinstance(fdef.body, cst.IndentedBlock) else []
    if body and is_docstring(body[0]):
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine) or len(body[0].body) != 1 \
            or not isinstance(body[0].body[0], cst.Return):
        return "its body is not a single forward to TVM's wrapper"
    value = body[0].body[0].value
    if not isinstance(value, cst.Call):
        return "its body does not return a call"
    forwards = set(facts.get("forwards_to", []))
    if not (ctx.qnames(value.func) & forwards):
        return f"it returns `{ctx.node_text(value.func)}(...)`, not TVM's wrapper"
    args = [a.value.value if isinstance(a.value, cst.Name) and a.keyword is None and not a.star else None
            for a in value.args]
    if args != legacy:
        return "it does not forward its parameters unchanged and in order"
    return None


def _rewrite(ctx, fdef: cst.FunctionDef, new_params: list[str], op: str, emit: dict) -> Fix:
    values = {f"p{i}": p for i, p in enumerate(new_params)}
    ps, _ = ctx.span(fdef.params.params[0])
    _, pe = ctx.span(fdef.params.params[-1])
    params_text = emit["params"].format(**values)
    body = list(fdef.body.body)
    start = 1 if is_docstring(body[0]) else 0
    ret = body[start]
    line = ctx.pos(ret).start.line
    indent = re.match(r"[ \t]*", ctx.lines[line - 1]).group(0)
    rs = ctx.starts[line - 1]
    _, re_ = ctx.span(ret)  # the return statement, from its line's start to its end
    body_text = emit["body"].format(indent=indent, nl=ctx.newline, op=op, **values)
    body_text = body_text[: -len(ctx.newline)] if body_text.endswith(ctx.newline) else body_text
    edits = [Edit(ps, pe, params_text), Edit(rs, re_, body_text)]
    return Fix(edits, Applicability.SAFE, [], ctx.rules.steps(ctx.legacy.name, ctx.target.name))


def _finding(ctx, node, code: str, op: Optional[str], role: str, message: str, fix: Optional[Fix]) -> Finding:
    r = ctx.pos(node)
    return Finding(path=ctx.path, line=r.start.line, column=r.start.column + 1, end_line=r.end.line,
                   end_column=r.end.column + 1, code=code, message=message, fix=fix,
                   function=node.name.value, op=op, role=role)
