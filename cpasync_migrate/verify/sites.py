"""Per-site static checks: from the old and new text alone, each rewritten
cp.async moves the same bytes from the same place to the same place.

For a pair of sites (old, new) in the same position of the two kernels:

* same data pointers (destination and source buffers);
* byte addresses equal: ``offset x sizeof(pointer type)`` of each side, where
  the legacy form's pointer type is the buffer's element type;
* byte counts equal, under each form's meaning of the size argument (bytes,
  or ``num_elems x sizeof(pointer type)``); under ``num_elems`` the size is an
  integer literal and both sides give the same width;
* the width is one cp.async accepts;
* each access pointer's extent covers exactly the copied bytes;
* rw masks are the generation's (2 for the destination, 1 for the source);
* the predicate is the same (or absent on both);
* no ``dtype=`` keyword is left on a new-form call.

Equalities are decided symbolically (integer polynomials over the kernel's
variables, other operations kept as opaque terms) and, where that does not
settle them, by evaluating both sides at every point of the loop, thread and
block ranges that enclose the site (enclosing ``if`` conditions filter the
points).  A site whose equalities cannot be decided either way is
inconclusive.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from .errors import IndexOverflow
from .index import INT_BITS, Ranges, check as check_index, children, wrap
from .interp import Interpreter, KernelError, is_int
from .poly import poly, scale
from .ir import (
    Bin, Cast, Cmp, Const, CpAsync, Expr, For, If, Kernel, Load, Logic, Math, Opaque, Parallel, Select, Assign,
    Unary, Var, show, walk_expr,
)

MAX_POINTS = 1 << 21


class NotStatic(Exception):
    pass


# ---------------------------------------------------------------- contexts
@dataclass
class SiteCtx:
    site: object
    loops: list  # [(var, start Expr, extent Expr)] outermost first; Parallel gives extent consts
    lets: dict  # var -> Expr
    conds: list  # [Expr]


def site_contexts(k: Kernel) -> list[SiteCtx]:
    out = []

    def walk(body, loops, lets, conds):
        for st in body:
            if isinstance(st, Assign):
                lets = dict(lets)
                lets[st.var] = st.value
            elif isinstance(st, For):
                walk(st.body, loops + [(st.var, st.start, st.extent)], lets, conds)
            elif isinstance(st, Parallel):
                walk(st.body, loops + [(v, Const(0, "int32"), Const(e, "int32")) for v, e in
                                       zip(st.vars, st.extents)], lets, conds)
            elif isinstance(st, If):
                walk(st.then, loops, lets, conds + [st.cond])
                walk(st.orelse, loops, lets, conds + [Unary("not", st.cond)])
            elif isinstance(st, CpAsync):
                out.append(SiteCtx(st, loops, lets, conds))
            elif isinstance(st, Opaque):
                if st.site:
                    out.append(SiteCtx(st, loops, lets, conds))
                walk(st.body, loops, lets, conds)

    walk(k.body, [], {}, [])
    return out


# ---------------------------------------------------------------- symbolic form
def subst(e: Expr, lets: dict, depth=0) -> Expr:
    if depth > 64:
        raise NotStatic("let chain too deep")
    t = type(e)
    if t is Var:
        return subst(lets[e.name], lets, depth + 1) if e.name in lets else e
    if t is Bin:
        return Bin(e.op, subst(e.a, lets, depth), subst(e.b, lets, depth))
    if t is Cmp:
        return Cmp(e.op, subst(e.a, lets, depth), subst(e.b, lets, depth))
    if t is Logic:
        return Logic(e.op, subst(e.a, lets, depth), subst(e.b, lets, depth))
    if t is Unary:
        return Unary(e.op, subst(e.a, lets, depth))
    if t is Select:
        return Select(subst(e.cond, lets, depth), subst(e.a, lets, depth), subst(e.b, lets, depth))
    if t is Cast:
        return Cast(e.dtype, subst(e.a, lets, depth))
    if t is Load:
        return Load(e.buf, tuple(subst(i, lets, depth) for i in e.indices))
    if t is Math:
        return Math(e.fn, tuple(subst(a, lets, depth) for a in e.args))
    return e


def free_vars(e: Expr) -> set:
    return {x.name for x in walk_expr(e) if isinstance(x, Var)}


def has_load(e: Expr) -> bool:
    return any(isinstance(x, Load) for x in walk_expr(e))


# ---------------------------------------------------------------- evaluation
def sev(e: Expr, env: dict, rg: Optional[Ranges] = None):
    """The value of ``e`` at every point of ``env``; with ``rg``, integer nodes in their index type (a left
    shift wraps, other overflow is :class:`NotStatic`: see :mod:`.index`)."""
    t = type(e)
    if t is Const:
        return e.value
    if t is Var:
        if e.name not in env:
            raise NotStatic(f"variable {e.name} has no known range")
        return env[e.name]
    if t is Bin:
        try:
            v = Interpreter.binop(e.op, sev(e.a, env, rg), sev(e.b, env, rg), None, 0)
            return v if rg is None or not is_int(v) else check_index(e, v, rg)
        except KernelError as err:  # IndexOverflow too
            raise NotStatic(str(err)) from None
    if t is Cmp:
        a, b = sev(e.a, env, rg), sev(e.b, env, rg)
        return {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "eq": np.equal,
                "ne": np.not_equal}[e.op](a, b)
    if t is Logic:
        a, b = np.asarray(sev(e.a, env, rg)).astype(bool), np.asarray(sev(e.b, env, rg)).astype(bool)
        return (a & b) if e.op == "and" else (a | b)
    if t is Unary:
        a = sev(e.a, env, rg)
        if e.op == "neg":
            v = np.negative(a)
            try:
                return v if rg is None or not is_int(v) else check_index(e, v, rg)
            except IndexOverflow as err:
                raise NotStatic(str(err)) from None
        return np.logical_not(a) if e.op == "not" else np.invert(a)
    if t is Select:
        return np.where(np.asarray(sev(e.cond, env, rg)).astype(bool), sev(e.a, env, rg), sev(e.b, env, rg))
    if t is Cast:
        v = sev(e.a, env, rg)
        if e.dtype.startswith(("int", "uint")) and is_int(v):
            if rg is not None and e.dtype in INT_BITS:
                return wrap(np.asarray(v, dtype=np.int64), e.dtype) if isinstance(v, np.ndarray) else wrap(v, e.dtype)
            return v
        raise NotStatic("cast")
    raise NotStatic(type(e).__name__)


class Domain:
    """Every (reachable, as far as the text tells) point of a site's variables."""

    def __init__(self, k: Kernel, ctx: SiteCtx, needed: set):
        self.note = ""
        self.size = 0
        self.env: Optional[dict] = None
        self.reason = ""
        try:
            self.env = self._build(k, ctx, needed)
        except NotStatic as e:
            self.reason = str(e)

    def _build(self, k: Kernel, ctx: SiteCtx, needed: set) -> dict:
        loops = ctx.loops
        loop_vars = {v for v, _, _ in loops}
        # close the set of needed variables over loop bounds
        need = set(needed)
        changed = True
        while changed:
            changed = False
            for v, s, e in loops:
                if v in need:
                    extra = (free_vars(subst(s, ctx.lets)) | free_vars(subst(e, ctx.lets))) - need
                    if extra:
                        need |= extra
                        changed = True
        conds = []
        skipped = 0
        for c in ctx.conds:
            c2 = subst(c, ctx.lets)
            fv = free_vars(c2)
            if has_load(c2):
                skipped += 1
                continue
            if fv <= need | set(k.thread_vars) | loop_vars:
                need |= fv
                conds.append(c2)
            else:
                skipped += 1
        if skipped:
            self.note = f"{skipped} enclosing condition(s) not modelled"
        env: dict = {}
        n = 1
        dims = {"threadIdx": k.block, "blockIdx": k.grid}
        for name, (kind, d) in k.thread_vars.items():
            if name in need:
                ext = dims[kind][d]
                env, n = expand(env, n, name, np.zeros(n, dtype=np.int64), np.full(n, ext, dtype=np.int64))
        for v, s, e in loops:
            if v not in need:
                continue
            lo = np.broadcast_to(np.asarray(sev(subst(s, ctx.lets), env), dtype=np.int64), (n,))
            ext = np.broadcast_to(np.asarray(sev(subst(e, ctx.lets), env), dtype=np.int64), (n,))
            env, n = expand(env, n, v, lo, np.maximum(ext, 0))
        missing = need - set(env) - set(ctx.lets)
        if missing:
            raise NotStatic(f"no range known for {', '.join(sorted(missing))}")
        if conds:
            keep = np.ones(n, dtype=bool)
            for c in conds:
                keep &= np.broadcast_to(np.asarray(sev(c, env)).astype(bool), (n,))
            env = {k2: v[keep] for k2, v in env.items()}
            n = int(keep.sum())
        self.size = n
        return env


