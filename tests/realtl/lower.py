"""Lower the kernels of one TileLang script and list the cp.async copies in the CUDA.

Runs INSIDE a virtual environment made by scripts/realtl_setup.sh (through its
``run-python``), never in the project's own environment:

    run-python tests/realtl/lower.py KERNELS.py [MORE.py ...] [--bind NAME=VALUE ...]

This is a test instrument for the project's own example kernels: it imports
the file (the migration tool itself never imports user code).  Every
``tir.PrimFunc`` bound at module level is lowered, and every module-level
function whose parameters all have defaults is called (with ``--bind`` values
for the parameters it names) and lowered when it returns a ``PrimFunc``.

Lowering uses ``tilelang.lower(func, target=Target("cuda -arch=sm_90"))``
inside a ``PassContext`` and that target's context; it queries no device.  The output is one JSON object
on stdout:

    {"tilelang": "0.1.8", "tvm_ffi": "0.1.8.post2", "file": "...",
     "kernels": {"NAME": {"copies": [{"op": "cp_async_gs", "n": 16,
                                      "dst": "...", "src": "...",
                                      "predicate": null}, ...],
                          "buffers": {"A": "half_t", "A_s": "float"},
                          "aliases": {"x_s": ["buf_dyn_shmem", 16384]},
                          "dyn_shmem": true, "error": null}, ...},
     "error": null}

(a JSON list of such objects when several files are given: one process
imports TileLang once for all of them).

``dst``/``src`` are the address expressions exactly as the CUDA prints them;
``buffers`` gives the C element type of each kernel parameter and shared
array (what a legacy ``NAME+offset`` counts in); ``aliases`` the untyped
pointers later releases declare into the merged shared array;
``dyn_shmem`` says whether the kernel's shared buffers were merged into
TileLang's single dynamic shared-memory array.  With ``--source-dir DIR``, each
kernel's CUDA source is also written to ``DIR/<file>.<kernel>.cu`` and how to
launch it (entry, grid, block, dynamic shared bytes, parameters with dtype and
shape, in the device function's order) to ``DIR/<file>.<kernel>.json``.  Exit status 1 when a file
could not be imported or a kernel failed to lower (its ``error`` says why),
2 on bad usage.
"""

from __future__ import annotations

import argparse
import ast
import importlib.metadata
import importlib.util
import inspect
import json
import re
import sys
import traceback
from pathlib import Path

_COPY_RE = re.compile(r"\btl::(cp_async_gs(?:_conditional)?)\s*<\s*(\d+)\s*>\s*\(")
# Kernel parameters (`const half_t* __restrict__ A`) and shared arrays
# (`extern __shared__ __align__(1024) uchar buf_dyn_shmem[];`).
_PARAM_RE = re.compile(r"(?:const\s+)?([A-Za-z_][\w:]*)\s*\*\s*(?:__restrict__\s+)?([A-Za-z_]\w*)\s*[,)]")
_SHARED_RE = re.compile(r"__shared__\s+(?:__align__\(\d+\)\s+)?([A-Za-z_][\w:]*)\s+([A-Za-z_]\w*)\s*\[")
# Register arrays (`T.alloc_local`, `T.alloc_fragment`): `  half_t L[8];` on a line of its own.
_LOCAL_RE = re.compile(r"(?m)^[ \t]+([A-Za-z_][\w:]*)[ \t]+([A-Za-z_]\w*)\[\d+\];$")
# Later releases name each merged buffer by a pointer into the dynamic array:
# `void* A_s = ((void*)((char*)buf_dyn_shmem + 16384));`
_ALIAS_RE = re.compile(
    r"void\s*\*\s*([A-Za-z_]\w*)\s*=\s*\(\(void\s*\*\)\(\(char\s*\*\)([A-Za-z_]\w*)\s*\+\s*(\d+)\)\);"
)
_KERNEL_RE = re.compile(r"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s*)?\w+\s*\(([^)]*)\)\s*\{")


