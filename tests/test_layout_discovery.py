"""The layout's line length is found the way ruff and black find their own (cpasync_migrate/line_length.py),
and what the layout adds keeps the file's formatting: an operator chain split at a narrow width, the file's
quote style, the added import in isort order (issue 27 section 3).

Each case formats the kernel first with the formatter itself (its own configuration discovery), migrates it
through the command line and checks the result with the formatter's ``--check`` (and ``ruff check --select I``
for the import).  Without ruff or black installed those checks are skipped; the layout assertions are not.
"""
import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import run_inproc

HAS_RUFF = importlib.util.find_spec("ruff") is not None
HAS_BLACK = importlib.util.find_spec("black") is not None

# A kernel whose rewritten call lays out differently at 60, 88 and 120 columns: its destination pointer takes
# 120 columns on one line at the arguments' indent (fits 120, not 88), and its offset 62 on a line of its own
# (split at 60).
KERNEL = '''\
import tilelang.language as T

BLOCK = 64


@T.prim_func
def main(A: T.Tensor((4096,), "float16")):
    with T.Kernel(1, threads=128) as bx:
        S = T.alloc_shared((4096,), "float16")
        tx = T.get_thread_binding()
        for i in T.serial(4):
            T.ptx_cp_async("float16", S.data, (i * 16 + tx // 8) * BLOCK + (tx % 8) * 8, A.data, tx * 8, 16)
'''


def _formatter(tool: str, *args: str, cwd: Path):
    cmd = [sys.executable, "-m", tool] + (["format"] if tool == "ruff" else []) + list(args)
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)


def _tree(root: Path, files: dict) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if text is None:
            p.mkdir(exist_ok=True)
        else:
            p.write_text(textwrap.dedent(text))


