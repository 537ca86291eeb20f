"""C = A * scale + bias on a float32 matrix, per column.

Tiles of A arrive in 16-byte cp.async copies (four floats); the per-column
scale and bias are fetched with 4-byte copies, one float per thread.  The
shared buffers are static (scope "shared"), so TileLang keeps them apart.
"""

import tilelang.language as T

M, N = 256, 256
BLOCK_M, BLOCK_N = 32, 64
THREADS = 128


@T.prim_func
def scale_bias_f32(
    A: T.Tensor((M, N), "float32"),
    scale: T.Tensor((N,), "float32"),
    bias: T.Tensor((N,), "float32"),
    C: T.Tensor((M, N), "float32"),
):
    with T.Kernel(N // BLOCK_N, M // BLOCK_M, threads=THREADS) as (bn, bm):
        T.reads(A[bm * BLOCK_M : bm * BLOCK_M + BLOCK_M, bn * BLOCK_N : bn * BLOCK_N + BLOCK_N], scale[bn * BLOCK_N : bn * BLOCK_N + BLOCK_N], bias[bn * BLOCK_N : bn * BLOCK_N + BLOCK_N])
        T.writes(C[bm * BLOCK_M : bm * BLOCK_M + BLOCK_M, bn * BLOCK_N : bn * BLOCK_N + BLOCK_N])
        tx = T.get_thread_binding()
        A_s = T.alloc_shared((BLOCK_M, BLOCK_N), "float32", scope="shared")
        scale_s = T.alloc_shared((BLOCK_N,), "float32", scope="shared")
        bias_s = T.alloc_shared((BLOCK_N,), "float32", scope="shared")

        # 32 x 64 floats = 512 chunks of four; four per thread.
        for i in T.unroll(4):
            row = (i * THREADS + tx) // 16
            col = (i * THREADS + tx) % 16 * 4
            T.ptx_cp_async(
                "float32",
                A_s.data,
                row * BLOCK_N + col,
                A.data,
                (bm * BLOCK_M + row) * N + bn * BLOCK_N + col,
                16,
            )
        if tx < BLOCK_N:
            T.ptx_cp_async("float32", scale_s.data, tx, scale.data, bn * BLOCK_N + tx, 4)
            T.ptx_cp_async("float32", bias_s.data, tx, bias.data, bn * BLOCK_N + tx, 4)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        T.sync_threads()

        for i in T.serial(BLOCK_M * BLOCK_N // THREADS):
            row = (i * THREADS + tx) // BLOCK_N
            col = (i * THREADS + tx) % BLOCK_N
            C[bm * BLOCK_M + row, bn * BLOCK_N + col] = A_s[row, col] * scale_s[col] + bias_s[col]
