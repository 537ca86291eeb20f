"""The verifier proper: both texts' kernels paired, checked site by site, run and swept; one
:class:`Verdict` per kernel.  Reached as :mod:`cpasync_migrate.verify` (see its docstring and
docs/verify.md).
"""
from __future__ import annotations

import ast
import json
import os
import re
from dataclasses import asdict, dataclass, field
from typing import Optional

from .build import BuiltKernel, accepted_forms, build_kernels
from . import coverage
from .dynamic import run_pair
from .ir import CpAsync
from .options import VerifyOptions
from .pairing import pair_kernels, unchanged_text
from . import smem, structure
from .sites import check_sites

__all__ = ["Verdict", "verify_source", "verify_source_gpu", "lower_cuda", "emit_cuda"]

GPU_CROSSCHECK_BYTES = 1 << 18  # the interpreter cross-check of ``device="gpu"`` (a bundle's own: 1 MiB)


@dataclass
class Verdict:
    kernel: str  # qualified name, e.g. "make_kernel.main"
    line: int  # line of the prim_func in the old text
    verdict: str  # "equivalent" | "mismatch" | "inconclusive"
    reason: str  # one line
    sites: list = field(default_factory=list)  # [{line, verdict, reason, ...}]
    detail: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return json.loads(json.dumps(asdict(self), default=str))


