"""CI habits, third round (issue 27): -v says why every path was skipped; line-length, style and the target
resolved per file; a configuration mistake met during a walk leaves the tree unwritten."""
import json
import os
import shutil
import subprocess

import pytest

from conftest import run_cli
from test_cli import LEGACY, write

NOT_NAMED = "does not name ptx_cp_async (nor a runtime helper or a suppression comment); not parsed"


def _git_env(tmp_path) -> dict:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "GIT_CONFIG_NOSYSTEM": "1"}


def _skips(stderr: str) -> dict:
    """-v's ``skipped PATH: WHY`` lines, as {PATH: WHY}."""
    out = {}
    for line in stderr.splitlines():
        if line.startswith("skipped "):
            path, _, why = line[len("skipped "):].partition(": ")
            assert path not in out, line
            out[path] = why
    return out


def _verbose_tree(root):
    """Every kind of path a run passes over, each with the reason -v must give."""
    write(root / "pkg" / "k.py", LEGACY)
    write(root / "pkg" / "plain.py", "x = 1\n")
    (root / "pkg" / "big.py").write_text(LEGACY + "#" + "x" * 3000 + "\n")
    (root / "pkg" / "nul.py").write_bytes(LEGACY.encode() + b"\x00\x00\n")
    (root / "pkg" / "latin.py").write_bytes(LEGACY.encode() + b"# caf\xe9\n")
    write(root / "pkg" / "ign.py", LEGACY)
    write(root / "pkg" / "gen" / "g.py", LEGACY)
    write(root / "env1" / "pyvenv.cfg", "home = /usr\n")
    write(root / "env1" / "lib.py", LEGACY)
    write(root / "pkg" / ".gitignore", "ign.py\n")
    write(root / "pyproject.toml", '[tool.cpasync-migrate]\nextend-exclude = ["pkg/gen"]\n')


@pytest.mark.parametrize("use_git", [False, True])
def test_verbose_says_why_every_skipped_path_was_skipped(tmp_path, use_git):
    if use_git and shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "t"
    _verbose_tree(root)
    env = _git_env(tmp_path)
    if use_git:
        subprocess.run(["git", "init", "-q", str(root)], check=True, env={**os.environ, **env})
    r = run_cli("--check", "-v", "--no-cache", "--max-file-size", "2000", "./pkg", "env1", cwd=root, env=env)
    assert r.returncode == 2, r.stderr
    skips = _skips(r.stderr)
    # the findings name the files as `pkg/x.py`: -v names them so too (never `./pkg/x.py`)
    assert any(line.startswith("pkg/k.py:") for line in r.stdout.splitlines()), r.stdout
    assert skips["pkg/plain.py"] == NOT_NAMED
    assert skips["pkg/big.py"].startswith(f"{len(LEGACY) + 3002} bytes, over the size limit of 2000 bytes")
    assert skips["pkg/big.py"].endswith("(CPA900)")
    assert skips["pkg/nul.py"] == "binary file (contains NUL bytes); not a source file (CPA900)"
    assert skips["pkg/latin.py"].startswith("cannot decode as utf-8 at byte ")
    assert skips["pkg/ign.py"].startswith("ignored by")
    assert skips["pkg/gen"] == "matches `gen` (extend-exclude)"
    assert "env1" not in skips, "a folder named on the command line is scanned, whatever it holds"
    assert "processed pkg/k.py" in r.stderr and "processed env1/lib.py" in r.stderr
    for path in ("pkg/big.py", "pkg/nul.py", "pkg/latin.py"):  # skipped, so not "processed"
        assert f"processed {path}" not in r.stderr
    assert not any(p.startswith("./") for p in skips), skips
    # from the root: the virtual environment is passed over with its reason
    r = run_cli("--check", "-v", "--no-cache", ".", cwd=root, env=env)
    skips = _skips(r.stderr)
    assert skips["env1"] == "a virtual environment (holds pyvenv.cfg); not scanned"
    assert skips["pkg/plain.py"] == NOT_NAMED
    assert "pkg/big.py" not in skips and "processed pkg/big.py" in r.stderr  # under the default limit


def test_verbose_names_a_named_file_that_is_not_parsed(tmp_path):
    write(tmp_path / "plain.py", "x = 1\n")
    (tmp_path / "nul.py").write_bytes(b"T.ptx_cp_async\x00\n")
    r = run_cli("--check", "-v", "--no-cache", "./plain.py", "nul.py", cwd=tmp_path)
    assert r.returncode == 2
    skips = _skips(r.stderr)
    assert skips == {"plain.py": NOT_NAMED, "nul.py": "binary file (contains NUL bytes); not a source file (CPA900)"}
    assert "nul.py:1:1: CPA900 binary file" in r.stdout  # still a file error
    r = run_cli("--check", "--no-cache", "./plain.py", cwd=tmp_path)
    assert "skipped" not in r.stderr, "only -v says so"


