"""Calls through names the text binds: `cp = T.ptx_cp_async`, `lang = tilelang.language`, `L2 = T` at module
level, a walrus `(copy := T.ptx_cp_async)(...)` in the kernel body, and a macro parameter whose default is the
intrinsic (an unsafe fix: every caller keeps the default). (Bound by a plain assignment inside a kernel body,
`cp = T.ptx_cp_async` is refused by TileLang 0.1.7.post1 itself.)"""
import tilelang
import tilelang.language as T

cp = T.ptx_cp_async
lang = tilelang.language
L2 = T

N = 1024


@T.prim_func
def bound_names(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        T.reads(A[bx * 128 : bx * 128 + 128])
        T.writes(B[bx * 128 : bx * 128 + 128])
        S = T.alloc_shared((128,), "float16")
        tx = T.get_thread_binding()
        cp("float16", S.data, tx * 2, A.data, bx * 128 + tx * 2, 4)
        lang.ptx_cp_async("float16", S.data, 32 + tx * 2, A.data, bx * 128 + 32 + tx * 2, 4)
        L2.ptx_cp_async("float16", S.data, 64 + tx * 4, A.data, bx * 128 + 64 + tx * 4, 8)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(8):
            B[bx * 128 + tx * 8 + i] = S[tx * 8 + i]


@T.prim_func
def walrus(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        T.reads(A[bx * 128 : bx * 128 + 128])
        T.writes(B[bx * 128 : bx * 128 + 128])
        S = T.alloc_shared((128,), "float16")
        tx = T.get_thread_binding()
        (copy := T.ptx_cp_async)("float16", S.data, tx * 8, A.data, bx * 128 + tx * 8, 16)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(8):
            B[bx * 128 + tx * 8 + i] = S[tx * 8 + i]


@T.macro
def stage(S, A, base, tx, copy=T.ptx_cp_async):
    copy("float16", S.data, tx * 8, A.data, base + tx * 8, 16)


@T.prim_func
def by_default(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        T.reads(A[bx * 128 : bx * 128 + 128])
        T.writes(B[bx * 128 : bx * 128 + 128])
        S = T.alloc_shared((128,), "float16")
        tx = T.get_thread_binding()
        stage(S, A, bx * 128, tx)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(8):
            B[bx * 128 + tx * 8 + i] = S[tx * 8 + i]
