"""One switch of the C++ front end, on against off: CPU seconds of ``cpp.analyze`` over a tree's trigger files.

For each tree, the C++ files that name the intrinsic or a helper (the byte prefilter's needles) are read once;
each round then analyses all of them with the switch on and with it off, in turn (the first of the two
alternating from round to round), in this process, timing each pass with ``time.process_time``.  Prints every
round, the medians and minimums of both, the named baseline being the switch off, the paired ratio (on / off,
median over rounds).  The analyses must
be equal (findings, errors): a round where they differ stops the run.

    python benchmarks/cpp_switch_bench.py [--tree TREE ...] [--rounds N] [--switch MODULE:ATTR]

``--switch`` names a module-level flag of ``cpasync_migrate.cpp`` (default ``window:MEMBERS``, the cut of
classes into members; ``window:ENABLED``, ``window:REUSE`` and ``context:LEAN`` are others).
"""
from __future__ import annotations

import argparse
import importlib
import os
import statistics
import time
from pathlib import Path

CACHE = Path(os.environ.get("CPASYNC_BENCH_CACHE", Path.home() / ".cache" / "cpasync-migrate" / "bench-tree"))


def _trigger_files(tree: Path) -> list[tuple[str, str]]:
    from cpasync_migrate import files

    out = []
    for dirpath, _, names in os.walk(tree):
        for n in sorted(names):
            if n.endswith(files.CPP_SUFFIXES):
                p = os.path.join(dirpath, n)
                raw = Path(p).read_bytes()
                if files.has_needle(raw):
                    try:
                        out.append((p, raw.decode("utf-8")))
                    except UnicodeDecodeError:
                        continue
    return sorted(out)


def _pass(texts, opts) -> tuple[float, list]:
    from cpasync_migrate import cpp

    t0 = time.process_time()
    got = [cpp.analyze(text, path, opts) for path, text in texts]
    return time.process_time() - t0, [(a.error, [(f.line, f.column, f.code, f.message) for f in a.findings])
                                      for a in got]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", type=Path, action="append", help="default: tree and tree-git of the benchmark cache")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--switch", default="window:MEMBERS")
    args = ap.parse_args(argv)
    from cpasync_migrate.engine import RunSettings, front_end_options

    module, attr = args.switch.split(":")
    mod = importlib.import_module(f"cpasync_migrate.cpp.{module}")
    opts = front_end_options(RunSettings(mode="check", target="0.1.8"))
    trees = args.tree or [t for t in (CACHE / "tree", CACHE / "tree-git") if t.is_dir()]
    for tree in trees:
        texts = _trigger_files(tree)
        print(f"## {tree}: {len(texts)} C++ trigger files, {sum(len(t) for _, t in texts):,} characters; "
              f"switch cpasync_migrate.cpp.{module}.{attr}")
        for on in (True, False):  # once each, untimed: queries compiled, modules imported
            setattr(mod, attr, on)
            _pass(texts, opts)
        times = {True: [], False: []}
        for r in range(args.rounds):
            answers = {}
            for on in ((True, False) if r % 2 == 0 else (False, True)):
                setattr(mod, attr, on)
                s, answers[on] = _pass(texts, opts)
                times[on].append(s)
            if answers[True] != answers[False]:
                print(f"round {r + 1}: the analyses differ with the switch on and off")
                return 1
            print(f"round {r + 1}: on {times[True][-1]:.3f} s, off {times[False][-1]:.3f} s")
        ratio = statistics.median(a / b for a, b in zip(times[True], times[False]))
        print(f"median: on {statistics.median(times[True]):.3f} s (min {min(times[True]):.3f}), "
              f"off {statistics.median(times[False]):.3f} s (min {min(times[False]):.3f}, the baseline); "
              f"on / off, paired: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
