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


def run_isolated(bundle: Path, form: dict) -> tuple[dict, str | None]:
    """Run one form for every fill in a child process (a fault such as a misaligned address leaves
    a CUDA context unusable, so it must not share one with the other forms).

    Returns ({fill: [(name, bytes), ...]}, error)."""
    import pickle
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        req, res = Path(d) / "form.json", Path(d) / "result.pickle"
        req.write_text(json.dumps(form))
        proc = subprocess.run([sys.executable, "-P", str(Path(__file__).resolve()), "--child", str(bundle),
                               str(req), str(res)], capture_output=True, text=True, timeout=300)
        if proc.returncode != 0 or not res.is_file():
            return {}, f"child exited {proc.returncode}: {proc.stderr.strip()[-400:]}"
        out = pickle.loads(res.read_bytes())
    return out["bytes"], out["error"]


def child(bundle: Path, req: Path, res: Path) -> int:
    import pickle

    import cupy as cp

    form = json.loads(req.read_text())
    got, err = {}, None
    for fill in FILLS:
        b, err = run_form(cp, bundle, form, fill)
        if err:
            break
        got[fill] = b
    res.write_bytes(pickle.dumps({"bytes": got, "error": err}))
    return 0


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
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        return child(Path(argv[1]), Path(argv[2]), Path(argv[3]))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bundle", type=Path)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    import cupy as cp  # the device's name; every form runs in a child process of its own

    manifest = json.loads((args.bundle / "manifest.json").read_text())
    rows, ok = [], True
    for item in manifest["kernels"]:
        legacy = item["forms"].get("legacy")
        row = {"file": item["file"], "kernel": item["kernel"], "merged": legacy and legacy.get("merged"),
               "forms": {}}
        ref, err = run_isolated(args.bundle, legacy)
        again, err2 = run_isolated(args.bundle, legacy) if err is None else ({}, None)
        if err or err2:
            row["legacy_error"] = err or err2
        else:
            odd = [f for f in FILLS if ref[f] != again[f]]
            if odd:
                row["legacy_nondeterministic"] = odd[0]
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
            got, err = run_isolated(args.bundle, f)
            if err:
                verdict = {"verdict": "error", "detail": err, "fill": FILLS[len(got)] if len(got) < len(FILLS) else ""}
            for fill in FILLS:
                if err:
                    break
                if got[fill] != ref[fill]:
                    verdict = {"verdict": "differs", "detail": first_difference(ref[fill], got[fill]), "fill": fill}
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
