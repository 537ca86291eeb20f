"""Shapes whose migration the text decides (issue 25's bullets, as the fixtures chained_tuple_annotated and
nested_if_declarations have them): chained assignments with tuple targets and an annotated declaration, and
declarations through nested ifs that agree with the call's dtype."""
import tilelang.language as T


@T.prim_func
def tuple_chain_merged(A: T.Tensor((1024,), "float16"), B: T.Tensor((1024,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        T.reads(A[bx * 128 : bx * 128 + 128])
        T.writes(B[bx * 128 : bx * 128 + 128])
        lo, hi = a_s, b_s = T.alloc_shared((256,), "uint8"), T.alloc_shared((128,), "float16")
        tx = T.get_thread_binding()
        T.ptx_cp_async("float16", lo.data, tx * 8, A.data, bx * 128 + tx * 8, 16)
        T.ptx_cp_async("float16", b_s.data, tx * 8, A.data, bx * 128 + tx * 8, 16)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(8):
            B[bx * 128 + tx * 8 + i] = hi[tx * 8 + i] + T.Cast("float16", a_s[tx * 16 + i])


@T.prim_func
def annotated_then_chain(A: T.Tensor((1024,), "float16"), B: T.Tensor((1024,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        T.reads(A[bx * 128 : bx * 128 + 128])
        T.writes(B[bx * 128 : bx * 128 + 128])
        raw: T.Buffer((256,), "uint8") = T.alloc_shared((256,), "uint8")
        stage = tile = raw
        tx = T.get_thread_binding()
        T.ptx_cp_async("float16", stage.data, tx * 16, A.data, bx * 128 + tx * 8, 16)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(8):
            B[bx * 128 + tx * 8 + i] = T.Cast("float16", tile[tx * 16 + i])


@T.prim_func
def tuple_chain_single(A: T.Tensor((1024,), "float16"), B: T.Tensor((1024,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        T.reads(A[bx * 128 : bx * 128 + 128])
        T.writes(B[bx * 128 : bx * 128 + 128])
        lo, acc = raw, frag = T.alloc_shared((256,), "uint8"), T.alloc_fragment((8,), "float32")
        tx = T.get_thread_binding()
        T.ptx_cp_async("float16", lo.data, tx * 16, A.data, bx * 128 + tx * 8, 16)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(8):
            acc[i] = T.Cast("float32", raw[tx * 16 + i])
            B[bx * 128 + tx * 8 + i] = T.Cast("float16", frag[i])


def make_same(wide=False):
    @T.prim_func
    def k(A: T.Tensor((1024,), "float16"), B: T.Tensor((1024,), "float16")):
        with T.Kernel(8, threads=16) as bx:
            T.reads(A[bx * 128 : bx * 128 + 128])
            T.writes(B[bx * 128 : bx * 128 + 128])
            if wide:
                if bx > 0:
                    S = T.alloc_shared((128,), "float16")
                else:
                    S = T.alloc_shared((128,), T.float16)
            else:
                S = T.alloc_shared((128,), "float16")
            tx = T.get_thread_binding()
            T.ptx_cp_async("float16", S.data, tx * 8, A.data, bx * 128 + tx * 8, 16)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            for i in T.serial(8):
                B[bx * 128 + tx * 8 + i] = S[tx * 8 + i]

    return k