def expand(env: dict, n: int, name: str, lo: np.ndarray, ext: np.ndarray):
    total = int(ext.sum())
    if total > MAX_POINTS:
        raise NotStatic(f"too many points to enumerate ({total} > {MAX_POINTS})")
    rep = ext
    new = {k: np.repeat(v, rep) for k, v in env.items()}
    starts = np.repeat(np.cumsum(rep) - rep, rep)
    new[name] = np.repeat(lo, rep) + (np.arange(total) - starts)
    return new, total


@dataclass
class Decision:
    ok: Optional[bool]  # True proven, False refuted, None unknown
    how: str
    witness: Optional[dict] = None


def _unscaled(e: Expr):
    """``(x, k)`` for ``e`` = ``x`` times the byte scale ``k`` (:func:`.poly.scale`), else ``(e, None)``."""
    if type(e) is Bin and e.op == "mul" and type(e.b) is Const and e.b.dtype == "int64":
        return e.a, e.b.value
    return e, None


def ring_equal(a2: Expr, b2: Expr, rg: Ranges) -> bool:
    """Whether two expressions with the same polynomial are equal as the device computes them although they
    may overflow: both, apart from the same byte scale, are int32 arithmetic throughout, and every node that
    may overflow is under sums, differences, products and shifts only (Z / 2^32 is a ring; what divisions,
    remainders, comparisons and the like make of a wrapped value is not known)."""
    (x, kx), (y, ky) = _unscaled(a2), _unscaled(b2)
    if kx != ky or not (rg.only_int32(x) and rg.only_int32(y)):
        return False
    return _ring_safe(x, rg, False) and _ring_safe(y, rg, False)


