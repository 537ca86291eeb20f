"""The kernel builder's buffers and the cp.async call: declarations, access pointers, regions.

:class:`CopyBuilder` makes a :class:`~cpasync_migrate.verify.ir.Buffer` from a declaration's
call (``T.alloc_shared``, a ``T.Tensor`` parameter, ...), reads a ``T.ptx_cp_async`` call in
either form (legacy offsets, or access pointers: ``T.tvm_access_ptr``, ``T.access_ptr``,
``Buffer.access_ptr``) into a :class:`~cpasync_migrate.verify.ir.CpAsync`, and reads the
regions of ``T.copy`` and the indexed elements ``buf[i, j]``.  A part of
:class:`~.statements.KernelBuilder` over :class:`~.context.KernelContext`; what it calls in the other parts is
declared in ``parts.py``.
"""
from __future__ import annotations

import ast

from ..ir import Bin, Buffer, Const, CpAsync, Ptr, Region, Unsupported, Var, flat_index
from .context import KernelContext
from .expressions import fold
from .module import Scope
from .parts import ExpressionPart
from .signatures import Bound, cp_async_signature

DEFAULT_SCOPES = {"alloc_shared": "shared.dyn", "alloc_fragment": "local.fragment", "alloc_local": "local",
                  "alloc_buffer": "global", "decl_buffer": "global"}