# ---------------------------------------------------------------- target, style and line-length per file

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
# the call of test_cli.LEGACY as each configuration below has it migrated (written by hand: docs/design.md's
# rules; 0.1.9 counts elements, 16 bytes of float16 are 8; 0.1.8 keeps the byte count)
NEW_0_1_9_ACCESS_PTR = ('        T.ptx_cp_async(\n'
                        '            T.access_ptr(S[tx * 8], "w", 8), T.access_ptr(A[tx * 8], "r", 8), 8\n'
                        '        )\n')
NEW_0_1_8_WIDE = ('        T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation("float16"), S.data, tx * 8, 8, 2), '
                  'T.tvm_access_ptr(T.type_annotation("float16"), A.data, tx * 8, 8, 1), 16)\n')
OLD_CALL = '        T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)\n'


@pytest.fixture
def two(tmp_path):
    """Two sub-packages, each with its own target, style and line length; a third file under the root's."""
    write(tmp_path / "pyproject.toml", '[tool.cpasync-migrate]\ntarget = "0.1.8"\n')
    write(tmp_path / "a" / "pyproject.toml", '[tool.cpasync-migrate]\ntarget = "0.1.9"\nstyle = "access_ptr"\n')
    write(tmp_path / "b" / "pyproject.toml", '[tool.cpasync-migrate]\ntarget = "0.1.8"\nline-length = 200\n')
    for rel in ("a/k.py", "b/k.py", "top.py"):
        write(tmp_path / rel, LEGACY)
    return tmp_path


def test_target_style_and_line_length_come_from_each_files_config_whatever_the_order(two):
    runs = {}
    for order in (("a", "b", "top.py"), ("top.py", "b", "a")):
        r = run_cli("--no-cache", *order, cwd=two)
        assert r.returncode == 0, r.stderr
        runs[order] = ({rel: (two / rel).read_text() for rel in ("a/k.py", "b/k.py", "top.py")}, r.stdout + r.stderr)
        for rel in ("a/k.py", "b/k.py", "top.py"):
            write(two / rel, LEGACY)
    (first, err1), (second, err2) = runs.values()
    assert first == second and err1 == err2
    assert first["a/k.py"] == LEGACY.replace(OLD_CALL, NEW_0_1_9_ACCESS_PTR)
    assert first["b/k.py"] == LEGACY.replace(OLD_CALL, NEW_0_1_8_WIDE)
    assert 'T.tvm_access_ptr(T.type_annotation("float16"), S.data, tx * 8, 8, 2),\n' in first["top.py"]
    assert ", 16,\n" not in first["top.py"] and "            16,\n" in first["top.py"]
    # the summary names the run's target and the files migrated to another one, and where that came from
    assert "target: 0.1.8 " in err1 and "; 1 file(s) to 0.1.9 (a/pyproject.toml)" in err1


def test_the_command_line_wins_over_every_files_config(two):
    r = run_cli("--check", "--format", "json", "--no-cache", "--target", "0.1.8", "--line-length", "200", "b", "a",
                cwd=two)
    assert r.returncode == 1, r.stderr
    rep = json.loads(r.stdout)
    assert rep["target"]["generation"] == "0.1.8" and "per_file" not in rep["target"]
    r = run_cli("--diff", "--no-cache", "--target", "0.1.8", "--line-length", "200", "b", "a", cwd=two)
    assert r.stdout.count("+" + NEW_0_1_8_WIDE) == 2, r.stdout
    r = run_cli("--diff", "--no-cache", "--config", 'style = "tvm_access_ptr"', "a", cwd=two)
    assert "T.tvm_access_ptr(T.type_annotation" in r.stdout and "T.access_ptr(" not in r.stdout
    assert "8,\n" in r.stdout and "16,\n" not in r.stdout  # still the file's own 0.1.9: element counts
    r = run_cli("--show-settings", "a/k.py", cwd=two)
    assert 'target = "0.1.9"' in r.stdout and 'style = "access_ptr"' in r.stdout
    r = run_cli("--show-settings", "b/k.py", cwd=two)
    assert 'target = "0.1.8"' in r.stdout and "line-length = 200" in r.stdout


def test_a_key_the_nearest_table_leaves_out_has_its_default_not_the_parents(two):
    """As ruff: the nearest table is the file's whole configuration (a root's target is not inherited)."""
    write(two / "pyproject.toml", '[tool.cpasync-migrate]\ntarget = "0.1.9"\n')
    write(two / "b" / "pyproject.toml", '[tool.cpasync-migrate]\nline-length = 200\n')
    r = run_cli("--diff", "--no-cache", "b", "top.py", cwd=two)
    assert r.returncode == 1
    assert "+" + NEW_0_1_8_WIDE in r.stdout  # b: no target of its own, the default (0.1.8 here)
    assert r.stdout.count("            8,\n") == 1  # top.py: the root's 0.1.9


