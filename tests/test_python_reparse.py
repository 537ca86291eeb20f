"""The Python re-parse check (python/reparse.py): the standard library's parser where it reads the
original, libcst otherwise, and the same answer as libcst's on every fixture and broken variant."""
import subprocess
import sys
import textwrap

import pytest

from conftest import FIXTURES
from cpasync_migrate.python import reparse, rewrite

PAIRS = sorted(p for p in (FIXTURES / "python").glob("*.in.py") if p.with_name(p.name.replace(".in.", ".out.")).exists())


def _both(old: str, new: str, monkeypatch) -> tuple:
    monkeypatch.setattr(reparse, "STDLIB", True)
    fast = reparse.reparse_problem(old, new)
    monkeypatch.setattr(reparse, "STDLIB", False)
    slow = reparse.reparse_problem(old, new)
    return fast, slow


def _broken_variants(text: str) -> list[str]:
    """The text with a syntax error put in at several places (where a rewrite could go wrong)."""
    lines = text.splitlines(keepends=True)
    out = []
    for i, ln in enumerate(lines):
        if "ptx_cp_async(" in ln:
            out.append("".join(lines[:i]) + ln.replace("ptx_cp_async(", "ptx_cp_async((", 1) + "".join(lines[i + 1:]))
            indent = ln[: len(ln) - len(ln.lstrip())]
            out.append("".join(lines[:i]) + indent + "def (:\n" + "".join(lines[i:]))
    out.append(text + "\n)\n")
    return out


@pytest.mark.parametrize("src", PAIRS, ids=lambda p: p.name.split(".in.")[0])
def test_the_same_answer_as_libcst_on_every_fixture(src, monkeypatch):
    old = src.read_text(encoding="utf-8")
    new = src.with_name(src.name.replace(".in.", ".out.")).read_text(encoding="utf-8")
    assert _both(old, new, monkeypatch) == (None, None)
    refused = 0
    for broken in _broken_variants(new):
        fast, slow = _both(old, broken, monkeypatch)
        assert (fast is None) == (slow is None), broken  # (a variant inside a string or comment still parses)
        if fast is not None:
            refused += 1
            assert fast.startswith("the rewritten text does not parse (line ")
    assert refused >= 1  # at least the unmatched parenthesis at the end


def test_a_file_the_running_python_cannot_read_is_never_given_to_libcst(monkeypatch):
    """Syntax of a newer Python than the one running the tool: no bound on libcst's time can be read from a text
    Python's parser refuses (python/parse_gate.py), so the text is refused with Python's words, not parsed."""
    old = "type Index = int\nx: Index = 1\n"  # a newer Python's syntax than some a tool may run on
    try:
        compile(old, "<t>", "exec")
        pytest.skip("this Python reads type aliases")
    except SyntaxError:
        pass

    def refuse(*a, **k):
        raise AssertionError("libcst was given a text Python cannot read")

    monkeypatch.setattr(rewrite.cst, "parse_module", refuse)
    problem = reparse.reparse_problem(old, old.replace("x:", "y:"))
    assert problem is not None and "line 1" in problem and "cannot parse" in problem


def test_nul_bytes_and_deep_nesting_are_problems_not_crashes(monkeypatch):
    ok = "x = 1\n"
    assert reparse.reparse_problem(ok, "x = 1\0\n")
    assert reparse.reparse_problem(ok, "x = " + "(" * 5000 + "1" + ")" * 5000 + "\n")


def test_a_definition_fix_is_checked_without_importing_libcst(tmp_path):
    """A fork's op.py whose definition the ast pass fixes: the run never imports libcst."""
    f = tmp_path / "op.py"
    f.write_text(textwrap.dedent('''\
        from tvm.tir import op as _tvm_op


        def ptx_cp_async(dtype, shared_ptr, shared_offset, global_ptr, global_offset, bytes):
            """TVM intrinsic for ptx async copy from global to shared memory."""
            return _tvm_op.ptx_cp_async(dtype, shared_ptr, shared_offset, global_ptr, global_offset, bytes)
        '''))
    code = ("import sys\nfrom cpasync_migrate.cli import main\n"
            f"rc = main(['--check', '--no-cache', '-j', '1', '--format', 'json', {str(f)!r}])\n"
            "assert 'libcst' not in sys.modules, 'libcst imported'\nprint('rc', rc)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-800:]
    assert '"CPA006"' in r.stdout and "rc 1" in r.stdout
