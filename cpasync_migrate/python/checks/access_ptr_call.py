"""CPA004 / CPA005 and ``--from``: a call already in the access-pointer form.

CPA004 dtype-keyword-on-new-call: docs/codes/CPA004.md.
CPA005 suspicious-size: docs/codes/CPA005.md.

``--from``: a call written for an older access-pointer generation is converted to the
target's size meaning (``convert_new``), exactly or not at all.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ... import codes
from ...findings import Applicability, Edit, Finding, Fix, Status
from ..calls import DTYPE_KW_MESSAGE, loop_lanes
from ..context import DType, NoFix
from ..cst_util import int_value


class AccessPtrCall:
    """The access-pointer form's checks (mixed into the pass's context)."""

    def check_access_ptr_call(self, node: cst.Call, finding: Finding) -> bool:
        """Fill ``finding`` for a call in the access-pointer shape; False when it is no finding."""
        if any(a.keyword is not None and a.keyword.value == self.legacy_dtype_kw() for a in node.args):
            finding.code = codes.DTYPE_KEYWORD_ON_NEW_CALL
            finding.message = DTYPE_KW_MESSAGE
            return True
        source, target = self.opts.source, self.target
        if source.form == "access_ptr" and source.name != target.name:
            # --from: the call was written for an older access-pointer generation
            try:
                fix = self.convert_new(node)
            except NoFix as e:
                finding.code = codes.LEGACY_CALL_MANUAL
                finding.message = f"access-pointer call written for {source.name} cannot be converted to {target.name}: {e}"
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
            raise NoFix(f"`{self.node_text(expr)}` is not an access pointer")
        names = {q.rpartition(".")[2] for q in self.qnames(expr.func)
                 if q.rpartition(".")[0] in (self.tl_modules | self.tvm_modules)}
        g = self.target
        if g.access_ptr in names and expr.args:
            ta = expr.args[0].value
            if isinstance(ta, cst.Call) and ta.args and g.type_annotation in {
                    q.rpartition(".")[2] for q in self.qnames(ta.func)}:
                return self.dtype_of_expr(ta.args[0].value, call)
            raise NoFix(f"the pointer type of `{self.node_text(expr)}` is not a type_annotation")
        if g.buffer_access_ptr and g.buffer_access_ptr in names and expr.args:
            sub = expr.args[0].value
            if isinstance(sub, cst.Subscript) and isinstance(sub.value, cst.Name):
                found = self.declaration_of(call, sub.value.value)
                if found is not None:
                    dexpr, _ = self.decl_dtype_expr(found[1])
                    if dexpr is not None:
                        return self.dtype_of_expr(dexpr, found[0])
            raise NoFix(f"the buffer behind `{self.node_text(expr)}` has no visible dtype")
        raise NoFix(f"`{self.node_text(expr)}` is not an access pointer")

    def new_form_parts(self, node: cst.Call):
        pos = [a for a in node.args if a.keyword is None]
        byname = {a.keyword.value: a for a in node.args if a.keyword is not None}
        names_size = {g.python_params[2] for g in self.rules.generations[1:]}
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
        src_meaning = self.opts.source.size_meaning
        dst_meaning = self.target.size_meaning
        if src_meaning == dst_meaning:
            return None
        dst, src, size = self.new_form_parts(node)
        for d in (dst, src):
            if d.size is None:
                raise NoFix(f"the element size of `{d.text}` is not known from the text")
        if dst.size != src.size:
            raise NoFix(f"the pointer types {dst.name} and {src.name} differ in width; "
                        f"{self.target.name} needs both pointers in one type")
        k = dst.size
        value = int_value(size.value)
        if value is None:
            raise NoFix(f"the size `{self.node_text(size.value)}` is not an integer literal")
        if src_meaning == "bytes":
            if value % k:
                raise NoFix(f"{value} bytes is not a whole number of {dst.name} elements")
            new, nbytes = value // k, value
        else:
            new, nbytes = value * k, value * k
        if nbytes not in self.target.widths:
            raise NoFix(f"the copy is {nbytes} bytes, not a cp.async width")
        vs, ve = self.vspan(size.value)
        as_, _ = self.span(size)
        edits = [Edit(as_ if size.keyword is not None else vs, ve, str(new))]
        steps = self.rules.steps(self.opts.source.name, self.target.name)
        return Fix(edits, Applicability.SAFE, [], steps)

    def widening_lanes(self, node: cst.Call) -> Optional[int]:
        """The lanes of the one widening loop (``for i in T.vectorized(N)``, the target's
        ``widening_loop``) whose body holds ``node``; None: no such loop, more than one, or lanes the
        text does not give as literals."""
        name = self.target.widening_loop
        if name is None:
            return None
        found = []
        child, cur = node, self.parents.get(node)
        while cur is not None:
            if isinstance(cur, cst.For) and child is cur.body:
                it = cur.iter
                if isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) and it.func.attr.value == name \
                        and any(q.rpartition(".")[0] in self.tl_modules for q in self.qnames(it.func)):
                    found.append(it)
            child, cur = cur, self.parents.get(cur)
        if len(found) != 1 or any(a.keyword is not None or a.star for a in found[0].args):
            return None
        return loop_lanes([int_value(a.value) for a in found[0].args])

    def size_warning(self, node: cst.Call) -> Optional[str]:
        """CPA005: a three/four-argument call whose size reads wrong under the target."""
        try:
            dst, src, size = self.new_form_parts(node)
        except NoFix:
            return None
        value = int_value(size.value)
        if value is None or dst.size is None or src.size is None:
            return None
        g = self.target
        widths = "/".join(map(str, g.widths))
        if g.size_meaning == "num_elems":
            if dst.size != src.size:
                return (f"the pointer types {dst.name} and {src.name} differ in width; {g.name} derives the copy "
                        f"width from each side and needs them equal")
            lanes = self.widening_lanes(node)
            if lanes is not None and value * dst.size * lanes in g.widths:
                return None  # widened to one copy of all its lanes (rules: widening_loop)
            if value * dst.size not in g.widths:
                hint = ""
                if value in g.widths and value % dst.size == 0:
                    hint = (f"; if it was written for 0.1.8 with a byte count, run with --from 0.1.8 to convert it "
                            f"to {value // dst.size} elements")
                return (f"size {value} means {value} {dst.name} elements = {value * dst.size} bytes under {g.name}, "
                        f"not a cp.async width ({widths}){hint}")
            return None
        for d in (dst, src):
            if value % d.size:
                return f"size {value} bytes is not a whole number of {d.name} elements of its access pointer"
        if value not in g.widths:
            return f"size {value} bytes is not a cp.async width ({widths}) under {g.name}"
        return None
