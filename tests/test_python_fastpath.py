"""The stdlib-ast pass gives exactly the libcst pass's findings wherever it answers."""
import textwrap

import pytest

from cpasync_migrate import python as pyfe
from cpasync_migrate.engine import RunSettings, front_end_options
from fixture_cases import cases

OPTS = front_end_options(RunSettings(mode="check", target="0.1.8"))


def key(a):
    return [(f.line, f.column, f.end_line, f.end_column, f.code, f.message, f.function, f.status, f.fix is None)
            for f in a.findings]


EXTRA = [
    # TVM's wrapper through several spellings; local shadowing; other libraries; a method named like the intrinsic
    textwrap.dedent('''\
        from tvm.tir import op as _op
        import tvm
        from tvm.script import tir as T

        def wrapper(dtype, sp, so, gp, go, n):
            return _op.ptx_cp_async(dtype, sp, so, gp, go, n)

        class K:
            def run(self, a):
                self.ptx_cp_async(a)
                tvm.tir.ptx_cp_async("float16", a, 0, a, 0, 16)  # cpasync-migrate: ignore
                T.evaluate(T.ptx_cp_async(a, 0, a, 0, 16, dtype="float16"))
        '''),
    textwrap.dedent('''\
        from tvm.script import tir as T
        T.ptx_cp_async(a, 0, a, 0)
        '''),
    textwrap.dedent('''\
        from tvm.script import tir as T

        def f(T):
            T.ptx_cp_async("float16", 1, 2, 3, 4, 16)
        '''),
    textwrap.dedent('''\
        import mylib
        mylib.ptx_cp_async(1, 2, 3, 4, 5, 6)
        '''),
    textwrap.dedent('''\
        from tvm.script import tir as T
        T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation("float16"), a, 0, 8, 2), b, 16)
        '''),
    # a definition named like the intrinsic; calls in a decorator and in a decorated class's body
    textwrap.dedent('''\
        from tvm.script import tir as T

        def ptx_cp_async(*args):
            return T.ptx_cp_async("float16", 1, 2, 3, 4, 16)

        @register(T.ptx_cp_async("float16", 1, 2, 3, 4, 16))
        class C:
            @staticmethod
            async def  ptx_cp_async(x):
                pass
            y = T.ptx_cp_async("float16", 1, 2, 3, 4, 16)
        '''),
    # names bound by match patterns rebind T
    textwrap.dedent('''\
        from tvm.script import tir as T
        match x:
            case [*T]:
                T.ptx_cp_async("float16", 1, 2, 3, 4, 16)
        '''),
    textwrap.dedent('''\
        from tvm.script import tir as T
        match x:
            case {**T}:
                T.ptx_cp_async("float16", 1, 2, 3, 4, 16)
        '''),
]


@pytest.mark.parametrize("text", [c.input.read_text(encoding="utf-8-sig") for c in cases("python")] + EXTRA)
def test_fast_pass_agrees_with_libcst_pass(text):
    fast = pyfe.analyze(text, "x.py", OPTS)
    full = pyfe.analyze(text, "x.py", OPTS, fast=False)
    assert key(fast) == key(full)


def test_fast_pass_answers_without_libcst_for_tvm_only_files():
    quick = pyfe._fast(EXTRA[0], "x.py", OPTS)
    assert quick is not None and [f.code for f in quick.findings] == ["CPA003"] * 3
    assert quick.findings[1].status is not None  # the suppressed one
    assert pyfe._fast(EXTRA[1], "x.py", OPTS) is None, "a rebound name is left to libcst"


def test_nested_import_is_left_to_libcst():
    text = "def f(a):\n    from tvm.script import tir as T\n    T.ptx_cp_async('float16', a, 0, a, 0, 16)\n"
    assert pyfe._fast(text, "x.py", OPTS) is None
    assert [f.code for f in pyfe.analyze(text, "x.py", OPTS).findings] == ["CPA003"]


@pytest.mark.parametrize("text, may_call", [
    ("def ptx_cp_async(a):\n    return 1\n", False),
    ("async def \\\n  ptx_cp_async (a): pass\n", False),
    ("class K:\n    def ptx_cp_async(self): ...\n", False),
    ("s = 'tir.ptx_cp_async'\n", False),
    ("x = undef ptx_cp_async(1)\n", True),  # not the keyword
    ("obj.def ptx_cp_async(1)\n", True),
    ("def f():\n    return ptx_cp_async(1)\n", True),
    ("def ptx_cp_async(a): pass\nT.ptx_cp_async(1)\n", True),
    ("from tilelang.language import ptx_cp_async as cp\n", True),
])
def test_call_text_gate(text, may_call):
    """Files without call-shaped text are decided without parsing; a definition's header is no call."""
    assert pyfe._may_call(text) is may_call


def test_enclosing_names_come_from_definitions_around_the_call():
    quick = pyfe._fast(EXTRA[5], "x.py", OPTS)
    assert quick is not None
    assert [(f.line, f.function) for f in quick.findings] == [(4, "ptx_cp_async"), (6, "C"), (11, "C")]
