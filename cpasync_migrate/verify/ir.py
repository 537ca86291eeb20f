"""A small kernel IR for one ``@T.prim_func``: what the interpreter runs,
the CUDA lowering prints and the per-site checks reason about.

Expressions and statements are plain frozen-ish dataclasses.  Shapes, grid
and block sizes are concrete integers (factories are bound before the IR is
built); loop bounds, offsets and sizes are expressions.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


class Unsupported(Exception):
    """A construct the verifier does not model; the kernel is inconclusive."""

    def __init__(self, construct: str, line: Optional[int] = None):
        super().__init__(construct)
        self.construct = construct
        self.line = line

    def __str__(self) -> str:
        where = f" (line {self.line})" if self.line else ""
        return f"unsupported construct: {self.construct}{where}"


# ---------------------------------------------------------------- buffers
@dataclass(eq=False)
class Buffer:
    name: str
    shape: tuple
    dtype: str  # canonical dtype name (rules' dtypes)
    scope: str  # "global" | "shared" | "shared.dyn" | "local" | "local.fragment" | "local.var"
    itemsize: int
    param: bool = False
    line: int = 0

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def nbytes(self) -> int:
        return self.numel * self.itemsize

    @property
    def is_shared(self) -> bool:
        return self.scope.startswith("shared")

    @property
    def per_thread(self) -> bool:
        return self.scope in ("local", "local.var")

    def __repr__(self) -> str:
        return f"Buffer({self.name})"


# ---------------------------------------------------------------- expressions
class Expr:
    __slots__ = ()


@dataclass(frozen=True)
class Const(Expr):
    value: object
    dtype: str  # "int32" | "float32" | "bool" | any scalar dtype

    def __repr__(self):
        return repr(self.value)


@dataclass(frozen=True)
class Var(Expr):
    name: str

    def __repr__(self):
        return self.name


@dataclass(frozen=True)
class Bin(Expr):
    op: str  # add sub mul div fdiv fmod tdiv tmod min max shl shr band bor bxor
    a: Expr
    b: Expr

    def __repr__(self):
        return f"{self.op}({self.a!r}, {self.b!r})"


@dataclass(frozen=True)
class Cmp(Expr):
    op: str  # lt le gt ge eq ne
    a: Expr
    b: Expr

    def __repr__(self):
        return f"{self.op}({self.a!r}, {self.b!r})"


@dataclass(frozen=True)
class Logic(Expr):
    op: str  # and | or
    a: Expr
    b: Expr

    def __repr__(self):
        return f"{self.op}({self.a!r}, {self.b!r})"


@dataclass(frozen=True)
class Unary(Expr):
    op: str  # neg | not | bnot
    a: Expr

    def __repr__(self):
        return f"{self.op}({self.a!r})"


@dataclass(frozen=True)
class Select(Expr):
    cond: Expr
    a: Expr
    b: Expr

    def __repr__(self):
        return f"select({self.cond!r}, {self.a!r}, {self.b!r})"


@dataclass(frozen=True)
class Cast(Expr):
    dtype: str
    a: Expr

    def __repr__(self):
        return f"cast<{self.dtype}>({self.a!r})"


@dataclass(frozen=True)
class Load(Expr):
    buf: Buffer
    indices: tuple

    def __repr__(self):
        return f"{self.buf.name}[{', '.join(map(repr, self.indices))}]"


@dataclass(frozen=True)
class Math(Expr):
    fn: str  # exp sqrt abs log ...
    args: tuple

    def __repr__(self):
        return f"{self.fn}({', '.join(map(repr, self.args))})"


# ---------------------------------------------------------------- statements
class Stmt:
    __slots__ = ()


@dataclass
class For(Stmt):
    var: str
    start: Expr
    extent: Expr
    kind: str  # serial | unroll | vectorized | pipelined
    body: list
    line: int = 0
    params: str = ""  # the loop's other arguments as text (num_stages, order, stage ...), compared, not run


@dataclass
class Parallel(Stmt):
    """``T.Parallel``: iterations are dealt round-robin to the block's threads."""

    vars: tuple
    extents: tuple  # ints
    body: list
    line: int = 0


