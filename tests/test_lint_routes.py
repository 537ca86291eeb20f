"""No route to the intrinsic escapes the lint (issue 24, "lint evasion").

Every read of ``ptx_cp_async`` as a value that the tool does not follow to its calls is CPA008, an
error, so ``--check`` fails on it with the file and line; the routes the text decides (a walrus, a
parameter's default) are migrated like the direct spelling.  What is no read (the API's own
definition, ``__all__``, docstrings, imports, ``hasattr`` and other version checks) stays quiet.
Both Python passes give the same findings (the decision is ``python/route_rules.py``'s).
"""
import json
import textwrap

import pytest

from conftest import ROOT
from conftest import run_inproc as run_cli
from cpasync_migrate import codes
from cpasync_migrate import python as pyfe
from cpasync_migrate.engine import RunSettings, front_end_options
from cpasync_migrate.python import fast
from test_python_fastpath import key

OPTS = front_end_options(RunSettings(mode="check", target="0.1.8"))
CALL = '("float16", S.data, tx * 8, A.data, tx * 8, 16)'
HEAD = "import tilelang.language as T\n"


def _tree(tmp_path, files: dict):
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text), encoding="utf-8")


def _check(tmp_path, *paths):
    r = run_cli("--check", "--target", "0.1.8", "-j", "1", *(paths or (".",)), cwd=tmp_path)
    js = run_cli("--check", "--format", "json", "--target", "0.1.8", "-j", "1", *(paths or (".",)), cwd=tmp_path)
    return r, json.loads(js.stdout)["findings"]


