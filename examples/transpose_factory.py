"""Tiled transpose, built by a factory from module-level tile constants.

The element type is a factory parameter, so the shared tile and the
tensors share one dtype variable.  The tile rows are padded by PAD elements
to spread the transposed reads over the shared-memory banks.
"""

import tilelang
import tilelang.language as T

TILE = 64
PAD = 8
THREADS = 256


def make_transpose(M=256, N=256, dtype="float16"):
    @T.prim_func
    def transpose(
        A: T.Tensor((M, N), dtype),
        B: T.Tensor((N, M), dtype),
    ):
        with T.Kernel(N // TILE, M // TILE, threads=THREADS) as (bn, bm):
            T.reads(A[bm * TILE : bm * TILE + TILE, bn * TILE : bn * TILE + TILE])
            T.writes(B[bn * TILE : bn * TILE + TILE, bm * TILE : bm * TILE + TILE])
            tx = T.get_thread_binding()
            tile = T.alloc_shared((TILE, TILE + PAD), dtype, scope="shared")

            # 64 rows x 8 chunks of 16 bytes = 512 copies; two per thread.
            for i in T.serial(TILE * TILE // 8 // THREADS):
                r = (i * THREADS + tx) // 8
                c = (i * THREADS + tx) % 8 * 8
                T.ptx_cp_async(dtype, tile.data, r * (TILE + PAD) + c, A.data, (bm * TILE + r) * N + bn * TILE + c, 16)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            T.sync_threads()

            for i in T.serial(TILE * TILE // THREADS):
                r = i * (THREADS // TILE) + tx // TILE
                c = tx % TILE
                B[bn * TILE + c, bm * TILE + r] = tile[r, c]

    return transpose
