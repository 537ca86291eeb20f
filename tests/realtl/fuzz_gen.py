"""A seeded generator of small legacy TileLang kernels and candidate migrations of them.

Pure Python (``random.Random(seed)``); nothing here imports TileLang or the tool.
``generate(seed, count)`` gives ``Case`` objects: one module of legacy text
(0.1.7.post1's six-argument ``T.ptx_cp_async``), the target it is migrated for
(``0.1.8`` or ``0.1.9``), and candidate new texts written by the generator from the
same description:

- ``hand``: the migration docs/design.md's rules give (pointer type: the buffer's element
  type, or the call's dtype for a destination in merged dynamic shared memory; under
  0.1.9 one common pointer type and ``num_elems``);
- mutants of it: ``wrong_ptype``, ``scaled_offset``, ``swapped_buffers``,
  ``dropped_predicate``, ``wrong_size``, ``off_by_one``, ``rebinding`` (a module
  constant the kernel reads bound again after the kernel).

Whether a candidate is right is not decided here: real lowering says
(tests/realtl/fuzz_truth.py).  The dimensions drawn: dtypes of buffers and calls,
number and kinds of shared allocations (``T.alloc_shared`` / ``T.decl_buffer`` /
``T.alloc_buffer``, scope positional, keyword or default, ``shared`` or ``shared.dyn``),
macros (nested, keyword calls, defined before or after their use), factories with
parameters and module-level calls, offsets (affine in thread and block indices, shifts,
floormod/floordiv, constants near the int32 limit), ``if`` guards, widths of 4, 8 and
16 bytes.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass, field, replace

DTYPES = ["float16", "float32", "int8", "uint8", "bfloat16"]
SIZEOF = {"float16": 2, "float32": 4, "int8": 1, "uint8": 1, "bfloat16": 2}
MUTANTS = ["wrong_ptype", "scaled_offset", "swapped_buffers", "dropped_predicate", "wrong_size", "off_by_one",
           "rebinding"]
# The wide families' candidates: other spellings of the hand migration (right by design.md's rules, which real
# lowering may still refute) and one perturbation per argument of the access-pointer form or per evaluation rule.
VARIANTS = ["keyword_order", "pred_kept", "peeled"]
WIDE_MUTANTS = ["off_by_minus_one", "wrong_extent", "wrong_rw", "swapped_ptrs", "keyword_swapped",
                "negated_predicate", "guard_to_predicate", "widened", "reassoc", "div_kind", "inline_first",
                "inline_last", "bad_peel", "offset_extent_swapped", "src_ptype"]
WIDE_KINDS = MUTANTS + VARIANTS + WIDE_MUTANTS


@dataclass(frozen=True)
class Alloc:
    name: str
    dtype: str
    elems: int
    kind: str  # alloc_shared | decl_buffer | alloc_buffer
    scope: str  # shared | shared.dyn
    style: str  # default | positional | keyword

    @property
    def dynamic(self) -> bool:
        return self.scope == "shared.dyn"

    def text(self) -> str:
        shape = f"({self.elems},)"
        if self.kind == "alloc_shared":
            if self.style == "default":
                return f'T.alloc_shared({shape}, "{self.dtype}")'
            if self.style == "positional":
                return f'T.alloc_shared({shape}, "{self.dtype}", "{self.scope}")'
            return f'T.alloc_shared({shape}, "{self.dtype}", scope="{self.scope}")'
        return f'T.{self.kind}({shape}, "{self.dtype}", scope="{self.scope}")'


@dataclass(frozen=True)
class Site:
    dst: int  # index into the kernel's allocations
    src: int  # index into the global inputs
    call_dtype: str
    nbytes: int
    dst_form: str  # how the destination offset is spelled (see _offset)
    src_form: str
    guard: str | None  # an `if` condition around the call, or None
    slot: str = "0"  # "0", "1" (a second copy into the same tile, 16 bytes per thread further) or "j" (a loop)


@dataclass(frozen=True)
class Spec:
    seed: int
    target: str
    blocks: tuple[int, ...]
    threads: int
    inputs: tuple[str, ...]  # dtypes of A0, A1, ...
    allocs: tuple[Alloc, ...]
    sites: tuple[Site, ...]
    macro: str  # none | plain | keyword | nested
    macro_after: bool  # the macro is defined below its use (factories only)
    factory: bool
    module_call: bool  # the factory is also called at module level
    const: bool  # the destination stride is the module constant K
    extra: bool = False  # the last site sits under the factory's bool parameter `extra` (the module passes True)
    rebind_early: bool = False  # a rebinding of K comes before the module-level call, not after it
    # the wide families (``generate(..., wide=True)``); their defaults give the first generator's texts
    elem_offsets: tuple[int, ...] = ()  # per input: T.match_buffer(..., elem_offset=k) when non-empty
    rebind_slot: str | None = None  # the legacy module binds K again: after_const | before_kernel | after_kernel | end
    macro_default: bool = False  # the macros take the stride as a default argument ``kk=K``
    candidate_kinds: tuple[str, ...] = ()  # the variants and mutants drawn for this kernel (wide only)


@dataclass
class Case:
    name: str
    spec: Spec
    legacy: str
    candidates: dict[str, str] = field(default_factory=dict)

    @property
    def target(self) -> str:
        return self.spec.target

    def live_tiles(self, kernel: str) -> set[str]:
        """The tiles the copies of one lowered kernel write (lower.py's kernel names: ``main``,
        ``kernel`` for the module-level call, ``make()`` for the factory at its defaults, where
        the site under ``extra`` is not built)."""
        sites = list(self.spec.sites)
        if self.spec.extra and kernel == "make()":
            sites = sites[:-1]
        return {self.spec.allocs[s.dst].name for s in sites}


# ---------------------------------------------------------------- reading rules

def merged(spec: Spec) -> bool:
    """TileLang 0.1.7.post1 merges the used shared.dyn allocations when there is more than one."""
    return sum(a.dynamic for a in spec.allocs) > 1


def legacy_units(spec: Spec, site: Site) -> tuple[int, int]:
    """Bytes per unit of the legacy destination and source offsets."""
    dst = spec.allocs[site.dst]
    d = SIZEOF[site.call_dtype] if merged(spec) and dst.dynamic else SIZEOF[dst.dtype]
    return d, SIZEOF[spec.inputs[site.src]]


def elem_stride(unit: int, nbytes: int) -> int:
    return max(1, nbytes // unit)


# ---------------------------------------------------------------- the generator

def _pick_alloc(rng: random.Random, k: int, threads: int) -> Alloc:
    dtype = rng.choice(DTYPES)
    kind = rng.choices(["alloc_shared", "decl_buffer", "alloc_buffer"], [7, 1, 2])[0]
    scope = rng.choice(["shared", "shared.dyn"])
    if kind == "alloc_shared":
        style = rng.choice(["default", "positional", "keyword"])
        if style == "default":
            scope = "shared.dyn"
    else:
        style = "keyword"
        if kind == "decl_buffer":
            # 0.1.7.post1 prints a static decl_buffer without a name (`__shared__ float [2048];`)
            scope = "shared.dyn"
    # 64 bytes per thread: room for every width and both readings of the offset
    return Alloc(f"S{k}", dtype, threads * 64 // SIZEOF[dtype], kind, scope, style)


DST_FORMS = ["affine", "shift", "floormod", "pymod", "overflow_shift", "big_const", "plus_block"]
SRC_FORMS = ["affine", "shift", "floormod", "grid2", "big_const", "overflow_mul"]
# wide only: int64-annotated products, a floordiv of a negative operand, a left shift that wraps
WIDE_DST_FORMS = DST_FORMS + ["int64_shift", "negdiv", "truncdiv"]
WIDE_SRC_FORMS = SRC_FORMS + ["int64_mul", "shift_wrap"]


def _pick_alloc_wide(rng: random.Random, k: int, threads: int) -> Alloc:
    """Positional and default scopes, static and dynamic, drawn so that 1..4 dynamic tiles occur."""
    dtype = rng.choice(DTYPES)
    if rng.random() < 0.85:
        style = rng.choice(["default", "positional", "positional", "keyword"])
        scope = "shared.dyn" if style == "default" else rng.choice(["shared", "shared.dyn", "shared.dyn"])
        return Alloc(f"S{k}", dtype, threads * 64 // SIZEOF[dtype], "alloc_shared", scope, style)
    return Alloc(f"S{k}", dtype, threads * 64 // SIZEOF[dtype], "alloc_buffer", rng.choice(["shared", "shared.dyn"]),
                 "keyword")


def generate_spec(seed: int, wide: bool = False) -> Spec:
    if wide:
        return _generate_wide(seed)
    rng = random.Random(seed)
    target = rng.choice(["0.1.8", "0.1.9"])
    threads = rng.choice([32, 64, 128])
    blocks = rng.choice([(4,), (2,), (3, 2), (2, 2)])
    inputs = tuple(rng.choice(DTYPES) for _ in range(rng.choice([1, 1, 2])))
    allocs = tuple(_pick_alloc(rng, k, threads) for k in range(rng.choice([1, 2, 2, 3])))
    sites = []
    for k in range(len(allocs)):
        if k and rng.random() < 0.3:
            continue  # a tile no copy writes (it is still read back, so it stays allocated)
        same = rng.random() < 0.5
        call = allocs[k].dtype if same else rng.choice(DTYPES)
        sites.append(Site(k, rng.randrange(len(inputs)), call, rng.choice([4, 8, 16]),
                          rng.choice(DST_FORMS), rng.choice(SRC_FORMS),
                          rng.choice([None, None, "tx < {half}", "bx % 2 == 0"])))
    factory = rng.random() < 0.35
    macro = rng.choices(["none", "plain", "keyword", "nested"], [5, 2, 2, 1])[0]
    extra = factory and len(sites) >= 2 and rng.random() < 0.5
    return Spec(seed, target, blocks, threads, inputs, allocs, tuple(sites), macro,
                macro_after=factory and macro != "none" and rng.random() < 0.5,
                factory=factory, module_call=factory and (extra or rng.random() < 0.6), const=rng.random() < 0.3,
                extra=extra, rebind_early=rng.random() < 0.5)


def _generate_wide(seed: int) -> Spec:
    rng = random.Random(seed * 104729 + 3)
    target = rng.choice(["0.1.8", "0.1.9"])
    threads = rng.choice([32, 64, 128])
    blocks = rng.choice([(4,), (2,), (3, 2), (2, 2)])
    inputs = tuple(rng.choice(DTYPES) for _ in range(rng.choice([1, 1, 2])))
    allocs = tuple(_pick_alloc_wide(rng, k, threads) for k in range(rng.choice([1, 2, 3, 4, 5])))
    sites = []
    for k in range(len(allocs)):
        if k and rng.random() < 0.25:
            continue
        same = rng.random() < 0.5
        call = allocs[k].dtype if same else rng.choice(DTYPES)
        guard = rng.choice([None, None, "tx < {half}", "bx % 2 == 0"])
        slot = rng.choice(["0", "0", "0", "j"])
        sites.append(Site(k, rng.randrange(len(inputs)), call, rng.choice([4, 8, 16]), rng.choice(WIDE_DST_FORMS),
                          rng.choice(WIDE_SRC_FORMS), guard, slot))
        if slot == "0" and rng.random() < 0.3:  # a second copy into the same tile
            sites.append(Site(k, rng.randrange(len(inputs)), rng.choice([call, rng.choice(DTYPES)]),
                              rng.choice([4, 8, 16]), rng.choice(WIDE_DST_FORMS), rng.choice(WIDE_SRC_FORMS),
                              rng.choice([None, guard]), "1"))
    factory = rng.random() < 0.4
    macro = rng.choices(["none", "plain", "keyword", "nested"], [4, 2, 2, 1])[0]
    extra = factory and len(sites) >= 2 and rng.random() < 0.4
    const = rng.random() < 0.5
    elem = tuple(rng.choice([0, 4, 16, 1]) for _ in inputs) if rng.random() < 0.2 else ()
    spec = Spec(seed, target, blocks, threads, inputs, allocs, tuple(sites), macro,
                macro_after=factory and macro != "none" and rng.random() < 0.5,
                factory=factory, module_call=factory and (extra or rng.random() < 0.6), const=const,
                extra=extra, rebind_early=rng.random() < 0.5, elem_offsets=elem,
                rebind_slot=rng.choice([None, "after_const", "before_kernel", "after_kernel", "end"]) if const
                else None,
                macro_default=const and macro != "none" and rng.random() < 0.6)
    kinds = list(WIDE_KINDS)
    rng.shuffle(kinds)
    return replace(spec, candidate_kinds=tuple(kinds))


# ---------------------------------------------------------------- offsets

def _kname(spec: Spec) -> str:
    return "kk" if spec.macro_default and spec.macro != "none" else "K"

def _dst_offset(spec: Spec, form: str, stride: int, scale_by: str | None = None) -> str:
    """The destination offset: thread tx's slot of ``stride`` units, in one of several spellings."""
    k = _kname(spec) if spec.const and scale_by is None else str(stride)
    if form == "shift" and stride & (stride - 1) == 0 and not spec.const:
        text = f"(tx << {stride.bit_length() - 1})" if stride > 1 else "tx"
    elif form == "floormod":
        text = f"T.floormod(tx, 4) * {k} + T.floordiv(tx, 4) * (4 * {k})"
    elif form == "pymod":
        text = f"tx % 8 * {k} + tx // 8 * (8 * {k})"
    elif form == "overflow_shift":
        # tx * stride * 2**24 passes 2**31 once tx * stride reaches 128: int32 wraps there
        text = f"(tx * ({k} << 24)) >> 24"
    elif form == "big_const":
        text = f"tx * {k} + 2147483000 - 2147483000"
    elif form == "plus_block":
        text = f"tx * {k} + (bx % 1) * 64"
    elif form == "int64_shift":
        # the same shift as overflow_shift on an int64 operand: no wrap
        text = f'(T.Cast("int64", tx) * ({k} << 24)) >> 24'
    elif form == "negdiv":
        # floordiv and floormod of tx - 1, negative at tx = 0 (truncdiv rounds that one the other way)
        text = f"T.floordiv(tx - 1, 2) * (2 * {k}) + T.floormod(tx - 1, 2) * {k} + {k}"
    elif form == "negdiv_trunc":
        text = f"T.truncdiv(tx - 1, 2) * (2 * {k}) + T.floormod(tx - 1, 2) * {k} + {k}"
    elif form == "truncdiv":
        text = f"T.truncdiv(tx * (2 * {k}), 2)"
    else:
        text = f"tx * {k}"
    return text


