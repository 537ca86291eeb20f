"""The stdlib-ast pass gives exactly the libcst pass's findings wherever it answers."""
import textwrap

import pytest

from cpasync_migrate import python as pyfe
from cpasync_migrate.python import fast
from cpasync_migrate.engine import RunSettings, front_end_options
from conftest import FIXTURES
from fixture_cases import cases

OPTS = front_end_options(RunSettings(mode="check", target="0.1.8"))
# every target generation (bytes and element counts), TVM calls switched, and --from
ALL_OPTS = [OPTS, front_end_options(RunSettings(mode="check", target="0.1.9")),
            front_end_options(RunSettings(mode="check", target="0.1.8", migrate_tvm=True))]


def key(a):
    return [(f.line, f.column, f.end_line, f.end_column, f.code, f.message, f.function, f.status, f.fix is None,
             f.legacy_site, f.severity, f.role, f.op) for f in a.findings]


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


# Already-migrated files (issue 18 §2): decided by the ast pass, findings equal to libcst's.
_IMPORTS = [
    ("import tilelang.language as T", "T."),
    ("from tilelang import language as T", "T."),
    ("import tilelang.language as L", "L."),
    ("import tilelang\nimport tilelang.language", "tilelang.language."),
    ("from tilelang.language import tir as T", "T."),
    ("import tilelang.language.tir.op as T", "T."),
    ("from tilelang.cuda import language as T", "T."),
    ("import tilelang.rocm.language.tir as T", "T."),
]
_DECLS = [
    'S = T.alloc_shared((64,), "{d}")',
    'S = T.alloc_shared((64,), dtype="{d}")',
    'S = T.decl_buffer((64,), "{d}", scope="shared.dyn")',
    'S: T.Buffer = T.alloc_buffer((64,), "{d}")',
]
_DTYPES = ["float16", "float32", "int8", "float64", "half", "T.float16", "mystery"]


def _migrated(imp, prefix, decl, dtype, ptr, size, extra=""):
    d = dtype if not dtype.startswith("T.") else "float16"
    lit = f'"{dtype}"' if not dtype.startswith("T.") else dtype.replace("T.", prefix)
    decl = decl.format(d=d).replace("T.", prefix)
    if ptr == "tvm":
        dst = f"{prefix}tvm_access_ptr({prefix}type_annotation({lit}), S.data, i * 8, 8, 2)"
        src = f"{prefix}tvm_access_ptr({prefix}type_annotation({lit}), A.data, i * 8, 8, 1)"
    else:
        dst, src = f'{prefix}access_ptr(S[i * 8], "w", 8)', f'{prefix}access_ptr(A[i * 8], "r", 8)'
    return (f"{imp}\n\n\ndef make(M):\n    @{prefix}prim_func\n"
            f"    def kernel(A: {prefix}Tensor((M,), \"{d}\")):\n"
            f"        with {prefix}Kernel(1, threads=128) as bx:\n"
            f"            {decl}\n"
            f"            for i in {prefix}serial(8):\n"
            f"                {prefix}ptx_cp_async({dst}, {src}, {size}{extra})\n"
            f"    return kernel\n")


GENERATED = [
    _migrated(imp, prefix, decl, dtype, ptr, size, extra)
    for n, (imp, prefix) in enumerate(_IMPORTS)
    for decl in _DECLS[n % 2:: 2] + ([_DECLS[n % 4]] if n % 3 == 0 else [])
    for dtype in (_DTYPES if n < 2 else _DTYPES[n % 7: n % 7 + 2])
    for ptr in ("tvm", "buffer")
    for size, extra in ((16, ""), (8, ""), (4, ", pred"), (12, ""), ("n", ""), (16, ', dtype="float16"'))
][::5]  # a fifth of the 720 combinations (5 is prime to the 6 sizes: every size and spelling stays)

