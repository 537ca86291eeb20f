"""Every ``[tool.cpasync-migrate]`` key as the scanned tree may set it: docs/safety.md gives each a verdict,
and a tree's most hostile value of each bounded key stays within its bound, whichever file holds it (the
tree's own pyproject.toml, one in a folder below, one ``--config FILE`` names).

Every run of the tool is a separate process with a timeout that only a hang reaches.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from test_cli import LEGACY, MANUAL
from test_hostile import cli, put

# The attack suites run in CI with -m slow (.ci/run), outside the default run.
pytestmark = pytest.mark.slow

SAFETY = Path(__file__).resolve().parent.parent / "docs" / "safety.md"


def sites(stdout: str) -> list[str]:
    return sorted(ln for ln in stdout.splitlines() if ": CPA" in ln)


def test_safety_page_gives_every_configuration_key_a_verdict():
    """A key added to the option table without a verdict fails here (and one the table lost)."""
    from cpasync_migrate.options import by_key

    text = SAFETY.read_text()
    section = text.split("### Every configuration key, and what the tree may do with it", 1)[1].split("\n## ", 1)[0]
    named = set()
    for row in section.splitlines():
        if row.startswith("| `"):
            named.update(re.findall(r"`([a-z-]+)`", row.split("|")[1]))
    assert named == set(by_key()), (sorted(named - set(by_key())), sorted(set(by_key()) - named))


@pytest.mark.parametrize("line", [
    "line-length = 100000", "line-length = 0", "jobs = 0", "jobs = -1", "max-file-size = -5",
    'cache-dir = "../outside"', 'cache-dir = "/tmp"', 'output-file = "../x"', 'emit-bundle = "../x"',
    'verify = true', 'follow-links-outside = true', 'no-gitignore = true',
    # more globs than a key may hold: each listed file was tried against each (10,000 over 4,000 files never ended)
    "exclude = [" + ", ".join(f'"n{i}*/**/y{i}.py"' for i in range(257)) + "]",
    "extend-exclude = [" + ", ".join(f'"n{i}*/**/y{i}.py"' for i in range(257)) + "]",
    "per-file-ignores = {" + ", ".join(f'"n{i}*/**/y{i}.py" = ["CPA001"]' for i in range(257)) + "}",
])
@pytest.mark.parametrize("where", ["root", "below", "--config"])
def test_a_value_outside_its_bound_or_a_key_the_tree_may_not_set_is_exit_3(tmp_path, line, where):
    tree = tmp_path / "tree"
    sub = tree / "pkg" if where == "below" else tree
    put(sub / "k.py", LEGACY)
    cfg = put(sub / "pyproject.toml", f"[tool.cpasync-migrate]\n{line}\n")
    args = ["--config", cfg] if where == "--config" else []
    r = cli("--check", *args, ".", cwd=tree)
    assert r.returncode == 3 and "Traceback" not in r.stderr, (line, where, r.stdout, r.stderr)
    assert str(cfg) in r.stderr and line.split(" ")[0] in r.stderr, r.stderr
    assert not (tmp_path / "outside").exists() and not (tmp_path / "x").exists()


@pytest.mark.parametrize("key", ["unsafe-fixes", "accept-partial-sets", "allow-read-only", "migrate-tvm",
                                 "force-exclude"])
def test_keys_about_what_write_mode_changes_leave_the_check_verdict_alone(tmp_path, key):
    """The tree may choose which of its own files write mode changes; --check still reports every legacy site
    and exits 1."""
    plain, tree = tmp_path / "plain", tmp_path / "tree"
    for t in (plain, tree):
        put(t / "k.py", LEGACY)
        put(t / "manual.py", MANUAL)
        (t / "k.py").chmod(0o444)
    put(tree / "pyproject.toml", f"[tool.cpasync-migrate]\n{key} = true\n")
    want = cli("--check", "--no-cache", ".", cwd=plain)
    got = cli("--check", "--no-cache", ".", cwd=tree)
    assert want.returncode == got.returncode == 1, got.stdout + got.stderr
    assert sites(got.stdout) == sites(want.stdout) and sites(want.stdout), got.stdout
