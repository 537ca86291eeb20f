"""Rewritten calls are laid out like the file (python/layout.py).

The contract (issue 18, section 3): a file that ``ruff format`` (and, separately, black) leaves
unchanged before the migration is still left unchanged after it, at the line length the project
configures.  Each example and each Python fixture is formatted first (copies in tmp, with a
pyproject.toml that sets the line length), migrated, and checked with the formatter's --check.
"""
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import run_inproc as run_cli
from fixture_cases import cases

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
FIXTURES = [c for c in cases("python") if c.output.read_bytes() != c.input.read_bytes()]


def _format(formatter: str, files, check: bool, cwd: Path):
    cmd = [sys.executable, "-m", formatter]
    cmd += (["format"] if formatter == "ruff" else []) + (["--check"] if check else []) + ["-q"]
    return subprocess.run(cmd + [str(f) for f in files], cwd=cwd, capture_output=True, text=True)


def _args(meta) -> list[str]:
    args = list(meta.get("args", []))
    if "--target" not in args:
        args += ["--target", "0.1.8"]
    if "--unsafe-fixes" not in args:
        args.append("--unsafe-fixes")
    return args + ["-j", "1", "--no-cache"]


def _formatted_and_migrated(formatter: str, width: int, tmp_path: Path):
    """(name, text before, text after) of every example and fixture, formatted first, then migrated."""
    (tmp_path / "pyproject.toml").write_text(f"[tool.{formatter}]\nline-length = {width}\n")
    jobs = [(p.name, p.read_bytes(), ["--target", "0.1.8", "--unsafe-fixes", "-j", "1", "--no-cache"])
            for p in EXAMPLES]
    jobs += [(f"{c.name}.py", c.input.read_bytes(), _args(c.meta)) for c in FIXTURES]
    for name, raw, _ in jobs:
        (tmp_path / name).write_bytes(raw)
    r = _format(formatter, [n for n, _, _ in jobs], False, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    out = []
    for name, _, args in jobs:
        before = (tmp_path / name).read_bytes()
        run_cli(*args, name, cwd=tmp_path)
        out.append((name, before, (tmp_path / name).read_bytes()))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("width", [88, 120])
@pytest.mark.parametrize("formatter", ["ruff", "black"])
def test_formatted_file_stays_formatted(formatter, width, tmp_path):
    done = _formatted_and_migrated(formatter, width, tmp_path)
    changed = [name for name, before, after in done if after != before]
    # the migration does change the examples and the fixtures (or the check below proves nothing)
    assert len(changed) >= len(EXAMPLES) - 2 + len(FIXTURES) - 5, changed
    bad = []
    for name in changed:
        r = _format(formatter, [name], True, tmp_path)
        if r.returncode != 0:
            d = subprocess.run([sys.executable, "-m", formatter] + (["format"] if formatter == "ruff" else [])
                               + ["--diff", "-q", name], cwd=tmp_path, capture_output=True, text=True)
            bad.append(d.stdout + d.stderr)
    assert not bad, "\n".join(bad)


def _migrate(tmp_path: Path, source: str, pyproject: str = "") -> str:
    if pyproject:
        (tmp_path / "pyproject.toml").write_text(pyproject)
    f = tmp_path / "k.py"
    f.write_text(textwrap.dedent(source))
    run_cli("--target", "0.1.8", "-j", "1", "--no-cache", "k.py", cwd=tmp_path)
    return f.read_text()


HEAD = '''\
import tilelang.language as T


@T.prim_func
def main(A: T.Tensor((64,), "float16")):
    with T.Kernel(1, threads=8) as bx:
        S = T.alloc_shared((64,), "float16")
        tx = T.get_thread_binding()
'''


def test_one_line_when_it_fits(tmp_path):
    out = _migrate(tmp_path, HEAD + '        T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)\n',
                   "[tool.ruff]\nline-length = 200\n")
    assert out.endswith('        T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation("float16"), S.data, tx * 8, 8, 2), '
                        'T.tvm_access_ptr(T.type_annotation("float16"), A.data, tx * 8, 8, 1), 16)\n')


def test_split_one_argument_per_line_within_the_configured_length(tmp_path):
    src = HEAD + '        T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)\n'
    out = _migrate(tmp_path, src, "[tool.black]\nline-length = 100\n")
    assert out.endswith(
        '        T.ptx_cp_async(\n'
        '            T.tvm_access_ptr(T.type_annotation("float16"), S.data, tx * 8, 8, 2),\n'
        '            T.tvm_access_ptr(T.type_annotation("float16"), A.data, tx * 8, 8, 1),\n'
        '            16,\n'
        '        )\n')
    # ruff's setting wins over black's in the same file; nothing configured: 88
    out = _migrate(tmp_path, src, "[tool.black]\nline-length = 60\n[tool.ruff]\nline-length = 200\n")
    assert out.count("\n") == src.count("\n")
    (tmp_path / "pyproject.toml").unlink()
    out = _migrate(tmp_path, src)
    assert max(len(line) for line in out.splitlines()) <= 88


def test_the_calls_own_layout_is_kept(tmp_path):
    """Two-space continuation, no trailing comma, ``)`` after the last argument: kept."""
    src = HEAD + ('        T.ptx_cp_async(\n'
                  '          "float16",\n'
                  '          S.data, tx * 8,\n'
                  '          A.data, tx * 8,\n'
                  '          16)\n')
    out = _migrate(tmp_path, src)
    assert out.endswith(
        '        T.ptx_cp_async(\n'
        '          T.tvm_access_ptr(T.type_annotation("float16"), S.data, tx * 8, 8, 2),\n'
        '          T.tvm_access_ptr(T.type_annotation("float16"), A.data, tx * 8, 8, 1),\n'
        '          16)\n')


def test_aligned_arguments_stay_aligned(tmp_path):
    src = HEAD + ('        T.ptx_cp_async("float16", S.data, tx * 8,\n'
                  '                       A.data, tx * 8, 16)\n')
    out = _migrate(tmp_path, src, "[tool.ruff]\nline-length = 100\n")
    pad = " " * len("        T.ptx_cp_async(")
    assert out.endswith(
        '        T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation("float16"), S.data, tx * 8, 8, 2),\n'
        f'{pad}T.tvm_access_ptr(T.type_annotation("float16"), A.data, tx * 8, 8, 1),\n'
        f'{pad}16)\n')


def test_comments_stay_and_a_moved_argument_keeps_its_shape(tmp_path):
    src = HEAD + ('        T.ptx_cp_async(\n'
                  '            "float16",  # the copy\'s type\n'
                  '            S.data,  # destination\n'
                  '            tx * 8,\n'
                  '            # the source\n'
                  '            A.data,\n'
                  '            (bx * 8  # base\n'
                  '             + tx),\n'
                  '            16,  # bytes\n'
                  '        )\n')
    out = _migrate(tmp_path, src)
    assert out.endswith(
        '        T.ptx_cp_async(\n'
        '            # the copy\'s type\n'
        '            T.tvm_access_ptr(\n'
        '                T.type_annotation("float16"),\n'
        '                S.data,  # destination\n'
        '                tx * 8,\n'
        '                8,\n'
        '                2,\n'
        '            ),\n'
        '            # the source\n'
        '            T.tvm_access_ptr(\n'
        '                T.type_annotation("float16"),\n'
        '                A.data,\n'
        '                (bx * 8  # base\n'
        '                 + tx),\n'
        '                8,\n'
        '                1,\n'
        '            ),\n'
        '            16,  # bytes\n'
        '        )\n')


def test_line_length_is_part_of_the_results_cache_key(tmp_path):
    src = HEAD + '        T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)\n'
    cache = tmp_path / "cache"
    outs = []
    for width in (200, 88):
        (tmp_path / "pyproject.toml").write_text(f"[tool.ruff]\nline-length = {width}\n")
        (tmp_path / "k.py").write_text(src)
        run_cli("--target", "0.1.8", "-j", "1", "--cache-dir", str(cache), "k.py", cwd=tmp_path)
        outs.append((tmp_path / "k.py").read_text())
    assert outs[0].count("\n") == src.count("\n")
    assert outs[1].count("\n") > src.count("\n")


def test_comments_keep_their_order_when_the_dtype_keyword_goes(tmp_path):
    """A comment on a line of its own before the dropped `dtype=` and the one after it stay in that order
    (the second one used to be hung on the argument before the first)."""
    src = HEAD + ('        T.ptx_cp_async(S.data, tx * 8, A.data, tx * 8, 16,\n'
                  '            # before the keyword\n'
                  '            dtype="float16",  # after the keyword\n'
                  '        )\n')
    out = _migrate(tmp_path, src)
    assert out.endswith(
        '            16,\n'
        '            # before the keyword\n'
        '            # after the keyword\n'
        '        )\n'), out
