"""y = A @ x for a float16 matrix: a K loop that streams tiles of A and x into
shared memory with 16-byte cp.async copies, then reduces them in float32."""

import tilelang.language as T

M, K = 256, 256
BLOCK_M, BLOCK_K = 128, 64
THREADS = 128
VEC = 8  # float16 elements per 16-byte copy


@T.prim_func
def gemv_f16(
    A: T.Tensor((M, K), "float16"),
    x: T.Tensor((K,), "float16"),
    y: T.Tensor((M,), "float32"),
):
    with T.Kernel(M // BLOCK_M, threads=THREADS) as bm:
        T.reads(A[bm * BLOCK_M : bm * BLOCK_M + BLOCK_M, 0:K], x[0:K])
        T.writes(y[bm * BLOCK_M : bm * BLOCK_M + BLOCK_M])
        tx = T.get_thread_binding()
        A_s = T.alloc_shared((BLOCK_M, BLOCK_K), "float16")
        x_s = T.alloc_shared((BLOCK_K,), "float16")
        acc = T.alloc_local((1,), "float32")
        acc[0] = T.float32(0)
        for ko in T.Pipelined(K // BLOCK_K, num_stages=2):
            # A tile: BLOCK_M * BLOCK_K / VEC chunks of 16 bytes, 8 per thread.
            for i in T.serial(BLOCK_M * BLOCK_K // VEC // THREADS):
                chunk = i * THREADS + tx
                row = chunk // (BLOCK_K // VEC)
                col = chunk % (BLOCK_K // VEC) * VEC
                T.ptx_cp_async(
                    "float16",
                    A_s.data,
                    row * BLOCK_K + col,
                    A.data,
                    (bm * BLOCK_M + row) * K + ko * BLOCK_K + col,
                    16,
                )
            # x tile: BLOCK_K / VEC chunks, one each for the first threads.
            if tx < BLOCK_K // VEC:
                T.ptx_cp_async("float16", x_s.data, tx * VEC, x.data, ko * BLOCK_K + tx * VEC, 16)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            T.sync_threads()
            for k in T.serial(BLOCK_K):
                acc[0] = acc[0] + T.Cast("float32", A_s[tx, k]) * T.Cast("float32", x_s[k])
            T.sync_threads()
        y[bm * BLOCK_M + tx] = acc[0]
