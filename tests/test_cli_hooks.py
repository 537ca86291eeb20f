"""The pre-commit hooks' commands on the files pre-commit would name: documented suffixes only,
excludes forced, one line per change from the fixing hook."""
import re
import shlex

import yaml

from conftest import ROOT, run_cli
from test_cli import LEGACY, MIGRATED_CALL, write

HOOKS = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}


def _named(hook, names):
    """The files pre-commit passes the hook: those its files pattern matches."""
    rx = re.compile(hook["files"])
    return [n for n in names if rx.search(n)]


def _run(hook, names, cwd):
    argv = shlex.split(hook["entry"])
    assert argv[0] == "cpasync-migrate"
    return run_cli(*argv[1:], *names, cwd=cwd)


def test_hooks_send_only_documented_suffixes():
    names = ["a.py", "a.pyi", "a.cc", "a.cpp", "a.cxx", "a.h", "a.hpp", "a.cu", "a.cuh", "a.c", "a.txt", "a.pyc",
             "notes.md", "a.py.orig"]
    for hook in HOOKS.values():
        assert _named(hook, names) == names[:9]
        assert "c" not in hook.get("types_or", []), "identify tags .c files as c"


def test_a_named_file_of_another_kind_is_skipped_with_a_note(tmp_path):
    write(tmp_path / "k.c", LEGACY)
    write(tmp_path / "k.py", LEGACY)
    r = run_cli("--check", "k.c", "k.py", cwd=tmp_path)
    assert r.returncode == 1
    assert "note: skipped k.c: not a Python (.py .pyi) or C++" in r.stderr
    assert [ln.split(":")[0] for ln in r.stdout.splitlines()] == ["k.py"]
    r = run_cli("--check", "k.c", cwd=tmp_path)
    assert r.returncode == 0 and "skipped k.c" in r.stderr and "Traceback" not in r.stderr


def test_fixing_hook_prints_one_line_per_change_and_honours_excludes(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.cpasync-migrate]\nextend-exclude = ["3rdparty/**"]\n')
    write(tmp_path / "sub" / "pyproject.toml", '[project]\nname = "sub"\n')
    write(tmp_path / "3rdparty" / "v.py", LEGACY)
    write(tmp_path / "k.py", LEGACY)
    write(tmp_path / "sub" / "m.py", LEGACY)
    staged = ["3rdparty/v.py", "k.py", "sub/m.py", "README.md"]
    r = _run(HOOKS["cpasync-migrate"], _named(HOOKS["cpasync-migrate"], staged), tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == ["k.py:9:9: CPA001 fixed", "sub/m.py:9:9: CPA001 fixed"]
    assert MIGRATED_CALL in (tmp_path / "k.py").read_text()
    assert (tmp_path / "3rdparty" / "v.py").read_text() == LEGACY, "excluded by the root's config"
    r = _run(HOOKS["cpasync-migrate-check"], _named(HOOKS["cpasync-migrate-check"], staged), tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == ""
