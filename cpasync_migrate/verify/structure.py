"""Whether two kernels are the same program apart from their cp.async calls.

One job: walk the old and the new kernel side by side and decide whether every
statement other than a cp.async call is the same, modulo

* names: loop, let and thread variables and allocated buffers are paired by
  position (thread variables by their launch tag, buffers by allocation order
  and scope, parameters by position);
* let bindings whose value reads no memory: substituted into their uses (a
  renamed, removed or newly introduced ``x = ...`` does not matter);
* integer normal forms: sums and products are compared as polynomials, so
  ``x * 1``, ``x + 0`` and reassociated sums are the same expression;
* order inside a run of adjacent cp.async calls (independent copies issued in
  another order are paired by their source address).

When the structures match, the result pairs every old cp.async with its new
counterpart and gives, for each side, the function that turns one of its
expressions into the old kernel's names with its own lets substituted: the
per-site checks compare those, over the old site's loop, thread and block
ranges, and a proof of every site is then a proof of the kernel.  When they do
not match, the first difference is named; equal outputs on random inputs are
then evidence, not proof.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .ir import (
    Assign, Barrier, Bin, Buffer, Cast, Cmp, Commit, Const, CopyRegion, CpAsync, Evaluate, Expr, Fill, For, If,
    Kernel, Load, Logic, Math, Opaque, Parallel, Select, Store, Unary, Var, Wait, flat_index, walk_expr, walk_stmts,
)


class Differ(Exception):
    def __init__(self, what: str, old_line=None, new_line=None):
        super().__init__(what)
        self.what = what
        self.old_line = old_line
        self.new_line = new_line


@dataclass
class Side:
    lets: dict  # var -> Expr (values that read no memory)
    vmap: dict  # var -> canonical var name (the old kernel's)
    bmap: dict  # id(Buffer) -> the old kernel's Buffer

    def norm(self, e: Expr, depth: int = 0) -> Expr:
        """``e`` with lets substituted and names mapped to the old kernel's."""
        if depth > 200:
            raise Differ("let chain too deep")
        t = type(e)
        if t is Var:
            if e.name in self.lets:
                return self.norm(self.lets[e.name], depth + 1)
            return Var(self.vmap.get(e.name, "?" + e.name))
        if t is Const:
            return e
        if t is Bin:
            return Bin(e.op, self.norm(e.a, depth), self.norm(e.b, depth))
        if t is Cmp:
            return Cmp(e.op, self.norm(e.a, depth), self.norm(e.b, depth))
        if t is Logic:
            return Logic(e.op, self.norm(e.a, depth), self.norm(e.b, depth))
        if t is Unary:
            return Unary(e.op, self.norm(e.a, depth))
        if t is Select:
            return Select(self.norm(e.cond, depth), self.norm(e.a, depth), self.norm(e.b, depth))
        if t is Cast:
            return Cast(e.dtype, self.norm(e.a, depth))
        if t is Load:
            return Load(self.buf(e.buf), tuple(self.norm(i, depth) for i in e.indices))
        if t is Math:
            return Math(e.fn, tuple(self.norm(a, depth) for a in e.args))
        return e

    def buf(self, b: Buffer) -> Buffer:
        return self.bmap.get(id(b), b)


@dataclass
class Match:
    same: bool
    reason: str = ""
    old_line: Optional[int] = None
    new_line: Optional[int] = None
    pairs: list = field(default_factory=list)  # [(old CpAsync, new CpAsync)]
    old: Optional[Side] = None
    new: Optional[Side] = None
    # id(old CpAsync) -> the condition of the old ``if`` that guarded it, where the new call carries that
    # condition as its predicate instead (the per-site checks prove the zero-filled bytes are never read)
    guarded: dict = field(default_factory=dict)


def _pure_lets(k: Kernel) -> dict:
    lets = {}
    for st in walk_stmts(k.body):
        if isinstance(st, Assign):
            lets[st.var] = st.value
    # a let whose value (after substitution) reads memory stays a statement
    pure = {}
    for v, e in lets.items():
        if not _reads(e, lets, set()):
            pure[v] = e
    return pure


