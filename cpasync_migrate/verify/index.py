"""Index arithmetic as TileLang lowers it: integer types, ranges and two's-complement wrap-around.

TileLang's index arithmetic is int32 (``((int)threadIdx.x) * 8``) unless the program makes it wider: a
constant that does not fit int32 is an int64 constant, ``T.int64(..)`` / ``T.Cast("int64", ..)`` and
loads of int64 buffers are int64, and a binary operation takes the wider of its operands' types (TVM's
``BinaryOpMatchTypes``).  Python's integers (and numpy's int64) do not wrap where int32 does.

What real lowering does where int32 index arithmetic overflows (TileLang 0.1.7.post1, checked):

* a left shift is printed as written, ``((((int)threadIdx.x) << 29) >> 29)``: it wraps on the device;
* products, sums and divisions are rewritten by TVM's simplifier as if they did not overflow
  (``(tx * 536870912) // 67108864`` is printed ``tx * 64``, a floormod of a product becomes
  ``tx % 3``), and a product of constants that overflows is a build error.

So the verifier evaluates a left shift with wrap-around in its type and refuses to guess anything else
that overflows: :class:`IndexOverflow` (the verdict is inconclusive, naming the expression).

:class:`Ranges` gives each integer expression of a kernel its type and a bound of its value over the
integers (thread and block indices by the launch, loop variables by their bounds, loads by their
type), so that only expressions that may overflow are checked while a kernel runs, and so that the
per-site proof knows when a polynomial identity over the integers is one over the machine's integers.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .errors import IndexOverflow
from .ir import Assign, Bin, Cast, Cmp, Const, Expr, For, If, Kernel, Load, Logic, Opaque, Parallel, Select, Unary, Var

INT_BITS = {"int8": (8, True), "int16": (16, True), "int32": (32, True), "int64": (64, True),
            "uint8": (8, False), "uint16": (16, False), "uint32": (32, False), "uint64": (64, False)}

# operators whose result, when it leaves its type, wraps on the device as printed (see the docstring)
WRAPS = {"shl"}
ARITH = {"add", "sub", "mul", "div", "fdiv", "fmod", "tdiv", "tmod", "min", "max", "shl", "shr", "band", "bor",
         "bxor"}


def bounds(dtype: str) -> tuple:
    bits, signed = INT_BITS[dtype]
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


def const_type(e: Const) -> Optional[str]:
    v = e.value
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        return None
    if e.dtype in INT_BITS and e.dtype != "int32":
        return e.dtype
    lo, hi = bounds("int32")
    return "int32" if lo <= v <= hi else "int64"


def promote(a: Optional[str], b: Optional[str]) -> Optional[str]:
    """TVM's type of a binary integer operation (None: not an integer operation)."""
    if a is None or b is None:
        return None
    (ba, sa), (bb, sb) = INT_BITS[a], INT_BITS[b]
    bits = max(ba, bb, 32) if (ba < 32 and bb < 32) else max(ba, bb)
    signed = sa or sb if ba == bb else (sa if ba > bb else sb)
    return ("int" if signed else "uint") + str(bits)


def wrap(v, dtype: str):
    """``v`` (int, numpy integer or int64 array) reduced into ``dtype`` as two's complement."""
    bits, signed = INT_BITS[dtype]
    if isinstance(v, np.ndarray):
        if bits == 64:
            return v
        out = v & ((1 << bits) - 1)
        if signed:
            out = np.where(out >= (1 << (bits - 1)), out - (1 << bits), out)
        return out.astype(np.int64, copy=False)
    v = int(v) & ((1 << bits) - 1)
    return v - (1 << bits) if signed and v >= (1 << (bits - 1)) else v


def out_of(v, dtype: str) -> bool:
    lo, hi = bounds(dtype)
    if isinstance(v, np.ndarray):
        return bool(v.size) and (int(v.min()) < lo or int(v.max()) > hi)
    return not (lo <= int(v) <= hi)


