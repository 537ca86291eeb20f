"""Serialise a float16 matrix into a byte tensor through a uint8 staging tile.

The staging buffer is uint8 while the source is float16, so each cp.async
mixes widths: the destination offset counts bytes, the source offset counts
half-precision elements (8-byte copies, four halves each).
"""

import tilelang.language as T

M, N = 256, 256
BLOCK_M, BLOCK_N = 16, 64
ROW_BYTES = BLOCK_N * 2
THREADS = 128


@T.prim_func
def pack_f16_bytes(
    A: T.Tensor((M, N), "float16"),
    Out: T.Tensor((M, N * 2), "uint8"),
):
    with T.Kernel(N // BLOCK_N, M // BLOCK_M, threads=THREADS) as (bn, bm):
        T.reads(A[bm * BLOCK_M : bm * BLOCK_M + BLOCK_M, bn * BLOCK_N : bn * BLOCK_N + BLOCK_N])
        T.writes(Out[bm * BLOCK_M : bm * BLOCK_M + BLOCK_M, bn * ROW_BYTES : bn * ROW_BYTES + ROW_BYTES])
        tx = T.get_thread_binding()
        stage = T.alloc_shared((BLOCK_M, ROW_BYTES), "uint8", scope="shared")

        # 16 rows x 128 bytes = 256 copies of 8 bytes; two per thread.
        for i in T.serial(2):
            row = (i * THREADS + tx) // 16
            piece = (i * THREADS + tx) % 16
            T.ptx_cp_async(
                "uint8",
                stage.data,
                row * ROW_BYTES + piece * 8,
                A.data,
                (bm * BLOCK_M + row) * N + bn * BLOCK_N + piece * 4,
                8,
            )
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        T.sync_threads()

        for i in T.serial(BLOCK_M * ROW_BYTES // THREADS):
            row = i
            byte = tx
            Out[bm * BLOCK_M + row, bn * ROW_BYTES + byte] = stage[row, byte]
