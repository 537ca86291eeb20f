"""What the reports say after a write, and what they carry for CI: github, sarif, markdown."""
import json
import textwrap

from conftest import run_cli
from test_cli import SARIF_SCHEMA, write

# A multi-line legacy call with a safe fix (its rewrite, one argument per line, is three lines shorter)
# and, below it, an unsafe one that write mode leaves: after the write it stands on line 19, not 22.
SAFE_THEN_UNSAFE = textwrap.dedent('''\
    import tilelang.language as T


    @T.prim_func
    def main(A: T.Tensor((256,), "float16"), B: T.Tensor((256,), "float16")):
        with T.Kernel(1, threads=32) as bx:
            S = T.alloc_shared((256,), "float16")
            tx = T.get_thread_binding()
            T.ptx_cp_async(
                "float16",
                S.data,
                tx * 8,
                A.data,
                tx * 8,
                16,
            )
            T.ptx_commit_group()


    @T.macro
    def load(S, A, off):
        T.ptx_cp_async("float32", S.data, off, A.data, off, 16)
    ''')
UNSAFE_CALL = 'T.ptx_cp_async("float32", S.data, off, A.data, off, 16)'


def _at(text: str, line: int, col: int, end_line: int, end_col: int) -> str:
    lines = text.splitlines(True)
    if line == end_line:
        return lines[line - 1][col - 1:end_col - 1]
    return lines[line - 1][col - 1:] + "".join(lines[line:end_line - 1]) + lines[end_line - 1][:end_col - 1]


def test_write_mode_github_lists_only_what_remains_where_it_now_is(tmp_path):
    f = write(tmp_path / "k.py", SAFE_THEN_UNSAFE)
    before = run_cli("--check", "--format", "github", "k.py", cwd=tmp_path)
    assert [ln.split(",")[1] for ln in before.stdout.splitlines()] == ["line=9", "line=22"]
    r = run_cli("--format", "github", "k.py", cwd=tmp_path)
    assert r.returncode == 1, r.stderr  # the unsafe site remains
    assert f.read_text() != SAFE_THEN_UNSAFE
    lines = r.stdout.splitlines()
    assert len(lines) == 1, lines  # the rewritten site is gone from the report
    assert lines[0].startswith("::warning file=k.py,line=19,col=5,endLine=19,endColumn=60,title=CPA001::")
    assert f.read_text().splitlines()[18].strip() == UNSAFE_CALL
    # a second run finds what the first one reported, at the same place
    again = run_cli("--check", "--format", "github", "k.py", cwd=tmp_path)
    assert again.stdout.splitlines()[0].split("::")[1] == lines[0].split("::")[1]


def test_write_mode_sarif_has_no_results_or_fixes_for_rewritten_text(tmp_path):
    import jsonschema

    f = write(tmp_path / "k.py", SAFE_THEN_UNSAFE)
    r = run_cli("--format", "sarif", "k.py", cwd=tmp_path)
    sarif = json.loads(r.stdout)
    jsonschema.validate(sarif, SARIF_SCHEMA())
    results = sarif["runs"][0]["results"]
    assert [x["properties"]["status"] for x in results] == ["unsafe"]
    region = results[0]["locations"][0]["physicalLocation"]["region"]
    new = f.read_text()
    assert _at(new, region["startLine"], region["startColumn"], region["endLine"], region["endColumn"]) \
        == UNSAFE_CALL
    deleted = results[0]["fixes"][0]["artifactChanges"][0]["replacements"][0]["deletedRegion"]
    assert _at(new, deleted["startLine"], deleted["startColumn"], deleted["endLine"], deleted["endColumn"]) \
        == UNSAFE_CALL


def test_write_mode_json_ledger_keeps_rewritten_sites_as_read(tmp_path):
    f = write(tmp_path / "k.py", SAFE_THEN_UNSAFE)
    check = json.loads(run_cli("--check", "--format", "json", "k.py", cwd=tmp_path).stdout)
    rep = json.loads(run_cli("--format", "json", "k.py", cwd=tmp_path).stdout)
    assert f.read_text() != SAFE_THEN_UNSAFE
    assert [(x["status"], x["line"]) for x in rep["findings"]] == [("rewritten", 9), ("unsafe", 22)]
    key = lambda x: (x["line"], x["column"], x["end_line"], x["end_column"], x["code"])  # noqa: E731
    assert list(map(key, rep["findings"])) == list(map(key, check["findings"])), "the ledger is --check's"
    assert rep["findings"][0]["fix"]["applied"] is True
