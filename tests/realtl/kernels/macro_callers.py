"""Macros whose buffer parameters are typed by what their calls pass.

`load_tile`'s annotation says float32 while its call passes a float16 tile: TileLang
addresses the tile it is given, so the migration must use float16.  `stage_bytes`
takes pointer parameters, typed by the `.data` its call passes.
"""
import tilelang.language as T

N = 2048
BLOCK = 64
THREADS = BLOCK // 8


@T.macro
def _load_tile(smem: T.Tensor((BLOCK,), "float32"), g, base, tx):
    T.ptx_cp_async("float16", smem.data, tx * 8, g.data, base + tx * 8, 16)


@T.macro
def _stage_bytes(dst_ptr, src_ptr, dst_off, src_off):
    T.ptx_cp_async("uint8", dst_ptr, dst_off, src_ptr, src_off, 8)


@T.prim_func
def macro_typed_by_calls(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16"),
                         R: T.Tensor((N,), "uint8"), S: T.Tensor((N,), "uint8")):
    with T.Kernel(N // BLOCK, threads=THREADS) as bx:
        T.reads(A[bx * BLOCK : bx * BLOCK + BLOCK], R[bx * BLOCK : bx * BLOCK + BLOCK])
        T.writes(B[bx * BLOCK : bx * BLOCK + BLOCK], S[bx * BLOCK : bx * BLOCK + BLOCK])
        tile = T.alloc_shared((BLOCK,), "float16", scope="shared")
        raw = T.alloc_shared((BLOCK,), "uint8", scope="shared")
        tx = T.get_thread_binding()
        _load_tile(tile, A, bx * BLOCK, tx)
        _stage_bytes(raw.data, R.data, tx * 8, bx * BLOCK + tx * 8)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        T.sync_threads()
        for i in T.serial(8):
            B[bx * BLOCK + tx * 8 + i] = tile[tx * 8 + i]
            S[bx * BLOCK + tx * 8 + i] = raw[tx * 8 + i]