@dataclass
class If(Stmt):
    cond: Expr
    then: list
    orelse: list
    line: int = 0


@dataclass
class Assign(Stmt):
    var: str
    value: Expr
    line: int = 0


@dataclass
class Store(Stmt):
    buf: Buffer
    indices: tuple
    value: Expr
    line: int = 0


@dataclass
class Ptr:
    """One side of a cp.async: ``&((ptype*)buf.data)[offset]``.

    ``ptype`` is None for the legacy form (pointer arithmetic in the buffer's
    own element type, or in the call's dtype where the destination is in
    merged shared memory: ``merged``).  ``extent``/``rw_mask`` exist only for access pointers.
    """

    buf: Buffer
    ptype: Optional[str]
    offset: Expr
    extent: Optional[Expr] = None
    rw_mask: Optional[Expr] = None
    style: str = "legacy"  # legacy | tvm_access_ptr | access_ptr
    # legacy destination in merged shared memory: the offset counts elements of the call's dtype
    # (set per reading by :mod:`.smem`); merged_unknown: merged, but the call's dtype is not known
    merged: Optional[str] = None
    merged_unknown: bool = False

    @property
    def elem_type(self) -> str:
        if self.ptype is not None:
            return self.ptype
        return self.merged if self.merged is not None else self.buf.dtype


@dataclass
class CpAsync(Stmt):
    form: str  # "legacy" | "access_ptr"
    dst: Ptr
    src: Ptr
    size: Expr
    size_meaning: str  # "bytes" | "num_elems"
    predicate: Optional[Expr]
    line: int = 0
    col: int = 0
    legacy_dtype: Optional[str] = None
    dtype_kw: bool = False  # a new-form call still carrying dtype=
    size_literal: Optional[bool] = True  # an access-pointer call's count is an IntImm at codegen (None: not known)


@dataclass
class Commit(Stmt):
    line: int = 0


@dataclass
class Wait(Stmt):
    n: int
    line: int = 0


@dataclass
class Barrier(Stmt):
    line: int = 0


@dataclass
class Fill(Stmt):
    buf: Buffer
    value: Expr
    line: int = 0


@dataclass
class Region:
    buf: Buffer
    starts: tuple  # Exprs
    extents: tuple  # ints


@dataclass
class CopyRegion(Stmt):
    """``T.copy(src, dst)``: a block-wide element copy (with a cast)."""

    src: Region
    dst: Region
    line: int = 0


@dataclass
class Evaluate(Stmt):
    value: Expr
    line: int = 0


@dataclass
class Kernel:
    name: str
    line: int
    params: list  # Buffers
    grid: tuple  # (gx, gy, gz)
    block: tuple  # (tx, ty, tz)
    thread_vars: dict  # var name -> ("threadIdx"|"blockIdx", dim)
    allocs: list  # Buffers
    body: list
    sites: list = field(default_factory=list)  # CpAsync nodes in program order
    unsupported: list = field(default_factory=list)  # Opaque statements (the kernel cannot run)
    # statements that run nothing (T.reads, T.func_attr ...): (where, "T.op at line N"; what, the call's ast.dump)
    notes: list = field(default_factory=list)

    @property
    def nthreads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def nblocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]


def walk_stmts(body):
    """Yield every statement, depth first, in program order."""
    for s in body:
        yield s
        if isinstance(s, (For, Parallel)) or type(s).__name__ == "Opaque":
            yield from walk_stmts(s.body)
        elif isinstance(s, If):
            yield from walk_stmts(s.then)
            yield from walk_stmts(s.orelse)


