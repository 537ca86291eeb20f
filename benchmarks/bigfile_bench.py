#!/usr/bin/env python3
"""Big single files: `cpasync-migrate --check` on generated 1, 5 and 50 MB Python files.

    python benchmarks/bigfile_bench.py [--sizes 1,5,50] [--timeout 120] [--keep DIR]

Each file is a module of many small legacy TileLang kernels (one `T.ptx_cp_async` call each).
For every size it times, in one run:

  grep -l ptx_cp_async FILE                       the named baseline (reads the file once)
  cpasync-migrate --check --no-cache FILE         the default size limit (files over it are a
                                                  CPA900 error naming the file and the limit)
  cpasync-migrate --check --no-cache --max-file-size 0 FILE
                                                  the whole file analysed (no limit), under
                                                  --timeout seconds: a run cut off is printed
                                                  as such, with the time and memory it had reached

and prints wall seconds, the exit code, and peak memory: the largest sum of resident set sizes
over the command's process tree (sampled every 5 ms from /proc).
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

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


def generate(path: Path, megabytes: int) -> int:
    """Write a module of about ``megabytes`` MB; returns the number of kernels."""
    target = megabytes * 1_000_000
    with open(path, "w", encoding="utf-8") as f:
        f.write("import tilelang.language as T\n")
        size, i = 0, 0
        while size < target:
            chunk = KERNEL.format(i=i)
            f.write(chunk)
            size += len(chunk)
            i += 1
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


def measure(cmd: list[str], timeout: float) -> dict:
    """Wall seconds, exit code (None: cut off at ``timeout``) and peak process-tree RSS of ``cmd``."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
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
    stop.set()
    th.join()
    return {"wall": wall, "rc": rc, "peak_mb": peak / 1e6}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1,5,50", help="file sizes in MB (default 1,5,50)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds before a run is cut off (default 120)")
    ap.add_argument("--keep", metavar="DIR", help="generate the files here and keep them")
    a = ap.parse_args()
    exe = shutil.which("cpasync-migrate") or str(Path(sys.executable).with_name("cpasync-migrate"))
    work = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="cpasync-bigfile-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {platform.node()}; "
          f"{os.cpu_count()} CPUs; Python {platform.python_version()}; timeout {a.timeout:.0f} s")
    print("| file | kernels | command | wall s | exit | peak MB (process tree) |")
    print("| --- | ---: | --- | ---: | ---: | ---: |")
    env_cmd = [exe, "--check", "--no-cache", "-j", "1"]
    try:
        for mb in (int(x) for x in a.sizes.split(",")):
            f = work / f"big_{mb}mb.py"
            n = generate(f, mb)
            label = f"{f.stat().st_size / 1e6:.1f} MB"
            rows = [("grep -l ptx_cp_async", ["grep", "-l", "ptx_cp_async", str(f)]),
                    ("--check (default limit)", [*env_cmd, str(f)]),
                    ("--check --max-file-size 0", [*env_cmd, "--max-file-size", "0", str(f)])]
            for name, cmd in rows:
                m = measure(cmd, a.timeout)
                rc = "cut off" if m["rc"] is None else str(m["rc"])
                wall = f"> {m['wall']:.1f}" if m["rc"] is None else f"{m['wall']:.2f}"
                print(f"| {label} | {n} | `{name}` | {wall} | {rc} | {m['peak_mb']:.0f} |", flush=True)
            if not a.keep:
                f.unlink()
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
