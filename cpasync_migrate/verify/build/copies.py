"""The kernel builder's buffers and the cp.async call: declarations, access pointers, regions.

:class:`CopyBuilder` makes a :class:`~cpasync_migrate.verify.ir.Buffer` from a declaration's
call (``T.alloc_shared``, a ``T.Tensor`` parameter, ...), reads a ``T.ptx_cp_async`` call in
either form (legacy offsets, or access pointers: ``T.tvm_access_ptr``, ``T.access_ptr``,
``Buffer.access_ptr``) into a :class:`~cpasync_migrate.verify.ir.CpAsync`, and reads the
regions of ``T.copy`` and the indexed elements ``buf[i, j]``.  A mixin of
:class:`~.statements.KernelBuilder` over :class:`~.context.KernelContext`.
"""
from __future__ import annotations

import ast

from ..ir import Bin, Buffer, Const, CpAsync, Ptr, Region, Unsupported, flat_index
from .expressions import fold
from .module import MISSING, Scope

DEFAULT_SCOPES = {"alloc_shared": "shared.dyn", "alloc_fragment": "local.fragment", "alloc_local": "local",
                  "alloc_buffer": "global", "decl_buffer": "global"}


class CopyBuilder:
    """Mixin of :class:`~.statements.KernelBuilder`: buffers, the cp.async call, access pointers, regions."""

    # buffers ----------------------------------------------------------------
    def shape(self, node, scope: Scope) -> tuple:
        v = self.cval(node, scope)
        if isinstance(v, int):
            v = (v,)
        if not isinstance(v, tuple) or not all(isinstance(x, int) and x >= 0 for x in v):
            raise Unsupported(f"shape {ast.unparse(node)!r} is not known from the text", node.lineno)
        return v

    def call_arg(self, call: ast.Call, pos: int, kw: str, default=MISSING):
        for k in call.keywords:
            if k.arg == kw:
                return k.value
        if pos < len(call.args):
            return call.args[pos]
        if default is MISSING:
            raise Unsupported(f"{ast.unparse(call.func)} without its {kw!r} argument", call.lineno)
        return default

    def make_buffer(self, name, call: ast.Call, opname: str, scope: Scope, param=False) -> Buffer:
        decl = self.rules.declarations.get(opname, {"position": 1, "keyword": "dtype"})
        shape_node = self.call_arg(call, 0, "shape")
        dt_node = self.call_arg(call, decl.get("position", 1), decl.get("keyword", "dtype"), None)
        if dt_node is not None:
            dt = self.dtype(dt_node, scope)
        elif decl.get("default") is not None:
            dt = self.rules.canonical_dtype(decl["default"])
        else:
            raise Unsupported(f"T.{opname} without a dtype (it requires one)", call.lineno)
        if param:
            sc = "global"
        else:
            sc_node = None
            for k in call.keywords:
                if k.arg == "scope":
                    sc_node = k.value
            if sc_node is None and opname in ("alloc_buffer", "decl_buffer") and len(call.args) > 2:
                sc_node = call.args[2]
            sc = self.cval(sc_node, scope) if sc_node is not None else DEFAULT_SCOPES.get(opname, "global")
            if opname == "alloc_shared" and dt == "bool":
                sc = "shared"  # TileLang 0.1.7.post1 forces bool shared buffers out of the merged pool
        buf = Buffer(self.fresh(name), self.shape(shape_node, scope), dt, str(sc), self.rules.dtype_size(dt),
                     param=param, line=call.lineno)
        return buf

    # cp.async ------------------------------------------------------------------
    def cp_async(self, call: ast.Call, scope: Scope) -> CpAsync:
        line, col = call.lineno, call.col_offset
        kws = {k.arg: k.value for k in call.keywords}
        if None in kws:
            raise Unsupported("**kwargs in ptx_cp_async", line)
        first = call.args[0] if call.args else kws.get("dst_access_ptr")
        new_form = isinstance(first, ast.Call) and self.op(first.func) in ("tvm_access_ptr", "access_ptr") or \
            (isinstance(first, ast.Call) and isinstance(first.func, ast.Attribute) and first.func.attr == "access_ptr")
        if new_form:
            names = ["dst", "src", "size", "predicate"]
            kwmap = {"dst_access_ptr": "dst", "src_access_ptr": "src", "bytes": "size", "num_elems": "size",
                     "predicate": "predicate"}
            got = {}
            for n, a in zip(names, call.args):
                got[n] = a
            dtype_kw = False
            for k, v in kws.items():
                if k == "dtype":
                    dtype_kw = True
                    continue
                if k not in kwmap:
                    raise Unsupported(f"ptx_cp_async keyword {k!r}", line)
                got[kwmap[k]] = v
            if len(call.args) > 4 or "size" not in got:
                raise Unsupported("ptx_cp_async argument list", line)
            dst = self.access_ptr(got["dst"], scope)
            src = self.access_ptr(got["src"], scope)
            size_node = got["size"]
            size_lit = isinstance(size_node, ast.Constant) and isinstance(size_node.value, int)
            pred = self.expr(got["predicate"], scope) if "predicate" in got and not (
                isinstance(got["predicate"], ast.Constant) and got["predicate"].value is None) else None
            return CpAsync("access_ptr", dst, src, self.expr(size_node, scope), self.meaning, pred, line, col,
                           None, dtype_kw, size_lit)
        params = list(self.rules.legacy.python_params) or ["dtype", "shared_ptr", "shared_offset", "global_ptr",
                                                           "global_offset", "bytes"]
        dtype_name = params[0]
        got = {}
        pos_names = params[1:] if dtype_name in kws else params
        pos_names = pos_names + ["predicate"]
        if len(call.args) > len(pos_names):
            raise Unsupported("ptx_cp_async with too many arguments", line)
        for n, a in zip(pos_names, call.args):
            got[n] = a
        for k, v in kws.items():
            if k not in params and k != "predicate":
                raise Unsupported(f"ptx_cp_async keyword {k!r}", line)
            got[k] = v
        missing = [p for p in params if p not in got]
        if missing:
            raise Unsupported(f"ptx_cp_async without {', '.join(missing)}", line)
        ldt = None
        ok, v = self.try_cval(got[dtype_name], scope)
        if ok and isinstance(v, str):
            ldt = self.rules.canonical_dtype(v)
        dst = Ptr(self.data_buffer(got[params[1]], scope), None, self.expr(got[params[2]], scope))
        src = Ptr(self.data_buffer(got[params[3]], scope), None, self.expr(got[params[4]], scope))
        size_node = got[params[5]]
        size_lit = isinstance(size_node, ast.Constant) and isinstance(size_node.value, int)
        pred = self.expr(got["predicate"], scope) if "predicate" in got else None
        return CpAsync("legacy", dst, src, self.expr(size_node, scope), "bytes", pred, line, col, ldt, False, size_lit)

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
            a = list(node.args)
            if len(a) != 5 or node.keywords:
                raise Unsupported("tvm_access_ptr without its five arguments", line)
            ta = a[0]
            if not (isinstance(ta, ast.Call) and self.op(ta.func) == "type_annotation" and len(ta.args) == 1):
                raise Unsupported("tvm_access_ptr whose first argument is not T.type_annotation(dtype)", line)
            ptype = self.dtype(ta.args[0], scope)
            return Ptr(self.data_buffer(a[1], scope), ptype, self.expr(a[2], scope), self.expr(a[3], scope),
                       self.expr(a[4], scope), "tvm_access_ptr")
        if op == "access_ptr":
            # tilelang/language/builtin.py (0.1.8): access_ptr(base, access_type="r", *extents, offset=0,
            # extent=None, ignore_last_ndim=0)
            a = list(node.args)
            kw = {k.arg: k.value for k in node.keywords}
            unknown = set(kw) - {"base", "base_load", "access_type", "offset", "extent", "ignore_last_ndim"}
            if unknown or any(isinstance(x, ast.Starred) for x in a):
                raise Unsupported(f"T.access_ptr argument {sorted(unknown)[0] if unknown else '*args'}", line)
            load = a[0] if a else kw.get("base", kw.get("base_load"))
            mode = a[1] if len(a) > 1 else kw.get("access_type", ast.Constant("r"))
            exts = a[2:]
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
            names = ["access_mask", "ptr_type", "content_lanes", "offset", "extent"]
            got = dict(zip(names, node.args))
            for k in node.keywords:
                if k.arg not in names:
                    raise Unsupported(f"Buffer.access_ptr({k.arg}=...)", line)
                got[k.arg] = k.value
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
