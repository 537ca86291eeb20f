"""What a cold --check cannot go below on a tree: its parsers' own time on the files that name the intrinsic.

Prints, per round and as medians, against `rg -l ptx_cp_async TREE` measured in the same rounds:

- `rg -l`: the named baseline (wall clock of the command);
- start-up: `python -c "import argparse, dataclasses, hashlib, json, pathlib, tomllib"` (the interpreter and
  the standard modules a run imports before it reads a file);
- tree-sitter: `Parser.parse` of every C++ file that names the intrinsic (or a helper), in this process,
  nothing else (no analysis);
- tree-sitter windowed: what the C++ front end parses under its window (cpp/window.py): for each such
  file, the window's scan and the parse of its window where one is tried (the whole file where not;
  a window that then finds a site adds the whole file's parse, which reuses the window's tree, as the
  front end does);
- C++ front end: ``cpp.analyze`` of every such file (the whole analysis), to read against the
  tree-sitter row of the same round (printed as a paired ratio; not a part of the floor);
- ast: `ast.parse` of every such Python file;
- libcst import: `python -c "import libcst"` (a run that rewrites any Python file pays it in one worker);
- read + search: reading every file of the tree and searching it for the names (the byte prefilter).

The floor is the sum of the parts a cold run must pay (the parses, one libcst import when a Python file
needs a rewrite, the prefilter) spread over the machine's CPUs, plus the start-up, which comes first:
nothing of the tool's own analysis is in it (the floor row takes the whole-file tree-sitter row; the
windowed floor the windowed one).  Run with the interpreter of the environment the tool is installed in:
`python benchmarks/parse_floor.py [--tree TREE ...] [--rounds N]`; several trees take turns inside each
round, each against its own `rg -l` of the same round.
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


def _windowed(files_text, opts) -> tuple[float, int]:
    """Seconds of the C++ front end's parsing under its window (the window's scan, parse and site walk where
    it is tried, the whole file's parse where it is not or where it then finds a site), and how many files
    the window decided."""
    from cpasync_migrate.cpp import window
    from cpasync_migrate.cpp.source import parse_bytes

    attempt = getattr(window, "attempt", None)  # None: a tree of the tool from before the window handed its tree on
    decided = 0
    t0 = time.perf_counter()
    for path, text, data in files_text:
        if attempt is None:
            shown, tree = window.analyze(text, path, opts), None
        else:
            shown, tree = attempt(text, path, opts, data)
        if shown is None:
            parse_bytes(data) if tree is None else parse_bytes(data, tree)
        else:
            decided += 1
    return time.perf_counter() - t0, decided


def _front_end(files_text, opts) -> float:
    """Seconds of the C++ front end's whole analysis of the files (in this process, timed as the tree-sitter row)."""
    from cpasync_migrate import cpp

    t0 = time.perf_counter()
    for path, text, _ in files_text:
        cpp.analyze(text, path, opts)
    return time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", type=Path, action="append",
                    help="a benchmark tree (repeatable; default: tree-git)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--rg", default="rg")
    args = ap.parse_args(argv)

    import tree_sitter
    import tree_sitter_cpp

    from cpasync_migrate import files, prefilter, runner
    from cpasync_migrate.engine import RunSettings, front_end_options

    opts = front_end_options(RunSettings(mode="check"))
    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_cpp.language()))
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    trees = []
    for tpath in args.tree or [CACHE / "tree-git"]:
        tree = str(tpath)
        every = [p for p, _ in runner._discovered([tree], (), True, None)]
        cands = prefilter.select([(p, False) for p in every])
        cpp_files = [(p, Path(p).read_bytes()) for p, _ in cands if p.endswith(files.CPP_SUFFIXES)]
        cpp = [b for _, b in cpp_files]
        cpp_text = [(p, b.decode("utf-8", "surrogateescape"), b) for p, b in cpp_files]
        py = [Path(p).read_bytes() for p, _ in cands if p.endswith(files.PYTHON_SUFFIXES)]
        print(f"tree: {tree}: {len(every)} files, {len(cands)} name the intrinsic "
              f"({len(cpp)} C++, {sum(map(len, cpp)) / 1e6:.2f} MB; {len(py)} Python, {sum(map(len, py)) / 1e6:.2f} MB); "
              f"{cpus} CPUs; python {sys.version.split()[0]}")
        trees.append((tree, every, cpp, cpp_text, py))
    keys = ("rg", "startup", "tree-sitter", "tree-sitter windowed", "C++ front end", "ast", "libcst import",
            "read + search", "floor", "floor windowed")
    rows = {t[0]: {k: [] for k in keys} for t in trees}
    decided = {}
    for r in range(args.rounds):
        for tree, every, cpp, cpp_text, py in trees:  # the trees take turns inside each round
            row = rows[tree]
            row["rg"].append(timed([args.rg, "-l", "ptx_cp_async", tree]))
            row["startup"].append(timed([sys.executable, "-c",
                                         "import argparse, dataclasses, hashlib, json, pathlib, tomllib"]))
            t0 = time.perf_counter()
            for b in cpp:
                parser.parse(b)
            row["tree-sitter"].append(time.perf_counter() - t0)
            t_win, decided[tree] = _windowed(cpp_text, opts)
            row["tree-sitter windowed"].append(t_win)
            row["C++ front end"].append(_front_end(cpp_text, opts))
            t0 = time.perf_counter()
            for b in py:
                ast.parse(b)
            row["ast"].append(time.perf_counter() - t0)
            row["libcst import"].append(timed([sys.executable, "-c", "import libcst"]))
            t0 = time.perf_counter()
            prefilter.select([(p, False) for p in every])
            row["read + search"].append(time.perf_counter() - t0)
            rest = row["ast"][-1] + row["libcst import"][-1] + row["read + search"][-1]
            row["floor"].append(row["startup"][-1] + (row["tree-sitter"][-1] + rest) / cpus)
            row["floor windowed"].append(row["startup"][-1] + (row["tree-sitter windowed"][-1] + rest) / cpus)
            print(f"round {r + 1} {tree}: " + ", ".join(f"{k} {v[-1]:.3f}" for k, v in row.items()))
    for tree, *_ in trees:
        row = rows[tree]
        print(f"\n{tree} (the window decided {decided[tree]} of its C++ files)")
        print("\n| part | median s | vs rg -l (paired) |\n| --- | ---: | ---: |")
        for k, v in row.items():
            ratio = statistics.median(a / b for a, b in zip(v, row["rg"]))
            print(f"| {k} | {statistics.median(v):.3f} | {ratio:.2f}x |")
        fe = statistics.median(a / b for a, b in zip(row["C++ front end"], row["tree-sitter"]))
        print(f"\nC++ front end / tree-sitter parse (paired median): {fe:.2f}x")
    print("\nfloor = start-up + (tree-sitter + ast + libcst import + read + search) / CPUs: what a cold --check "
          "pays before any analysis of its own; floor windowed: the same with the windowed tree-sitter row, which "
          "includes the window's scan and its site walk (the walk is analysis the whole-file row leaves out, so the "
          "windowed row is an upper bound of the parsing it costs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
