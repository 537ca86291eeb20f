"""Lower the kernel IR to CUDA C++, one kernel per form.

The cp.async of each form is inline PTX shaped like TileLang's templates:
``cp.async.cg.shared.global`` for 16 bytes and ``.ca`` for 4 and 8, the
src-size operand for the predicated (zero-filling) form,
``cp.async.commit_group`` and ``cp.async.wait_group N`` (each wait followed
by ``__syncthreads()``, as TileLang's barrier insertion does).  Shared arrays
are aligned to 16 bytes.  Everything but the cp.async address arithmetic (and
the entry name) is printed by the same code for both forms, so the two
sources differ only on the cp.async lines.

The semantics match the interpreter: ``T.Parallel`` iterations go round-robin
to the block's threads; fragments and block-scoped buffers live in shared
memory; ``T.fill``/``T.copy`` are block-wide loops fenced by barriers.
Arithmetic on 16-bit floats is done in float32 (the interpreter rounds each
operation to the storage type), so compare forms on one device, never the
GPU with the interpreter.
"""
from __future__ import annotations

import re
from typing import Optional

from .ir import (
    Assign, Barrier, Bin, Buffer, Cast, Cmp, Commit, Const, CopyRegion, CpAsync, Evaluate, Fill, For, If, Kernel,
    Load, Logic, Math, Opaque, Parallel, Select, Store, Unary, Unsupported, Var, Wait, flat_index, resolve_extents,
)

CTYPES = {
    "bool": "bool", "int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "uint16": "uint16_t",
    "int32": "int", "uint32": "unsigned int", "int64": "int64_t", "uint64": "uint64_t",
    "float16": "half", "bfloat16": "__nv_bfloat16", "float32": "float", "float64": "double",
}
STATIC_SMEM_LIMIT = 48 * 1024

PRELUDE = r"""#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdint.h>

#ifndef CPM_HELPERS
#define CPM_HELPERS
// Integer division and modulo rounding toward negative infinity (TIR floordiv/floormod).
template <typename I> __device__ __forceinline__ I cpm_floordiv(I a, I b) {
  I q = a / b;
  return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <typename I> __device__ __forceinline__ I cpm_floormod(I a, I b) { return a - cpm_floordiv(a, b) * b; }
template <typename V> __device__ __forceinline__ V cpm_min(V a, V b) { return a < b ? a : b; }
template <typename V> __device__ __forceinline__ V cpm_max(V a, V b) { return a > b ? a : b; }

// cp.async of N bytes from global to shared memory: .cg for 16 bytes, .ca for 4 and 8.
template <int N> __device__ __forceinline__ void cpm_cp_async(void* smem, const void* gmem) {
  static_assert(N == 4 || N == 8 || N == 16, "cp.async moves 4, 8 or 16 bytes");
  unsigned int s = static_cast<unsigned int>(__cvta_generic_to_shared(smem));
  if constexpr (N == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], %2;\n" ::"r"(s), "l"(gmem), "n"(N));
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(s), "l"(gmem), "n"(N));
  }
}
// Predicated form: src-size 0 when the predicate is false, so the destination is zero-filled.
template <int N> __device__ __forceinline__ void cpm_cp_async_pred(void* smem, const void* gmem, bool pred) {
  static_assert(N == 4 || N == 8 || N == 16, "cp.async moves 4, 8 or 16 bytes");
  unsigned int s = static_cast<unsigned int>(__cvta_generic_to_shared(smem));
  int src_size = pred ? N : 0;
  if constexpr (N == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], %2, %3;\n" ::"r"(s), "l"(gmem), "n"(N), "r"(src_size));
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(s), "l"(gmem), "n"(N), "r"(src_size));
  }
}
__device__ __forceinline__ void cpm_commit_group() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cpm_wait_group() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
#endif
"""

FLOATS = ("float16", "bfloat16", "float32", "float64")


