"""A chained assignment `stage = tile = raw`: the tile keeps its uint8 type, the only shared.dyn tile of
its kernel (not merged), under a float16 call."""
import tilelang.language as T

N = 1024


@T.prim_func
def k(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        T.reads(A[bx * 128 : bx * 128 + 128])
        T.writes(B[bx * 128 : bx * 128 + 128])
        raw = T.alloc_shared((256,), "uint8")
        stage = tile = raw
        tx = T.get_thread_binding()
        T.ptx_cp_async("float16", stage.data, tx * 16, A.data, bx * 128 + tx * 8, 16)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(8):
            B[bx * 128 + tx * 8 + i] = T.Cast("float16", tile[tx * 16 + i])