def _one_line(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip()


def verify_source(old_text: str, new_text: str, path: str, options: Optional[VerifyOptions] = None,
                  **fields) -> list[Verdict]:
    """One :class:`Verdict` per ``@T.prim_func`` of ``old_text``.

    ``options`` (a :class:`VerifyOptions`), or its fields as keywords (``rules``, ``target``, ``source``,
    ``binds``, ``device``, ``seeds``, ``emit_cuda_dir``, ``crosscheck_bytes``; keywords given with
    ``options`` replace its own):

    ``target`` is the generation (object or name) the new text is written for:
    it fixes what the size argument of access-pointer calls means (bytes for
    "0.1.8", element counts for "0.1.9").  Legacy calls mean bytes.
    ``source`` is the generation of access-pointer calls already present in
    the old text (default: ``target``; pass "0.1.8" for ``--from 0.1.8``).
    ``device`` "cpu" (or "auto") runs the numpy interpreter; "gpu" runs the lowered CUDA of both forms
    on an NVIDIA GPU through cupy (see docs/gpu.md and :func:`verify_source_gpu`).
    """
    opts = VerifyOptions.of(options, **fields).resolved()
    if opts.device == "gpu":
        return verify_source_gpu(old_text, new_text, path, opts)
    if opts.device not in ("cpu", "auto"):
        raise ValueError(f"device {opts.device!r}: expected 'cpu', 'auto' or 'gpu'")
    rules, target, source, binds = opts.rules, opts.target, opts.source, opts.binds
    try:
        old_tree = ast.parse(old_text)
        old = build_kernels(old_text, rules, meaning=source.size_meaning, binds=binds, tree=old_tree)
    except SyntaxError as e:
        return [Verdict("<file>", e.lineno or 0, "inconclusive", f"the old text does not parse: {e.msg}")]
    except (MemoryError, RecursionError):
        return [Verdict("<file>", 0, "inconclusive", "the old text nests deeper than Python's parser reads")]
    try:
        new_tree = ast.parse(new_text)
        new = build_kernels(new_text, rules, meaning=target.size_meaning, binds=binds, forms=accepted_forms(target),
                            tree=new_tree)
    except SyntaxError as e:
        return [Verdict(b.qualname, b.line, "mismatch", f"the new text does not parse: {e.msg} (line {e.lineno})")
                for b in old]
    except (MemoryError, RecursionError):
        return [Verdict(b.qualname, b.line, "inconclusive", "the new text nests deeper than Python's parser reads")
                for b in old]
    out = []
    cache: dict = {}
    trees = (old_tree, new_tree)
    covered: tuple = (set(), set())
    paired = set()
    for bo, bn in pair_kernels(old, new):
        v = _verify_kernel(bo, bn, opts)
        _record(covered, bo, bn, v, trees)
        v = _sweep(v, bo, old_text, new_text, opts, cache, trees, covered)
        out.append(v)
        paired.add(id(bn))
    out.extend(_added(new, paired))
    if old_text != new_text:  # an unchanged text changes nothing: there is no site to prove
        _require_coverage(out, trees, covered)
    if opts.emit_cuda_dir:
        emit_cuda(old_text, new_text, path, opts.emit_cuda_dir, opts)
    return out


def _verify_kernel(bo: BuiltKernel, bn: Optional[BuiltKernel], opts: VerifyOptions) -> Verdict:
    """The verdict on one kernel pair under ``opts`` (resolved: ``target`` and ``source`` generations)."""
    rules, target, source = opts.rules, opts.target, opts.source
    name, line = bo.qualname, bo.line
    if bn is None:
        return Verdict(name, line, "mismatch", "the kernel is missing from the new text")
    if unchanged_text(bo, bn, source, target):
        return Verdict(name, line, "equivalent", "the kernel and every definition it can reach (macros, helpers, "
                       "constants, imports) are unchanged", [], {"unchanged": True})
    if bn.foreign and not bo.foreign:
        return Verdict(name, line, "mismatch", f"new form: {bn.foreign} (the new text would not build)", [],
                       {"unsupported": bn.foreign})
    if bo.error is not None:
        return Verdict(name, line, "inconclusive", f"old form: {bo.error}", [],
                       {"unsupported": bo.error.construct, "unsupported_line": bo.error.line})
    if bn.error is not None:
        return Verdict(name, line, "inconclusive", f"new form: {bn.error}", [],
                       {"unsupported": bn.error.construct, "unsupported_line": bn.error.line})
    ko, kn = bo.kernel, bn.kernel
    detail: dict = {"grid": list(ko.grid), "block": list(ko.block), "target": target.name}
    match = structure.compare(ko, kn, rules.dtype_size)
    detail["same_structure"] = match.same
    if not match.same:
        detail["structure_difference"] = structure.describe(match)
    mp = smem.plan(ko, rules)
    readings = smem.distinct_readings(ko, mp)
    detail["shared_memory"] = mp.describe()
    results = []
    for r in readings:
        # one compilation of one program: legacy calls the new text still holds read the same way
        smem.apply(ko, r)
        smem.apply(kn, r)
        results.append((r, _one_reading(ko, kn, opts, match, detail)))
    smem.apply(ko, smem.default_reading(mp))
    smem.apply(kn, smem.default_reading(mp))
    if len(results) == 1:
        verdict, reason, sites = results[0][1]
    else:
        detail["readings"] = {r.label: {"verdict": v, "reason": _one_line(why)} for r, (v, why, _) in results}
        verdicts = {v for _, (v, _, _) in results}
        sites = results[0][1][2]
        if verdicts == {"equivalent"}:
            verdict, reason = "equivalent", results[0][1][1] + f" (under every reading: {'; '.join(mp.open)})"
        elif verdicts == {"mismatch"}:
            verdict, reason = "mismatch", results[0][1][1] + " (under every reading of the shared-memory merge)"
        else:
            verdict = "inconclusive"
            reason = ("the text does not decide the shared-memory merge (" + "; ".join(mp.open) + "): " +
                      "; ".join(f"{r.label}: {v} ({_one_line(why)[:160]})" for r, (v, why, _) in results))
    return Verdict(name, line, verdict, _one_line(reason), sites, detail)


def _one_reading(ko, kn, opts: VerifyOptions, match, detail):
    rules, target, source = opts.rules, opts.target, opts.source
    sites = check_sites(ko, kn, rules, target, source.size_meaning, match)
    if not match.same:
        # site refutations rest on a pairing of the two kernels' variables that the structure did not confirm
        for s in sites:
            if s["verdict"] == "mismatch":
                s["verdict"] = "inconclusive"
                s["reason"] = "not confirmed (the kernels differ outside their cp.async calls): " + s["reason"]
    blockers = ko.unsupported or kn.unsupported
    unknown = [s.line for s in ko.sites if isinstance(s, CpAsync) and s.form == "legacy" and s.dst.merged_unknown]
    if blockers:
        b = blockers[0]
        dyn_verdict, dyn_reason = "inconclusive", f"cannot run the kernel: {b.construct} (line {b.line})"
        detail["unsupported"] = b.construct
        detail["unsupported_line"] = b.line
    elif unknown:
        dyn_verdict, dyn_reason = "inconclusive", (f"cannot run the kernel: the legacy call at line {unknown[0]} "
                                                   "writes merged shared memory with a dtype not known from the text")
    else:
        dyn = run_pair(ko, kn, rules, opts.widths(), seeds=opts.seeds)
        dyn_verdict, dyn_reason = dyn.verdict, dyn.reason
        detail.update(dyn.detail)
        detail["runs"] = dyn.runs
        detail["simulated_bytes"] = dyn.bytes
    bad_site = next((s for s in sites if s["verdict"] == "mismatch"), None)
    unk_site = next((s for s in sites if s["verdict"] == "inconclusive"), None)
    detail["interpreter"] = {"verdict": dyn_verdict, "reason": dyn_reason}
    if dyn_verdict == "mismatch":
        verdict, reason = "mismatch", dyn_reason
    elif bad_site is not None:
        verdict, reason = "mismatch", f"site at line {bad_site['line']}: {bad_site['reason']}"
    elif dyn_verdict == "inconclusive":
        verdict, reason = "inconclusive", dyn_reason
    elif unk_site is not None:
        verdict, reason = "inconclusive", f"site at line {unk_site['line']}: {unk_site['reason']}"
    elif not match.same:
        verdict = "inconclusive"
        reason = (f"the kernels differ outside their cp.async calls: {structure.describe(match)}; the interpreter "
                  f"found no difference on random inputs ({dyn_reason}), which does not cover every input")
    else:
        verdict = "equivalent"
        reason = (f"{len(sites)} cp.async site(s) proven; the rest of the kernel is the same program; "
                  f"{dyn_reason}")
    return verdict, reason, sites


MAX_SWEEP = 6


def sweep_bindings(params: dict) -> list[dict]:
    """Other sizes for a factory's integer parameters: all doubled, each doubled alone, all halved, all plus
    one and all minus one (at most ``MAX_SWEEP``)."""
    out = [{k: v * 2 for k, v in params.items()}]
    if 1 < len(params) <= 3:
        out += [{**params, k: v * 2} for k, v in params.items()]
    if all(v >= 2 and v % 2 == 0 for v in params.values()):
        out.append({k: v // 2 for k, v in params.items()})
    out.append({k: v + 1 for k, v in params.items()})
    if all(v >= 2 for v in params.values()):
        out.append({k: v - 1 for k, v in params.items()})
    seen, uniq = set(), []
    for b in out:
        t = tuple(sorted(b.items()))
        if t not in seen and b != params:
            seen.add(t)
            uniq.append(b)
    return uniq[:MAX_SWEEP]


def _fmt_binds(b: dict) -> str:
    return ", ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in b.items())


def _record(covered: tuple, bo: BuiltKernel, bn: Optional[BuiltKernel], v: Verdict, trees: tuple):
    coverage.record(covered, bo, bn, bool(v.detail.get("unchanged")), trees)


def _added(new: list, paired: set) -> list:
    """A verdict for each prim_func of the new text that no kernel of the old text pairs with: the migration added
    it, and nothing it does was compared with anything (inconclusive, so --require-proof refuses the file)."""
    return [Verdict(b.qualname, b.line, "inconclusive", f"the new text adds the prim_func {b.qualname} (line {b.line} "
                    "of the new text), which the old text does not have: nothing it does is compared", [],
                    {"added": True}) for b in new if id(b) not in paired]


def _require_coverage(out: list, trees: tuple, covered: tuple):
    """An equivalent verdict covers every cp.async site of both texts: a site no check built (under any
    binding) makes the kernel that holds it, or every kernel when no prim_func holds it, inconclusive."""
    missing = coverage.uncovered(trees, covered)
    if not missing:
        return
    if not out:
        names = ", ".join(f"{t} text line {ln}" for t, ln, _ in missing)
        out.append(Verdict("<file>", missing[0][1], "inconclusive",
                           f"cp.async site(s) at {names} are in no prim_func the verifier builds, so none is "
                           "checked", [], {"uncovered_sites": [{"text": t, "line": ln} for t, ln, _ in missing]}))
        return
    for v in out:
        mine = [(t, ln) for t, ln, owner in missing if owner in (None, v.kernel)]
        if v.verdict != "equivalent" or not mine:
            continue
        names = ", ".join(f"{t} text line {ln}" for t, ln in mine)
        bound = v.detail.get("bindings")
        under = f" under {_fmt_binds(bound)}" if bound else ""
        swept = v.detail.get("swept")
        if swept:
            under += " and " + "; ".join(_fmt_binds(x["bindings"]) for x in swept)
        v.detail["uncovered_sites"] = [{"text": t, "line": ln} for t, ln in mine]
        v.verdict = "inconclusive"
        v.reason = _one_line(f"cp.async site(s) at {names} not built or checked{under} (no binding the text "
                             f"gives reaches them; --bind can); the rest: {v.reason}")


def _sweep(v: Verdict, bo: BuiltKernel, old_text, new_text, opts: VerifyOptions, cache,
           trees: tuple = (), covered: tuple = (set(), set())) -> Verdict:
    """Check a factory kernel under the other bindings its text gives its parameters (:mod:`.coverage`) and
    at other sizes of its integer parameters before calling it equivalent (one input set each)."""
    rules, target, source, binds = opts.rules, opts.target, opts.source, opts.binds or {}
    once = VerifyOptions.of(opts, seeds=1)
    fixed = frozenset(binds)
    defaults, given = coverage.factory_bindings(trees[0], bo.qualname, fixed) if trees else ({}, [])
    shown = {**defaults, **bo.int_params}
    if shown:
        v.detail["bindings"] = shown
    if binds:
        v.detail["bound"] = dict(binds)
    at = (_fmt_binds(shown) + (f" (--bind {_fmt_binds(dict(binds))})" if binds else "")).strip()
    if v.verdict != "equivalent" or v.detail.get("unchanged"):
        if v.verdict != "equivalent" and at:
            v.reason = _one_line(f"{v.reason} (at {at})")
        return v
    sizes = sweep_bindings(bo.int_params) if bo.int_params else []
    candidates, seen = [], set()
    for b in given + sizes:
        k_ = tuple(sorted((k, repr(x)) for k, x in b.items()))
        if k_ not in seen:
            seen.add(k_)
            candidates.append(b)
    if not candidates:
        if at:
            v.reason = _one_line(f"{v.reason}; at {at}")
        return v
    swept, skipped = [], []
    sized = False
    for b in candidates:
        key_ = tuple(sorted((k, repr(x)) for k, x in b.items()))
        if key_ not in cache:
            allb = {**binds, **{k: coverage.bind_value(x) for k, x in b.items()}}
            try:
                cache[key_] = (build_kernels(old_text, rules, meaning=source.size_meaning, binds=allb),
                               build_kernels(new_text, rules, meaning=target.size_meaning, binds=allb,
                                             forms=accepted_forms(target)))
            except SyntaxError:
                cache[key_] = ([], [])
        olds, news = cache[key_]
        bo2 = next((x for x in olds if x.qualname == bo.qualname), None)
        bn2 = next((x for x in news if x.qualname == bo.qualname), None)
        if bo2 is None or bo2.kernel is None:
            skipped.append(f"{_fmt_binds(b)} (old form: {bo2.error if bo2 else 'not built'})")
            continue
        r = _verify_kernel(bo2, bn2, once)
        if (r.verdict == "inconclusive" and r.reason.startswith("old form:")) or (r.detail.get(
                "interpreter", {}).get("reason", "").startswith("the old form fails")):
            skipped.append(f"{_fmt_binds(b)} ({r.reason[:80]})")
            continue
        _record(covered, bo2, bn2, r, trees) if trees else None
        swept.append({"bindings": b, "verdict": r.verdict, "reason": r.reason})
        sized = sized or b in sizes
        if r.verdict != "equivalent":
            v.verdict = r.verdict
            v.reason = _one_line(f"at {_fmt_binds(b)} (swept from {at}): {r.reason}")
            v.detail["swept"] = swept
            return v
    v.detail["swept"] = swept
    if skipped:
        v.detail["sweep_skipped"] = skipped
    if bo.int_params and not sized:
        v.verdict = "inconclusive"
        v.reason = _one_line(f"equivalent at {at} only: no other size of the integer "
                             f"parameters builds and runs in the old form ({'; '.join(skipped)[:200]})")
        return v
    v.reason = _one_line(f"{v.reason}; at {at}" + (" and swept to " + "; ".join(_fmt_binds(x['bindings'])
                                                                                for x in swept) if swept else ""))
    return v


def lower_cuda(old_text: str, new_text: str, path: str, options: Optional[VerifyOptions] = None, *,
               prefill: bool = False, **fields) -> list[dict]:
    """The lowered CUDA of both forms of every kernel (see docs/verify.md for the shape).

    ``options`` or its fields as keywords (``rules``, ``target``, ``binds``, ``source``), as for
    :func:`verify_source`.  ``prefill``: entries take a last ``unsigned int cpm_fill`` and fill on-chip
    memory with its low byte (what the GPU runner uses; see docs/gpu.md)."""
    from .cuda import lower_pair

    opts = VerifyOptions.of(options, **fields).resolved()
    rules, target, source, binds = opts.rules, opts.target, opts.source, opts.binds
    old = build_kernels(old_text, rules, meaning=source.size_meaning, binds=binds)
    new = build_kernels(new_text, rules, meaning=target.size_meaning, binds=binds, forms=accepted_forms(target))
    out = []
    for bo, bn in pair_kernels(old, new):
        out.append(lower_pair(bo, bn, rules, target, prefill))
    return out


def emit_cuda(old_text, new_text, path, directory, options: Optional[VerifyOptions] = None, **fields) -> list[str]:
    """Write ``<path>.<kernel>.{old,new}.cu`` and ``<path>.<kernel>.json`` under ``directory``.

    ``path`` keeps its folders, relative to the current folder (``a/k.py`` and ``b/k.py`` write
    ``a/k.py.*`` and ``b/k.py.*``); a path outside the current folder is written under ``@abs/`` and
    its absolute folders (a relative path whose first folder starts with ``@`` gets one more ``@``,
    so the two never meet).  Nothing in ``directory`` is followed: sub-folders are opened without
    following links (a link there is an error) and each file is a new file renamed over its name
    (:mod:`cpasync_migrate.safe_write`)."""
    from .. import safe_write

    folders, stem = emit_place(path)
    items = lower_cuda(old_text, new_text, path, VerifyOptions.of(options, **fields))
    fd = safe_write.open_dir(directory)
    try:
        for i, name in enumerate(folders):
            sub = safe_write.open_subdir(fd, name, shown=os.path.join(directory, *folders[:i + 1]))
            os.close(fd)
            fd = sub
        written = []
        where = os.path.join(directory, *folders)
        for item in items:
            base = f"{stem}.{re.sub(r'[^A-Za-z0-9_.-]', '_', str(item['kernel']))}"
            meta = {k: v for k, v in item.items() if k not in ("old_cuda", "new_cuda")}
            for form in ("old", "new"):
                if item.get(f"{form}_cuda"):
                    safe_write.write_at(fd, f"{base}.{form}.cu", item[f"{form}_cuda"].encode("utf-8"))
                    written.append(os.path.join(where, f"{base}.{form}.cu"))
            safe_write.write_at(fd, f"{base}.json", json.dumps(meta, indent=2).encode("utf-8"))
            written.append(os.path.join(where, f"{base}.json"))
        return written
    finally:
        os.close(fd)


def emit_place(path: str) -> tuple[list[str], str]:
    """(the folders, the file name) that ``--emit-cuda`` writes ``path``'s kernels under (see
    :func:`emit_cuda`)."""
    from ..safe_write import inside

    full = os.path.abspath(path)
    rel = inside(full, os.getcwd())
    if rel:
        parts = rel.split("/")
        if parts[0].startswith("@"):
            parts[0] = "@" + parts[0]
    else:
        parts = ["@abs"] + [p for p in full.split(os.sep) if p]
    return parts[:-1], parts[-1] or "kernel"


def verify_source_gpu(old_text: str, new_text: str, path: str, options: Optional[VerifyOptions] = None,
                      **fields) -> list[Verdict]:
    """:func:`verify_source` on the GPU: write a bundle of this file (:mod:`.bundle`) and run it
    (:mod:`.gpu`).  Without a usable GPU, a kernel the bundle already decides keeps that verdict, a
    refuted site stays a mismatch, and every other kernel is inconclusive."""
    import tempfile

    from .bundle import kernel_items, write_bundle
    from .gpu import combine, run_bundle, static_verdict

    opts = VerifyOptions.of(options, **fields).resolved()
    if opts.crosscheck_bytes is None:
        opts = VerifyOptions.of(opts, crosscheck_bytes=GPU_CROSSCHECK_BYTES)
    seeds = opts.seeds
    items = kernel_items(old_text, new_text, path, opts, category="file")
    if opts.emit_cuda_dir:
        emit_cuda(old_text, new_text, path, opts.emit_cuda_dir, opts)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        write_bundle(items, tmp, seeds=seeds, meta={"from": path})
        try:
            report = run_bundle(tmp, seeds=seeds)
        except RuntimeError as e:
            out = []
            for it in items:
                sv, sr = static_verdict(it)
                if it.get("decided"):
                    v, r = combine(it, {}, {})
                elif sv == "mismatch":
                    v, r = sv, sr
                else:
                    v, r = "inconclusive", f"GPU runner unavailable: {_one_line(str(e))[:300]}"
                out.append(Verdict(it.get("kernel") or "<file>", it.get("line") or 0, v, r, it.get("sites", []),
                                   {"device": "gpu"}))
            _gpu_coverage(out, old_text, new_text, opts)
            return out
    for it, row in zip(items, report["kernels"]):
        detail = {"device": "gpu", "gpu": row["gpu"], "crosscheck": row["crosscheck"], "target": it.get("target"),
                  "grid": it.get("launch", {}).get("grid"), "block": it.get("launch", {}).get("block"),
                  "gpu_name": report["device"].get("name")}
        for k in ("first_difference", "nondeterministic"):
            if k in row["gpu"]:
                detail[k] = row["gpu"][k]
        if it.get("unchanged"):
            detail["unchanged"] = True
        out.append(Verdict(it["kernel"], it["line"], row["verdict"], row["reason"], it.get("sites", []), detail))
    _gpu_coverage(out, old_text, new_text, opts)
    return out


def _gpu_coverage(out: list, old_text: str, new_text: str, opts: VerifyOptions):
    """The GPU path checks each kernel at its default binding only: a site of either text that binding does
    not build makes the verdict inconclusive, as on the CPU path (:func:`_require_coverage`)."""
    if old_text == new_text:
        return
    try:
        trees = (ast.parse(old_text), ast.parse(new_text))
        old = build_kernels(old_text, opts.rules, meaning=opts.source.size_meaning, binds=opts.binds)
        new = build_kernels(new_text, opts.rules, meaning=opts.target.size_meaning, binds=opts.binds,
                           forms=accepted_forms(opts.target))
    except SyntaxError:
        return
    covered: tuple = (set(), set())
    by_name = {v.kernel: v for v in out}
    for bo, bn in pair_kernels(old, new):
        v = by_name.get(bo.qualname)
        _record(covered, bo, bn, v if v is not None else Verdict(bo.qualname, bo.line, "inconclusive", ""), trees)
    _require_coverage(out, trees, covered)