class Rejected(Unsupported):
    """A copy the compiler rejects (a width cp.async does not have, unequal widths under ``num_elems``):
    unlike other lowering gaps, this says the form is wrong, not that the model is incomplete."""

    def __str__(self) -> str:
        return self.construct


def entry_name(kernel: str, form: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", kernel) + "_" + form


class Lowering:
    def __init__(self, k: Kernel, rules, target, form: str, prefill: bool = False):
        self.k = k
        self.prefill = prefill
        self.rules = rules
        self.target = target
        self.form = form
        self.types: dict = {v: "int32" for v in k.thread_vars}
        self.lines: list[str] = []
        self.tmp = 0
        self.smem = 0
        self.dynamic = False

    # ---------------------------------------------------------------- types
    def etype(self, e) -> str:
        t = type(e)
        if t is Const:
            return e.dtype
        if t is Var:
            return self.types.get(e.name, "int32")
        if t is Load:
            return e.buf.dtype if not e.buf.dtype.startswith("float8") else "uint8"
        if t is Cast:
            return e.dtype
        if t in (Cmp, Logic) or (t is Unary and e.op == "not"):
            return "bool"
        if t is Unary:
            return self.etype(e.a)
        if t in (Bin, Select):
            return promote(self.etype(e.a), self.etype(e.b))
        if t is Math:
            a = self.etype(e.args[0])
            return "float64" if a == "float64" else "float32"
        return "int32"

    def as_type(self, e, want: str) -> str:
        """``e`` converted to ``want`` (a dtype name)."""
        have = self.etype(e)
        code = self.ex(e)
        if have == want:
            return code
        return convert(code, have, want)

    # ---------------------------------------------------------------- expressions
    def ex(self, e) -> str:
        t = type(e)
        if t is Const:
            v = e.value
            if e.dtype == "bool":
                return "true" if v else "false"
            if e.dtype in FLOATS:
                r = repr(float(v))
                if r in ("inf", "-inf", "nan"):
                    return {"inf": "__int_as_float(0x7f800000)", "-inf": "__int_as_float(0xff800000)",
                            "nan": "__int_as_float(0x7fc00000)"}[r]
                return r + ("f" if e.dtype != "float64" else "")
            if e.dtype == "int64" or not (-2 ** 31 <= int(v) < 2 ** 31):
                return f"{int(v)}LL"
            return str(int(v))
        if t is Var:
            return e.name
        if t is Load:
            return f"{e.buf.name}[{self.index(e.buf, e.indices)}]"
        if t is Bin:
            rt = self.etype(e)
            ct = "float32" if rt in ("float16", "bfloat16") else rt
            a, b = self.as_type(e.a, ct), self.as_type(e.b, ct)
            isint = ct not in FLOATS and ct != "bool"
            op = e.op
            if op in ("add", "sub", "mul", "band", "bor", "bxor", "shl", "shr"):
                sym = {"add": "+", "sub": "-", "mul": "*", "band": "&", "bor": "|", "bxor": "^", "shl": "<<",
                       "shr": ">>"}[op]
                out = f"({a} {sym} {b})"
            elif op in ("div", "tdiv"):
                out = f"({a} / {b})"
            elif op == "tmod":
                out = f"({a} % {b})"
            elif op == "fdiv":
                out = f"cpm_floordiv({a}, {b})" if isint else f"floor({a} / {b})"
            elif op == "fmod":
                out = f"cpm_floormod({a}, {b})" if isint else f"({a} - floor({a} / {b}) * {b})"
            elif op in ("min", "max"):
                out = f"cpm_{op}<{CTYPES[ct]}>({a}, {b})"
            else:
                raise Unsupported(f"operator {op} in the CUDA lowering")
            return convert(out, ct, rt) if ct != rt else out
        if t is Cmp:
            ct = promote(self.etype(e.a), self.etype(e.b))
            ct = "float32" if ct in ("float16", "bfloat16") else ct
            sym = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}[e.op]
            return f"({self.as_type(e.a, ct)} {sym} {self.as_type(e.b, ct)})"
        if t is Logic:
            return f"({self.as_type(e.a, 'bool')} {'&&' if e.op == 'and' else '||'} {self.as_type(e.b, 'bool')})"
        if t is Unary:
            if e.op == "not":
                return f"(!{self.as_type(e.a, 'bool')})"
            at = self.etype(e.a)
            ct = "float32" if at in ("float16", "bfloat16") else at
            out = f"({'-' if e.op == 'neg' else '~'}{self.as_type(e.a, ct)})"
            return convert(out, ct, at) if ct != at else out
        if t is Select:
            rt = self.etype(e)
            return f"({self.as_type(e.cond, 'bool')} ? {self.as_type(e.a, rt)} : {self.as_type(e.b, rt)})"
        if t is Cast:
            return self.as_type(e.a, e.dtype)
        if t is Math:
            rt = self.etype(e)
            args = ", ".join(self.as_type(a, rt) for a in e.args)
            f = e.fn
            if f == "sigmoid":
                one = "1.0" if rt == "float64" else "1.0f"
                return f"({one} / ({one} + exp(-({args}))))"
            if f == "rsqrt":
                return f"rsqrt({args})"
            name = {"abs": "fabs", "round": "rint"}.get(f, f)
            return f"{name}({args})"
        raise Unsupported(f"{t.__name__} in the CUDA lowering")

    def index(self, buf: Buffer, indices) -> str:
        return self.as_type(flat_index(buf, indices), "int32") if len(indices) > 1 else self.as_type(indices[0], "int32")

    # ---------------------------------------------------------------- statements
    def emit(self, depth: int, text: str):
        self.lines.append("  " * depth + text)

    def block(self, body, depth):
        for st in body:
            self.stmt(st, depth)

    def fresh(self, base: str) -> str:
        self.tmp += 1
        return f"cpm_{base}{self.tmp}"

    def stmt(self, st, d):
        t = type(st)
        if t is Store:
            self.emit(d, f"{st.buf.name}[{self.index(st.buf, st.indices)}] = {self.as_type(st.value, st.buf.dtype)};")
        elif t is For:
            end = self.fresh("end")
            self.types[st.var] = "int32"
            s = self.as_type(st.start, "int32")
            self.emit(d, f"for (int {st.var} = {s}, {end} = {s} + {self.as_type(st.extent, 'int32')}; "
                         f"{st.var} < {end}; ++{st.var}) {{")
            self.block(st.body, d + 1)
            self.emit(d, "}")
        elif t is Parallel:
            total = 1
            for e in st.extents:
                total *= e
            f = self.fresh("it")
            self.emit(d, f"for (int {f} = cpm_tid; {f} < {total}; {f} += {self.k.nthreads}) {{")
            stride = total
            for v, e in zip(st.vars, st.extents):
                stride //= e
                self.types[v] = "int32"
                self.emit(d + 1, f"int {v} = ({f} / {stride}) % {e};")
            self.block(st.body, d + 1)
            self.emit(d, "}")
        elif t is If:
            self.emit(d, f"if ({self.as_type(st.cond, 'bool')}) {{")
            self.block(st.then, d + 1)
            if st.orelse:
                self.emit(d, "} else {")
                self.block(st.orelse, d + 1)
            self.emit(d, "}")
        elif t is Assign:
            ty = self.etype(st.value)
            self.types[st.var] = ty
            self.emit(d, f"{CTYPES.get(ty, 'int')} {st.var} = {self.ex(st.value)};")
        elif t is CpAsync:
            self.cp_async(st, d)
        elif t is Commit:
            self.emit(d, "cpm_commit_group();")
        elif t is Wait:
            self.emit(d, f"cpm_wait_group<{st.n}>();")
            self.emit(d, "__syncthreads();")
        elif t is Barrier:
            self.emit(d, "__syncthreads();")
        elif t is Fill:
            self.fill(st, d)
        elif t is CopyRegion:
            self.copy(st, d)
        elif t is Evaluate:
            self.emit(d, f"(void)({self.ex(st.value)});")
        elif t is Opaque:
            raise Unsupported(st.construct, st.line)
        else:
            raise Unsupported(f"{t.__name__} in the CUDA lowering")

    def cp_async(self, st: CpAsync, d):
        def ptr(p, const):
            cq = "const " if const else ""
            if p.ptype is None and p.merged_unknown:
                raise Unsupported(f"cp.async at line {st.line}: the destination is in merged shared memory and "
                                  "the call's dtype is not known")
            if p.ptype is None and p.merged is not None:
                # merged shared memory (MergeSharedMemoryAllocations): the offset counts the call's dtype
                return (f"({cq}void*)((char*){p.buf.name} + ({self.as_type(p.offset, 'int32')}) * "
                        f"{self.rules.dtype_size(p.merged)})")
            if p.ptype is None:  # legacy: pointer arithmetic in the buffer's element type
                return f"({cq}void*)({p.buf.name} + {self.as_type(p.offset, 'int32')})"
            ct = CTYPES.get(p.ptype) or {1: "uint8_t", 2: "uint16_t", 4: "unsigned int", 8: "uint64_t"}[
                self.rules.dtype_size(p.ptype)]  # float8 types: raw bytes of their width
            return f"({cq}void*)(&((({cq}{ct}*){p.buf.name})[{self.as_type(p.offset, 'int32')}]))"

        nbytes = const_int(st.size)
        if nbytes is None:
            raise Unsupported(f"cp.async size {st.size!r} is not a constant (line {st.line})")
        if st.form == "access_ptr" and st.size_meaning == "num_elems":
            nd = nbytes * self.rules.dtype_size(st.dst.elem_type)
            ns = nbytes * self.rules.dtype_size(st.src.elem_type)
            if nd != ns:
                raise Rejected(f"cp.async at line {st.line}: {nbytes} elements are {nd} bytes as {st.dst.elem_type} "
                                  f"but {ns} bytes as {st.src.elem_type} (rejected by the compiler)")
            nbytes = nd
        allowed = self.target.widths if st.form == "access_ptr" else self.rules.legacy.widths
        if nbytes not in allowed:
            raise Rejected(f"cp.async at line {st.line} moves {nbytes} bytes "
                              f"(allowed {', '.join(map(str, allowed))})")
        dst, src = ptr(st.dst, False), ptr(st.src, True)
        if st.predicate is not None:
            self.emit(d, f"cpm_cp_async_pred<{nbytes}>({dst}, {src}, {self.as_type(st.predicate, 'bool')});")
        else:
            self.emit(d, f"cpm_cp_async<{nbytes}>({dst}, {src});")

    def fill(self, st: Fill, d):
        b = st.buf
        v = self.as_type(st.value, b.dtype)
        i = self.fresh("i")
        if b.per_thread:
            self.emit(d, f"for (int {i} = 0; {i} < {b.numel}; ++{i}) {b.name}[{i}] = {v};")
            return
        self.emit(d, "__syncthreads();")
        self.emit(d, f"for (int {i} = cpm_tid; {i} < {b.numel}; {i} += {self.k.nthreads}) {b.name}[{i}] = {v};")
        self.emit(d, "__syncthreads();")

    def copy(self, st: CopyRegion, d):
        src, dst = st.src, st.dst
        se, de = resolve_extents(src.extents, dst.extents)
        shape = [e for e in se if e != 1]
        total = 1
        for e in shape:
            total *= e
        f = self.fresh("it")
        self.emit(d, "__syncthreads();")
        self.emit(d, f"for (int {f} = cpm_tid; {f} < {total}; {f} += {self.k.nthreads}) {{")

        def coords(region, ext):
            out = []
            stride = total
            for s, e in zip(region.starts, ext):
                if e == 1:
                    out.append(f"({self.as_type(s, 'int32')})")
                else:
                    stride //= e
                    out.append(f"({self.as_type(s, 'int32')} + ({f} / {stride}) % {e})")
            flat = None
            for c, dim in zip(out, region.buf.shape):
                flat = c if flat is None else f"({flat} * {dim} + {c})"
            return flat

        sv = f"{src.buf.name}[{coords(src, se)}]"
        self.emit(d + 1, f"{dst.buf.name}[{coords(dst, de)}] = {convert(sv, src.buf.dtype, dst.buf.dtype)};")
        self.emit(d, "}")
        self.emit(d, "__syncthreads();")

    # ---------------------------------------------------------------- kernel
    def lower(self) -> str:
        k = self.k
        for b in k.allocs:
            if not b.per_thread:
                self.smem += -(-b.nbytes // 16) * 16
        self.dynamic = self.smem > STATIC_SMEM_LIMIT
        body = []
        self.lines = body
        self.block(k.body, 1)
        head = [PRELUDE, ""]
        params = ", ".join(f"{CTYPES.get(b.dtype, 'uint8_t')}* __restrict__ {b.name}" for b in k.params)
        if self.prefill:
            params += (", " if params else "") + "const unsigned int cpm_fill"
        head.append(f'extern "C" __global__ void __launch_bounds__({k.nthreads}) '
                    f"{entry_name(k.name, self.form)}({params}) {{")
        if self.dynamic:
            head.append("  extern __shared__ __align__(16) unsigned char cpm_smem[];")
        off = 0
        for b in k.allocs:
            ct = CTYPES.get(b.dtype, "uint8_t")
            if b.per_thread:
                head.append(f"  {ct} {b.name}[{b.numel}];")
            elif self.dynamic:
                head.append(f"  {ct}* {b.name} = reinterpret_cast<{ct}*>(cpm_smem + {off});")
                off += -(-b.nbytes // 16) * 16
            else:
                head.append(f"  __shared__ __align__(16) {ct} {b.name}[{b.numel}];")
        head.append("  const int cpm_tid = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));")
        head.append("  (void)cpm_tid;")
        if self.prefill:
            head.extend(self.prefill_lines())
        for name, (kind, dim) in k.thread_vars.items():
            head.append(f"  const int {name} = (int){kind}.{'xyz'[dim]};")
            head.append(f"  (void){name};")
        return "\n".join(head + body + ["}", ""])


    def prefill_lines(self) -> list:
        """Fill on-chip memory with the byte ``cpm_fill`` before the body runs, as the interpreter does.

        Shared arrays are filled by the whole block (then a barrier), per-thread arrays by their thread, so
        that a kernel reading bytes no copy wrote sees the sentinel, not what an earlier launch left there.
        """
        k = self.k
        out = ["  const unsigned char cpm_fill_byte = (unsigned char)(cpm_fill & 0xFFu);"]
        if self.dynamic:
            out.append(f"  for (int cpm_f = cpm_tid; cpm_f < {self.smem}; cpm_f += {k.nthreads}) "
                       "cpm_smem[cpm_f] = cpm_fill_byte;")
        for b in k.allocs:
            if b.per_thread:
                out.append(f"  for (int cpm_f = 0; cpm_f < {b.nbytes}; ++cpm_f) "
                           f"reinterpret_cast<unsigned char*>({b.name})[cpm_f] = cpm_fill_byte;")
            elif not self.dynamic:
                out.append(f"  for (int cpm_f = cpm_tid; cpm_f < {b.nbytes}; cpm_f += {k.nthreads}) "
                           f"reinterpret_cast<unsigned char*>({b.name})[cpm_f] = cpm_fill_byte;")
        out.append("  __syncthreads();")
        return out




def const_int(e) -> Optional[int]:
    if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    if isinstance(e, Bin) and e.op in ("add", "sub", "mul", "fdiv"):
        a, b = const_int(e.a), const_int(e.b)
        if a is None or b is None:
            return None
        return {"add": a + b, "sub": a - b, "mul": a * b, "fdiv": a // b if b else None}[e.op]
    return None


def promote(a: str, b: str) -> str:
    if a == b:
        return a
    if "float64" in (a, b):
        return "float64"
    if a in FLOATS or b in FLOATS:
        return "float32"
    if "int64" in (a, b) or "uint64" in (a, b):
        return "int64"
    if a == "bool":
        return b
    if b == "bool":
        return a
    return "int32"


def convert(code: str, have: str, want: str) -> str:
    if have == want:
        return code
    if have == "float16":
        code, have = f"__half2float({code})", "float32"
    elif have == "bfloat16":
        code, have = f"__bfloat162float({code})", "float32"
    if want == "float16":
        return f"__float2half_rn((float)({code}))"
    if want == "bfloat16":
        return f"__float2bfloat16_rn((float)({code}))"
    if have == want:
        return code
    return f"(({CTYPES.get(want, 'uint8_t')})({code}))"


def lower_kernel(k: Kernel, rules, target, form: str, prefill: bool = False) -> str:
    return Lowering(k, rules, target, form, prefill).lower()


def lower_pair(bo, bn, rules, target, prefill: bool = False) -> dict:
    """The lowered CUDA of one kernel in both forms, with its launch and parameters.

    ``prefill``: the entry takes one more parameter, ``unsigned int cpm_fill``, and fills shared and
    per-thread memory with its low byte before the body (the GPU runner passes the sentinel)."""
    item = {"kernel": bo.qualname, "line": bo.line, "old_cuda": None, "new_cuda": None}
    if bn is None:
        item["error"] = "the kernel is missing from the new text"
        return item
    k = bo.kernel or (bn.kernel if bn else None)
    if bo.kernel is None or bn.kernel is None:
        err = bo.error or bn.error
        item["error"] = str(err)
        return item
    k = bo.kernel
    # the legacy form is printed under the default pass configuration (tir.merge_static_smem off)
    from . import smem as smem_rule

    mp = smem_rule.plan(bo.kernel, rules)
    smem_rule.apply(bo.kernel, smem_rule.default_reading(mp))
    smem_rule.apply(bn.kernel, smem_rule.default_reading(mp))  # legacy calls left in the new text
    if len(smem_rule.distinct_readings(bo.kernel, mp)) > 1:
        item["merge_readings"] = [r.label for r in mp.readings]
        item["merge_note"] = "; ".join(mp.open)
    smem = sum(-(-b.nbytes // 16) * 16 for b in k.allocs if not b.per_thread)
    dynamic = smem > STATIC_SMEM_LIMIT
    from .dynamic import written_params

    outs = written_params(k)
    if prefill:
        item["prefill"] = True
    item["launch"] = {
        "grid": list(k.grid), "block": list(k.block),
        "old_entry": entry_name(k.name, "old"), "new_entry": entry_name(k.name, "new"),
        "shared_bytes": smem, "dynamic_shared_bytes": smem if dynamic else 0,
    }
    item["params"] = [{"name": b.name, "dtype": b.dtype, "shape": list(b.shape), "ctype": CTYPES.get(b.dtype, "uint8_t"),
                       "bytes": b.nbytes, "role": "output" if b.name in outs else "input"} for b in k.params]
    for form, built in (("old", bo), ("new", bn)):
        try:
            item[f"{form}_cuda"] = lower_kernel(built.kernel, rules, target, form, prefill)
        except Unsupported as e:
            item["error"] = f"{form} form: {e}"
            item[f"{form}_cuda"] = None
            if isinstance(e, Rejected):
                item.setdefault("rejected", []).append(form)
    return item
