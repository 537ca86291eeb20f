"""The sparse byte-to-character map of a C++ source (``SPARSE_OFFSETS``) equals the per-character one."""
from __future__ import annotations

import random

from cpasync_migrate.cpp import source

SAMPLES = [
    "plain ascii only\n",
    "// é\nint x = 1;  // 幅 → 16 bytes\n",
    "\U0001F600a\U0001F600\U0001F600b\n",
    "mixed: ä ö ü ß \u20ac \U00010348 end",
    "\ud800 lone surrogate kept by surrogatepass",
]


def _boundaries(text: str) -> list[int]:
    out, pos = [], 0
    for ch in text:
        out.append(pos)
        pos += len(ch.encode("utf-8", "surrogatepass"))
    out.append(pos)
    return out


def _check(text: str) -> None:
    dense = source._DenseOffsets(text)
    sparse = source._SparseOffsets(text)
    for i, b in enumerate(_boundaries(text)):
        assert sparse.char(b) == i == dense.char(b), (text, b)


def test_samples():
    for text in SAMPLES:
        _check(text)


def test_random_texts():
    rng = random.Random(7)
    alphabet = ["a", "\n", " ", "é", "\u20ac", "\U0001F600", "\u00ff", "z"]
    for _ in range(300):
        _check("".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 60))))


def test_source_uses_either_map_alike(monkeypatch):
    text = "int a; // π\nint b = ptx_cp_async(); /* ✓ */\n"
    spans = []
    for sparse in (True, False):
        monkeypatch.setattr(source, "SPARSE_OFFSETS", sparse)
        src = source.Source(text)
        spans.append([src.span(n) for n in source.nodes_of_types(src.root, ("identifier", "comment"))])
    assert spans[0] == spans[1] and spans[0]
