"""Interpreter throughput on the verifier's fixtures.

Runs the old/new pair of every kernel in tests/fixtures/verify/cases.toml and
tests/fixtures/python/ (NAME.in.py -> NAME.out.py) through the numpy
interpreter (3 seeds x 2 sentinels, the old form twice: what --verify does)
and prints kernels per second and simulated bytes per second (bytes moved by
cp.async, loads and stores).  Baseline: the same interpreter with one block
per numpy batch (lanes = threads of one block) instead of batching blocks.

    python benchmarks/interp_bench.py [--repeat N]
"""
from __future__ import annotations

import argparse
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cpasync_migrate.rules import load_rules  # noqa: E402
from cpasync_migrate.verify import interp  # noqa: E402
from cpasync_migrate.verify.build import build_kernels  # noqa: E402
from cpasync_migrate.verify.dynamic import run_pair  # noqa: E402


def pairs(rules):
    vdir = ROOT / "tests" / "fixtures" / "verify"
    for c in tomllib.loads((vdir / "cases.toml").read_text())["case"]:
        target = rules.generation(c["target"])
        source = rules.generation(c.get("source", c["target"]))
        yield f"verify/{c['name']}", (vdir / c["old"]).read_text(), (vdir / c["new"]).read_text(), source, target
    pdir = ROOT / "tests" / "fixtures" / "python"
    for p in sorted(pdir.glob("*.in.py")):
        out = p.with_name(p.name[: -len(".in.py")] + ".out.py")
        if not out.exists():
            continue
        cfg = tomllib.loads(p.with_name(p.name[: -len(".in.py")] + ".toml").read_text()) \
            if p.with_name(p.name[: -len(".in.py")] + ".toml").exists() else {}
        args = cfg.get("args", [])
        tname = args[args.index("--target") + 1] if "--target" in args else "0.1.8"
        target = rules.generation(tname) if tname in [g.name for g in rules.generations] else rules.generation("0.1.8")
        yield (f"python/{p.name[:-6]}", p.read_bytes().decode("utf-8-sig"), out.read_bytes().decode("utf-8-sig"),
               target, target)


def collect(rules):
    work = []
    for name, old, new, source, target in pairs(rules):
        bo = build_kernels(old, rules, meaning=source.size_meaning)
        bn = {b.qualname: b for b in build_kernels(new, rules, meaning=target.size_meaning)}
        for b in bo:
            n = bn.get(b.qualname)
            if b.kernel is None or n is None or n.kernel is None or b.kernel.unsupported or n.kernel.unsupported:
                continue
            widths = {"legacy": rules.legacy.widths, "bytes": target.widths, "num_elems": target.widths}
            work.append((f"{name}:{b.qualname}", b.kernel, n.kernel, widths))
    return work


def measure(work, rules, repeat):
    t0 = time.perf_counter()
    nbytes = 0
    runs = 0
    for _ in range(repeat):
        for _, ko, kn, widths in work:
            r = run_pair(ko, kn, rules, widths, seeds=3)
            nbytes += r.bytes
            runs += r.runs
    dt = time.perf_counter() - t0
    return dt, nbytes, runs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    rules = load_rules()
    work = collect(rules)
    n = len(work) * a.repeat
    dt, nbytes, runs = measure(work, rules, a.repeat)
    saved = interp.MAX_LANES
    try:
        interp.MAX_LANES = 1  # baseline: one block per batch
        bdt, bbytes, bruns = measure(work, rules, a.repeat)
    finally:
        interp.MAX_LANES = saved
    print(f"kernel pairs: {len(work)} (x{a.repeat}); interpreter runs per pair: {runs // max(1, n)}")
    print(f"{'':28s} {'seconds':>9s} {'kernels/s':>10s} {'runs/s':>9s} {'sim. MB/s':>10s}")
    print(f"{'batched blocks (default)':28s} {dt:9.2f} {n / dt:10.2f} {runs / dt:9.1f} {nbytes / dt / 1e6:10.2f}")
    print(f"{'baseline: one block/batch':28s} {bdt:9.2f} {n / bdt:10.2f} {bruns / bdt:9.1f} {bbytes / bdt / 1e6:10.2f}")
    print(f"speed-up over baseline: {bdt / dt:.2f}x")
    slow = sorted(((run_time(w, rules), w[0]) for w in work), reverse=True)[:3]
    print("slowest pairs: " + ", ".join(f"{name} {t:.2f}s" for t, name in slow))


def run_time(w, rules):
    t0 = time.perf_counter()
    run_pair(w[1], w[2], rules, w[3], seeds=3)
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