def _nblocks(spec: Spec) -> int:
    nb = 1
    for b in spec.blocks:
        nb *= b
    return nb


def _slot_terms(spec: Spec, site: Site, du: int, su: int) -> tuple[str, str]:
    """The second copy of a tile (slot 1, or loop iteration j) lies 16 bytes per thread further."""
    if site.slot == "0":
        return "", ""
    d, s = spec.threads * 16 // du, _nblocks(spec) * spec.threads * 16 // su
    if site.slot == "1":
        return f" + {d}", f" + {s}"
    return f" + j * {d}", f" + j * {s}"


def _with_slot(offset: str, term: str) -> str:
    return f"({offset}){term}" if term else offset


def _block_linear(spec: Spec) -> str:
    return "bx" if len(spec.blocks) == 1 else f"(by * {spec.blocks[0]} + bx)"


def _src_offset(spec: Spec, form: str, stride: int) -> str:
    per_block = spec.threads * stride
    b = _block_linear(spec)
    if form == "shift" and stride & (stride - 1) == 0:
        sh = stride.bit_length() - 1
        return f"{b} * {per_block} + (tx << {sh})" if sh else f"{b} * {per_block} + tx"
    if form == "floormod":
        return f"{b} * {per_block} + T.floordiv(tx, 2) * {2 * stride} + T.floormod(tx, 2) * {stride}"
    if form == "grid2":
        return f"{b} * {per_block} + tx * {stride}"
    if form == "big_const":
        return f"{b} * {per_block} + tx * {stride} + 2147483600 - 2147483600"
    if form == "overflow_mul":
        # tx times 2**25, then divided back: tx * 2**25 passes 2**31 from tx = 64 on (int32 wraps there)
        return f"{b} * {per_block} + (tx * 33554432) // 33554432 * {stride}"
    if form == "int64_mul":
        return f'{b} * {per_block} + (T.Cast("int64", tx) * 33554432) // 33554432 * {stride}'
    if form == "shift_wrap":
        # (tx << 26) >> 26 is tx below 32 and wraps negative from tx = 32 on
        return f"{b} * {per_block} + ((tx << 26) >> 26) * {stride}"
    return f"{b} * {per_block} + tx * {stride}"