def _ring_safe(e: Expr, rg: Ranges, under: bool) -> bool:
    t = type(e)
    if under and (rg.may_overflow(e) or rg.wraps(e)):
        return False
    ring = (t is Bin and e.op in ("add", "sub", "mul", "shl")) or (t is Unary and e.op == "neg")
    return all(_ring_safe(c, rg, under or not ring) for c in children(e))


def decide_equal(a2: Expr, b2: Expr, k: Kernel, ctx: SiteCtx, cache: dict, rg: Optional[Ranges] = None) -> Decision:
    """Whether ``a2 == b2`` (both already in the old kernel's names, lets substituted) at every point, with
    integer arithmetic in its index type (:mod:`.index`)."""
    if rg is None:
        rg = cache.get("ranges") or cache.setdefault("ranges", Ranges(k))
    if poly(a2) == poly(b2):
        if not (rg.risky(a2) or rg.risky(b2)):
            return Decision(True, "symbolic (no int32 overflow)")
        if ring_equal(a2, b2, rg):
            return Decision(True, "symbolic (the same int32 polynomial, equal with wrap-around too)")
    needed = free_vars(a2) | free_vars(b2)
    if has_load(a2) or has_load(b2):
        if poly(a2) == poly(b2):
            return Decision(None, "the same polynomial, but index arithmetic that reads memory may overflow int32 "
                                  "where the lowered value is not known")
        return Decision(None, "the expressions read memory and differ in form")
    dk = frozenset(needed)
    if dk not in cache:
        cache[dk] = Domain(k, ctx, needed)
    dom = cache[dk]
    if dom.env is None:
        return Decision(None, f"not decided symbolically; {dom.reason}")
    try:
        va = np.broadcast_to(np.asarray(sev(a2, dom.env, rg)), (dom.size,))
        vb = np.broadcast_to(np.asarray(sev(b2, dom.env, rg)), (dom.size,))
    except NotStatic as e:
        return Decision(None, f"not decided symbolically; cannot evaluate ({e})")
    diff = va != vb
    if not diff.any():
        how = f"exhaustive over {dom.size} points"
        return Decision(True, how + (f" ({dom.note})" if dom.note else ""))
    i = int(np.nonzero(diff)[0][0])
    w = {name: int(v[i]) for name, v in dom.env.items()}
    w["_old"] = int(va[i])
    w["_new"] = int(vb[i])
    return Decision(False, f"differs at {fmt_point(w)}" + (f" ({dom.note})" if dom.note else ""), w)


