"""The GPU harness on a real device (marked ``gpu``: skipped where cupy sees no GPU).

These tests need numpy, cupy and the verifier (stdlib ``ast``), not libcst or tree-sitter: they build
bundles from the hand-written pairs of tests/fixtures/verify and run them with the device runner.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from cpasync_migrate.rules import load_rules
from cpasync_migrate.verify import verify_source
from cpasync_migrate.verify.bundle import kernel_items, write_bundle
from cpasync_migrate.verify.bundle_format import FLOAT_LAYOUT, host_inputs
from cpasync_migrate.verify.gpu import run_bundle

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from gpu_evidence import mutant_sources, verify_fixture_sources  # noqa: E402
VERIFY = ROOT / "tests" / "fixtures" / "verify"
RULES = load_rules()
CASES = {c["name"]: c for c in tomllib.loads((VERIFY / "cases.toml").read_text())["case"]}


def bundle_of(sources, tmp_path, name="b", seeds=2):
    items = []
    for s in sources:
        items += kernel_items(s["old"], s["new"], s["path"], rules=RULES, target=s["target"], source=s["source"],
                              binds=s["binds"], category=s["category"], name=s["name"], expect=s["expect"])
    d = tmp_path / name
    write_bundle(items, str(d), seeds=seeds)
    return str(d)


def case_source(name, new_text=None, expect="equivalent", target=None):
    c = CASES[name]
    return {"category": "t", "name": name, "path": str(VERIFY / c["old"]), "old": (VERIFY / c["old"]).read_text(),
            "new": new_text if new_text is not None else (VERIFY / c["new"]).read_text(),
            "target": target or c["target"], "source": c.get("source"), "binds": None, "expect": expect}


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("cubin"))


def test_device_inputs_are_the_host_mirror():
    import cupy as cp

    from cpasync_migrate.verify.gpu import Device

    dev = Device()
    for dtype, isz in (("float16", 2), ("bfloat16", 2), ("float32", 4), ("float64", 8), ("int8", 1),
                       ("int32", 4), ("int64", 8), ("bool", 1)):
        n = 5000
        buf = cp.zeros(n * isz, dtype=cp.uint8)
        dev.gen_into(buf, dtype, isz, n, seed=7, index=3)
        got = cp.asnumpy(buf)
        want = host_inputs(dtype, isz, n, 7, 3)
        assert np.array_equal(got, want), dtype
        if dtype in FLOAT_LAYOUT:
            bits, ebits, mbits = FLOAT_LAYOUT[dtype]
            u = got.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[isz]).astype(np.uint64)
            exp = (u >> np.uint64(mbits)) & np.uint64((1 << ebits) - 1)
            mant = u & np.uint64((1 << mbits) - 1)
            sign = u >> np.uint64(bits - 1)
            nan = (exp == (1 << ebits) - 1) & (mant != 0)
            assert nan.sum() > n // 100 and len(np.unique(mant[nan])) > 10  # NaNs with many payloads
            assert sign[nan].min() == 0 and sign[nan].max() == 1  # of both signs
            zero = (exp == 0) & (mant == 0)
            assert sign[zero].min() == 0 and sign[zero].max() == 1  # signed zeros
        elif dtype in ("int32", "int64"):
            v = got.view({4: np.int32, 8: np.int64}[isz])
            assert v.min() >= 0 and v.max() <= 1023
        # another seed gives other data
        dev.gen_into(buf, dtype, isz, n, seed=8, index=3)
        assert not np.array_equal(cp.asnumpy(buf), want)


def test_fixture_pairs_are_equivalent_on_the_device(tmp_path, cache_dir):
    d = bundle_of([s for s in verify_fixture_sources(str(VERIFY))], tmp_path)
    rep = run_bundle(d, cache_dir=cache_dir)
    rows = rep["kernels"]
    assert rows and all(r["as_expected"] for r in rows), [r for r in rows if not r["as_expected"]]
    ran = [r for r in rows if r["gpu"].get("verdict") == "equivalent"]
    assert len(ran) >= 10
    # the small data-movement kernels agree with the CPU interpreter bit for bit
    agree = [r for r in rows if r["crosscheck"]["status"] == "agree"]
    assert len(agree) >= 4, [r["crosscheck"] for r in rows]
    assert not [r for r in rows if r["crosscheck"]["status"] == "disagree"]


def test_mutants_are_mismatches_on_the_device(tmp_path, cache_dir):
    d = bundle_of(mutant_sources(str(VERIFY)), tmp_path, seeds=1)
    rep = run_bundle(d, cache_dir=cache_dir)
    rows = [r for r in rep["kernels"] if r["expect"] == "mismatch"]
    assert len(rows) >= 20 and all(r["verdict"] == "mismatch" for r in rows), \
        [(r["name"], r["verdict"], r["reason"]) for r in rows if r["verdict"] != "mismatch"]
    by_kind = {r["name"]: r for r in rows}
    # the device run itself refutes the address and size mistakes (not only the static checks)
    for kind in ("copy_tile: offset dropped", "copy_tile: wrong pointer type", "predicated_tail: predicate lost",
                 "predicated_tail: predicate inverted", "gemm_pipeline: stage offset dropped"):
        assert by_kind[kind]["gpu"]["verdict"] == "mismatch", by_kind[kind]


def test_first_difference_names_buffer_index_and_sentinel(tmp_path, cache_dir):
    text = (VERIFY / CASES["copy_tile"]["new"]).read_text().replace(", 8, 1), 16)", ", 8, 1), 8)")
    d = bundle_of([case_source("copy_tile", text, expect="mismatch")], tmp_path, seeds=1)
    (row,) = run_bundle(d, cache_dir=cache_dir)["kernels"]
    fd = row["gpu"]["first_difference"]
    assert row["verdict"] == "mismatch" and row["gpu"]["verdict"] == "mismatch"
    # as on the CPU: the first 8 bytes of each 16-byte chunk arrive, halves 4..7 keep the shared sentinel
    assert fd["buffer"] == "B" and fd["index"] == [0, 4] and fd["seed"] == 0 and fd["sentinel"] == "0xa5"
    assert fd["new"].endswith("(0xa5a5)")
    assert "B[0, 4]" in row["reason"]


def test_compile_cache_is_hit_on_the_second_run(tmp_path):
    cache = str(tmp_path / "cache")
    d = bundle_of([case_source("copy_tile"), case_source("mixed_width")], tmp_path, seeds=1)
    first = run_bundle(d, cache_dir=cache)["totals"]["compile_events"]
    second = run_bundle(d, cache_dir=cache)["totals"]["compile_events"]
    assert first[0]["cache_misses"] >= 1 and first[0]["cache_hits"] == 0
    assert second[0]["cache_misses"] == 0 and second[0]["cache_hits"] == first[0]["chunks"]
    assert any(f.endswith(".cubin") for f in os.listdir(cache))


def test_a_faulting_new_form_is_a_mismatch_and_the_run_goes_on(tmp_path, cache_dir):
    # a destination offset that is not 16-byte aligned: cp.async faults (misaligned address) on the device
    bad = (VERIFY / CASES["copy_tile"]["new"]).read_text().replace("A_shared.data, (i * 128 + tx) * 8, 8, 2)",
                                                                   "A_shared.data, (i * 128 + tx) * 8 + 1, 8, 2)")
    assert bad != (VERIFY / CASES["copy_tile"]["new"]).read_text()
    d = bundle_of([case_source("copy_tile", bad, expect="mismatch"), case_source("mixed_width")], tmp_path, seeds=1)
    rep = run_bundle(d, cache_dir=cache_dir)
    a, b = rep["kernels"]
    assert a["gpu"]["verdict"] == "mismatch" and "faults" in a["gpu"]["reason"], a["gpu"]
    assert b["verdict"] == "equivalent" and b["gpu"]["verdict"] == "equivalent"
    assert rep["totals"]["faults"] == 1


def test_verify_source_on_the_gpu():
    c = CASES["mixed_width_019"]
    vs = verify_source((VERIFY / c["old"]).read_text(), (VERIFY / c["new"]).read_text(), c["old"], rules=RULES,
                       target=c["target"], device="gpu", seeds=2)
    assert [v.verdict for v in vs] == ["equivalent"]
    assert vs[0].detail["device"] == "gpu" and vs[0].detail["gpu"]["verdict"] == "equivalent"
    assert vs[0].sites and vs[0].sites[0]["verdict"] == "equivalent"


def test_runner_entry_point_writes_json(tmp_path, cache_dir):
    d = bundle_of([case_source("copy_tile_019")], tmp_path, seeds=1)
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "-m", "cpasync_migrate.verify.gpu", d, "--json", str(out), "--cache",
                        cache_dir], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    rep = json.loads(out.read_text())
    assert rep["summary"]["t"]["equivalent"] == 1 and "equivalent" in r.stdout
    assert rep["device"]["arch"].startswith("sm_")


def test_separate_buffers_mode_gives_the_same_verdicts(tmp_path, cache_dir):
    srcs = [case_source("copy_tile"), case_source("predicated_tail"),
            case_source("copy_tile", (VERIFY / CASES["copy_tile"]["new"]).read_text().replace(
                "A.data, bx * block_M * N + (i * 128 + tx) * 8, 8, 1)", "A.data, (i * 128 + tx) * 8, 8, 1)"),
                expect="mismatch")]
    d = bundle_of(srcs, tmp_path, seeds=1)
    arena = run_bundle(d, cache_dir=cache_dir)["kernels"]
    sep = run_bundle(d, cache_dir=cache_dir, separate=True)["kernels"]
    assert [r["gpu"]["verdict"] for r in arena] == [r["gpu"]["verdict"] for r in sep] == \
        ["equivalent", "equivalent", "mismatch"]
    assert arena[2]["gpu"]["first_difference"]["index"] == sep[2]["gpu"]["first_difference"]["index"]