def test_a_bad_target_in_a_sub_package_names_its_file(two):
    write(two / "b" / "pyproject.toml", '[tool.cpasync-migrate]\ntarget = "9.9"\n')
    r = run_cli("--check", "--no-cache", ".", cwd=two)
    assert r.returncode == 3
    assert f"{two / 'b' / 'pyproject.toml'}: [tool.cpasync-migrate] target = '9.9': " in r.stderr


def _set_tree(root, files: dict):
    for rel, ref in files.items():
        folder, _, stem = ref.rpartition("/")
        [src] = [n for n in os.listdir(os.path.join(FIXTURES, folder)) if n.startswith(stem + ".in.")]
        dest = root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(os.path.join(FIXTURES, folder, src), dest)


@pytest.mark.parametrize("files, args, split", [
    # a fork's Python definition and its caller (tests/fixtures/sets/cases.toml: definition_and_callers)
    ({"tilelang/language/tir/op.py": "sets/own/op", "testing/test_copy.py": "python/alias_t_positional"},
     ["--accept-partial-sets"], "testing"),
    # the C++ side of a whole fork (fork_exact_set_applied_by_default): builders and readers
    ({"tilelang/language/tir/op.py": "sets/own/op", "testing/test_copy.py": "python/alias_t_positional",
      "src/transform/inject_async.cc": "cpp/fork_inject", "src/target/codegen_demo.cc": "cpp/codegen_branches",
      "src/transform/merge_shared_memory_allocations.cc": "cpp/merge_rebase"}, [], "src/target"),
])
def test_a_change_set_spanning_two_targets_is_refused(tmp_path, files, args, split):
    tree = tmp_path / "tree"
    _set_tree(tree, files)
    before = {rel: (tree / rel).read_bytes() for rel in files}
    write(tree / "pyproject.toml", '[tool.cpasync-migrate]\ntarget = "0.1.8"\n')
    write(tree / split / "pyproject.toml", '[tool.cpasync-migrate]\ntarget = "0.1.9"\n')
    r = run_cli("--no-cache", *args, ".", cwd=tree)
    assert r.returncode == 1, r.stdout + r.stderr
    # nothing of the set is written (the printer's unreachable duplicate branch is no member: its safe
    # deletion is made all the same, as in cases.toml)
    for rel in files:
        if not rel.endswith("codegen_demo.cc"):
            assert (tree / rel).read_bytes() == before[rel], rel
    assert "migrated to different targets (0.1.8, 0.1.9)" in r.stdout + r.stderr
    r = run_cli("--check", "--format", "json", "--no-cache", *args, ".", cwd=tree)
    [cs] = json.loads(r.stdout)["sets"]
    assert cs["state"] == "held" and "different targets" in cs["why"]
    assert "same target" in cs["command"]
    assert {b["reason"] for b in cs["blockers"]} == {"its file is migrated to 0.1.8", "its file is migrated to 0.1.9"}
    assert {m["status"] for m in cs["members"]} <= {"held", "unsafe", "manual"}, cs["members"]
    assert any(m["path"].startswith(split + "/") for m in cs["members"])
    # one target for the whole set (the command line's): the set is applied as before
    r = run_cli("--no-cache", "--target", "0.1.8", *args, ".", cwd=tree)
    assert r.returncode == 0, r.stdout + r.stderr
    assert all((tree / rel).read_bytes() != before[rel] for rel in files)


