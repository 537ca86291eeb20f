"""Generated pairs of the differential fuzzer for the GPU evidence bundle (``--sweep`` of tests/gpu_evidence.py).

    python tests/gpu_evidence.py --sweep tests/realtl/fuzz_gpu_sweep.py --only sweep -o .gpubundle/fuzz

reads the pairs a run of scripts/fuzz_verify.py saved (``--pairs-json``; by default the runs under
results/2026-12-01-fuzz/, or the files named in ``CPASYNC_FUZZ_PAIRS``, separated by ``:``), keeps those whose
truth, from real TileLang lowering, is ``agree`` (the same cp.async widths and byte addresses at every thread),
and yields a fixed sample of them (``CPASYNC_FUZZ_GPU_SAMPLE``, default 120, spread evenly over the runs): each
must come out ``equivalent`` on the GPU too.  A test instrument, not part of the package.
"""
from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = sorted((ROOT / "results" / "2026-12-01-fuzz").glob("*.pairs.jsonl.gz"))


def _pairs(paths):
    for p in paths:
        opener = gzip.open if str(p).endswith(".gz") else open
        with opener(p, "rt", encoding="utf-8") as fh:
            for line in fh:
                yield json.loads(line)


def cases():
    env = os.environ.get("CPASYNC_FUZZ_PAIRS")
    paths = [Path(x) for x in env.split(":")] if env else DEFAULT
    want = int(os.environ.get("CPASYNC_FUZZ_GPU_SAMPLE", "120"))
    agree = [d for d in _pairs(paths) if d["truth"] == "agree"]
    step = max(1, len(agree) // max(1, want))
    out = []
    for d in agree[::step][:want]:
        out.append({"name": f"{d['case']}:{d['kind']}@{d['target']}", "old": d["old"], "new": d["new"],
                    "target": d["target"], "source": None, "expect": "equivalent",
                    "tags": {"family": "fuzz", "kind": d["kind"]}})
    return out


if __name__ == "__main__":
    cs = cases()
    print(f"{len(cs)} pairs whose real lowering agrees")
