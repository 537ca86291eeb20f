"""A chain of three private macros, keywords in another order at each link, to two kernels with uint8 tiles
(the fixture macro_chain_three_deep's shape)."""
import tilelang.language as T


@T.macro
def _copy_in(dst, src, d_off, s_off):
    T.ptx_cp_async("float16", dst.data, d_off, src.data, s_off, 16)


@T.macro
def _stage_row(src, base, tile, tx):
    _copy_in(s_off=base + tx * 8, dst=tile, src=src, d_off=tx * 16)


@T.macro
def _stage_block(tile, A, bx, tx):
    _stage_row(A, bx * 128, tile=tile, tx=tx)


@T.prim_func
def chain_positional(A: T.Tensor((1024,), "float16"), B: T.Tensor((1024,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        T.reads(A[bx * 128 : bx * 128 + 128])
        T.writes(B[bx * 128 : bx * 128 + 128])
        raw = T.alloc_shared((256,), "uint8")
        tx = T.get_thread_binding()
        _stage_block(raw, A, bx, tx)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(8):
            B[bx * 128 + tx * 8 + i] = T.Cast("float16", raw[tx * 16 + i])


@T.prim_func
def chain_keywords(A: T.Tensor((1024,), "float16"), B: T.Tensor((1024,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        T.reads(A[bx * 128 : bx * 128 + 128])
        T.writes(B[bx * 128 : bx * 128 + 128])
        tile = T.alloc_shared((256,), "uint8")
        tx = T.get_thread_binding()
        _stage_block(tx=tx, bx=bx, A=A, tile=tile)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(8):
            B[bx * 128 + tx * 8 + i] = T.Cast("float16", tile[tx * 16 + i])
