"""Command-line habits users bring from ruff and black: stdin, --exit-zero, --statistics,
--select/--ignore, exit code 3 for usage, --version, grouped --help, colour; and the module layout
below the command line (no import loop)."""
import ast
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, run_cli
from test_cli import LEGACY, MIGRATED_CALL, MANUAL, write

PKG = ROOT / "cpasync_migrate"


def _imports(module: str) -> set:
    """The package modules a module of the package imports (at any depth of its code)."""
    tree = ast.parse((PKG / f"{module}.py").read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                out.add(node.module.split(".")[0])
            else:
                out.update(a.name for a in node.names)
    return out


def test_no_module_below_the_command_line_imports_it():
    below = ["runner", "gitrev", "cpus", "prefilter", "pool", "progress", "files", "config", "engine", "errors"]
    for m in below:
        assert "cli" not in _imports(m), m
    assert _imports("errors") == set()
    assert {"errors"} <= _imports("gitrev") and {"errors"} <= _imports("config")
    # importing the runner first (as a library user would) works on its own
    r = subprocess.run([sys.executable, "-c", "import cpasync_migrate.runner as r, sys; "
                        "assert 'cpasync_migrate.cli' not in sys.modules; print(r.run_files.__name__)"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and r.stdout.strip() == "run_files", r.stderr
