"""The legacy argument spellings: six positional (with comments inside the call, over several lines), five
positional and `dtype=` last inside `T.evaluate` (TVMScript's style), and the legacy keywords in order and out of
order. Float16 tiles, one per kernel."""
import tilelang.language as T

N = 1024


@T.prim_func
def positional_with_comments(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        T.reads(A[bx * 128 : bx * 128 + 128])
        T.writes(B[bx * 128 : bx * 128 + 128])
        S = T.alloc_shared((128,), "float16")
        tx = T.get_thread_binding()
        T.ptx_cp_async(
            "float16",  # the element type of both tiles
            S.data,
            tx * 8,  # eight halves per thread
            A.data,
            bx * 128 + tx * 8,
            16,
        )
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(8):
            B[bx * 128 + tx * 8 + i] = S[tx * 8 + i]


@T.prim_func
def dtype_keyword_in_evaluate(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        T.reads(A[bx * 128 : bx * 128 + 128])
        T.writes(B[bx * 128 : bx * 128 + 128])
        S = T.alloc_shared((128,), "float16")
        tx = T.get_thread_binding()
        T.evaluate(T.ptx_cp_async(S.data, tx * 4, A.data, bx * 128 + tx * 4, 8, dtype="float16"))
        T.ptx_cp_async(S.data, 64 + tx * 4, A.data, bx * 128 + 64 + tx * 4, 8, dtype="float16")
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(8):
            B[bx * 128 + tx * 8 + i] = S[tx * 8 + i]


@T.prim_func
def legacy_keywords(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        T.reads(A[bx * 128 : bx * 128 + 128])
        T.writes(B[bx * 128 : bx * 128 + 128])
        S = T.alloc_shared((128,), "float16")
        tx = T.get_thread_binding()
        T.ptx_cp_async(dtype="float16", shared_ptr=S.data, shared_offset=tx * 4, global_ptr=A.data,
                       global_offset=bx * 128 + tx * 4, bytes=8)
        T.ptx_cp_async(bytes=8, global_offset=bx * 128 + 64 + tx * 4, global_ptr=A.data,
                       shared_offset=64 + tx * 4, shared_ptr=S.data, dtype="float16")
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(8):
            B[bx * 128 + tx * 8 + i] = S[tx * 8 + i]
