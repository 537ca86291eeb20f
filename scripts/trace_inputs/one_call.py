# One legacy cp.async call in one kernel: what scripts/trace_call.py runs the Python front end on.
import tilelang.language as T


@T.prim_func
def copy_tile(A: T.Tensor((512,), "float16"), B: T.Tensor((512,), "float16")):
    with T.Kernel(4, threads=32) as bx:
        tile = T.alloc_shared((128,), "float16")
        tx = T.get_thread_binding()
        T.ptx_cp_async("float16", tile.data, tx * 4, A.data, bx * 128 + tx * 4, 8)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        B[bx * 128 + tx * 4] = tile[tx * 4]