def decide_at_most(a2: Expr, limit: int, k: Kernel, ctx: SiteCtx) -> Decision:
    """Whether ``a2 <= limit`` (normalised as in :func:`decide_equal`) at every reachable point."""
    if has_load(a2):
        return Decision(None, "the expression reads memory")
    # a bound over the thread, block and loop ranges (enclosing conditions ignored: a superset of the
    # points) decides most sites without enumerating them, however many points they have
    rg = Ranges(k)
    r = rg.range_of(a2)
    if r is not None and r[1] <= limit and not rg.risky(a2):
        return Decision(True, f"bounded by {r[1]} over the thread, block and loop ranges")
    dom = Domain(k, ctx, free_vars(a2))
    if dom.env is None:
        return Decision(None, dom.reason)
    try:
        va = np.broadcast_to(np.asarray(sev(a2, dom.env, Ranges(k))), (max(dom.size, 1),))
    except NotStatic as e:
        return Decision(None, f"cannot evaluate ({e})")
    bad = va > limit
    if not bad.any():
        return Decision(True, f"exhaustive over {dom.size} points")
    i = int(np.nonzero(bad)[0][0])
    w = {name: int(v[i]) for name, v in dom.env.items()}
    pts = ", ".join(f"{name}={val}" for name, val in w.items())
    w["_value"] = int(va[i])
    return Decision(False, f"reaches {int(va[i])} > {limit} at {pts or 'every point'}", w)


def decide_at_least(a2: Expr, b2: Expr, k: Kernel, ctx: SiteCtx) -> Decision:
    """Whether ``a2 >= b2`` at every reachable point (both normalised as in :func:`decide_equal`)."""
    diff = poly(Bin("sub", a2, b2))
    if not diff or set(diff) == {()}:
        c = diff.get((), 0)
        rg = Ranges(k)
        if not (rg.risky(a2) or rg.risky(b2)):
            return Decision(c >= 0, f"symbolic (differs by {c})" if c else "symbolic (equal)")
    d = decide_at_most(Bin("sub", b2, a2), 0, k, ctx)
    if d.ok is False:
        return Decision(False, f"short of the copy: {d.how}", d.witness)
    return d


def fmt_point(w: dict) -> str:
    pts = ", ".join(f"{k}={v}" for k, v in w.items() if not k.startswith("_"))
    return f"{pts or 'every point'}: old {w['_old']}, new {w['_new']}"


def const_value(e2: Expr):
    try:
        v = sev(e2, {})
    except NotStatic:
        return None
    return int(v) if is_int(v) or isinstance(v, (int, np.integer)) else None


# ---------------------------------------------------------------- the checks
def _num_elems_checks(n, target, size, add) -> None:
    """What a target that counts elements asks of the new call: a literal count, both sides of one width."""
    if target.size_literal:
        add("size literal", n.size_literal, {
            True: "num_elems is an integer when the kernel is built (an IntImm at codegen)",
            False: "num_elems is a variable; under this target the code generator requires an integer immediate",
            None: "num_elems is an expression the verifier does not fold: whether it reaches the code generator as "
                  "the integer immediate this target requires is not known"}[n.size_literal])
    if target.same_width:
        sd, ss = size(n.dst.elem_type), size(n.src.elem_type)
        add("same width", sd == ss, f"sizeof({n.dst.elem_type}) = {sd}, sizeof({n.src.elem_type}) = {ss}")


