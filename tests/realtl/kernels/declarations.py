"""Buffer declarations the pointer type is read from: `T.Tensor(shape=, dtype=)` keywords, the `T.Buffer(...)`
call form, `T.match_buffer` of a handle, `T.alloc_buffer`/`T.decl_buffer` in shared.dyn memory, a parameter
without a dtype (float32, the default), a plain alias (`S = staged`), tuple unpacking of two allocations, dtypes
spelled `T.float16` and by a module constant, `T.alloc_local` and `T.alloc_fragment` destinations. The call's
dtype is the tiles' own wherever tiles are merged."""
import tilelang.language as T

N = 1024
HALF = "float16"


@T.prim_func
def keywords_and_call_form(A: T.Tensor(shape=(N,), dtype="float16"), B: T.Buffer((N,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        T.reads(A[bx * 128 : bx * 128 + 128])
        T.writes(B[bx * 128 : bx * 128 + 128])
        staged = T.alloc_shared(shape=(128,), dtype=T.float16)
        S = staged
        tx = T.get_thread_binding()
        T.ptx_cp_async(HALF, S.data, tx * 8, A.data, bx * 128 + tx * 8, 16)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(8):
            B[bx * 128 + tx * 8 + i] = staged[tx * 8 + i]


@T.prim_func
def matched_and_default_dtype(a: T.handle, C: T.Tensor((N,)), D: T.Tensor((N,))):
    A = T.match_buffer(a, (N,), "float16")
    with T.Kernel(8, threads=16) as bx:
        T.reads(A[bx * 128 : bx * 128 + 128], C[bx * 128 : bx * 128 + 128])
        T.writes(D[bx * 128 : bx * 128 + 128])
        S = T.alloc_buffer((128,), "float16", scope="shared.dyn")
        F = T.decl_buffer((128,), "float32", scope="shared.dyn")
        tx = T.get_thread_binding()
        T.ptx_cp_async("float16", S.data, tx * 8, A.data, bx * 128 + tx * 8, 16)
        T.ptx_cp_async("float32", F.data, tx * 4, C.data, bx * 128 + tx * 4, 16)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(8):
            D[bx * 128 + tx * 8 + i] = F[tx * 8 % 128 + i] + T.Cast("float32", S[tx * 8 + i])


@T.prim_func
def unpacked_tiles(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        T.reads(A[bx * 128 : bx * 128 + 128])
        T.writes(B[bx * 128 : bx * 128 + 128])
        lo, hi = T.alloc_shared((64,), "float16"), T.alloc_shared((64,), "float16")
        tx = T.get_thread_binding()
        T.ptx_cp_async("float16", lo.data, tx * 4, A.data, bx * 128 + tx * 4, 8)
        T.ptx_cp_async("float16", hi.data, tx * 4, A.data, bx * 128 + 64 + tx * 4, 8)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(4):
            B[bx * 128 + tx * 4 + i] = lo[tx * 4 + i]
            B[bx * 128 + 64 + tx * 4 + i] = hi[tx * 4 + i]


@T.prim_func
def local_and_fragment(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        T.reads(A[bx * 128 : bx * 128 + 128])
        T.writes(B[bx * 128 : bx * 128 + 128])
        L = T.alloc_local((8,), "float16")
        F = T.alloc_fragment((128,), "float16")
        tx = T.get_thread_binding()
        T.ptx_cp_async("float16", L.data, 0, A.data, bx * 128 + tx * 8, 16)
        T.ptx_cp_async("float16", F.data, tx * 8, A.data, bx * 128 + tx * 8, 16)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(8):
            B[bx * 128 + tx * 8 + i] = L[i] + F[tx * 8 + i]
