"""Run the lowered old and new form of each kernel on an NVIDIA GPU and compare every output bit.

Needs numpy and cupy (``cupy-cuda12x`` or ``cupy-cuda13x``) and nothing else: no libcst, no tree-sitter.
It consumes a *bundle* (its contract: :mod:`.bundle_format` and docs/gpu.md) written on the CPU side by
:mod:`.bundle`, and imports nothing of the migration's front ends (libcst, tree-sitter, the engine; the
test is tests/test_verify_imports.py):

    python -m cpasync_migrate.verify.gpu BUNDLE_DIR [--json OUT.json] [--seeds N]

For each kernel the runner

* compiles both forms with NVRTC for the GPU's own architecture, many kernels to one module, and keeps
  the binaries in an on-disk cache keyed by the SHA-256 of the source, the options, the architecture and
  the NVRTC version (``~/.cache/cpasync-migrate/cubin``, or ``$CPASYNC_MIGRATE_CUBIN_CACHE``);
* lays all parameters out in one device arena, each between guard bytes, and fills inputs on the device
  from a counter-based hash of (seed, parameter): NaN payloads of both signs, signed zeros and
  infinities in float inputs (about one element in 16), all byte values in 8-bit types, 0..1023 in wider
  integers; outputs are pre-filled with a sentinel byte (0xA5, then 0xFF), and so is on-chip memory (the
  lowering's ``prefill`` option);
* for every seed runs the old form twice (determinism), then the new form, and compares the whole
  arenas byte for byte (guards included, so a write outside a buffer shows);
* where the bundle carries the CPU interpreter's output of the old form for the same inputs, compares
  the GPU's old form with it (``crosscheck``).

Verdicts are those of the CPU verifier: ``equivalent``, ``mismatch`` (with the first differing element),
``inconclusive`` (with the reason).  The per-site static checks travel in the bundle and take part in
the verdict exactly as in :func:`cpasync_migrate.verify.verify_source`.

A kernel that faults (illegal or misaligned address) leaves the CUDA context unusable, so kernels run in
a worker process; when one faults the worker records it and a fresh worker goes on with the next kernel.
"""
from __future__ import annotations

if __name__ == "__main__":  # a program: nothing of the current folder or of PYTHONPATH's entries in it is imported
    from cpasync_migrate.syspath import drop_unsafe

    drop_unsafe()

import argparse  # noqa: E402
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Optional

import numpy as np

from .bundle_format import (
    GEN_SOURCE, GUARD_BYTE, KINDS, SENTINELS, arena_layout, buffer_key, expected_key, input_kind, itemsize_of,
    load_bundle, read_member,
)
from .interp import fmt_value  # the CPU verifier's format, so that both report values alike

CHUNK = 24  # kernel pairs compiled into one module
FAULT_EXIT = 3
NO_GPU_EXIT = 4
OPTIONS = ("-std=c++17",)

STDINT_SHIM = """#if defined(__CUDACC_RTC__) && !__has_include(<stdint.h>)
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
#else
#include <stdint.h>
#endif
"""


# ---------------------------------------------------------------------------------------------- verdicts
def static_verdict(item: dict) -> tuple[str, str]:
    """(verdict, reason) of the per-site checks carried in the bundle."""
    sites = item.get("sites") or []
    bad = next((s for s in sites if s.get("verdict") == "mismatch"), None)
    if bad is not None:
        return "mismatch", f"site at line {bad.get('line')}: {bad.get('reason')}"
    unk = next((s for s in sites if s.get("verdict") == "inconclusive"), None)
    if unk is not None:
        return "inconclusive", f"site at line {unk.get('line')}: {unk.get('reason')}"
    return "equivalent", f"{len(sites)} cp.async site(s) proven"


def combine(item: dict, gpu: dict, cross: dict) -> tuple[str, str]:
    """The kernel's verdict from the site checks, the device run and the interpreter cross-check."""
    sv, sr = static_verdict(item)
    gv, gr = gpu.get("verdict"), gpu.get("reason", "")
    if item.get("decided"):
        v, r = item["decided"]["verdict"], item["decided"]["reason"]
        if v != "mismatch" and sv == "mismatch":
            return "mismatch", sr
        return v, r
    if gv == "mismatch":
        return "mismatch", gr
    if sv == "mismatch":
        return "mismatch", sr
    if gv == "inconclusive":
        return "inconclusive", gr
    if cross.get("status") == "disagree":
        return "inconclusive", f"the GPU and the CPU interpreter disagree on the old form: {cross.get('reason')}"
    if cross.get("status") == "interpreter-error":
        return "inconclusive", f"the old form fails in the CPU interpreter: {cross.get('reason')}"
    if sv == "inconclusive":
        return "inconclusive", sr
    return "equivalent", f"{sr}; {gr}"