def check_pair(k_old: Kernel, co: SiteCtx, o, n, no, nn, rules, target, old_meaning: str, guard=None) -> dict:
    """Check one pair of sites.  ``no``/``nn`` turn an old/new expression into the old kernel's names with
    the side's own lets substituted (:class:`.structure.Side`); the domain is the old site's.  ``guard``:
    the condition of the old ``if`` around ``o`` that the new call carries as its predicate instead."""
    res = {"line": o.line, "new_line": n.line, "checks": []}
    checks = res["checks"]

    def add(name, ok, how, detail=None):
        checks.append({"check": name, "ok": ok, "how": how, **({"detail": detail} if detail else {})})

    if isinstance(o, Opaque) or isinstance(n, Opaque):
        which = o if isinstance(o, Opaque) else n
        add("parse", None, f"{'old' if which is o else 'new'} call not modelled: {which.construct}")
        return finish(res)
    if n.dtype_kw:
        add("no dtype=", False, "the new-form call still carries dtype=, which shifts its arguments")
    size = rules.dtype_size
    cache_o: dict = {}

    def eq(a, b):
        try:
            return decide_equal(no(a), nn(b), k_old, co, cache_o)
        except (NotStatic, RecursionError) as e:
            return Decision(None, str(e) or "expression nested too deeply")

    def bytes_of(site, meaning):
        if site.form == "legacy" or meaning == "bytes":
            return site.size
        return scale(site.size, size(site.dst.elem_type))

    for side in ("dst", "src"):
        po, pn = getattr(o, side), getattr(n, side)
        same = no.buf(po.buf) is nn.buf(pn.buf)
        add(f"{side} pointer", same, f"old {po.buf.name}.data vs new {pn.buf.name}.data")
        if not same:
            continue
        if po.merged_unknown:
            add(f"{side} byte address", None, f"{po.buf.name} is in merged shared memory and the call's dtype is "
                                              "not known, so the legacy offset's unit is not known")
            continue
        d = eq(scale(po.offset, size(po.elem_type)), scale(pn.offset, size(pn.elem_type)))
        unit = f"sizeof({po.elem_type})" + (" (merged shared memory: the call's dtype)" if po.merged else "")
        add(f"{side} byte address", d.ok,
            f"old ({show(po.offset)}) x {unit} vs new ({show(pn.offset)}) x sizeof({pn.elem_type}): {d.how}",
            d.witness)
    nb_old = bytes_of(o, old_meaning)
    nb_new = bytes_of(n, n.size_meaning)
    d = eq(nb_old, nb_new)
    add("byte count", d.ok, f"old {show(nb_old)} vs new {show(nb_new)} bytes ({n.size_meaning} meaning): {d.how}",
        d.witness)
    w = const_value(nn(nb_new))
    if w is not None:
        w_old = const_value(nn(nb_old))
        if w not in target.widths and w_old == w and o.form == n.form == "legacy":
            # a site the rewrite left as it was: its width is the original's problem, not the rewrite's
            add("width", None, f"{w} bytes (allowed {', '.join(map(str, target.widths))}), as in the original line, "
                               "which the rewrite did not change")
        else:
            add("width", w in target.widths, f"{w} bytes (allowed {', '.join(map(str, target.widths))})")
    if n.form == "access_ptr" and n.size_meaning == "num_elems":
        _num_elems_checks(n, target, size, add)
    if n.form == "access_ptr":
        _pointer_checks(n, target, nn, nb_new, size, k_old, co, add)
        _thread_sync_check(n, target, nn, k_old, co, add)
    po_, pn_ = o.predicate, n.predicate
    if guard is not None and po_ is None and pn_ is not None:
        for name, ok, how, w in guarded_predicate(k_old, co, o, n, no, nn, guard, size, nb_new):
            add(name, ok, how, w)
    elif po_ is None and pn_ is None:
        add("predicate", True, "none on either side")
    elif (po_ is None) != (pn_ is None):
        add("predicate", False, "predicate " + ("lost" if pn_ is None else "added"))
    else:
        d = eq(po_, pn_)
        add("predicate", d.ok, f"old {show(po_)} vs new {show(pn_)}: {d.how}", d.witness)
    return finish(res)


