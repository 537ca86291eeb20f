"""The CPU side of the GPU harness: bundles, the input generator's host mirror, the sweep, verdict rules.

No GPU needed (the device side is tests/test_gpu.py, marked ``gpu``)."""
from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from cpasync_migrate.rules import load_rules
from cpasync_migrate.verify import verify_source
from cpasync_migrate.verify.bundle import kernel_items, write_bundle
from cpasync_migrate.verify.bundle_format import ALIGN, GUARD, FLOAT_LAYOUT, arena_layout, host_inputs, load_bundle
from cpasync_migrate.verify.gpu import combine, fmt_value, static_verdict

ROOT = Path(__file__).resolve().parent.parent
VERIFY = ROOT / "tests" / "fixtures" / "verify"
RULES = load_rules()
CASES = {c["name"]: c for c in tomllib.loads((VERIFY / "cases.toml").read_text())["case"]}
sys.path.insert(0, str(ROOT / "tests"))
import gpu_sweep  # noqa: E402
from gpu_evidence import control_sources, mutant_sources  # noqa: E402


def items_of(name, new_text=None, target=None, expect="equivalent"):
    c = CASES[name]
    return kernel_items((VERIFY / c["old"]).read_text(), new_text or (VERIFY / c["new"]).read_text(), c["old"],
                        rules=RULES, target=target or c["target"], source=c.get("source"), expect=expect)


# ---------------------------------------------------------------------------------------------- inputs
@pytest.mark.parametrize("dtype,isz", [("float16", 2), ("bfloat16", 2), ("float32", 4), ("float64", 8)])
def test_float_inputs_have_nan_payloads_signed_zeros_and_infinities(dtype, isz):
    raw = host_inputs(dtype, isz, 20000, seed=1, index=0)
    assert np.array_equal(raw, host_inputs(dtype, isz, 20000, seed=1, index=0))  # deterministic
    assert not np.array_equal(raw, host_inputs(dtype, isz, 20000, seed=2, index=0))
    assert not np.array_equal(raw, host_inputs(dtype, isz, 20000, seed=1, index=1))
    bits, ebits, mbits = FLOAT_LAYOUT[dtype]
    u = raw.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[isz]).astype(np.uint64)
    exp = (u >> np.uint64(mbits)) & np.uint64((1 << ebits) - 1)
    mant = u & np.uint64((1 << mbits) - 1)
    sign = u >> np.uint64(bits - 1)
    top = (1 << ebits) - 1
    nan, inf, zero = (exp == top) & (mant != 0), (exp == top) & (mant == 0), (exp == 0) & (mant == 0)
    assert 20000 / 16 / 3 * 0.7 < nan.sum() < 20000 / 16 / 3 * 1.3
    assert len(np.unique(mant[nan])) > 100 and set(sign[nan].tolist()) == {0, 1}
    assert set(sign[zero].tolist()) == {0, 1} and set(sign[inf].tolist()) == {0, 1}
    finite = ~(nan | inf | zero)
    assert finite.mean() > 0.9


def test_integer_inputs():
    i8 = host_inputs("int8", 1, 50000, 0, 0)
    assert len(np.unique(i8)) == 256  # every byte value
    i32 = host_inputs("int32", 4, 5000, 0, 0).view(np.int32)
    assert i32.min() >= 0 and i32.max() <= 1023 and len(np.unique(i32)) > 900
    b = host_inputs("bool", 1, 1000, 0, 0)
    assert set(np.unique(b).tolist()) == {0, 1}


def test_arena_layout_guards_and_alignment():
    params = [{"bytes": 10}, {"bytes": 4096}, {"bytes": 1}]
    offs, size = arena_layout(params)
    assert offs[0] >= GUARD and all(o % ALIGN == 0 for o in offs)
    for (p, o), o2 in zip(zip(params, offs), offs[1:] + [size]):
        assert o2 - (o + p["bytes"]) >= GUARD


def test_fmt_value_prints_value_and_bits():
    assert fmt_value(bytes([0xa5, 0xa5]), "float16") == "-0.0220489501953125 (0xa5a5)"
    assert fmt_value((0x7fc0).to_bytes(2, "little"), "bfloat16") == "nan (0x7fc0)"