class CopyBuilder(KernelContext, ExpressionPart):
    """A part of :class:`~.statements.KernelBuilder`: buffers, the cp.async call, access pointers, regions.  It
    reads expressions through :class:`~.parts.ExpressionPart`."""

    # buffers ----------------------------------------------------------------
    def shape(self, node, scope: Scope) -> tuple:
        v = self.cval(node, scope)
        if isinstance(v, int):
            v = (v,)
        if not isinstance(v, tuple) or not all(isinstance(x, int) and x >= 0 for x in v):
            raise Unsupported(f"shape {ast.unparse(node)!r} is not known from the text", node.lineno)
        return v

    def make_buffer(self, name, b: Bound, opname: str, scope: Scope, param=False) -> Buffer:
        """A buffer from a declaration bound to its signature (``bind_call``): shape, dtype, scope."""
        call = b.call
        decl = self.rules.declarations.get(opname, {})
        dt_node = b.get("dtype")
        if dt_node is not None:
            dt = self.dtype(dt_node, scope)
        elif decl.get("default") is not None:
            dt = self.rules.canonical_dtype(decl["default"])
        else:
            raise Unsupported(f"T.{opname} without a dtype (it requires one)", call.lineno)
        if param:
            sc = "global"
        else:
            sc_node = b.get("scope")
            sc = self.cval(sc_node, scope) if sc_node is not None else DEFAULT_SCOPES.get(opname, "global")
            if not isinstance(sc, str):
                raise Unsupported(f"T.{opname} scope {ast.unparse(sc_node)[:40]!r} is not a string", call.lineno)
            if opname == "alloc_shared" and dt == "bool":
                sc = "shared"  # TileLang 0.1.7.post1 forces bool shared buffers out of the merged pool
        buf = Buffer(self.fresh(name), self.shape(b["shape"], scope), dt, str(sc), self.rules.dtype_size(dt),
                     param=param, line=call.lineno)
        return buf

    # cp.async ------------------------------------------------------------------
    def cp_async(self, call: ast.Call, scope: Scope) -> CpAsync:
        """A ``T.ptx_cp_async`` call, its arguments bound to the signature of its form (from the rules)."""
        line, col = call.lineno, call.col_offset
        form = self.cp_async_form(call)
        if form == "access_ptr":
            # a `dtype=` keyword left on the access-pointer form is read, and refuted by the site check
            dtype_kw = any(k.arg == "dtype" for k in call.keywords)
            bare = ast.Call(func=call.func, args=call.args, keywords=[k for k in call.keywords if k.arg != "dtype"],
                            lineno=line, col_offset=col)
            b = self.bind_call(cp_async_signature(self.rules, "access_ptr", self.meaning), bare, scope)
            dst_p, src_p, size_p, pred_p = b.sig.params
            dst = self.access_ptr(b[dst_p], scope)
            src = self.access_ptr(b[src_p], scope)
            size_node = b[size_p]
            size = self.expr(size_node, scope)
            pn = b.get(pred_p)
            pred = self.expr(pn, scope) if pn is not None and not (
                isinstance(pn, ast.Constant) and pn.value is None) else None
            return CpAsync("access_ptr", dst, src, size, self.meaning, pred, line, col,
                           None, dtype_kw, self.elem_count_literal(size_node, size, scope))
        params = tuple(self.rules.legacy.python_params)
        dtype_kw = any(k.arg == params[0] for k in call.keywords)
        b = self.bind_call(cp_async_signature(self.rules, "legacy", "bytes", dtype_kw), call, scope)
        dtype_p, dptr, doff, sptr, soff, size_p = params
        ldt = None
        ok, v = self.try_cval(b[dtype_p], scope)
        if ok and isinstance(v, str):
            ldt = self.rules.canonical_dtype(v)
        dst = Ptr(self.data_buffer(b[dptr], scope), None, self.expr(b[doff], scope))
        src = Ptr(self.data_buffer(b[sptr], scope), None, self.expr(b[soff], scope))
        size_node = b[size_p]
        size_lit = isinstance(size_node, ast.Constant) and isinstance(size_node.value, int)
        extra = b.sig.params[len(params) - (1 if dtype_kw else 0):]
        pred = self.expr(b[extra[0]], scope) if extra and extra[0] in b else None
        return CpAsync("legacy", dst, src, self.expr(size_node, scope), "bytes", pred, line, col, ldt, False, size_lit)

    def elem_count_literal(self, node, size, scope: Scope):
        """Whether the access-pointer call's count reaches codegen as an integer immediate, which a target that
        counts elements requires (the code generator reads ``args[2].as<IntImmNode>()``): True for a Python int
        when the kernel is built (``16``, ``16 // 2``, a constant or factory parameter: ``call_intrin`` makes it an
        IntImm) and for an integer dtype's constructor of one (``T.int32(8)``); False for a loop, thread or
        parameter variable itself; None (not known) for anything else, an expression TVM or the passes before
        codegen might fold to a constant or not."""
        ok, v = self.try_cval(node, scope)
        if ok:
            return type(v) is int or None
        if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
            name = self.mod.op_name(node.func)
            dt = self.rules.canonical_dtype(name) if name else ""
            ok, v = self.try_cval(node.args[0], scope)
            if ok and type(v) is int and dt.lstrip("u").startswith("int") and self.rules.dtype_size(dt) is not None:
                return True
        if isinstance(size, Var):
            return False
        return None

    def cp_async_form(self, call: ast.Call) -> str:
        return call_form(self.mod, call)

    def data_buffer(self, node, scope: Scope) -> Buffer:
        if isinstance(node, ast.Attribute) and node.attr == "data":
            return self.buffer_of(node.value, scope)
        if isinstance(node, ast.Name):
            b = scope.lookup(node.id)
            if isinstance(b, tuple) and b[0] == "data":
                return b[1]
            return self.buffer_of(node, scope)
        raise Unsupported(f"cp.async pointer {ast.unparse(node)[:40]!r} is not <buffer>.data", node.lineno)

    def buffer_of(self, node, scope: Scope) -> Buffer:
        if isinstance(node, ast.Name):
            b = scope.lookup(node.id)
            if isinstance(b, tuple) and b[0] == "buf":
                return b[1]
        raise Unsupported(f"{ast.unparse(node)[:40]!r} is not a buffer known in the kernel",
                          getattr(node, "lineno", None))

    def access_ptr(self, node, scope: Scope) -> Ptr:
        line = node.lineno
        op = self.op(node.func)
        if op == "tvm_access_ptr":
            b = self.bind_call("tvm_access_ptr", node, scope)
            ta = b["ptype"]
            if not (isinstance(ta, ast.Call) and self.op(ta.func) == "type_annotation"):
                raise Unsupported("tvm_access_ptr whose first argument is not T.type_annotation(dtype)", line)
            ptype = self.dtype(self.bind_call("type_annotation", ta, scope)["dtype"], scope)
            return Ptr(self.data_buffer(b["data"], scope), ptype, self.expr(b["offset"], scope),
                       self.expr(b["extent"], scope), self.expr(b["rw_mask"], scope), "tvm_access_ptr")
        if op == "access_ptr":
            # tilelang/language/builtin.py (0.1.8): access_ptr(base, access_type="r", *extents, offset=0,
            # extent=None, ignore_last_ndim=0)
            b = self.bind_call("access_ptr", node, scope)
            kw = b.args
            load = b["base"]
            mode = b.get("access_type", ast.Constant("r"))
            exts = list(b.rest)
            if len(exts) == 1 and isinstance(exts[0], (ast.Tuple, ast.List)):
                exts = list(exts[0].elts)
            buf, mins, region_exts = self.pointer_base(load, scope, line)
            ig = kw.get("ignore_last_ndim")
            if ig is not None:
                n = self.cval(ig, scope)
                if not isinstance(n, int) or n < 0:
                    raise Unsupported("T.access_ptr ignore_last_ndim is not a constant", line)
                if n:
                    upto = max(0, len(mins) - n)
                    mins = list(mins[:upto]) + [Const(0, "int32")] * (len(mins) - upto)
            off = kw.get("offset")
            if off is not None:
                ok, v = self.try_cval(off, scope)
                if not (ok and v == 0):
                    if len(mins) != 1:
                        raise Unsupported("T.access_ptr(offset!=0) of a buffer of several dimensions (TileLang "
                                          "rejects it)", line)
                    mins = [fold(Bin("add", mins[0], self.expr(off, scope)))]
            if "extent" in kw:
                ext = self.expr(kw["extent"], scope)
            elif exts:
                if len(exts) > len(buf.shape):
                    raise Unsupported("T.access_ptr with more extents than dimensions", line)
                ext = Const(1, "int32")
                for e in exts:
                    ext = fold(Bin("mul", ext, self.expr(e, scope)))
            elif region_exts is not None:
                ext = Const(1, "int32")
                for e in region_exts:
                    ext = fold(Bin("mul", ext, Const(e, "int32")))
            else:
                ext = Const(1, "int32")
            return Ptr(buf, buf.dtype, flat_index(buf, tuple(mins)), ext,
                       Const(self.rw(self.cval(mode, scope)), "int32"), "access_ptr")
        if isinstance(node.func, ast.Attribute) and node.func.attr == "access_ptr":
            # tvm Buffer.access_ptr(access_mask, ptr_type="handle", content_lanes=1, offset=0, extent=None)
            buf = self.buffer_of(node.func.value, scope)
            got = self.bind_call("Buffer.access_ptr", node, scope).args
            if "content_lanes" in got:
                ok, v = self.try_cval(got["content_lanes"], scope)
                if not (ok and v == 1):
                    raise Unsupported("Buffer.access_ptr(content_lanes=...) makes a vector pointer whose offset "
                                      "and extent count lanes", line)
            if "ptr_type" in got:
                ok, v = self.try_cval(got["ptr_type"], scope)
                if not (ok and v == "handle"):
                    raise Unsupported("Buffer.access_ptr(ptr_type=...)", line)
            mode = got.get("access_mask")
            if mode is None:
                raise Unsupported("Buffer.access_ptr without its access mask", line)
            off = got.get("offset")
            ext = got.get("extent")
            return Ptr(buf, buf.dtype, self.expr(off, scope) if off is not None else Const(0, "int32"),
                       self.expr(ext, scope) if ext is not None else None,
                       Const(self.rw(self.cval(mode, scope)), "int32"), "buffer.access_ptr")
        raise Unsupported(f"access pointer {ast.unparse(node)[:40]!r}", line)

    def pointer_base(self, node, scope: Scope, line):
        """``buf[i, j]``, ``buf[a:b, ...]`` or ``buf``: the buffer, the minimum indices and the region's extents."""
        if isinstance(node, ast.Name):
            buf = self.buffer_of(node, scope)
            return buf, [Const(0, "int32") for _ in buf.shape], tuple(buf.shape)
        if isinstance(node, ast.Subscript):
            sl = node.slice
            items = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
            if any(isinstance(i, ast.Slice) for i in items):
                r = self.region(node, scope)
                if any(e is None for e in r.extents):
                    r = Region(r.buf, r.starts, tuple(1 if e is None else e for e in r.extents))
                return r.buf, list(r.starts), tuple(r.extents)
            buf, idx = self.subscript(node, scope)
            return buf, list(idx), None
        raise Unsupported("T.access_ptr whose first argument is not a buffer, buf[indices] or a region", line)

    @staticmethod
    def rw(mode) -> int:
        if isinstance(mode, int):
            return mode
        return {"r": 1, "w": 2, "rw": 3}.get(str(mode), 0)

    # regions ---------------------------------------------------------------------
    def region(self, node, scope: Scope) -> Region:
        if isinstance(node, ast.Name):
            buf = self.buffer_of(node, scope)
            return Region(buf, tuple(Const(0, "int32") for _ in buf.shape), tuple(buf.shape))
        if isinstance(node, ast.Subscript):
            buf = self.buffer_of(node.value, scope)
            sl = node.slice
            items = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
            if len(items) != len(buf.shape):
                raise Unsupported(f"region of {buf.name} with {len(items)} indices", node.lineno)
            starts, exts = [], []
            for it, dim in zip(items, buf.shape):
                if isinstance(it, ast.Slice):
                    if it.step is not None:
                        raise Unsupported("strided region", node.lineno)
                    lo = self.expr(it.lower, scope) if it.lower is not None else Const(0, "int32")
                    hi = self.expr(it.upper, scope) if it.upper is not None else Const(dim, "int32")
                    e = fold(Bin("sub", hi, lo))
                    if not isinstance(e, Const):
                        from ..poly import poly  # a[i:i + 8]: the extent is a constant polynomial

                        pe = poly(Bin("sub", hi, lo))
                        if not pe or set(pe) == {()}:
                            e = Const(pe.get((), 0), "int32")
                    if not isinstance(e, Const):
                        raise Unsupported("region extent not known from the text", node.lineno)
                    starts.append(lo)
                    exts.append(int(e.value))
                else:
                    starts.append(self.expr(it, scope))
                    exts.append(None)  # taken from the other operand
            return Region(buf, tuple(starts), tuple(exts))
        raise Unsupported(f"T.copy operand {ast.unparse(node)[:40]!r}", getattr(node, "lineno", None))

    def subscript(self, node: ast.Subscript, scope: Scope):
        buf = self.buffer_of(node.value, scope)
        sl = node.slice
        items = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
        if any(isinstance(i, ast.Slice) for i in items):
            raise Unsupported(f"slice of {buf.name} outside T.copy", node.lineno)
        idx = tuple(self.expr(i, scope) for i in items)
        if len(idx) != len(buf.shape):
            raise Unsupported(f"{buf.name} indexed with {len(idx)} indices but has {len(buf.shape)} dimensions",
                              node.lineno)
        return buf, idx


def call_form(mod, call: ast.Call) -> str:
    """The form of a ``T.ptx_cp_async`` call: "access_ptr" when its destination is an access pointer (or
    it names an access-pointer parameter), else "legacy".  The one place the form of a call is decided."""
    names = {p for g in mod.rules.generations if g.form == "access_ptr" for p in g.python_params[:2]}
    first = call.args[0] if call.args else None
    if isinstance(first, ast.Call) and (mod.op_name(first.func) in ("tvm_access_ptr", "access_ptr") or (
            isinstance(first.func, ast.Attribute) and first.func.attr == "access_ptr")):
        return "access_ptr"
    if any(k.arg in names for k in call.keywords):
        return "access_ptr"
    return "legacy"


def text_forms(mod, tree: ast.Module) -> dict:
    """Every ``T.ptx_cp_async`` call of a module by form: {"legacy": [lines], "access_ptr": [lines]}."""
    out: dict = {"legacy": [], "access_ptr": []}
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and mod.op_name(n.func) == mod.rules.intrinsic:
            out[call_form(mod, n)].append(n.lineno)
    return out