MIGRATED = [
    # 0.1.8 bytes and 0.1.9 element counts, predicates, keyword size, a suppressed warning
    textwrap.dedent('''\
        import tilelang.language as T

        @T.prim_func
        def main(A: T.Tensor((128,), "float16"), B: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                S = T.alloc_shared((128,), "float16")
                F = T.alloc_shared((128,), "float32")
                T.ptx_cp_async(T.access_ptr(S[8], "w", 16), T.access_ptr(A[16], "r", 16), 16)
                T.ptx_cp_async(T.access_ptr(S[0], "w", 8), T.access_ptr(A[0], "r", 8), 8, bx < 4)
                T.ptx_cp_async(T.access_ptr(F[0], "w", 4), T.access_ptr(A[0], "r", 4), 4)
                T.ptx_cp_async(T.access_ptr(F[0], "w", 4), T.access_ptr(B[0], "r", 4), num_elems=2)
                T.ptx_cp_async(T.access_ptr(S[0], "w", 1), T.access_ptr(A[0], "r", 1), 1)  # cpasync-migrate: ignore
                T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation("float16"), S.data, 0, 8, 2),
                               T.tvm_access_ptr(T.type_annotation("float16"), A.data, 0, 8, 1), bytes=12)
        '''),
    # the same buffer names in several kernels, a factory's dtype parameter, a module constant, with-as
    textwrap.dedent('''\
        from tilelang import language as T
        DT = "bfloat16"
        WIDE = DT

        def factory(dtype="float16"):
            @T.prim_func
            def k1(A: T.Tensor((64,), dtype)):
                with T.Kernel(1) as bx:
                    S = T.alloc_shared((64,), dtype)
                    T.ptx_cp_async(T.access_ptr(S[0], "w", 3), T.access_ptr(A[0], "r", 3), 3)
            return k1

        @T.prim_func
        def k2(A: T.Tensor((64,), DT)):
            with T.Kernel(1) as bx:
                S = T.alloc_shared((64,), WIDE)
                T.ptx_cp_async(T.access_ptr(S[0], "w", 3), T.access_ptr(A[0], "r", 3), 3)
                T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation(DT), S.data, 0, 3, 2),
                               T.tvm_access_ptr(T.type_annotation(T.float32), A.data, 0, 3, 1), 12)

        @T.prim_func
        def k3(A: T.Tensor((64,), "int8")):
            with T.Kernel(1) as bx, T.alloc_shared((64,), "int8") as S:
                T.ptx_cp_async(T.access_ptr(S[0], "w", 3), T.access_ptr(A[0], "r", 3), 3)
        '''),
    # aliases of every spelling, TVM's namespace in the new shape, a from-import of the intrinsic
    textwrap.dedent('''\
        import tilelang
        import tilelang.language
        from tilelang.language import ptx_cp_async as cp, access_ptr, tvm_access_ptr, type_annotation
        from tvm.script import tir as TT

        @tilelang.language.prim_func
        def main(A: tilelang.language.Tensor((64,), "float16")):
            S = tilelang.language.alloc_shared((64,), "float16")
            cp(access_ptr(S[0], "w", 8), access_ptr(A[0], "r", 8), 8)
            cp(tvm_access_ptr(type_annotation("float16"), S.data, 0, 8, 2),
               tvm_access_ptr(type_annotation("float16"), A.data, 0, 8, 1), 5)
            tilelang.language.ptx_cp_async(access_ptr(S[0], "w", 8), access_ptr(A[0], "r", 8), 16, dtype="float16")
            TT.ptx_cp_async(TT.tvm_access_ptr(TT.type_annotation("float16"), S.data, 0, 8, 2), A.data, 6)
        '''),
    # a buffer bound twice in one scope, a parameter buffer, a global buffer, names the pass leaves to libcst
    textwrap.dedent('''\
        import tilelang.language as T
        G = T.alloc_shared((8,), "float64")

        def k(A: T.Tensor((8,), "float16"), P):
            S = T.alloc_shared((8,), "float16")
            S = T.alloc_shared((8,), "float32")
            T.ptx_cp_async(T.access_ptr(S[0], "w", 2), T.access_ptr(A[0], "r", 2), 2)
            T.ptx_cp_async(T.access_ptr(P[0], "w", 2), T.access_ptr(A[0], "r", 2), 2)
            T.ptx_cp_async(T.access_ptr(G[0], "w", 2), T.access_ptr(A[0], "r", 2), 2)
            T.ptx_cp_async(T.access_ptr(A[0], "w", 2), T.access_ptr(G[0], "r", 2), 16)
        '''),
]

