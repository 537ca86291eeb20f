"""Two declarations of one tile reach the call, a uint8 one and a float16 one, in the branches of a
factory `if`: 0.1.7.post1 addresses `S + tx * 8` in whichever type the factory picked (bytes tx * 8 or
tx * 16), so no one rewrite holds for both; the tool leaves it for a person.  The copies move 8 bytes, aligned
under both readings, so the legacy kernel also runs on a GPU."""
import tilelang.language as T

N = 1024


def staged_copy(raw=True):
    @T.prim_func
    def staged(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16")):
        with T.Kernel(8, threads=16) as bx:
            T.reads(A[bx * 128 : bx * 128 + 128])
            T.writes(B[bx * 128 : bx * 128 + 128])
            if raw:
                S = T.alloc_shared((256,), "uint8")
            else:
                S = T.alloc_shared((128,), "float16")
            tx = T.get_thread_binding()
            T.ptx_cp_async("float16", S.data, tx * 8, A.data, bx * 128 + tx * 4, 8)
            T.ptx_commit_group()
            T.ptx_wait_group(0)

    return staged