class Ranges:
    """Types and integer bounds of a kernel's index expressions (see the module docstring)."""

    def __init__(self, k: Optional[Kernel]):
        self.var_type: dict = {}
        self.var_range: dict = {}
        self._type: dict = {}
        self._range: dict = {}
        if k is None:
            return
        dims = {"threadIdx": k.block, "blockIdx": k.grid}
        for name, (kind, d) in k.thread_vars.items():
            self.var_type[name] = "int32"
            self.var_range[name] = (0, max(dims[kind][d] - 1, 0))
        self._walk(k.body)

    def _bind(self, name, t, r):
        if name in self.var_type and self.var_type[name] != t:
            t = promote(self.var_type[name], t) if t and self.var_type[name] else None
        self.var_type[name] = t
        old = self.var_range.get(name, "none")
        if old == "none":
            self.var_range[name] = r
        elif old is None or r is None:
            self.var_range[name] = None
        else:
            self.var_range[name] = (min(old[0], r[0]), max(old[1], r[1]))
        self._type.clear()
        self._range.clear()

    def _walk(self, body):
        for st in body:
            if isinstance(st, Assign):
                self._bind(st.var, self.type_of(st.value), self.range_of(st.value))
            elif isinstance(st, For):
                t = promote(self.type_of(st.start), self.type_of(st.extent)) or "int32"
                s, e = self.range_of(st.start), self.range_of(st.extent)
                r = (s[0], s[1] + max(e[1], 1) - 1) if s and e else None
                self._bind(st.var, t, r)
                self._walk(st.body)
            elif isinstance(st, Parallel):
                for v, ext in zip(st.vars, st.extents):
                    self._bind(v, "int32", (0, max(int(ext) - 1, 0)))
                self._walk(st.body)
            elif isinstance(st, If):
                self._walk(st.then)
                self._walk(st.orelse)
            elif isinstance(st, Opaque):
                self._walk(st.body)

    # ---------------------------------------------------------------- types
    def type_of(self, e: Expr) -> Optional[str]:
        key = id(e)
        if key in self._type:
            return self._type[key][1]
        t = self._type_of(e)
        self._type[key] = (e, t)  # the node is kept alive so its id stays its own
        return t

    def _type_of(self, e: Expr) -> Optional[str]:
        t = type(e)
        if t is Const:
            return const_type(e)
        if t is Var:
            return self.var_type.get(e.name, "int32")
        if t is Bin:
            if e.op not in ARITH:
                return None
            if e.op in ("shl", "shr"):
                return self.type_of(e.a) if self.type_of(e.b) is not None else None
            return promote(self.type_of(e.a), self.type_of(e.b))
        if t is Unary:
            return self.type_of(e.a) if e.op in ("neg", "bnot") else None
        if t is Cast:
            return e.dtype if e.dtype in INT_BITS else None
        if t is Load:
            return e.buf.dtype if e.buf.dtype in INT_BITS else None
        if t is Select:
            return promote(self.type_of(e.a), self.type_of(e.b))
        return None

    # ---------------------------------------------------------------- bounds over the integers
    def range_of(self, e: Expr) -> Optional[tuple]:
        """(lo, hi) of ``e``'s value over the integers as the device computes it (a wrapping shift gives its
        type's full range), or None when not bounded."""
        key = id(e)
        if key in self._range:
            return self._range[key][1]
        r = self._range_of(e)
        self._range[key] = (e, r)
        return r

    def _full(self, e) -> Optional[tuple]:
        t = self.type_of(e)
        return bounds(t) if t else None

    def _range_of(self, e: Expr) -> Optional[tuple]:
        t = type(e)
        if t is Const:
            return (int(e.value), int(e.value)) if const_type(e) else None
        if t is Var:
            r = self.var_range.get(e.name)
            return r if r is not None else self._full(e)
        if t is Load:
            return self._full(e)
        if t is Cast:
            r, full = self.range_of(e.a), self._full(e)
            if full is None:
                return None
            return r if r is not None and full[0] <= r[0] and r[1] <= full[1] else full
        if t is Select:
            a, b = self.range_of(e.a), self.range_of(e.b)
            return (min(a[0], b[0]), max(a[1], b[1])) if a and b else None
        if t is Unary:
            a = self.range_of(e.a)
            if a is None or e.op == "not":
                return None
            return (-a[1], -a[0]) if e.op == "neg" else (-a[1] - 1, -a[0] - 1)
        if t is not Bin or e.op not in ARITH:
            return None
        a, b = self.range_of(e.a), self.range_of(e.b)
        if a is None or b is None:
            return None
        op = e.op
        if op == "add":
            return (a[0] + b[0], a[1] + b[1])
        if op == "sub":
            return (a[0] - b[1], a[1] - b[0])
        if op == "mul":
            ps = [x * y for x in a for y in b]
            return (min(ps), max(ps))
        if op == "shl":
            if b[0] < 0:
                return None
            r = (min(a[0] << b[0], a[0] << b[1]), max(a[1] << b[0], a[1] << b[1]))
            full = self._full(e)
            return r if full and full[0] <= r[0] and r[1] <= full[1] else full
        if op == "shr":
            if b[0] < 0:
                return None
            return (min(a[0] >> b[0], a[0] >> b[1]), max(a[1] >> b[0], a[1] >> b[1]))
        if op in ("min", "max"):
            f = min if op == "min" else max
            return (f(a[0], b[0]), f(a[1], b[1]))
        m = max(abs(a[0]), abs(a[1]))
        if op in ("fdiv", "tdiv", "div"):
            if b[0] > 0 and op == "fdiv":
                ps = [x // y for x in a for y in b]
                return (min(ps), max(ps))
            return (-m, m)
        if op in ("fmod", "tmod"):
            mb = max(abs(b[0]), abs(b[1]))
            if mb == 0:
                return None
            if op == "fmod" and b[0] > 0:
                return (0, b[1] - 1)
            if a[0] >= 0 and b[0] > 0:
                return (0, min(a[1], b[1] - 1))
            return (-(mb - 1), mb - 1)
        if op == "band":
            nonneg = [x[1] for x in (a, b) if x[0] >= 0]
            return (0, min(nonneg)) if nonneg else self._full(e)
        if op in ("bor", "bxor"):
            if a[0] >= 0 and b[0] >= 0:
                return (0, (1 << max(a[1], b[1]).bit_length()) - 1)
            return self._full(e)
        return None

    def may_overflow(self, e: Expr) -> bool:
        """Whether ``e`` itself (not its operands) may leave its type where the text does not say how it
        wraps."""
        t = type(e)
        if t not in (Bin, Unary) or (t is Bin and e.op in WRAPS):
            return False
        ty = self.type_of(e)
        if ty is None:
            return False
        r = self.range_of(e)
        lo, hi = bounds(ty)
        return r is None or r[0] < lo or r[1] > hi

    def wraps(self, e: Expr) -> bool:
        """Whether ``e`` is a wrapping operation (a left shift) that may leave its type."""
        if type(e) is not Bin or e.op not in WRAPS:
            return False
        ty = self.type_of(e)
        if ty is None:
            return False
        a, b = self.range_of(e.a), self.range_of(e.b)
        if a is None or b is None or b[0] < 0:
            return True
        lo, hi = bounds(ty)
        return min(a[0] << b[1], a[0] << b[0]) < lo or max(a[1] << b[1], a[1] << b[0]) > hi

    def risky(self, e: Expr) -> bool:
        """Whether any integer node of ``e`` may leave its type (wrapping or not)."""
        stack = [e]
        while stack:
            x = stack.pop()
            if self.may_overflow(x) or self.wraps(x):
                return True
            stack.extend(children(x))
        return False

    def only_int32(self, e: Expr) -> bool:
        """Whether every integer node of ``e`` is int32 or narrower (one ring: Z / 2^32)."""
        stack = [e]
        while stack:
            x = stack.pop()
            ty = self.type_of(x)
            if ty is not None and INT_BITS[ty][0] > 32:
                return False
            if ty is not None and INT_BITS[ty] == (32, False):
                return False
            stack.extend(children(x))
        return True


def children(e):
    t = type(e)
    if t in (Bin, Cmp, Logic):
        return (e.a, e.b)
    if t in (Unary, Cast):
        return (e.a,)
    if t is Select:
        return (e.cond, e.a, e.b)
    if t is Load:
        return e.indices
    if hasattr(e, "args"):
        return e.args
    return ()


def check(e: Expr, v, ranges: Ranges, line: int = 0):
    """The device's value of the integer node ``e`` whose exact value is ``v``: wrapped where it wraps,
    :class:`IndexOverflow` where it leaves its type otherwise."""
    ty = ranges.type_of(e)
    if ty is None or not out_of(v, ty):
        return v
    if type(e) is Bin and e.op in WRAPS:
        return wrap(v, ty)
    from .ir import show
    raise IndexOverflow(f"index arithmetic {show(e)} overflows {ty}: TileLang's simplifier rewrites such "
                        "expressions as if they did not overflow, so the lowered value is not known from the text",
                        line)
