"""The repository's GPU evidence bundle: fixtures, examples, mutants, the sweep and sanitizer controls.

    python tests/gpu_evidence.py --fixtures tests/fixtures --examples examples \\
        --mutants tests/fixtures/verify --sweep tests/gpu_sweep.py -j 2 -o .gpubundle/full

collects kernel pairs with the verdict each must get (``expect``) and writes them as one bundle with
:func:`cpasync_migrate.verify.bundle.write_bundle`; ``python -m cpasync_migrate.verify.gpu DIR`` runs it
on a GPU machine.  A test instrument, not part of the package: ``--examples`` runs the migration engine
(libcst) on the examples and ``--sweep`` imports the generator named (tests/gpu_sweep.py).
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

from cpasync_migrate.verify.bundle import CROSSCHECK_BYTES, kernel_items, write_bundle
from cpasync_migrate.verify.options import VerifyOptions
from fixture_args import fixture_options


# ---------------------------------------------------------------------------------------------- sources
# Each source is a dict: category, name, old, new, target, source, binds, expect (None / verdict / dict).
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
        opt = fixture_options(rules, cfg.get("args", []))
        old = _read(os.path.join(directory, fn))
        if "ptx_cp_async" not in old:
            continue
        out.append({"category": "fixture-python", "name": stem, "path": os.path.join(directory, fn), "old": old,
                    "new": _read(outp), "target": opt["target"], "source": opt["source"],
                    "binds": opt["binds"] or None,
                    # one verdict for every kernel, or per kernel ([verdicts]) with that as the default;
                    # gpu_verdict where the GPU runner, which runs every pair it is given, must say otherwise
                    # than the CPU verifier (an unchanged kernel that cannot lower: equivalent on the CPU by
                    # its unchanged text, inconclusive when run)
                    "expect": ({"*": cfg.get("verdict", "equivalent"), **cfg["verdicts"]} if cfg.get("verdicts")
                               else cfg.get("gpu_verdict", cfg.get("verdict", "equivalent")))})
    return out


def example_sources(directory: str, targets=("0.1.8", "0.1.9")) -> list:
    """The examples, migrated in-process by the tool's own engine (``--unsafe-fixes``) for each target."""
    from cpasync_migrate.engine import RunSettings, process_file

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
    from cpasync_migrate.rules import load_rules

    opts = VerifyOptions(rules=load_rules(), target=src["target"], source=src["source"], binds=src["binds"],
                         crosscheck_bytes=crosscheck_bytes)
    items = kernel_items(src["old"], src["new"], src["path"], opts, category=src["category"], name=src["name"],
                         expect=src["expect"])
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
    ap = argparse.ArgumentParser(prog="python tests/gpu_evidence.py",
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
    from cpasync_migrate.rules import load_rules

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
