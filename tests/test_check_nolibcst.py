"""`--check` decides legacy calls from the stdlib ast where the text gives their facts simply (python/fast_legacy.py,
python/fast_edit.py), with the same findings and fixes, edit text included, as the libcst pass; such a run never
imports libcst, and a file the ast side cannot decide still gets libcst's verdict."""
import json
import shutil
import subprocess
import sys
import textwrap

import pytest

from cpasync_migrate import python as pyfe
from cpasync_migrate.engine import RunSettings, front_end_options
from cpasync_migrate.python import fast, fast_edit, window
from conftest import FIXTURES
from fixture_cases import cases

ROOT = FIXTURES.parent.parent
OPTS = {t: front_end_options(RunSettings(mode="check", target=t)) for t in ("0.1.8", "0.1.9")}
OPTS["0.1.9-access_ptr"] = front_end_options(RunSettings(mode="check", target="0.1.9", style="access_ptr"))
OPTS["narrow"] = front_end_options(RunSettings(mode="check", target="0.1.8"), line_length=60)


def full_key(a):
    """Everything a report reads of the findings, the fix's edit text included."""
    return [(f.line, f.column, f.end_line, f.end_column, f.code, f.message, f.function, f.status, f.legacy_site,
             f.severity, f.role, f.op, None if f.fix is None else (
                 f.fix.edits, f.fix.applicability, f.fix.assumptions, f.fix.steps, f.fix.importers,
                 f.fix.set_established, f.fix.needs_function)) for f in a.findings], a.migrated


_K = ("import tilelang.language as T\n\n\n@T.prim_func\n"
      "def k(A: T.Tensor((64,), \"float16\"), B: T.Tensor((64,), 'float16'), C: T.Tensor((64,), T.float32)):\n"
      "    with T.Kernel(1, threads=8) as bx:\n"
      "        S = T.alloc_shared((64,), \"float16\")\n        W = T.alloc_shared((64,), dtype=T.float32)\n"
      "        tx = T.get_thread_binding()\n")