# ---------------------------------------------------------------- a configuration mistake met during the walk


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_broken_config_met_during_the_walk_leaves_the_tree_unwritten(tmp_path, jobs):
    """Two files to migrate, the second under a sub-package whose configuration is broken.  The walk meets
    that configuration only after more than one batch of files (git's sorted list: a/ first), so a run that
    processed as it walked would have written a/0.py before it stopped."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    env = _git_env(tmp_path)
    tree = tmp_path / "tree"
    write(tree / "a" / "0.py", LEGACY)
    for i in range(140):  # more than a batch (runner.CHUNK) of files before the sub-package
        write(tree / "a" / f"plain_{i:03}.py", "x = 1\n")
    write(tree / "z" / "sub" / "k.py", LEGACY)
    write(tree / "z" / "sub" / "pyproject.toml", '[tool.cpasync-migrate]\nselect = ["CPA001"]\nignore = ["CPA999"]\n')
    subprocess.run(["git", "init", "-q", str(tree)], check=True, env={**os.environ, **env})
    r = run_cli("--no-cache", "-j", jobs, ".", cwd=tree, env=env)
    assert r.returncode == 3, r.stdout + r.stderr  # a configuration error: nothing was processed (docs/ci.md)
    assert (f"{tree / 'z' / 'sub' / 'pyproject.toml'}: [tool.cpasync-migrate] ignore = CPA999: no such code"
            in r.stderr)
    assert (tree / "a" / "0.py").read_text() == LEGACY, "nothing is written before the mistake is found"
    assert (tree / "z" / "sub" / "k.py").read_text() == LEGACY
    # a target the rules do not know, in the same place: the same
    write(tree / "z" / "sub" / "pyproject.toml", '[tool.cpasync-migrate]\ntarget = "9.9"\n')
    r = run_cli("--no-cache", "-j", jobs, ".", cwd=tree, env=env)
    assert r.returncode == 3 and "z/sub/pyproject.toml: [tool.cpasync-migrate] target = '9.9': " in r.stderr
    assert (tree / "a" / "0.py").read_text() == LEGACY
    # fixed: both are written
    write(tree / "z" / "sub" / "pyproject.toml", '[tool.cpasync-migrate]\ntarget = "0.1.8"\n')
    r = run_cli("--no-cache", "-j", jobs, ".", cwd=tree, env=env)
    assert r.returncode == 0, r.stderr
    assert (tree / "a" / "0.py").read_text() != LEGACY and (tree / "z" / "sub" / "k.py").read_text() != LEGACY


# ---------------------------------------------------------------- the verifier's messages name old and new in order

_CALL_0_1_8 = ('T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation("float16"), S.data, tx * 8, {dst}, 2), '
               'T.tvm_access_ptr(T.type_annotation("float16"), A.data, tx * 8, 8, 1), {nbytes})')
_OLD = 'T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)'


def _verdict(old: str, new: str) -> dict:
    from cpasync_migrate.rules import load_rules
    from cpasync_migrate.verify.verifier import verify_source

    [v] = verify_source(old, new, "k.py", rules=load_rules(), target="0.1.8")
    return v.to_dict()


def _failed(d: dict) -> dict:
    return {c["check"]: c["how"] for s in d.get("sites", ()) for c in s["checks"] if c["ok"] is False}


def test_the_verifiers_messages_state_old_then_new():
    """Each message that names both texts names the old (legacy) one first and says which is which: a pair
    whose extent is short of the copy, one whose byte counts differ, and kernels that differ elsewhere."""
    short = LEGACY.replace(_OLD, _CALL_0_1_8.format(dst=4, nbytes=16))
    d = _verdict(LEGACY, short)
    assert d["verdict"] == "mismatch"
    assert _failed(d)["dst extent"].startswith("the new call's 4 x sizeof(float16) >= the copy's 16 bytes")
    # old 16 bytes, new 8 (and an extent of 8 halves, which covers the new call's 8 bytes)
    fewer = LEGACY.replace(_OLD, _CALL_0_1_8.format(dst=8, nbytes=8))
    d = _verdict(LEGACY, fewer)
    assert d["verdict"] == "mismatch"
    assert _failed(d)["byte count"].startswith("old 16 vs new 8 bytes"), _failed(d)
    # the new text waits for one group fewer, and one with a parameter more
    waits = LEGACY.replace(_OLD, _CALL_0_1_8.format(dst=8, nbytes=16)).replace("T.ptx_wait_group(0)",
                                                                                "T.ptx_wait_group(1)")
    d = _verdict(LEGACY, waits)
    assert d["detail"]["structure_difference"].startswith("old wait_group(0) vs new wait_group(1) (old line 11, "
                                                          "new line 11)"), d["detail"]
    more = LEGACY.replace(_OLD, _CALL_0_1_8.format(dst=8, nbytes=16)).replace(
        'B: T.Tensor((256,), "float16")):', 'B: T.Tensor((256,), "float16"), C: T.Tensor((256,), "float16")):')
    d = _verdict(LEGACY, more)
    assert d["verdict"] == "mismatch" and "old 2 parameters vs new 3" in json.dumps(d), d


def test_the_json_report_lists_the_other_targets_and_stays_valid(two):
    import jsonschema

    r = run_cli("--check", "--format", "json", "--no-cache", "a", "b", "top.py", cwd=two)
    assert r.returncode == 1, r.stderr
    rep = json.loads(r.stdout)
    schema = json.loads(open(os.path.join(os.path.dirname(__file__), "..", "cpasync_migrate", "schemas",
                                          "report.schema.json")).read())
    jsonschema.validate(rep, schema)
    assert rep["target"]["generation"] == "0.1.8"
    assert rep["target"]["per_file"] == [{"generation": "0.1.9", "from": "a/pyproject.toml", "files": 1}]
