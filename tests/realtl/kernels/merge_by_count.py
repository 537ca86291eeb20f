"""One shared.dyn allocation never merges, whatever its dtype: factories whose tile type (and scope) are
parameters, filled by byte-typed legacy calls.  0.1.7.post1 addresses the tile in its own type."""
import tilelang.language as T

N = 1024


def staged_copy(dtype="float16"):
    @T.prim_func
    def staged(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype)):
        with T.Kernel(8, threads=16) as bx:
            T.reads(A[bx * 128 : bx * 128 + 128])
            T.writes(B[bx * 128 : bx * 128 + 128])
            S = T.alloc_shared((128,), dtype)
            tx = T.get_thread_binding()
            T.ptx_cp_async("uint8", S.data, tx * 8, A.data, bx * 128 + tx * 8, 16)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            for i in T.serial(8):
                B[bx * 128 + tx * 8 + i] = S[tx * 8 + i]

    return staged


def scoped_copy(dtype="float16", scope="shared.dyn"):
    @T.prim_func
    def scoped(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype)):
        with T.Kernel(8, threads=16) as bx:
            T.reads(A[bx * 128 : bx * 128 + 128])
            T.writes(B[bx * 128 : bx * 128 + 128])
            S = T.alloc_shared((128,), dtype, scope)
            tx = T.get_thread_binding()
            T.ptx_cp_async("uint8", S.data, tx * 4, A.data, bx * 128 + tx * 4, 8)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            for i in T.serial(4):
                B[bx * 128 + tx * 4 + i] = S[tx * 4 + i]

    return scoped
