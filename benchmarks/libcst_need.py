#!/usr/bin/env python3
"""Which Python files of a tree still need libcst in `--check`, and whether a `--check` run imports it at all.

    python benchmarks/libcst_need.py TREE [TREE ...] [--target 0.1.8]

For each tree: every `.py`/`.pyi` file that holds the byte needle is given to the fast pass
(``cpasync_migrate.python.fast.decide``) as `--check` gives it (legacy calls decided with their fixes where
``fast_legacy.fix_facts`` reads them: ``fixes=True``), which answers with its findings or says why libcst decides
the file; the counts per reason are printed, with the files libcst decides, and beside them the count without
those decisions (``fixes=False``: before them, and what write mode and `--diff` still use).  Then
`cpasync-migrate --check --no-cache TREE` runs under ``python -X importtime`` (worker processes inherit the
flag), once as it is and once with ``CPASYNC_MIGRATE_FAST_FIXES=0``, and the script reports whether any process
of each run imported libcst.  Run with the interpreter of the environment the tool is installed in.  Nothing in
the tree is imported or executed: the files are only read.
"""
from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
from pathlib import Path


def files_of(tree: Path):
    for root, dirs, names in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for n in sorted(names):
            if n.endswith((".py", ".pyi")):
                yield Path(root) / n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", nargs="+", type=Path)
    ap.add_argument("--target", default="0.1.8")
    args = ap.parse_args(argv)
    from cpasync_migrate.engine import RunSettings, front_end_options
    from cpasync_migrate.files import decode, has_needle
    from cpasync_migrate.python import fast

    opts = front_end_options(RunSettings(mode="check", target=args.target))
    for tree in args.trees:
        reasons: collections.Counter = collections.Counter()
        need = []
        total = before = 0
        for p in files_of(tree):
            raw = p.read_bytes()
            if not has_needle(raw):
                continue
            total += 1
            try:
                text = decode(str(p), raw, python=True).text
            except Exception as e:  # noqa: BLE001 - an undecodable file is the engine's CPA900, not libcst's
                reasons[f"undecodable ({type(e).__name__})"] += 1
                continue
            found, why = fast.decide(text, str(p), opts, fixes=True)
            reasons["ast pass" if found is not None else f"libcst: {why}"] += 1
            before += fast.decide(text, str(p), opts)[0] is None
            if found is None:
                need.append((str(p.relative_to(tree)), why))
        runs = []
        for env in ({}, {"CPASYNC_MIGRATE_FAST_FIXES": "0"}):
            run = subprocess.run([sys.executable, "-X", "importtime", "-m", "cpasync_migrate", "--check", "--no-cache",
                                  "--target", args.target, str(tree)], capture_output=True, text=True,
                                 env={**os.environ, **env})
            imported = any(line.rstrip().endswith((" libcst", "| libcst")) for line in run.stderr.splitlines()
                           if line.startswith("import time:"))
            runs.append(f"exit {run.returncode}, imports libcst: {'yes' if imported else 'no'}")
        print(f"{tree}: {total} Python files name the intrinsic; "
              f"{sum(v for k, v in reasons.items() if k.startswith('libcst'))} need libcst in --check "
              f"({before} without its legacy-call decisions); --check: {runs[0]}; "
              f"with CPASYNC_MIGRATE_FAST_FIXES=0: {runs[1]}")
        for k, v in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {v:5d}  {k}")
        for path, why in need:
            print(f"         {path}  ({why})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
