"""A generated sweep of cp.async copy kernels for the GPU harness.

Each case is a kernel written twice from its own parameters: the legacy text
(``T.ptx_cp_async(dtype, dst, dst_off, src, src_off, bytes)``, offsets in each
buffer's element type) and its migration, written here by the rules of
docs/design.md (pointer type = the buffer's element type; size in bytes for 0.1.8,
elements of the pointer type for 0.1.9; under 0.1.9, when the widths differ,
both pointers take the wider type and the byte side's offset is divided
exactly), never by the rewriter.  Predicated cases are written in the 0.1.8 form and migrated to
0.1.9.

Families: ``tile1d`` (row tiles, 1-D grid), ``tile2d`` (2-D grid of square-ish
tiles), ``tail`` (a last partial tile guarded by ``if``), ``pred`` (a
predicated tail that zero-fills), ``merged`` (two tensors of different dtypes
staged into one shared byte buffer, as TileLang merges shared buffers),
``pipe`` (a double-buffered loop with ``wait_group(1)``) and ``big``
(megabytes, thousands of blocks).

``cases()`` returns dicts: name, old, new, target, source, expect, tags.
``python tests/gpu_sweep.py`` prints the counts.
"""
from __future__ import annotations

import itertools

DTYPES = [("int8", 1), ("uint8", 1), ("float8_e4m3", 1), ("float16", 2), ("bfloat16", 2), ("int16", 2),
          ("float32", 4), ("int32", 4), ("float64", 8), ("int64", 8)]
WIDTHS = (4, 8, 16)
TARGETS = ("0.1.8", "0.1.9")
HEADER = "import tilelang.language as T\n\n\n"


def combos():
    """(dtype, size, width) with the width a multiple of the element size."""
    for (dt, size), w in itertools.product(DTYPES, WIDTHS):
        if w >= size:
            yield dt, size, w


def call(form: str, *, dst: str, dst_off: str, src: str, src_off: str, width: int, dst_t: str, src_t: str,
         pred: str = None, dtype_arg: str = None, indent: str = "") -> str:
    """One cp.async call in the given form.

    legacy: offsets in each buffer's element type, ``dtype_arg`` first.
    0.1.8 / 0.1.9: access pointers of types dst_t/src_t (the caller has already scaled offsets when it
    chose a common type); the size is bytes (0.1.8) or elements of dst_t (0.1.9)."""
    if form == "legacy":
        assert pred is None
        return f'{indent}T.ptx_cp_async("{dtype_arg}", {dst}.data, {dst_off}, {src}.data, {src_off}, {width})\n'
    sz_d, sz_s = SIZE[dst_t], SIZE[src_t]
    ed, es = width // sz_d, width // sz_s
    n = width if form == "0.1.8" else ed
    if form == "0.1.9":
        assert sz_d == sz_s, "0.1.9 needs one width on both sides"
    p = "" if pred is None else f", {pred}"
    return (f"{indent}T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation(\"{dst_t}\"), {dst}.data, {dst_off}, {ed}, 2), "
            f"T.tvm_access_ptr(T.type_annotation(\"{src_t}\"), {src}.data, {src_off}, {es}, 1), {n}{p})\n")


SIZE = dict(DTYPES)


# ---------------------------------------------------------------------------------------------- families
def tile1d(form, dt, size, w, threads, cpt, row_bytes, nblocks, name):
    e = w // size
    n = row_bytes // size
    tile_bytes = threads * w * cpt
    bm = tile_bytes // row_bytes
    assert bm * row_bytes == tile_bytes and bm >= 1
    m = bm * nblocks
    idx = f"(c * {threads} + tx)"
    body = call(form, dst="A_s", dst_off=f"{idx} * {e}", src="A", src_off=f"bx * BM * N + {idx} * {e}", width=w,
                dst_t=dt, src_t=dt, dtype_arg=dt, indent=" " * 16)
    return HEADER + f'''def make_{name}(M={m}, N={n}, BM={bm}):
    @T.prim_func
    def main(A: T.Tensor((M, N), "{dt}"), B: T.Tensor((M, N), "{dt}")):
        with T.Kernel(M // BM, threads={threads}) as bx:
            tx = T.get_thread_binding()
            A_s = T.alloc_shared((BM, N), "{dt}")
            for c in T.serial({cpt}):
{body}            T.ptx_commit_group()
            T.ptx_wait_group(0)
            for i, j in T.Parallel(BM, N):
                B[bx * BM + i, j] = A_s[i, j]

    return main
'''