# Files the ast pass must leave to libcst, on purpose (the reason in the comment).
TO_LIBCST = [
    # a body on the def's line, a parenthesized callee in the body
    "from tvm.tir import op as _op\ndef ptx_cp_async(dtype, shared_ptr, shared_offset, global_ptr, global_offset,"
    " bytes): return _op.ptx_cp_async(dtype, shared_ptr, shared_offset, global_ptr, global_offset, bytes)\n",
    "from tvm.tir import op as _op\ndef ptx_cp_async(dtype, shared_ptr, shared_offset, global_ptr, global_offset,"
    " bytes):\n    return (_mine)(dtype, shared_ptr, shared_offset, global_ptr, global_offset, bytes)\n",
    # the definition's module alias bound twice
    "from tvm.tir import op as _op\nif X:\n    import tvm.tir as _op\ndef ptx_cp_async(dtype, shared_ptr, shared_offset,"
    " global_ptr, global_offset, bytes):\n    return _op.ptx_cp_async(dtype, shared_ptr, shared_offset, global_ptr,"
    " global_offset, bytes)\n",
    # the intrinsic bound to a name that is called
    "import tilelang.language as T\ncp = T.ptx_cp_async\ncp(T.access_ptr(S[0], 'w', 8), T.access_ptr(A[0], 'r', 8), 16)\n",
    "import tilelang.language as T\ncp = T.ptx_cp_async\ncp2 = cp\ncp2('float16', S.data, 0, A.data, 0, 16)\n",
    "import tilelang.language as T\nimport functools\ncp = functools.partial(T.ptx_cp_async, 'float16')\n"
    "cp(S.data, 0, A.data, 0, 16)\n",
    "import tilelang.language as T\ngetattr(T, 'ptx_cp_async')('float16', S.data, 0, A.data, 0, 16)\n",
    # the module bound to a name by assignment
    "import tilelang.language as T\nL2 = T\nL2.ptx_cp_async('float16', S.data, 0, A.data, 0, 16)\n",
    "import tilelang\nlang = tilelang.language\nlang.ptx_cp_async(T.access_ptr(S[0], 'w', 8), A, 12)\n",
    # star imports
    "from tilelang.language import *\nptx_cp_async(access_ptr(S[0], 'w', 8), access_ptr(A[0], 'r', 8), 16)\n",
    "from tvm.tir import *\nimport tilelang.language as T\nT.ptx_cp_async(T.access_ptr(S[0], 'w', 8), A, 16)\n",
    "try:\n    from tilelang.autotuner import *\nexcept ImportError:\n    pass\nimport tilelang.language as T\n"
    "T.ptx_cp_async(a, b, 16)\n",
    # a legacy call of TileLang's intrinsic (it needs a rewrite)
    "import tilelang.language as T\nT.ptx_cp_async('float16', S.data, 0, A.data, 0, 16)\n",
    # a buffer bound in a class body, and a del the scopes record otherwise
    "import tilelang.language as T\nclass K:\n    S = T.alloc_shared((8,), 'float16')\n"
    "    T.ptx_cp_async(T.access_ptr(S[0], 'w', 1), T.access_ptr(S[0], 'r', 1), 1)\n",
    "import tilelang.language as T\nS = T.alloc_shared((8,), 'float16')\ndef f():\n    del S\n"
    "    T.ptx_cp_async(T.access_ptr(S[0], 'w', 1), T.access_ptr(S[0], 'r', 1), 1)\n",
]

# Buffers bound through an alias or unpacking (rewrite.declaration_of follows them; the ast pass leaves them
# to libcst or agrees): the size warnings of new-form calls on such buffers.
BOUND_THROUGH = [
    "import tilelang.language as T\nstaged = T.alloc_shared((8,), 'float16')\nS = staged\n"
    "T.ptx_cp_async(T.access_ptr(S[0], 'w', 1), T.access_ptr(S[0], 'r', 1), 3)\n",
    "import tilelang.language as T\na_s, b_s = T.alloc_shared((8,), 'float16'), T.alloc_shared((8,), 'int8')\n"
    "T.ptx_cp_async(T.access_ptr(a_s[0], 'w', 1), T.access_ptr(b_s[0], 'r', 1), 3)\n",
    "import tilelang.language as T\na_s, b_s = T.alloc_shared((8,), 'float16'), T.alloc_shared((8,), 'int8')\n"
    "a_s, b_s = b_s, a_s\nT.ptx_cp_async(T.access_ptr(a_s[0], 'w', 1), T.access_ptr(b_s[0], 'r', 1), 6)\n",
]