def _thread_sync_check(n, target, nn, k_old: Kernel, co: SiteCtx, add) -> None:
    """Under a release whose thread-sync pass fails on some loop copies into merged dynamic shared memory
    (rules: ``loop_merged_sync_fails``), such a copy at an offset with a shift is not proven."""
    if target.loop_merged_sync_fails and co.loops and _merged_dyn_copies(k_old, n) >= 2 \
            and any(isinstance(x, Bin) and x.op in ("shl", "shr") for x in walk_expr(nn(n.dst.offset))):
        add("thread sync", None, f"an access-pointer cp.async in a loop into merged dynamic shared memory "
                                 f"({n.dst.buf.name}, which another cp.async also writes) at an offset with a "
                                 f"shift: TileLang {target.name}'s thread-sync pass has been seen to fail on "
                                 "such kernels (Cannot match type handle vs int32), and which of them it "
                                 "lowers is not modelled")


def _merged_dyn_copies(k: Kernel, n) -> int:
    """The cp.async copies of ``k`` into merged dynamic shared memory, when ``n``'s destination is in it (two or
    more shared.dyn allocations), else 0."""
    dyn = {id(b) for b in k.allocs if b.scope == "shared.dyn"}
    if n.dst.buf.scope != "shared.dyn" or len(dyn) < 2:
        return 0
    return sum(1 for s in k.sites if isinstance(s, CpAsync) and s.dst.buf.scope == "shared.dyn")


def _pointer_checks(n, target, nn, nb_new, size, k_old: Kernel, co: SiteCtx, add) -> None:
    """``check_pair``'s checks of the new call's access pointers: each side's rw mask, that its extent covers
    the copy, and that a narrower view into a global buffer stays in bounds.  ``add`` records a check."""
    for side, want in (("dst", target.dst_rw_mask), ("src", target.src_rw_mask)):
        p = getattr(n, side)
        if p.rw_mask is not None:
            m = const_value(nn(p.rw_mask))
            add(f"{side} rw mask", m == want, f"{m} (want {want})")
        if p.extent is not None:
            # the extent is metadata that must cover the copy (docs/design.md: extent x sizeof >= bytes); neither
            # 0.1.8's nor 0.1.15's code generation reads it (seen: an extent of twice the copy, past the
            # end of a global buffer, lowers to the same plain copy)
            try:
                d = decide_at_least(nn(scale(p.extent, size(p.elem_type))), nn(nb_new), k_old, co)
            except (NotStatic, RecursionError) as e:
                d = Decision(None, str(e) or "expression nested too deeply")
            add(f"{side} extent", d.ok, f"the new call's {show(p.extent)} x sizeof({p.elem_type}) >= the copy's "
                                        f"{show(nb_new)} bytes: {d.how}", d.witness)
        elif p.style != "legacy":
            add(f"{side} extent", None, "access pointer without an extent")
        if p.extent is not None and p.elem_type != p.buf.dtype and p.buf.scope == "global":
            # TileLang's safe-memory-access pass bounds-checks an access pointer into a global
            # buffer by its offset + extent (in units of the pointer type) against the buffer's
            # element count; a narrower view of a wider tensor fails it and the copy is guarded
            # out (zero-filled) on the device.  Shared destinations get no such guard (seen with
            # 0.1.8 and 0.1.15: a uint8 view of a bfloat16 tile lowers to a plain copy).
            try:
                d = decide_at_most(nn(Bin("add", p.offset, p.extent)), p.buf.numel, k_old, co)
            except (NotStatic, RecursionError) as e:
                d = Decision(None, str(e))
            add(f"{side} in bounds", d.ok,
                f"offset + extent in {p.elem_type} units vs {p.buf.numel} elements of {p.buf.name} "
                f"({p.buf.dtype}): {d.how}", d.witness)


