"""A module-level macro called by two kernels of the file with the same dtype (uint8 tiles, each its
kernel's only shared.dyn allocation: not merged).  Safe where no other file of the repository imports
`stage`; outside any repository an unsafe fix."""
import tilelang.language as T

N = 1024


@T.macro
def stage(dst, src, base, tx):
    T.ptx_cp_async("float16", dst.data, tx * 16, src.data, base + tx * 8, 16)


@T.prim_func
def first(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        T.reads(A[bx * 128 : bx * 128 + 128])
        T.writes(B[bx * 128 : bx * 128 + 128])
        raw = T.alloc_shared((256,), "uint8")
        tx = T.get_thread_binding()
        stage(raw, A, bx * 128, tx)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(8):
            B[bx * 128 + tx * 8 + i] = T.Cast("float16", raw[tx * 16 + i])


@T.prim_func
def second(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        T.reads(A[bx * 128 : bx * 128 + 128])
        T.writes(B[bx * 128 : bx * 128 + 128])
        tile = T.alloc_shared((256,), "uint8")
        tx = T.get_thread_binding()
        stage(tile, A, bx * 128, tx)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(8):
            B[bx * 128 + tx * 8 + i] = T.Cast("float16", tile[tx * 16 + i]) + 1