# A star import of some other library binds none of the names the libcst pass reads (its scopes record
# no binding for it, and reach.py follows only TileLang's and TVM's): decided by the ast pass.
OTHER_STAR = [
    "from tilelang.autotuner import *\nimport tilelang.language as T\nT.ptx_cp_async(a, b, 16)\n",
    "import tilelang.language as T\nfrom einops import *\nS = T.alloc_shared((8,), 'float16')\n"
    "T.ptx_cp_async(T.access_ptr(S[0], 'w', 1), T.access_ptr(S[0], 'r', 1), 3)\n",
    "from tilelang.autotuner import *\nimport tilelang.language as T\n"
    "ptx_cp_async(T.access_ptr(S[0], 'w', 8), T.access_ptr(A[0], 'r', 8), 16)\n",
    "from helpers import *\nimport tvm.tir as tir\ntir.ptx_cp_async('float16', S.data, 0, A.data, 0, 16)\n",
]

# Read as a value but reaching no call: decided by the ast pass (libcst gives no finding for the reads either).
VALUE_READS = [
    '__all__ = ["ptx_cp_async", "ptx_cp_async_barrier"]\nimport tilelang.language as T\n'
    'T.ptx_cp_async(T.access_ptr(S[0], "w", 8), T.access_ptr(A[0], "r", 8), 16)\n',
    "import tilelang.language.tir.op as _tir_op\nptx_cp_async_v = _wrap(_tir_op.ptx_cp_async)\n",
    "from tvm.script import tirx as T\n@T.prim_func\ndef ptx_cp_async(A: T.Buffer((8,), 'float16')):\n"
    "    T.evaluate(0)\ndef test():\n    f = ptx_cp_async\n    mod = compile(f)\n    mod(1)\n",
]


# TileLang's op in neither layout, or with *args / **kwargs: CPA002 from the ast pass too (decide/dispatch.py), beside
# an access-pointer call (Analysis.migrated) and TVM's wrapper; a walrus callee (libcst's alone)
NEITHER = [
    "import tilelang.language as T\n\ndef k(S, A):\n    T.ptx_cp_async(S.data, 0, A.data, 0, 16)  # five\n"
    "    T.ptx_cp_async(T.access_ptr(S[0], 'w', 8), T.access_ptr(A[0], 'r', 8), 16)\n",
    "import tilelang.language as T\nT.ptx_cp_async(S.data, A.data, 16, predicate=p, extra=1)\n"
    "T.ptx_cp_async(*args)  # cpasync-migrate: ignore\nT.ptx_cp_async(a, **kw)\n",
    "from tilelang.language import ptx_cp_async as cp\nfrom tvm.script import tir as T\n\nclass K:\n"
    "    def f(self):\n        cp(1, 2, 3, 4, 5, 6, 7)\n        T.ptx_cp_async(*a)\n",
    "from tvm import tir\n(cp := tir.ptx_cp_async)('float16', S.data, 0, A.data, 0, 16)\n",
]