def tile2d(form, dt, size, w, threads, bm, bn_bytes, gx, gy, name):
    e = w // size
    bn = bn_bytes // size
    cpr = bn // e  # copies per tile row
    chunks = bm * cpr
    assert chunks % threads == 0, (bm, cpr, threads)
    cpt = chunks // threads
    n, m = bn * gx, bm * gy
    idx = f"(c * {threads} + tx)"
    body = call(form, dst="S", dst_off=f"{idx} * {e}", src="A",
                src_off=f"(by * {bm} + {idx} // {cpr}) * {n} + bx * {bn} + {idx} % {cpr} * {e}", width=w,
                dst_t=dt, src_t=dt, dtype_arg=dt, indent=" " * 16)
    return HEADER + f'''DTYPE = "{dt}"


@T.prim_func
def {name}(A: T.Tensor(({m}, {n}), DTYPE), B: T.Tensor(({m}, {n}), DTYPE)):
    with T.Kernel({gx}, {gy}, threads={threads}) as (bx, by):
        tx = T.get_thread_binding()
        S = T.alloc_shared(({bm}, {bn}), DTYPE)
        for c in T.unroll({cpt}):
{body}        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i, j in T.Parallel({bm}, {bn}):
            B[by * {bm} + i, bx * {bn} + j] = S[i, j]
'''


