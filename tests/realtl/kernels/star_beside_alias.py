"""`from tilelang.language import *` beside `import tilelang.language as T`: bare names and `T.` names are the
same module's; one uint8 tile, not merged."""
import tilelang.language as T
from tilelang.language import *


@prim_func
def k(A: Tensor((1024,), "float16"), B: T.Tensor((1024,), "float16")):
    with Kernel(8, threads=16) as bx:
        reads(A[bx * 128 : bx * 128 + 128])
        T.writes(B[bx * 128 : bx * 128 + 128])
        raw = alloc_shared((512,), "uint8")
        tx = T.get_thread_binding()
        ptx_cp_async("float16", raw.data, tx * 16, A.data, bx * 128 + tx * 8, 8)
        T.ptx_cp_async("float16", raw.data, 128 + tx * 16, A.data, bx * 128 + 4 + tx * 8, 8)
        ptx_commit_group()
        T.ptx_wait_group(0)
        for i in serial(8):
            B[bx * 128 + tx * 8 + i] = Cast("float16", raw[tx * 16 + i])