# ---------------------------------------------------------------------------------------------- bundles
def test_bundle_items_carry_cuda_launch_params_sites_and_interpreter_output(tmp_path):
    (it,) = items_of("copy_tile")
    assert it["launch"]["grid"] == [4, 1, 1] and it["launch"]["block"] == [128, 1, 1]
    assert [p["role"] for p in it["params"]] == ["input", "output"]
    assert it["sites"] and all(s["verdict"] == "equivalent" for s in it["sites"])
    assert "const unsigned int cpm_fill" in it["old_cuda"] and "cpm_fill_byte" in it["new_cuda"]
    assert set(it["expected"]) == {"s0_xa5_B", "s0_xff_B"}  # a pure copy: cross-checked
    assert np.array_equal(it["expected"]["s0_xa5_B"], host_inputs("float16", 2, 64 * 64, 0, 0))
    write_bundle([it], str(tmp_path), seeds=2)
    b = load_bundle(str(tmp_path))
    (w,) = b["items"]
    assert w["launch"]["old_entry"] == "k00000_old" and b["seeds"] == 2
    old = (tmp_path / w["cuda"]["old"]).read_text()
    assert 'extern "C" __global__' in old and " k00000_old(" in old and "make_copy_main_old" not in old
    z = np.load(tmp_path / w["crosscheck"]["file"])
    assert np.array_equal(z["s0_xff_B"], it["expected"]["s0_xff_B"])


def test_a_bundle_of_another_format_or_version_is_refused(tmp_path):
    (it,) = items_of("copy_tile")
    write_bundle([it], str(tmp_path), seeds=1)
    doc = json.loads((tmp_path / "bundle.json").read_text())
    assert doc["format"] == "cpasync-migrate-gpu-bundle" and doc["version"] == 1
    for key, value, words in (("version", 2, "version 2"), ("format", "other", "not a")):
        (tmp_path / "bundle.json").write_text(json.dumps(dict(doc, **{key: value})))
        with pytest.raises(ValueError, match=words):
            load_bundle(str(tmp_path))


def test_kernel_items_take_one_options_value():
    from cpasync_migrate.verify import VerifyOptions

    c = CASES["mixed_width_019"]
    old, new = (VERIFY / c["old"]).read_text(), (VERIFY / c["new"]).read_text()
    by_value = kernel_items(old, new, c["old"], VerifyOptions(rules=RULES, target=c["target"], crosscheck_bytes=0))
    by_keywords = kernel_items(old, new, c["old"], rules=RULES, target=c["target"], crosscheck_bytes=0)
    assert by_value == by_keywords and by_value[0]["crosscheck"]["reason"].endswith("(cross-checked up to 0)")
    assert "expected" in kernel_items(old, new, c["old"], rules=RULES, target=c["target"])[0]


_WRITE_ONE = """
import sys
from pathlib import Path
from cpasync_migrate.rules import load_rules
from cpasync_migrate.verify.bundle import kernel_items, write_bundle
py = Path("tests/fixtures/python")
items = kernel_items((py / "mixed_width_uint8.in.py").read_text(), (py / "mixed_width_uint8.out.py").read_text(),
                     "b.py", rules=load_rules(), target="0.1.8")
write_bundle(items, sys.argv[1], seeds=1)
"""


def test_a_bundle_is_the_same_bytes_whatever_the_hash_seed(tmp_path):
    """Two output parameters: their arrays go into expected/ID.npz in parameter order, not in the order of
    a set of names (which changes with PYTHONHASHSEED; seeds 0 and 4 order "Out" and "Out8" differently)."""
    import os

    outs = []
    for seed in ("0", "4"):
        d = tmp_path / seed
        r = subprocess.run([sys.executable, "-c", _WRITE_ONE, str(d)], capture_output=True, text=True, cwd=ROOT,
                           env=dict(os.environ, PYTHONHASHSEED=seed))
        assert r.returncode == 0, r.stderr[-2000:]
        outs.append(d)
    (it,) = load_bundle(str(outs[0]))["items"]
    assert [p["name"] for p in it["params"] if p["role"] == "output"] == ["Out", "Out8"]
    with np.load(outs[0] / it["crosscheck"]["file"]) as z:
        assert z.files == ["s0_xa5_Out", "s0_xa5_Out8", "s0_xff_Out", "s0_xff_Out8"]
    for rel in ("bundle.json", it["crosscheck"]["file"], it["cuda"]["old"], it["cuda"]["new"]):
        assert (outs[0] / rel).read_bytes() == (outs[1] / rel).read_bytes(), rel


def test_float_arithmetic_is_not_cross_checked():
    (it,) = items_of("gemm_pipeline")
    assert "expected" not in it and it["crosscheck"]["reason"].startswith("float arithmetic")