def tail(form, dt, size, w, threads, row_bytes, bm, m, name, pred=False):
    """A last partial tile: rows >= M are skipped (legacy: ``if``) or zero-filled (predicated form)."""
    e = w // size
    n = row_bytes // size
    cpr = n // e
    chunks = bm * cpr
    assert chunks % threads == 0
    cpt = chunks // threads
    nb = -(-m // bm)
    idx = f"(c * {threads} + tx)"
    row = f"bx * {bm} + {idx} // {cpr}"
    src_off = f"row * {n} + {idx} % {cpr} * {e}"
    if pred:
        body = call(form, dst="A_s", dst_off=f"{idx} * {e}", src="A", src_off=src_off, width=w, dst_t=dt, src_t=dt,
                    pred="row < M", indent=" " * 16)
        loop = f"                row = {row}\n" + body
        out_rows, store = nb * bm, f'''            for i, j in T.Parallel({bm}, {n}):
                B[bx * {bm} + i, j] = A_s[i, j]
'''
    else:
        body = call(form, dst="A_s", dst_off=f"{idx} * {e}", src="A", src_off=src_off, width=w, dst_t=dt, src_t=dt,
                    dtype_arg=dt, indent=" " * 20)
        loop = f"                row = {row}\n                if row < M:\n" + body
        out_rows, store = m, f'''            for i, j in T.Parallel({bm}, {n}):
                if bx * {bm} + i < M:
                    B[bx * {bm} + i, j] = A_s[i, j]
'''
    return HEADER + f'''def make_{name}(M={m}, dtype="{dt}"):
    @T.prim_func
    def main(A: T.Tensor((M, {n}), dtype), B: T.Tensor(({out_rows}, {n}), dtype)):
        with T.Kernel(T.ceildiv(M, {bm}), threads={threads}) as bx:
            tx = T.get_thread_binding()
            A_s = T.alloc_shared(({bm}, {n}), dtype)
            for c in T.serial({cpt}):
{loop}            T.ptx_commit_group()
            T.ptx_wait_group(0)
{store}
    return main
'''


def merged(form, da, db, wa, wb, threads, ca, cb, groups, name):
    """Two tensors staged into one shared uint8 buffer (byte offsets there, element offsets in each tensor)."""
    sa, sb = SIZE[da], SIZE[db]
    ea, eb = wa // sa, wb // sb
    na = threads * ca * ea  # elements of A per block
    nb = threads * cb * eb
    bytes_a, bytes_b = na * sa, nb * sb
    total = bytes_a + bytes_b
    idx = f"(c * {threads} + tx)"

    def one(src, sdt, n_el, e, wdt, off, cnt, width):
        dst_off = f"{off} + {idx} * {width}" if off else f"{idx} * {width}"
        src_off = f"bx * {n_el} + {idx} * {e}"
        dt = "uint8"
        if form == "0.1.9" and SIZE[sdt] != 1:
            # one common pointer type, the wider side's (TileLang bounds-checks a narrow view of a wide
            # buffer): the byte buffer's offset is divided exactly by the element size
            s = SIZE[sdt]
            assert off % s == 0 and width % s == 0
            dst_off = f"{off // s} + {idx} * {width // s}" if off else f"{idx} * {width // s}"
            dt = sdt
        return (f"        for c in T.serial({cnt}):\n"
                + call(form, dst="buf", dst_off=dst_off, src=src, src_off=src_off, width=width, dst_t=dt,
                       src_t=sdt, dtype_arg="uint8", indent=" " * 12))

    body = one("A", da, na, ea, "uint8", 0, ca, wa) + one("Bt", db, nb, eb, "uint8", bytes_a, cb, wb)
    return HEADER + f'''@T.prim_func
def {name}(A: T.Tensor(({groups}, {na}), "{da}"), Bt: T.Tensor(({groups}, {nb}), "{db}"),
           Out: T.Tensor(({groups}, {total}), "uint8")):
    with T.Kernel({groups}, threads={threads}) as bx:
        tx = T.get_thread_binding()
        buf = T.alloc_shared(({total},), "uint8")
{body}        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.Parallel({total}):
            Out[bx, i] = buf[i]
'''


def pipe(form, dt, size, w, threads, cpt, kt, groups, name):
    """Double buffering: tile ko+1 is in flight while tile ko is read (wait_group(1))."""
    e = w // size
    tile = threads * cpt * e
    idx = f"(c * {threads} + tx)"
    first = call(form, dst="S", dst_off=f"{idx} * {e}", src="A", src_off=f"bx * {kt * tile} + {idx} * {e}", width=w,
                 dst_t=dt, src_t=dt, dtype_arg=dt, indent=" " * 16)
    nxt = call(form, dst="S", dst_off=f"(ko + 1) % 2 * {tile} + {idx} * {e}", src="A",
               src_off=f"bx * {kt * tile} + (ko + 1) * {tile} + {idx} * {e}", width=w, dst_t=dt, src_t=dt,
               dtype_arg=dt, indent=" " * 24)
    return HEADER + f'''def make_{name}(G={groups}, KT={kt}, dtype="{dt}"):
    @T.prim_func
    def main(A: T.Tensor((G, KT * {tile}), dtype), B: T.Tensor((G, KT * {tile}), dtype)):
        with T.Kernel(G, threads={threads}) as bx:
            tx = T.get_thread_binding()
            S = T.alloc_shared((2, {tile}), dtype)
            for c in T.serial({cpt}):
{first}            T.ptx_commit_group()
            for ko in T.serial(KT):
                if ko + 1 < KT:
                    for c in T.serial({cpt}):
{nxt}                T.ptx_commit_group()
                T.ptx_wait_group(1)
                for i in T.Parallel({tile}):
                    B[bx, ko * {tile} + i] = S[ko % 2, i]
                T.sync_threads()

    return main
'''


# ---------------------------------------------------------------------------------------------- the sweep
def configs():
    """(family, name, builder(form) -> text, tags, forms) for every kernel of the sweep."""
    out = []
    cs = list(combos())
    for k, (dt, size, w) in enumerate(cs):
        for threads, cpt, rb, nbk in ((32, 2, 64, 3), (64, 1, 128, 4), (128, 4, 256, 2)):
            if (threads * w * cpt) % rb:
                continue
            name = f"tile1d_{dt}_w{w}_t{threads}"
            out.append(("tile1d", name, lambda f, a=(dt, size, w, threads, cpt, rb, nbk, name): tile1d(f, *a),
                        {"dtype": dt, "width": w, "threads": threads}))
        for threads, bm, bnb, gx, gy in ((128, 16, 128, 2, 3), (256, 32, 128, 3, 2)):
            cpr = bnb // w
            if (bm * cpr) % threads:
                bm = threads // cpr * 2
            name = f"tile2d_{dt}_w{w}_t{threads}"
            out.append(("tile2d", name, lambda f, a=(dt, size, w, threads, bm, bnb, gx, gy, name): tile2d(f, *a),
                        {"dtype": dt, "width": w, "threads": threads}))
        rb = 128
        cpr = rb // w
        bm = max(1, 128 // cpr) * 2
        m = bm * 3 + bm // 2 + 1
        name = f"tail_{dt}_w{w}"
        out.append(("tail", name, lambda f, a=(dt, size, w, 128, rb, bm, m, name): tail(f, *a),
                    {"dtype": dt, "width": w, "threads": 128}))
        name = f"pred_{dt}_w{w}"
        out.append(("pred", name, lambda f, a=(dt, size, w, 128, rb, bm, m, name): tail(f, *a, pred=True),
                    {"dtype": dt, "width": w, "threads": 128}))
        if k % 2 == 0 or size >= 4:
            name = f"pipe_{dt}_w{w}"
            out.append(("pipe", name, lambda f, a=(dt, size, w, 64, 2, 5, 3, name): pipe(f, *a),
                        {"dtype": dt, "width": w, "threads": 64}))
    pairs = [("float16", "int8", 16, 4), ("float32", "float16", 16, 8), ("bfloat16", "uint8", 8, 16),
             ("float64", "float32", 16, 4), ("int8", "float16", 4, 16), ("int32", "int64", 8, 16),
             ("float16", "bfloat16", 4, 8), ("uint8", "float64", 16, 8), ("int16", "float32", 16, 16),
             ("float8_e4m3", "float16", 8, 8), ("float32", "int8", 4, 4), ("int64", "int16", 8, 4),
             ("float16", "float16", 16, 16), ("bfloat16", "float32", 16, 8), ("float64", "int8", 8, 16),
             ("int32", "uint8", 16, 4)]
    for j, (da, db, wa, wb) in enumerate(pairs):
        threads, ca, cb = (64, 2, 1) if j % 2 else (128, 1, 2)
        name = f"merged_{da}_{db}_w{wa}_{wb}"
        out.append(("merged", name, lambda f, a=(da, db, wa, wb, threads, ca, cb, 4, name): merged(f, *a),
                    {"dtype": f"{da}+{db}", "width": f"{wa}+{wb}", "threads": threads}))
    # realistic sizes: megabytes per tensor, thousands of blocks
    bigs = [("tile1d", ("float16", 2, 16, 128, 2, 256, 4096)), ("tile1d", ("int8", 1, 16, 256, 1, 512, 2048)),
            ("tile1d", ("float32", 4, 16, 128, 4, 512, 2048)), ("tile1d", ("float64", 8, 8, 256, 2, 512, 1024)),
            ("tile1d", ("bfloat16", 2, 8, 128, 2, 256, 3000)),
            ("tile2d", ("float16", 2, 16, 256, 64, 128, 64, 48)), ("tile2d", ("float32", 4, 16, 128, 32, 256, 32, 96)),
            ("tile2d", ("uint8", 1, 4, 256, 32, 64, 128, 32)),
            ("pipe", ("float16", 2, 16, 128, 2, 8, 2048)), ("pipe", ("int32", 4, 8, 128, 2, 6, 1536)),
            ("merged", ("float16", "int8", 16, 16, 128, 2, 1, 4096))]
    for j, (fam, a) in enumerate(bigs):
        name = f"big{j}_{fam}_{a[0]}"
        fn = {"tile1d": tile1d, "tile2d": tile2d, "pipe": pipe, "merged": merged}[fam]
        out.append(("big", name, lambda f, fn=fn, a=a + (name,): fn(f, *a), {"family": fam, "dtype": a[0]}))
    return out


def cases():
    out = []
    for fam, name, make, tags in configs():
        if fam == "pred":
            out.append({"name": f"{name}@0.1.8->0.1.9", "old": make("0.1.8"), "new": make("0.1.9"),
                        "target": "0.1.9", "source": "0.1.8", "expect": "equivalent", "tags": dict(tags, family=fam)})
            continue
        old = make("legacy")
        for t in TARGETS:
            out.append({"name": f"{name}@{t}", "old": old, "new": make(t), "target": t, "source": None,
                        "expect": "equivalent", "tags": dict(tags, family=fam)})
    return out


if __name__ == "__main__":
    cs = cases()
    fams: dict = {}
    for c in cs:
        fams[c["tags"].get("family")] = fams.get(c["tags"].get("family"), 0) + 1
    print(f"{len(configs())} kernels, {len(cs)} pairs: {fams}")