# (files, [(path, line, column, code, words of the message)]): each route of the issue, through the CLI.
ROUTES = {
    "walrus called at once, then its name": (
        {"k.py": HEAD + f"def f(S, A, tx):\n    (cp := T.ptx_cp_async){CALL}\n    cp{CALL}\n"},
        [("k.py", 3, 5, "CPA001", "migrate"), ("k.py", 4, 5, "CPA001", "migrate")]),
    "walrus whose value goes on into a list": (
        {"k.py": HEAD + "ops = [(cp := T.ptx_cp_async)]\n"},
        [("k.py", 2, 15, "CPA008", "an element of a list")]),
    "class attribute": (
        {"k.py": HEAD + f"class K:\n    cp = T.ptx_cp_async\n\n    def run(self, S, A, tx):\n        self.cp{CALL}\n"},
        [("k.py", 3, 10, "CPA008", "class attribute `K.cp`")]),
    "default parameter value never rebound": (
        {"k.py": HEAD + f"def f(S, A, tx, cp=T.ptx_cp_async):\n    cp{CALL}\n"},
        [("k.py", 3, 5, "CPA001", "unsafe fix")]),
    "default parameter value of a lambda": (
        {"k.py": HEAD + f"f = lambda S, A, tx, cp=T.ptx_cp_async: cp{CALL}\n"},
        [("k.py", 2, 25, "CPA008", "the default of parameter `cp` of a lambda")]),
    "tuple unpacking": (
        {"k.py": HEAD + f"cp, n = T.ptx_cp_async, 16\ndef f(S, A, tx):\n    cp{CALL}\n"},
        [("k.py", 2, 9, "CPA008", "unpacked from a tuple")]),
    "list unpacking": (
        {"k.py": HEAD + f"[cp, n] = [T.ptx_cp_async, 16]\ndef f(S, A, tx):\n    cp{CALL}\n"},
        [("k.py", 2, 12, "CPA008", "unpacked from a list")]),
    "dict value": (
        {"k.py": HEAD + f"OPS = {{'copy': T.ptx_cp_async}}\ndef f(S, A, tx):\n    OPS['copy']{CALL}\n"},
        [("k.py", 2, 16, "CPA008", "a dict value")]),
    ".__call__": (
        {"k.py": HEAD + f"def f(S, A, tx):\n    T.ptx_cp_async.__call__{CALL}\n"},
        [("k.py", 3, 5, "CPA008", "through `.__call__`")]),
    "__dict__ lookup as a value": (
        {"k.py": HEAD + f"ops = [T.__dict__['ptx_cp_async']]\ndef f(S, A, tx):\n    ops[0]{CALL}\n"},
        [("k.py", 2, 8, "CPA008", "`T.__dict__['ptx_cp_async']`")]),
    "__dict__ lookup called": (
        {"k.py": HEAD + f"def f(S, A, tx):\n    T.__dict__['ptx_cp_async']{CALL}\n"},
        [("k.py", 3, 5, "CPA002", "reached through `T.__dict__['ptx_cp_async']`")]),
    "vars() lookup bound and called": (
        {"k.py": HEAD + f"cp = vars(T)['ptx_cp_async']\ndef f(S, A, tx):\n    cp{CALL}\n"},
        [("k.py", 4, 5, "CPA002", "reached through `vars(T)['ptx_cp_async']`")]),
    "getattr as a value": (
        {"k.py": HEAD + f"register(getattr(T, 'ptx_cp_async'))\n"},
        [("k.py", 2, 10, "CPA008", "passed to `register`")]),
    "getattr with a default, bound and never called": (
        {"k.py": HEAD + "cp = getattr(T, 'ptx_cp_async', None)\n"},
        [("k.py", 2, 6, "CPA008", "bound to `cp`, which this file never calls")]),
    "an alias imported from another module of the tree": (
        {"helpers.py": HEAD + "copy_async = T.ptx_cp_async\n",
         "kernels/k.py": f"from helpers import copy_async\n\ndef f(S, A, tx):\n    copy_async{CALL}\n"},
        [("helpers.py", 2, 14, "CPA008", "another module may import it")]),
    "an alias also passed on": (
        {"k.py": HEAD + f"cp = T.ptx_cp_async\ndef f(S, A, tx):\n    cp{CALL}\n    run(cp)\n"},
        [("k.py", 4, 5, "CPA001", "migrate"), ("k.py", 5, 9, "CPA008", "`cp` reads TileLang's")]),
    "an alias exported by name": (
        {"k.py": HEAD + f"__all__ = ['cp']\ncp = T.ptx_cp_async\ndef f(S, A, tx):\n    cp{CALL}\n"},
        [("k.py", 3, 6, "CPA008", "which `__all__` exports"), ("k.py", 5, 5, "CPA001", "migrate")]),
    "an imported name passed to a function": (
        {"k.py": f"from tilelang.language import ptx_cp_async as cp\nschedule(cp, 16)\n"},
        [("k.py", 2, 10, "CPA008", "passed to `schedule`")]),
    "a partial bound to a name that is also passed on": (
        {"k.py": HEAD + "import functools\nh = functools.partial(T.ptx_cp_async, 'float16')\nrun(h)\n"},
        [("k.py", 3, 23, "CPA008", "passed to `functools.partial`")]),
    "a re-export under the intrinsic's name outside TileLang's package": (
        {"mylib/ops.py": HEAD + "ptx_cp_async = T.ptx_cp_async\n"},
        [("mylib/ops.py", 2, 16, "CPA008", "bound to `ptx_cp_async`")]),
    "TVM's namespace in a table": (
        {"k.py": "from tvm.script import tir as T\nTABLE = (T.ptx_cp_async,)\n"},
        [("k.py", 2, 10, "CPA008", "TVM's ptx_cp_async")]),
    "a module through a parameter's default": (
        {"k.py": HEAD + f"def f(S, A, tx, L=T):\n    L.ptx_cp_async{CALL}\n    ops = [L.ptx_cp_async]\n"},
        [("k.py", 3, 5, "CPA002", "whose module is a parameter's default"),
         ("k.py", 4, 12, "CPA008", "an element of a list")]),
    "a module imported by importlib or read from sys.modules": (
        {"k.py": "import importlib\nimport sys\n\ndef f(S, A, tx):\n"
                 f"    importlib.import_module('tilelang.language').ptx_cp_async{CALL}\n"
                 "    return {'cp': sys.modules['tilelang.language'].ptx_cp_async}\n"},
        [("k.py", 5, 5, "CPA001", "migrate"), ("k.py", 6, 19, "CPA008", "a dict value")]),
    "passed to a function that shadows callable": (
        {"k.py": HEAD + f"def callable(f):\n    return f\n\ndef g(S, A, tx):\n    callable(T.ptx_cp_async){CALL}\n"},
        [("k.py", 6, 14, "CPA008", "passed to `callable`")]),
    "TileLang's op in neither layout (the fast pass once passed it)": (
        {"k.py": HEAD + "def f(S):\n    T.ptx_cp_async(S.data, 16)\n"},
        [("k.py", 3, 5, "CPA002", "neither the legacy nor the access-pointer form")]),
    "returned from a function": (
        {"k.py": HEAD + "def pick():\n    return T.ptx_cp_async\n"},
        [("k.py", 3, 12, "CPA008", "returned from a function")]),
}