def _migrate(root: Path, rel: str, *extra: str):
    r = run_inproc("--target", "0.1.8", "-j", "1", "--no-cache", *extra, rel, cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr
    return (root / rel).read_text()


def _widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def _dst_line(text: str) -> str:
    (line,) = [ln for ln in text.splitlines() if "S.data" in ln]
    return line


# (layout files, the kernel's path, the width ruff uses for it); None as a file's text makes a folder
RUFF_LAYOUTS = {
    "ruff.toml above a pyproject.toml without [tool.ruff]": (
        {"ruff.toml": "line-length = 120\n", "pkg/pyproject.toml": "[project]\nname = 'pkg'\n"}, "pkg/k.py", 120),
    ".ruff.toml wins over ruff.toml and pyproject.toml in one folder": (
        {".ruff.toml": "line-length = 120\n", "ruff.toml": "line-length = 60\n",
         "pyproject.toml": "[tool.ruff]\nline-length = 60\n"}, "k.py", 120),
    "ruff.toml wins over pyproject.toml in one folder": (
        {"ruff.toml": "line-length = 120\n", "pyproject.toml": "[tool.ruff]\nline-length = 60\n"}, "k.py", 120),
    "the closest ruff configuration is not merged with its parent's": (
        {"pyproject.toml": "[tool.ruff]\nline-length = 60\n", "pkg/ruff.toml": "[lint]\nselect = ['E']\n"},
        "pkg/k.py", 88),
    "a pyproject.toml's [tool.ruff] extends a file above": (
        {"base.toml": "line-length = 120\n", "pkg/pyproject.toml": "[tool.ruff]\nextend = '../base.toml'\n"},
        "pkg/k.py", 120),
    "a narrow width": ({"ruff.toml": "line-length = 60\n"}, "k.py", 60),
}


@pytest.mark.parametrize("case", list(RUFF_LAYOUTS))
def test_ruff_discovery(case, tmp_path):
    files, rel, width = RUFF_LAYOUTS[case]
    _tree(tmp_path, files)
    (tmp_path / rel).write_text(KERNEL)
    if HAS_RUFF:
        r = _formatter("ruff", rel, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    out = _migrate(tmp_path, rel)
    assert "T.tvm_access_ptr(" in out
    assert _widest(out) <= width
    dst = _dst_line(out)
    if width == 120:
        assert dst.strip().startswith("T.tvm_access_ptr(T.type_annotation(") and len(dst) > 88  # one line
    else:
        assert dst.strip() == "S.data,"  # split inside
    if HAS_RUFF:
        r = _formatter("ruff", "--check", "--diff", rel, cwd=tmp_path)
        assert r.returncode == 0, r.stdout + r.stderr


BLACK_LAYOUTS = {
    "a pyproject.toml without [tool.black] does not stop the search": (
        {"pyproject.toml": "[tool.black]\nline-length = 120\n", "pkg/pyproject.toml": "[project]\nname = 'p'\n"},
        "pkg/k.py", 120),
    "a .git folder is the project root": (
        {"pyproject.toml": "[tool.black]\nline-length = 120\n", "pkg/.git": None}, "pkg/k.py", 88),
    "ruff's setting wins over black's": (
        {"pyproject.toml": "[tool.black]\nline-length = 60\n", "ruff.toml": "line-length = 120\n"}, "k.py", 120),
}


@pytest.mark.parametrize("case", list(BLACK_LAYOUTS))
def test_black_discovery(case, tmp_path):
    files, rel, width = BLACK_LAYOUTS[case]
    _tree(tmp_path, files)
    (tmp_path / rel).write_text(KERNEL)
    check = HAS_BLACK and "ruff" not in case
    if check:
        r = _formatter("black", "-q", rel, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    out = _migrate(tmp_path, rel)
    assert _widest(out) <= width
    assert (len(_dst_line(out)) > 88) == (width == 120)
    if check:
        r = _formatter("black", "--check", "--diff", "-q", rel, cwd=tmp_path)
        assert r.returncode == 0, r.stdout + r.stderr


def test_an_operator_chain_that_no_longer_fits_is_split(tmp_path):
    (tmp_path / "ruff.toml").write_text("line-length = 60\n")
    (tmp_path / "k.py").write_text(KERNEL)
    out = _migrate(tmp_path, "k.py")
    assert ("                    (i * 16 + tx // 8) * BLOCK\n"
            "                    + (tx % 8) * 8,\n") in out, out
    if HAS_RUFF:
        assert _formatter("ruff", "--check", "k.py", cwd=tmp_path).returncode == 0
    if HAS_BLACK:
        (tmp_path / "pyproject.toml").write_text("[tool.black]\nline-length = 60\n")
        assert _formatter("black", "--check", "-q", "k.py", cwd=tmp_path).returncode == 0


SINGLE = '''\
import tilelang.language as T


@T.prim_func
def main(A: T.Tensor((64,), 'float16')):
    with T.Kernel(1, threads=8) as bx:
        S = T.alloc_shared((64,), 'float16')
        tx = T.get_thread_binding()
        T.ptx_cp_async('float16', S.data, tx * 8, A.data, tx * 8, 16)
'''


def test_inserted_strings_take_the_files_quote_style(tmp_path):
    (tmp_path / "ruff.toml").write_text("line-length = 120\n[format]\nquote-style = 'single'\n")
    (tmp_path / "k.py").write_text(SINGLE)
    out = _migrate(tmp_path, "k.py")
    assert "T.type_annotation('float16')" in out and '"' not in out, out
    if HAS_RUFF:
        r = _formatter("ruff", "--check", "--diff", "k.py", cwd=tmp_path)
        assert r.returncode == 0, r.stdout + r.stderr
    # --style access_ptr's mode strings too; a double-quoted file keeps double quotes
    (tmp_path / "k.py").write_text(SINGLE)
    out = _migrate(tmp_path, "k.py", "--target", "0.1.9", "--style", "access_ptr")
    assert "'w'" in out and '"' not in out, out
    (tmp_path / "k.py").write_text(SINGLE.replace("'", '"'))
    out = _migrate(tmp_path, "k.py")
    assert 'T.type_annotation("float16")' in out and "'" not in out, out


TVM = '''\
"""A TVMScript kernel."""

from __future__ import annotations

import math

import numpy as np
from tvm.script import tir as T


@T.prim_func
def copy(A: T.Buffer((64,), "float16")):
    S = T.alloc_buffer((64,), "float16", scope="shared")
    T.evaluate(T.ptx_cp_async("float16", S.data, 0, A.data, 0, 16))
'''


def test_the_import_migrate_tvm_adds_keeps_isort_order(tmp_path):
    (tmp_path / "k.py").write_text(TVM)
    if HAS_RUFF:
        r = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated", "--select", "I", "k.py"],
                           cwd=tmp_path, capture_output=True, text=True)
        assert r.returncode == 0, r.stdout  # sorted before
    out = _migrate(tmp_path, "k.py", "--migrate-tvm")
    assert ("import numpy as np\n"
            "import tilelang.language as TL\n"
            "from tvm.script import tir as T\n") in out, out
    if HAS_RUFF:
        r = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated", "--select", "I", "k.py"],
                           cwd=tmp_path, capture_output=True, text=True)
        assert r.returncode == 0, r.stdout  # and after


@pytest.mark.parametrize("head, expect", [
    # a name that sorts after it: before that one
    ("import numpy\nimport zlib_ng\nfrom tilelang.language import ptx_cp_async\n",
     "import numpy\nimport tilelang.language as T\nimport zlib_ng\n"),
    # after `import tilelang`, before the from-imports
    ("import tilelang\nfrom tilelang.language import ptx_cp_async\n",
     "import tilelang\nimport tilelang.language as T\nfrom tilelang.language import ptx_cp_async\n"),
    # a comment block set off by a blank line stays with its import, the new one goes before the blank line
    ("import numpy\n\n# vendored\nimport zlib_ng\nfrom tilelang.language import ptx_cp_async\n",
     "import numpy\nimport tilelang.language as T\n\n# vendored\nimport zlib_ng\n"),
    # tilelang's own section (first-party in its repository): there, not in the section above
    ("import tvm\nfrom tvm import tir\n\nimport tilelang\nfrom tilelang.language import ptx_cp_async\n",
     "from tvm import tir\n\nimport tilelang\nimport tilelang.language as T\nfrom tilelang.language"),
])
def test_added_import_position(head, expect, tmp_path):
    (tmp_path / "k.py").write_text(head + "\n\ndef k(S, A):\n    ptx_cp_async('float16', S.data, 0, A.data, 0, 16)\n")
    out = _migrate(tmp_path, "k.py", "--unsafe-fixes")
    assert expect in out, out
    assert out.count("import tilelang.language as T\n") == 1
