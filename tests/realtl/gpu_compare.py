"""Run a bundle from tests/realtl/gpu_bundle.py on a GPU and compare the forms byte for byte.

    python tests/realtl/gpu_compare.py BUNDLE_DIR [--json OUT.json]

Needs numpy and cupy only (nothing of the project).  For every kernel of the
manifest, each form (legacy 0.1.7.post1, migrated 0.1.8, migrated newest release)
is loaded from its cubin and launched with the grid, block and dynamic shared
bytes TileLang gave it, on the same parameter contents: every parameter buffer
is filled with the same bytes before each run (random bytes from a seed, then
every byte 0xA5), so outputs the kernel does not write compare equal too.  After
each run every parameter is read back; a migrated form is ``identical`` when all
its parameters equal the legacy form's, byte for byte, for every fill.  The legacy
form is run twice per fill to tell a nondeterministic kernel.  A launch error is
recorded (for example CUDA_ERROR_MISALIGNED_ADDRESS) and the form is ``error``.
A form the manifest marks ``"expect": "differs"`` (a known-wrong migration) must
not be identical.

Exit status 0 when every migrated form is identical and every known-wrong one is
not, 1 otherwise.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

SIZES = {"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "float16": 2, "bfloat16": 2,
         "int32": 4, "uint32": 4, "float32": 4, "int64": 8, "uint64": 8, "float64": 8}
FILLS = ("seed:1", "seed:2", "byte:0xA5")


def nbytes(param: dict) -> int:
    n = 1
    for d in param["shape"] or [1]:
        n *= int(d)
    return n * SIZES.get(param["dtype"].split("x")[0], 4)


def fill_bytes(size: int, fill: str, salt: int) -> np.ndarray:
    kind, _, value = fill.partition(":")
    if kind == "seed":
        return np.random.default_rng(int(value) * 1000 + salt).integers(0, 256, size, dtype=np.uint8)
    return np.full(size, int(value, 16), dtype=np.uint8)


def run_form(cp, bundle: Path, form: dict, fill: str) -> tuple[list, str | None]:
    """Launch every device function of one form; return each parameter's bytes (by name)."""
    mod = cp.RawModule(path=str(bundle / form["cubin"]))
    out: dict = {}
    try:
        for k in form["launch"]:
            bufs = []
            for i, p in enumerate(k["params"]):
                if p["name"] not in out:
                    host = fill_bytes(nbytes(p), fill, i)
                    out[p["name"]] = cp.asarray(host)
                bufs.append(out[p["name"]])
            fn = mod.get_function(k["entry"])
            shared = int(k["dynamic_shared_bytes"])
            if shared > 48 * 1024:
                fn.max_dynamic_shared_size_bytes = shared
            fn(tuple(k["grid"]), tuple(k["block"]), tuple(bufs), shared_mem=shared)
        cp.cuda.Device().synchronize()
    except Exception as exc:  # noqa: BLE001 - a launch error is a result
        return [], f"{type(exc).__name__}: {exc}"
    return [(name, cp.asnumpy(buf).tobytes()) for name, buf in sorted(out.items())], None


def first_difference(a: list, b: list) -> str:
    for (na, xa), (nb, xb) in zip(a, b):
        if na != nb:
            return f"parameters differ: {na} vs {nb}"
        if xa != xb:
            va, vb = np.frombuffer(xa, np.uint8), np.frombuffer(xb, np.uint8)
            idx = np.nonzero(va != vb)[0]
            return f"{na}: {len(idx)} byte(s) differ, first at byte {int(idx[0])} (legacy {va[idx[0]]:#04x}, new {vb[idx[0]]:#04x})"
    return "parameter lists differ"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bundle", type=Path)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    import cupy as cp

    manifest = json.loads((args.bundle / "manifest.json").read_text())
    rows, ok = [], True
    for item in manifest["kernels"]:
        legacy = item["forms"].get("legacy")
        row = {"file": item["file"], "kernel": item["kernel"], "merged": legacy and legacy.get("merged"),
               "forms": {}}
        ref = {}
        for fill in FILLS:
            a, err = run_form(cp, args.bundle, legacy, fill)
            b, err2 = run_form(cp, args.bundle, legacy, fill) if err is None else ([], None)
            if err or err2:
                row["legacy_error"] = err or err2
                break
            if a != b:
                row["legacy_nondeterministic"] = fill
            ref[fill] = a
        for form in [k for k in item["forms"] if k != "legacy"] or ["0.1.8"]:
            f = item["forms"].get(form)
            if f is None:
                row["forms"][form] = {"verdict": "not lowered"}
                ok = False
                continue
            if "legacy_error" in row:
                row["forms"][form] = {"verdict": "legacy failed"}
                ok = False
                continue
            verdict = {"verdict": "identical"}
            for fill in FILLS:
                got, err = run_form(cp, args.bundle, f, fill)
                if err:
                    verdict = {"verdict": "error", "detail": err, "fill": fill}
                    break
                if got != ref[fill]:
                    verdict = {"verdict": "differs", "detail": first_difference(ref[fill], got), "fill": fill}
                    break
            verdict["expected"] = f.get("expect", "identical")
            row["forms"][form] = verdict
            if verdict["expected"] == "identical":
                ok = ok and verdict["verdict"] == "identical"
            else:  # a known-wrong migration: it must not run identical
                ok = ok and verdict["verdict"] != "identical"
        rows.append(row)
        cells = "  ".join(f"{k}: {v['verdict']}" + (f" ({v['detail']})" if v.get("detail") else "")
                          for k, v in row["forms"].items())
        extra = f"  legacy error: {row['legacy_error']}" if "legacy_error" in row else ""
        extra += "  legacy nondeterministic" if row.get("legacy_nondeterministic") else ""
        print(f"{item['file']}:{item['kernel']} merged={bool(row['merged'])}  {cells}{extra}")
    summary = {"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "tilelang": manifest["tilelang"],
               "arch": manifest["arch"], "fills": list(FILLS), "kernels": rows, "all_identical": ok}
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1))
    print(f"{sum(1 for r in rows for v in r['forms'].values() if v['verdict'] == 'identical')} identical form(s) "
          f"over {len(rows)} kernel(s); all identical: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