SHAPES = [
    _K + '        T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)\n',
    _K + '        T.ptx_cp_async(S.data, tx * 8, B.data, tx * 8, 16, dtype="float16")\n',
    _K + "        T.ptx_cp_async(dtype='float16', shared_ptr=S.data, shared_offset=0, global_ptr=A.data,"
         " global_offset=(tx * 8), bytes=16)\n",
    _K + '        T.evaluate(T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16))\n',
    _K + '        T.ptx_cp_async( "float16" ,S.data,(tx * 8) ,A.data,  ( (tx) * 8 ), 16 )  # keep me\n',
    _K + '        T.ptx_cp_async("float16", S.data, (tx // 4) * 64 + (tx % 4) * 8 + 1024 * 0, A.data, bx * 4096 +'
         ' (tx // 4) * 1024 + (tx % 4) * 8 + 12345678 * (bx + 1), 16)\n',
    _K + '        T.ptx_cp_async("float16", S.data, 0, A.data, 0, 16,)\n',
    _K + '        T.ptx_cp_async("float32", W.data, tx * 4, C.data, tx * 4, 16)\n',
    _K + '        T.ptx_cp_async("float16", S.data, 0, A.data, 0, 12)\n',  # 0.1.9: no cp.async width
    _K + '        T.ptx_cp_async("float16", S.data, 0, A.data, 0, 3)\n',  # no whole number of elements
    _K + '        T.ptx_cp_async("float16", S.data, 0, A.data, 0, 16)  # cpasync-migrate: ignore\n',
    _K + '        T.ptx_cp_async("bfloat16", S.data, 0, A.data, 0, 8)  # 数据: 宽\n',
    _K + '        T.ptx_cp_async("float32", S.data, 0, C.data, 0, 16)\n',  # the call's dtype is not the destination's width
    _K + '        T.ptx_cp_async("int8", S.data, 0, A.data, 0, 16)\n',  # (so merged shared memory decides): libcst
    _K + '        T.ptx_cp_async("float16",\n                       S.data, 0, A.data, 0, 16)\n',  # aligned after "("
    _K + '        x = T.ptx_cp_async("float16", S.data, 0, A.data, 0, 16)\n',  # not a statement -> libcst
    # a dtype bound once at module level, by name; the default of decl_buffer in a file of single quotes
    "import tilelang.language as T\n\nDT = 'float16'\n\n\n@T.prim_func\ndef k(A: T.Tensor((64,), DT)):\n"
    "    S = T.decl_buffer((64,), scope='shared.dyn')\n    G = T.decl_buffer((64,), 'float32')\n"
    "    D = T.alloc_shared((64,), DT)\n"
    "    T.ptx_cp_async(DT, D.data, 0, A.data, 0, 16)\n    T.ptx_cp_async('float32', S.data, 0, G.data, 0, 8)\n",
    # the same names in two kernels, one a macro (libcst follows its callers), a lambda, a global
    "import tilelang.language as T\n\n\n@T.prim_func\ndef k1(A: T.Tensor((64,), 'float16')):\n"
    "    S = T.alloc_shared((64,), 'float16')\n    T.ptx_cp_async('float16', S.data, 0, A.data, 0, 16)\n\n\n"
    "@T.prim_func\ndef k2(A: T.Tensor((64,), 'float32')):\n    S = T.alloc_shared((64,), 'float32')\n"
    "    T.ptx_cp_async('float32', S.data, 0, A.data, 0, 16)\n",
    "import tilelang.language as T\n\n\n@T.macro\ndef m(S, A: T.Tensor((64,), 'float16')):\n"
    "    T.ptx_cp_async('float16', S.data, 0, A.data, 0, 16)\n",
    "import tilelang.language as T\n\nS = None\n\n\ndef k(A: T.Tensor((64,), 'float16')):\n    global S\n"
    "    S = T.alloc_shared((64,), 'float16')\n    T.ptx_cp_async('float16', S.data, 0, A.data, 0, 16)\n",
    "import tilelang.language as T\n\n\nclass K:\n    S = T.alloc_shared((64,), 'float16')\n\n"
    "    def k(self, A: T.Tensor((64,), 'float16')):\n        T.ptx_cp_async('float16', S.data, 0, A.data, 0, 16)\n",
    "import tilelang.language as T\n\n\ndef make(dtype='float16'):\n    @T.prim_func\n"
    "    def k(A: T.Tensor((64,), dtype)):\n        S = T.alloc_shared((64,), dtype)\n"
    "        T.ptx_cp_async(dtype, S.data, 0, A.data, 0, 16)\n    return k\n",
    # tabs, CRLF, a callee spelled through `from tilelang import language as TL`
    "import tilelang.language as T\n\n\ndef k(A: T.Tensor((64,), 'float16')):\n\tS = T.alloc_shared((64,), 'float16')\n"
    "\tT.ptx_cp_async('float16', S.data, 0, A.data, 0, 16)\n",
    (_K + '        T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)\n').replace("\n", "\r\n"),
    _K.replace("import tilelang.language as T", "from tilelang import language as TL").replace("T.", "TL.")
    + '        TL.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)\n',
    # calls over lines: one argument per line with a trailing comma, ")" on its own line without one, keywords,
    # a one-line call in a wrapper over lines, a wrapper in a wrapper, parentheses around the call
    _K + '        T.ptx_cp_async(\n            "float16",\n            S.data,\n            tx * 8,\n            A.data,\n'
         '            tx * 8,\n            16,\n        )\n',
    _K + '        T.ptx_cp_async(S.data, tx * 8, A.data, tx * 8, 16,\n            dtype="float16"\n        )\n',
    _K + '        T.ptx_cp_async(\n          dtype="float16", shared_ptr=S.data, shared_offset=(tx * 8),\n'
         '          global_ptr=A.data, global_offset=tx * 8, bytes=16)\n',
    _K + '        T.evaluate(\n            T.ptx_cp_async("float16", S.data, 0, A.data, 0, 16)\n        )\n',
    _K + '        T.evaluate(T.evaluate(T.ptx_cp_async("float16", S.data, 0, A.data, 0, 16)))\n',
    _K + '        (T.ptx_cp_async("float16", S.data, 0, A.data, 0, 16))\n',
    _K + '        T.evaluate((T.ptx_cp_async("float16", S.data, 0, A.data, 0, 16)))\n',
    _K + '        T.ptx_cp_async("float16", S.data, (\n            tx * 8), A.data, 0, 16)\n',  # argument over lines
    _K + '        T.ptx_cp_async("float16", S.data, 0,  # a comment\n            A.data, 0, 16)\n',
]
# SHAPES the ast side decides (under 0.1.8, 0.1.9 or both): proof that the comparisons below compare something
DECIDED = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 14, 16, 17, 22, 23, 24, 25, 26, 27, 28, 29]