# Legacy calls whose argument list or destination pointer alone leaves them for a person (fast_legacy.py): CPA002
# from the ast pass; pointers whose text it does not read as libcst does (parentheses, lines), and buffers, go to
# libcst.
_K = "import tilelang.language as T\n\n\ndef k(S, A, tx):\n"
LEGACY_MANUAL = [
    _K + "    T.ptx_cp_async('float16', S.data + 8, tx * 8, A.data, 0, 16)\n",
    _K + "    T.ptx_cp_async('float16', S.data, 0, A.data, global_offset=0)  # cpasync-migrate: ignore\n",
    _K + "    T.ptx_cp_async(S[0], 0, A.data, 0, 16, dtype='float16')\n    T.ptx_cp_async('float16', S.data,"
    " 0, A.data, 0, 16, shared_ptr=S)\n",
    _K + "    T.ptx_cp_async(  T.address_of(S[0]), 0, A.data, 0, 16, dtype='float16')\n",
    _K + "    T.ptx_cp_async('float16', shared_ptr=f(S)[0], shared_offset=0, global_ptr=A.data, global_offset=0,"
    " bytes=16)\n",
    _K + "    T.ptx_cp_async(dtype='float16', shared_ptr=S.data.x, shared_offset=0, global_ptr=A.data,"
    " global_offset=0, bytes=16)\n",
    "from tvm.script import tir as T\nT.ptx_cp_async('float16', S.data[0], 0, A.data, 0, 16)\n",
    # left to libcst: parenthesised, over two lines, a buffer
    _K + "    T.ptx_cp_async('float16', (S.data + 8), tx * 8, A.data, 0, 16)\n",
    _K + "    T.ptx_cp_async(((S.data)), 0, A.data, 0, 16, dtype='float16')\n",
    _K + "    T.ptx_cp_async('float16', S.data +\n                   8, 0, A.data, 0, 16)\n",
    _K + "    T.ptx_cp_async('float16',\n                   S[0], 0, A.data, 0, 16)\n",
    _K + "    T.ptx_cp_async('float16', S.data, 0, A.data + 1, 0, 16)\n",
    _K + "    T.ptx_cp_async('float16', S.data + 8, tx * 8, A.data, 0, 16)\n    T.ptx_cp_async('float16', S.data,"
    " 0, A.data, 0, 16)\n",
]
LEGACY_DECIDED = LEGACY_MANUAL[:7]

ROOT = FIXTURES.parent.parent
KERNELS = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "examples").glob("*.py")) +
           sorted((ROOT / "tests" / "realtl" / "kernels").glob("*.py"))]

ALL_TEXTS = [c.input.read_text(encoding="utf-8-sig") for c in cases("python")] + EXTRA + MIGRATED + TO_LIBCST + \
    VALUE_READS + OTHER_STAR + BOUND_THROUGH + NEITHER + LEGACY_MANUAL + KERNELS


# the default run compares under the default target; every other option set runs in the slow suite
@pytest.mark.parametrize("opts", [ALL_OPTS[0]] + [pytest.param(o, marks=pytest.mark.slow) for o in ALL_OPTS[1:]],
                         ids=["0.1.8", "0.1.9", "migrate-tvm"])
@pytest.mark.parametrize("text", ALL_TEXTS)
def test_fast_pass_agrees_with_libcst_pass(text, opts):
    fast = pyfe.analyze(text, "x.py", opts)
    full = pyfe.analyze(text, "x.py", opts, fast=False)
    assert key(fast) == key(full)
    assert fast.migrated == full.migrated


@pytest.mark.slow
@pytest.mark.parametrize("opts", ALL_OPTS[:2], ids=["0.1.8", "0.1.9"])
def test_generated_migrated_files_agree_and_are_decided(opts):
    codes = set()
    for text in GENERATED:
        quick = fast.findings(text, "x.py", opts)
        full = pyfe.analyze(text, "x.py", opts, fast=False)
        assert quick is not None, text
        assert key(quick) == key(full), text
        codes.update(f.code for f in full.findings)
    assert {"CPA004", "CPA005"} <= codes, "the generated files exercise both findings"


@pytest.mark.parametrize("opts", ALL_OPTS[:2], ids=["0.1.8", "0.1.9"])
@pytest.mark.parametrize("text", MIGRATED + VALUE_READS + OTHER_STAR)
def test_migrated_files_are_decided_without_libcst(text, opts):
    assert fast.findings(text, "x.py", opts) is not None


@pytest.mark.parametrize("text", TO_LIBCST)
def test_files_left_to_libcst_on_purpose(text):
    assert fast.findings(text, "x.py", ALL_OPTS[1]) is None


def test_from_sends_new_form_calls_to_libcst():
    opts = front_end_options(RunSettings(mode="check", target="0.1.9", source="0.1.8"))
    assert fast.findings(MIGRATED[0], "x.py", opts) is None
    assert key(pyfe.analyze(MIGRATED[0], "x.py", opts)) == key(pyfe.analyze(MIGRATED[0], "x.py", opts, fast=False))