def test_kernels_that_cannot_run_are_decided_in_the_bundle():
    gemm = [it for it in items_of("misc") if it["kernel"] == "make_gemm.gemm"][0]
    assert gemm["decided"]["verdict"] == "inconclusive" and "T.gemm" in gemm["decided"]["reason"]
    text = (VERIFY / CASES["copy_tile_019"]["new"]).read_text().replace(", 8, 1), 8)", ", 8, 1), 16)")
    (rej,) = items_of("copy_tile_019", text)
    assert rej["decided"]["verdict"] == "mismatch" and "32 bytes" in rej["decided"]["reason"]
    (gone,) = items_of("copy_tile", "import tilelang.language as T\n")
    assert gone["decided"]["verdict"] == "mismatch" and "missing" in gone["decided"]["reason"]


def test_every_mutant_is_refuted_in_the_bundle_or_left_to_the_device():
    for src in mutant_sources(str(VERIFY)):
        for it in kernel_items(src["old"], src["new"], src["path"], rules=RULES, target=src["target"],
                               source=src["source"], expect=src["expect"]):
            if it["expect"] != "mismatch":
                continue
            static = static_verdict(it)[0]
            assert static == "mismatch" or (it.get("decided") or {}).get("verdict") == "mismatch", src["name"]


def test_combine_rules():
    ok_sites = {"sites": [{"line": 3, "verdict": "equivalent"}]}
    bad_sites = {"sites": [{"line": 3, "verdict": "mismatch", "reason": "dst byte address differs"}]}
    eq, mm = {"verdict": "equivalent", "reason": "same"}, {"verdict": "mismatch", "reason": "B[0]: differs"}
    agree, disagree = {"status": "agree"}, {"status": "disagree", "reason": "B[1]"}
    assert combine(ok_sites, eq, agree)[0] == "equivalent"
    assert combine(bad_sites, eq, agree) == ("mismatch", "site at line 3: dst byte address differs")
    assert combine(ok_sites, mm, agree) == ("mismatch", "B[0]: differs")
    assert combine(ok_sites, eq, disagree)[0] == "inconclusive"
    assert combine(bad_sites, eq, disagree)[0] == "mismatch"
    assert combine(ok_sites, {"verdict": "inconclusive", "reason": "old form faults"}, agree)[0] == "inconclusive"
    decided = dict(bad_sites, decided={"verdict": "inconclusive", "reason": "T.gemm"})
    assert combine(decided, {}, {})[0] == "mismatch"


def test_controls_build():
    names = [s["name"] for s in control_sources()]
    assert any("memcheck" in n for n in names) and any("racecheck" in n for n in names)


