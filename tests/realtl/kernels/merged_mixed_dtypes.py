"""Kernels whose legacy cp.async calls name a dtype other than the destination tile's.

Each kernel but the last has two or more used shared.dyn tiles, so the legacy
lowering (TileLang 0.1.7.post1) merges them into one byte buffer and counts a
destination offset in elements of the call's dtype.  The last has one, so its
offsets count the tile's own elements.  Copies of 4, 8 and 16 bytes.
"""
import tilelang.language as T

N = 2048
BLOCK = 64
THREADS = BLOCK // 8


@T.prim_func
def halves_into_bytes(A: T.Tensor((N,), "float16"), Out: T.Tensor((N * 2,), "uint8"), Acc: T.Tensor((N,), "float32")):
    with T.Kernel(N // BLOCK, threads=THREADS) as bx:
        T.reads(A[bx * BLOCK : bx * BLOCK + BLOCK])
        T.writes(Out[bx * BLOCK * 2 : bx * BLOCK * 2 + BLOCK * 2], Acc[bx * BLOCK : bx * BLOCK + BLOCK])
        stage = T.alloc_shared((BLOCK * 2,), "uint8")
        acc = T.alloc_shared((BLOCK,), "float32")
        tx = T.get_thread_binding()
        for i in T.serial(8):
            acc[tx * 8 + i] = T.Cast("float32", tx)
        # 16 bytes: eight halves, the offset counted in halves
        T.ptx_cp_async("float16", stage.data, tx * 8, A.data, bx * BLOCK + tx * 8, 16)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        T.sync_threads()
        for i in T.serial(16):
            Out[bx * BLOCK * 2 + tx * 16 + i] = stage[tx * 16 + i]
        for i in T.serial(8):
            Acc[bx * BLOCK + tx * 8 + i] = acc[tx * 8 + i]


@T.prim_func
def three_widths(A: T.Tensor((N,), "float16"), Out: T.Tensor((N * 2,), "uint8"), Copy: T.Tensor((N,), "float16")):
    with T.Kernel(N // BLOCK, threads=THREADS) as bx:
        T.reads(A[bx * BLOCK : bx * BLOCK + BLOCK])
        T.writes(Out[bx * BLOCK * 2 : bx * BLOCK * 2 + BLOCK * 2], Copy[bx * BLOCK : bx * BLOCK + BLOCK])
        stage = T.alloc_shared((BLOCK * 2,), "uint8")
        plain = T.alloc_shared((BLOCK,), "float16")
        tx = T.get_thread_binding()
        # the first half of each thread's bytes in one 8-byte copy, the rest in two 4-byte copies
        T.ptx_cp_async("float16", stage.data, tx * 8, A.data, bx * BLOCK + tx * 8, 8)
        for j in T.serial(2):
            T.ptx_cp_async("float16", stage.data, tx * 8 + 4 + j * 2, A.data, bx * BLOCK + tx * 8 + 4 + j * 2, 4)
        # a same-dtype copy into the second tile
        T.ptx_cp_async("float16", plain.data, tx * 8, A.data, bx * BLOCK + tx * 8, 16)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        T.sync_threads()
        for i in T.serial(16):
            Out[bx * BLOCK * 2 + tx * 16 + i] = stage[tx * 16 + i]
        for i in T.serial(8):
            Copy[bx * BLOCK + tx * 8 + i] = plain[tx * 8 + i]


@T.prim_func
def words_into_int8(A: T.Tensor((N,), "float32"), Out: T.Tensor((N * 4,), "int8"), Flag: T.Tensor((N // BLOCK,), "int32")):
    with T.Kernel(N // BLOCK, threads=THREADS) as bx:
        T.reads(A[bx * BLOCK : bx * BLOCK + BLOCK])
        T.writes(Out[bx * BLOCK * 4 : bx * BLOCK * 4 + BLOCK * 4], Flag[bx : bx + 1])
        flag = T.alloc_shared((THREADS,), "int32")
        raw = T.alloc_shared((BLOCK * 4,), "int8")
        tx = T.get_thread_binding()
        flag[tx] = tx
        # float32 words into an int8 tile: the offset counts words, 16 bytes a copy
        for j in T.serial(2):
            T.ptx_cp_async("float32", raw.data, tx * 8 + j * 4, A.data, bx * BLOCK + tx * 8 + j * 4, 16)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        T.sync_threads()
        for i in T.serial(32):
            Out[bx * BLOCK * 4 + tx * 32 + i] = raw[tx * 32 + i]
        if tx == 0:
            Flag[bx] = flag[THREADS - 1]


@T.prim_func
def one_tile_counts_bytes(A: T.Tensor((N,), "float16"), Out: T.Tensor((N * 2,), "uint8")):
    with T.Kernel(N // BLOCK, threads=THREADS) as bx:
        T.reads(A[bx * BLOCK : bx * BLOCK + BLOCK])
        T.writes(Out[bx * BLOCK * 2 : bx * BLOCK * 2 + BLOCK * 2])
        stage = T.alloc_shared((BLOCK * 2,), "uint8")
        tx = T.get_thread_binding()
        # the only shared.dyn tile: not merged, so the offset counts its own bytes
        T.ptx_cp_async("float16", stage.data, tx * 16, A.data, bx * BLOCK + tx * 8, 16)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        T.sync_threads()
        for i in T.serial(16):
            Out[bx * BLOCK * 2 + tx * 16 + i] = stage[tx * 16 + i]