def split_args(text: str, start: int) -> tuple[list[str], int]:
    """Split the argument list that opens at text[start] == '(' at top-level commas."""
    assert text[start] == "("
    depth = 0
    args: list[str] = []
    cur = start + 1
    i = start
    while i < len(text):
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                args.append(text[cur:i].strip())
                return args, i + 1
        elif ch == "," and depth == 1:
            args.append(text[cur:i].strip())
            cur = i + 1
        i += 1
    raise ValueError(f"unbalanced parentheses after offset {start}")


def find_copies(source: str) -> list[dict]:
    copies = []
    for m in _COPY_RE.finditer(source):
        args, _ = split_args(source, m.end() - 1)
        copies.append(
            {
                "op": m.group(1),
                "n": int(m.group(2)),
                "dst": args[0],
                "src": args[1],
                "predicate": args[2] if len(args) > 2 else None,
            }
        )
    return copies


def find_buffers(source: str) -> dict[str, str]:
    """C element type of every kernel pointer parameter, shared array and register array."""
    buffers: dict[str, str] = {}
    for km in _KERNEL_RE.finditer(source):
        for pm in _PARAM_RE.finditer(km.group(1) + ")"):
            buffers[pm.group(2)] = pm.group(1)
    for sm in _SHARED_RE.finditer(source):
        buffers[sm.group(2)] = sm.group(1)
    for lm in _LOCAL_RE.finditer(source):
        buffers.setdefault(lm.group(2), lm.group(1))
    return buffers


def make_target(tvm, arch: str):
    """CUDA target for ``arch``: the string form where the release takes it,
    else the dict form (later releases accept only that)."""
    try:
        return tvm.target.Target(f"cuda -arch={arch}")
    except Exception:
        return tvm.target.Target({"kind": "cuda", "arch": arch})


def find_aliases(source: str) -> dict[str, list]:
    """Pointer names into a shared array: name -> [array, byte offset]."""
    return {m.group(1): [m.group(2), int(m.group(3))] for m in _ALIAS_RE.finditer(source)}


def _parse_bind(items: list[str]) -> dict[str, object]:
    out: dict[str, object] = {}
    for item in items:
        if "=" not in item:
            raise SystemExit(f"--bind expects NAME=VALUE, got {item!r}")
        name, value = item.split("=", 1)
        try:
            out[name] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            out[name] = value
    return out


