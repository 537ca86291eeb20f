"""Trace one Python and one C++ call of the tool: the package files each enters, in first-entry order, with counts.

    python scripts/trace_call.py [--tree DIR] [--json FILE]

Each call runs the command line's ``main`` in process, under ``sys.setprofile``, in a fresh interpreter of
its own (this script again, with ``--child``), so that both calls start from nothing imported:

* Python: ``--diff --no-cache -j 1 --target 0.1.8 one_call.py`` (one legacy call in one kernel);
* C++: ``--diff --no-cache -j 1 --target 0.1.8 --unsafe-fixes --accept-partial-sets one_builder.cc`` (one
  legacy argument list built for the intrinsic).

The two inputs are ``scripts/trace_inputs/``'s, copied into an empty temporary folder first (no configuration,
no git, no cache around them).  The package traced is the one the interpreter imports: ``--tree DIR`` puts DIR
first on ``PYTHONPATH`` (a tree of another revision: ``git archive REV | tar -x -C DIR``, its ``rules/``
beside its package); the package's folder is printed and checked.  A file is "entered" when a Python frame of
it starts (a module body at import, a function call, a generator resumed); the count is those starts.  The
``CPASYNC_MIGRATE_*`` variables are cleared for the calls.  Only the tool runs: nothing of the inputs is
imported or executed, and the tool reads them as text.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

INPUTS = Path(__file__).resolve().parent / "trace_inputs"
CALLS = {
    "python": ("one_call.py", ["--diff", "--no-cache", "-j", "1", "--target", "0.1.8"]),
    "cpp": ("one_builder.cc", ["--diff", "--no-cache", "-j", "1", "--target", "0.1.8", "--unsafe-fixes",
                               "--accept-partial-sets"]),
}


def _package_dir() -> str:
    """The folder of the package this interpreter would import, found without importing it."""
    spec = importlib.util.find_spec("cpasync_migrate")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("trace_call: no cpasync_migrate package on the path")
    return os.path.realpath(list(spec.submodule_search_locations)[0])


def trace_here(call: str) -> dict:
    """Run one call in this process under ``sys.setprofile``: the package's files entered and their counts."""
    name, args = CALLS[call]
    pkg = _package_dir() + os.sep
    order, counts = [], {}

    def profile(frame, event, arg):
        if event == "call":
            f = frame.f_code.co_filename
            if f.startswith(pkg):
                if f in counts:
                    counts[f] += 1
                else:
                    order.append(f)
                    counts[f] = 1

    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(INPUTS / name, tmp)
        here = os.getcwd()
        os.chdir(tmp)
        out = io.StringIO()
        try:
            sys.setprofile(profile)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                from cpasync_migrate.cli import main
                try:
                    rc = main([*args, name])
                except SystemExit as e:
                    rc = e.code
        finally:
            sys.setprofile(None)
            os.chdir(here)
    imported = os.path.realpath(sys.modules["cpasync_migrate"].__file__)
    if not imported.startswith(pkg):
        raise SystemExit(f"trace_call: the package was imported from {imported}, not {pkg}")
    return {"call": call, "argv": [*args, name], "exit": rc, "package": pkg.rstrip(os.sep),
            "files": [[os.path.relpath(f, pkg), counts[f]] for f in order], "output": out.getvalue()}


def trace(call: str, tree) -> dict:
    """One call's trace, in a fresh interpreter, with ``tree`` (if any) first on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CPASYNC_MIGRATE_")}
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(Path(tree).resolve())] + ([env["PYTHONPATH"]]
                                                                            if env.get("PYTHONPATH") else []))
    r = subprocess.run([sys.executable, __file__, "--child", call], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"trace_call: the {call} call failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout)


def render(t: dict) -> str:
    files = t["files"]
    width = max(len(f) for f, _ in files)
    rows = [f"{t['call']} call: cpasync-migrate {' '.join(t['argv'])} (exit {t['exit']})",
            f"package: {t['package']}",
            f"{len(files)} files entered, {sum(n for _, n in files)} entries", "",
            f"{'#':>3}  {'file':<{width}}  entries"]
    rows += [f"{i:>3}  {f:<{width}}  {n}" for i, (f, n) in enumerate(files, 1)]
    return "\n".join(rows) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", help="a folder holding cpasync_migrate/ and rules/ to trace instead")
    ap.add_argument("--json", help="also write both traces to this file")
    ap.add_argument("--child", choices=sorted(CALLS), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        json.dump(trace_here(a.child), sys.stdout)
        return 0
    traces = [trace(call, a.tree) for call in CALLS]
    print("\n".join(render(t) for t in traces), end="")
    if a.json:
        Path(a.json).write_text(json.dumps(traces, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
