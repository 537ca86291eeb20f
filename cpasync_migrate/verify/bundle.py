"""GPU bundles, written on the CPU side: everything the GPU runner needs and nothing it must parse.

The bundle's layout, and what the writer and the runner share, is :mod:`.bundle_format`.  Here the
kernels of two texts are lowered into bundle items (:func:`kernel_items`) and written out
(:func:`write_bundle`).

An item: ``id``, ``category``, ``name``, ``kernel``, ``line``, ``target``, ``source``, ``expect`` (the
verdict the item must get, or null), ``launch`` (grid, block, entries, shared bytes), ``params``
(name, dtype, shape, ctype, bytes, role), ``prefill``, ``sites`` (the per-site static checks),
``unchanged``, ``crosscheck`` (``file`` or ``reason``), ``cuda`` (``old``/``new`` file names), and
``decided`` (``{verdict, reason}``) when the kernel cannot run at all (missing from the new text, an
unsupported construct, a copy into thread-local memory, a form the compiler rejects).

Build the evidence bundle of the repository::

    python -m cpasync_migrate.verify.bundle --fixtures tests/fixtures --examples examples \\
        --sweep tests/gpu_sweep.py --mutants tests/fixtures/verify -o .gpubundle

The runner (:mod:`.gpu`) needs only numpy and cupy.  This module needs the verifier (stdlib ``ast`` and
numpy); ``--examples`` also runs the migration engine (libcst).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import sys
import time
import tomllib
from concurrent.futures import ProcessPoolExecutor
from typing import Optional

import numpy as np

from .build import build_kernels
from .bundle_format import FORMAT, SENTINELS, VERSION, expected_key, host_inputs
from .cuda import FLOATS, Lowering, lower_pair
from .dynamic import signature
from .interp import Interpreter, KernelError, stmt_exprs
from .ir import Bin, Cast, Const, CopyRegion, CpAsync, Math, Store, Unary, Unsupported, show, walk_expr, walk_stmts
from .options import VerifyOptions
from .pairing import has_access_ptr_sites, pair_kernels, unchanged_text
from . import smem
from .sites import check_sites

CROSSCHECK_BYTES = 1 << 20  # parameters of at most this many bytes get the interpreter cross-check
CROSSCHECK_SEEDS = (0,)


# ---------------------------------------------------------------------------------------------- items
def float_arithmetic(k, rules, target) -> Optional[str]:
    """Why the GPU may legitimately round differently from the interpreter (None: data movement only).

    The lowering computes 16-bit floats in float32 and the device flushes NaN payloads in arithmetic, so
    kernels that do float arithmetic or float conversions are compared form against form on the device,
    never against the interpreter."""
    low = Lowering(k, rules, target, "old")
    try:
        low.lower()
    except Unsupported as e:
        return f"not lowered: {e}"
    for e in stmt_exprs(k.body):
        for x in walk_expr(e):
            t = type(x)
            if t in (Bin, Math) or (t is Unary and x.op == "neg"):
                if low.etype(x) in FLOATS:
                    return f"float arithmetic: {show(x)}"
            elif t is Cast:
                a = low.etype(x.a)
                if a != x.dtype and (a in FLOATS or x.dtype in FLOATS) and type(x.a) is not Const:
                    return f"float conversion: {show(x)}"
    for st in walk_stmts(k.body):
        if isinstance(st, Store) and type(st.value) is not Const:
            vt = low.etype(st.value)
            if vt != st.buf.dtype and (vt in FLOATS or st.buf.dtype in FLOATS):
                return f"float conversion storing into {st.buf.name}"
        elif isinstance(st, CopyRegion) and st.src.buf.dtype != st.dst.buf.dtype and (
                st.src.buf.dtype in FLOATS or st.dst.buf.dtype in FLOATS):
            return f"float conversion copying {st.src.buf.name} to {st.dst.buf.name}"
    return None


def interpreter_outputs(k, rules, widths, params: list) -> dict:
    """The interpreter's old-form output parameters for the runner's inputs (seed 0, both sentinels)."""
    outs = {p["name"] for p in params if p["role"] == "output"}
    interp = Interpreter(k, rules, widths)
    res = {}
    for seed in CROSSCHECK_SEEDS:
        inputs = {}
        for i, (b, p) in enumerate(zip(k.params, params)):
            inputs[b.name] = host_inputs(p["dtype"], b.itemsize, b.numel, seed, i)
        for sentinel in SENTINELS:
            data = {n: (np.full(v.size, sentinel, dtype=np.uint8) if n in outs else v) for n, v in inputs.items()}
            got = interp.run(data, sentinel)
            for n in outs:
                res[expected_key(seed, sentinel, n)] = np.asarray(got[n], dtype=np.uint8).copy()
    return res


def _json_clean(x):
    return json.loads(json.dumps(x, default=str))


def kernel_items(old_text: str, new_text: str, path: str, options: Optional[VerifyOptions] = None, *,
                 category: str = "file", name: Optional[str] = None, expect=None, **fields) -> list[dict]:
    """One bundle item per ``@T.prim_func`` of ``old_text`` (in memory: sources and arrays inline).

    ``options`` (or its fields as keywords: ``rules``, ``target``, ``source``, ``binds``,
    ``crosscheck_bytes``; see :class:`.options.VerifyOptions`) says what to verify; ``crosscheck_bytes``
    defaults to :data:`CROSSCHECK_BYTES`.  ``category`` and ``name`` label the items.  ``expect``: None,
    a verdict for every kernel, or ``{qualname: verdict}`` (``"*"``: the others)."""
    opts = VerifyOptions.of(options, **fields).resolved()
    rules, target, source, binds = opts.rules, opts.target, opts.source, opts.binds
    crosscheck_bytes = CROSSCHECK_BYTES if opts.crosscheck_bytes is None else opts.crosscheck_bytes
    widths = opts.widths()
    name = name or path

    def base(qual, line):
        e = expect.get(qual, expect.get("*")) if isinstance(expect, dict) else expect
        return {"category": category, "name": name, "kernel": qual, "line": line, "target": target.name,
                "source": source.name, "expect": e, "sites": [], "params": [], "launch": {}}

    try:
        old = build_kernels(old_text, rules, meaning=source.size_meaning, binds=binds)
    except SyntaxError as e:
        it = base("<file>", e.lineno or 0)
        it["decided"] = {"verdict": "inconclusive", "reason": f"the old text does not parse: {e.msg}"}
        return [it]
    try:
        new = build_kernels(new_text, rules, meaning=target.size_meaning, binds=binds)
    except SyntaxError as e:
        out = []
        for b in old:
            it = base(b.qualname, b.line)
            it["decided"] = {"verdict": "mismatch", "reason": f"the new text does not parse: {e.msg} (line {e.lineno})"}
            out.append(it)
        return out
    items = []
    for bo, bn in pair_kernels(old, new):
        it = base(bo.qualname, bo.line)
        items.append(it)
        if bn is None:
            it["decided"] = {"verdict": "mismatch", "reason": "the kernel is missing from the new text"}
            continue
        it["unchanged"] = bo.fingerprint == bn.fingerprint
        if unchanged_text(bo, bn, source, target) and (bo.error is not None or bo.kernel.unsupported):
            # as the CPU verifier: identical texts under the same meaning need no run (and this one cannot run)
            it["decided"] = {"verdict": "equivalent", "reason": "the kernel, the macros it can call and the "
                                                                "constants it sees are unchanged"}
            continue
        if bo.error is not None:
            it["decided"] = {"verdict": "inconclusive", "reason": f"old form: {bo.error}"}
            continue
        if bn.error is not None:
            it["decided"] = {"verdict": "inconclusive", "reason": f"new form: {bn.error}"}
            continue
        ko, kn = bo.kernel, bn.kernel
        # the legacy form's addresses depend on whether TileLang merged the kernel's shared memory
        # (smem.py); both texts are read under the one reading, and a kernel whose text leaves more
        # than one open is not run here (the CPU verifier checks every reading)
        plan = smem.plan(ko, rules)
        readings = smem.distinct_readings(ko, plan)
        reading = smem.default_reading(plan)
        smem.apply(ko, reading)
        smem.apply(kn, reading)
        if len(readings) > 1:
            it["decided"] = {"verdict": "inconclusive", "reason": "the text does not decide the shared-memory "
                                                                  "merge (" + "; ".join(plan.open) + ")"}
            continue
        if it["unchanged"] and (source.size_meaning == target.size_meaning or not has_access_ptr_sites(ko)):
            # identical texts under the same meaning: nothing to check site by site (as the CPU verifier);
            # the device still runs both forms
            it["sites"] = []
        else:
            it["sites"] = _json_clean(check_sites(ko, kn, rules, target, source.size_meaning))
        blockers = ko.unsupported or kn.unsupported
        if blockers:
            b = blockers[0]
            it["decided"] = {"verdict": "inconclusive", "reason": f"cannot run the kernel: {b.construct} (line {b.line})"}
            continue
        if signature(ko) != signature(kn):
            it["decided"] = {"verdict": "mismatch", "reason": f"parameters differ: {signature(ko)} vs {signature(kn)}"}
            continue
        if ko.grid != kn.grid or ko.block != kn.block:
            it["decided"] = {"verdict": "mismatch", "reason": f"launch differs: grid {ko.grid} block {ko.block} vs "
                                                              f"grid {kn.grid} block {kn.block}"}
            continue
        local = next((s for k in (ko, kn) for s in k.sites
                      if isinstance(s, CpAsync) and s.dst.buf.per_thread), None)
        if local is not None:
            it["decided"] = {"verdict": "inconclusive",
                             "reason": f"cp.async into thread-local memory {local.dst.buf.name} (line {local.line}): "
                                       "the device copies into shared memory only; this kernel is for the CPU "
                                       "interpreter"}
            if it["expect"] == "equivalent":
                it["expect"] = "inconclusive"
                it["expect_note"] = "CPU-only kernel: cp.async into thread-local memory"
            continue
        low = lower_pair(bo, bn, rules, target, prefill=True)
        it["launch"] = low.get("launch", {})
        it["params"] = low.get("params", [])
        it["prefill"] = True
        if low.get("error"):
            if low.get("old_cuda") is not None and "new" in low.get("rejected", []):
                it["decided"] = {"verdict": "mismatch",
                                 "reason": f"the compiler rejects the new form: {low['error'].removeprefix('new form: ')}"}
            else:
                it["decided"] = {"verdict": "inconclusive", "reason": f"cannot lower: {low['error']}"}
            continue
        it["old_cuda"], it["new_cuda"] = low["old_cuda"], low["new_cuda"]
        total = sum(int(p["bytes"]) for p in it["params"])
        why = float_arithmetic(ko, rules, target)
        if why is not None:
            it["crosscheck"] = {"reason": why}
        elif total > crosscheck_bytes:
            it["crosscheck"] = {"reason": f"{total} parameter bytes (cross-checked up to {crosscheck_bytes})"}
        else:
            try:
                it["expected"] = interpreter_outputs(ko, rules, widths, it["params"])
                it["crosscheck"] = {"seeds": list(CROSSCHECK_SEEDS)}
            except KernelError as e:
                it["crosscheck"] = {"interpreter_error": str(e)}
    return items


def write_bundle(items: list, out_dir: str, *, seeds: int = 3, meta: Optional[dict] = None,
                 texts: Optional[dict] = None) -> str:
    """Write ``items`` (from :func:`kernel_items`) as a bundle under ``out_dir``; returns bundle.json's path."""
    os.makedirs(os.path.join(out_dir, "cuda"), exist_ok=True)
    os.makedirs(os.path.join(out_dir, "expected"), exist_ok=True)
    out = []
    for n, src in enumerate(items):
        it = dict(src)
        iid = f"k{n:05d}"
        it["id"] = iid
        cuda = {}
        for form in ("old", "new"):
            code = it.pop(f"{form}_cuda", None)
            if code is None:
                continue
            entry = it["launch"][f"{form}_entry"]
            pat = f" {entry}("
            if code.count(pat) != 1:
                raise ValueError(f"{it['name']}:{it['kernel']}: entry {entry} not found once in the {form} source")
            code = code.replace(pat, f" {iid}_{form}(")
            rel = f"cuda/{iid}.{form}.cu"
            with open(os.path.join(out_dir, rel), "w", encoding="utf-8") as f:
                f.write(code)
            cuda[form] = rel
        if cuda:
            it["launch"] = dict(it["launch"], old_entry=f"{iid}_old", new_entry=f"{iid}_new")
            it["cuda"] = cuda
        exp = it.pop("expected", None)
        if exp:
            rel = f"expected/{iid}.npz"
            np.savez_compressed(os.path.join(out_dir, rel), **exp)
            it["crosscheck"] = dict(it.get("crosscheck", {}), file=rel)
        out.append(it)
    if texts:
        for rel, text in texts.items():
            p = os.path.join(out_dir, "texts", rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w", encoding="utf-8") as f:
                f.write(text)
    doc = {"format": FORMAT, "version": VERSION, "seeds": seeds, "sentinels": list(SENTINELS), "meta": meta or {},
           "items": out}
    path = os.path.join(out_dir, "bundle.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    return path


# ---------------------------------------------------------------------------------------------- sources
# Each source is a dict: category, name, old, new, target, source, binds, expect (None / verdict / dict).
def _generation_of(rules, text: str) -> str:
    names = [g.name for g in rules.generations]
    t = text.split("==", 1)[-1].strip()
    if t in names:
        return t
    if t == "latest":
        return names[-1]
    return rules.generation_for_version(t).name


def _fixture_options(rules, args: list) -> dict:
    out = {"target": "0.1.8", "source": None, "binds": {}}
    i = 0
    while i < len(args):
        key, _, val = args[i].partition("=")
        if key in ("--target", "--from", "--bind"):
            if not val and i + 1 < len(args):
                val = args[i + 1]
                i += 1
            if key == "--target":
                out["target"] = _generation_of(rules, val)
            elif key == "--from":
                out["source"] = _generation_of(rules, val)
            else:
                n, _, v = val.partition("=")
                out["binds"][n] = v
        i += 1
    return out


def _read(p: str) -> str:
    with open(p, "rb") as f:
        return f.read().decode("utf-8-sig")


def verify_fixture_sources(directory: str) -> list:
    cases = tomllib.loads(_read(os.path.join(directory, "cases.toml")))["case"]
    out = []
    for c in cases:
        out.append({"category": "fixture-verify", "name": c["name"], "path": os.path.join(directory, c["old"]),
                    "old": _read(os.path.join(directory, c["old"])), "new": _read(os.path.join(directory, c["new"])),
                    "target": c["target"], "source": c.get("source"), "binds": None, "expect": c.get("expect")})
    return out


def python_fixture_sources(directory: str, rules) -> list:
    out = []
    for fn in sorted(os.listdir(directory)):
        if not fn.endswith(".in.py"):
            continue
        stem = fn[:-len(".in.py")]
        outp = os.path.join(directory, stem + ".out.py")
        if not os.path.exists(outp):
            continue
        cfgp = os.path.join(directory, stem + ".toml")
        cfg = tomllib.loads(_read(cfgp)) if os.path.exists(cfgp) else {}
        opt = _fixture_options(rules, cfg.get("args", []))
        old = _read(os.path.join(directory, fn))
        if "ptx_cp_async" not in old:
            continue
        out.append({"category": "fixture-python", "name": stem, "path": os.path.join(directory, fn), "old": old,
                    "new": _read(outp), "target": opt["target"], "source": opt["source"],
                    "binds": opt["binds"] or None,
                    # one verdict for every kernel, or per kernel ([verdicts]) with that as the default
                    "expect": ({"*": cfg.get("verdict", "equivalent"), **cfg["verdicts"]} if cfg.get("verdicts")
                               else cfg.get("verdict", "equivalent"))})
    return out


def example_sources(directory: str, targets=("0.1.8", "0.1.9")) -> list:
    """The examples, migrated in-process by the tool's own engine (``--unsafe-fixes``) for each target."""
    from ..engine import RunSettings, process_file

    out = []
    for fn in sorted(os.listdir(directory)):
        if not fn.endswith(".py"):
            continue
        p = os.path.join(directory, fn)
        for t in targets:
            o = process_file(p, RunSettings(mode="diff", unsafe_fixes=True, target=t), explicit=True)
            if o is None or not o.changed:
                continue
            out.append({"category": "example", "name": f"{fn}@{t}", "path": p, "old": o.old_text, "new": o.new_text,
                        "target": t, "source": None, "binds": None, "expect": "equivalent"})
    return out


def mutant_sources(directory: str) -> list:
    cases = {c["name"]: c for c in tomllib.loads(_read(os.path.join(directory, "cases.toml")))["case"]}
    muts = tomllib.loads(_read(os.path.join(directory, "mutants.toml")))["mutant"]
    out = []
    for n, m in enumerate(muts):
        c = cases[m["case"]]
        text = _read(os.path.join(directory, c["new"]))
        for find, repl in m["edits"]:
            if find not in text:
                raise ValueError(f"mutant {m['case']}:{m['kind']}: edit does not apply: {find!r}")
            text = text.replace(find, repl)
        expect = {k: ("mismatch" if v == "equivalent" else None) for k, v in c["expect"].items()}
        out.append({"category": "mutant", "name": f"{m['case']}: {m['kind']}", "path": os.path.join(directory, c["old"]),
                    "old": _read(os.path.join(directory, c["old"])), "new": text,
                    "target": m.get("target", c["target"]), "source": c.get("source"), "binds": None,
                    "expect": expect})
    return out


_CONTROL = '''import tilelang.language as T


@T.prim_func
def control(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float32")):
    with T.Kernel(2, threads=32) as bx:
        tx = T.get_thread_binding()
        S = T.alloc_shared((128,), "float32")
        CALL
        T.ptx_commit_group()
        T.ptx_wait_group(0)
BODY
'''
_COPY_OUT = """        for i in T.Parallel(128):
            B[bx * 128 + i] = S[i]
"""
_RACE = """        for i in T.Parallel(128):
            S[(i + 1) % 128] = S[i] + 1.0
""" + _COPY_OUT


_OOB_LOAD = """        for i in T.Parallel(128):
            B[bx * 128 + i] = S[i] + A[bx * 128 + i + 268435456]
"""


def control_sources() -> list:
    """Positive controls for compute-sanitizer (not evidence about migrations): a new form whose cp.async
    reads past the end of its source buffer, a kernel whose plain loads read past the end of a buffer
    (memcheck should report both) and a kernel whose threads write and read one shared array without a
    barrier between them (racecheck should report it)."""
    legacy = 'T.ptx_cp_async("float32", S.data, tx * 4, A.data, bx * 128 + tx * 4, 16)'

    def new(src_off):
        return ('T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation("float32"), S.data, tx * 4, 4, 2), '
                f'T.tvm_access_ptr(T.type_annotation("float32"), A.data, {src_off}, 4, 1), 16)')

    def text(call, body):
        return _CONTROL.replace("CALL", call).replace("BODY\n", body)

    return [
        {"category": "control", "name": "memcheck: new form reads past the end of A", "path": "control_oob.py",
         "old": text(legacy, _COPY_OUT), "new": text(new("(bx * 128 + tx * 4) * 2"), _COPY_OUT),
         "target": "0.1.8", "source": None, "binds": None, "expect": "mismatch"},
        {"category": "control", "name": "memcheck: both forms load 1 GiB past the end of A",
         "path": "control_oob_load.py", "old": text(legacy, _OOB_LOAD), "new": text(new("bx * 128 + tx * 4"), _OOB_LOAD),
         "target": "0.1.8", "source": None, "binds": None, "expect": None},
        {"category": "control", "name": "racecheck: shared array written and read without a barrier",
         "path": "control_race.py", "old": text(legacy, _RACE), "new": text(new("bx * 128 + tx * 4"), _RACE),
         "target": "0.1.8", "source": None, "binds": None, "expect": None},
    ]


def sweep_sources(path: str) -> list:
    spec = importlib.util.spec_from_file_location("cpm_gpu_sweep", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = []
    for c in mod.cases():
        out.append({"category": "sweep", "name": c["name"], "path": c["name"] + ".py", "old": c["old"], "new": c["new"],
                    "target": c["target"], "source": c.get("source"), "binds": None,
                    "expect": c.get("expect", "equivalent"), "tags": c.get("tags", {})})
    return out


def _items_of(args) -> list:
    src, crosscheck_bytes = args
    from ..rules import load_rules

    rules = load_rules()
    items = kernel_items(src["old"], src["new"], src["path"], rules=rules, target=src["target"], source=src["source"],
                         binds=src["binds"], category=src["category"], name=src["name"], expect=src["expect"],
                         crosscheck_bytes=crosscheck_bytes)
    stem = _text_stem(src)
    for it in items:
        if src.get("tags"):
            it["tags"] = src["tags"]
        it["texts"] = {"old": f"texts/{stem}.old.py", "new": f"texts/{stem}.new.py",
                       "binds": src.get("binds")}
    return items


def _text_stem(src: dict) -> str:
    return re.sub(r"[^A-Za-z0-9_.@-]+", "_", f"{src['category']}/{src['name']}").replace("/", "_")


def build(sources: list, out_dir: str, *, seeds: int = 3, crosscheck_bytes: int = CROSSCHECK_BYTES,
          jobs: int = 1, meta: Optional[dict] = None) -> dict:
    t0 = time.perf_counter()
    work = [(s, crosscheck_bytes) for s in sources]
    if jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            groups = list(pool.map(_items_of, work, chunksize=4))
    else:
        groups = [_items_of(w) for w in work]
    items = [it for g in groups for it in g]
    texts = {}
    for s in sources:
        stem = _text_stem(s)
        texts[f"{stem}.old.py"] = s["old"]
        texts[f"{stem}.new.py"] = s["new"]
    meta = dict(meta or {}, built_s=round(time.perf_counter() - t0, 3), sources=len(sources))
    write_bundle(items, out_dir, seeds=seeds, meta=meta, texts=texts)
    counts: dict = {}
    for it in items:
        c = counts.setdefault(it["category"], {"items": 0, "decided": 0, "crosscheck": 0})
        c["items"] += 1
        c["decided"] += int(bool(it.get("decided")))
        c["crosscheck"] += int("expected" in it)
    return {"items": len(items), "by_category": counts, "seconds": meta["built_s"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cpasync_migrate.verify.bundle",
                                 description="Write a GPU bundle of kernel pairs for python -m cpasync_migrate.verify.gpu")
    ap.add_argument("--fixtures", metavar="DIR", help="tests/fixtures: verify/cases.toml pairs and python/ pairs")
    ap.add_argument("--examples", metavar="DIR", help="legacy examples, migrated here for 0.1.8 and 0.1.9")
    ap.add_argument("--sweep", metavar="FILE", help="a Python file whose cases() yields generated kernel pairs")
    ap.add_argument("--mutants", metavar="DIR", help="a directory with cases.toml and mutants.toml")
    ap.add_argument("--controls", action="store_true", help="add the compute-sanitizer positive controls")
    ap.add_argument("--only", metavar="CATEGORY", action="append", help="keep only these categories")
    ap.add_argument("--limit", type=int, help="keep at most this many sources per category")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--crosscheck-bytes", type=int, default=CROSSCHECK_BYTES)
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("-o", "--output", required=True, metavar="DIR")
    a = ap.parse_args(argv)
    from ..rules import load_rules

    rules = load_rules()
    sources = []
    if a.fixtures:
        v = os.path.join(a.fixtures, "verify")
        if os.path.exists(os.path.join(v, "cases.toml")):
            sources += verify_fixture_sources(v)
        p = os.path.join(a.fixtures, "python")
        if os.path.isdir(p):
            sources += python_fixture_sources(p, rules)
    if a.examples:
        sources += example_sources(a.examples)
    if a.mutants:
        sources += mutant_sources(a.mutants)
    if a.sweep:
        sources += sweep_sources(a.sweep)
    if a.controls:
        sources += control_sources()
    if a.only:
        sources = [s for s in sources if s["category"] in a.only]
    if a.limit:
        seen: dict = {}
        kept = []
        for s in sources:
            seen[s["category"]] = seen.get(s["category"], 0) + 1
            if seen[s["category"]] <= a.limit:
                kept.append(s)
        sources = kept
    res = build(sources, a.output, seeds=a.seeds, crosscheck_bytes=a.crosscheck_bytes, jobs=a.jobs,
                meta={"argv": sys.argv[1:] if argv is None else list(argv)})
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
