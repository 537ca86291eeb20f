"""A macro called from other macros (keywords in another order, positionally): the kernels at the end of
the chain of calls decide the pointer types.  Both kernels stage float16 data in their only shared.dyn
tile, a uint8 one, so the destination is addressed in uint8 (not merged)."""
import tilelang.language as T

N = 1024


@T.macro
def _copy16(dst, src, dst_off, src_off):
    T.ptx_cp_async("float16", dst.data, dst_off, src.data, src_off, 16)


@T.macro
def _stage(g, s, base, tx):
    _copy16(src_off=base + tx * 8, src=g, dst_off=tx * 16, dst=s)


@T.macro
def _stage_pos(g, s, base, tx):
    _copy16(s, g, tx * 16, base + tx * 8)


@T.prim_func
def macro_chain(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        T.reads(A[bx * 128 : bx * 128 + 128])
        T.writes(B[bx * 128 : bx * 128 + 128])
        raw = T.alloc_shared((256,), "uint8")
        tx = T.get_thread_binding()
        _stage(A, raw, bx * 128, tx)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(8):
            B[bx * 128 + tx * 8 + i] = T.Cast("float16", raw[tx * 16 + i])


@T.prim_func
def macro_chain_pos(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        T.reads(A[bx * 128 : bx * 128 + 128])
        T.writes(B[bx * 128 : bx * 128 + 128])
        tile = T.alloc_shared((256,), "uint8")
        tx = T.get_thread_binding()
        _stage_pos(A, tile, bx * 128, tx)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(8):
            B[bx * 128 + tx * 8 + i] = T.Cast("float16", tile[tx * 16 + i])