KERNELS = sorted((ROOT / "examples").glob("*.py")) + sorted((ROOT / "tests" / "realtl" / "kernels").glob("*.py"))
TEXTS = [c.input.read_text(encoding="utf-8-sig") for c in cases("python")] + \
    [p.read_text(encoding="utf-8") for p in KERNELS] + SHAPES


# the default run compares under the default target; the other option sets run in the slow suite
@pytest.mark.parametrize("opts", [pytest.param(o, marks=() if i == 0 else pytest.mark.slow)
                                  for i, o in enumerate(OPTS)], ids=list(OPTS))
@pytest.mark.parametrize("text", TEXTS)
def test_ast_fixes_equal_libcst_fixes(text, opts, monkeypatch):
    """Switch on: where the ast side decides the file, every finding and fix (edits included) is libcst's.  Where it
    does not, the switch changes nothing: the file goes to libcst either way."""
    o = OPTS[opts]
    quick = fast.findings(text, "x.py", o, fixes=True)
    if quick is None:
        assert fast.findings(text, "x.py", o) is None
        return
    assert full_key(quick) == full_key(pyfe.analyze(text, "x.py", o, fast=False))
    monkeypatch.setattr(fast, "DECIDE_FIXES", False)  # off: today's path
    assert full_key(pyfe.analyze(text, "x.py", o, fixes=True)) == full_key(quick)


def test_the_shapes_are_decided_where_they_should_be():
    got = [i for i, t in enumerate(SHAPES)
           if any(fast.findings(t, "x.py", OPTS[k], fixes=True) is not None for k in ("0.1.8", "0.1.9"))]
    assert got == DECIDED
    codes = {f.code for i in DECIDED for f in fast.findings(SHAPES[i], "x.py", OPTS["0.1.8"], fixes=True).findings} \
        if all(fast.findings(SHAPES[i], "x.py", OPTS["0.1.8"], fixes=True) for i in DECIDED) else set()
    assert {"CPA001", "CPA002"} <= codes
    split = fast.findings(SHAPES[5], "x.py", OPTS["0.1.8"], fixes=True).findings[0]
    assert "\n" in split.fix.edits[0].replacement  # the long call is laid out over lines


def test_switch_off_and_check_mode_only(monkeypatch):
    text = SHAPES[0]
    assert fast.findings(text, "x.py", OPTS["0.1.8"]) is None  # write mode and --diff: libcst makes the fix
    monkeypatch.setattr(fast, "DECIDE_FIXES", False)
    assert fast.findings(text, "x.py", OPTS["0.1.8"], fixes=True) is None


def test_fixture_legacy_files_are_decided():
    """Legacy fixtures the old pass sent to libcst that the ast side decides now (a floor, so a regression shows)."""
    legacy = [c.input.read_text(encoding="utf-8-sig") for c in cases("python")]
    n = sum(1 for t in legacy if fast.decide(t, "x.py", OPTS["0.1.8"])[1] == "legacy call"
            and fast.findings(t, "x.py", OPTS["0.1.8"], fixes=True) is not None)
    assert n >= 21