def _scaled(expr: str, num: int, den: int) -> str:
    """``expr`` in units ``num/den`` times smaller (exact: ``den`` is 1 or divides it)."""
    if num == den:
        return expr
    if den == 1:
        return f"({expr}) * {num}"
    if num == 1:
        return f"({expr}) // {den}"
    return f"({expr}) * {num} // {den}"


# ---------------------------------------------------------------- rendering

@dataclass(frozen=True)
class NewCall:
    """How the generator writes one site in the access-pointer form."""
    dst_ptype: str
    src_ptype: str
    dst_off: str
    src_off: str
    size: int  # bytes (0.1.8) or num_elems (0.1.9)
    dst_buf: str
    src_buf: str
    guard: str | None
    predicate: str | None = None
    style: str = "pos"  # pos | keyword | keyword_swapped | swapped_ptrs | offset_extent_swapped
    rw: tuple[int, int] = (2, 1)
    ext: tuple[int, int] | None = None  # the extents, where not the copy's own
    peel: str | None = None  # a loop site written as its first iteration (this value of j) and the rest


def hand_call(spec: Spec, site: Site) -> NewCall:
    du, su = legacy_units(spec, site)
    dst = spec.allocs[site.dst]
    dstride, sstride = elem_stride(du, site.nbytes), elem_stride(su, site.nbytes)
    dslot, sslot = _slot_terms(spec, site, du, su)
    d_legacy = _with_slot(_dst_offset(spec, site.dst_form, dstride), dslot)
    s_legacy = _with_slot(_src_offset(spec, site.src_form, sstride), sslot)
    dp = site.call_dtype if merged(spec) and dst.dynamic else dst.dtype
    sp = spec.inputs[site.src]
    doff, soff = d_legacy, s_legacy
    if spec.target == "0.1.9" and SIZEOF[dp] != SIZEOF[sp]:
        # one common pointer type: bytes on both sides
        doff, soff = _scaled(d_legacy, du, 1), _scaled(s_legacy, su, 1)
        dp = sp = "uint8"
    size = site.nbytes if spec.target == "0.1.8" else site.nbytes // SIZEOF[dp]
    return NewCall(dp, sp, doff, soff, size, "dst" if spec.macro != "none" else dst.name,
                   "src" if spec.macro != "none" else f"A{site.src}", site.guard)