def _reads(e, lets, seen) -> bool:
    for x in walk_expr(e):
        if isinstance(x, Load):
            return True
        if isinstance(x, Var) and x.name in lets and x.name not in seen:
            seen.add(x.name)
            if _reads(lets[x.name], lets, seen):
                return True
    return False


def pair_buffers(ko: Kernel, kn: Kernel, by_name: bool = False) -> tuple[dict, Optional[str]]:
    """Parameters paired by position; allocations by scope and then by allocation order, or with
    ``by_name`` by name within a scope (when the names of each scope's allocations are the same, once
    each, on both sides: a tuple unpacking reordered, or statements moved)."""
    bmap = {}
    if len(ko.params) != len(kn.params):
        return bmap, f"old {len(ko.params)} parameters vs new {len(kn.params)}"
    for a, b in zip(ko.params, kn.params):
        bmap[id(b)] = a
    groups_o: dict = {}
    groups_n: dict = {}
    for b in ko.allocs:
        groups_o.setdefault(b.scope, []).append(b)
    for b in kn.allocs:
        groups_n.setdefault(b.scope, []).append(b)
    if set(groups_o) != set(groups_n):
        return bmap, "the kernels allocate memory of different scopes"
    for sc, lo in groups_o.items():
        ln = groups_n[sc]
        if len(lo) != len(ln):
            return bmap, f"old {len(lo)} {sc} allocations vs new {len(ln)}"
        if by_name:
            names = [b.name for b in ln]
            if len(set(names)) != len(names) or sorted(names) != sorted(b.name for b in lo):
                return bmap, f"the {sc} allocations are not named alike"
            by = {b.name: b for b in ln}
            ln = [by[a.name] for a in lo]
        for a, b in zip(lo, ln):
            if a.shape != b.shape or a.dtype != b.dtype:
                return bmap, (f"old allocation {a.name} {a.shape} {a.dtype} (line {a.line}) vs new {b.name} "
                              f"{b.shape} {b.dtype} (line {b.line})")
            bmap[id(b)] = a
    return bmap, None


def compare(ko: Kernel, kn: Kernel, size_of) -> Match:
    """``size_of``: element size of a dtype (the rules' ``dtype_size``).  Allocations are paired by order
    first; when that does not give the same program, by name (any bijection of allocations of one
    scope, shape and dtype that makes every statement agree is a renaming: the pairing is checked, not
    trusted)."""
    m = _compare(ko, kn, size_of, False)
    if m.same:
        return m
    m2 = _compare(ko, kn, size_of, True)
    return m2 if m2.same else m