def test_switch_off_sends_new_form_calls_to_libcst(monkeypatch):
    monkeypatch.setattr(fast, "DECIDE_NEW_FORM", False)
    assert fast.findings(MIGRATED[0], "x.py", OPTS) is None
    assert fast.findings(VALUE_READS[0], "x.py", OPTS) is None


@pytest.mark.parametrize("text", NEITHER[:3])
def test_calls_in_neither_layout_are_decided(text):
    quick = fast.findings(text, "x.py", OPTS)
    assert quick is not None and "CPA002" in [f.code for f in quick.findings]
    assert key(quick) == key(pyfe.analyze(text, "x.py", OPTS, fast=False))


def test_neither_layout_switch_off_sends_them_to_libcst(monkeypatch):
    monkeypatch.setattr(fast, "DECIDE_LEGACY", False)
    assert fast.findings(NEITHER[0], "x.py", OPTS) is None
    assert fast.findings(MIGRATED[0], "x.py", OPTS) is not None


# The API's own definition in a file of TileLang's or TVM's package (route_rules.defines_api): the intrinsic's
# name bound at module level to a value holding TVM's op, as TileLang's tilelang/language/tir/ir.py binds it.
API_OWN = (
    "from tvm.tir import op as _tir_op\n\n\ndef _dtype_forward(func):\n    return func\n\n\n"
    "ptx_cp_async = _dtype_forward(_tir_op.ptx_cp_async)\nptx_cp_async_bulk = _dtype_forward(_tir_op.ptx_cp_async_bulk)\n"
    "__all__ = [\"ptx_cp_async\", \"ptx_cp_async_bulk\"]\n"
)
API_OWN_WHOLE = "import tvm.tir as _tir\nif True:\n    ptx_cp_async: object = _tir.ptx_cp_async\n"
API_OWN_NESTED = "from tvm.tir import op as _tir_op\n\ndef setup():\n    ptx_cp_async = _w(_tir_op.ptx_cp_async)\n"
API_PATHS = ["tilelang/language/tir/ir.py", "vendor/tvm/script/ir_builder/tir/ir.py", "mypkg/ir.py", "ir.py"]


@pytest.mark.parametrize("path", API_PATHS)
@pytest.mark.parametrize("text", [API_OWN, API_OWN_WHOLE, API_OWN_NESTED])
def test_api_own_definition_agrees(text, path):
    quick = pyfe.analyze(text, path, OPTS)
    full = pyfe.analyze(text, path, OPTS, fast=False)
    assert key(quick) == key(full)
    decided = fast.findings(text, path, OPTS)
    in_package = path.split("/")[0] in ("tilelang", "vendor") and text is not API_OWN_NESTED
    assert (decided is not None) is in_package  # elsewhere libcst follows the binding's uses
    if in_package:
        assert decided.findings == []


def test_api_own_definition_switch_off(monkeypatch):
    monkeypatch.setattr(fast, "DECIDE_READS", False)
    assert fast.findings(API_OWN, API_PATHS[0], OPTS) is None


@pytest.mark.parametrize("opts", ALL_OPTS, ids=["0.1.8", "0.1.9", "migrate-tvm"])
@pytest.mark.parametrize("text", LEGACY_MANUAL)
def test_legacy_calls_left_for_a_person_are_decided(text, opts):
    quick = fast.findings(text, "x.py", opts)
    assert (quick is not None) is (text in LEGACY_DECIDED)
    if quick is not None:
        tvm = text.startswith("from tvm") and not opts.migrate_tvm  # TVM's wrapper: CPA003 unless switched
        assert quick.findings and {f.code for f in quick.findings} == {"CPA003" if tvm else "CPA002"}
        assert _full_key(quick) == _full_key(pyfe.analyze(text, "x.py", opts, fast=False))


def test_legacy_switch_off_sends_them_to_libcst(monkeypatch):
    monkeypatch.setattr(fast, "DECIDE_LEGACY", False)
    assert all(fast.findings(t, "x.py", OPTS) is None for t in LEGACY_DECIDED[:6])  # (the last: TVM's, CPA003)


def test_fast_pass_answers_without_libcst_for_tvm_only_files():
    quick = fast.findings(EXTRA[0], "x.py", OPTS)
    assert quick is not None and [f.code for f in quick.findings] == ["CPA003"] * 3
    assert quick.findings[1].status is not None  # the suppressed one
    assert fast.findings(EXTRA[2], "x.py", OPTS) is None, "a rebound name is left to libcst"


