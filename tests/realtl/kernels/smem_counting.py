"""Counting allocations the way TileLang 0.1.7.post1's merge pass does, where the call's dtype (float16) is not
the uint8 tile's: a static `scope="shared"` tile (never merged: P uint8), a `bool` tile of `alloc_shared` (static,
so the uint8 tile is the only shared.dyn one: P uint8), a tile nothing uses (dropped: P uint8), and a macro that
allocates, called twice (two shared.dyn tiles, merged: P float16, the offset in float16 elements)."""
import tilelang.language as T

N = 1024


@T.prim_func
def static_tile(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        T.reads(A[bx * 128 : bx * 128 + 128])
        T.writes(B[bx * 128 : bx * 128 + 128])
        raw = T.alloc_shared((256,), "uint8", scope="shared")
        half = T.alloc_shared((128,), "float16", "shared")
        tx = T.get_thread_binding()
        T.ptx_cp_async("float16", raw.data, tx * 16, A.data, bx * 128 + tx * 8, 16)
        T.ptx_cp_async("float16", half.data, tx * 8, A.data, bx * 128 + tx * 8, 16)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(8):
            B[bx * 128 + tx * 8 + i] = half[tx * 8 + i] + T.Cast("float16", raw[tx * 16 + i])


@T.prim_func
def bool_and_unused(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        T.reads(A[bx * 128 : bx * 128 + 128])
        T.writes(B[bx * 128 : bx * 128 + 128])
        raw = T.alloc_shared((256,), "uint8")
        flags = T.alloc_shared((16,), "bool")
        spare = T.alloc_shared((64,), "float16")
        tx = T.get_thread_binding()
        flags[tx] = tx < 8
        T.ptx_cp_async("float16", raw.data, tx * 16, A.data, bx * 128 + tx * 8, 16)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(8):
            B[bx * 128 + tx * 8 + i] = T.if_then_else(flags[tx], T.Cast("float16", raw[tx * 16 + i]), A[0])


@T.macro
def stage_into_fresh(A, B, base, tx):
    tile = T.alloc_shared((256,), "uint8")
    T.ptx_cp_async("float16", tile.data, tx * 8, A.data, base + tx * 8, 16)
    T.ptx_commit_group()
    T.ptx_wait_group(0)
    for i in T.serial(8):
        B[base + tx * 8 + i] = T.Cast("float16", tile[tx * 16 + i])


@T.prim_func
def macro_allocates_twice(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16")):
    with T.Kernel(4, threads=16) as bx:
        T.reads(A[bx * 256 : bx * 256 + 256])
        T.writes(B[bx * 256 : bx * 256 + 256])
        tx = T.get_thread_binding()
        stage_into_fresh(A, B, bx * 256, tx)
        stage_into_fresh(A, B, bx * 256 + 128, tx)
