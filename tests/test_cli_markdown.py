"""The Markdown job summary: --format markdown, and what every run appends to $GITHUB_STEP_SUMMARY."""
import re

from conftest import FIXTURES, run_cli
from test_cli import LEGACY, MANUAL, UNSAFE, write

UNPARSABLE = 'import tilelang.language as T\nT.ptx_cp_async("float16", S.data, 0, A.data, 0, 16\n'
SUPPRESSED = LEGACY.replace("tx * 8, 16)\n", "tx * 8, 16)  # cpasync-migrate: ignore\n")


def _kernels(root):
    """One file per outcome: a safe fix, an unsafe one (two assumptions), a site left for a person, a file that
    does not parse, a suppressed site."""
    write(root / "a.py", LEGACY)
    write(root / "b.py", UNSAFE)
    write(root / "c.py", MANUAL)
    write(root / "d.py", UNPARSABLE)
    assert SUPPRESSED != LEGACY
    write(root / "e.py", SUPPRESSED)


def _fork(root):
    """A fork's own API definition (CPA006, safe) and a runtime helper (CPA007, manual): one held change set."""
    op = root / "tilelang" / "language" / "tir" / "op.py"
    op.parent.mkdir(parents=True)
    op.write_bytes((FIXTURES / "sets" / "own" / "op.in.py").read_bytes())
    write(root / "tilelang" / "contrib" / "cutedsl" / "cpasync.py",
          "def cp_async_gs(size, dst, dst_offset, src, src_offset):\n"
          "    return _copy(size, dst + src_offset, src + dst_offset)\n")  # offsets crossed: left for a person


def _section(text: str, title: str) -> list:
    """The lines of a ``### title (...)`` section, blank lines dropped."""
    m = re.search(rf"^### {re.escape(title)}[^\n]*\n(.*?)(?=^### |\Z)", text, re.M | re.S)
    assert m, f"no section {title!r} in:\n{text}"
    return [ln for ln in m.group(1).splitlines() if ln.strip()]


def _rows(text: str) -> dict:
    return {m.group(1): m.group(2) for m in re.finditer(r"^\| \**([^|*]+?)\** \| \**(\d+)\** \|$", text, re.M)}


def test_markdown_counts_sites_and_lists_what_remains(tmp_path):
    _kernels(tmp_path)
    r = run_cli("--check", "--format", "markdown", ".", cwd=tmp_path)
    assert r.returncode == 2, r.stderr  # the file that does not parse
    out = r.stdout
    assert out.startswith("## cpasync-migrate (check)\n")
    rows = _rows(out)
    assert {k: rows[k] for k in ("scanned", "with legacy sites", "to change", "with errors")} == {
        "scanned": "5", "with legacy sites": "5", "to change": "1", "with errors": "1"}
    assert {k: rows[k] for k in ("fixable", "held back by its change set", "left for a person",
                                 "unsafe fix, not applied (use --unsafe-fixes)", "suppressed",
                                 "in an unparsable file", "total")} == {
        "fixable": "1", "held back by its change set": "0", "left for a person": "1",
        "unsafe fix, not applied (use --unsafe-fixes)": "1", "suppressed": "1", "in an unparsable file": "1",
        "total": "5"}
    assert _section(out, "Left for a person") == [
        "- `c.py:5` CPA002 ptx\\_cp\\_async call with an argument layout the tool cannot read: "
        "it uses \\*args or \\*\\*kwargs"]
    [err] = _section(out, "Files with errors")
    assert err.startswith("- `d.py:2` cannot parse")
    checks = _section(out, "Unsafe assumptions to check")
    assert [c.split(":")[0] for c in checks] == ["- [ ] `b.py", "- [ ] `b.py"]
    assert all(c.startswith("- [ ] `b.py:6` CPA001 (not applied): no declaration of ") for c in checks)
    assert "### Change sets" not in out and "### Proof" not in out
    assert r.stderr == "", "markdown prints no text summary"


def test_markdown_lists_change_sets_and_their_members(tmp_path):
    _fork(tmp_path)
    r = run_cli("--check", "--format", "markdown", ".", cwd=tmp_path)
    assert r.returncode == 1
    sets = _section(r.stdout, "Change sets (1)")
    assert sets[0].startswith("- `tir.ptx_cp_async`: **held**, 2 member(s) (1 definition(s), 1 reader(s)): ")
    assert sets[1:3] == ["  - `tilelang/contrib/cutedsl/cpasync.py:1` CPA007 reader: manual",
                         "  - `tilelang/language/tir/op.py:10` CPA006 definition: held"]
    assert sets[3].startswith("  - to apply the rest: ")
    assert _rows(r.stdout)["held back by its change set"] == "1"


def test_markdown_caps_long_lists(tmp_path):
    body = "".join(f"    T.ptx_cp_async(*args{i})\n" for i in range(205))
    write(tmp_path / "many.py", "import tilelang.language as T\n\n\ndef copy(*a):\n" + body)
    r = run_cli("--check", "--format", "markdown", "many.py", cwd=tmp_path)
    left = _section(r.stdout, "Left for a person (205)")
    assert len(left) == 201
    assert left[0].startswith("- `many.py:5` CPA002 ") and left[199].startswith("- `many.py:204` CPA002 ")
    assert left[200] == "- and 5 more"


def test_markdown_has_the_proof_verdict_per_kernel_under_verify(tmp_path):
    write(tmp_path / "k.py", LEGACY)
    r = run_cli("--verify", "--device", "cpu", "--check", "--format", "markdown", "k.py", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    proof = _section(r.stdout, "Proof (1 kernel(s))")
    assert proof[:2] == ["| kernel | where | verdict | reason |", "| --- | --- | --- | --- |"]
    assert proof[2].startswith("| `main` | `k.py:5` | equivalent | 1 cp.async site(s) proven")


def test_github_step_summary_is_appended_in_any_format(tmp_path):
    _fork(tmp_path)
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n")
    env = {"GITHUB_STEP_SUMMARY": str(summary)}
    r = run_cli("--check", "--format", "github", ".", cwd=tmp_path, env=env)
    assert r.returncode == 1
    assert all(ln.startswith("::") for ln in r.stdout.splitlines()), "stdout stays GitHub's commands"
    text = summary.read_text()
    assert text.startswith("# earlier step\n## cpasync-migrate (check)\n")
    alone = run_cli("--check", "--format", "markdown", ".", cwd=tmp_path).stdout
    assert text == "# earlier step\n" + alone, "the file gets what --format markdown prints"
    # a write run appends its own summary after it; the fix it applies is counted as rewritten
    r = run_cli("--unsafe-fixes", "--format", "json", ".", cwd=tmp_path, env=env)
    assert r.returncode == 1, r.stderr
    parts = summary.read_text().split("## cpasync-migrate (")
    assert len(parts) == 3 and parts[2].startswith("write)\n")
    rows = _rows(parts[2])
    assert (rows["rewritten"], rows["left for a person"], rows["written"]) == ("1", "1", "1")
    assert "- `tir.ptx_cp_async`: **partial**, " in parts[2]


def test_github_step_summary_that_cannot_be_written_warns_and_keeps_the_exit_code(tmp_path):
    write(tmp_path / "k.py", LEGACY)
    r = run_cli("--check", "k.py", cwd=tmp_path, env={"GITHUB_STEP_SUMMARY": str(tmp_path)})  # a folder
    assert r.returncode == 1
    assert "cannot append the job summary to" in r.stderr
    assert "k.py:9:9: CPA001" in r.stdout