@pytest.mark.parametrize("name", list(ROUTES))
def test_route_fails_check_with_code_file_and_line(name, tmp_path):
    files, want = ROUTES[name]
    _tree(tmp_path, files)
    r, found = _check(tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    got = sorted((f["path"], f["line"], f["column"], f["code"]) for f in found)
    assert got == sorted(w[:4] for w in want)
    for path, line, col, code, words in want:
        lines = [ln for ln in r.stdout.splitlines() if ln.startswith(f"{path}:{line}:{col}: {code} ")]
        assert lines, (path, line, r.stdout)
        assert words in lines[0], lines[0]


@pytest.mark.parametrize("name", list(ROUTES))
def test_route_findings_agree_between_the_passes(name):
    for text in ROUTES[name][0].values():
        text = textwrap.dedent(text)
        assert key(pyfe.analyze(text, "x.py", OPTS)) == key(pyfe.analyze(text, "x.py", OPTS, fast=False))


# ------------------------------------------------------------------ not reads

QUIET = {
    "__all__, docstring, comment, import": HEAD + textwrap.dedent('''\
        from tilelang.language import ptx_cp_async
        __all__ = ["ptx_cp_async", "make"]


        def make():
            """Wraps T.ptx_cp_async and ptx_cp_async (see getattr(T, "ptx_cp_async"))."""
            # T.ptx_cp_async(...) would go here
            return 1
        '''),
    "hasattr version check": HEAD + 'HAS = hasattr(T, "ptx_cp_async")\nif hasattr(T, "ptx_cp_async"):\n    pass\n',
    "presence tested": HEAD + textwrap.dedent('''\
        try:
            T.ptx_cp_async
        except AttributeError:
            pass
        if getattr(T, "ptx_cp_async", None) is None or not T.ptx_cp_async:
            raise ImportError("no ptx_cp_async")
        assert T.ptx_cp_async, "needs ptx_cp_async"
        ok = T.ptx_cp_async is not None
        '''),
    "inspected by a version check": HEAD + textwrap.dedent('''\
        import inspect
        from inspect import getfullargspec
        NEW_FORM = "dst_access_ptr" in inspect.signature(T.ptx_cp_async).parameters
        OLD_FORM = "shared_offset" in getfullargspec(T.ptx_cp_async).args
        assert callable(T.ptx_cp_async)
        '''),
    "an assignment to it": HEAD + "T.ptx_cp_async = print\ndel T.ptx_cp_async\n",
    "a migrated file calling through an alias": HEAD + textwrap.dedent('''\
        cp = T.ptx_cp_async


        def f(S, A):
            cp(T.access_ptr(S[0], "w", 8), T.access_ptr(A[0], "r", 8), 16)
        '''),
    "some other library's ptx_cp_async": "import mylib\nops = [mylib.ptx_cp_async]\n",
    "a local function named like it": "def ptx_cp_async(a):\n    return a\nops = [ptx_cp_async]\n",
}


@pytest.mark.parametrize("name", list(QUIET))
def test_no_read_no_finding(name, tmp_path):
    _tree(tmp_path, {"k.py": QUIET[name]})
    r, found = _check(tmp_path)
    assert (r.returncode, found) == (0, []), r.stdout + r.stderr
    text = QUIET[name]
    assert key(pyfe.analyze(text, "x.py", OPTS)) == key(pyfe.analyze(text, "x.py", OPTS, fast=False))


def test_the_api_definition_is_not_a_read(tmp_path):
    """A fork's op.py defines it (CPA006); its ir.py re-exports it under its own name: no CPA008 in either."""
    _tree(tmp_path, {
        "tilelang/language/tir/op.py": '''\
            from tvm.tir import op as _tvm_op


            def ptx_cp_async(dtype, shared_ptr, shared_offset, global_ptr, global_offset, bytes):
                return _tvm_op.ptx_cp_async(dtype, shared_ptr, shared_offset, global_ptr, global_offset, bytes)
            ''',
        "tilelang/language/tir/ir.py": '''\
            import tilelang.language.tir.op as _tir_op

            ptx_mma = _dtype_forward(_tir_op.ptx_mma)
            ptx_cp_async = _dtype_forward(_tir_op.ptx_cp_async)
            ''',
        "tilelang/language/ast/ir.py": "from tilelang.language.tir import op as _tir_op\n"
                                        "ptx_cp_async = _tir_op.ptx_cp_async\n",
    })
    r, found = _check(tmp_path)
    assert sorted((f["path"], f["code"]) for f in found) == [("tilelang/language/tir/op.py", "CPA006")]
    assert r.returncode == 1


def test_a_suppressed_read_passes(tmp_path):
    _tree(tmp_path, {"k.py": HEAD + "OPS = [T.ptx_cp_async]  # cpasync-migrate: ignore[CPA008]\n"
                                    "MORE = [T.ptx_cp_async]  # cpasync-migrate: ignore\n"})
    r, found = _check(tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert [(f["line"], f["code"], f["status"]) for f in found] == [(2, "CPA008", "suppressed"),
                                                                     (3, "CPA008", "suppressed")]


def test_a_name_spelled_only_split_is_out_of_scope(tmp_path):
    """The byte prefilter never reads such a file; the page says so."""
    _tree(tmp_path, {"k.py": HEAD + 'cp = getattr(T, "ptx_" + "cp_async")\ncp("float16", a, 0, b, 0, 16)\n'})
    r, found = _check(tmp_path)
    assert (r.returncode, found) == (0, [])
    page = (ROOT / "docs" / "codes" / "CPA008.md").read_text(encoding="utf-8")
    assert '"ptx_" + "cp_async"' in page and "prefilter" in page


def test_a_default_route_rests_on_its_assumption(tmp_path):
    _tree(tmp_path, {"k.py": HEAD + f"def make(S, A, tx, copy=T.ptx_cp_async):\n    copy{CALL}\n"})
    r, found = _check(tmp_path)
    (f,) = found
    assert (f["code"], f["fix"]["applicability"], f["status"]) == ("CPA001", "unsafe", "unsafe")
    assert "every call of `make` leaves its parameter `copy` at its default `T.ptx_cp_async`" in \
        f["fix"]["assumptions"]
    rebound = HEAD + f"def make(S, A, tx, copy=T.ptx_cp_async):\n    copy = trace(copy)\n    copy{CALL}\n"
    a = pyfe.analyze(rebound, "x.py", OPTS, fast=False)
    assert [(x.line, x.code) for x in a.findings] == [(2, "CPA008"), (4, "CPA002")]
    assert "the default of parameter `copy`, used at line 3" in a.findings[0].message


def test_registry_and_page():
    c = codes.CODES[codes.INTRINSIC_READ_AS_VALUE]
    assert (codes.INTRINSIC_READ_AS_VALUE, c.name, c.severity, c.fix) == \
        ("CPA008", "intrinsic-read-as-value", "error", "none")


# ------------------------------------------------------------------ the two passes

FAST_DECIDES = [
    HEAD + "OPS = {'copy': T.ptx_cp_async}\nPIPE = [T.ptx_cp_async, 1]\nrun(T.ptx_cp_async, key=T.ptx_cp_async)\n",
    HEAD + "def g():\n    return T.ptx_cp_async\nx = lambda: T.ptx_cp_async\ny = T.ptx_cp_async.__doc__\n",
    HEAD + "a, b = T.ptx_cp_async, 1\n[c] = [T.ptx_cp_async]\ns = {T.ptx_cp_async}\nd = {T.ptx_cp_async: 1}\n",
    "from tilelang.language import ptx_cp_async as cp\nschedule(cp)\nq = f'{cp}'\nf(*[cp])\nf(**{'a': cp})\n",
    "from tvm.script import tir as T\n@register(T.ptx_cp_async)\ndef k():\n    yield T.ptx_cp_async\n",
    HEAD + "import functools\nh = functools.partial(T.ptx_cp_async, 'float16')\n",
    HEAD + "x = T.ptx_cp_async + 1\nfor f in T.ptx_cp_async, 2:\n    pass\nwith T.ptx_cp_async as w:\n    pass\n",
    HEAD + "x[T.ptx_cp_async]\nT.ptx_cp_async[0]\nclass K(T.ptx_cp_async, meta=T.ptx_cp_async):\n    pass\n",
    HEAD + "OPS = [T.ptx_cp_async]  # cpasync-migrate: ignore\n",
    HEAD + "import inspect as i\ni.signature(T.ptx_cp_async)\nok = callable(T.ptx_cp_async)\nrun(T.ptx_cp_async)\n",
] + [t for n, t in QUIET.items() if n not in ("presence tested", "a migrated file calling through an alias")]

TO_LIBCST = [
    HEAD + "cp = T.ptx_cp_async\n",
    HEAD + "def f(cp=T.ptx_cp_async):\n    pass\n",
    HEAD + "print(cp := T.ptx_cp_async)\n",
    HEAD + "h = wrap(T.ptx_cp_async)\nrun(h)\n",
    HEAD + "x = y = T.ptx_cp_async\n",
    HEAD + "d = T.__dict__['ptx_cp_async']\n",
    HEAD + "x[T.ptx_cp_async, 1]\n",
    "from tilelang.language import *\nops = [ptx_cp_async]\n",
    HEAD + "def callable(f):\n    return f\nx = callable(T.ptx_cp_async)\n",  # a builtin's name bound
    QUIET["presence tested"],  # a getattr naming the intrinsic
    QUIET["a migrated file calling through an alias"],
    "import tilelang.language.tir.op as _tir_op\nptx_cp_async = _dtype_forward(_tir_op.ptx_cp_async)\n",
]


@pytest.mark.parametrize("text", FAST_DECIDES)
def test_the_fast_pass_decides_plain_reads_as_libcst_does(text):
    quick = fast.findings(text, "x.py", OPTS)
    assert quick is not None
    assert key(quick) == key(pyfe.analyze(text, "x.py", OPTS, fast=False))


@pytest.mark.parametrize("text", TO_LIBCST)
def test_reads_libcst_follows_are_left_to_it(text):
    assert fast.findings(text, "x.py", OPTS) is None
    assert key(pyfe.analyze(text, "x.py", OPTS)) == key(pyfe.analyze(text, "x.py", OPTS, fast=False))


def test_fast_pass_reads_cover_every_route_they_name():
    """The texts the fast pass decides exercise its routes (so the equality above means something)."""
    msgs = [f.message for t in FAST_DECIDES for f in fast.findings(t, "x.py", OPTS).findings]
    for words in ("a dict value", "an element of a list", "passed to `run`", "returned from a function",
                  "the result of a lambda", "its attribute `.__doc__`", "unpacked from a tuple", "unpacked from a list",
                  "an element of a set", "a dict key", "passed to `schedule`", "in an expression the tool does not",
                  "passed to `register`", "yielded", "passed to `functools.partial`", "an element of a tuple",
                  "TVM's"):
        assert any(words in m for m in msgs), words


def test_migrate_tvm_keeps_a_walrus_callee(tmp_path):
    """Switching a walrus callee to TileLang's op would drop the name it binds: left as CPA003, saying why."""
    _tree(tmp_path, {"k.py": "import tvm\nimport tilelang.language as T\n\ndef f(S, A, tx):\n"
                             f"    (cp := tvm.tir.ptx_cp_async){CALL}\n    cp{CALL}\n"})
    r = run_cli("--check", "--format", "json", "--migrate-tvm", "-j", "1", "k.py", cwd=tmp_path)
    got = [(f["line"], f["code"]) for f in json.loads(r.stdout)["findings"]]
    assert got == [(5, "CPA003"), (6, "CPA001")]
    assert "does not switch a walrus callee" in json.loads(r.stdout)["findings"][0]["message"]


# ------------------------------------------------------------------ every context, every spelling

# (context with {R} for the read, the spellings for which it is no finding: "all", or a set of READS' keys)
CONTEXTS = [
    ("x = {R}", ()), ("x: int = {R}", ()), ("x = y = {R}", ()), ("x, y = {R}, 1", ()), ("[x, y] = [{R}, 1]", ()),
    ("x += {R}", ()), ("f({R})", ()), ("f(k={R})", ()), ("f(*{R})", ()), ("f(**{R})", ()), ("o.m({R})", ()),
    ("[{R}]", ()), ("({R},)", ()), ("{{{R}}}", ()), ("{{1: {R}}}", ()), ("{{{R}: 1}}", ()), ("{{**{R}}}", ()),
    ("{R}.__call__(1)", ()), ("{R}.x", ()), ("{R}[0]", ()), ("x[{R}]", ()), ("x[{R}, 1]", ()), ("x[({R}, 1)]", ()),
    ("x[{R}:]", ()), ("print(f'{{{R}}}')", ()), ("def g():\n    return {R}", ()), ("def g():\n    yield {R}", ()),
    ("def g():\n    yield from {R}", ()), ("lambda: {R}", ()), ("lambda c={R}: c", ()), ("def g(c={R}):\n    return c", ()),
    ("def g(c={R}):\n    pass", ()), ("class K:\n    c = {R}", ()), ("class K({R}):\n    pass", ()),
    ("class K(m={R}):\n    pass", ()), ("@{R}\ndef g(): pass", ()), ("@d({R})\ndef g(): pass", ()),
    ("assert x, {R}", ()), ("x = {R} if c else 2", ()), ("x = -{R}", ()), ("x = {R} + 1", ()), ("x = {R} or 1", ()),
    ("x = [a for a in {R}]", ()), ("x = [{R} for a in b]", ()), ("for a in {R}: pass", ()), ("with {R} as w: pass", ()),
    ("raise {R}", ()), ("match {R}:\n    case 1: pass", ()), ("async def g():\n    await {R}", ()),
    ("print(c := {R})", ()), ("(c := {R})", ()), ("x = f({R})\nrun(x)", ()), ("x = {R}\nrun(x)", ()),
    ("x = {R}\n__all__ = ['x']", ()), ("x = [*{R}]", ()), ("g(lambda: {R})", ()), ("isinstance({R}, int)", ()),
    ("def g():\n    global q\n    q = {R}", ()),
    # a capture pattern binds `cp`, `getattr(...)` there is a class pattern; a dotted value pattern reads
    ("match x:\n    case {R}: pass", {"alias", "string"}),
    # the routes the tool follows to their calls, and the reads that reach no call
    ("(c := {R})(1)", "all"), ("x = f({R})\nx(1)", "all"), ("x = {R}\nx(1)", "all"), ("x = {R}\ny = x\ny(1)", "all"),
    ("x = {R}\ndef g():\n    x(1)", "all"), ("def g(c={R}):\n    c(1)", "all"), ("{R}(1)", "all"),
    ("if {R}: pass", "all"), ("while {R}: break", "all"), ("assert {R}", "all"), ("{R}", "all"),
    ("x = 1 if {R} else 2", "all"), ("not {R}", "all"), ("x = {R} is None", "all"), ("callable({R})", "all"),
    ("x = [a for a in b if {R}]", ()), ("import inspect\ninspect.signature({R})", "all"), ("{R} = 1", "all"),
    ("del {R}", "all"),
]
READS = {"dotted": "T.ptx_cp_async", "alias": "cp", "string": 'getattr(T, "ptx_cp_async")',
         "module alias": "L.ptx_cp_async", "spelled out": "tilelang.language.ptx_cp_async"}
CONTEXT_HEAD = "import tilelang\nimport tilelang.language as T\nfrom tilelang.language import ptx_cp_async as cp\nL = T\n"


@pytest.mark.slow
def test_every_context_of_every_spelling_is_a_finding_or_decided_quiet():
    """Through both passes: the same findings; a finding wherever the read is neither followed to a call nor only
    tested or inspected, and no CPA008 where it is."""
    seen = 0
    for ctx, quiet in CONTEXTS:
        for kind, spelled in READS.items():
            text = CONTEXT_HEAD + ctx.format(R=spelled) + "\n"
            try:
                compile(text, "k.py", "exec")
            except SyntaxError:
                continue  # `del getattr(...)`, `getattr(...) = 1`
            seen += 1
            full = pyfe.analyze(text, "x.py", OPTS, fast=False)
            quick = fast.findings(text, "x.py", OPTS)
            assert quick is None or key(quick) == key(full), text
            want_quiet = quiet == "all" or kind in quiet
            got = [f.code for f in full.findings]
            if want_quiet:  # a call the tool analyses may still be reported (`cp(1)`: CPA002, not this API's shape)
                assert "CPA008" not in got, (text, got)
            else:
                assert got and set(got) <= {"CPA008", "CPA002"}, (text, got)
    assert seen > 300


def test_switch_off_sends_reads_to_libcst(monkeypatch):
    """CPASYNC_MIGRATE_FAST_READS=0: the fast pass decides no read; the findings stay the same."""
    text = FAST_DECIDES[0]
    on = fast.findings(text, "x.py", OPTS)
    monkeypatch.setattr(fast, "DECIDE_READS", False)
    assert fast.findings(text, "x.py", OPTS) is None
    assert on is not None and key(pyfe.analyze(text, "x.py", OPTS)) == key(on)
    assert {f.code for f in on.findings} == {"CPA008"}
