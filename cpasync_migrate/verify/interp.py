"""A numpy interpreter for the kernel IR with the exact semantics of cp.async.

Execution model
---------------
* Blocks are independent; a batch of blocks runs at once.  Every thread of
  every block in the batch is one *lane* of a numpy vector, and statements
  run in lockstep over the lanes, with an activity mask for divergent
  control flow.  Lockstep is one legal schedule of threads between
  barriers; a barrier or ``wait_group`` reached by only part of a block is a
  kernel error.  ``T.Parallel`` iterations are dealt round-robin to the
  block's threads.
* Memory is bytes.  Each buffer is a flat ``uint8`` array with one instance
  for global buffers, one per block for shared (and fragment) buffers and one
  per thread for local ones.
* ``cp.async`` copies ``bytes`` bytes from ``&((P_src*)src)[src_off]`` to
  ``&((P_dst*)dst)[dst_off]`` (legacy form: ``P`` is the buffer's element
  type).  The source is read when the copy is issued; the destination is
  written when the ``wait_group`` that retires the copy's group runs in the
  issuing thread (uncommitted copies are never retired).  A false predicate
  copies zeros.  Each ``wait_group`` is followed by a block-wide barrier.
* Kernel errors (raised as :class:`KernelError`): out-of-bounds accesses,
  cp.async widths other than those the generation allows, misaligned
  addresses, a destination in global memory, unequal widths of the two sides under ``num_elems``, reads or
  writes of shared bytes while a cp.async to them is in flight, division by
  zero, divergent barriers.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import KernelError, OverBudget
from .index import Ranges, check as check_index
from .ir import (
    Assign, Barrier, Bin, Buffer, Cast, Cmp, Commit, Const, CopyRegion, CpAsync, Evaluate, Fill, For, If, Kernel,
    Load, Logic, Math, Parallel, Select, Store, Unary, Var, Wait, resolve_extents,
)

MAX_LANES = 1 << 15
# The most loop iterations (and batches of blocks) one run may take: each costs microseconds to tens of
# microseconds, and a kernel's text may ask for any number (for j in T.serial(10**12)).
MAX_STEPS = 1_000_000

NP_DTYPES = {
    "bool": np.bool_, "int8": np.int8, "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16,
    "int32": np.int32, "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64,
    "float16": np.float16, "float32": np.float32, "float64": np.float64,
}


def storage_dtype(dtype: str):
    """numpy dtype that holds the bytes of ``dtype`` (raw for bfloat16/float8)."""
    if dtype in NP_DTYPES:
        return np.dtype(NP_DTYPES[dtype])
    if dtype == "bfloat16":
        return np.dtype(np.uint16)
    return np.dtype(np.uint8)  # float8 variants: raw bytes


def fmt_value(raw: bytes, dtype: str) -> str:
    """``value (0xbits)`` of one element: bfloat16 widened to float32, float8 as its bits only."""
    bits = int.from_bytes(raw, "little")
    hexs = f"0x{bits:0{2 * len(raw)}x}"
    if dtype == "bfloat16":
        v = np.array([bits << 16], dtype=np.uint32).view(np.float32)[0]
        return f"{float(v)!r} ({hexs})"
    if dtype.startswith("float8"):
        return hexs
    v = np.frombuffer(raw, dtype=storage_dtype(dtype))[0]
    return f"{v.item()!r} ({hexs})"


# Binary operators that are one numpy function (the others need care with integer division).
_ELEMENTWISE = {"min": np.minimum, "max": np.maximum, "shl": np.left_shift, "shr": np.right_shift,
                "band": np.bitwise_and, "bor": np.bitwise_or, "bxor": np.bitwise_xor}


def to_value(raw: np.ndarray, dtype: str):
    if dtype == "bfloat16":
        return (raw.astype(np.uint32) << 16).view(np.float32)
    return raw


def from_value(v, dtype: str):
    if dtype == "bfloat16":
        f = np.asarray(v, dtype=np.float32)
        u = f.view(np.uint32).astype(np.uint64)
        rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
        nan = np.isnan(f)
        top = u >> 16
        # a NaN whose payload survives truncation keeps its bits (a bfloat16 value moved through float32 is
        # unchanged, as on the device); one whose payload would vanish is quieted so it stays a NaN
        return np.where(nan, np.where((top & 0x7F) != 0, top, top | 0x40).astype(np.uint16), rounded)
    return np.asarray(v).astype(storage_dtype(dtype), copy=False)


def is_int(v) -> bool:
    if isinstance(v, (bool, np.bool_)):
        return False
    if isinstance(v, (int, np.integer)):
        return True
    return isinstance(v, np.ndarray) and np.issubdtype(v.dtype, np.integer)


@dataclass
class Pending:
    buf: Buffer
    lanes: np.ndarray  # issuing lanes
    group: np.ndarray  # group index of each copy in its lane
    addr: np.ndarray  # [n, nbytes] absolute byte addresses in the destination
    data: np.ndarray  # [n, nbytes]
    line: int


@dataclass
class Stats:
    cp_bytes: int = 0
    store_bytes: int = 0
    load_bytes: int = 0
    lanes: int = 0

    @property
    def bytes(self) -> int:
        return self.cp_bytes + self.store_bytes + self.load_bytes


class Interpreter:
    """Runs one kernel on given global-buffer contents."""

    def __init__(self, kernel: Kernel, rules, generation_widths: dict):
        self.k = kernel
        self.rules = rules
        self.widths = generation_widths  # form -> tuple of allowed widths
        self.stats = Stats()
        self.inv = thread_invariant(kernel)
        self.cache: dict = {}
        # index arithmetic is int32 unless the text makes it wider: the nodes that may leave their type
        self.ranges = Ranges(kernel)
        self.checked = overflow_nodes(kernel, self.ranges)

    # ------------------------------------------------------------------ run
    def run(self, globals_in: dict, fill_byte: int, reverse: bool = False) -> dict:
        k = self.k
        nt = k.nthreads
        if nt <= 0 or k.nblocks <= 0:
            raise KernelError("empty launch")
        self.steps = 0
        self.charge(-(-k.nblocks // max(1, MAX_LANES // nt)), 0)  # the batches of blocks
        self.reverse = reverse
        self.gmem = {b: np.array(globals_in[b.name], dtype=np.uint8, copy=True) for b in k.params}
        per_batch = max(1, MAX_LANES // nt)
        starts = list(range(0, k.nblocks, per_batch))
        if reverse:
            starts.reverse()
        with np.errstate(all="ignore"):
            for s in starts:
                self.run_batch(s, min(k.nblocks, s + per_batch), fill_byte)
        return {b.name: self.gmem[b] for b in k.params}

    def run_batch(self, b0: int, b1: int, fill_byte: int):
        k = self.k
        nt = k.nthreads
        nb = b1 - b0
        L = nb * nt
        self.L, self.nb, self.nt = L, nb, nt
        lane = np.arange(L, dtype=np.int64)
        self.lane_block = lane // nt
        self.lane_thread = lane % nt
        self.stats.lanes += L
        blk = b0 + self.lane_block
        tid = self.lane_thread
        gx, gy, _ = k.grid
        tx, ty, _ = k.block
        idx = {("blockIdx", 0): blk % gx, ("blockIdx", 1): (blk // gx) % gy, ("blockIdx", 2): blk // (gx * gy),
               ("threadIdx", 0): tid % tx, ("threadIdx", 1): (tid // tx) % ty, ("threadIdx", 2): tid // (tx * ty)}
        env = {name: idx[kd] for name, kd in k.thread_vars.items()}
        # memory for this batch
        self.mem = dict(self.gmem)
        self.count = {}
        for b in k.allocs:
            if b.scope == "global" or b.is_shared or b.scope == "local.fragment":
                n = nb
            else:
                n = L
            self.mem[b] = np.full(n * b.nbytes, fill_byte, dtype=np.uint8)
            self.count[b] = n
        for b in k.params:
            self.count[b] = 1
        self.all_lanes = np.arange(L)
        self.views = {}
        self.cache = {}
        self.bases = {b: self._base(b) for b in list(k.allocs) + list(k.params)}
        self.pend_count = {}
        self.pend_bytes = {}
        self.pending: list[Pending] = []
        self.committed = np.zeros(L, dtype=np.int64)
        self.exec_block(k.body, env, None)

    # ------------------------------------------------------------------ helpers
    def base(self, buf: Buffer):
        return self.bases[buf]

    def _base(self, buf: Buffer):
        """Element index of each lane's instance of ``buf`` (0 for global)."""
        n = self.count[buf]
        if n == 1:
            return 0
        if n == self.nb:
            return self.lane_block * buf.numel
        return np.arange(self.L, dtype=np.int64) * buf.numel

    def view(self, buf: Buffer):
        v = self.views.get(buf)
        if v is None:
            v = self.views[buf] = self.mem[buf].view(storage_dtype(buf.dtype))
        return v

    def active(self, mask):
        return self.all_lanes if mask is None else np.nonzero(mask)[0]

    def lanes_of(self, v, sel):
        """Values of ``v`` at lanes ``sel`` (``v`` scalar or per-lane)."""
        if isinstance(v, np.ndarray) and v.ndim == 1 and v.shape[0] == self.L:
            return v[sel]
        return np.broadcast_to(np.asarray(v), sel.shape)

    def check_uniform(self, mask, what: str, line: int):
        if mask is None:
            return
        m = mask.reshape(self.nb, self.nt)
        partial = m.any(axis=1) & ~m.all(axis=1)
        if partial.any():
            raise KernelError(f"{what} reached by only part of a block (divergent control flow)", line)

    def flat(self, buf: Buffer, idx_vals):
        out = None
        for v, dim in zip(idx_vals, buf.shape):
            if type(v) is not int:
                if isinstance(v, np.ndarray) and v.ndim == 0:
                    v = v[()]
                if isinstance(v, np.ndarray):
                    if v.dtype.kind not in "iu":
                        raise KernelError(f"non-integer index into {buf.name}")
                    if v.dtype != np.int64:
                        v = v.astype(np.int64)
                elif isinstance(v, np.integer):
                    v = int(v)
                else:
                    raise KernelError(f"non-integer index into {buf.name}")
            out = v if out is None else out * dim + v
        return out if out is not None else 0

    def address(self, buf: Buffer, flat, mask, line: int, what: str):
        """Absolute element index per lane (or a scalar), after a bounds check on the active lanes."""
        base = self.bases[buf]
        if type(flat) is int:
            if (flat < 0 or flat >= buf.numel) and (mask is None or mask.any()):
                self.oob(buf, flat, None, line, what)
            return base + flat if type(base) is not int else flat
        if flat.shape[0] != self.L:
            raise KernelError(f"index of {buf.name} has an unexpected shape", line)
        fa = flat if mask is None else flat[mask]
        if fa.size and (fa.min() < 0 or fa.max() >= buf.numel):
            self.oob(buf, fa, None, line, what)
        if mask is not None:
            flat = np.where(mask, flat, 0)
        return flat + base

    def check_pending(self, buf: Buffer, elem_abs, sel_len: int, what: str, line: int):
        if self.pend_count.get(buf, 0) <= 0:
            return
        isz = buf.itemsize
        byte0 = np.asarray(elem_abs, dtype=np.int64).reshape(-1) * isz
        addrs = byte0[:, None] + np.arange(isz)
        hit = self.pend_bytes[buf][addrs].any(axis=1)
        if hit.any():
            i = int(np.nonzero(hit)[0][0])
            elem = int(byte0[i] // isz) % buf.numel
            raise KernelError(f"{what} of {buf.name}[{self.unravel(buf, elem)}] while a cp.async to it is still in "
                              f"flight (no wait_group retired it)", line)

    @staticmethod
    def unravel(buf: Buffer, flat: int) -> str:
        if not buf.shape:
            return str(flat)
        return ", ".join(str(int(x)) for x in np.unravel_index(int(flat), buf.shape))

    def oob(self, buf: Buffer, flat, sel, line: int, what: str):
        f = np.asarray(flat)
        bad = (f < 0) | (f >= buf.numel)
        if np.any(bad):
            if f.ndim == 0:
                v = int(f)
            else:
                v = int(f.reshape(-1)[np.nonzero(bad.reshape(-1))[0][0]])
            raise KernelError(f"out-of-bounds {what} of {buf.name}: flat index {v} outside 0..{buf.numel - 1}", line)

    # ------------------------------------------------------------------ statements
    def exec_block(self, body, env, mask):
        for st in body:
            self.exec(st, env, mask)

    def exec(self, st, env, mask):
        t = type(st)
        if t is Store:
            self.store(st, env, mask)
        elif t is For:
            self.exec_for(st, env, mask)
        elif t is Parallel:
            self.exec_parallel(st, env, mask)
        elif t is If:
            c = self.ev(st.cond, env, mask, st.line)
            if not isinstance(c, np.ndarray) or c.ndim == 0:
                self.exec_block(st.then if bool(c) else st.orelse, env, mask)
                return
            c = c.astype(bool)
            m1 = c if mask is None else (mask & c)
            m2 = ~c if mask is None else (mask & ~c)
            if m1.any():
                self.exec_block(st.then, dict(env), m1)
            if st.orelse and m2.any():
                self.exec_block(st.orelse, dict(env), m2)
        elif t is Assign:
            env[st.var] = self.ev(st.value, env, mask, st.line)
        elif t is CpAsync:
            self.cp_async(st, env, mask)
        elif t is Commit:
            sel = self.active(mask)
            self.committed[sel] += 1
        elif t is Wait:
            self.wait(st, mask)
        elif t is Barrier:
            self.check_uniform(mask, "barrier", st.line)
        elif t is Fill:
            self.fill(st, env, mask)
        elif t is CopyRegion:
            self.copy_region(st, env, mask)
        elif t is Evaluate:
            self.ev(st.value, env, mask, st.line)
        else:
            raise KernelError(f"cannot run {t.__name__}")

    def charge(self, n: int, line: int) -> None:
        """Count ``n`` more iterations against :data:`MAX_STEPS`, before they run."""
        self.steps += max(0, int(n))
        if self.steps > MAX_STEPS:
            raise OverBudget(f"the kernel runs more than {MAX_STEPS} loop iterations; not interpreted", line)

    def exec_for(self, st: For, env, mask):
        lo = self.ev(st.start, env, mask, st.line)
        ext = self.ev(st.extent, env, mask, st.line)
        if not isinstance(lo, np.ndarray) and not isinstance(ext, np.ndarray):
            lo, ext = int(lo), int(ext)
            self.charge(ext, st.line)
            for i in range(lo, lo + ext):
                env[st.var] = i
                self.exec_block(st.body, env, mask)
            return
        sel = self.active(mask)
        lo_a = self.lanes_of(lo, sel).astype(np.int64)
        hi_a = lo_a + self.lanes_of(ext, sel).astype(np.int64)
        if sel.size == 0:
            return
        self.charge(int(hi_a.max()) - int(lo_a.min()), st.line)
        lo_full = np.broadcast_to(np.asarray(lo, dtype=np.int64), (self.L,))
        hi_full = lo_full + np.broadcast_to(np.asarray(ext, dtype=np.int64), (self.L,))
        for i in range(int(lo_a.min()), int(hi_a.max())):
            m = (lo_full <= i) & (i < hi_full)
            if mask is not None:
                m = m & mask
            if not m.any():
                continue
            env[st.var] = i
            self.exec_block(st.body, env, m)

    def exec_parallel(self, st: Parallel, env, mask):
        total = 1
        for e in st.extents:
            total *= e
        nt = self.nt
        self.charge((total + nt - 1) // nt, st.line)
        for chunk in range((total + nt - 1) // nt):
            f = chunk * nt + self.lane_thread
            m = f < total
            if mask is not None:
                m = m & mask
            if not m.any():
                continue
            rem = np.where(m, f, 0)
            vals = []
            for e in reversed(st.extents):
                vals.append(rem % e)
                rem = rem // e
            for name, v in zip(st.vars, reversed(vals)):
                env[name] = v
            self.exec_block(st.body, env, None if m.all() else m)

    def store(self, st: Store, env, mask):
        buf = st.buf
        idx = [self.ev(i, env, mask, st.line) for i in st.indices]
        val = self.ev(st.value, env, mask, st.line)
        addr = self.address(buf, self.flat(buf, idx), mask, st.line, "store")
        v = from_value(val, buf.dtype)
        if type(addr) is int:
            if isinstance(v, np.ndarray) and v.ndim:
                act = v if mask is None else v[mask]
                v = act[0] if self.reverse else act[-1]  # the last writer wins
            if self.pend_count.get(buf, 0) > 0:
                self.check_pending(buf, addr, 1, "write", st.line)
            self.view(buf)[addr] = v
            self.stats.store_bytes += buf.itemsize
            return
        if mask is not None:
            addr = addr[mask]
            if isinstance(v, np.ndarray) and v.ndim:
                v = v[mask]
        if self.pend_count.get(buf, 0) > 0:
            self.check_pending(buf, addr, 0, "write", st.line)
        if self.reverse:
            addr = addr[::-1]
            if isinstance(v, np.ndarray) and v.ndim:
                v = v[::-1]
        self.view(buf)[addr] = v
        self.stats.store_bytes += int(addr.shape[0]) * buf.itemsize

    def fill(self, st: Fill, env, mask):
        buf = st.buf
        val = self.ev(st.value, env, mask, st.line)
        if isinstance(val, np.ndarray) and val.ndim:
            raise KernelError("T.fill with a value that differs between threads", st.line)
        v = from_value(val, buf.dtype)
        view = self.view(buf)
        if self.count[buf] == 1:
            raise KernelError(f"T.fill/T.clear of the global buffer {buf.name}", st.line)
        sel = self.active(mask)
        if self.count[buf] == self.nb:
            self.check_uniform(mask, "T.fill", st.line)
            owners = np.unique(self.lane_block[sel])
        else:
            owners = sel
        idx = (owners[:, None] * buf.numel + np.arange(buf.numel)).reshape(-1)
        self.check_pending(buf, idx, idx.size, "write", st.line)
        view[idx] = v
        self.stats.store_bytes += idx.size * buf.itemsize

    def copy_region(self, st: CopyRegion, env, mask):
        src, dst = st.src, st.dst
        for r in (src, dst):
            if r.buf.per_thread:
                raise KernelError(f"T.copy of the per-thread buffer {r.buf.name}", st.line)
        se, de = list(src.extents), list(dst.extents)
        if all(e is None for e in se) and all(e is None for e in de):
            raise KernelError("T.copy without an extent on either side", st.line)
        se, de = resolve_extents(se, de)
        shape_s = [e for e in se if e != 1]
        shape_d = [e for e in de if e != 1]
        if shape_s != shape_d:
            raise KernelError(f"T.copy extents differ: source {se} vs destination {de}", st.line)
        self.check_uniform(mask, "T.copy", st.line)
        sel = self.active(mask)
        if sel.size == 0:
            return
        blocks, first = np.unique(self.lane_block[sel], return_index=True)
        lanes = sel[first]
        n = 1
        for e in shape_s:
            n *= e
        elem = np.arange(n, dtype=np.int64)

        def coords(region, ext):
            out = []
            starts = [self.lanes_of(self.ev(s, env, mask, st.line), lanes).astype(np.int64) for s in region.starts]
            rem = elem
            sub = []
            for e in reversed(ext):
                sub.append(rem % e)
                rem = rem // e
            sub.reverse()
            for s, o, dim in zip(starts, sub, region.buf.shape):
                c = s[:, None] + o[None, :]
                if (c < 0).any() or (c >= dim).any():
                    raise KernelError(f"T.copy out of bounds of {region.buf.name}", st.line)
                out.append(c)
            flat = None
            for c, dim in zip(out, region.buf.shape):
                flat = c if flat is None else flat * dim + c
            return flat

        fs = coords(src, se)
        fd = coords(dst, de)
        bs = self.base(src.buf)
        bd = self.base(dst.buf)
        abs_s = fs + (0 if isinstance(bs, int) else bs[lanes][:, None])
        abs_d = fd + (0 if isinstance(bd, int) else bd[lanes][:, None])
        self.check_pending(src.buf, abs_s, abs_s.size, "read", st.line)
        self.check_pending(dst.buf, abs_d, abs_d.size, "write", st.line)
        v = to_value(self.view(src.buf)[abs_s.reshape(-1)], src.buf.dtype)
        if src.buf.dtype != dst.buf.dtype:
            v = cast_value(v, dst.buf.dtype)
        self.view(dst.buf)[abs_d.reshape(-1)] = from_value(v, dst.buf.dtype)
        self.stats.store_bytes += abs_d.size * dst.buf.itemsize

    # ------------------------------------------------------------------ cp.async
    def cp_async(self, st: CpAsync, env, mask):
        sel = self.active(mask)
        if sel.size == 0:
            return
        ln = st.line
        d, s = st.dst, st.src
        doff = self.lanes_of(self.ev(d.offset, env, mask, ln), sel).astype(np.int64)
        soff = self.lanes_of(self.ev(s.offset, env, mask, ln), sel).astype(np.int64)
        size = self.lanes_of(self.ev(st.size, env, mask, ln), sel).astype(np.int64)
        dsz = self.rules.dtype_size(d.elem_type)
        ssz = self.rules.dtype_size(s.elem_type)
        if st.form == "legacy" or st.size_meaning == "bytes":
            nbytes = size
        else:
            nbytes = size * dsz
            sbytes = size * ssz
            if (nbytes != sbytes).any():
                i = int(np.nonzero(nbytes != sbytes)[0][0])
                raise KernelError(f"cp.async num_elems {int(size[i])} gives {int(nbytes[i])} bytes as {d.elem_type} "
                                  f"but {int(sbytes[i])} bytes as {s.elem_type}", ln)
        widths = self.widths.get(st.form if st.form == "legacy" else st.size_meaning, (4, 8, 16))
        bad = ~np.isin(nbytes, widths)
        if bad.any():
            raise KernelError(f"cp.async of {int(nbytes[np.nonzero(bad)[0][0]])} bytes (allowed: "
                              f"{', '.join(map(str, widths))})", ln)
        if d.buf.param:
            raise KernelError(f"cp.async destination {d.buf.name} is a global buffer", ln)
        if st.predicate is not None:
            p = self.ev(st.predicate, env, mask, ln)
            pred = self.lanes_of(np.asarray(p).astype(bool), sel)
        else:
            pred = np.ones(sel.size, dtype=bool)
        db = doff * dsz
        sb = soff * ssz
        for side, buf, off, chk in (("destination", d.buf, db, np.ones_like(pred)), ("source", s.buf, sb, pred)):
            mis = (off % nbytes) != 0
            if mis.any():
                i = int(np.nonzero(mis)[0][0])
                raise KernelError(f"cp.async {side} address {buf.name}+{int(off[i])} bytes is not aligned to "
                                  f"{int(nbytes[i])} bytes", ln)
            oob = chk & ((off < 0) | (off + nbytes > buf.nbytes))
            if oob.any():
                i = int(np.nonzero(oob)[0][0])
                raise KernelError(f"cp.async {side} out of bounds: bytes {int(off[i])}..{int(off[i] + nbytes[i]) - 1}"
                                  f" of {buf.name} ({buf.nbytes} bytes)", ln)
        dbase = self.base(d.buf)
        dabs = db + (0 if isinstance(dbase, int) else dbase[sel] * d.buf.itemsize)
        sbase = self.base(s.buf)
        sabs = sb + (0 if isinstance(sbase, int) else sbase[sel] * s.buf.itemsize)
        for w in np.unique(nbytes):
            part = nbytes == w
            w = int(w)
            rng = np.arange(w)
            da = dabs[part][:, None] + rng
            pr = pred[part]
            sa = np.where(pr, sabs[part], 0)[:, None] + rng
            data = self.mem[s.buf][sa]
            data[~pr] = 0
            lanes = sel[part]
            self.pending.append(Pending(d.buf, lanes, self.committed[lanes].copy(), da, data, ln))
            if d.buf not in self.pend_bytes:
                self.pend_bytes[d.buf] = np.zeros(self.mem[d.buf].size, dtype=np.int32)
            np.add.at(self.pend_bytes[d.buf], da.reshape(-1), 1)
            self.pend_count[d.buf] = self.pend_count.get(d.buf, 0) + da.size
            self.stats.cp_bytes += da.size

    def wait(self, st: Wait, mask):
        self.check_uniform(mask, "wait_group", st.line)
        keep = []
        act = np.ones(self.L, dtype=bool) if mask is None else mask
        for p in self.pending:
            done = (p.group < self.committed[p.lanes] - st.n) & act[p.lanes]
            if not done.any():
                keep.append(p)
                continue
            addr = p.addr[done]
            self.mem[p.buf][addr.reshape(-1)] = p.data[done].reshape(-1)
            np.subtract.at(self.pend_bytes[p.buf], addr.reshape(-1), 1)
            self.pend_count[p.buf] -= addr.size
            if not done.all():
                nd = ~done
                keep.append(Pending(p.buf, p.lanes[nd], p.group[nd], p.addr[nd], p.data[nd], p.line))
        self.pending = keep
        # TileLang places a block barrier after each wait_group; lockstep already orders it.

    # ------------------------------------------------------------------ expressions
    def ev(self, e, env, mask, line=0):
        t = type(e)
        if t is Const:
            return e.value
        if t is Var:
            try:
                return env[e.name]
            except KeyError:
                raise KernelError(f"variable {e.name} used outside its scope", line) from None
        if t is Bin:
            key = id(e)
            if key in self.inv:
                v = self.cache.get(key)
                if v is None:
                    v = self.binop(e.op, self.ev(e.a, env, None, line), self.ev(e.b, env, None, line), None, line)
                    if key in self.checked:
                        v = check_index(e, v, self.ranges, line)
                    self.cache[key] = v
                return v
            a = self.ev(e.a, env, mask, line)
            b = self.ev(e.b, env, mask, line)
            if key in self.checked:
                return check_index(e, self.masked(self.binop(e.op, a, b, mask, line), mask), self.ranges, line)
            return self.binop(e.op, a, b, mask, line)
        if t is Load:
            return self.load(e, env, mask, line)
        if t is Cmp:
            a = self.ev(e.a, env, mask, line)
            b = self.ev(e.b, env, mask, line)
            op = e.op
            if op == "lt":
                return np.less(a, b)
            if op == "le":
                return np.less_equal(a, b)
            if op == "gt":
                return np.greater(a, b)
            if op == "ge":
                return np.greater_equal(a, b)
            if op == "eq":
                return np.equal(a, b)
            return np.not_equal(a, b)
        if t is Logic:
            a = np.asarray(self.ev(e.a, env, mask, line)).astype(bool)
            if e.op == "and":
                if a.ndim == 0:
                    return np.asarray(self.ev(e.b, env, mask, line)).astype(bool) if a else np.False_
                m = a if mask is None else (mask & a)
                b = np.asarray(self.ev(e.b, env, m, line)).astype(bool)
                return a & b
            if a.ndim == 0:
                return np.True_ if a else np.asarray(self.ev(e.b, env, mask, line)).astype(bool)
            m = ~a if mask is None else (mask & ~a)
            b = np.asarray(self.ev(e.b, env, m, line)).astype(bool)
            return a | b
        if t is Select:
            c = np.asarray(self.ev(e.cond, env, mask, line)).astype(bool)
            if c.ndim == 0:
                return self.ev(e.a if c else e.b, env, mask, line)
            m1 = c if mask is None else (mask & c)
            m2 = ~c if mask is None else (mask & ~c)
            a = self.ev(e.a, env, m1, line) if m1.any() else 0
            b = self.ev(e.b, env, m2, line) if m2.any() else 0
            return np.where(c, a, b)
        if t is Unary:
            a = self.ev(e.a, env, mask, line)
            if e.op == "neg":
                if id(e) in self.checked:
                    return check_index(e, self.masked(np.negative(a), mask), self.ranges, line)
                return np.negative(a)
            if e.op == "not":
                return np.logical_not(a)
            return np.invert(a)
        if t is Cast:
            return cast_value(self.ev(e.a, env, mask, line), e.dtype)
        if t is Math:
            args = [self.ev(a, env, mask, line) for a in e.args]
            return math_fn(e.fn, args)
        raise KernelError(f"cannot evaluate {t.__name__}", line)

    def masked(self, v, mask):
        """``v`` with inactive lanes zeroed (their values are never used; they must not count as overflow)."""
        if mask is None or not isinstance(v, np.ndarray) or v.ndim == 0 or v.shape[0] != self.L:
            return v
        return np.where(mask, v, 0)

    @staticmethod
    def binop(op, a, b, mask, line):
        if op == "add":
            return a + b
        if op == "mul":
            return a * b
        if op == "sub":
            return a - b
        ints = is_int(a) and is_int(b)
        if op in ("fdiv", "fmod", "tdiv", "tmod", "div") and ints:
            bz = np.asarray(b) == 0
            if bz.any():
                act = bz if mask is None or bz.ndim == 0 else (bz & mask)
                if np.any(act):
                    raise KernelError("integer division by zero", line)
                b = np.where(bz, 1, b)
            if op == "fdiv":
                return np.floor_divide(a, b)
            if op == "fmod":
                return np.remainder(a, b)
            q = np.floor_divide(np.abs(a), np.abs(b)) * np.sign(a) * np.sign(b)
            if op in ("tdiv", "div"):
                return q
            return np.subtract(a, np.multiply(q, b))
        if op == "div":
            return np.true_divide(a, b)
        if op == "fdiv":
            return np.floor(np.true_divide(a, b))
        if op == "fmod":
            return np.subtract(a, np.multiply(np.floor(np.true_divide(a, b)), b))
        fn = _ELEMENTWISE.get(op)
        if fn is None:
            raise KernelError(f"operator {op}", line)
        return fn(a, b)

    def load(self, e: Load, env, mask, line):
        buf = e.buf
        addr = self.address(buf, self.flat(buf, [self.ev(i, env, mask, line) for i in e.indices]), mask, line, "load")
        if self.pend_count.get(buf, 0) > 0:
            a = addr if type(addr) is int or mask is None else addr[mask]
            self.check_pending(buf, a, 0, "read", line)
        self.stats.load_bytes += buf.itemsize * (1 if type(addr) is int else addr.shape[0])
        v = self.view(buf)[addr]
        return to_value(v, buf.dtype) if buf.dtype == "bfloat16" else v


def stmt_exprs(body):
    from .ir import Opaque
    for st in body:
        t = type(st)
        if t is Store:
            yield from st.indices
            yield st.value
        elif t is For:
            yield st.start
            yield st.extent
            yield from stmt_exprs(st.body)
        elif t is Parallel:
            yield from stmt_exprs(st.body)
        elif t is If:
            yield st.cond
            yield from stmt_exprs(st.then)
            yield from stmt_exprs(st.orelse)
        elif t in (Assign, Evaluate):
            yield st.value
        elif t is Fill:
            yield st.value
        elif t is CpAsync:
            for p in (st.dst, st.src):
                yield p.offset
            yield st.size
            if st.predicate is not None:
                yield st.predicate
        elif t is CopyRegion:
            yield from st.src.starts
            yield from st.dst.starts
        elif t is Opaque:
            yield from stmt_exprs(st.body)


def thread_invariant(k: Kernel) -> set:
    """ids of integer Bin nodes that depend on thread/block indices only (computed once per batch)."""
    tv = set(k.thread_vars)
    out: set = set()

    def visit(e):
        # returns True when e is a function of thread/block indices and constants only
        t = type(e)
        if t is Const:
            return isinstance(e.value, int) and not isinstance(e.value, bool)
        if t is Var:
            return e.name in tv
        if t is Bin:
            a, b = visit(e.a), visit(e.b)
            ok = a and b and e.op in ("add", "sub", "mul", "fdiv", "fmod", "shl", "shr", "band", "bor", "bxor",
                                      "min", "max")
            if ok and e.op in ("fdiv", "fmod") and not (isinstance(e.b, Const) and e.b.value):
                ok = False
            if ok and (type(e.a) is not Const or type(e.b) is not Const):
                out.add(id(e))
            return ok
        for sub in _children(e):
            visit(sub)
        return False

    for e in stmt_exprs(k.body):
        visit(e)
    return out


def overflow_nodes(k: Kernel, ranges: Ranges) -> set:
    """ids of the integer nodes of ``k`` that may leave their type (checked, or wrapped, as they run)."""
    out: set = set()
    seen: set = set()
    stack = list(stmt_exprs(k.body))
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if type(e) in (Bin, Unary) and (ranges.may_overflow(e) or ranges.wraps(e)):
            out.add(id(e))
        stack.extend(_children(e))
    return out


def _children(e):
    t = type(e)
    if t in (Bin, Cmp, Logic):
        return (e.a, e.b)
    if t in (Unary, Cast):
        return (e.a,)
    if t is Select:
        return (e.cond, e.a, e.b)
    if t is Load:
        return e.indices
    if t is Math:
        return e.args
    return ()


def cast_value(v, dtype: str):
    if dtype == "bfloat16":
        return to_value(from_value(np.asarray(v, dtype=np.float32), "bfloat16"), "bfloat16")
    if dtype in NP_DTYPES:
        return np.asarray(v).astype(NP_DTYPES[dtype])
    return np.asarray(v).astype(np.uint8)


def math_fn(fn: str, args):
    a = args[0]
    if is_int(a) and fn not in ("abs",):
        a = np.asarray(a, dtype=np.float32)
    if fn == "exp":
        return np.exp(a)
    if fn == "exp2":
        return np.exp2(a)
    if fn == "log":
        return np.log(a)
    if fn == "log2":
        return np.log2(a)
    if fn == "sqrt":
        return np.sqrt(a)
    if fn == "rsqrt":
        return 1 / np.sqrt(a)
    if fn in ("abs", "fabs"):
        return np.abs(a)
    if fn == "sin":
        return np.sin(a)
    if fn == "cos":
        return np.cos(a)
    if fn == "tanh":
        return np.tanh(a)
    if fn == "floor":
        return np.floor(a)
    if fn == "ceil":
        return np.ceil(a)
    if fn == "round":
        return np.rint(a)
    if fn == "trunc":
        return np.trunc(a)
    if fn == "sigmoid":
        return 1 / (1 + np.exp(-a))
    raise KernelError(f"math function {fn}")


# ---------------------------------------------------------------------- inputs
SPECIAL_F16 = [0x0000, 0x8000, 0x7C00, 0xFC00]
SPECIAL_F32 = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000]
SPECIAL_F64 = [0x0, 0x8000000000000000, 0x7FF0000000000000, 0xFFF0000000000000]


def random_bytes(buf: Buffer, rng: np.random.Generator) -> np.ndarray:
    """Random contents for ``buf``: normal values for floats, sprinkled with
    NaN payloads, signed zeros and infinities; small non-negative integers for
    wide integer types (so index tables stay in range); all bytes for 8-bit
    types."""
    n = buf.numel
    dt = buf.dtype
    if dt in ("float16", "float32", "float64", "bfloat16"):
        vals = rng.standard_normal(n) * 4
        if dt == "bfloat16":
            raw = from_value(vals.astype(np.float32), "bfloat16")
            bits, exp_mask, mant_bits = np.uint16, 0x7F80, 7
            specials = [0x0000, 0x8000, 0x7F80, 0xFF80]
        elif dt == "float16":
            raw = vals.astype(np.float16).view(np.uint16)
            bits, exp_mask, mant_bits = np.uint16, 0x7C00, 10
            specials = SPECIAL_F16
        elif dt == "float32":
            raw = vals.astype(np.float32).view(np.uint32)
            bits, exp_mask, mant_bits = np.uint32, 0x7F800000, 23
            specials = SPECIAL_F32
        else:
            raw = vals.astype(np.float64).view(np.uint64)
            bits, exp_mask, mant_bits = np.uint64, 0x7FF0000000000000, 52
            specials = SPECIAL_F64
        raw = raw.astype(bits).copy()
        k = max(1, n // 16)
        pos = rng.choice(n, size=min(n, k), replace=False)
        kind = rng.integers(0, 3, size=pos.size)
        payload = rng.integers(1, 1 << min(mant_bits, 30), size=pos.size).astype(bits)
        sign = (rng.integers(0, 2, size=pos.size).astype(bits) << bits(8 * np.dtype(bits).itemsize - 1))
        nan = (bits(exp_mask) | payload | sign).astype(bits)
        spec = np.array(specials, dtype=bits)[rng.integers(0, len(specials), size=pos.size)]
        raw[pos] = np.where(kind == 0, nan, spec)
        return raw.view(np.uint8).copy()
    if dt == "bool":
        return rng.integers(0, 2, size=n).astype(np.uint8)
    sd = storage_dtype(dt)
    if sd.itemsize == 1:
        return rng.integers(0, 256, size=n).astype(np.uint8)
    return rng.integers(0, 1024, size=n).astype(sd).view(np.uint8).copy()
