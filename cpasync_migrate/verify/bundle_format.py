"""The GPU bundle's contract: what the writer (:mod:`.bundle`) and the runner (:mod:`.gpu`) both rely on.

A bundle is a directory (docs/gpu.md, "What a bundle holds")::

    bundle.json          FORMAT, VERSION, seeds, sentinels, meta, and one item per kernel pair
    cuda/ID.old.cu       lowered CUDA of the old form (entry renamed ``ID_old``), prefill variant
    cuda/ID.new.cu       the same for the new form
    expected/ID.npz      the CPU interpreter's output of the old form for the runner's own inputs, one
                         array per :func:`expected_key`
    texts/...            the Python texts the items came from (for reading; the runner does not need them)

This module holds the parts both sides must agree on: the format name and version, the output
sentinels, the input recipe (the device generator ``GEN_SOURCE`` and its numpy mirror
:func:`host_inputs`, so that the CPU side can compute the interpreter's output for the very bytes the
device will use), the arena layout with its guards, the names of the expected outputs, and loading and
checking a bundle.  It needs numpy and nothing else.
"""
from __future__ import annotations

import json
import os
from typing import Optional

import numpy as np

FORMAT = "cpasync-migrate-gpu-bundle"
VERSION = 1
SENTINELS = (0xA5, 0xFF)
GUARD = 4096  # bytes around every parameter in the arena
GUARD_BYTE = 0x5A
ALIGN = 256

# ---------------------------------------------------------------------------------------------- inputs
# One 64-bit hash per element: h = splitmix64(key + (i + 1) * golden), key from (seed, parameter index).
# The same integer recipe runs on the device (GEN_SOURCE) and in numpy (host_inputs), so the CPU side can
# rebuild the exact inputs for the interpreter cross-check.
M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
FLOAT_LAYOUT = {"float16": (16, 5, 10), "bfloat16": (16, 8, 7), "float32": (32, 8, 23), "float64": (64, 11, 52)}
KINDS = {"raw": 0, "int": 1, "bool": 2, "float16": 3, "bfloat16": 4, "float32": 5, "float64": 6}

GEN_SOURCE = r"""
__device__ __forceinline__ unsigned long long cpm_float_bits(unsigned long long h, int bits, int ebits, int mbits) {
  unsigned long long sign = (h >> 63) & 1ull;
  unsigned long long expmask = ((1ull << ebits) - 1ull) << mbits;
  if ((h & 15ull) == 0ull) {
    unsigned long long sel = (h >> 4) % 3ull;
    if (sel == 0ull) {
      int pm = mbits < 30 ? mbits : 30;
      unsigned long long payload = ((h >> 8) % ((1ull << pm) - 1ull)) + 1ull;
      return (sign << (bits - 1)) | expmask | payload;
    }
    unsigned long long j = (h >> 8) & 3ull;
    return ((j & 1ull) << (bits - 1)) | (j >= 2ull ? expmask : 0ull);
  }
  unsigned long long bias = (1ull << (ebits - 1)) - 1ull;
  unsigned long long e = bias - 6ull + ((h >> 4) % 10ull);
  unsigned long long m = (h >> 12) & ((1ull << mbits) - 1ull);
  return (sign << (bits - 1)) | (e << mbits) | m;
}

extern "C" __global__ void cpm_gen_inputs(unsigned char* out, long long n, int kind, int itemsize,
                                          unsigned long long key) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    unsigned long long z = key + (unsigned long long)(i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    unsigned long long h = z ^ (z >> 31);
    unsigned long long v;
    switch (kind) {
      case 0: v = h & 0xFFull; break;
      case 1: v = (h >> 8) % 1024ull; break;
      case 2: v = h & 1ull; break;
      case 3: v = cpm_float_bits(h, 16, 5, 10); break;
      case 4: v = cpm_float_bits(h, 16, 8, 7); break;
      case 5: v = cpm_float_bits(h, 32, 8, 23); break;
      default: v = cpm_float_bits(h, 64, 11, 52); break;
    }
    for (int b = 0; b < itemsize; ++b) out[i * itemsize + b] = (unsigned char)(v >> (8 * b));
  }
}
"""


def input_kind(dtype: str, itemsize: int) -> str:
    if dtype in FLOAT_LAYOUT:
        return dtype
    if dtype == "bool":
        return "bool"
    if itemsize == 1:
        return "raw"  # int8, uint8 and the float8 types: every byte value
    return "int"


