"""What a cold --check cannot go below on a tree: its parsers' own time on the files that name the intrinsic.

Prints, per round and as medians, against `rg -l ptx_cp_async TREE` measured in the same rounds:

- `rg -l`: the named baseline (wall clock of the command);
- start-up: `python -c "import argparse, dataclasses, hashlib, json, pathlib, tomllib"` (the interpreter and
  the standard modules a run imports before it reads a file);
- tree-sitter: `Parser.parse` of every C++ file that names the intrinsic (or a helper), in this process,
  nothing else (no analysis);
- ast: `ast.parse` of every such Python file;
- libcst import: `python -c "import libcst"` (a run that rewrites any Python file pays it in one worker);
- read + search: reading every file of the tree and searching it for the names (the byte prefilter).

The floor is the sum of the parts a cold run must pay (the parses, one libcst import when a Python file
needs a rewrite, the prefilter) spread over the machine's CPUs, plus the start-up, which comes first:
nothing of the tool's own analysis is in it.  Run with the interpreter of the environment the tool is
installed in: `python benchmarks/parse_floor.py [--tree TREE] [--rounds N]`.
"""
from __future__ import annotations

import argparse
import ast
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

CACHE = Path(os.environ.get("CPASYNC_BENCH_CACHE", Path.home() / ".cache" / "cpasync-migrate" / "bench-tree"))


def timed(cmd) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", type=Path, default=CACHE / "tree-git")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--rg", default="rg")
    args = ap.parse_args(argv)

    import tree_sitter
    import tree_sitter_cpp

    from cpasync_migrate import files, prefilter, runner

    tree = str(args.tree)
    every = [p for p, _ in runner._discovered([tree], (), True, None)]
    cands = prefilter.select([(p, False) for p in every])
    cpp = [Path(p).read_bytes() for p, _ in cands if p.endswith(files.CPP_SUFFIXES)]
    py = [Path(p).read_bytes() for p, _ in cands if p.endswith(files.PYTHON_SUFFIXES)]
    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_cpp.language()))
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    print(f"tree: {tree}: {len(every)} files, {len(cands)} name the intrinsic "
          f"({len(cpp)} C++, {sum(map(len, cpp)) / 1e6:.2f} MB; {len(py)} Python, {sum(map(len, py)) / 1e6:.2f} MB); "
          f"{cpus} CPUs; python {sys.version.split()[0]}")
    rows: dict[str, list[float]] = {k: [] for k in ("rg", "startup", "tree-sitter", "ast", "libcst import",
                                                    "read + search", "floor")}
    for r in range(args.rounds):
        rows["rg"].append(timed([args.rg, "-l", "ptx_cp_async", tree]))
        rows["startup"].append(timed([sys.executable, "-c",
                                      "import argparse, dataclasses, hashlib, json, pathlib, tomllib"]))
        t0 = time.perf_counter()
        for b in cpp:
            parser.parse(b)
        rows["tree-sitter"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for b in py:
            ast.parse(b)
        rows["ast"].append(time.perf_counter() - t0)
        rows["libcst import"].append(timed([sys.executable, "-c", "import libcst"]))
        t0 = time.perf_counter()
        prefilter.select([(p, False) for p in every])
        rows["read + search"].append(time.perf_counter() - t0)
        work = rows["tree-sitter"][-1] + rows["ast"][-1] + rows["libcst import"][-1] + rows["read + search"][-1]
        rows["floor"].append(rows["startup"][-1] + work / cpus)
        print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.3f}" for k, v in rows.items()))
    print("\n| part | median s | vs rg -l (paired) |\n| --- | ---: | ---: |")
    for k, v in rows.items():
        ratio = statistics.median(a / b for a, b in zip(v, rows["rg"]))
        print(f"| {k} | {statistics.median(v):.3f} | {ratio:.2f}x |")
    print("\nfloor = start-up + (tree-sitter + ast + libcst import + read + search) / CPUs: what a cold --check "
          "pays before any analysis of its own")
    return 0


if __name__ == "__main__":
    sys.exit(main())
