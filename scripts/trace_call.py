"""Trace one Python and one C++ call of the CLI: the package's files entered, in order, with function entries.

    python scripts/trace_call.py [--rev REV ...] [--out DIR]

For the working tree and each ``--rev`` (a git revision: its ``cpasync_migrate/`` and ``rules/``, unpacked
with ``git archive`` into a temporary folder put first on ``PYTHONPATH``), runs in a fresh interpreter
(``-P``: the working folder is not on the path), under ``sys.settrace``:

* Python: ``cpasync-migrate --diff --verify --no-cache -j 1 tests/fixtures/python/alias_tl.in.py``
  (the front end, the fix, and the CPU verifier on the result);
* C++: ``cpasync-migrate --diff --no-cache -j 1 --target 0.1.8 --unsafe-fixes --accept-partial-sets
  tests/fixtures/cpp/async_inject.in.cc``.

For each call it records every file of the package entered (in the order first entered), the distinct
functions entered there and the number of function entries, and the package modules imported.  Writes
``trace.json`` and ``trace.md`` (one table per revision and call) under ``--out``
(default ``results/trace``).  Only the repository's own fixtures are run; nothing scanned is imported.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CALLS = {
    "python": ["--diff", "--verify", "--no-cache", "-j", "1", "tests/fixtures/python/alias_tl.in.py"],
    "cpp": ["--diff", "--no-cache", "-j", "1", "--target", "0.1.8", "--unsafe-fixes", "--accept-partial-sets",
            "tests/fixtures/cpp/async_inject.in.cc"],
}

# run in the traced interpreter: argv[1] the result file, argv[2:] the CLI's arguments
TRACER = r"""
import json, os, sys, threading
out, args = sys.argv[1], sys.argv[2:]
import cpasync_migrate
pkg = os.path.dirname(os.path.abspath(cpasync_migrate.__file__))
order, funcs, calls = [], {}, {}
def tracer(frame, event, arg):
    if event == "call":
        f = frame.f_code.co_filename
        if f.startswith(pkg):
            rel = os.path.relpath(f, pkg)
            if rel not in funcs:
                order.append(rel)
                funcs[rel] = set()
                calls[rel] = 0
            funcs[rel].add(frame.f_code.co_qualname)
            calls[rel] += 1
    return None
from cpasync_migrate.cli import main
sys.argv = ["cpasync-migrate", *args]
threading.settrace(tracer)
sys.settrace(tracer)
try:
    rc = main()
except SystemExit as e:
    rc = e.code
sys.settrace(None)
mods = sorted(m for m in sys.modules if m == "cpasync_migrate" or m.startswith("cpasync_migrate."))
json.dump({"package": pkg, "exit": rc, "files": [{"file": f, "functions": len(funcs[f]), "entries": calls[f]}
           for f in order], "modules_imported": mods}, open(out, "w"))
"""


def trace(tree: Path) -> dict:
    """Each call's trace with the package at ``tree`` first on the path."""
    env = dict(os.environ, PYTHONPATH=str(tree))  # with -P: the working folder is not on the path
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, args in CALLS.items():
            out = os.path.join(tmp, f"{name}.json")
            r = subprocess.run([sys.executable, "-P", "-c", TRACER, out, *args], cwd=ROOT, env=env, capture_output=True,
                               text=True)
            if not os.path.exists(out):
                raise SystemExit(f"{name} call failed under {tree}:\n{r.stderr[-3000:]}")
            res[name] = json.loads(Path(out).read_text())
            if not res[name]["package"].startswith(str(tree)):
                raise SystemExit(f"the package was imported from {res[name]['package']}, not {tree}")
    return res


def table(label: str, name: str, t: dict) -> str:
    files = t["files"]
    rows = [f"### {label}: {name} call (exit {t['exit']})", "",
            f"{len(files)} files entered, {sum(f['functions'] for f in files)} distinct functions, "
            f"{sum(f['entries'] for f in files)} function entries; {len(t['modules_imported'])} package modules "
            "imported", "", "| # | file entered | functions | entries |", "|---|---|---|---|"]
    rows += [f"| {i} | `{f['file']}` | {f['functions']} | {f['entries']} |" for i, f in enumerate(files, 1)]
    return "\n".join(rows) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", action="append", default=[])
    ap.add_argument("--out", default="results/trace")
    a = ap.parse_args(argv)
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rev in a.rev:
            d = Path(tmp) / rev.replace("/", "_")
            d.mkdir()
            archive = subprocess.run(["git", "archive", rev, "cpasync_migrate", "rules"], cwd=ROOT, check=True,
                                     capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(d)], input=archive, check=True)
            sha = subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT, check=True, capture_output=True,
                                 text=True).stdout.strip()
            runs[f"{rev} ({sha})"] = trace(d)
        runs["working tree"] = trace(ROOT)
    out = ROOT / a.out
    out.mkdir(parents=True, exist_ok=True)
    for r in runs.values():
        for t in r.values():
            t.pop("package")
    (out / "trace.json").write_text(json.dumps(runs, indent=1) + "\n")
    md = ["# One Python and one C++ call, traced (`scripts/trace_call.py`)", ""]
    for label, r in runs.items():
        for name, t in r.items():
            md.append(table(label, name, t))
    (out / "trace.md").write_text("\n".join(md))
    for label, r in runs.items():
        for name, t in r.items():
            fs = t["files"]
            print(f"{label:28} {name:6} exit {t['exit']}: {len(fs)} files, {sum(f['functions'] for f in fs)} "
                  f"functions, {sum(f['entries'] for f in fs)} entries, {len(t['modules_imported'])} modules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
