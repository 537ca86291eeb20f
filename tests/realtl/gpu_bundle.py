"""Build a bundle of real-TileLang kernels for a GPU comparison (CPU side).

    python tests/realtl/gpu_bundle.py OUT_DIR [--arch sm_90a] [FILES...]

For every kernel file (default: examples/*.py and tests/realtl/kernels/*.py), the
legacy text is lowered by TileLang 0.1.7.post1; a copy migrated by the tool
(``--unsafe-fixes``, as the realtl test does) is lowered by 0.1.8 and by the newest
release (``tl-latest``).  Where the migration typed a byte tile's destination with the
call's dtype (merged shared memory), a form ``0.1.8-tile-dtype`` keeps the tile's own
type instead, as a migration that ignored the merge would: it is expected to differ.  Each lowered source is compiled here with ``nvcc -cubin``
against the headers of the release that printed it.  OUT_DIR then holds the cubins
and ``manifest.json``: one entry per kernel with, per form (``legacy``, ``0.1.8``,
``latest``), the cubin's file name and how to launch it (``tests/realtl/lower.py``'s
launch facts).  ``tests/realtl/gpu_compare.py`` runs the bundle on a GPU with numpy
and cupy only.

Uses the environments of scripts/realtl_setup.sh; this script is a test instrument
and imports the kernels only inside those environments (through lower.py).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOWER = ROOT / "tests" / "realtl" / "lower.py"
REALTL_DIR = Path(os.environ.get("CPASYNC_REALTL_DIR", "~/.cache/cpasync-migrate/realtl")).expanduser()
ENVS = {"legacy": "tl-0.1.7.post1", "0.1.8": "tl-0.1.8", "latest": "tl-latest"}


# A destination access pointer typed with the call's dtype on a byte-sized tile (the migration of a
# call in merged shared memory, laid out over one or more lines): group 1 the dtype, 2 the tile,
# 3 the offset, 4 the extent.
TILE_DTYPE_RE = re.compile(r'T\.type_annotation\("(float16|float32)"\),\s*(stage|raw)\.data,\s*([^,]+?),\s*(\d+),\s*2\s*\)')
TILE_TYPES = {"stage": "uint8", "raw": "int8"}
CALL_SIZES = {"float16": 2, "float32": 4}


def _tile_dtype(m: re.Match) -> str:
    return (f'T.type_annotation("{TILE_TYPES[m.group(2)]}"), {m.group(2)}.data, {m.group(3)}, '
            f'{int(m.group(4)) * CALL_SIZES[m.group(1)]}, 2)')


def _test_realtl():
    spec = importlib.util.spec_from_file_location("realtl_test_helpers", ROOT / "tests" / "test_realtl.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def tilelang_root(env: Path) -> Path:
    found = sorted(env.glob("lib/python*/site-packages/tilelang"))
    if not found:
        raise SystemExit(f"no tilelang package in {env}")
    return found[0]


def lower(env: Path, files: list[Path], source_dir: Path) -> dict:
    proc = subprocess.run([str(env / "run-python"), str(LOWER), *map(str, files), "--source-dir", str(source_dir)],
                          capture_output=True, text=True)
    out = json.loads(proc.stdout)
    return {Path(r["file"]).name: r for r in (out if isinstance(out, list) else [out])}


def compile_cubin(env: Path, source: Path, cubin: Path, arch: str) -> None:
    tl = tilelang_root(env)
    cmd = ["nvcc", "-cubin", f"-arch={arch}", "-std=c++17", "-O3", "-w", "-DENABLE_BF16",
           f"-I{tl / 'src'}", f"-I{tl / '3rdparty' / 'cutlass' / 'include'}", "-o", str(cubin), str(source)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"nvcc failed on {source}:\n{proc.stderr[-3000:]}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("files", type=Path, nargs="*")
    ap.add_argument("--arch", default="sm_90a")
    args = ap.parse_args(argv)
    helpers = _test_realtl()
    files = args.files or helpers.EXAMPLES
    envs = {form: REALTL_DIR / name for form, name in ENVS.items()}
    for form, env in envs.items():
        if not (env / ".ready").is_file():
            raise SystemExit(f"{env} is not ready: run scripts/realtl_setup.sh")
    latest = helpers.latest_version(envs)
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="realtl-gpu-"))
    manifest = {"tilelang": {}, "arch": args.arch, "kernels": []}
    try:
        texts = {"legacy": {f.name: f for f in files}}
        for form, version in (("0.1.8", "0.1.8"), ("latest", latest)):
            d = work / form
            d.mkdir()
            texts[form] = {}
            for f in files:
                copy = d / f.name
                shutil.copyfile(f, copy)
                proc = helpers.run_tool("--target", version, "--unsafe-fixes", copy, cwd=d)
                if proc.returncode != 0:
                    print(f"{f.name}: not migrated to {version} (exit {proc.returncode}); skipped", file=sys.stderr)
                    continue
                if form == "latest":
                    copy.write_text(helpers.strip_region_annotations(copy.read_text()))
                texts[form][f.name] = copy
        # The rule the tool followed before it knew merged shared memory: the tile's own type as the
        # destination's pointer type, with the legacy offset unchanged.  Expected to differ on the GPU.
        d = work / "0.1.8-tile-dtype"
        d.mkdir()
        texts["0.1.8-tile-dtype"] = {}
        for name, copy in texts["0.1.8"].items():
            text = copy.read_text()
            wrong = TILE_DTYPE_RE.sub(_tile_dtype, text)
            if wrong != text:
                (d / name).write_text(wrong)
                texts["0.1.8-tile-dtype"][name] = d / name
        envs["0.1.8-tile-dtype"] = envs["0.1.8"]
        lowered = {}
        for form, by_name in texts.items():
            if not by_name:
                continue  # no file has this form (the tile-dtype one where no chosen kernel merges a byte tile)
            src = work / f"src-{form}"
            lowered[form] = (lower(envs[form], list(by_name.values()), src), src)
            first = next(iter(lowered[form][0].values()), None)
            if first:
                manifest["tilelang"][form] = first["tilelang"]
        legacy_results, legacy_src = lowered["legacy"]
        for fname, res in sorted(legacy_results.items()):
            for kname, entry in res["kernels"].items():
                if entry.get("error"):
                    print(f"{fname}:{kname}: legacy lowering failed: {entry['error']}", file=sys.stderr)
                    continue
                item = {"file": fname, "kernel": kname, "forms": {}}
                stem = Path(fname).stem
                for form in lowered:
                    results, src = lowered[form]
                    r = results.get(fname)
                    if r is None or kname not in r["kernels"] or r["kernels"][kname].get("error"):
                        continue
                    base = stem + "." + re.sub(r"\W", "", kname)  # as lower.py names them
                    cu, facts = src / f"{base}.cu", src / f"{base}.json"
                    if not cu.is_file() or not facts.is_file():
                        continue
                    if form.endswith("-tile-dtype"):
                        right = lowered["0.1.8"][1] / f"{base}.cu"
                        if right.is_file() and right.read_text() == cu.read_text():
                            continue  # this kernel's migration did not retype a tile: nothing to contrast
                    cubin = f"{base}.{form}.cubin"
                    compile_cubin(envs[form], cu, args.out / cubin, args.arch)
                    launch = json.loads(facts.read_text())["kernels"]
                    item["forms"][form] = {"cubin": cubin, "launch": launch,
                                           "merged": r["kernels"][kname].get("dyn_shmem"),
                                           "expect": "differs" if form.endswith("-tile-dtype") else "identical"}
                manifest["kernels"].append(item)
                print(f"{fname}:{kname}: {', '.join(item['forms'])}", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
