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

The runner (:mod:`.gpu`) needs only numpy and cupy.  This module needs the verifier (stdlib ``ast`` and
numpy).  The repository's own evidence bundle (fixtures, examples, mutants, the sweep) is built by
``tests/gpu_evidence.py``.
"""
from __future__ import annotations

import ast
import json
import os
from typing import Optional

import numpy as np

from .build import accepted_forms, build_kernels
from .bundle_format import FORMAT, SENTINELS, VERSION, expected_key, host_inputs
from .cuda import FLOATS, Lowering, lower_pair
from .dynamic import signature
from .interp import Interpreter, KernelError, stmt_exprs
from .ir import Bin, Cast, Const, CopyRegion, CpAsync, Math, Store, Unary, Unsupported, show, walk_expr, walk_stmts
from .options import VerifyOptions
from .pairing import has_access_ptr_sites, pair_kernels, unchanged_text
from . import coverage, smem
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
    outs = [p["name"] for p in params if p["role"] == "output"]  # in parameter order: the npz is reproducible
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
    a verdict for every kernel, or ``{qualname: verdict}`` (``"*"``: the others).

    The steps: build both texts (:func:`_built`), decide what the texts alone decide (:func:`_static_item`),
    lower and attach the cross-check (:func:`_lowered_item`), and decide the kernels holding a site no
    kernel builds (:func:`_decide_uncovered`)."""
    opts = VerifyOptions.of(options, **fields).resolved()
    target, source = opts.target, opts.source
    crosscheck_bytes = CROSSCHECK_BYTES if opts.crosscheck_bytes is None else opts.crosscheck_bytes
    name = name or path

    def base(qual, line):
        e = expect.get(qual, expect.get("*")) if isinstance(expect, dict) else expect
        return {"category": category, "name": name, "kernel": qual, "line": line, "target": target.name,
                "source": source.name, "expect": e, "sites": [], "params": [], "launch": {}}

    built = _built(old_text, new_text, opts, base)
    if isinstance(built, list):
        return built
    old, new, trees = built
    items = []
    for bo, bn in pair_kernels(old, new):
        it = base(bo.qualname, bo.line)
        items.append(it)
        kernels = _static_item(it, bo, bn, opts)
        if kernels is not None:
            _lowered_item(it, bo, bn, *kernels, opts, crosscheck_bytes)
    if old_text != new_text:
        _decide_uncovered(items, old, new, trees, base)
    return items


def _built(old_text: str, new_text: str, opts: VerifyOptions, base):
    """Both texts parsed and built: ``(old kernels, new kernels, (old tree, new tree))``, or the items that
    decide the file when a text does not parse."""
    rules, target, source, binds = opts.rules, opts.target, opts.source, opts.binds
    try:
        old_tree = ast.parse(old_text)
        old = build_kernels(old_text, rules, meaning=source.size_meaning, binds=binds, tree=old_tree)
    except SyntaxError as e:
        it = base("<file>", e.lineno or 0)
        it["decided"] = {"verdict": "inconclusive", "reason": f"the old text does not parse: {e.msg}"}
        return [it]
    try:
        new_tree = ast.parse(new_text)
        new = build_kernels(new_text, rules, meaning=target.size_meaning, binds=binds, forms=accepted_forms(target),
                            tree=new_tree)
    except SyntaxError as e:
        out = []
        for b in old:
            it = base(b.qualname, b.line)
            it["decided"] = {"verdict": "mismatch", "reason": f"the new text does not parse: {e.msg} (line {e.lineno})"}
            out.append(it)
        return out
    return old, new, (old_tree, new_tree)


def _static_item(it: dict, bo, bn, opts: VerifyOptions):
    """What the two built kernels decide before lowering: ``it`` gets ``unchanged``, ``sites`` and, when the
    texts alone decide the kernel, ``decided``.  Returns the two kernels to lower, or None when decided."""
    rules, target, source = opts.rules, opts.target, opts.source
    if bn is None:
        it["decided"] = {"verdict": "mismatch", "reason": "the kernel is missing from the new text"}
        return None
    if bn.foreign and not bo.foreign:  # as the CPU verifier: a form the target does not load, or another construct
        it["decided"] = {"verdict": "mismatch", "reason": f"new form: {bn.foreign} (the new text would not build)"}
        return None
    it["unchanged"] = bo.fingerprint == bn.fingerprint
    if unchanged_text(bo, bn, source, target) and (bo.error is not None or bo.kernel.unsupported):
        # as the CPU verifier: identical texts under the same meaning need no run (and this one cannot run)
        it["decided"] = {"verdict": "equivalent", "reason": "the kernel, the macros it can call and the "
                                                            "constants it sees are unchanged"}
        return None
    if bo.error is not None:
        it["decided"] = {"verdict": "inconclusive", "reason": f"old form: {bo.error}"}
        return None
    if bn.error is not None:
        it["decided"] = {"verdict": "inconclusive", "reason": f"new form: {bn.error}"}
        return None
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
        return None
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
        return None
    if signature(ko) != signature(kn):
        it["decided"] = {"verdict": "mismatch", "reason": f"parameters differ: {signature(ko)} vs {signature(kn)}"}
        return None
    if ko.grid != kn.grid or ko.block != kn.block:
        it["decided"] = {"verdict": "mismatch", "reason": f"launch differs: grid {ko.grid} block {ko.block} vs "
                                                          f"grid {kn.grid} block {kn.block}"}
        return None
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
        return None
    return ko, kn