def test_nested_import_is_left_to_libcst():
    text = "def f(a):\n    from tvm.script import tir as T\n    T.ptx_cp_async('float16', a, 0, a, 0, 16)\n"
    assert fast.findings(text, "x.py", OPTS) is None
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
    assert fast.may_call(text) is may_call


def test_enclosing_names_come_from_definitions_around_the_call():
    quick = fast.findings(EXTRA[5], "x.py", OPTS)
    assert quick is not None
    assert [(f.line, f.function) for f in quick.findings] == [(4, "ptx_cp_async"), (6, "C"), (11, "C")]


# Definitions of the intrinsic and runtime helpers (CPA006 / CPA007) that definitions_ast.py decides: the same
# findings as definitions.py, fix edits included.
_LEGACY_PARAMS = "dtype, shared_ptr, shared_offset, global_ptr, global_offset, bytes"
DEFINITIONS = [
    # upstream's shape: a docstring and a forward of every parameter to TVM's wrapper
    textwrap.dedent(f'''\
        from tvm.tir import op as _tvm_op
        from tvm import tir


        def ptx_cp_async({_LEGACY_PARAMS}):
            """TVM intrinsic for ptx async copy from global to shared memory.

            Parameters
            ----------
            dtype : str
            """
            return _tvm_op.ptx_cp_async({_LEGACY_PARAMS})


        def ptx_commit_group():
            return tir.call_intrin("", "tir.ptx_commit_group")
        '''),
    # no docstring, TVM's wrapper through `import tvm`, a trailing comment, a default with a non-ASCII string
    "import tvm\n\ndef ptx_cp_async(dtype, shared_ptr, shared_offset, global_ptr, global_offset, bytes='é'):\n"
    "    return tvm.tir.ptx_cp_async(dtype, shared_ptr, shared_offset, global_ptr, global_offset, bytes)  # ü\n",
    # parameters laid out over several lines, annotations, CRLF newlines, async
    "from tvm.tir import ptx_cp_async as _cp\r\n\r\nasync def ptx_cp_async(\r\n    dtype: str,\r\n    shared_ptr,\r\n"
    "    shared_offset,\r\n    global_ptr,\r\n    global_offset,\r\n    bytes: int = 16,\r\n):\r\n"
    "    '''doc'''\r\n    return _cp(\r\n        dtype, shared_ptr, shared_offset, global_ptr, global_offset, bytes\r\n    )\r\n",
    # bodies that are not upstream's: reordered forward, more statements, some other callee, keywords, no call
    f"from tvm.tir import op as _op\ndef ptx_cp_async({_LEGACY_PARAMS}):\n"
    "    return _op.ptx_cp_async(dtype, global_ptr, global_offset, shared_ptr, shared_offset, bytes)\n",
    f"from tvm.tir import op as _op\ndef ptx_cp_async({_LEGACY_PARAMS}):\n    x = 1\n"
    f"    return _op.ptx_cp_async({_LEGACY_PARAMS})\n",
    f"import mylib\ndef ptx_cp_async({_LEGACY_PARAMS}):\n    return mylib.copy_async({_LEGACY_PARAMS})\n",
    f"from tvm.tir import op as _op\ndef ptx_cp_async({_LEGACY_PARAMS}):\n"
    "    return _op.ptx_cp_async(dtype=dtype, shared_ptr=shared_ptr, shared_offset=shared_offset,\n"
    "                            global_ptr=global_ptr, global_offset=global_offset, bytes=bytes)\n",
    f"def ptx_cp_async({_LEGACY_PARAMS}):\n    return None\n",
    f"def ptx_cp_async({_LEGACY_PARAMS}):\n    pass\n    # a comment closing the body\n\nx = 1\n",
    # decorated: the definition and a helper (both passes place them at the `def`)
    "import functools\nfrom tvm.tir import op as _op\n\n@functools.wraps(_op.ptx_cp_async)\n"
    "def ptx_cp_async(dtype, shared_ptr, shared_offset, global_ptr, global_offset, bytes):\n"
    "    return _op.ptx_cp_async(dtype, shared_ptr, shared_offset, global_ptr, global_offset, bytes)\n",
    "import cutlass.cute as cute\n\n\n@cute.jit\n@other(\n    1)\ndef cp_async_gs_conditional(size, dst, dst_offset,"
    " src, src_offset, cond):\n    pass\n",
    # `def` and the name on two lines joined by a backslash
    f"import tvm\ndef \\\n ptx_cp_async({_LEGACY_PARAMS}):\n    return tvm.tir.ptx_cp_async({_LEGACY_PARAMS})\n"
    "T.ptx_cp_async(a, b, 16)\n",
    # the new signature already (no finding), extra parameters (no finding)
    "def ptx_cp_async(dst_access_ptr, src_access_ptr, bytes, predicate=None):\n    return 1\n",
    f"def ptx_cp_async({_LEGACY_PARAMS}, *rest):\n    return 1\n",
    # the definition with calls of both APIs elsewhere in the file: an access-pointer call, a TVM legacy call
    textwrap.dedent(f'''\
        import tilelang.language as T
        from tvm.tir import op as _op

        def ptx_cp_async({_LEGACY_PARAMS}):
            return _op.ptx_cp_async({_LEGACY_PARAMS})

        def use(S, A):
            _op.ptx_cp_async("float16", S.data, 0, A.data, 0, 16)
            T.ptx_cp_async(T.access_ptr(S[0], "w", 8), T.access_ptr(A[0], "r", 8), 16)
        '''),
    # runtime helpers: two offsets (reported), one offset (not), conditional, a helper nested in a class (not)
    textwrap.dedent('''\
        import cutlass.cute as cute


        def cp_async_gs(size, dst, dst_offset, src, src_offset):
            """Copy."""
            if size == 16:
                cute.copy(dst + dst_offset, src + src_offset)
            # a closing comment


        def cp_async_gs_conditional(size, dst, dst_offset, src, src_offset, cond):
            if cond:
                cp_async_gs(size, dst, dst_offset, src, src_offset)


        class Other:
            def cp_async_gs(self, size, dst, dst_offset, src, src_offset):
                pass
        '''),
    "def cp_async_gs(size, dst, src, src_offset):\n    pass\n",
    "def cp_async_gs(size, dst, dst_offset, src, src_offset):\n    pass\nT.ptx_cp_async(a, b, 16)\n",
]