def walk_expr(e):
    yield e
    if isinstance(e, (Bin, Cmp, Logic)):
        yield from walk_expr(e.a)
        yield from walk_expr(e.b)
    elif isinstance(e, Unary):
        yield from walk_expr(e.a)
    elif isinstance(e, Cast):
        yield from walk_expr(e.a)
    elif isinstance(e, Select):
        yield from walk_expr(e.cond)
        yield from walk_expr(e.a)
        yield from walk_expr(e.b)
    elif isinstance(e, Load):
        for i in e.indices:
            yield from walk_expr(i)
    elif isinstance(e, Math):
        for a in e.args:
            yield from walk_expr(a)


def flat_index(buf: Buffer, indices) -> Expr:
    """Row-major flattening of ``indices`` into ``buf`` as an expression."""
    if len(indices) != len(buf.shape):
        raise Unsupported(f"{buf.name} indexed with {len(indices)} indices but has {len(buf.shape)} dimensions")
    out = None
    for idx, dim in zip(indices, buf.shape):
        if out is None:
            out = idx
        else:
            out = Bin("add", Bin("mul", out, Const(dim, "int32")), idx)
    return out if out is not None else Const(0, "int32")


@dataclass
class Opaque(Stmt):
    """A statement outside the modelled subset: the kernel cannot run, but
    the per-site checks of the other statements still can."""

    construct: str
    line: int = 0
    site: bool = False  # the statement is a ptx_cp_async call
    body: list = field(default_factory=list)  # statements nested under it, when they could be built


_INFIX = {"add": ("+", 4), "sub": ("-", 4), "mul": ("*", 5), "div": ("/", 5), "fdiv": ("//", 5), "fmod": ("%", 5),
          "shl": ("<<", 3), "shr": (">>", 3), "band": ("&", 2), "bxor": ("^", 1), "bor": ("|", 0)}
_CMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


def show(e, prec: int = 0) -> str:
    """Python-like text of an expression, for messages."""
    if isinstance(e, Bin) and e.op in _INFIX:
        sym, p = _INFIX[e.op]
        s = f"{show(e.a, p)} {sym} {show(e.b, p + 1)}"
        return f"({s})" if p < prec else s
    if isinstance(e, Bin):
        return f"T.{e.op}({show(e.a)}, {show(e.b)})"
    if isinstance(e, Cmp):
        s = f"{show(e.a, 6)} {_CMP[e.op]} {show(e.b, 6)}"
        return f"({s})" if prec > -1 else s
    if isinstance(e, Logic):
        return f"({show(e.a)} {e.op} {show(e.b)})"
    if isinstance(e, Unary):
        return {"neg": "-", "not": "not ", "bnot": "~"}[e.op] + show(e.a, 7)
    if isinstance(e, Select):
        return f"T.if_then_else({show(e.cond)}, {show(e.a)}, {show(e.b)})"
    if isinstance(e, Cast):
        return f"T.Cast({e.dtype!r}, {show(e.a)})"
    if isinstance(e, Load):
        return f"{e.buf.name}[{', '.join(show(i) for i in e.indices)}]"
    if isinstance(e, Math):
        return f"T.{e.fn}({', '.join(show(a) for a in e.args)})"
    return repr(e)


def resolve_extents(se, de):
    """The extents of both sides of a ``T.copy``, with unknown (None) ones filled from the other side.

    Dimensions pair from the innermost; extents of 1 are broadcast dimensions and pair with
    nothing; an unknown extent takes the other side's next extent greater than 1, or 1 when
    none is left.
    """
    known_s = [e for e in se if e is not None and e != 1]
    known_d = [e for e in de if e is not None and e != 1]

    def fill_from(ext, other):
        out, rest = list(ext), list(other)
        for i in range(len(out) - 1, -1, -1):
            if out[i] is None:
                out[i] = rest.pop() if rest else 1
            elif out[i] != 1 and rest:
                rest.pop()
        return out

    se = fill_from(se, known_d) if any(e is None for e in se) else list(se)
    de = fill_from(de, known_s) if any(e is None for e in de) else list(de)
    return se, de
