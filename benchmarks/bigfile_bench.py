#!/usr/bin/env python3
"""Big single files: `cpasync-migrate` on generated 1 MiB, 5 and 50 MB Python files.

    python benchmarks/bigfile_bench.py [--sizes 1MiB,5,50] [--reps 3] [--timeout 120] [--keep DIR] [--no-off]
                                       [--speedups-off] [--fast-off] [--linear-off] [--only ROWS]

Each file is a module of many small legacy TileLang kernels (one `T.ptx_cp_async` call each).
For every size it times, in one run, the rows alternating in each of --reps rounds:

  grep -l ptx_cp_async FILE                       the named baseline (reads the file once)
  cpasync-migrate --check --no-cache FILE         the default size limit (files over it are a
                                                  CPA900 error naming the file and the limit)
  cpasync-migrate --check --no-cache --max-file-size 0 FILE
                                                  the whole file analysed (no limit), under
                                                  --timeout seconds: a run cut off is printed
                                                  as such, with the time and memory it had reached
  the same in write mode                          on a fresh copy of the file (made outside the clock)
  the same --check with CPASYNC_MIGRATE_WINDOW=0  windowed analysis off (python/window.py), paired
                                                  (--no-off leaves these rows out)
  --check and write with the per-call speed-ups off  (--speedups-off adds them) the switches of
                                                  python/positions.py, python/scopes.py and
                                                  window.FREEZE at 0: the analysis as it was before them
  --check and write with CPASYNC_MIGRATE_FAST_LINEAR=0  (--linear-off adds them) each window read over
                                                  its full length (its placeholders carry the file's line count)
  --check with the fast pass's speed-ups off      (--fast-off adds them) FAST_SPEEDUPS at 0: the stdlib-ast
                                                  pass's per-call costs as they were before them

--only keeps the rows whose names hold one of its comma-separated words (``--only check,write``).

and prints, per row, the median wall and CPU seconds (user + system of the process tree: less
disturbed than wall time on a shared machine) over the rounds, the CPU milliseconds per kernel (one
legacy call each: the per-call cost, for linearity across sizes), the exit code, and the median peak
memory: the largest sum of resident set sizes over the command's process tree (sampled every 5 ms
from /proc).  A row cut off once is not run again.  The size ``1MiB`` is 1,048,576 bytes less one
kernel (the largest file the default limit analyses); a plain number is megabytes (10**6 bytes).
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Optional

KERNEL = '''

@T.prim_func
def copy_{i}(A: T.Tensor((256,), "float16"), B: T.Tensor((256,), "float16")):
    with T.Kernel(1, threads=32) as bx:
        S = T.alloc_shared((256,), "float16")
        tx = T.get_thread_binding()
        T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(8):
            B[tx * 8 + i] = S[tx * 8 + i]
'''

# the per-call speed-ups' switches (docs/usage.md#environment): --speedups-off sets them all to 0
SPEEDUPS = ("CPASYNC_MIGRATE_FAST_POSITIONS", "CPASYNC_MIGRATE_RENDER_WALK", "CPASYNC_MIGRATE_DIRECT_SCOPES",
            "CPASYNC_MIGRATE_GC_FREEZE")
# the stdlib-ast pass's per-call speed-ups (docs/benchmarks.md, big files): --fast-off sets them all to 0
FAST_SPEEDUPS = ("CPASYNC_MIGRATE_FAST_SCOPE_INDEX", "CPASYNC_MIGRATE_FAST_PARENTS", "CPASYNC_MIGRATE_FAST_EDIT_MEMO",
                 "CPASYNC_MIGRATE_WINDOW_QUICK", "CPASYNC_MIGRATE_FAST_SCAN_QUICK")


def generate(path: Path, size: str) -> int:
    """Write a module of about ``size`` (``1MiB`` or megabytes); returns the number of kernels."""
    target = 1024 * 1024 if size.lower() == "1mib" else int(float(size) * 1_000_000)
    with open(path, "w", encoding="utf-8") as f:
        f.write("import tilelang.language as T\n")
        written, i = len("import tilelang.language as T\n"), 0
        while True:
            chunk = KERNEL.format(i=i)
            if size.lower() == "1mib" and written + len(chunk) > target:
                break
            f.write(chunk)
            written += len(chunk)
            i += 1
            if size.lower() != "1mib" and written >= target:
                break
    return i


def _tree_rss(pid: int) -> int:
    """Sum of resident set sizes (bytes) of ``pid`` and its descendants."""
    total, stack, page = 0, [pid], os.sysconf("SC_PAGE_SIZE")
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * page
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    stack += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            continue
    return total


def measure(cmd: list[str], timeout: float, env: Optional[dict] = None) -> dict:
    """Wall seconds, CPU seconds (user + system of the process tree), exit code (None: cut off at ``timeout``)
    and peak process-tree RSS of ``cmd``."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                            env=env)
    peak = 0
    stop = threading.Event()

    def sample():
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, _tree_rss(proc.pid))
            time.sleep(0.005)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.wait()
        rc = None
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    stop.set()
    th.join()
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return {"wall": wall, "cpu": cpu, "rc": rc, "peak_mb": peak / 1e6}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--sizes", default="1MiB,5,50", help="file sizes: 1MiB, or MB (default 1MiB,5,50)")
    ap.add_argument("--reps", type=int, default=3, help="rounds; medians are printed (default 3)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds before a run is cut off (default 120)")
    ap.add_argument("--keep", metavar="DIR", help="generate the files here and keep them")
    ap.add_argument("--no-off", action="store_true", help="leave out the CPASYNC_MIGRATE_WINDOW=0 rows")
    ap.add_argument("--speedups-off", action="store_true",
                    help="add --check and write rows with the per-call speed-ups' switches at 0")
    ap.add_argument("--fast-off", action="store_true",
                    help="add --check rows with the stdlib-ast pass's per-call speed-ups' switches at 0")
    ap.add_argument("--linear-off", action="store_true",
                    help="add --check and write rows with CPASYNC_MIGRATE_FAST_LINEAR=0 (paired)")
    ap.add_argument("--only", help="keep the rows whose names hold one of these comma-separated words")
    a = ap.parse_args()
    exe = shutil.which("cpasync-migrate") or str(Path(sys.executable).with_name("cpasync-migrate"))
    work = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="cpasync-bigfile-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {platform.node()}; "
          f"{os.cpu_count()} CPUs; load {os.getloadavg()[0]:.1f}; Python {platform.python_version()}; "
          f"timeout {a.timeout:.0f} s; {a.reps} rounds")
    print("| file | kernels | command | wall s (median) | CPU s (median) | CPU ms per kernel | exit "
          "| peak MB (process tree, median) |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    base = [exe, "--no-cache", "-j", "1"]
    on = dict(os.environ)
    off = dict(os.environ, CPASYNC_MIGRATE_WINDOW="0")
    slow = dict(os.environ, **{k: "0" for k in SPEEDUPS})
    fast_off = dict(os.environ, **{k: "0" for k in FAST_SPEEDUPS})
    linear_off = dict(os.environ, CPASYNC_MIGRATE_FAST_LINEAR="0")
    try:
        for size in a.sizes.split(","):
            f = work / f"big_{size}.py"
            n = generate(f, size)
            label = f"{f.stat().st_size:,} B"
            copy = work / f"write_{size}.py"
            rows = [("grep -l ptx_cp_async", ["grep", "-l", "ptx_cp_async", str(f)], on, None),
                    ("--check (default limit)", [*base, "--check", str(f)], on, None),
                    ("--check --max-file-size 0", [*base, "--check", "--max-file-size", "0", str(f)], on, None),
                    ("write, --max-file-size 0", [*base, "--max-file-size", "0", str(copy)], on, copy)]
            if not a.no_off:
                rows += [("--check --max-file-size 0, CPASYNC_MIGRATE_WINDOW=0",
                          [*base, "--check", "--max-file-size", "0", str(f)], off, None),
                         ("write, --max-file-size 0, CPASYNC_MIGRATE_WINDOW=0",
                          [*base, "--max-file-size", "0", str(copy)], off, copy)]
            if a.speedups_off:
                rows += [("--check --max-file-size 0, speed-ups off",
                          [*base, "--check", "--max-file-size", "0", str(f)], slow, None),
                         ("write, --max-file-size 0, speed-ups off",
                          [*base, "--max-file-size", "0", str(copy)], slow, copy)]
            if a.linear_off:
                rows += [("--check --max-file-size 0, CPASYNC_MIGRATE_FAST_LINEAR=0",
                          [*base, "--check", "--max-file-size", "0", str(f)], linear_off, None),
                         ("write, --max-file-size 0, CPASYNC_MIGRATE_FAST_LINEAR=0",
                          [*base, "--max-file-size", "0", str(copy)], linear_off, copy)]
            if a.fast_off:
                rows += [("--check (default limit), fast-pass speed-ups off", [*base, "--check", str(f)], fast_off,
                          None),
                         ("--check --max-file-size 0, fast-pass speed-ups off",
                          [*base, "--check", "--max-file-size", "0", str(f)], fast_off, None)]
            if a.only:
                words = a.only.split(",")
                rows = [r for r in rows if any(w in r[0] for w in words)]
            got: dict = {name: [] for name, *_ in rows}
            for _ in range(a.reps):
                for name, cmd, env, fresh in rows:
                    if got[name] and got[name][-1]["rc"] is None:
                        continue  # cut off once: not again
                    if fresh is not None:
                        shutil.copyfile(f, fresh)
                    got[name].append(measure(cmd, a.timeout, env))
            for name, *_ in rows:
                ms = got[name]
                cut = any(m["rc"] is None for m in ms)
                wall = statistics.median(m["wall"] for m in ms)
                cpu = statistics.median(m["cpu"] for m in ms)
                peak = statistics.median(m["peak_mb"] for m in ms)
                rc = "cut off" if cut else "/".join(sorted({str(m["rc"]) for m in ms}))
                shown = f"> {wall:.1f}" if cut else f"{wall:.2f}"
                per = f"{1000 * cpu / n:.2f}" if n else "-"
                print(f"| {label} | {n} | `{name}` | {shown} | {cpu:.2f} | {per} | {rc} | {peak:.0f} |", flush=True)
            if not a.keep:
                f.unlink()
                copy.unlink(missing_ok=True)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
