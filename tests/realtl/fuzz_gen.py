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
from dataclasses import dataclass, field, replace

DTYPES = ["float16", "float32", "int8", "uint8", "bfloat16"]
SIZEOF = {"float16": 2, "float32": 4, "int8": 1, "uint8": 1, "bfloat16": 2}
MUTANTS = ["wrong_ptype", "scaled_offset", "swapped_buffers", "dropped_predicate", "wrong_size", "off_by_one",
           "rebinding"]


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


def generate_spec(seed: int) -> Spec:
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


# ---------------------------------------------------------------- offsets

def _dst_offset(spec: Spec, form: str, stride: int, scale_by: str | None = None) -> str:
    """The destination offset: thread tx's slot of ``stride`` units, in one of several spellings."""
    k = "K" if spec.const and scale_by is None else str(stride)
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
    else:
        text = f"tx * {k}"
    return text


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


def hand_call(spec: Spec, site: Site) -> NewCall:
    du, su = legacy_units(spec, site)
    dst = spec.allocs[site.dst]
    dstride, sstride = elem_stride(du, site.nbytes), elem_stride(su, site.nbytes)
    d_legacy = _dst_offset(spec, site.dst_form, dstride)
    s_legacy = _src_offset(spec, site.src_form, sstride)
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
    doff = _dst_offset(spec, site.dst_form, elem_stride(du, site.nbytes))
    soff = _src_offset(spec, site.src_form, elem_stride(su, site.nbytes))
    return f'T.ptx_cp_async("{site.call_dtype}", {dst}.data, {doff}, {src}.data, {soff}, {site.nbytes})'


def _new_call(spec: Spec, c: NewCall) -> str:
    ext_d = max(1, c.size if spec.target == "0.1.9" else c.size // SIZEOF[c.dst_ptype])
    ext_s = max(1, c.size if spec.target == "0.1.9" else c.size // SIZEOF[c.src_ptype])
    pred = f", predicate={c.predicate}" if c.predicate else ""
    return (f'T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation("{c.dst_ptype}"), {c.dst_buf}.data, {c.dst_off}, '
            f'{ext_d}, 2), T.tvm_access_ptr(T.type_annotation("{c.src_ptype}"), {c.src_buf}.data, {c.src_off}, '
            f'{ext_s}, 1), {c.size}{pred})')


def _guard_text(spec: Spec, guard: str | None) -> str | None:
    return None if guard is None else guard.format(half=spec.threads // 2)


def render(spec: Spec, calls: list[str] | None, rebind: str | None = None) -> str:
    """The module: legacy calls when ``calls`` is None, else the given new-form call texts (one per site)."""
    params = [f'A{i}: T.Tensor(({_in_elems(spec, i)},), "{d}")' for i, d in enumerate(spec.inputs)]
    params += [f'O{k}: T.Tensor(({_out_elems(spec, a)},), "{a.dtype}")' for k, a in enumerate(spec.allocs)]
    names = "bx" if len(spec.blocks) == 1 else "(bx, by)"
    grid = ", ".join(map(str, spec.blocks))
    reads = ", ".join(f"A{i}[0:{_in_elems(spec, i)}]" for i in range(len(spec.inputs)))
    writes = ", ".join(f"O{k}[0:{_out_elems(spec, a)}]" for k, a in enumerate(spec.allocs))
    threads = "threads" if spec.factory else str(spec.threads)
    body = [f"with T.Kernel({grid}, threads={threads}) as {names}:",
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
            stmt = [call_in] if guard is None else [f"if {guard}:", f"    {call_in}"]
            body += ["    " + under + s for s in stmt]
            continue
        inner = [call_in] if guard is None else [f"if {guard}:", f"    {call_in}"]
        if spec.macro == "nested":
            macros.append(_macro(f"issue{j}", ["dst", "src", "tx", "bx", "by"], inner))
            macros.append(_macro(f"load{j}", ["dst", "src", "tx", "bx", "by"],
                                 [f"issue{j}(dst, src, tx, bx, by)"]))
        else:
            macros.append(_macro(f"load{j}", ["dst", "src", "tx", "bx", "by"], inner))
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
    if spec.const:
        lines += [f"K = {_const_value(spec)}", ""]
    if not spec.macro_after:
        for m in macros:
            lines += ["", m, ""]
    if spec.factory:
        lines += ["", f"def make(threads={spec.threads}, extra=False):" if spec.extra
                  else f"def make(threads={spec.threads}):"]
        lines += ["    " + s if s else "" for s in kernel]
        lines += ["    return main", ""]
    else:
        lines += [""] + kernel + [""]
    if spec.macro_after:
        for m in macros:
            lines += ["", m, ""]
    if rebind is not None and spec.rebind_early:
        lines += ["", rebind, ""]
    if spec.factory and spec.module_call:
        lines += ["", f"kernel = make({spec.threads}, True)" if spec.extra else f"kernel = make({spec.threads})", ""]
    if rebind is not None and not spec.rebind_early:
        lines += ["", rebind, ""]
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
    return replace(spec, const=False)


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
        return out, f"K = {_const_value(spec) * 2}"
    else:
        raise ValueError(kind)
    return out, None


def _texts(spec: Spec, calls: list[NewCall]) -> list[str]:
    texts = []
    for site, c in zip(spec.sites, calls):
        t = _new_call(spec, c)
        if site.guard is not None and c.guard is None:
            t = "#guard-dropped " + t
        texts.append(t)
    return texts


def make_case(seed: int, mutants: int = 2) -> Case:
    spec = _const_spec(generate_spec(seed))
    rng = random.Random(seed * 7919 + 1)
    case = Case(f"fz{seed}", spec, render(spec, None))
    if not spec.sites:
        return case
    calls = [hand_call(spec, s) for s in spec.sites]
    case.candidates["hand"] = render(spec, _texts(spec, calls))
    kinds = [k for k in MUTANTS]
    rng.shuffle(kinds)
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


def generate(seed: int, count: int, mutants: int = 2) -> list[Case]:
    """``count`` cases from seeds ``seed``, ``seed + 1``, ..."""
    return [make_case(seed + i, mutants) for i in range(count)]