def test_evidence_builder_cli(tmp_path):
    """tests/gpu_evidence.py, run as its users run it: a bundle the runner's loader accepts."""
    out = tmp_path / "b"
    r = subprocess.run([sys.executable, "tests/gpu_evidence.py", "--fixtures", "tests/fixtures", "--controls",
                        "--only", "fixture-verify", "--only", "control", "--limit", "2", "--seeds", "1", "-j", "1",
                        "-o", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(r.stdout)
    assert set(res["by_category"]) == {"fixture-verify", "control"} and res["items"] >= 4
    b = load_bundle(str(out))
    assert len(b["items"]) == res["items"] and b["seeds"] == 1 and b["meta"]["sources"] == 4
    assert {it["category"] for it in b["items"]} == {"fixture-verify", "control"}
    assert all((out / it["texts"]["old"]).exists() for it in b["items"])
    assert all((out / f).exists() for it in b["items"] for f in it.get("cuda", {}).values())


def test_emit_bundle_from_cli_outcomes(tmp_path):
    from cpasync_migrate.verify_bridge import emit_bundle

    c = CASES["mixed_width"]
    o = SimpleNamespace(path=str(VERIFY / c["old"]), language="python", old_text=(VERIFY / c["old"]).read_text(),
                        new_text=(VERIFY / c["new"]).read_text(), changed=True)
    same = SimpleNamespace(path="x.py", language="python", old_text="x = 1\n", new_text=None, changed=False)
    settings = SimpleNamespace(target="0.1.8", source="legacy", binds={})
    path = emit_bundle([o, same], settings, str(tmp_path))
    b = json.loads(Path(path).read_text())
    assert [it["kernel"] for it in b["items"]] == ["make_stage.stage"]
    assert (tmp_path / b["items"][0]["cuda"]["new"]).exists()


# ---------------------------------------------------------------------------------------------- the sweep
def test_sweep_covers_the_required_space():
    cfgs = gpu_sweep.configs()
    assert len(cfgs) >= 200
    cases = gpu_sweep.cases()
    fams = {c["tags"]["family"] for c in cases}
    assert fams >= {"tile1d", "tile2d", "tail", "pred", "merged", "pipe", "big"}
    sizes = {gpu_sweep.SIZE[c["tags"]["dtype"]] for c in cases if c["tags"]["dtype"] in gpu_sweep.SIZE}
    widths = {c["tags"]["width"] for c in cases if isinstance(c["tags"].get("width"), int)}
    assert sizes == {1, 2, 4, 8} and widths == {4, 8, 16}
    assert {c["target"] for c in cases} == {"0.1.8", "0.1.9"}
    # the migrated texts are written by the generator, not copied from the legacy ones (a predicated 0.1.8
    # copy of 1-byte elements reads the same under 0.1.9: bytes and elements coincide)
    assert all(c["old"] != c["new"] for c in cases if c["source"] is None)
    assert all(c["old"] != c["new"] for c in cases if c["source"] and gpu_sweep.SIZE[c["tags"]["dtype"]] > 1)


def test_sweep_big_kernels_are_megabytes_and_thousands_of_blocks():
    big = [c for c in gpu_sweep.cases() if c["tags"]["family"] == "big"]
    items = [kernel_items(c["old"], c["new"], c["name"], rules=RULES, target=c["target"], crosscheck_bytes=0)[0]
             for c in big[::2]]
    assert max(sum(p["bytes"] for p in it["params"]) for it in items) >= 64 << 20
    assert sum(1 for it in items if np.prod(it["launch"]["grid"]) >= 2048) >= 5
    assert all(not it.get("decided") and all(s["verdict"] == "equivalent" for s in it["sites"]) for it in items)


@pytest.mark.parametrize("name", ["tile1d_float8_e4m3_w16_t128@0.1.9", "tile2d_float64_w16_t256@0.1.8",
                                  "tail_int16_w4@0.1.9", "pred_bfloat16_w8@0.1.8->0.1.9",
                                  "merged_float32_float16_w16_8@0.1.9", "pipe_int64_w16@0.1.9"])
def test_sweep_pairs_are_equivalent_in_the_cpu_interpreter(name):
    c = {c["name"]: c for c in gpu_sweep.cases()}[name]
    vs = verify_source(c["old"], c["new"], name, rules=RULES, target=c["target"], source=c["source"], seeds=1)
    assert [v.verdict for v in vs] == ["equivalent"], [v.reason for v in vs]


@pytest.mark.slow  # builds and interprets a whole bundle on the CPU
def test_a_kernel_that_keeps_a_legacy_call_is_refuted_in_the_bundle_as_on_the_cpu():
    """0.1.8 loads only the access-pointer form: a new text that still reaches a six-argument call (a site left
    for a person) is a mismatch on the GPU path too, never run and proven there."""
    from fixture_args import fixture_options

    py = Path(__file__).parent / "fixtures" / "python"
    seen = 0
    for cfg_path in sorted(py.glob("*.toml")):
        name = cfg_path.stem
        old_p, new_p = py / f"{name}.in.py", py / f"{name}.out.py"
        if not (old_p.exists() and new_p.exists()):
            continue
        opt = fixture_options(RULES, tomllib.loads(cfg_path.read_text()).get("args", []))
        old, new = old_p.read_text(), new_p.read_text()
        cpu = {v.kernel: v for v in verify_source(old, new, old_p.name, rules=RULES, target=opt["target"],
                                                  source=opt["source"], binds=opt["binds"] or None)}
        for it in kernel_items(old, new, old_p.name, rules=RULES, target=opt["target"], source=opt["source"],
                               binds=opt["binds"] or None):
            v = cpu.get(it["kernel"])
            if v is None or "the new text would not build" not in v.reason:
                continue
            seen += 1
            assert (it.get("decided") or {}).get("verdict") == "mismatch", (name, it["kernel"], it.get("decided"))
    assert seen >= 10, seen


def test_a_site_no_kernel_builds_leaves_the_bundle_s_kernel_inconclusive():
    """The bundle path (--emit-bundle, then the GPU runner) proves no more than the CPU verifier: a site that no
    binding builds (an uncalled macro's) makes the kernel inconclusive there too, decided before any run."""
    py = Path(__file__).parent / "fixtures" / "python"
    old, new = (py / "fallback_unknown.in.py").read_text(), (py / "fallback_unknown.out.py").read_text()
    cpu = {v.kernel: v.verdict for v in verify_source(old, new, "k.py", rules=RULES, target="0.1.8")}
    items = kernel_items(old, new, "k.py", rules=RULES, target="0.1.8")
    assert cpu == {"make_kernel.main": "inconclusive"}, cpu
    [it] = items
    assert it["decided"]["verdict"] == "inconclusive" and "not built or checked" in it["decided"]["reason"], it
