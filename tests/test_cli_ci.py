"""CI ergonomics: configuration, --since, -j, --quiet/--verbose, --verify through the CLI."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, run_cli, run_inproc
from test_cli import LEGACY, MANUAL, UNSAFE, write


def test_config_in_pyproject_and_cli_override(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.cpasync-migrate]\ntarget = "0.1.9"\nexclude = ["skip"]\n'
          'unsafe-fixes = true\n')
    write(tmp_path / "src" / "u.py", UNSAFE)
    write(tmp_path / "skip" / "k.py", LEGACY)
    r = run_cli("--format", "json", "src", cwd=tmp_path)
    rep = json.loads(r.stdout)
    assert rep["target"]["generation"] == "0.1.9" and "pyproject.toml" in rep["target"]["reason"]
    assert rep["summary"]["sites"]["rewritten"] == 1, "unsafe-fixes = true from the config"
    assert 'T.type_annotation("float32"), S.data, off, 4, 2),' in (tmp_path / "src" / "u.py").read_text()
    # command line wins; --isolated ignores the file
    r = run_cli("--check", "--format", "json", "--target", "0.1.8", ".", cwd=tmp_path)
    rep = json.loads(r.stdout)
    assert rep["target"]["generation"] == "0.1.8"
    assert {f["path"] for f in rep["findings"]} == set(), "skip/ is excluded by the config"
    r = run_cli("--check", "--format", "json", "--isolated", ".", cwd=tmp_path)
    assert {f["path"] for f in json.loads(r.stdout)["findings"]} == {"skip/k.py"}


def test_bad_config_is_a_usage_error(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.cpasync-migrate]\ntargett = "0.1.9"\n')
    write(tmp_path / "k.py", LEGACY)
    r = run_cli("--check", "k.py", cwd=tmp_path)
    assert r.returncode == 3 and "unknown key 'targett'" in r.stderr


def test_explicit_config_file(tmp_path):
    write(tmp_path / "conf" / "pyproject.toml", '[tool.cpasync-migrate]\ntarget = "latest"\n')
    write(tmp_path / "k.py", LEGACY)
    r = run_cli("--check", "--format", "json", "--config", "conf/pyproject.toml", "k.py", cwd=tmp_path)
    assert json.loads(r.stdout)["target"]["generation"] == "0.1.9"


def test_since_only_checks_changed_files(tmp_path):
    git = lambda *a: subprocess.run(["git", *a], cwd=tmp_path, check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    git("config", "user.email", "ci@example.invalid")
    git("config", "user.name", "ci")
    write(tmp_path / "old.py", LEGACY)
    git("add", ".")
    git("commit", "-qm", "base")
    write(tmp_path / "new.py", LEGACY)
    write(tmp_path / "touched.py", "x = 1\n")
    git("add", "touched.py")
    git("commit", "-qm", "second")
    (tmp_path / "touched.py").write_text(LEGACY)
    r = run_cli("--check", "--format", "json", "--since", "HEAD~1", ".", cwd=tmp_path)
    assert {f["path"] for f in json.loads(r.stdout)["findings"]} == {"new.py", "touched.py"}
    r = run_cli("--check", "--since", "no-such-rev", ".", cwd=tmp_path)
    assert r.returncode == 3


def test_parallel_output_is_the_same_as_serial(tmp_path):
    for case in sorted((FIXTURES / "python").glob("*.in.py"))[:16]:
        shutil.copyfile(case, tmp_path / case.name.replace(".in.py", ".py"))
    a = run_cli("--check", "--format", "json", "-j", "1", ".", cwd=tmp_path)
    b = run_cli("--check", "--format", "json", "-j", "2", ".", cwd=tmp_path)
    assert a.returncode == b.returncode
    assert a.stdout == b.stdout


def test_quiet_and_verbose(tmp_path):
    write(tmp_path / "k.py", LEGACY)
    q = run_cli("--check", "--quiet", "k.py", cwd=tmp_path)
    assert q.stderr == "" and q.stdout.startswith("k.py:9:9: CPA001")
    v = run_cli("--check", "--verbose", "k.py", cwd=tmp_path)
    assert "processed k.py" in v.stderr


def test_no_progress_bar_when_not_a_terminal(tmp_path):
    for i in range(10):
        write(tmp_path / f"k{i}.py", LEGACY)
    r = run_cli("--diff", ".", cwd=tmp_path)
    assert "\x1b[" not in r.stderr and "cpasync-migrate ━" not in r.stderr


def test_progress_bar_on_a_terminal(tmp_path):
    """stderr a terminal (a pseudo-terminal here): the bar counts the files parsed; stdout stays clean."""
    import pty
    import sys

    for i in range(10):
        write(tmp_path / f"k{i}.py", LEGACY)
    leader, follower = pty.openpty()
    env = dict(os.environ, NO_COLOR="1", COLUMNS="100", TERM="xterm")
    p = subprocess.Popen([sys.executable, "-m", "cpasync_migrate", "--check", "-j", "2", "."], cwd=tmp_path,
                         stdout=subprocess.PIPE, stderr=follower, env=env)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        seen += chunk
    out = p.stdout.read().decode()
    assert p.wait() == 1
    os.close(leader)
    text = seen.decode(errors="replace")
    assert "cpasync-migrate" in text and "/10" in text, text[-500:]
    assert out.count("CPA001") == 10 and "\x1b[" not in out


def test_pre_commit_hooks_file():
    import yaml

    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    ids = {h["id"]: h for h in hooks}
    assert ids["cpasync-migrate"]["entry"] == "cpasync-migrate --force-exclude --quiet"
    assert ids["cpasync-migrate-check"]["entry"] == "cpasync-migrate --check --force-exclude"


# ------------------------------------------------------------------ --verify through the CLI


@pytest.mark.slow  # runs the CLI once per format / kills a worker
def test_verify_reports_verdicts_in_every_format(tmp_path):
    import jsonschema

    write(tmp_path / "k.py", LEGACY)
    r = run_cli("--verify", "--device", "cpu", "--diff", "k.py", cwd=tmp_path)
    assert "main: equivalent" in r.stderr
    r = run_cli("--verify", "--device", "cpu", "--check", "--format", "json", "k.py", cwd=tmp_path)
    rep = json.loads(r.stdout)
    jsonschema.validate(rep, json.loads((ROOT / "cpasync_migrate/schemas/report.schema.json").read_text()))
    assert [(v["kernel"], v["verdict"]) for v in rep["verdicts"]] == [("main", "equivalent")]
    r = run_cli("--verify", "--device", "cpu", "--check", "--format", "sarif", "k.py", cwd=tmp_path)
    assert json.loads(r.stdout)["runs"][0]["properties"]["verdicts"][0]["verdict"] == "equivalent"
    r = run_cli("--verify", "--device", "cpu", "k.py", cwd=tmp_path)
    assert r.returncode == 0 and "main: equivalent" in r.stdout


def test_write_mode_refuses_a_file_whose_kernel_mismatches(tmp_path, monkeypatch):
    """A rewriter bug (here: a dropped offset, injected on purpose) is caught by --verify before writing."""
    from cpasync_migrate import python as pyfe
    from cpasync_migrate.findings import Edit

    f = write(tmp_path / "k.py", LEGACY)
    real = pyfe.analyze

    def buggy(text, path, options, **kw):  # (kw: the engine's ``fixes``, python.fast_fixes)
        a = real(text, path, options, **kw)
        for fd in a.findings:
            for i, e in enumerate(fd.fix.edits if fd.fix else []):
                if "A.data, tx * 8, 8, 1)" in e.replacement:  # the source access pointer: drop its offset
                    fd.fix.edits[i] = Edit(e.start, e.end, e.replacement.replace("A.data, tx * 8, 8, 1)",
                                                                                 "A.data, 0, 8, 1)"))
        return a

    monkeypatch.setattr(pyfe, "analyze", buggy)
    r = run_inproc("--verify", "--device", "cpu", "--format", "json", "k.py", cwd=tmp_path)
    rep = json.loads(r.stdout)
    assert rep["verdicts"][0]["verdict"] == "mismatch"
    assert r.returncode == 2
    assert f.read_text() == LEGACY, "a mismatching file is never written"


def test_require_proof_refuses_inconclusive(tmp_path):
    text = LEGACY.replace("        T.ptx_commit_group()\n",
                          "        T.ptx_commit_group()\n        T.some_unknown_intrinsic()\n")
    assert text != LEGACY
    f = write(tmp_path / "k.py", text)
    r = run_cli("--verify", "--device", "cpu", "--require-proof", "k.py", cwd=tmp_path)
    assert "inconclusive" in r.stdout
    assert r.returncode == 2 and f.read_text() == text
    r = run_cli("--verify", "--device", "cpu", "k.py", cwd=tmp_path)
    assert r.returncode == 0 and f.read_text() != text


def test_default_target_follows_installed_tilelang(tmp_path):
    """The installed TileLang is found from its metadata folder, without importing it."""
    site = tmp_path / "site"
    write(site / "tilelang-0.1.13.dist-info" / "METADATA", "Name: tilelang\nVersion: 0.1.13\n")
    write(site / "tilelang" / "__init__.py", "raise SystemExit('tilelang must not be imported')\n")
    write(tmp_path / "k.py", LEGACY)
    r = run_cli("--check", "--format", "json", "k.py", cwd=tmp_path, env={"PYTHONPATH": str(site)})
    t = json.loads(r.stdout)["target"]
    assert (t["generation"], t["reason"]) == ("0.1.9", "installed tilelang 0.1.13")
    write(site / "tilelang-0.1.13.dist-info" / "METADATA", "")
    (site / "tilelang-0.1.13.dist-info").rename(site / "tilelang-0.1.7.post1.dist-info")
    r = run_cli("--check", "--format", "json", "k.py", cwd=tmp_path, env={"PYTHONPATH": str(site)})
    t = json.loads(r.stdout)["target"]
    assert t["generation"] == "0.1.8" and "still has the legacy API" in t["reason"]
    r = run_cli("--check", "--format", "json", "k.py", cwd=tmp_path)
    assert json.loads(r.stdout)["target"]["reason"].startswith("no TileLang installed")


@pytest.mark.parametrize("use_mmap", [True, False])
def test_prefilter_finds_the_name_across_read_blocks(tmp_path, monkeypatch, use_mmap):
    from cpasync_migrate import prefilter

    monkeypatch.setattr(prefilter, "_BLOCK", 8)
    monkeypatch.setattr(prefilter, "_MMAP", use_mmap)
    f = tmp_path / "k.py"
    for pad in range(40):
        f.write_text("x" * pad + "ptx_cp_async(")
        assert prefilter.worth_parsing(str(f), False), pad
    for size in range(30):
        f.write_text("x" * size + "ptx_cp_asyn" + "y" * size)
        assert not prefilter.worth_parsing(str(f), False)
    assert prefilter.worth_parsing(str(tmp_path / "missing.py"), False), "unreadable files go on to the reader"


@pytest.mark.parametrize("use_mmap", [True, False])
def test_prefilter_on_files_larger_than_a_block(tmp_path, monkeypatch, use_mmap):
    from cpasync_migrate import prefilter

    monkeypatch.setattr(prefilter, "_MMAP", use_mmap)
    block = prefilter._BLOCK
    f = tmp_path / "big.h"
    name = b"ptx_cp_async"
    for at in (block - 5, block, 3 * block - 1, 3 * block + 100):
        f.write_bytes(b"x" * at + name + b"y" * 50)
        assert prefilter.worth_parsing(str(f), False), at
    f.write_bytes(b"x" * (3 * block) + name[:-1])
    assert not prefilter.worth_parsing(str(f), False)


def _pool_tree(tmp_path: Path) -> Path:
    """Fixture inputs (every C++ one, every third Python one) plus files without the name, in one tree."""
    tree = tmp_path / "tree"
    for lang, step in (("python", 3), ("cpp", 1)):
        for f in sorted((FIXTURES / lang).glob("*.in.*"))[::step]:
            dest = tree / lang / f.name.replace(".in.", ".")
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(f.read_bytes())
    for i in range(300):  # enough files for several prefilter chunks
        write(tree / "other" / f"m{i % 7}" / f"f{i}.py", f"x = {i}\n")
    return tree


def _summary(outcomes):
    return [(o.path, o.error, [(f.line, f.column, f.code, f.status, f.message) for f in o.findings])
            for o in outcomes]


@pytest.mark.slow  # an equality run of the three schedulers
def test_serial_forked_and_executor_runs_agree(tmp_path, monkeypatch):
    from cpasync_migrate import runner
    from cpasync_migrate.engine import RunSettings

    monkeypatch.setattr(runner, "CHUNK", 16)
    tree = _pool_tree(tmp_path)
    settings = RunSettings(mode="check")
    serial, n1 = runner.run_files([str(tree)], settings, jobs=1)
    forked, n2 = runner.run_files([str(tree)], settings, jobs=3, pool="fork")
    pooled, n3 = runner.run_files([str(tree)], settings, jobs=2, pool="executor")
    assert n1 == n2 == n3 > 300
    assert len(serial) > 20 and any(o.findings for o in serial)
    assert _summary(serial) == _summary(forked) == _summary(pooled)


@pytest.mark.slow  # runs the CLI once per format / kills a worker
def test_a_worker_that_dies_loses_no_other_file(tmp_path, monkeypatch):
    from cpasync_migrate import runner
    from cpasync_migrate.engine import RunSettings, process_file

    tree = _pool_tree(tmp_path)
    settings = RunSettings(mode="check")
    expected, _ = runner.run_files([str(tree)], settings, jobs=1)
    victim = next(o.path for o in expected if o.path.endswith(".py") and o.findings)

    def process(pe):
        if pe[0] == victim:
            os._exit(3)  # the worker process ends in the middle of a file
        return process_file(pe[0], runner._SETTINGS, pe[1])

    monkeypatch.setattr(runner, "_process", process)
    got, _ = runner.run_files([str(tree)], settings, jobs=2, pool="fork")
    lost = [o for o in got if o.path == victim]
    assert len(lost) == 1 and "worker process ended" in lost[0].error
    assert [f.code for f in lost[0].findings] == ["CPA900"]
    assert _summary([o for o in got if o.path != victim]) == _summary([o for o in expected if o.path != victim])


def test_workers_start_as_work_appears(tmp_path, monkeypatch):
    from cpasync_migrate import runner
    from cpasync_migrate.engine import RunSettings

    made = []

    class Pool(runner._ForkPool):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            made.append(self)

    monkeypatch.setattr(runner, "_ForkPool", Pool)
    monkeypatch.setattr(runner, "CHUNK", 16)
    settings = RunSettings(mode="check")
    f = write(tmp_path / "one" / "k.py", LEGACY)
    outs, _ = runner.run_files([str(f)], settings, jobs=4, pool="fork")
    assert made == [] and [o.path for o in outs] == [str(f)], "one named file: no worker"
    outs, _ = runner.run_files([str(tmp_path / "one")], settings, jobs=4, pool="fork")
    assert made[-1].started == 1 and [o.path for o in outs] == [str(f)], "a folder with one file: one worker"
    (tmp_path / "empty").mkdir()
    assert runner.run_files([str(tmp_path / "empty")], settings, jobs=4, pool="fork") == ([], 0)
    assert made[-1].started == 0
    for i in range(200):
        write(tmp_path / "many" / f"f{i}.py", LEGACY if i % 50 == 0 else f"x = {i}\n")
    outs, n = runner.run_files([str(tmp_path / "many")], settings, jobs=4, pool="fork")
    assert made[-1].started == 4 and n == 200 and len(outs) == 4
    for i in range(12):  # fewer files than one prefilter chunk, every one to parse: all workers still start
        write(tmp_path / "few" / f"k{i}.py", LEGACY)
    monkeypatch.setattr(runner, "CHUNK", 128)
    outs, n = runner.run_files([str(tmp_path / "few")], settings, jobs=4, pool="fork")
    assert made[-1].started == 4 and n == 12 and len(outs) == 12


def test_check_outcomes_keep_findings_not_texts(tmp_path):
    from cpasync_migrate import runner
    from cpasync_migrate.engine import RunSettings

    write(tmp_path / "k.py", LEGACY)
    outs, _ = runner.run_files([str(tmp_path)], RunSettings(mode="check", keep_texts=False), jobs=1)
    assert outs[0].old_text is None and outs[0].new_text is None
    assert outs[0].changed and outs[0].findings
    counts = [json.loads(run_cli(mode, "--format", "json", ".", cwd=tmp_path).stdout)["summary"]["files_changed"]
              for mode in ("--check", "--diff")]
    assert counts == [1, 1]


def test_a_check_that_rewrites_nothing_keeps_libcst_and_rich_off_its_path(tmp_path):
    """Start-up counts: neither the main process nor a worker imports libcst or rich unless a fix needs it."""
    import sys

    (tmp_path / "cpp").mkdir()
    for f in sorted((FIXTURES / "cpp").glob("*.in.*"))[:3]:
        (tmp_path / "cpp" / f.name.replace(".in.", ".")).write_bytes(f.read_bytes())
    write(tmp_path / "tvm_only.py", "from tvm.tir import op\nop.ptx_cp_async('float16', a, 0, b, 0, 16)\n")
    write(tmp_path / "comment.py", "# ptx_cp_async is deprecated upstream\nx = 1\n")
    write(tmp_path / "plain.py", "y = 2\n")

    def imported(*extra, env=None):
        r = subprocess.run([sys.executable, "-X", "importtime", "-m", "cpasync_migrate", "--check", "--no-cache",
                            "-j", "2", *extra, "."], cwd=tmp_path, capture_output=True, text=True,
                           env=dict(os.environ, **(env or {})))
        assert r.returncode == 1, r.stderr[-500:]
        return {ln.rsplit("|", 1)[-1].strip() for ln in r.stderr.splitlines() if ln.startswith("import time:")}

    mods = imported()
    assert "tree_sitter" in mods  # the C++ files were parsed (by a worker)
    assert not {m for m in mods if m.split(".")[0] in ("libcst", "rich")}
    # a TileLang legacy call: --check decides its fix from the ast (python/fast.py: DECIDE_FIXES); off, libcst
    write(tmp_path / "kernel.py", LEGACY)
    assert not {m for m in imported() if m.split(".")[0] == "libcst"}
    assert "libcst" in imported(env={"CPASYNC_MIGRATE_FAST_FIXES": "0"})


def test_gpu_probe_leaves_cuda_out_of_this_process(monkeypatch):
    """--device auto asks a child process: CUDA initialised here would not survive the fork of the workers."""
    import sys

    from cpasync_migrate import cli

    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    seen = []
    real_run = subprocess.run

    def spy(argv, *a, **k):
        seen.append(argv)
        return real_run([sys.executable, "-c", "raise SystemExit(1)"], *a, **k)

    monkeypatch.setattr(subprocess, "run", spy)
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "cupy" else None)
    assert cli._gpu_available() is False
    assert seen and seen[0][-1] == cli._GPU_PROBE and "cupy" not in sys.modules


def test_readme_github_actions_example(monkeypatch):
    """The README's workflow: valid YAML, every tool command parses, and the cache survives a failing lint."""
    import re
    import shlex

    import yaml

    from cpasync_migrate import cache
    from cpasync_migrate.cli import build_parser

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## In CI", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    steps = yaml.safe_load(block)["jobs"]["cpasync"]["steps"]
    uses = [s.get("uses", "") for s in steps]
    commands = [s["run"] for s in steps if "cpasync-migrate --" in s.get("run", "")]
    assert len(commands) == 1, "one run gives every report"
    argv = shlex.split(commands[0])
    assert argv[0] == "cpasync-migrate"
    args = build_parser().parse_args(argv[1:])
    assert args.check and args.paths == ["."] and args.format == "github"
    [(fmt, sarif)] = args.report
    upload = next(s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif"))
    assert fmt == "sarif" and upload["with"]["sarif_file"] == sarif and upload.get("if") == "always()"
    installs = [s["run"] for s in steps if s.get("run", "").startswith("pip install")]
    assert len(installs) == 1
    target = shlex.split(installs[0])[2]
    assert re.fullmatch(r"git\+https://\S+@[0-9a-f]{40}", target), "installed from the repository at a pinned commit"
    assert "pip install cpasync-migrate" not in readme, "the name is not ours on the package index"
    restore = uses.index("actions/cache/restore@v4")
    save = uses.index("actions/cache/save@v4")
    lint = next(i for i, s in enumerate(steps) if s.get("run", "").startswith("cpasync-migrate --check --format github"))
    assert restore < lint < save
    assert steps[save].get("if") == "always()", "actions/cache saves only after success; the lint fails"
    monkeypatch.delenv(cache.ENV, raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", "/home/runner")  # a GitHub-hosted runner: the tool's default cache folder
    path = steps[restore]["with"]["path"]
    assert path == steps[save]["with"]["path"] and path.replace("~", "/home/runner", 1) == cache.default_dir()
    assert steps[restore]["with"]["key"] == steps[save]["with"]["key"]


def test_since_filter_agrees_with_resolving_every_path(tmp_path, monkeypatch):
    """--since compares real paths; the filter resolves only links and named files, with the same answers."""
    import os

    from cpasync_migrate import runner

    for name in ("src/a.py", "src/b.py", "src/deep/c.cc", "other/d.py", "other/e.h", "top.py"):
        write(tmp_path / name, "x = 1\n")
    os.symlink(tmp_path / "other" / "d.py", tmp_path / "src" / "d_link.py")  # a linked file
    os.symlink(tmp_path / "other", tmp_path / "src" / "other_dir")  # a linked folder (the walk does not enter it)
    os.symlink(tmp_path / "src", tmp_path / "src_link")  # a folder argument reached through a link
    changed = {os.path.realpath(tmp_path / n) for n in ("src/a.py", "src/deep/c.cc", "other/d.py", "other/e.h")}
    monkeypatch.chdir(tmp_path)
    argsets = [["."], ["src"], ["src/"], ["src_link"], [".", "src/other_dir"], ["src_link", "other"],
               [str(tmp_path)], ["src/a.py", "top.py", "src_link/b.py"], ["./src", "src/deep"],
               ["src", "src/other_dir"]]
    for args in argsets:
        everything = list(runner._discovered(args, (), True, None))
        expected = [pe for pe in everything if os.path.realpath(pe[0]) in changed]
        got = list(runner._discovered(args, (), True, changed))
        assert got == expected, args
        assert expected, args  # every set of arguments reaches a changed file
    assert ("src/d_link.py", False) in list(runner._discovered(["src"], (), True, changed))


def test_default_jobs_respect_a_container_cpu_quota(tmp_path):
    """-j defaults to the CPUs the process may use: a cgroup quota caps the affinity mask."""
    import os

    from cpasync_migrate import cpus

    cores = len(os.sched_getaffinity(0))

    def case(proc: str, files: dict):
        fs = tmp_path / f"fs{len(list(tmp_path.iterdir()))}"
        for rel, text in files.items():
            write(fs / rel, text)
        write(fs / "proc-cgroup", proc)
        return cpus.cgroup_cpu_limit(str(fs / "proc-cgroup"), str(fs)), cpus.default_jobs(str(fs / "proc-cgroup"), str(fs))

    assert case("0::/\n", {"cpu.max": "100000 100000\n"}) == ((100000, 100000), 1)  # cgroup v2, one CPU
    assert case("0::/ci/job\n", {"ci/job/cpu.max": "150000 100000\n"})[0] == (150000, 100000)
    assert case("0::/ci/job\n", {"ci/job/cpu.max": "150000 100000\n"})[1] == min(cores, 2)  # 1.5 CPUs: 2 workers
    assert case("0::/\n", {"cpu.max": "max 100000\n"}) == (None, cores)  # no limit
    v1 = {"cpu,cpuacct/docker/x/cpu.cfs_quota_us": "50000\n", "cpu,cpuacct/docker/x/cpu.cfs_period_us": "100000\n"}
    assert case("12:memory:/docker/x\n5:cpu,cpuacct:/docker/x\n", v1) == ((50000, 100000), 1)  # cgroup v1
    unlimited = {"cpu,cpuacct/cpu.cfs_quota_us": "-1\n", "cpu,cpuacct/cpu.cfs_period_us": "100000\n"}
    assert case("5:cpu,cpuacct:/\n", unlimited) == (None, cores)
    assert cpus.cgroup_cpu_limit(str(tmp_path / "missing"), str(tmp_path)) is None


def test_a_folder_that_cannot_be_listed_is_an_error_not_a_silent_gap(tmp_path, monkeypatch):
    """A CI lint must not pass because part of the tree could not be read."""
    import os

    from cpasync_migrate import files, report, runner
    from cpasync_migrate.engine import RunSettings

    write(tmp_path / "ok" / "k.py", "x = 1\n")
    write(tmp_path / "locked" / "k.py", LEGACY)
    real = os.scandir

    def scandir(path):
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(files.os, "scandir", scandir)
    for jobs in (1, 2):
        outs, scanned = runner.run_files([str(tmp_path)], RunSettings(mode="check"), jobs=jobs)
        (o,) = outs
        assert o.path == str(tmp_path / "locked") and "cannot list this folder (Permission denied)" in o.error
        assert [f.code for f in o.findings] == ["CPA900"] and scanned == 1
        assert report.exit_code(outs, "check") == 2


def test_prefilter_finds_each_needle_and_the_common_part_alone_is_not_a_hit(tmp_path):
    from cpasync_migrate import files, prefilter

    assert files.COMMON and all(files.COMMON in n for n in files.NEEDLES)
    f = tmp_path / "k.cc"
    for needle in files.NEEDLES:
        for pad in (0, 1, 7, 1000):
            f.write_bytes(b"x" * pad + needle + b"\n")
            assert prefilter.worth_parsing(str(f), False), (needle, pad)
    f.write_bytes(b"__syncthreads(); cp_async_wait<0>(); // " + files.COMMON * 3 + b"\n")
    assert not prefilter.worth_parsing(str(f), False)
    assert files._common_part((b"abcd", b"xbcdy", b"bcd")) == b"bcd"
    assert files._common_part((b"abc", b"xyz")) == b""
