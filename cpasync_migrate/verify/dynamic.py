"""Run the old and new kernels on the same inputs and compare bit for bit."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .errors import IndexOverflow
from .interp import Interpreter, KernelError, fmt_value, random_bytes
from .ir import CopyRegion, Fill, Kernel, Store, walk_stmts

SENTINELS = (0xA5, 0xFF)  # two byte patterns for outputs and on-chip memory


@dataclass
class DynResult:
    verdict: str  # equivalent | mismatch | inconclusive
    reason: str
    detail: dict = field(default_factory=dict)
    runs: int = 0
    bytes: int = 0


def written_params(k: Kernel) -> set:
    out = set()
    for st in walk_stmts(k.body):
        if isinstance(st, Store) and st.buf.param:
            out.add(st.buf.name)
        elif isinstance(st, CopyRegion) and st.dst.buf.param:
            out.add(st.dst.buf.name)
        elif isinstance(st, Fill) and st.buf.param:
            out.add(st.buf.name)
    return out


def signature(k: Kernel):
    return [(b.name, b.shape, b.dtype) for b in k.params]


def first_difference(k: Kernel, a: dict, b: dict) -> Optional[dict]:
    for buf in k.params:
        x, y = a[buf.name], b[buf.name]
        if np.array_equal(x, y):
            continue
        diff = np.nonzero(x != y)[0]
        isz = buf.itemsize
        elem = int(diff[0]) // isz
        idx = tuple(int(i) for i in np.unravel_index(elem, buf.shape)) if buf.shape else (elem,)
        return {
            "buffer": buf.name,
            "index": list(idx),
            "old": fmt_value(bytes(x[elem * isz:(elem + 1) * isz]), buf.dtype),
            "new": fmt_value(bytes(y[elem * isz:(elem + 1) * isz]), buf.dtype),
            "differing_elements": int(len(np.unique(diff // isz))),
        }
    return None


def run_pair(old: Kernel, new: Kernel, rules, widths: dict, seeds: int = 3) -> DynResult:
    """Both kernels on the same inputs: equivalent, mismatch or inconclusive (see docs/verify.md)."""
    try:
        return _run_pair(old, new, rules, widths, seeds)
    except IndexOverflow as e:
        return DynResult("inconclusive", f"cannot run the kernel: {e}", {"index_overflow": str(e)})


def _form(form: str, run, *args, **kw):
    try:
        return run(*args, **kw)
    except IndexOverflow as e:
        raise IndexOverflow(f"{form} form, {e}") from None


def _run_pair(old: Kernel, new: Kernel, rules, widths: dict, seeds: int = 3) -> DynResult:
    if signature(old) != signature(new):
        return DynResult("mismatch", f"parameters differ: {signature(old)} vs {signature(new)}")
    if old.grid != new.grid or old.block != new.block:
        return DynResult("mismatch", f"launch differs: grid {old.grid} block {old.block} vs grid {new.grid} "
                                     f"block {new.block}")
    outs = written_params(old)
    io = Interpreter(old, rules, widths)
    inew = Interpreter(new, rules, widths)
    runs = 0
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        inputs = {b.name: random_bytes(b, rng) for b in old.params}
        for si, sentinel in enumerate(SENTINELS):
            data = {n: (np.full(v.size, sentinel, dtype=np.uint8) if n in outs else v) for n, v in inputs.items()}
            ctx = {"seed": seed, "sentinel": f"0x{sentinel:02x}"}
            try:
                o1 = _form("old", io.run, data, sentinel)
                runs += 1
                if si == 0:
                    o2 = _form("old", io.run, data, sentinel, reverse=True)
                    runs += 1
                    d = first_difference(old, o1, o2)
                    if d:
                        d.update(ctx)
                        return DynResult("inconclusive",
                                         f"the old form is not deterministic: {d['buffer']}{d['index']} is "
                                         f"{d['old']} or {d['new']} depending on thread order (seed {seed})",
                                         {"nondeterministic": d}, runs, io.stats.bytes + inew.stats.bytes)
            except IndexOverflow:
                raise
            except KernelError as e:
                return DynResult("inconclusive", f"the old form fails: {e}", {"old_error": str(e), **ctx}, runs,
                                 io.stats.bytes + inew.stats.bytes)
            try:
                n1 = _form("new", inew.run, data, sentinel)
                runs += 1
            except IndexOverflow:
                raise
            except KernelError as e:
                return DynResult("mismatch", f"the new form fails where the old one runs: {e} (seed {seed})",
                                 {"new_error": str(e), "line": e.line, **ctx}, runs, io.stats.bytes + inew.stats.bytes)
            d = first_difference(old, o1, n1)
            if d:
                d.update(ctx)
                return DynResult("mismatch",
                                 f"{d['buffer']}{d['index']}: old {d['old']}, new {d['new']} (seed {seed}, "
                                 f"sentinel {ctx['sentinel']}, {d['differing_elements']} elements differ)",
                                 {"first_difference": d}, runs, io.stats.bytes + inew.stats.bytes)
    return DynResult("equivalent", f"outputs equal bit for bit over {seeds} seeds x {len(SENTINELS)} sentinels",
                     {"seeds": seeds, "runs": runs}, runs, io.stats.bytes + inew.stats.bytes)
