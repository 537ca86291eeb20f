"""Block copy of a float16 matrix through dynamic shared memory, written in
the TVMScript style: the cp.async call takes its dtype as a trailing keyword
and sits inside T.evaluate."""

import tilelang.language as T

M, N = 256, 256
BLOCK = 64
THREADS = 128


@T.prim_func
def staged_copy(A: T.Tensor((M, N), "float16"), B: T.Tensor((M, N), "float16")):
    with T.Kernel(N // BLOCK, M // BLOCK, threads=THREADS) as (bx, by):
        T.reads(A[by * BLOCK : by * BLOCK + BLOCK, bx * BLOCK : bx * BLOCK + BLOCK])
        T.writes(B[by * BLOCK : by * BLOCK + BLOCK, bx * BLOCK : bx * BLOCK + BLOCK])
        tx = T.get_thread_binding()
        S = T.alloc_shared((BLOCK, BLOCK), "float16")
        for i in T.unroll(BLOCK * BLOCK // 8 // THREADS):
            T.evaluate(
                T.ptx_cp_async(
                    S.data,
                    (i * 16 + tx // 8) * BLOCK + tx % 8 * 8,
                    A.data,
                    (by * BLOCK + i * 16 + tx // 8) * N + bx * BLOCK + tx % 8 * 8,
                    16,
                    dtype="float16",
                )
            )
        T.evaluate(T.ptx_commit_group())
        T.evaluate(T.ptx_wait_group(0))
        T.sync_threads()
        for i in T.serial(BLOCK * BLOCK // THREADS):
            B[by * BLOCK + i * 2 + tx // BLOCK, bx * BLOCK + tx % BLOCK] = S[i * 2 + tx // BLOCK, tx % BLOCK]
