"""C = A + B for float32 matrices; both operand tiles are staged by one
T.macro whose buffer parameters carry no annotation."""

import tilelang.language as T

M, N = 256, 256
BLOCK_M, BLOCK_N = 16, 128
THREADS = 128


@T.macro
def stage_tile(dst, src, tx, row0, col0):
    # 16 x 128 floats in 8-byte pieces: 1024 copies, eight per thread.
    for i in T.serial(8):
        r = i * 2 + tx // 64
        c = tx % 64 * 2
        T.ptx_cp_async("float32", dst.data, r * BLOCK_N + c, src.data, (row0 + r) * N + col0 + c, 8)


@T.prim_func
def add_f32(
    A: T.Tensor((M, N), "float32"),
    B: T.Tensor((M, N), "float32"),
    C: T.Tensor((M, N), "float32"),
):
    with T.Kernel(N // BLOCK_N, M // BLOCK_M, threads=THREADS) as (bn, bm):
        T.reads(A[bm * BLOCK_M : bm * BLOCK_M + BLOCK_M, bn * BLOCK_N : bn * BLOCK_N + BLOCK_N], B[bm * BLOCK_M : bm * BLOCK_M + BLOCK_M, bn * BLOCK_N : bn * BLOCK_N + BLOCK_N])
        T.writes(C[bm * BLOCK_M : bm * BLOCK_M + BLOCK_M, bn * BLOCK_N : bn * BLOCK_N + BLOCK_N])
        tx = T.get_thread_binding()
        A_s = T.alloc_shared((BLOCK_M, BLOCK_N), "float32", scope="shared")
        B_s = T.alloc_shared((BLOCK_M, BLOCK_N), "float32", scope="shared")
        stage_tile(A_s, A, tx, bm * BLOCK_M, bn * BLOCK_N)
        stage_tile(B_s, B, tx, bm * BLOCK_M, bn * BLOCK_N)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        T.sync_threads()
        for i in T.serial(BLOCK_M * BLOCK_N // THREADS):
            C[bm * BLOCK_M + i, bn * BLOCK_N + tx] = A_s[i, tx] + B_s[i, tx]
