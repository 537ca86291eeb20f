"""Every TileLang name taken with a star import: a bare `@prim_func`, `alloc_shared`, `ptx_cp_async`.
Two used shared.dyn tiles: 0.1.7.post1 merges them, so the uint8 tile's offset counts float16 elements."""
from tilelang.language import *

N = 1024


@prim_func
def star_merged(A: Tensor((N,), "float16"), B: Tensor((N,), "float16")):
    with Kernel(8, threads=16) as bx:
        reads(A[bx * 128 : bx * 128 + 128])
        writes(B[bx * 128 : bx * 128 + 128])
        raw = alloc_shared((256,), "uint8")
        half = alloc_shared((128,), float16)
        tx = get_thread_binding()
        ptx_cp_async("float16", raw.data, tx * 8, A.data, bx * 128 + tx * 8, 16)
        ptx_cp_async("float16", half.data, tx * 8, A.data, bx * 128 + tx * 8, 16)
        ptx_commit_group()
        ptx_wait_group(0)
        for i in serial(8):
            B[bx * 128 + tx * 8 + i] = half[tx * 8 + i] + Cast("float16", raw[tx * 16 + i])