def guarded_predicate(k: Kernel, co: SiteCtx, o, n, no, nn, guard, size, nb_new):
    """The checks of ``if guard: cp(...)`` rewritten as ``cp(..., pred)``: ``pred`` is ``guard`` at every point
    of the site without the guard, and the destination bytes the new call zero-fills where it is false are
    read nowhere in the kernel (every load of the buffer, at every point of its ranges)."""
    others = [c for c in co.conds if c is not guard]
    whole = SiteCtx(co.site, co.loops, co.lets, others)
    try:
        d = decide_equal(no(guard), nn(n.predicate), k, whole, {})
    except (NotStatic, RecursionError) as e:
        d = Decision(None, str(e) or "expression nested too deeply")
    yield ("predicate", d.ok, f"the old guard {show(guard)} vs the new predicate {show(n.predicate)}: {d.how}",
           d.witness)
    if not d.ok:
        return
    buf = o.dst.buf
    width = const_value(nn(nb_new))
    if width is None:
        yield ("zero-filled bytes unread", None, "the copy's size is not a constant", None)
        return
    off = scale(n.dst.offset, size(n.dst.elem_type))
    try:
        zeros = _byte_set(k, SiteCtx(co.site, co.loops, co.lets, others + [Unary("not", guard)]), nn(off), width)
        reads = _reads_of(k, buf, size)
    except NotStatic as e:
        yield ("zero-filled bytes unread", None, f"not decided: {e}", None)
        return
    hit = np.intersect1d(zeros, reads)
    if hit.size:
        yield ("zero-filled bytes unread", None,
               f"where {show(guard)} is false the new call zero-fills byte {int(hit[0])} of {buf.name}, which the "
               "kernel reads", None)
        return
    yield ("zero-filled bytes unread", True,
           f"the {zeros.size} byte(s) of {buf.name} zero-filled where {show(guard)} is false are read nowhere "
           f"({reads.size} byte(s) read)", None)


def _byte_set(k: Kernel, ctx: SiteCtx, start: Expr, width: int) -> np.ndarray:
    """Every byte ``start + [0, width)`` at every point of ``ctx``."""
    start = subst(start, ctx.lets)
    if has_load(start):
        raise NotStatic(f"the address {show(start)} reads memory")
    dom = Domain(k, ctx, free_vars(start))
    if dom.env is None:
        raise NotStatic(dom.reason)
    v = np.broadcast_to(np.asarray(sev(start, dom.env, Ranges(k)), dtype=np.int64), (dom.size,))
    return np.unique((v[:, None] + np.arange(width)).reshape(-1))


def _reads_of(k: Kernel, buf, size) -> np.ndarray:
    """Every byte of ``buf`` any statement of ``k`` may read, at every point of its ranges."""
    from .ir import CopyRegion, Fill, Store, flat_index

    out = [np.zeros(0, dtype=np.int64)]

    def exprs_of(st):
        t = type(st)
        if t is Store:
            return list(st.indices) + [st.value]
        if t is If:
            return [st.cond]
        if t is For:
            return [st.start, st.extent]
        if t is Assign:
            return [st.value]
        if t is CpAsync:
            if st.src.buf is buf:
                raise NotStatic(f"{buf.name} is the source of the cp.async at line {st.line}")
            return [st.dst.offset, st.src.offset, st.size] + ([st.predicate] if st.predicate is not None else [])
        if t is CopyRegion:
            if st.src.buf is buf:
                raise NotStatic(f"T.copy reads {buf.name} (line {st.line})")
            return list(st.src.starts) + list(st.dst.starts)
        if t is Fill:
            return [st.value]
        if t is Opaque:
            raise NotStatic(f"{st.construct} (line {st.line}) is not modelled")
        return [getattr(st, "value")] if hasattr(st, "value") else []

    def walk(body, loops, lets, conds):
        for st in body:
            ctx = SiteCtx(st, loops, lets, conds)
            for e in exprs_of(st):
                for x in walk_expr(e):
                    if isinstance(x, Load) and x.buf is buf:
                        out.append(_byte_set(k, ctx, scale(flat_index(buf, x.indices), buf.itemsize),
                                             buf.itemsize))
            if isinstance(st, Assign):
                lets = dict(lets)
                lets[st.var] = st.value
            elif isinstance(st, For):
                walk(st.body, loops + [(st.var, st.start, st.extent)], lets, conds)
            elif isinstance(st, Parallel):
                walk(st.body, loops + [(v, Const(0, "int32"), Const(e, "int32")) for v, e in
                                       zip(st.vars, st.extents)], lets, conds)
            elif isinstance(st, If):
                walk(st.then, loops, lets, conds + [st.cond])
                walk(st.orelse, loops, lets, conds + [Unary("not", st.cond)])

    walk(k.body, [], {}, [])
    return np.unique(np.concatenate(out))


