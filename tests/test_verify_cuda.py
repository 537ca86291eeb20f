"""CUDA lowering of both forms: shape, form-only differences, and nvcc acceptance."""
from __future__ import annotations

import difflib
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from cpasync_migrate.rules import load_rules
from cpasync_migrate.verify import lower_cuda, verify_source

HERE = Path(__file__).parent / "fixtures" / "verify"
RULES = load_rules()
CASES = tomllib.loads((HERE / "cases.toml").read_text())["case"]
NVCC = shutil.which("nvcc") or ("/usr/local/bin/nvcc" if os.path.exists("/usr/local/bin/nvcc") else None)


def lowered(case):
    return lower_cuda((HERE / case["old"]).read_text(), (HERE / case["new"]).read_text(), case["old"], rules=RULES,
                      target=case["target"], source=case.get("source"))


def by_name(name):
    return next(c for c in CASES if c["name"] == name)


def test_shape_of_lowered_items():
    (item,) = lowered(by_name("copy_tile"))
    assert item["kernel"] == "make_copy.main" and item["line"] == 7
    assert item["launch"] == {"grid": [4, 1, 1], "block": [128, 1, 1], "old_entry": "make_copy_main_old",
                              "new_entry": "make_copy_main_new", "shared_bytes": 2048, "dynamic_shared_bytes": 0}
    assert item["params"] == [
        {"name": "A", "dtype": "float16", "shape": [64, 64], "ctype": "half", "bytes": 8192, "role": "input"},
        {"name": "B", "dtype": "float16", "shape": [64, 64], "ctype": "half", "bytes": 8192, "role": "output"},
    ]
    assert "error" not in item


@pytest.mark.parametrize("case", [c for c in CASES if c["name"] != "misc"], ids=lambda c: c["name"])
def test_forms_differ_only_in_cp_async_lines(case):
    for item in lowered(case):
        old, new = item["old_cuda"], item["new_cuda"]
        changed = [ln for ln in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
                   if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
        assert changed, "both forms lowered to the same text"
        for ln in changed:
            assert "cpm_cp_async" in ln or "__global__" in ln, ln
        assert "__shared__ __align__(16)" in old


def test_ptx_templates():
    src = lowered(by_name("copy_tile"))[0]["new_cuda"]
    for needle in ("cp.async.cg.shared.global [%0], [%1], %2;", "cp.async.ca.shared.global [%0], [%1], %2;",
                   "cp.async.cg.shared.global [%0], [%1], %2, %3;", "cp.async.commit_group;", "cp.async.wait_group %0;"):
        assert needle in src
    assert "cpm_cp_async<16>(" in src and "cpm_wait_group<0>();\n  __syncthreads();" in src.replace("\n    ", "\n  ")
    # legacy: pointer arithmetic in the buffer's type; new: &((P*)data)[offset]
    old = lowered(by_name("copy_tile"))[0]["old_cuda"]
    assert "(void*)(A_shared + " in old and "(void*)(&(((half*)A_shared)[" in src
    assert "cpm_cp_async<8>(" in lowered(by_name("macro_ca_019"))[0]["new_cuda"]  # 2 float32 elements = 8 bytes, .ca
    assert "cpm_cp_async<16>(" in lowered(by_name("copy_tile_019"))[0]["new_cuda"]  # 8 halves under num_elems
    pred = lowered(by_name("predicated_tail"))[0]
    assert "cpm_cp_async_pred<16>(" in pred["old_cuda"] and "cpm_cp_async_pred<16>(" in pred["new_cuda"]
    mixed = lowered(by_name("mixed_width_019"))[0]["new_cuda"]
    assert "((half*)raw)[" in mixed  # the uint8 staging buffer addressed as float16 (the wider type)


def test_unsupported_kernel_has_error_not_source():
    items = {i["kernel"]: i for i in lowered(by_name("misc"))}
    assert "T.gemm" in items["make_gemm.gemm"]["error"]
    assert items["scale_rows"]["old_cuda"] and items["scale_rows"]["new_cuda"]


def test_emit_cuda_dir(tmp_path):
    case = by_name("copy_tile")
    verify_source((HERE / case["old"]).read_text(), (HERE / case["new"]).read_text(), "copy_tile.old.py",
                  rules=RULES, target="0.1.8", emit_cuda_dir=str(tmp_path))
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["copy_tile.old.py.make_copy.main.json", "copy_tile.old.py.make_copy.main.new.cu",
                     "copy_tile.old.py.make_copy.main.old.cu"]


@pytest.mark.slow
@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
def test_nvcc_compiles_every_lowered_kernel(tmp_path):
    """All fixture kernels, both forms, in one translation unit for sm_80 and sm_90 (ptxas checks the PTX)."""
    parts = []
    count = 0
    for case in CASES:
        for item in lowered(case):
            for form in ("old", "new"):
                src = item[f"{form}_cuda"]
                if not src:
                    continue
                entry = item["launch"][f"{form}_entry"]
                parts.append(src.replace(entry, f"{case['name']}_{entry}"))
                count += 1
    assert count >= 20
    cu = tmp_path / "all.cu"
    cu.write_text("\n".join(parts))
    cmd = [NVCC, "-c", "-o", str(tmp_path / "all.o"), "-gencode", "arch=compute_80,code=sm_80",
           "-gencode", "arch=compute_90,code=sm_90", str(cu)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-4000:]
    assert "error" not in res.stderr.lower(), res.stderr[-4000:]


def test_illegal_copies_are_not_lowered():
    case = by_name("mixed_width_019")
    new = (HERE / case["new"]).read_text().replace(
        'T.type_annotation("float16"), raw.data, tx * 8, 8, 2)',
        'T.type_annotation("uint8"), raw.data, tx * 16, 16, 2)')
    (item,) = lower_cuda((HERE / case["old"]).read_text(), new, "m.py", rules=RULES, target="0.1.9")
    assert item["new_cuda"] is None and "as uint8 but" in item["error"] and "as float16" in item["error"]
    assert item["old_cuda"]
    case = by_name("copy_tile_019")
    new = (HERE / case["new"]).read_text().replace(", 8, 1), 8)", ", 8, 1), 16)")
    (item,) = lower_cuda((HERE / case["old"]).read_text(), new, "c.py", rules=RULES, target="0.1.9")
    assert item["new_cuda"] is None and "moves 32 bytes" in item["error"]


def test_merged_legacy_destination_is_lowered_at_the_merged_byte_address():
    import tomllib
    from pathlib import Path

    from cpasync_migrate.rules import load_rules
    from cpasync_migrate.verify import lower_cuda

    base = tomllib.loads((Path(__file__).parent / "fixtures" / "verify" / "adversarial" / "bases.toml").read_text())
    rules = load_rules()
    merged = base["base"]["merged"]
    (item,) = lower_cuda(merged["old"], merged["new"], "merged.py", rules=rules, target="0.1.8")
    # two shared.dyn buffers: the legacy offset tx * 8 counts the call's float16, 2 bytes each
    assert "(void*)((char*)raw + (" in item["old_cuda"] and ") * 2)" in item["old_cuda"]
    single = base["base"]["single"]
    (item,) = lower_cuda(single["old"], single["new"], "single.py", rules=rules, target="0.1.8")
    assert "(char*)raw" not in item["old_cuda"] and "(void*)(raw + " in item["old_cuda"]
