"""Which legacy cp.async destinations TileLang 0.1.7.post1 places in merged shared memory.

One job: decide, for every legacy-form site of a kernel, in which element type
its destination offset counts, as TileLang 0.1.7.post1's
``MergeSharedMemoryAllocations`` (src/transform/merge_shared_memory_allocations.cc)
reads it, and name every reading the text leaves open.

The pass (``tl::MergeSharedMemoryAllocations``) merges the ``shared.dyn``
allocations of a kernel into one byte buffer when there are more than one of
them, and the static ``shared`` ones only under the pass config
``tir.merge_static_smem`` (default false) when there are more than one of
those.  In a merged kernel, ``SharedMemoryRewriter::VisitExpr_`` rewrites a
legacy ``ptx_cp_async`` whose destination is one of the merged buffers to
``merged + (byte_offset / sizeof(C) + dst_offset) * sizeof(C)`` with ``C`` the
call's dtype (``op->dtype``): the offset counts elements of the call's dtype.
Otherwise the legacy destination is ``S + dst_offset`` in S's element type.
The source is global and never merged.  An access pointer
(``tvm_access_ptr(type_annotation(P), data, off, ...)``) is rebased in units of
``P`` and keeps its address, merged or not.

Allocations are counted as the pass sees them: one per allocation statement
of the built kernel (an inlined ``T.macro`` contributes its allocations once
per call; loops do not multiply).  Allocations the kernel never touches are
not counted: ``PlanAndUpdateBufferAllocationLocation`` drops buffers without an
access before the merge pass (checked with real TileLang 0.1.7.post1: a second,
unused ``alloc_shared`` leaves the first unmerged).  ``T.alloc_shared`` of
dtype ``bool`` is forced to scope ``shared`` by TileLang
(tilelang/language/allocate.py); the builder applies that.

Readings left open by the text:

* a statement outside the modelled subset: tile operators such as reductions
  (``src/op/reduce.cc``, ``src/op/finalize_reducer.cc``: ``AddWorkspace``, which
  ``LowerTileOp`` turns into a ``shared.dyn`` buffer named ``workspace``) add
  allocations during lowering, so one counted ``shared.dyn`` buffer may become
  two;
* two or more static ``shared`` allocations: ``tir.merge_static_smem`` is a
  pass config the text does not decide (a kernel may be compiled with it).

Each open question doubles the readings; a site's verdict holds only when it
holds under every reading.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product
from typing import Optional

from .ir import (
    CopyRegion, CpAsync, Fill, Kernel, Load, Opaque, Store, walk_expr, walk_stmts, For, If, Assign,
    Evaluate, Const, Parallel,
)


@dataclass
class Reading:
    """One way the compiler may lay out a kernel's shared memory."""

    merged_dyn: bool
    merged_static: bool
    label: str

    def merged(self, scope: str) -> bool:
        return self.merged_dyn if scope == "shared.dyn" else (self.merged_static if scope == "shared" else False)


@dataclass
class MergePlan:
    dyn: list = field(default_factory=list)  # names of counted shared.dyn allocations
    static: list = field(default_factory=list)  # names of counted static shared allocations
    readings: list = field(default_factory=list)  # [Reading]; one when the text decides everything
    open: list = field(default_factory=list)  # why there is more than one reading
    unknown_dtype: list = field(default_factory=list)  # lines of legacy sites whose call dtype is unknown

    def describe(self) -> dict:
        return {"shared_dyn": self.dyn, "shared_static": self.static,
                "readings": [r.label for r in self.readings], "open": self.open}


def _exprs_of(st):
    if isinstance(st, Store):
        yield from st.indices
        yield st.value
    elif isinstance(st, CpAsync):
        for p in (st.dst, st.src):
            yield p.offset
        yield st.size
        if st.predicate is not None:
            yield st.predicate
    elif isinstance(st, (For,)):
        yield st.start
        yield st.extent
    elif isinstance(st, If):
        yield st.cond
    elif isinstance(st, (Assign, Evaluate)):
        yield st.value
    elif isinstance(st, Fill):
        yield st.value
    elif isinstance(st, CopyRegion):
        yield from st.src.starts
        yield from st.dst.starts


def touched(k: Kernel, body=None) -> set:
    """Buffers the kernel (or the statements ``body``) reads or writes (by object identity)."""
    out = set()
    for st in walk_stmts(k.body if body is None else body):
        if isinstance(st, Store):
            out.add(id(st.buf))
        elif isinstance(st, CpAsync):
            out.add(id(st.dst.buf))
            out.add(id(st.src.buf))
        elif isinstance(st, Fill):
            out.add(id(st.buf))
        elif isinstance(st, CopyRegion):
            out.add(id(st.src.buf))
            out.add(id(st.dst.buf))
        for e in _exprs_of(st):
            for x in walk_expr(e):
                if isinstance(x, Load):
                    out.add(id(x.buf))
    return out