class _Walk:
    """The statement-by-statement comparison of :func:`_compare`: the two sides' renamings (``so``, ``sn``),
    the :class:`Match` it fills (``m``: paired cp.async calls, guarded calls) and the dtype sizes."""

    def __init__(self, so: Side, sn: Side, m: Match, size_of):
        from .poly import key  # polynomial normal form of an expression

        self.so, self.sn, self.m, self.size_of, self.key = so, sn, m, size_of, key

    def k_(self, side: Side, e) -> str:
        return self.key(side.norm(e))

    def items(self, body, side: Side) -> list:
        out = []
        run = None
        for st in body:
            if isinstance(st, Assign) and st.var in side.lets:
                continue
            if isinstance(st, CpAsync):
                if run is None:
                    run = []
                    out.append(run)
                run.append(st)
                continue
            run = None
            out.append(st)
        return out

    def line(self, st):
        if isinstance(st, list):
            return st[0].line if st else None
        return getattr(st, "line", None)

    def body(self, ob, nb):
        oi, ni = self.items(ob, self.so), self.items(nb, self.sn)
        for a, b in zip(oi, ni):
            self.stmt(a, b)
        if len(oi) != len(ni):
            extra = oi[len(ni)] if len(oi) > len(ni) else ni[len(oi)]
            raise Differ("one kernel has a statement the other lacks", self.line(extra) if len(oi) > len(ni) else None,
                         self.line(extra) if len(ni) > len(oi) else None)

    def src_sig(self, side: Side, s: CpAsync):
        b = side.buf(s.src.buf)
        from .poly import scale

        return (id(side.buf(s.dst.buf)), id(b), self.k_(side, scale(s.src.offset, self._size(s.src))))

    def _size(self, p):
        return self.size_of(p.elem_type) or 1

    def stmt(self, a, b):
        la, lb = self.line(a), self.line(b)
        if isinstance(a, If) and isinstance(b, list) and not a.orelse and a.then and len(a.then) == len(b) and \
                all(isinstance(x, CpAsync) and x.predicate is None for x in a.then) and \
                all(y.predicate is not None and self.k_(self.sn, y.predicate) == self.k_(self.so, a.cond) for y in b):
            # ``if c: cp(...)`` rewritten as ``cp(..., c)``: the same copies where c holds; where it does not,
            # the new calls zero-fill their destinations, which the per-site checks must show is never read
            self.stmt(list(a.then), b)
            for x in a.then:
                self.m.guarded[id(x)] = a.cond
            return
        if isinstance(a, list) or isinstance(b, list):
            self.runs(a, b, la, lb)
            return
        if type(a) is not type(b):
            raise Differ(f"old {type(a).__name__} vs new {type(b).__name__}", la, lb)
        self.same_kind(a, b, la, lb)

    def runs(self, a, b, la, lb):
        """Two runs of adjacent cp.async calls: paired in order, or by source when only their order differs."""
        if not (isinstance(a, list) and isinstance(b, list)):
            raise Differ("a cp.async call stands where the other kernel has another statement", la, lb)
        if len(a) != len(b):
            raise Differ(f"old {len(a)} adjacent cp.async calls vs new {len(b)}", la, lb)
        sa = [self.src_sig(self.so, s) for s in a]
        sb = [self.src_sig(self.sn, s) for s in b]
        if sa != sb and sorted(map(repr, sa)) == sorted(map(repr, sb)) and len(set(map(repr, sa))) == len(sa):
            order = {repr(s): i for i, s in enumerate(sb)}
            self.m.pairs.extend((x, b[order[repr(s)]]) for x, s in zip(a, sa))
        else:
            self.m.pairs.extend(zip(a, b))

    def same_kind(self, a, b, la, lb):
        """Two statements of one kind: the same statement under the pairing so far (else :class:`Differ`)."""
        if isinstance(a, For):
            if a.kind != b.kind:
                raise Differ(f"the old kernel has a {a.kind} loop where the new one has a {b.kind} loop", la, lb)
            if a.params != b.params:
                raise Differ("the loops' other arguments differ (num_stages, order, stage, ...: not run by the "
                             "interpreter)", la, lb)
            if self.k_(self.so, a.start) != self.k_(self.sn, b.start) or \
                    self.k_(self.so, a.extent) != self.k_(self.sn, b.extent):
                raise Differ("loop bounds differ", la, lb)
            self.so.vmap[a.var] = a.var
            self.sn.vmap[b.var] = a.var
            self.body(a.body, b.body)
        elif isinstance(a, Parallel):
            if a.extents != b.extents:
                raise Differ("T.Parallel extents differ", la, lb)
            for x, y in zip(a.vars, b.vars):
                self.so.vmap[x] = x
                self.sn.vmap[y] = x
            self.body(a.body, b.body)
        elif isinstance(a, If):
            if self.k_(self.so, a.cond) != self.k_(self.sn, b.cond):
                raise Differ("if conditions differ", la, lb)
            self.body(a.then, b.then)
            self.body(a.orelse, b.orelse)
        elif isinstance(a, Assign):
            if self.k_(self.so, a.value) != self.k_(self.sn, b.value):
                raise Differ("assigned values differ", la, lb)
            self.so.vmap[a.var] = a.var
            self.sn.vmap[b.var] = a.var
        elif isinstance(a, Store):
            if self.so.buf(a.buf) is not self.sn.buf(b.buf):
                raise Differ(f"old stores to {a.buf.name}, new to {b.buf.name}", la, lb)
            if self.k_(self.so, flat_index(a.buf, a.indices)) != self.k_(self.sn, flat_index(b.buf, b.indices)):
                raise Differ(f"store indices of {a.buf.name} differ", la, lb)
            if self.k_(self.so, a.value) != self.k_(self.sn, b.value):
                raise Differ(f"stored values of {a.buf.name} differ", la, lb)
        elif isinstance(a, Wait):
            if a.n != b.n:
                raise Differ(f"old wait_group({a.n}) vs new wait_group({b.n})", la, lb)
        elif isinstance(a, (Commit, Barrier)):
            pass
        elif isinstance(a, Fill):
            if self.so.buf(a.buf) is not self.sn.buf(b.buf) or self.k_(self.so, a.value) != self.k_(self.sn, b.value):
                raise Differ("fills differ", la, lb)
        elif isinstance(a, CopyRegion):
            for ra, rb in ((a.src, b.src), (a.dst, b.dst)):
                if self.so.buf(ra.buf) is not self.sn.buf(rb.buf) or tuple(ra.extents) != tuple(rb.extents) or \
                        [self.k_(self.so, x) for x in ra.starts] != [self.k_(self.sn, x) for x in rb.starts]:
                    raise Differ("T.copy regions differ", la, lb)
        elif isinstance(a, Evaluate):
            if self.k_(self.so, a.value) != self.k_(self.sn, b.value):
                raise Differ("evaluated expressions differ", la, lb)
        elif isinstance(a, Opaque):
            if a.construct != b.construct:
                raise Differ(f"old {a.construct} vs new {b.construct}", la, lb)
            self.body(a.body, b.body)
        else:
            raise Differ(f"{type(a).__name__} is not compared", la, lb)


