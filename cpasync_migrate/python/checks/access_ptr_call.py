"""CPA004 / CPA005 and ``--from``: a call already in the access-pointer form.

CPA004 dtype-keyword-on-new-call: docs/codes/CPA004.md.
CPA005 suspicious-size: docs/codes/CPA005.md.

``--from``: a call written for an older access-pointer generation is converted to the
target's size meaning (``convert_new``), exactly or not at all.

This module reads the facts from the libcst tree (the pointer types, the size argument, the widening
loop); what they mean is ``decide/access_ptr.py``'s, which the fast pass (``fast_sizes.py``) asks too.

A unit over the file's context (``ctx``): the pointer types come from ``ctx.bindings``.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ... import codes
from ...findings import Applicability, Edit, Finding, Fix, Status
from ..context import Context, DType, NoFix
from ..cst_util import int_value
from ..decide import access_ptr as decide


class AccessPtrCall:
    """The access-pointer form's checks: ``AccessPtrCall(ctx).check_access_ptr_call(node, finding)``."""

    ctx: Context

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def check_access_ptr_call(self, node: cst.Call, finding: Finding) -> bool:
        """Fill ``finding`` for a call in the access-pointer shape; False when it is no finding."""
        source, target = self.ctx.opts.source, self.ctx.target
        question = decide.check(any(a.keyword is not None and a.keyword.value == self.ctx.legacy.python_params[0]
                                    for a in node.args), source, target)
        if question == decide.DTYPE_KEYWORD:
            finding.code = codes.DTYPE_KEYWORD_ON_NEW_CALL
            finding.message = decide.DTYPE_KW_MESSAGE
            return True
        if question == decide.CONVERT:
            # --from: the call was written for an older access-pointer generation
            try:
                fix = self.convert_new(node)
            except NoFix as e:
                finding.code = codes.LEGACY_CALL_MANUAL
                finding.message = (f"access-pointer call written for {source.name} cannot be converted to "
                                   f"{target.name}: {e}")
                return True
            if fix is None:
                return False  # nothing to convert (the size already means the same)
            finding.fix = fix
            finding.message = (f"access-pointer call written for the {source.name} API ({source.size_meaning}); "
                               f"convert its size to {target.size_meaning} for {target.name}")
            return True
        warning = self.size_warning(node)
        if warning is None:
            return False  # already migrated: not a finding
        finding.code = codes.SUSPICIOUS_SIZE
        finding.message = warning
        finding.legacy_site = False
        finding.status = Status.INFO
        finding.severity = "warning"
        return True

    def access_pointer_dtype(self, expr: cst.BaseExpression, call: cst.Call) -> DType:
        """Pointer type of a new-form argument: tvm_access_ptr(type_annotation(P), ...) or access_ptr(buf[i], ...)."""
        if not isinstance(expr, cst.Call):
            raise NoFix(f"`{self.ctx.node_text(expr)}` is not an access pointer")
        names = {q.rpartition(".")[2] for q in self.ctx.qnames(expr.func)
                 if q.rpartition(".")[0] in (self.ctx.tl_modules | self.ctx.tvm_modules)}
        g = self.ctx.target
        if g.access_ptr in names and expr.args:
            ta = expr.args[0].value
            if isinstance(ta, cst.Call) and ta.args and g.type_annotation in {
                    q.rpartition(".")[2] for q in self.ctx.qnames(ta.func)}:
                return self.ctx.bindings.dtype_of_expr(ta.args[0].value, call)
            raise NoFix(f"the pointer type of `{self.ctx.node_text(expr)}` is not a type_annotation")
        if g.buffer_access_ptr and g.buffer_access_ptr in names and expr.args:
            sub = expr.args[0].value
            if isinstance(sub, cst.Subscript) and isinstance(sub.value, cst.Name):
                found = self.ctx.bindings.declaration_of(call, sub.value.value)
                if found is not None:
                    dexpr, _ = self.ctx.bindings.decl_dtype_expr(found[1])
                    if dexpr is not None:
                        return self.ctx.bindings.dtype_of_expr(dexpr, found[0])
            raise NoFix(f"the buffer behind `{self.ctx.node_text(expr)}` has no visible dtype")
        raise NoFix(f"`{self.ctx.node_text(expr)}` is not an access pointer")

    def new_form_parts(self, node: cst.Call):
        pos = [a for a in node.args if a.keyword is None]
        byname = {a.keyword.value: a for a in node.args if a.keyword is not None}
        names_size = {g.python_params[2] for g in self.ctx.rules.generations[1:]}
        if len(pos) < 2:
            raise NoFix("the access pointers are not positional")
        size = pos[2] if len(pos) > 2 else next((byname[k] for k in names_size if k in byname), None)
        if size is None:
            raise NoFix("no size argument")
        dst = self.access_pointer_dtype(pos[0].value, node)
        src = self.access_pointer_dtype(pos[1].value, node)
        return dst, src, size

    def convert_new(self, node: cst.Call) -> Optional[Fix]:
        """--from: convert the size argument of an access-pointer call between generations."""
        source, target = self.ctx.opts.source, self.ctx.target
        if not decide.converts(source, target):
            return None
        dst, src, size = self.new_form_parts(node)
        try:
            new = decide.converted_size(source, target, _ptype(dst), _ptype(src), int_value(size.value),
                                        self.ctx.node_text(size.value))
        except decide.NotConverted as e:
            raise NoFix(str(e)) from None
        vs, ve = self.ctx.vspan(size.value)
        as_, _ = self.ctx.span(size)
        edits = [Edit(as_ if size.keyword is not None else vs, ve, str(new))]
        steps = self.ctx.rules.steps(source.name, target.name)
        return Fix(edits, Applicability.SAFE, [], steps)

    def widening_lanes(self, node: cst.Call) -> Optional[int]:
        """The lanes of the one widening loop (``for i in T.vectorized(N)``, the target's
        ``widening_loop``) whose body holds ``node``; None: no such loop, more than one, or lanes the
        text does not give as literals."""
        name = self.ctx.target.widening_loop
        if name is None:
            return None
        found = []
        child, cur = node, self.ctx.parents.get(node)
        while cur is not None:
            if isinstance(cur, cst.For) and child is cur.body:
                it = cur.iter
                if isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) and it.func.attr.value == name \
                        and any(q.rpartition(".")[0] in self.ctx.tl_modules for q in self.ctx.qnames(it.func)):
                    found.append(it)
            child, cur = cur, self.ctx.parents.get(cur)
        if len(found) != 1 or any(a.keyword is not None or a.star for a in found[0].args):
            return None
        return decide.loop_lanes([int_value(a.value) for a in found[0].args])

    def size_warning(self, node: cst.Call) -> Optional[str]:
        """CPA005: a three/four-argument call whose size reads wrong under the target (decide/access_ptr.py)."""
        try:
            dst, src, size = self.new_form_parts(node)
        except NoFix:
            return None
        return decide.size_warning(self.ctx.target, int_value(size.value), _ptype(dst), _ptype(src),
                                   lambda: self.widening_lanes(node))


def _ptype(d: DType) -> decide.PointerType:
    return decide.PointerType(d.name, d.size, d.text)