# ---------------------------------------------------------------------------------------------- device
class Device:
    """The GPU side: compilation (with the on-disk cache), arenas, launches, comparisons."""

    def __init__(self, cache_dir: Optional[str] = None, use_cache: bool = True):
        import cupy

        self.cp = cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("no CUDA device")
        self.dev = cupy.cuda.Device()
        self.arch = str(self.dev.compute_capability)
        props = cupy.cuda.runtime.getDeviceProperties(self.dev.id)
        name = props.get("name", b"")
        self.name = name.decode() if isinstance(name, bytes) else str(name)
        try:
            from cupy_backends.cuda.libs import nvrtc

            self.nvrtc_version = ".".join(map(str, nvrtc.getVersion()))
        except Exception:  # noqa: BLE001
            self.nvrtc_version = "unknown"
        self.driver_version = cupy.cuda.runtime.driverGetVersion()
        self.runtime_version = cupy.cuda.runtime.runtimeGetVersion()
        self.cache_dir = cache_dir or os.environ.get("CPASYNC_MIGRATE_CUBIN_CACHE") or os.path.join(
            os.path.expanduser("~"), ".cache", "cpasync-migrate", "cubin")
        self.use_cache = use_cache
        self.stats = {"compile_s": 0.0, "load_s": 0.0, "cache_hits": 0, "cache_misses": 0, "modules": 0}
        self._gen = self.module_for(GEN_SOURCE).get_function("cpm_gen_inputs")

    # -------------------------------------------------------------- compilation
    def include_dirs(self) -> list:
        out = []
        try:
            p = self.cp.cuda.get_cuda_path()
            if p:
                out.append(os.path.join(p, "include"))
        except Exception:  # noqa: BLE001
            pass
        for p in (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
            if p:
                out.append(os.path.join(p, "include"))
        seen, res = set(), []
        for d in out:
            if d not in seen and os.path.exists(os.path.join(d, "cuda_fp16.h")):
                seen.add(d)
                res.append(d)
        return res

    def cache_key(self, source: str) -> str:
        h = hashlib.sha256()
        for part in (self.arch, self.nvrtc_version, " ".join(OPTIONS), source):
            h.update(part.encode())
            h.update(b"\0")
        return h.hexdigest()

    def compile(self, source: str) -> tuple[str, bool, float]:
        """Path of the binary for ``source`` (compiled now or found in the cache), hit?, seconds spent."""
        key = self.cache_key(source)
        os.makedirs(self.cache_dir, exist_ok=True)
        for ext in (".cubin", ".ptx"):
            path = os.path.join(self.cache_dir, key + ext)
            if self.use_cache and os.path.exists(path):
                return path, True, 0.0
        from cupy.cuda import compiler

        t0 = time.perf_counter()
        opts = OPTIONS + tuple(f"-I{d}" for d in self.include_dirs())
        res = compiler.compile_using_nvrtc(source, opts, arch=self.arch, cache_in_memory=True)
        binary = res[0] if isinstance(res, tuple) else res
        if isinstance(binary, str):
            binary = binary.encode()
        dt = time.perf_counter() - t0
        ext = ".cubin" if binary[:4] == b"\x7fELF" else ".ptx"
        path = os.path.join(self.cache_dir, key + ext)
        fd, tmp = tempfile.mkstemp(dir=self.cache_dir, suffix=ext)
        with os.fdopen(fd, "wb") as f:
            f.write(binary)
        os.replace(tmp, path)
        return path, False, dt

    def module_for(self, source: str):
        path, hit, dt = self.compile(source)
        self.stats["compile_s"] += dt
        self.stats["cache_hits" if hit else "cache_misses"] += 1
        t0 = time.perf_counter()
        mod = self.cp.RawModule(path=path)
        self.stats["load_s"] += time.perf_counter() - t0
        self.stats["modules"] += 1
        return mod

    # -------------------------------------------------------------- data
    def gen_into(self, view, dtype: str, itemsize: int, numel: int, seed: int, index: int):
        kind = KINDS[input_kind(dtype, itemsize)]
        threads = 256
        blocks = max(1, min(4096, -(-numel // threads)))
        self._gen((blocks,), (threads,), (view, np.int64(numel), np.int32(kind), np.int32(itemsize),
                                          np.uint64(buffer_key(seed, index))))


def prepare_source(src: str) -> str:
    return src.replace("#include <stdint.h>\n", STDINT_SHIM, 1)


class ItemRunner:
    """Runs one bundle item (both forms, all seeds and sentinels) on the device.

    Memory: by default one arena per run holding every parameter between guard bytes (one copy, one
    comparison, writes outside a buffer show in the guards); with ``separate`` one allocation per
    parameter, so that compute-sanitizer's memcheck sees each buffer's exact bounds."""

    def __init__(self, dev: Device, bundle: dict, item: dict, kernels: dict, seeds: int, log, separate=False):
        self.dev, self.bundle, self.item, self.kernels, self.seeds, self.log = dev, bundle, item, kernels, seeds, log
        self.cp = dev.cp
        self.params = item["params"]
        self.separate = separate
        self.offs, self.size = arena_layout(self.params)

    # memory: an arena (one array) or a list of per-parameter arrays
    def alloc(self):
        cp = self.cp
        if self.separate:
            return [cp.empty(int(p["bytes"]), dtype=cp.uint8) for p in self.params]
        return cp.empty(self.size, dtype=cp.uint8)

    def views(self, mem) -> list:
        if self.separate:
            return list(mem)
        return [mem[o:o + int(p["bytes"])] for p, o in zip(self.params, self.offs)]

    def copy(self, dst, src):
        if self.separate:
            for d, s_ in zip(dst, src):
                self.cp.copyto(d, s_)
        else:
            self.cp.copyto(dst, src)

    def differ(self, a, b) -> bool:
        if self.separate:
            return any(bool((x != y).any()) for x, y in zip(a, b))
        return bool((a != b).any())

    def launch(self, form: str, mem, sentinel: int):
        cp = self.cp
        it = self.item
        kern = self.kernels[form]
        dyn = int(it["launch"].get("dynamic_shared_bytes", 0))
        if dyn:
            kern.max_dynamic_shared_size_bytes = dyn
        args = self.views(mem)
        if it.get("prefill"):
            args.append(np.uint32(sentinel))
        kern(tuple(it["launch"]["grid"]), tuple(it["launch"]["block"]), tuple(args), shared_mem=dyn)
        cp.cuda.runtime.deviceSynchronize()

    def template(self, seed: int, sentinel: int):
        cp = self.cp
        if self.separate:
            t = self.alloc()
        else:
            t = cp.full(self.size, GUARD_BYTE, dtype=cp.uint8)
        for i, (p, view) in enumerate(zip(self.params, self.views(t))):
            if p["role"] == "output":
                view.fill(sentinel)
            else:
                isz = itemsize_of(p)
                self.dev.gen_into(view, p["dtype"], isz, int(p["bytes"]) // isz, seed, i)
        return t

    def first_difference(self, a, b) -> dict:
        cp = self.cp
        for p, x, y in zip(self.params, self.views(a), self.views(b)):
            neq = x != y
            if not bool(neq.any()):
                continue
            isz = itemsize_of(p)
            byte = int(cp.argmax(neq))
            elem = byte // isz
            n = int(p["bytes"]) // isz
            diff = int(cp.count_nonzero(neq[:n * isz].reshape(n, isz).any(axis=1)))
            ha = cp.asnumpy(x[elem * isz:(elem + 1) * isz]).tobytes()
            hb = cp.asnumpy(y[elem * isz:(elem + 1) * isz]).tobytes()
            shape = tuple(p["shape"]) or (n,)
            idx = [int(i) for i in np.unravel_index(elem, shape)]
            return {"buffer": p["name"], "index": idx, "old": fmt_value(ha, p["dtype"]),
                    "new": fmt_value(hb, p["dtype"]), "differing_elements": diff}
        # only guard bytes differ: one form wrote outside its buffers
        neq = a != b
        byte = int(cp.argmax(neq))
        return {"buffer": "<guard>", "index": [byte], "old": f"0x{int(a[byte]):02x}", "new": f"0x{int(b[byte]):02x}",
                "differing_elements": int(cp.count_nonzero(neq))}

    def crosscheck(self, mem, expected: dict, seed: int, sentinel: int) -> Optional[dict]:
        """Compare the GPU's old-form outputs with the interpreter's; None when they agree."""
        cp = self.cp
        for p, view in zip(self.params, self.views(mem)):
            key = expected_key(seed, sentinel, p["name"])
            if key not in expected:
                continue
            want = expected[key]
            got = cp.asnumpy(view)
            if not np.array_equal(got, want):
                isz = itemsize_of(p)
                bad = np.nonzero(got != want)[0]
                elem = int(bad[0]) // isz
                shape = tuple(p["shape"]) or (int(p["bytes"]) // isz,)
                idx = [int(i) for i in np.unravel_index(elem, shape)]
                return {"buffer": p["name"], "index": idx, "seed": seed, "sentinel": f"0x{sentinel:02x}",
                        "gpu": fmt_value(got[elem * isz:(elem + 1) * isz].tobytes(), p["dtype"]),
                        "interpreter": fmt_value(want[elem * isz:(elem + 1) * isz].tobytes(), p["dtype"]),
                        "differing_elements": int(len(np.unique(bad // isz)))}
        return None

    def run(self) -> tuple[dict, dict]:
        it = self.item
        expected = {}
        if it.get("crosscheck", {}).get("file"):
            with np.load(os.path.join(self.bundle["dir"], it["crosscheck"]["file"])) as z:
                expected = {k: z[k] for k in z.files}
        cross = {"status": "skipped", "reason": it.get("crosscheck", {}).get("reason", "no interpreter output")}
        if it.get("crosscheck", {}).get("interpreter_error"):
            cross = {"status": "interpreter-error", "reason": it["crosscheck"]["interpreter_error"]}
        checked = 0
        a_old, a_old2, a_new = self.alloc(), self.alloc(), self.alloc()
        runs = 0

        def fire(mem, form: str, phase: str) -> None:
            """One launch of ``form`` on a fresh copy of this seed's and sentinel's inputs in ``mem``."""
            nonlocal runs
            self.copy(mem, tpl)
            self.log(phase, seed, sentinel)
            self.launch(form, mem, sentinel)
            runs += 1

        for seed in range(self.seeds):
            for si, sentinel in enumerate(SENTINELS):
                ctx = {"seed": seed, "sentinel": f"0x{sentinel:02x}"}
                tpl = self.template(seed, sentinel)
                fire(a_old, "old", "old")
                if si == 0:
                    fire(a_old2, "old", "old2")
                    if self.differ(a_old, a_old2):
                        d = self.first_difference(a_old, a_old2)
                        d.update(ctx)
                        return ({"verdict": "inconclusive", "runs": runs, "nondeterministic": d,
                                 "reason": f"the old form is not deterministic: {d['buffer']}{d['index']} is "
                                           f"{d['old']} or {d['new']} in two runs (seed {seed})"}, cross)
                if expected and cross["status"] != "interpreter-error":
                    bad = self.crosscheck(a_old, expected, seed, sentinel)
                    if bad is not None and cross["status"] != "disagree":
                        cross = {"status": "disagree", "detail": bad,
                                 "reason": f"{bad['buffer']}{bad['index']}: GPU {bad['gpu']}, interpreter "
                                           f"{bad['interpreter']} (seed {seed}, sentinel {bad['sentinel']})"}
                    elif bad is None and any(k.startswith(expected_key(seed, sentinel)) for k in expected):
                        checked += 1
                fire(a_new, "new", "new")
                if self.differ(a_old, a_new):
                    d = self.first_difference(a_old, a_new)
                    d.update(ctx)
                    return ({"verdict": "mismatch", "runs": runs, "first_difference": d,
                             "reason": f"{d['buffer']}{d['index']}: old {d['old']}, new {d['new']} (seed {seed}, "
                                       f"sentinel {ctx['sentinel']}, {d['differing_elements']} elements differ)"},
                            cross)
        if checked and cross["status"] == "skipped":
            cross = {"status": "agree", "runs": checked,
                     "reason": f"old form equal to the interpreter's output bit for bit in {checked} run(s)"}
        return ({"verdict": "equivalent", "runs": runs,
                 "reason": f"outputs equal bit for bit on the GPU over {self.seeds} seeds x {len(SENTINELS)} "
                           f"sentinels"}, cross)


# ---------------------------------------------------------------------------------------------- worker
def _entry_sources(bundle: dict, item: dict) -> dict:
    out = {}
    for form in ("old", "new"):
        src = read_member(bundle["dir"], item.get("cuda", {}).get(form))
        if src is not None:
            out[form] = src
    return out


def worker(bundle_dir: str, results: str, start: int, seeds: Optional[int], cache_dir: Optional[str],
           use_cache: bool, jobs: int, separate: bool = False) -> int:
    """Run items ``start..`` of the bundle, appending one JSON line per event to ``results``."""
    bundle = load_bundle(bundle_dir)
    items = bundle["items"]
    seeds = seeds or int(bundle.get("seeds", 3))
    out = open(results, "a", encoding="utf-8")

    def emit(obj):
        out.write(json.dumps(obj) + "\n")
        out.flush()

    try:
        dev = Device(cache_dir, use_cache)
        if separate:
            dev.cp.cuda.set_allocator(None)  # plain cudaMalloc per buffer: exact bounds for memcheck
    except Exception as e:  # noqa: BLE001
        emit({"type": "nogpu", "reason": f"{type(e).__name__}: {e}"})
        return NO_GPU_EXIT
    emit({"type": "device", "name": dev.name, "arch": f"sm_{dev.arch}", "nvrtc": dev.nvrtc_version,
          "driver": dev.driver_version, "runtime": dev.runtime_version, "cupy": dev.cp.__version__,
          "cache_dir": dev.cache_dir})
    runnable = [i for i, it in enumerate(items) if not it.get("decided")]
    # chunks are fixed by position among the runnable items, so a restarted worker finds its modules cached
    chunks = [runnable[k:k + CHUNK] for k in range(0, len(runnable), CHUNK)]
    chunk_of = {i: c for c in chunks for i in c}
    need = [c for c in chunks if c[-1] >= start]

    compiled = _compile_chunks(dev, bundle, need, jobs, emit)
    modules: dict = {}

    for i in range(start, len(items)):
        it = items[i]
        if it.get("decided"):
            emit({"type": "result", "index": i, "id": it["id"], "gpu": {"verdict": None, "reason": "not run"},
                  "cross": {"status": "skipped", "reason": "not run"}, "run_s": 0.0})
            continue
        emit({"type": "begin", "index": i, "id": it["id"]})
        t = time.perf_counter()
        try:
            kernels, errs = _kernels_for(dev, bundle, it, tuple(chunk_of[i]), compiled, modules)
        except Exception as e:  # noqa: BLE001
            kernels, errs = {}, {"old": _one_line(str(e))}
        if errs:
            if "old" in errs:
                gpu = {"verdict": "inconclusive", "reason": f"the old form does not compile: {errs['old'][:300]}"}
            else:
                gpu = {"verdict": "mismatch", "reason": f"the new form does not compile where the old one does: "
                                                        f"{errs['new'][:300]}"}
            emit({"type": "result", "index": i, "id": it["id"], "gpu": gpu,
                  "cross": {"status": "skipped", "reason": "not compiled"}, "run_s": time.perf_counter() - t})
            continue

        phase = {"p": "old"}

        def log(form, seed, sentinel):
            phase["p"] = form
            emit({"type": "phase", "index": i, "form": form, "seed": seed, "sentinel": sentinel})

        runner = ItemRunner(dev, bundle, it, kernels, seeds, log, separate)
        try:
            gpu, cross = runner.run()
        except Exception as e:  # noqa: BLE001 - a fault poisons the context: record it and let a new worker go on
            emit({"type": "fault", "index": i, "id": it["id"], "form": phase["p"], "error": _one_line(str(e))})
            return FAULT_EXIT
        emit({"type": "result", "index": i, "id": it["id"], "gpu": gpu, "cross": cross,
              "run_s": time.perf_counter() - t})
    emit({"type": "done", "stats": dev.stats})
    out.close()
    return 0


def _compile_chunks(dev, bundle: dict, need: list, jobs: int, emit) -> dict:
    """Compile every chunk still needed, in ``jobs`` threads (NVRTC runs on the CPU), before the first launch,
    and emit the ``compile`` event: ``{chunk: (module path, cache hit, cpu seconds)}`` of those that compiled."""
    items = bundle["items"]

    def chunk_source(c):
        parts = []
        for i in c:
            for src in _entry_sources(bundle, items[i]).values():
                parts.append(prepare_source(src))
        return "\n".join(parts)

    t0 = time.perf_counter()
    compiled: dict = {}
    failed: dict = {}

    def comp(c):
        try:
            return tuple(c), dev.compile(chunk_source(c)), None
        except Exception as e:  # noqa: BLE001
            return tuple(c), None, e

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for key, res, err in pool.map(comp, need):
            if err is None:
                compiled[key] = res
            else:
                failed[key] = err
    compile_wall = time.perf_counter() - t0
    hits = sum(1 for r in compiled.values() if r[1])
    emit({"type": "compile", "chunks": len(need), "cache_hits": hits, "cache_misses": len(compiled) - hits,
          "failed_chunks": len(failed), "wall_s": compile_wall,
          "cpu_s": sum(r[2] for r in compiled.values())})
    return compiled


def _kernels_for(dev, bundle: dict, it: dict, c: tuple, compiled: dict, modules: dict) -> tuple[dict, dict]:
    """The item's two entry functions from its chunk's module (loaded once into ``modules``), or, when the
    chunk failed to compile, from each form compiled alone: ``({form: function}, {form: error})``."""
    lk = it["launch"]
    if c in compiled:
        if c not in modules:
            t = time.perf_counter()
            modules[c] = dev.cp.RawModule(path=compiled[c][0])
            dev.stats["load_s"] += time.perf_counter() - t
        mod = modules[c]
        return {"old": mod.get_function(lk["old_entry"]), "new": mod.get_function(lk["new_entry"])}, None
    # the chunk failed: compile this item's forms alone to find out which one the compiler refuses
    ks, errs = {}, {}
    for form, src in _entry_sources(bundle, it).items():
        try:
            ks[form] = dev.module_for(prepare_source(src)).get_function(lk[f"{form}_entry"])
        except Exception as e:  # noqa: BLE001
            errs[form] = _one_line(str(e))
    return ks, errs


def _one_line(s: str) -> str:
    return " ".join(s.split())


def fault_verdict(form: str, error: str) -> dict:
    if form in ("old", "old2"):
        return {"verdict": "inconclusive", "reason": f"the old form faults on the GPU: {error}"}
    return {"verdict": "mismatch", "reason": f"the new form faults on the GPU where the old one runs: {error}"}


# ---------------------------------------------------------------------------------------------- driver
def run_bundle(bundle_dir: str, *, seeds: Optional[int] = None, cache_dir: Optional[str] = None,
               use_cache: bool = True, jobs: Optional[int] = None, python: Optional[str] = None,
               progress=None, separate: bool = False) -> dict:
    """Run every item of the bundle in worker processes; returns the report (see docs/gpu.md)."""
    bundle = load_bundle(bundle_dir)
    items = bundle["items"]
    jobs = jobs or min(16, os.cpu_count() or 1)
    results: dict = {}
    device: dict = {}
    compile_events: list = []
    stats_all: list = []
    faults = 0
    start = 0
    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "events.jsonl")
        read_pos = 0
        while start < len(items):
            cmd, env = _worker_command(python, bundle_dir, log, start, jobs, seeds, cache_dir, use_cache, separate)
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tmp)
            with open(log, encoding="utf-8") as f:
                f.seek(read_pos)
                lines = f.read().splitlines()
                read_pos = f.tell()
            last_phase: dict = {}
            nogpu = None
            for ln in lines:
                try:
                    ev = json.loads(ln)
                except ValueError:
                    continue
                t = ev.get("type")
                if t == "device":
                    device = ev
                elif t == "nogpu":
                    nogpu = ev["reason"]
                elif t == "compile":
                    compile_events.append(ev)
                elif t == "phase":
                    last_phase[ev["index"]] = ev["form"]
                elif t == "begin":
                    last_phase.setdefault(ev["index"], "compile")
                elif t == "result":
                    results[ev["index"]] = ev
                    if progress:
                        progress(ev["index"], len(items))
                elif t == "fault":
                    faults += 1
                    results[ev["index"]] = {"index": ev["index"], "id": ev["id"],
                                            "gpu": fault_verdict(ev["form"], ev["error"]),
                                            "cross": {"status": "skipped", "reason": "faulted"}, "run_s": 0.0,
                                            "fault": ev}
                elif t == "done":
                    stats_all.append(ev["stats"])
            if nogpu is not None:
                raise RuntimeError(f"no GPU for the runner: {nogpu}")
            done = [i for i in results if i >= start]
            nxt = max(done) + 1 if done else start
            if proc.returncode != 0 and nxt < len(items) and nxt not in results:
                # the worker died inside item nxt without reporting it (a crash rather than a CUDA error)
                if nxt in last_phase:
                    faults += 1
                    tail = _one_line(proc.stderr[-400:]) or f"worker exited with {proc.returncode}"
                    results[nxt] = {"index": nxt, "id": items[nxt]["id"],
                                    "gpu": fault_verdict(last_phase[nxt], tail),
                                    "cross": {"status": "skipped", "reason": "faulted"}, "run_s": 0.0}
                    nxt += 1
                elif not done:
                    raise RuntimeError(f"the GPU worker failed before its first kernel: "
                                       f"{proc.stderr[-2000:] or proc.stdout[-2000:]}")
            if proc.returncode == 0 and nxt <= start:
                break
            start = nxt
    wall = time.perf_counter() - t_all
    return build_report(bundle, results, device, compile_events, stats_all, faults, wall)


def _worker_command(python, bundle_dir: str, log: str, start: int, jobs: int, seeds, cache_dir, use_cache: bool,
                    separate: bool) -> tuple[list, dict]:
    """The command line and environment of one worker process (``run_bundle``'s options as its flags)."""
    # -P and an empty working folder: nothing of the current folder or the scanned tree is importable
    cmd = [python or sys.executable, "-P", "-m", "cpasync_migrate.verify.gpu", "--worker",
           os.path.abspath(bundle_dir),
           "--results", log, "--start", str(start), "--jobs", str(jobs)]
    if seeds:
        cmd += ["--seeds", str(seeds)]
    if cache_dir:
        cmd += ["--cache", os.path.abspath(cache_dir)]
    if not use_cache:
        cmd += ["--no-cache"]
    if separate:
        cmd += ["--separate-buffers"]
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return cmd, env


def build_report(bundle: dict, results: dict, device: dict, compile_events: list, stats_all: list, faults: int,
                 wall: float) -> dict:
    rows = []
    for i, it in enumerate(bundle["items"]):
        r = results.get(i) or {"gpu": {"verdict": "inconclusive", "reason": "not run (the runner stopped)"},
                               "cross": {"status": "skipped", "reason": "not run"}, "run_s": 0.0}
        verdict, reason = combine(it, r["gpu"], r["cross"])
        rows.append({
            "id": it["id"], "category": it.get("category", ""), "name": it.get("name", ""),
            "kernel": it.get("kernel"), "line": it.get("line"), "target": it.get("target"),
            "source": it.get("source"), "expect": it.get("expect"), "verdict": verdict, "reason": reason,
            "as_expected": (it.get("expect") in (None, verdict)),
            "gpu": r["gpu"], "static": dict(zip(("verdict", "reason"), static_verdict(it))),
            "crosscheck": r["cross"], "run_s": round(float(r.get("run_s", 0.0)), 6),
            "bytes": int(sum(int(p["bytes"]) for p in it.get("params", []))),
            "blocks": _prod(it.get("launch", {}).get("grid", [])), "threads": _prod(it.get("launch", {}).get("block", [])),
        })
    summary: dict = {}
    for r in rows:
        c = summary.setdefault(r["category"], {"equivalent": 0, "mismatch": 0, "inconclusive": 0, "total": 0,
                                               "as_expected": 0, "crosscheck_agree": 0})
        c[r["verdict"]] += 1
        c["total"] += 1
        c["as_expected"] += int(r["as_expected"])
        c["crosscheck_agree"] += int(r["crosscheck"].get("status") == "agree")
    compile_wall = sum(e.get("wall_s", 0.0) for e in compile_events)
    run_s = sum(r["run_s"] for r in rows)
    return {
        "format": "cpasync-migrate-gpu-report", "version": 1, "bundle": bundle.get("meta", {}),
        "device": device, "seeds": bundle.get("seeds"), "sentinels": [f"0x{s:02x}" for s in SENTINELS],
        "summary": summary,
        "totals": {"kernels": len(rows), "as_expected": sum(r["as_expected"] for r in rows),
                   "unexpected": [r["id"] for r in rows if not r["as_expected"]], "faults": faults,
                   "wall_s": round(wall, 3), "compile_wall_s": round(compile_wall, 3), "run_s": round(run_s, 3),
                   "compile_events": compile_events, "worker_stats": stats_all},
        "kernels": rows,
    }


def _prod(xs) -> int:
    n = 1
    for x in xs:
        n *= int(x)
    return n


def summary_table(report: dict) -> str:
    cols = ("equivalent", "mismatch", "inconclusive", "total", "as_expected", "crosscheck_agree")
    head = ["category"] + list(cols)
    rows = [[cat] + [str(v[c]) for c in cols] for cat, v in sorted(report["summary"].items())]
    tot = ["all"] + [str(sum(v[c] for v in report["summary"].values())) for c in cols]
    rows.append(tot)
    w = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
    line = lambda r: "  ".join(x.ljust(w[i]) if i == 0 else x.rjust(w[i]) for i, x in enumerate(r))  # noqa: E731
    d = report.get("device", {})
    t = report["totals"]
    drv = d.get("driver")
    drv = f"{drv // 1000}.{drv % 1000 // 10}" if isinstance(drv, int) else "?"
    out = [f"device: {d.get('name', '?')} ({d.get('arch', '?')}), CUDA driver API {drv}, "
           f"NVRTC {d.get('nvrtc', '?')}, cupy {d.get('cupy', '?')}",
           line(head), line(["-" * x for x in w])]
    out += [line(r) for r in rows[:-1]] + [line(["-" * x for x in w]), line(rows[-1])]
    out.append(f"{t['kernels']} kernels, {t['as_expected']} as expected, {len(t['unexpected'])} unexpected, "
               f"{t['faults']} faulting run(s); wall {t['wall_s']:.1f} s (compile {t['compile_wall_s']:.1f} s, "
               f"kernels {t['run_s']:.1f} s)")
    for r in report["kernels"]:
        if not r["as_expected"]:
            out.append(f"UNEXPECTED {r['id']} {r['category']} {r['name']} {r['kernel']}: expected {r['expect']}, "
                       f"got {r['verdict']}: {r['reason']}")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cpasync_migrate.verify.gpu",
                                 description="Run a cpasync-migrate GPU bundle: both forms of every kernel, "
                                             "compared bit for bit on the device.")
    ap.add_argument("bundle", help="bundle directory (written by --emit-bundle or tests/gpu_evidence.py)")
    ap.add_argument("--json", metavar="FILE", help="write the full report as JSON")
    ap.add_argument("--table", metavar="FILE", help="also write the summary table to FILE")
    ap.add_argument("--seeds", type=int, help="number of input seeds (default: the bundle's)")
    ap.add_argument("--cache", metavar="DIR", help="compile cache directory")
    ap.add_argument("--no-cache", action="store_true", help="compile everything afresh (the cache is still written)")
    ap.add_argument("--jobs", type=int, default=None, help="compiler threads")
    ap.add_argument("--separate-buffers", action="store_true",
                    help="one allocation per parameter instead of a guarded arena (for compute-sanitizer memcheck)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--results", help=argparse.SUPPRESS)
    ap.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        return worker(a.bundle, a.results, a.start, a.seeds, a.cache, not a.no_cache, a.jobs or 1, a.separate_buffers)
    try:
        report = run_bundle(a.bundle, seeds=a.seeds, cache_dir=a.cache, use_cache=not a.no_cache, jobs=a.jobs,
                            separate=a.separate_buffers)
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    table = summary_table(report)
    print(table)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
    if a.table:
        with open(a.table, "w", encoding="utf-8") as f:
            f.write(table + "\n")
    return 0 if not report["totals"]["unexpected"] else 1


if __name__ == "__main__":
    sys.exit(main())