def _load_module(path: Path):
    spec = importlib.util.spec_from_file_location(f"realtl_kernels_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def collect(module, binds: dict[str, object], prim_func_type) -> list[tuple[str, object]]:
    """(name, PrimFunc or exception) for every kernel the module defines."""
    found: list[tuple[str, object]] = []
    for name, value in list(vars(module).items()):
        if name.startswith("_"):
            continue
        if isinstance(value, prim_func_type):
            found.append((name, value))
            continue
        if not inspect.isfunction(value) or value.__module__ != module.__name__:
            continue
        params = inspect.signature(value).parameters.values()
        if any(
            p.default is inspect.Parameter.empty and p.name not in binds
            for p in params
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ):
            continue
        kwargs = {p.name: binds[p.name] for p in params if p.name in binds}
        try:
            result = value(**kwargs)
        except Exception as exc:  # a factory that fails is reported, not fatal
            found.append((f"{name}()", exc))
            continue
        if isinstance(result, prim_func_type):
            found.append((f"{name}()", result))
    return found


def launch_facts(func, artifact) -> dict:
    """How to launch the lowered kernel: entry, grid, block, dynamic shared bytes, parameters.

    Read off the device function's attributes (``thread_extent``, ``dyn_shared_memory_buf``,
    ``global_symbol``); parameters in the device function's order, each with the dtype and
    shape of the prim_func buffer whose data it is.
    """
    buffers = {}
    for var in func.params:
        buf = func.buffer_map.get(var)
        if buf is not None:
            buffers[buf.data.name] = buf
            buffers.setdefault(buf.name, buf)
    kernels = []
    for gv, dev in artifact.device_mod.functions.items():
        attrs = dict(dev.attrs) if dev.attrs else {}
        ext = {str(k): int(v) for k, v in dict(attrs.get("thread_extent", {})).items()}
        params = []
        for p in dev.params:
            buf = buffers.get(p.name)
            params.append({"name": p.name, "dtype": str(buf.dtype) if buf is not None else str(p.dtype),
                           "shape": [int(x) for x in buf.shape] if buf is not None else None})
        kernels.append({
            "entry": str(attrs.get("global_symbol", gv.name_hint)),
            "grid": [ext.get(f"blockIdx.{a}", 1) for a in "xyz"],
            "block": [ext.get(f"threadIdx.{a}", 1) for a in "xyz"],
            "dynamic_shared_bytes": int(attrs.get("dyn_shared_memory_buf", 0) or 0),
            "params": params,
        })
    return {"kernels": kernels}


def lower_file(path: Path, binds: dict[str, object], target, source_dir: Path | None) -> dict:
    """Lower every kernel of one file: the JSON object described above."""
    import tilelang
    import tvm

    result = {
        "tilelang": importlib.metadata.version("tilelang"),
        "tvm_ffi": importlib.metadata.version("apache-tvm-ffi"),
        "file": str(path),
        "kernels": {},
        "error": None,
    }
    try:
        module = _load_module(path.resolve())
    except Exception as exc:  # the file does not even build its kernels
        result["error"] = traceback.format_exception_only(type(exc), exc)[-1].strip()[-2000:]
        return result
    for name, value in binds.items():
        if hasattr(module, name):
            setattr(module, name, value)

    tir = getattr(tvm, "tir", None) or tvm.tirx  # renamed tirx in later releases
    for name, func in collect(module, binds, tir.PrimFunc):
        entry: dict[str, object] = {"copies": [], "buffers": {}, "aliases": {}, "dyn_shmem": None, "error": None}
        if isinstance(func, BaseException):
            entry["error"] = f"factory raised {type(func).__name__}: {func}"
        else:
            try:
                with tvm.transform.PassContext(), target:  # the newest vectorizer reads the target from here
                    artifact = tilelang.lower(func, target=target)
                source = artifact.kernel_source
                entry["copies"] = find_copies(source)
                entry["buffers"] = find_buffers(source)
                entry["aliases"] = find_aliases(source)
                entry["dyn_shmem"] = "buf_dyn_shmem" in source
                if source_dir is not None:
                    source_dir.mkdir(parents=True, exist_ok=True)
                    stem = re.sub(r"\W", "", name)
                    (source_dir / f"{path.stem}.{stem}.cu").write_text(source)
                    launch = launch_facts(func, artifact)
                    (source_dir / f"{path.stem}.{stem}.json").write_text(json.dumps(launch, indent=1))
            except Exception as exc:
                last = traceback.format_exception_only(type(exc), exc)[-1].strip()
                entry["error"] = last[-2000:]
        result["kernels"][name] = entry
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", type=Path, nargs="+", metavar="FILE",
                    help="kernel files; with several, a JSON list of one object per file")
    ap.add_argument("--bind", action="append", default=[], metavar="NAME=VALUE",
                    help="value for a factory parameter or module constant (repeatable)")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--source-dir", type=Path, default=None,
                    help="also write each kernel's CUDA source there")
    args = ap.parse_args(argv)
    binds = _parse_bind(args.bind)

    import tilelang  # noqa: F401  (puts its bundled tvm on the path)
    import tvm

    target = make_target(tvm, args.arch)
    results = [lower_file(path, binds, target, args.source_dir) for path in args.files]
    failed = any(r["error"] or any(k["error"] for k in r["kernels"].values()) for r in results)
    json.dump(results[0] if len(args.files) == 1 else results, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
