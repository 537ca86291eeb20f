"""The intrinsic under each spelling the README lists for TileLang: an alias other than `T`, `from tilelang
import language as L`, the name imported (as itself and `as cp`), the module path spelled out, the name imported
from the deeper `tilelang.language.tir` and `tilelang.language.tir.op` modules. One float16 tile per kernel, a
float16 call.

(Up to 0.1.8 the attribute `tilelang.language.tir` is TVM's `tvm.tir`: `import tilelang.language.tir as X` and
`X.ptx_cp_async` reach TVM's legacy wrapper, not TileLang's op, so only the imported names are TileLang's there.)"""
import tilelang
import tilelang.language as TL
from tilelang import language as L
from tilelang.language import ptx_cp_async
from tilelang.language import ptx_cp_async as cp
from tilelang.language.tir import ptx_cp_async as tir_cp
from tilelang.language.tir.op import ptx_cp_async as op_cp

N = 1024


@TL.prim_func
def alias_tl(A: TL.Tensor((N,), "float16"), B: TL.Tensor((N,), "float16")):
    with TL.Kernel(8, threads=16) as bx:
        TL.reads(A[bx * 128 : bx * 128 + 128])
        TL.writes(B[bx * 128 : bx * 128 + 128])
        S = TL.alloc_shared((128,), "float16")
        tx = TL.get_thread_binding()
        TL.ptx_cp_async("float16", S.data, tx * 8, A.data, bx * 128 + tx * 8, 16)
        TL.ptx_commit_group()
        TL.ptx_wait_group(0)
        for i in TL.serial(8):
            B[bx * 128 + tx * 8 + i] = S[tx * 8 + i]


@L.prim_func
def from_tilelang_import_language(A: L.Tensor((N,), "float16"), B: L.Tensor((N,), "float16")):
    with L.Kernel(8, threads=16) as bx:
        L.reads(A[bx * 128 : bx * 128 + 128])
        L.writes(B[bx * 128 : bx * 128 + 128])
        S = L.alloc_shared((128,), "float16")
        tx = L.get_thread_binding()
        L.ptx_cp_async("float16", S.data, tx * 8, A.data, bx * 128 + tx * 8, 16)
        L.ptx_commit_group()
        L.ptx_wait_group(0)
        for i in L.serial(8):
            B[bx * 128 + tx * 8 + i] = S[tx * 8 + i]


@TL.prim_func
def imported_names(A: TL.Tensor((N,), "float16"), B: TL.Tensor((N,), "float16")):
    with TL.Kernel(8, threads=16) as bx:
        TL.reads(A[bx * 128 : bx * 128 + 128])
        TL.writes(B[bx * 128 : bx * 128 + 128])
        S = TL.alloc_shared((128,), "float16")
        tx = TL.get_thread_binding()
        ptx_cp_async("float16", S.data, tx * 4, A.data, bx * 128 + tx * 4, 8)
        cp("float16", S.data, 64 + tx * 4, A.data, bx * 128 + 64 + tx * 4, 8)
        TL.ptx_commit_group()
        TL.ptx_wait_group(0)
        for i in TL.serial(8):
            B[bx * 128 + tx * 8 + i] = S[tx * 8 + i]


@TL.prim_func
def spelled_out(A: TL.Tensor((N,), "float16"), B: TL.Tensor((N,), "float16")):
    with TL.Kernel(8, threads=16) as bx:
        TL.reads(A[bx * 128 : bx * 128 + 128])
        TL.writes(B[bx * 128 : bx * 128 + 128])
        S = TL.alloc_shared((128,), "float16")
        tx = TL.get_thread_binding()
        tilelang.language.ptx_cp_async("float16", S.data, tx * 8, A.data, bx * 128 + tx * 8, 16)
        TL.ptx_commit_group()
        TL.ptx_wait_group(0)
        for i in TL.serial(8):
            B[bx * 128 + tx * 8 + i] = S[tx * 8 + i]


@TL.prim_func
def deeper_modules(A: TL.Tensor((N,), "float16"), B: TL.Tensor((N,), "float16")):
    with TL.Kernel(8, threads=16) as bx:
        TL.reads(A[bx * 128 : bx * 128 + 128])
        TL.writes(B[bx * 128 : bx * 128 + 128])
        S = TL.alloc_shared((128,), "float16")
        tx = TL.get_thread_binding()
        tir_cp("float16", S.data, tx * 4, A.data, bx * 128 + tx * 4, 8)
        op_cp("float16", S.data, 64 + tx * 4, A.data, bx * 128 + 64 + tx * 4, 8)
        TL.ptx_commit_group()
        TL.ptx_wait_group(0)
        for i in TL.serial(8):
            B[bx * 128 + tx * 8 + i] = S[tx * 8 + i]