def finish(res: dict) -> dict:
    checks = res["checks"]
    bad = [c for c in checks if c["ok"] is False]
    unk = [c for c in checks if c["ok"] is None]
    if bad:
        res["verdict"] = "mismatch"
        res["reason"] = "; ".join(f"{c['check']}: {c['how']}" for c in bad)
    elif unk:
        res["verdict"] = "inconclusive"
        res["reason"] = "; ".join(f"{c['check']}: {c['how']}" for c in unk)
    else:
        res["verdict"] = "equivalent"
        res["reason"] = "addresses, byte count, extents, rw masks and predicate agree"
    return res


RANK = {"equivalent": 0, "inconclusive": 1, "mismatch": 2}


def check_sites(k_old: Kernel, k_new: Kernel, rules, target, old_meaning: str, match=None) -> list[dict]:
    """Check every pair of sites.  ``match`` (:func:`.structure.compare`'s result) pairs them when the
    kernels have the same structure; otherwise they pair in program order, each side read with its own
    lets and its loop variables paired by nesting position."""
    from .structure import Side, pair_buffers

    co_all = site_contexts(k_old)
    cn_all = site_contexts(k_new)
    if len(co_all) != len(cn_all):
        return [{"line": c.site.line, "verdict": "inconclusive", "checks": [],
                 "reason": f"the old kernel has {len(co_all)} cp.async sites and the new one {len(cn_all)}"}
                for c in co_all]
    merged: dict = {}
    order = []
    if match is not None and match.same:
        by_site = {id(c.site): c for c in co_all}
        pairs = [(by_site[id(a)], b, match.old, match.new) for a, b in match.pairs if id(a) in by_site]
        if len(pairs) != len(co_all):
            pairs = None
    else:
        pairs = None
    if pairs is None:
        bmap, _ = pair_buffers(k_old, k_new)
        tags = {}
        for name, tag in k_old.thread_vars.items():
            tags.setdefault(tag, name)
        pairs = []
        for co, cn in zip(co_all, cn_all):
            vo = {name: tags[tag] for name, tag in k_old.thread_vars.items()}
            vn = {name: tags.get(tag, "?" + name) for name, tag in k_new.thread_vars.items()}
            for (a, _, _), (b, _, _) in zip(co.loops, cn.loops):
                vo[a] = a
                vn[b] = a
            for v in list(co.lets):
                vo.setdefault(v, v)
            pairs.append((co, cn.site, Side(dict(co.lets), vo, {}), Side(dict(cn.lets), vn, bmap)))
    guarded = match.guarded if match is not None and match.same else {}
    for co, nsite, so, sn in pairs:
        r = check_pair(k_old, co, co.site, nsite, so_fn(so), so_fn(sn), rules, target, old_meaning,
                       guarded.get(id(co.site)))
        key_ = (co.site.line, getattr(co.site, "col", 0))
        if key_ not in merged:
            merged[key_] = r
            order.append(key_)
        elif RANK[r["verdict"]] > RANK[merged[key_]["verdict"]]:
            merged[key_] = r
    return [merged[k_] for k_ in order]


class so_fn:
    """A side's normaliser as a callable that also maps buffers."""

    def __init__(self, side):
        self.side = side

    def __call__(self, e):
        return self.side.norm(e)

    def buf(self, b):
        return self.side.buf(b)