def _lowered_item(it: dict, bo, bn, ko, kn, opts: VerifyOptions, crosscheck_bytes: int) -> None:
    """Lower both forms into ``it`` (launch, parameters, CUDA sources) and attach the interpreter's
    cross-check outputs, or why there is none."""
    rules, target = opts.rules, opts.target
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
        return
    it["old_cuda"], it["new_cuda"] = low["old_cuda"], low["new_cuda"]
    total = sum(int(p["bytes"]) for p in it["params"])
    why = float_arithmetic(ko, rules, target)
    if why is not None:
        it["crosscheck"] = {"reason": why}
    elif total > crosscheck_bytes:
        it["crosscheck"] = {"reason": f"{total} parameter bytes (cross-checked up to {crosscheck_bytes})"}
    else:
        try:
            it["expected"] = interpreter_outputs(ko, rules, opts.widths(), it["params"])
            it["crosscheck"] = {"seeds": list(CROSSCHECK_SEEDS)}
        except KernelError as e:
            it["crosscheck"] = {"interpreter_error": str(e)}


def _decide_uncovered(items: list, old: list, new: list, trees: tuple, base) -> None:
    """As the CPU and GPU verifiers: a cp.async site of either text that no kernel of the bundle builds makes
    the kernel holding it (every kernel, when no prim_func holds it) inconclusive, decided here, not run.
    ``trees``: the two texts' syntax trees the kernels were built from (two different texts)."""
    covered: tuple = (set(), set())
    by_kernel = {it["kernel"]: it for it in items}
    for bo, bn in pair_kernels(old, new):
        it = by_kernel.get(bo.qualname)
        coverage.record(covered, bo, bn, bool(it and it.get("unchanged")), trees)
    missing = coverage.uncovered(trees, covered)
    if not missing:
        return
    if not items:
        it = base("<file>", missing[0][1])
        names = ", ".join(f"{t} text line {ln}" for t, ln, _ in missing)
        it["decided"] = {"verdict": "inconclusive", "reason": f"cp.async site(s) at {names} are in no prim_func "
                                                              "the verifier builds, so none is checked"}
        items.append(it)
        return
    for it in items:
        mine = [(t, ln) for t, ln, owner in missing if owner in (None, it["kernel"])]
        if mine and not it.get("decided"):
            names = ", ".join(f"{t} text line {ln}" for t, ln in mine)
            it["decided"] = {"verdict": "inconclusive", "reason": f"cp.async site(s) at {names} not built or "
                                                                  "checked (no binding the text gives reaches "
                                                                  "them; --bind can)"}


def write_bundle(items: list, out_dir: str, *, seeds: int = 3, meta: Optional[dict] = None,
                 texts: Optional[dict] = None) -> str:
    """Write ``items`` (from :func:`kernel_items`) as a bundle under ``out_dir``; returns bundle.json's path.

    Nothing in ``out_dir`` is followed: its sub-folders are opened without following links (a link
    there is an error) and every member is a new file renamed over its name
    (:mod:`cpasync_migrate.safe_write`)."""
    import io

    from .. import safe_write

    root = safe_write.open_dir(out_dir)
    opened = {"": root}  # folder (relative, "/"-separated) -> its descriptor
    try:
        def folder(rel: str) -> int:
            """The descriptor of the folder holding member ``rel`` (opened once)."""
            at = ""
            for name in rel.split("/")[:-1]:
                here = f"{at}/{name}" if at else name
                if here not in opened:
                    opened[here] = safe_write.open_subdir(opened[at], name, shown=os.path.join(out_dir, here))
                at = here
            return opened[at]

        folder("cuda/-")
        folder("expected/-")
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
                safe_write.write_at(folder(rel), rel.rsplit("/", 1)[1], code.encode("utf-8"))
                cuda[form] = rel
            if cuda:
                it["launch"] = dict(it["launch"], old_entry=f"{iid}_old", new_entry=f"{iid}_new")
                it["cuda"] = cuda
            exp = it.pop("expected", None)
            if exp:
                rel = f"expected/{iid}.npz"
                buf = io.BytesIO()
                np.savez_compressed(buf, **exp)
                safe_write.write_at(folder(rel), rel.rsplit("/", 1)[1], buf.getvalue())
                it["crosscheck"] = dict(it.get("crosscheck", {}), file=rel)
            out.append(it)
        if texts:
            for rel, text in texts.items():
                rel = f"texts/{rel}"
                safe_write.write_at(folder(rel), rel.rsplit("/", 1)[1], text.encode("utf-8"))
        doc = {"format": FORMAT, "version": VERSION, "seeds": seeds, "sentinels": list(SENTINELS),
               "meta": meta or {}, "items": out}
        safe_write.write_at(root, "bundle.json", json.dumps(doc, indent=1).encode("utf-8"))
    finally:
        for fd in opened.values():
            os.close(fd)
    return os.path.join(out_dir, "bundle.json")