def _compare(ko: Kernel, kn: Kernel, size_of, by_name: bool) -> Match:
    bmap, why = pair_buffers(ko, kn, by_name)
    tags = {}
    for name, tag in ko.thread_vars.items():
        tags.setdefault(tag, name)
    vo = {name: tags[tag] for name, tag in ko.thread_vars.items()}
    vn = {name: tags.get(tag, f"?{tag[0]}.{'xyz'[tag[1]]}") for name, tag in kn.thread_vars.items()}
    so = Side(_pure_lets(ko), vo, {})
    sn = Side(_pure_lets(kn), vn, bmap)
    m = Match(False, old=so, new=sn)
    if why:
        m.reason = why
        return m
    if ko.grid != kn.grid or ko.block != kn.block:
        m.reason = "the launch differs"
        return m
    notes_o, notes_n = [dump for _, dump in ko.notes], [dump for _, dump in kn.notes]
    if notes_o != notes_n:  # T.reads, T.writes, T.func_attr ...: not run by the interpreter, so compared as text
        k = next((i for i, (a, b) in enumerate(zip(notes_o, notes_n)) if a != b), min(len(notes_o), len(notes_n)))
        first = (ko.notes[k] if k < len(ko.notes) else kn.notes[k])[0]
        m.reason = f"the kernels' annotations differ ({first}; not run by the interpreter)"
        return m

    try:
        _Walk(so, sn, m, size_of).body(ko.body, kn.body)
    except Differ as d:
        m.reason, m.old_line, m.new_line = d.what, d.old_line, d.new_line
        m.pairs = []
        m.guarded = {}
        return m
    except RecursionError:
        m.reason = "expression nested too deeply"
        m.pairs = []
        m.guarded = {}
        return m
    m.same = True
    return m


def describe(m: Match) -> str:
    where = []
    if m.old_line:
        where.append(f"old line {m.old_line}")
    if m.new_line:
        where.append(f"new line {m.new_line}")
    return m.reason + (f" ({', '.join(where)})" if where else "")
