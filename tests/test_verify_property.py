"""Property: for any buffer type and cp.async width, the migration written by
the rules of docs/design.md is equivalent, and the same call with a pointer type of
another width is refuted."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cpasync_migrate.rules import load_rules
from cpasync_migrate.verify import verify_source

pytestmark = pytest.mark.slow  # property tests

RULES = load_rules()
SIZES = {"int8": 1, "uint8": 1, "float16": 2, "bfloat16": 2, "int16": 2, "float32": 4, "int32": 4, "float64": 8,
         "int64": 8}

TEMPLATE = '''import tilelang.language as T


def make(rows=4, dtype="{dt}"):
    @T.prim_func
    def main(A: T.Tensor((rows, {cols}), dtype), B: T.Tensor((rows, {cols}), dtype)):
        with T.Kernel(rows, threads={threads}) as bx:
            tx = T.get_thread_binding()
            S = T.alloc_shared(({cols},), dtype)
            {call}
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            for j in T.serial({cols}):
                if tx == 0:
                    B[bx, j] = S[j]

    return main
'''


def texts(dt, nbytes, threads, ptype, size_arg):
    per = nbytes // SIZES[dt]  # elements of dt per chunk
    cols = per * threads
    legacy = f'T.ptx_cp_async("{dt}", S.data, tx * {per}, A.data, bx * {cols} + tx * {per}, {nbytes})'
    k = SIZES[ptype]
    # offsets rescaled into ptype (exact: chunks are aligned)
    scale = f" * {SIZES[dt] // k}" if SIZES[dt] >= k else f" // {k // SIZES[dt]}"
    n = nbytes // k
    new = (f'T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation("{ptype}"), S.data, (tx * {per}){scale}, {n}, 2), '
           f'T.tvm_access_ptr(T.type_annotation("{ptype}"), A.data, (bx * {cols} + tx * {per}){scale}, {n}, 1), '
           f'{size_arg(n)})')
    return (TEMPLATE.format(dt=dt, cols=cols, threads=threads, call=legacy),
            TEMPLATE.format(dt=dt, cols=cols, threads=threads, call=new))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dt=st.sampled_from(sorted(SIZES)), nbytes=st.sampled_from([4, 8, 16]), threads=st.sampled_from([1, 8, 32]),
       target=st.sampled_from(["0.1.8", "0.1.9"]))
def test_correct_migration_is_equivalent(dt, nbytes, threads, target):
    if nbytes < SIZES[dt]:
        return
    size_arg = (lambda n: nbytes) if target == "0.1.8" else (lambda n: n)
    old, new = texts(dt, nbytes, threads, dt, size_arg)
    (v,) = verify_source(old, new, "p.py", rules=RULES, target=target, seeds=1)
    assert v.verdict == "equivalent", v.to_dict()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dt=st.sampled_from(sorted(SIZES)), other=st.sampled_from(sorted(SIZES)), nbytes=st.sampled_from([8, 16]),
       threads=st.sampled_from([8, 32]), target=st.sampled_from(["0.1.8", "0.1.9"]))
def test_pointer_type_of_another_width_with_unscaled_offsets_is_refuted(dt, other, nbytes, threads, target):
    if SIZES[other] == SIZES[dt] or nbytes < max(SIZES[dt], SIZES[other]):
        return
    per = nbytes // SIZES[dt]
    cols = per * threads
    n = nbytes // SIZES[other]
    size = nbytes if target == "0.1.8" else n
    old = TEMPLATE.format(dt=dt, cols=cols, threads=threads,
                          call=f'T.ptx_cp_async("{dt}", S.data, tx * {per}, A.data, bx * {cols} + tx * {per}, {nbytes})')
    # the offsets are copied verbatim but the pointer type is not the buffer's: addresses scale wrongly
    new = TEMPLATE.format(dt=dt, cols=cols, threads=threads, call=(
        f'T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation("{other}"), S.data, tx * {per}, {n}, 2), '
        f'T.tvm_access_ptr(T.type_annotation("{other}"), A.data, bx * {cols} + tx * {per}, {n}, 1), {size})'))
    (v,) = verify_source(old, new, "p.py", rules=RULES, target=target, seeds=1)
    assert v.verdict == "mismatch", v.to_dict()
    assert any(s["verdict"] == "mismatch" for s in v.sites)