def _surely_run(body) -> list:
    """The statements of ``body`` that run whatever the inputs: none under an ``if``, a loop whose extent is not a
    positive constant, or a statement outside the modelled subset (whether lowering keeps an allocation used only
    in code that never runs is not modelled)."""
    out = []
    for st in body:
        if isinstance(st, For):
            if isinstance(st.extent, Const) and st.extent.value > 0:
                out.append(For(st.var, st.start, st.extent, st.kind, _surely_run(st.body), st.line, st.params))
        elif isinstance(st, Parallel):
            if all(isinstance(e, int) and e > 0 for e in st.extents):
                out.append(Parallel(st.vars, st.extents, _surely_run(st.body), st.line))
        elif not isinstance(st, (If, Opaque)):
            out.append(st)
    return out


def plan(k: Kernel, rules) -> MergePlan:
    p = MergePlan()
    used = touched(k)
    surely = touched(k, _surely_run(k.body))
    opaque = any(isinstance(st, Opaque) for st in walk_stmts(k.body))
    for b in k.allocs:
        if b.param or id(b) not in used:
            continue
        if b.scope == "shared.dyn":
            p.dyn.append(b.name)
        elif b.scope == "shared":
            p.static.append(b.name)
    dyn_options = [len(p.dyn) > 1]
    sure = [b for b in k.allocs if not b.param and b.scope == "shared.dyn" and id(b) in surely]
    if (len(sure) > 1) != (len(p.dyn) > 1):
        dyn_options = [False, True]
        p.open.append(f"{', '.join(b.name for b in k.allocs if b.name in p.dyn and id(b) not in surely)} is used only "
                      "in code that may not run (under an if, or a loop that may run no iteration), and whether "
                      "lowering still counts it among the shared.dyn allocations it merges is not modelled")
    if len(p.dyn) == 1 and opaque:
        dyn_options = [False, True]
        p.open.append("a statement outside the modelled subset may add a shared.dyn allocation during lowering "
                      "(tile operators such as reductions add a shared.dyn workspace), which would merge "
                      f"{p.dyn[0]} with it")
    static_options = [False]
    if len(p.static) > 1:
        static_options = [False, True]
        p.open.append(f"{len(p.static)} static shared allocations ({', '.join(p.static)}) are merged only under the "
                      "pass config tir.merge_static_smem, which the text does not decide")
    for d, s in product(dyn_options, static_options):
        parts = []
        if len(p.dyn) >= 1:
            parts.append("shared.dyn merged" if d else "shared.dyn not merged")
        if len(p.static) > 1:
            parts.append("tir.merge_static_smem on" if s else "tir.merge_static_smem off")
        p.readings.append(Reading(d, s, ", ".join(parts) or "no shared memory merged"))
    for site in k.sites:
        if not isinstance(site, CpAsync) or site.form != "legacy":
            continue
        b = site.dst.buf
        if any(r.merged(b.scope) for r in p.readings):
            if site.legacy_dtype is None:
                p.unknown_dtype.append(site.line)
    return p


def distinct_readings(k: Kernel, p: MergePlan) -> list:
    """The readings that give some legacy site a different element type (always at least one)."""
    seen, out = set(), []
    for r in p.readings:
        sig = tuple(_merged_type(s, r) for s in k.sites if isinstance(s, CpAsync) and s.form == "legacy")
        if sig not in seen:
            seen.add(sig)
            out.append(r)
    return out or [Reading(False, False, "no shared memory merged")]


def _merged_type(site: CpAsync, r: Reading) -> Optional[str]:
    b = site.dst.buf
    if r.merged(b.scope) and site.legacy_dtype is not None and site.legacy_dtype != b.dtype:
        return site.legacy_dtype
    return None


def apply(k: Kernel, r: Reading) -> None:
    """Set the merged element type of every legacy destination of ``k`` under reading ``r``."""
    for s in k.sites:
        if isinstance(s, CpAsync) and s.form == "legacy":
            s.dst.merged = _merged_type(s, r)
            s.dst.merged_unknown = r.merged(s.dst.buf.scope) and s.legacy_dtype is None


def default_reading(p: MergePlan) -> Reading:
    """The reading of the default pass configuration with the text's own allocations."""
    for r in p.readings:
        if not r.merged_static and r.merged_dyn == (len(p.dyn) > 1):
            return r
    return p.readings[0]
