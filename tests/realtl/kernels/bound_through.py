"""Tiles reached through a binding the text shows, and buffers typed by a default.

`aliased_tiles`: static float16 tiles reached through an alias chain and through tuple
unpacking, copied by uint8 calls (outside merged shared memory the legacy offset
counts the tile's own elements, so the pointer type must come from the declaration, not
from the call's dtype).  `default_dtype_buffers`: `T.Buffer(shape=, dtype=)` by keyword,
a parameter and a shared buffer without a dtype (float32, their functions' default).
`two_aliases`: `T` and `TL` both bound to tilelang.language.
"""
import tilelang.language as T
import tilelang.language as TL

N = 2048
BLOCK = 64
THREADS = BLOCK // 8


@T.prim_func
def aliased_tiles(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16")):
    with T.Kernel(N // BLOCK, threads=THREADS) as bx:
        T.reads(A[bx * BLOCK : bx * BLOCK + BLOCK])
        T.writes(B[bx * BLOCK : bx * BLOCK + BLOCK])
        staged = T.alloc_shared((BLOCK,), "float16", scope="shared")
        S = staged
        W = S
        a_s, b_s = T.alloc_shared((BLOCK,), "float16", scope="shared"), T.alloc_shared((BLOCK,), "float16",
                                                                                        scope="shared")
        (c_s,) = (T.alloc_shared((BLOCK,), "float16", scope="shared"),)
        tx = T.get_thread_binding()
        T.ptx_cp_async("uint8", W.data, tx * 8, A.data, bx * BLOCK + tx * 8, 16)
        T.ptx_cp_async("uint8", a_s.data, tx * 8, A.data, bx * BLOCK + tx * 8, 16)
        T.ptx_cp_async("uint8", b_s.data, tx * 8, A.data, bx * BLOCK + tx * 8, 8)
        T.ptx_cp_async("uint8", c_s.data, tx * 8, A.data, bx * BLOCK + tx * 8, 4)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        T.sync_threads()
        for i in T.serial(8):
            B[bx * BLOCK + tx * 8 + i] = staged[tx * 8 + i] + a_s[tx * 8 + i] + b_s[tx * 8 + i] + c_s[tx * 8 + i]


@T.prim_func
def default_dtype_buffers(A: T.Buffer((N,)), B: T.Buffer(shape=(N,), dtype="float32")):
    with T.Kernel(N // BLOCK, threads=BLOCK // 4) as bx:
        T.reads(A[bx * BLOCK : bx * BLOCK + BLOCK])
        T.writes(B[bx * BLOCK : bx * BLOCK + BLOCK])
        S = T.alloc_buffer((BLOCK,), scope="shared")
        tx = T.get_thread_binding()
        T.ptx_cp_async("float32", S.data, tx * 4, A.data, bx * BLOCK + tx * 4, 16)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        T.sync_threads()
        for i in T.serial(4):
            B[bx * BLOCK + tx * 4 + i] = S[tx * 4 + i]


@T.prim_func
def two_aliases(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16")):
    with T.Kernel(N // BLOCK, threads=THREADS) as bx:
        T.reads(A[bx * BLOCK : bx * BLOCK + BLOCK])
        T.writes(B[bx * BLOCK : bx * BLOCK + BLOCK])
        S = T.alloc_shared((BLOCK,), "float16", scope="shared")
        R = TL.alloc_shared((BLOCK,), "float16", scope="shared")
        tx = T.get_thread_binding()
        TL.ptx_cp_async("float16", R.data, tx * 8, A.data, bx * BLOCK + tx * 8, 16)
        T.ptx_cp_async("float16", S.data, tx * 8, A.data, bx * BLOCK + tx * 8, 16)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        T.sync_threads()
        for i in T.serial(8):
            B[bx * BLOCK + tx * 8 + i] = S[tx * 8 + i] + R[tx * 8 + i]
