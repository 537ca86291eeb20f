"""The flags ruff users reach for: --exit-non-zero-on-fix, --line-length, --color, per-file-ignores,
--config KEY=VALUE, `rule CODE`, --show-settings."""
import json

from conftest import ROOT, run_cli, run_inproc
from test_cli import LEGACY, write


def test_exit_non_zero_on_fix(tmp_path):
    write(tmp_path / "k.py", LEGACY)
    write(tmp_path / "done.py", "x = 1\n")
    assert run_inproc("--no-cache", "--exit-non-zero-on-fix", "done.py", cwd=tmp_path).returncode == 0
    r = run_inproc("--no-cache", "--exit-non-zero-on-fix", "k.py", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert "ptx_cp_async(" in (tmp_path / "k.py").read_text() and "access_ptr" in (tmp_path / "k.py").read_text()
    # without the flag the same fix exits 0; --exit-zero wins over the flag (as in ruff)
    write(tmp_path / "k.py", LEGACY)
    assert run_inproc("--no-cache", "k.py", cwd=tmp_path).returncode == 0
    write(tmp_path / "k.py", LEGACY)
    assert run_inproc("--no-cache", "--exit-non-zero-on-fix", "--exit-zero", "k.py", cwd=tmp_path).returncode == 0
    # stdin: the migrated text printed counts as a fix
    r = run_cli("--no-cache", "--exit-non-zero-on-fix", "-", "--stdin-filename", "k.py", cwd=tmp_path, input=LEGACY)
    assert r.returncode == 1 and "access_ptr" in r.stdout


def test_color_always_and_never(tmp_path):
    write(tmp_path / "k.py", LEGACY)
    r = run_cli("--diff", "--no-cache", "--color", "always", "k.py", cwd=tmp_path)  # NO_COLOR=1 is set
    assert "\x1b[" in r.stdout
    r = run_cli("--diff", "--no-cache", "--color", "never", "k.py", cwd=tmp_path,
                env={"FORCE_COLOR": "1", "NO_COLOR": ""})
    assert "\x1b[" not in r.stdout and "\x1b[" not in r.stderr and r.stdout.startswith("--- ")
    r = run_inproc("--diff", "--color", "sometimes", "k.py", cwd=tmp_path)
    assert r.returncode == 3 and "invalid choice: 'sometimes'" in r.stderr


def _codes(r):
    assert r.returncode in (0, 1), r.stderr
    return sorted((f["path"], f["code"]) for f in json.loads(r.stdout)["findings"] if f["status"] != "suppressed")


def test_per_file_ignores_in_the_file_and_on_the_command_line(tmp_path):
    for rel in ("src/k.py", "tests/t.py", "tests/u.py"):
        write(tmp_path / rel, LEGACY)
    base = ("--check", "--format", "json", "--no-cache", ".")
    assert _codes(run_inproc(*base, cwd=tmp_path)) == [
        ("src/k.py", "CPA001"), ("tests/t.py", "CPA001"), ("tests/u.py", "CPA001")]
    write(tmp_path / "pyproject.toml", '[tool.cpasync-migrate.per-file-ignores]\n"tests/*" = ["CPA001"]\n')
    assert _codes(run_inproc(*base, cwd=tmp_path)) == [("src/k.py", "CPA001")]
    # --per-file-ignores adds to the file's (relative to the current folder)
    r = run_inproc("--per-file-ignores", "src/*.py:CPA0", *base, cwd=tmp_path)
    assert _codes(r) == []
    # the fix of an ignored site is not applied
    before = (tmp_path / "tests" / "t.py").read_text()
    assert run_inproc("--no-cache", ".", cwd=tmp_path).returncode == 0
    assert (tmp_path / "tests" / "t.py").read_text() == before
    assert (tmp_path / "src" / "k.py").read_text() != LEGACY
    # mistakes name the file and the key
    write(tmp_path / "pyproject.toml", '[tool.cpasync-migrate]\nper-file-ignores = ["tests/*"]\n')
    r = run_inproc(*base, cwd=tmp_path)
    assert r.returncode == 3 and f"{tmp_path / 'pyproject.toml'}: [tool.cpasync-migrate] per-file-ignores must be a table" in r.stderr
    write(tmp_path / "pyproject.toml", '[tool.cpasync-migrate.per-file-ignores]\n"tests/*" = ["CPA9x"]\n')
    r = run_inproc(*base, cwd=tmp_path)
    assert r.returncode == 3 and "per-file-ignores = 'tests/*' CPA9X: no such code" in r.stderr
    r = run_inproc("--per-file-ignores", "tests", *base, cwd=tmp_path)
    assert r.returncode == 3 and "expected GLOB:CODES" in r.stderr


def test_config_key_value(tmp_path):
    write(tmp_path / "k.py", LEGACY)
    r = run_inproc("--check", "--format", "json", "--no-cache", "--config", 'target = "0.1.9"', "k.py", cwd=tmp_path)
    assert json.loads(r.stdout)["target"]["generation"] == "0.1.9"
    # the flag wins over the pair; the pair over the file
    write(tmp_path / "pyproject.toml", '[tool.cpasync-migrate]\ntarget = "0.1.9"\n')
    r = run_inproc("--check", "--format", "json", "--config", 'target = "0.1.8"', "k.py", cwd=tmp_path)
    assert json.loads(r.stdout)["target"]["generation"] == "0.1.8"
    r = run_inproc("--check", "--format", "json", "--target", "0.1.9", "--config", 'target = "0.1.8"', "k.py",
                   cwd=tmp_path)
    assert json.loads(r.stdout)["target"]["generation"] == "0.1.9"
    r = run_inproc("--check", "--config", 'select = ["CPA002"]', "k.py", cwd=tmp_path)
    assert r.returncode == 0 and "CPA001" not in r.stdout
    for pair, said in (("jobs = 0", "jobs must be a whole number of at least 1, not a number (0)"),
                       ("colour = true", "unknown key 'colour'"),
                       ("target = 0.1.9", "not a TOML KEY = VALUE pair"),
                       ("a = 1\nb = 2", "expected one KEY = VALUE pair")):
        r = run_inproc("--check", "--config", pair, "k.py", cwd=tmp_path)
        assert r.returncode == 3 and f"--config {pair!r}: " in r.stderr and said in r.stderr, (pair, r.stderr)
    # a file and pairs together; two files is an error
    write(tmp_path / "conf.toml", '[tool.cpasync-migrate]\ntarget = "0.1.9"\n')
    r = run_inproc("--check", "--format", "json", "--config", "conf.toml", "--config", "style = 'access_ptr'",
                   "k.py", cwd=tmp_path)
    assert json.loads(r.stdout)["target"]["generation"] == "0.1.9"
    r = run_inproc("--check", "--config", "conf.toml", "--config", "pyproject.toml", "k.py", cwd=tmp_path)
    assert r.returncode == 3 and "a second configuration file" in r.stderr


def test_rule_prints_a_codes_page(tmp_path):
    r = run_cli("rule", "CPA001", cwd=tmp_path)
    page = (ROOT / "docs" / "codes" / "CPA001.md").read_text(encoding="utf-8")
    assert r.returncode == 0 and r.stdout == page.rstrip("\n") + "\n"
    r = run_cli("rule", "--all", cwd=tmp_path)
    assert r.returncode == 0
    for code in ("CPA001", "CPA101", "CPA900"):
        assert (ROOT / "docs" / "codes" / f"{code}.md").read_text(encoding="utf-8").splitlines()[0] in r.stdout
    r = run_cli("rule", "CPA999", cwd=tmp_path)
    assert r.returncode == 3 and "CPA999: no such code" in r.stderr
    assert run_cli("rule", cwd=tmp_path).returncode == 3


def test_show_settings(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.cpasync-migrate]\ntarget = "0.1.9"\nextend-exclude = ["gen/**"]\n')
    write(tmp_path / "sub" / "pyproject.toml", '[tool.cpasync-migrate]\nignore = ["CPA003"]\n')
    write(tmp_path / "sub" / "k.py", LEGACY)
    r = run_inproc("--show-settings", "--select", "CPA0", "sub/k.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == 'Resolved settings for: "sub/k.py"'
    assert lines[1] == f'Settings path: "{tmp_path / "sub" / "pyproject.toml"}"'
    assert 'select = ["CPA0"]' in lines and 'ignore = ["CPA003"]' in lines and "exclude = []" in lines
    assert "line-length = 88" in lines
    # the whole run's target comes from the folder holding the paths (here, the file's own: the default)
    assert 'target = "0.1.8"' in lines
    r = run_inproc("--show-settings", "--line-length", "100", ".", cwd=tmp_path)
    lines = r.stdout.splitlines()
    assert 'target = "0.1.9"' in lines and 'exclude = ["gen/**"]' in lines and "line-length = 100" in lines
    assert (tmp_path / "sub" / "k.py").read_text() == LEGACY  # nothing run