@pytest.mark.slow  # a generated large file, analysed both ways
def test_windowed_large_file_uses_the_whole_files_style():
    """A large file is analysed by windows (window.py); each window's fix is laid out by the whole file's habits."""
    part = ("\n\n@T.prim_func\ndef k{i}(A: T.Tensor((64,), 'float16'), B: T.Tensor((64,), 'float16')):\n"
            "    S = T.alloc_shared((64,), 'float16')\n"
            "    T.ptx_cp_async('float16', S.data, (B[0] + {i}) * 8 + 1234567 * 3, A.data, 99999 * 8 + 77777, 16)\n")
    text = "import tilelang.language as T\n" + "".join(part.format(i=i) for i in range((window.MIN_CHARS // 200) + 1))
    assert len(text) >= window.MIN_CHARS
    o = OPTS["0.1.8"]
    on = pyfe.analyze(text, "x.py", o, fixes=True)
    assert on.findings and all(f.fix is not None for f in on.findings)
    assert full_key(on) == full_key(pyfe.analyze(text, "x.py", o, fast=False))


def test_edit_spans_follow_libcsts_parentheses():
    """``Source.vspan`` widens over a node's own parentheses only, never over the brackets that hold it."""
    t = "f((a), ( b ), c)(d)\n"
    import ast

    call = ast.parse(t).body[0].value
    src = fast_edit.Source(t)
    inner = call.func
    op, cl = fast_edit.call_parens(src, inner, *src.span(inner))
    got = [t[slice(*src.vspan(a, op + 1, cl))] for a in inner.args]
    assert got == ["(a)", "( b )", "c"]
    assert t[slice(*src.vspan(call.args[0], *fast_edit.call_parens(src, call, *src.span(call))))] == "d"


# ------------------------------------------------------------------------------------- --check, end to end

def _check(paths, env=None, fmt="json"):
    import os

    e = dict(os.environ)
    e.update(env or {})
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "cpasync_migrate", "--check", "--no-cache",
                        "--format", fmt, *map(str, paths)], capture_output=True, text=True, env=e)
    imported = any(line.rstrip().endswith((" libcst", "| libcst")) for line in r.stderr.splitlines()
                   if line.startswith("import time:"))
    return r, imported


def _decided_fixtures():
    out = []
    for c in cases("python"):
        t = c.input.read_text(encoding="utf-8-sig")
        if fast.decide(t, "x.py", OPTS["0.1.8"])[1] == "legacy call" and \
                fast.findings(t, "x.py", OPTS["0.1.8"], fixes=True) is not None:
            out.append(c)
    return out


def test_check_on_decided_legacy_fixtures_never_imports_libcst(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    decided = _decided_fixtures()
    assert len(decided) >= 21
    for c in decided:
        shutil.copy(c.input, tree / f"{c.name}.py")
    r, imported = _check([tree])
    assert r.returncode == 1, r.stderr[-2000:]
    assert not imported
    report = json.loads(r.stdout)
    assert report["summary"]["sites"]["fixable"] > 0
    off, off_imported = _check([tree], env={"CPASYNC_MIGRATE_FAST_FIXES": "0"})
    assert off_imported  # today's path reads these files with libcst
    assert off.returncode == r.returncode and json.loads(off.stdout) == report


def test_a_file_the_ast_side_cannot_decide_gets_libcsts_verdict(tmp_path):
    src = FIXTURES / "python" / "macro_callers_decide.in.py"
    text = src.read_text(encoding="utf-8-sig")
    assert fast.findings(text, "x.py", OPTS["0.1.8"], fixes=True) is None
    f = tmp_path / "m.py"
    shutil.copy(src, f)
    on, imported = _check([f])
    assert imported
    off, _ = _check([f], env={"CPASYNC_MIGRATE_FAST_FIXES": "0"})
    assert on.returncode == off.returncode == 1 and json.loads(on.stdout) == json.loads(off.stdout)
    assert json.loads(on.stdout)["findings"]
