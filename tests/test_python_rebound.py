"""A callee whose root name is bound more than once, to modules that disagree, is left for a person.

``import tilelang.language as T`` and ``from tvm.script import tir as T`` in one file give ``T.ptx_cp_async``
two readings, TileLang's op (the access-pointer form) and TVM's wrapper (the legacy signature); which one a call
sees depends on the order the code runs (a ``try``, a branch, the order of the statements).  A rewrite is right
under one reading and a TypeError under the other, so the call is CPA002 with the reason, whatever the order of
the bindings and whatever the interpreter's hash seed (the readings are a set).
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from harness import assert_fix, assert_no_fix

_BODY = '''
@T.prim_func
def k(A: T.Buffer((16,), "float16")):
    S = T.alloc_shared((16,), "float16")
    T.ptx_cp_async("float16", S.data, 0, A.data, 0, 16)
'''

TL = "import tilelang.language as T\n"
TVM = "from tvm.script import tir as T\n"

REBOUND = {
    "tvm_last": TL + TVM,
    "tilelang_last": TVM + TL,
    "try_fallback": "try:\n    import tilelang.language as T\nexcept ImportError:\n    from tvm.script import tir as T\n",
    "branch": "import os\nif os.environ.get('X'):\n    import tilelang.language as T\nelse:\n    from tvm.script import tir as T\n",
    "local_rebinding": TL + "T = __import__('tvm.script.tir')\n",
}


@pytest.mark.parametrize("name", sorted(REBOUND))
def test_rebound_root_is_left_for_a_person(name):
    r = assert_no_fix(REBOUND[name] + _BODY, code="CPA002")
    (f,) = [f for f in r.findings if f.code == "CPA002"]
    assert "bound more than once" in f.message and "`T`" in f.message, f.message


def test_same_module_twice_is_one_reading():
    src = TL + "import tilelang.language as T\n" + _BODY
    r = assert_fix(src, src.replace('T.ptx_cp_async("float16", S.data, 0, A.data, 0, 16)',
                                    'T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation("float16"), S.data, 0, 8, 2), '
                                    'T.tvm_access_ptr(T.type_annotation("float16"), A.data, 0, 8, 1), 16)'), line_length=200)
    assert r.codes() == ["CPA001"]


@pytest.mark.slow  # four runs of the CLI under four hash seeds
def test_verdict_does_not_depend_on_the_hash_seed(tmp_path):
    for name in ("tvm_last", "tilelang_last"):
        (tmp_path / f"{name}.py").write_text(REBOUND[name] + _BODY)
    outs = set()
    for seed in ("1", "2", "3", "4"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        p = subprocess.run([sys.executable, "-m", "cpasync_migrate", "--check", "--no-cache", str(tmp_path)], capture_output=True, text=True, env=env)
        assert p.returncode == 1, p.stderr
        outs.add(p.stdout)
    assert len(outs) == 1, outs
    assert outs.pop().count("CPA002") == 2
