"""Kernels verified per second: the GPU runner (cold and warm compile cache) against the CPU interpreter.

    python benchmarks/gpu_bench.py gpu --bundle DIR --out gpu.json [--report cold.json]   # on the GPU machine
    python benchmarks/gpu_bench.py cpu --bundle DIR --out cpu.json [--max-bytes N]       # anywhere (numpy)
    python benchmarks/gpu_bench.py compare --gpu gpu.json --cpu cpu.json                 # the table

``gpu`` runs the whole bundle twice through :func:`cpasync_migrate.verify.gpu.run_bundle`: first with an
empty compile cache (cold: NVRTC compiles every module), then again (warm: every module from the cache),
and reports kernels/s, the compile share (NVRTC wall time / total) and the run share (launches, input
generation and comparisons / total); the rest is worker start-up and module loading.

``cpu`` verifies the same kernel pairs (the bundle's texts) with ``verify_source(device="cpu")``: the
per-site checks and the numpy interpreter over the same seeds and sentinels.  Kernels whose parameters
exceed ``--max-bytes`` are left out of the CPU run (the interpreter would take minutes on them); the
comparison is made on the kernels both sides ran, from the GPU's per-kernel times.
The baseline of every ratio is the CPU interpreter.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def _load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def gpu(args) -> int:
    from cpasync_migrate.verify.gpu import run_bundle, summary_table

    runs = {}
    with tempfile.TemporaryDirectory() as cache:
        for label in ("cold", "warm"):
            t0 = time.perf_counter()
            rep = run_bundle(args.bundle, cache_dir=cache, seeds=args.seeds)
            wall = time.perf_counter() - t0
            tot = rep["totals"]
            ran = [r for r in rep["kernels"] if r["gpu"].get("verdict")]
            ce = tot["compile_events"]
            runs[label] = {
                "wall_s": wall, "kernels": len(ran), "kernels_per_s": len(ran) / wall,
                "compile_wall_s": tot["compile_wall_s"], "run_s": tot["run_s"],
                "compile_share": tot["compile_wall_s"] / wall, "run_share": tot["run_s"] / wall,
                "cache_hits": sum(e["cache_hits"] for e in ce), "cache_misses": sum(e["cache_misses"] for e in ce),
                "modules": sum(e["chunks"] for e in ce), "nvrtc_cpu_s": sum(e.get("cpu_s", 0.0) for e in ce),
                "bytes": sum(r["bytes"] for r in ran),
            }
            if label == "cold" and args.report:
                with open(args.report, "w", encoding="utf-8") as f:
                    json.dump(rep, f, indent=1)
                if args.table:
                    with open(args.table, "w", encoding="utf-8") as f:
                        f.write(summary_table(rep) + "\n")
            runs[label]["per_kernel"] = {r["id"]: r["run_s"] for r in ran}
            runs["device"] = rep["device"]
    for label in ("cold", "warm"):
        r = runs[label]
        print(f"{label}: {r['kernels']} kernel pairs in {r['wall_s']:.2f} s = {r['kernels_per_s']:.1f} kernels/s; "
              f"compile {r['compile_wall_s']:.2f} s ({100 * r['compile_share']:.0f}%), run {r['run_s']:.2f} s "
              f"({100 * r['run_share']:.0f}%), cache {r['cache_hits']} hits / {r['cache_misses']} misses")
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(runs, f, indent=1)
    return 0


def cpu(args) -> int:
    from cpasync_migrate.rules import load_rules
    from cpasync_migrate.verify import verify_source

    rules = load_rules()
    b = _load(os.path.join(args.bundle, "bundle.json"))
    files: dict = {}
    for it in b["items"]:
        if it.get("decided") or "texts" not in it:
            continue
        key = (it["texts"]["old"], it["texts"]["new"], it["target"], it["source"])
        files.setdefault(key, []).append(it)
    per_kernel, skipped, total = {}, 0, 0.0
    for (old, new, target, source), its in sorted(files.items()):
        if max(sum(p["bytes"] for p in it["params"]) for it in its) > args.max_bytes:
            skipped += len(its)
            continue
        with open(os.path.join(args.bundle, old), encoding="utf-8") as f:
            ot = f.read()
        with open(os.path.join(args.bundle, new), encoding="utf-8") as f:
            nt = f.read()
        t0 = time.perf_counter()
        vs = verify_source(ot, nt, old, rules=rules, target=target, source=source, binds=its[0]["texts"].get("binds"),
                           device="cpu", seeds=args.seeds)
        dt = time.perf_counter() - t0
        total += dt
        ran = [v for v in vs if v.kernel in {it["kernel"] for it in its}]
        for it in its:
            per_kernel[it["id"]] = dt / max(1, len(ran))
        bad = [v for v in vs if v.verdict != "equivalent" and any(it["kernel"] == v.kernel and it["expect"] == "equivalent"
                                                                  for it in its)]
        for v in bad:
            print(f"CPU verdict {v.verdict} for {old}:{v.kernel}: {v.reason}", file=sys.stderr)
    out = {"kernels": len(per_kernel), "seconds": total, "kernels_per_s": len(per_kernel) / total if total else 0.0,
           "skipped_over_max_bytes": skipped, "max_bytes": args.max_bytes, "seeds": args.seeds,
           "per_kernel": per_kernel}
    print(f"CPU interpreter: {out['kernels']} kernel pairs in {total:.2f} s = {out['kernels_per_s']:.2f} kernels/s "
          f"({skipped} over {args.max_bytes} bytes left out)")
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)
    return 0


def compare(args) -> int:
    g, c = _load(args.gpu), _load(args.cpu)
    common = sorted(set(c["per_kernel"]) & set(g["warm"]["per_kernel"]))
    cpu_s = sum(c["per_kernel"][k] for k in common)
    print(f"device: {g['device'].get('name')} ({g['device'].get('arch')}); baseline: the CPU interpreter")
    print(f"{'':34}{'kernels':>8}{'seconds':>10}{'kernels/s':>11}{'vs CPU':>8}")
    print(f"{'CPU interpreter (same kernels)':34}{len(common):>8}{cpu_s:>10.2f}{len(common) / cpu_s:>11.2f}{1.0:>8.1f}")
    for label in ("cold", "warm"):
        r = g[label]
        # whole-bundle rate (compile, start-up and every kernel), and the launch-and-compare time of the common set
        print(f"{'GPU ' + label + ' cache, whole bundle':34}{r['kernels']:>8}{r['wall_s']:>10.2f}{r['kernels_per_s']:>11.1f}"
              f"{r['kernels_per_s'] / (len(common) / cpu_s):>8.1f}")
        run_common = sum(r["per_kernel"].get(k, 0.0) for k in common)
        print(f"{'GPU ' + label + ', run only, same kernels':34}{len(common):>8}{run_common:>10.2f}"
              f"{len(common) / run_common:>11.1f}{(len(common) / run_common) / (len(common) / cpu_s):>8.1f}")
        print(f"{'':34}compile share {100 * r['compile_share']:.0f}%, run share {100 * r['run_share']:.0f}%, "
              f"cache {r['cache_hits']} hits / {r['cache_misses']} misses over {r['modules']} modules")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("gpu")
    a.add_argument("--bundle", required=True)
    a.add_argument("--out", required=True)
    a.add_argument("--report", help="also write the cold run's report (JSON) here")
    a.add_argument("--table", help="and its summary table here")
    a.add_argument("--seeds", type=int, default=None)
    b = sub.add_parser("cpu")
    b.add_argument("--bundle", required=True)
    b.add_argument("--out", required=True)
    b.add_argument("--seeds", type=int, default=3)
    b.add_argument("--max-bytes", type=int, default=1 << 20)
    c = sub.add_parser("compare")
    c.add_argument("--gpu", required=True)
    c.add_argument("--cpu", required=True)
    args = ap.parse_args(argv)
    return {"gpu": gpu, "cpu": cpu, "compare": compare}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