def _legacy_call(spec: Spec, site: Site, dst: str, src: str) -> str:
    du, su = legacy_units(spec, site)
    dslot, sslot = _slot_terms(spec, site, du, su)
    doff = _with_slot(_dst_offset(spec, site.dst_form, elem_stride(du, site.nbytes)), dslot)
    soff = _with_slot(_src_offset(spec, site.src_form, elem_stride(su, site.nbytes)), sslot)
    return f'T.ptx_cp_async("{site.call_dtype}", {dst}.data, {doff}, {src}.data, {soff}, {site.nbytes})'


def _new_call(spec: Spec, c: NewCall) -> str:
    ext_d = max(1, c.size if spec.target == "0.1.9" else c.size // SIZEOF[c.dst_ptype])
    ext_s = max(1, c.size if spec.target == "0.1.9" else c.size // SIZEOF[c.src_ptype])
    if c.ext is not None:
        ext_d, ext_s = c.ext
    pred = f", predicate={c.predicate}" if c.predicate else ""
    d_args = [c.dst_off, ext_d] if c.style != "offset_extent_swapped" else [ext_d, c.dst_off]
    dst = (f'T.tvm_access_ptr(T.type_annotation("{c.dst_ptype}"), {c.dst_buf}.data, {d_args[0]}, {d_args[1]}, '
           f'{c.rw[0]})')
    src = f'T.tvm_access_ptr(T.type_annotation("{c.src_ptype}"), {c.src_buf}.data, {c.src_off}, {ext_s}, {c.rw[1]})'
    size_kw = "bytes" if spec.target == "0.1.8" else "num_elems"
    if c.style == "keyword":
        return f"T.ptx_cp_async(src_access_ptr={src}, dst_access_ptr={dst}, {size_kw}={c.size}{pred})"
    if c.style == "keyword_swapped":
        return f"T.ptx_cp_async(src_access_ptr={dst}, dst_access_ptr={src}, {size_kw}={c.size}{pred})"
    if c.style == "swapped_ptrs":
        return f"T.ptx_cp_async({src}, {dst}, {c.size}{pred})"
    return f"T.ptx_cp_async({dst}, {src}, {c.size}{pred})"


def _guard_text(spec: Spec, guard: str | None) -> str | None:
    return None if guard is None else guard.format(half=spec.threads // 2)


def _site_lines(call: str, guard: str | None, slot: str) -> list[str]:
    """One site's statements: the call, in its loop over j (or peeled: ``#peelV `` writes iteration j = V
    first, then the loop from 1), under its guard."""
    peel = None
    if call.startswith("#peel"):
        peel, call = call[5], call[7:]
    if peel is not None:
        stmt = [re.sub(r"\bj\b", peel, call), "for j in T.serial(1, 2):", f"    {call}"]
    elif slot == "j":
        stmt = ["for j in T.serial(2):", f"    {call}"]
    else:
        stmt = [call]
    return stmt if guard is None else [f"if {guard}:"] + [f"    {x}" for x in stmt]


def render(spec: Spec, calls: list[str] | None, rebind: str | None = None) -> str:
    """The module: legacy calls when ``calls`` is None, else the given new-form call texts (one per site)."""
    params = [f'A{i}: T.Tensor(({_in_elems(spec, i)},), "{d}")' if not (spec.elem_offsets and spec.elem_offsets[i])
              else f"a{i}: T.handle" for i, d in enumerate(spec.inputs)]
    params += [f'O{k}: T.Tensor(({_out_elems(spec, a)},), "{a.dtype}")' for k, a in enumerate(spec.allocs)]
    names = "bx" if len(spec.blocks) == 1 else "(bx, by)"
    grid = ", ".join(map(str, spec.blocks))
    reads = ", ".join(f"A{i}[0:{_in_elems(spec, i)}]" for i in range(len(spec.inputs)))
    writes = ", ".join(f"O{k}[0:{_out_elems(spec, a)}]" for k, a in enumerate(spec.allocs))
    threads = "threads" if spec.factory else str(spec.threads)
    body = [f'A{i} = T.match_buffer(a{i}, ({_in_elems(spec, i)},), "{d}", elem_offset={spec.elem_offsets[i]})'
            for i, d in enumerate(spec.inputs) if spec.elem_offsets and spec.elem_offsets[i]]
    body += [f"with T.Kernel({grid}, threads={threads}) as {names}:",
             f"    T.reads({reads})", f"    T.writes({writes})"]
    for a in spec.allocs:
        body.append(f"    {a.name} = {a.text()}")
    body.append("    tx = T.get_thread_binding()")
    macros: list[str] = []
    for j, site in enumerate(spec.sites):
        dst, src = spec.allocs[site.dst].name, f"A{site.src}"
        guard = _guard_text(spec, site.guard)
        if calls is None:
            call_in = _legacy_call(spec, site, "dst" if spec.macro != "none" else dst,
                                   "src" if spec.macro != "none" else src)
        else:
            call_in = calls[j]
            if call_in.startswith("#guard-dropped "):
                call_in, guard = call_in[len("#guard-dropped "):], None
        under = "    " if spec.extra and j == len(spec.sites) - 1 else ""
        if under:
            body.append("    if extra:")
        if spec.macro == "none":
            body += ["    " + under + s for s in _site_lines(call_in, guard, site.slot)]
            continue
        inner = _site_lines(call_in, guard, site.slot)
        mparams = ["dst", "src", "tx", "bx", "by"] + (["kk=K"] if _kname(spec) == "kk" else [])
        if spec.macro == "nested":
            macros.append(_macro(f"issue{j}", mparams, inner))
            macros.append(_macro(f"load{j}", mparams, [f"issue{j}(dst, src, tx, bx, by)"]))
        else:
            macros.append(_macro(f"load{j}", mparams, inner))
        by = "by" if len(spec.blocks) > 1 else "0"
        if spec.macro == "keyword":
            body.append(f"    {under}load{j}(src={src}, dst={dst}, tx=tx, bx=bx, by={by})")
        else:
            body.append(f"    {under}load{j}({dst}, {src}, tx, bx, {by})")
    body += ["    T.ptx_commit_group()", "    T.ptx_wait_group(0)", "    T.sync_threads()"]
    for k, a in enumerate(spec.allocs):
        b = _block_linear(spec)
        body += [f"    for i in T.serial({a.elems // spec.threads}):",
                 f"        O{k}[{b} * {a.elems} + i * {spec.threads} + tx] = {a.name}[i * {spec.threads} + tx]"]
    kernel = ["@T.prim_func", f"def main({', '.join(params)}):"] + ["    " + s for s in body]
    lines = ["import tilelang.language as T", ""]
    legacy_rebind = ["", f"K = {2 * _const_value(spec)}", ""]
    if spec.const:
        lines += [f"K = {_const_value(spec)}", ""]
    if spec.rebind_slot == "after_const":
        lines += legacy_rebind
    if not spec.macro_after:
        for m in macros:
            lines += ["", m, ""]
    if spec.rebind_slot == "before_kernel":
        lines += legacy_rebind
    if spec.factory:
        lines += ["", f"def make(threads={spec.threads}, extra=False):" if spec.extra
                  else f"def make(threads={spec.threads}):"]
        lines += ["    " + s if s else "" for s in kernel]
        lines += ["    return main", ""]
    else:
        lines += [""] + kernel + [""]
    if spec.rebind_slot == "after_kernel":
        lines += legacy_rebind
    if spec.macro_after:
        for m in macros:
            lines += ["", m, ""]
    if rebind is not None and spec.rebind_early:
        lines += ["", rebind, ""]
    if spec.factory and spec.module_call:
        lines += ["", f"kernel = make({spec.threads}, True)" if spec.extra else f"kernel = make({spec.threads})", ""]
    if rebind is not None and not spec.rebind_early:
        lines += ["", rebind, ""]
    if spec.rebind_slot == "end":
        lines += legacy_rebind
    return "\n".join(lines).rstrip() + "\n"


def _const_value(spec: Spec) -> int:
    """K: the destination stride of the first site (the others use it too, in their own units)."""
    if not spec.sites:
        return 1
    s = spec.sites[0]
    return elem_stride(legacy_units(spec, s)[0], s.nbytes)


def _macro(name: str, params: list[str], body: list[str]) -> str:
    return "\n".join(["@T.macro", f"def {name}({', '.join(params)}):"] + ["    " + b for b in body])


def _in_elems(spec: Spec, i: int) -> int:
    nb = 1
    for b in spec.blocks:
        nb *= b
    return nb * spec.threads * 64 // SIZEOF[spec.inputs[i]]


def _out_elems(spec: Spec, a: Alloc) -> int:
    nb = 1
    for b in spec.blocks:
        nb *= b
    return nb * a.elems


# ---------------------------------------------------------------- candidates

def _const_spec(spec: Spec) -> Spec:
    """With the module constant K, every site reads K as its destination stride: keep only
    specs where that is each site's own stride (else the constant is dropped)."""
    if not spec.const:
        return spec
    k = _const_value(spec)
    if all(elem_stride(legacy_units(spec, s)[0], s.nbytes) == k for s in spec.sites):
        return spec
    return replace(spec, const=False, rebind_slot=None, macro_default=False)


def mutate(spec: Spec, calls: list[NewCall], kind: str, rng: random.Random) -> tuple[list[NewCall], str | None] | None:
    """One wrong-looking variant of the hand migration, or None where the kind does not apply."""
    if not calls:
        return None
    j = rng.randrange(len(calls))
    c = calls[j]
    site = spec.sites[j]
    out = list(calls)
    if kind == "wrong_ptype":
        alts = [d for d in DTYPES if SIZEOF[d] != SIZEOF[c.dst_ptype]]
        if site.call_dtype not in (c.dst_ptype,) and SIZEOF[site.call_dtype] != SIZEOF[c.dst_ptype]:
            p = site.call_dtype
        else:
            p = rng.choice(alts)
        if rng.random() < 0.5:
            out[j] = replace(c, dst_ptype=p)
        else:
            out[j] = replace(c, src_ptype=p)
    elif kind == "scaled_offset":
        out[j] = replace(c, dst_off=f"({c.dst_off}) * 2") if rng.random() < 0.5 else replace(
            c, src_off=f"({c.src_off}) * 2")
    elif kind == "swapped_buffers":
        if len(calls) >= 2:
            k = (j + 1) % len(calls)
            if rng.random() < 0.5 or len(spec.inputs) < 2:
                a, b = spec.sites[j].dst, spec.sites[k].dst
                if a == b:
                    return None
                out[j] = replace(c, dst_buf=spec.allocs[b].name) if spec.macro == "none" else None
                out[k] = replace(calls[k], dst_buf=spec.allocs[a].name) if spec.macro == "none" else None
                if out[j] is None:
                    return None
            else:
                out[j] = replace(c, src_buf=f"A{1 - site.src}") if spec.macro == "none" else None
                if out[j] is None:
                    return None
        elif len(spec.inputs) >= 2 and spec.macro == "none":
            out[j] = replace(c, src_buf=f"A{1 - site.src}")
        else:
            return None
    elif kind == "dropped_predicate":
        if c.guard is None:
            return None
        out[j] = replace(c, guard=None)
    elif kind == "wrong_size":
        if spec.target == "0.1.8":
            out[j] = replace(c, size={4: 8, 8: 16, 16: 8}[c.size])
        else:
            out[j] = replace(c, size=c.size * 2 if c.size * SIZEOF[c.dst_ptype] < 16 else c.size // 2)
    elif kind == "off_by_one":
        out[j] = replace(c, dst_off=f"{c.dst_off} + 1") if rng.random() < 0.5 else replace(
            c, src_off=f"{c.src_off} + 1")
    elif kind == "rebinding":
        if not spec.const:
            return None
        return out, f"K = {_const_value(spec) * (3 if spec.rebind_slot else 2)}"
    else:
        for jj in [j] + [x for x in range(len(calls)) if x != j]:  # the first site the kind applies to
            got = _mutate_wide(spec, calls, kind, jj)
            if got is not None:
                out[jj] = got
                return out, None
        return None
    return out, None


_GUARD_NEGATION = {"tx < {half}": "tx >= {half}", "bx % 2 == 0": "bx % 2 != 0"}
_WIDER = {"overflow_shift": "int64_shift", "overflow_mul": "int64_mul", "shift_wrap": "affine"}


def _mutate_wide(spec: Spec, calls: list[NewCall], kind: str, j: int) -> NewCall | None:
    """The wide families' variants and mutants of site ``j``'s hand call (None: the kind does not apply)."""
    c, site = calls[j], spec.sites[j]
    guard = _guard_text(spec, site.guard)
    if kind == "keyword_order":
        return replace(c, style="keyword")
    if kind in ("keyword_swapped", "swapped_ptrs", "offset_extent_swapped"):
        return replace(c, style=kind)
    if kind == "pred_kept":
        return replace(c, predicate=guard) if guard else None
    if kind == "negated_predicate":
        return replace(c, predicate=_guard_text(spec, _GUARD_NEGATION[site.guard])) if guard else None
    if kind == "guard_to_predicate":
        return replace(c, predicate=guard, guard=None) if guard else None
    if kind == "off_by_minus_one":
        return replace(c, src_off=f"({c.src_off}) - 1") if j % 2 else replace(c, dst_off=f"({c.dst_off}) - 1")
    if kind == "wrong_extent":
        return replace(c, ext=(1, 1))
    if kind == "wrong_rw":
        return replace(c, rw=(1, 2))
    if kind == "src_ptype":
        alts = [d for d in DTYPES if SIZEOF[d] != SIZEOF[c.src_ptype]]
        return replace(c, src_ptype=alts[j % len(alts)])
    if kind in ("peeled", "bad_peel"):
        return replace(c, peel="0" if kind == "peeled" else "1") if site.slot == "j" else None
    if kind in ("inline_first", "inline_last"):
        if not spec.const:
            return None
        value = _const_value(spec) * (1 if kind == "inline_first" else 2)
        name = _kname(spec)
        return replace(c, dst_off=re.sub(rf"\b{name}\b", str(value), c.dst_off))
    forms = None
    if kind == "widened":
        forms = _WIDER.get(site.dst_form, site.dst_form), _WIDER.get(site.src_form, site.src_form)
    elif kind == "reassoc":
        plain = {"overflow_shift", "int64_shift", "big_const", "truncdiv", "negdiv"}
        forms = "affine" if site.dst_form in plain else site.dst_form, \
            "affine" if site.src_form in {"overflow_mul", "int64_mul", "shift_wrap", "big_const"} else site.src_form
    elif kind == "div_kind":
        forms = {"negdiv": "negdiv_trunc"}.get(site.dst_form, site.dst_form), site.src_form
    if forms is None:
        raise ValueError(kind)
    if forms == (site.dst_form, site.src_form):
        return None
    other = hand_call(spec, replace(site, dst_form=forms[0], src_form=forms[1]))
    return replace(c, dst_off=other.dst_off, src_off=other.src_off)


def _texts(spec: Spec, calls: list[NewCall]) -> list[str]:
    texts = []
    for site, c in zip(spec.sites, calls):
        t = _new_call(spec, c)
        if c.peel is not None:
            t = f"#peel{c.peel} " + t
        if site.guard is not None and c.guard is None:
            t = "#guard-dropped " + t
        texts.append(t)
    return texts


def make_case(seed: int, mutants: int = 2, wide: bool = False) -> Case:
    spec = _const_spec(generate_spec(seed, wide))
    rng = random.Random(seed * 7919 + 1)
    case = Case(f"fz{seed}", spec, render(spec, None))
    if not spec.sites:
        return case
    calls = [hand_call(spec, s) for s in spec.sites]
    case.candidates["hand"] = render(spec, _texts(spec, calls))
    kinds = [k for k in MUTANTS]
    rng.shuffle(kinds)
    if wide:
        kinds = list(spec.candidate_kinds)
    made = 0
    for kind in kinds:
        if made >= mutants:
            break
        got = mutate(spec, calls, kind, rng)
        if got is None:
            continue
        new_calls, rebind = got
        text = render(spec, _texts(spec, new_calls), rebind=rebind)
        if text != case.candidates["hand"]:
            case.candidates[kind] = text
            made += 1
    return case


def generate(seed: int, count: int, mutants: int = 2, wide: bool = False) -> list[Case]:
    """``count`` cases from seeds ``seed``, ``seed + 1``, ... (``wide``: the wide families, see _generate_wide)."""
    return [make_case(seed + i, mutants, wide) for i in range(count)]
