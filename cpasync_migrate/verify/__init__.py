"""Translation validation of ptx_cp_async migrations, kernel by kernel.

The verifier re-derives the meaning of the old and the new text on its own
(it shares no code with the rewriters): it builds a kernel IR for every
``@T.prim_func`` in both texts, checks each cp.async site statically and runs
both kernels in a numpy interpreter on the same inputs, comparing every
output bit.  See docs/verify.md.

The names below are loaded on first use, so that importing a submodule (the GPU runner
:mod:`.gpu` above all) does not load the whole verifier:

    verifier.py       verify_source, verify_source_gpu, lower_cuda, emit_cuda, Verdict
    options.py        VerifyOptions: what one verification is asked to do
    build/            the kernel IR (ir.py) from a module's text (stdlib ast): module.py, statements.py,
                      copies.py, expressions.py, context.py, parts.py (a Protocol per part), identity.py
    sites.py          the static per-site proof; structure.py: the same program apart from cp.async
    smem.py           merged shared memory (the legacy destination's unit)
    interp.py         the numpy interpreter; dynamic.py runs both forms and compares them
    cuda.py           the CUDA lowering
    bundle_format.py  the GPU bundle's contract: format, sentinels, inputs, arena, loading
    bundle.py         the bundle writer (CPU side)
    gpu.py            the bundle runner (numpy and cupy only)
"""
from __future__ import annotations

__all__ = ["Verdict", "VerifyOptions", "verify_source", "verify_source_gpu", "lower_cuda", "emit_cuda", "VERDICTS"]

VERDICTS = ("equivalent", "mismatch", "inconclusive")

_HOME = {"Verdict": "verifier", "verify_source": "verifier", "verify_source_gpu": "verifier",
         "lower_cuda": "verifier", "emit_cuda": "verifier", "sweep_bindings": "verifier", "MAX_SWEEP": "verifier",
         "VerifyOptions": "options"}


def __getattr__(name: str):
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_HOME))