def buffer_key(seed: int, index: int) -> int:
    return _mix_int((seed * 0x100000001B3 + index * 0x9E37 + 0x51ED) & M64)


def _mix_int(z: int) -> int:
    z = (z + GOLDEN) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def _u(x: int):
    return np.uint64(x)


def host_inputs(dtype: str, itemsize: int, numel: int, seed: int, index: int) -> np.ndarray:
    """The bytes the device generator writes for one parameter (numpy mirror of ``cpm_gen_inputs``)."""
    kind = input_kind(dtype, itemsize)
    key = buffer_key(seed, index)
    i = np.arange(1, numel + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = _u(key) + i * _u(GOLDEN)
        z = (z ^ (z >> _u(30))) * _u(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> _u(27))) * _u(0x94D049BB133111EB)
        h = z ^ (z >> _u(31))
        if kind == "raw":
            v = h & _u(0xFF)
        elif kind == "int":
            v = (h >> _u(8)) % _u(1024)
        elif kind == "bool":
            v = h & _u(1)
        else:
            bits, ebits, mbits = FLOAT_LAYOUT[kind]
            sign = (h >> _u(63)) & _u(1)
            expmask = _u(((1 << ebits) - 1) << mbits)
            top = _u(bits - 1)
            special = (h & _u(15)) == 0
            sel = (h >> _u(4)) % _u(3)
            pm = min(mbits, 30)
            payload = ((h >> _u(8)) % _u((1 << pm) - 1)) + _u(1)
            nan = (sign << top) | expmask | payload
            j = (h >> _u(8)) & _u(3)
            spec = ((j & _u(1)) << top) | np.where(j >= _u(2), expmask, _u(0))
            bias = (1 << (ebits - 1)) - 1
            e = _u(bias - 6) + ((h >> _u(4)) % _u(10))
            m = (h >> _u(12)) & _u((1 << mbits) - 1)
            finite = (sign << top) | (e << _u(mbits)) | m
            v = np.where(special, np.where(sel == 0, nan, spec), finite)
    v = v.astype(np.uint64)
    out = np.empty((numel, itemsize), dtype=np.uint8)
    for b in range(itemsize):
        out[:, b] = ((v >> _u(8 * b)) & _u(0xFF)).astype(np.uint8)
    return out.reshape(-1)


# ---------------------------------------------------------------------------------------------- layout
def arena_layout(params: list) -> tuple[list, int]:
    """Byte offset of each parameter in the arena, and the arena's size (guards before, between, after)."""
    offs = []
    pos = GUARD
    for p in params:
        pos = -(-pos // ALIGN) * ALIGN
        offs.append(pos)
        pos += int(p["bytes"]) + GUARD
    return offs, -(-pos // ALIGN) * ALIGN


def itemsize_of(p: dict) -> int:
    n = 1
    for s in p["shape"]:
        n *= s
    return max(1, int(p["bytes"]) // max(1, n))


# ---------------------------------------------------------------------------------------------- outputs
def expected_key(seed: int, sentinel: int, name: str = "") -> str:
    """The name, in ``expected/ID.npz``, of the interpreter's output of parameter ``name`` for one seed and
    sentinel (with ``name`` empty: the prefix of every output of that run)."""
    return f"s{seed}_x{sentinel:02x}_{name}"


# ---------------------------------------------------------------------------------------------- bundles
def load_bundle(directory: str) -> dict:
    """``bundle.json`` of ``directory``, checked for the format and version (``dir`` added)."""
    with open(os.path.join(directory, "bundle.json"), encoding="utf-8") as f:
        b = json.load(f)
    if b.get("format") != FORMAT:
        raise ValueError(f"{directory}: not a {FORMAT} (format {b.get('format')!r})")
    if b.get("version") != VERSION:
        raise ValueError(f"{directory}: {FORMAT} version {b.get('version')!r}; this runner reads version {VERSION}")
    b["dir"] = directory
    return b


def read_member(directory: str, rel: Optional[str]) -> Optional[str]:
    """The text of the bundle's file ``rel`` (None for no file)."""
    if not rel:
        return None
    with open(os.path.join(directory, rel), encoding="utf-8") as f:
        return f.read()