def _full_key(a):
    return [(k, None if f.fix is None else ([(e.start, e.end, e.replacement) for e in f.fix.edits],
                                            f.fix.applicability, f.fix.assumptions, f.fix.steps))
            for k, f in zip(key(a), a.findings)]


@pytest.mark.parametrize("opts", ALL_OPTS, ids=["0.1.8", "0.1.9", "migrate-tvm"])
@pytest.mark.parametrize("text", DEFINITIONS)
def test_definitions_agree_with_libcst(text, opts):
    full = pyfe.analyze(text, "x.py", opts, fast=False)
    quick = fast.findings(text, "x.py", opts)
    if opts is ALL_OPTS[2] and quick is None:
        return  # --migrate-tvm: a legacy call of TVM's wrapper (the forward too) is libcst's to switch
    assert quick is not None, "definitions_ast.py decides this file"
    assert _full_key(quick) == _full_key(full)


def test_definitions_are_findings():
    """The cases above exercise a fix, a manual definition and a helper."""
    codes = {(f.code, f.fix is not None) for t in DEFINITIONS for f in fast.findings(t, "x.py", OPTS).findings}
    assert {("CPA006", True), ("CPA006", False), ("CPA007", False)} <= codes


def test_definitions_switch_off_sends_them_to_libcst(monkeypatch):
    monkeypatch.setattr(fast, "DECIDE_DEFINITIONS", False)
    assert fast.findings(DEFINITIONS[0], "x.py", OPTS) is None


def test_a_definition_with_defaults_is_left_for_a_person():
    """A default lets a caller leave the argument out; the new signature has none there: no automatic fix."""
    for fast in (True, False):
        (f,) = pyfe.analyze(DEFINITIONS[1], "x.py", OPTS, fast=fast).findings
        assert f.code == "CPA006" and f.fix is None and "default value" in f.message
