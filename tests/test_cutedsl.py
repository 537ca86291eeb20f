"""The CuTeDSL backend as one change (issue 29, section 2): its printer (codegen_cutedsl.cc shape, CPA103 with
the runtime helpers it prints) and its Python runtime helpers (CPA007, tilelang/contrib/cutedsl/cpasync.py
shape) migrate together, in upstream's 28ada604f shape, or neither does and the set names the member."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import FIXTURES
from cpasync_migrate.cpp import analyze
from cpasync_migrate.findings import FrontEndOptions
from cpasync_migrate.python import analyze as py_analyze
from cpasync_migrate.python import fast
from cpasync_migrate.python.runtime_helpers import plans
from cpasync_migrate.rules import load_rules

RULES = load_rules()
OPTS = FrontEndOptions(rules=RULES, target=RULES.generation("0.1.8"), source=RULES.legacy)

# path in the tree -> fixture; the rest of a legacy fork comes from test_forks' tree
CUTE = {
    "src/target/codegen_cutedsl.cc": "cpp/cutedsl_printer",
    "tilelang/contrib/cutedsl/cpasync.py": "python/cutedsl_runtime",
}
FORK = {
    "tilelang/language/tir/op.py": "sets/own/op",
    "testing/python/test_copy.py": "python/alias_t_positional",
    "src/transform/inject_ptx_async_copy.cc": "cpp/fork_inject",
    "src/target/codegen_demo.cc": "cpp/fork_codegen_helpers",
    "src/target/ptx.h": "cpp/fork_ptx_helpers",
    "src/target/ptx.cc": "cpp/fork_ptx_helpers_impl",
    "src/transform/merge_shared_memory_allocations.cc": "cpp/merge_rebase",
}


def _fixture(ref: str, kind: str):
    folder, _, stem = ref.rpartition("/")
    (hit,) = (FIXTURES / folder).glob(f"{stem}.{kind}.*")
    return hit


def _tree(root, files: dict) -> None:
    for rel, ref in files.items():
        dest = root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_fixture(ref, "in"), dest)


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "cpasync_migrate", "--no-cache", "--target", "0.1.8", "--format",
                           "json", *args, "."], cwd=cwd, capture_output=True, text=True,
                          env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"})


@pytest.mark.slow
def test_a_fork_with_its_cutedsl_backend_migrates_in_one_default_run(tmp_path):
    files = {**FORK, **CUTE}
    _tree(tmp_path, files)
    check = json.loads(_cli("--check", cwd=tmp_path).stdout)
    [cs] = check["sets"]
    assert (cs["state"], cs["blockers"]) == ("applied", [])
    by = {(f["path"], f["code"]): f for f in check["findings"]}
    printer = by[("src/target/codegen_cutedsl.cc", "CPA103")]
    assert printer["status"] == "fixable" and "`cp_async_gs`, `cp_async_gs_conditional`" in printer["message"]
    write = _cli(cwd=tmp_path)
    assert write.returncode == 0, write.stdout[-3000:] + write.stderr
    for rel, ref in files.items():
        assert (tmp_path / rel).read_bytes() == _fixture(ref, "out").read_bytes(), rel
    after = _cli("--check", cwd=tmp_path)
    assert after.returncode == 0 and json.loads(after.stdout)["findings"] == [], after.stdout[-2000:]


def _held(tmp_path, files: dict) -> dict:
    _tree(tmp_path, files)
    write = _cli(cwd=tmp_path)
    assert write.returncode == 1
    [cs] = json.loads(write.stdout)["sets"]
    assert cs["state"] == "held"
    for rel, ref in files.items():  # nothing of the set is written
        assert (tmp_path / rel).read_bytes() == _fixture(ref, "in").read_bytes(), rel
    return sorted((b["path"], b["code"], b["reason"]) for b in cs["blockers"])


@pytest.mark.slow
def test_the_printer_without_its_runtime_holds_the_set(tmp_path):
    [(path, code, reason)] = _held(tmp_path, {**FORK, "src/target/codegen_cutedsl.cc": "cpp/cutedsl_printer"})
    assert (path, code) == ("src/target/codegen_cutedsl.cc", "CPA103")
    assert "`cp_async_gs`, `cp_async_gs_conditional`" in reason and "does not migrate with it" in reason


@pytest.mark.slow
def test_the_runtime_without_its_printer_holds_the_set(tmp_path):
    blockers = _held(tmp_path, {**FORK, "tilelang/contrib/cutedsl/cpasync.py": "python/cutedsl_runtime"})
    assert [(p, c) for p, c, _ in blockers] == [("tilelang/contrib/cutedsl/cpasync.py", "CPA007")] * 2
    assert all("no printer of the set prints its calls" in r for _, _, r in blockers)


@pytest.mark.slow
def test_a_runtime_helper_left_for_a_person_holds_the_printer_too(tmp_path):
    files = {**FORK, "src/target/codegen_cutedsl.cc": "cpp/cutedsl_printer",
             "tilelang/contrib/cutedsl/cpasync.py": "python/cutedsl_runtime_manual"}
    _tree(tmp_path, files)
    rep = json.loads(_cli(cwd=tmp_path).stdout)
    [cs] = rep["sets"]
    assert cs["state"] == "held"
    got = sorted((b["path"], b["line"], b["code"], b["reason"].split(" (")[0]) for b in cs["blockers"])
    assert got == [
        ("src/target/codegen_cutedsl.cc", 10, "CPA103",
         "it prints calls of the runtime helper(s) `cp_async_gs`, `cp_async_gs_conditional`, which the set does "
         "not migrate with it"),
        ("tilelang/contrib/cutedsl/cpasync.py", 5, "CPA007", "it is left for a person"),
        ("tilelang/contrib/cutedsl/cpasync.py", 11, "CPA007", "it is left for a person")]
    for rel, ref in files.items():
        assert (tmp_path / rel).read_bytes() == _fixture(ref, "in").read_bytes(), rel


# ----------------------------------------------------------------- the printer alone

_PRINTER = _fixture("cpp/cutedsl_printer", "in").read_text()


def test_the_printer_needs_the_helpers_it_prints():
    [f] = analyze(_PRINTER, "codegen_cutedsl.cc", OPTS).findings
    assert f.code == "CPA103" and f.fix is not None and not f.fix.safe and f.fix.set_established
    assert f.fix.needs_function == "cp_async_gs;cp_async_gs_conditional"
    assert any("`cp_async_gs`, `cp_async_gs_conditional` take one pointer per side" in a for a in f.fix.assumptions)


def test_a_helper_the_rules_do_not_name_stays_for_a_person():
    text = _PRINTER.replace("tl.cp_async_gs(", "tl.copy_async(").replace("tl.cp_async_gs_conditional(", "tl.copy_if(")
    [f] = analyze(text, "codegen_cutedsl.cc", OPTS).findings
    assert f.code == "CPA104" and f.fix is None
    assert "separate arguments of the runtime helpers `tl.copy_async`, `tl.copy_if`" in f.message


def test_an_offset_printed_before_its_pointer_stays_for_a_person():
    text = _PRINTER.replace('<< dst << ", " << dst_offset\n', '<< dst_offset << ", " << dst\n')
    [f] = analyze(text, "codegen_cutedsl.cc", OPTS).findings
    assert f.code == "CPA104" and f.fix is None


# ----------------------------------------------------------------- the runtime helpers alone

_HELPERS = """\
def cp_async_gs(size, dst, dst_offset, src, src_offset):
    BODY


def cp_async_gs_conditional(size, dst, dst_offset, src, src_offset, cond):
    if cond:
        cp_async_gs(size, dst, dst_offset, src, src_offset)
"""


@pytest.mark.parametrize("body, why", [
    ("copy(dst + dst_offset, src + src_offset)", None),
    ("copy(dst, src + src_offset)", "`dst_offset` is never read"),
    ("copy(dst + src_offset, src + dst_offset)", "`dst_offset` is read at line"),
    ("copy(dst + 2 * dst_offset, src + src_offset)", "`dst_offset` is read at line"),
    ("dst_offset = 0\n    copy(dst + dst_offset, src + src_offset)", "`dst_offset` is bound again"),
    ("p = dst\n    p = other\n    copy(p + dst_offset, src + src_offset)", "`dst_offset` is read at line"),
    ("p = dst.iterator\n    copy(p + dst_offset, src.iterator + src_offset)", "`src_offset` is read at line"),
])
def test_runtime_helper_rules(body, why):
    got = plans(_HELPERS.replace("BODY", body), RULES.python_api)
    assert got["cp_async_gs"].why is None if why is None else why in got["cp_async_gs"].why
    # the conditional helper forwards to the first: it is migrated exactly when that one is
    cond = got["cp_async_gs_conditional"]
    assert (cond.why is None) is (why is None)
    if why is not None:
        assert "it forwards its offsets to `cp_async_gs`, which is left" in cond.why


@pytest.mark.parametrize("sig", ["size, dst, dst_offset, src, src_offset=0", "size, dst_offset, dst, src, src_offset",
                                 "size, dst, dst_offset, src, src_offset, *rest"])
def test_runtime_helper_signatures_left(sig):
    text = f"def cp_async_gs({sig}):\n    copy(dst + dst_offset, src + src_offset)\n"
    assert plans(text, RULES.python_api)["cp_async_gs"].why is not None


@pytest.mark.parametrize("text", [
    _fixture("python/cutedsl_runtime", "in").read_text(),
    _fixture("python/cutedsl_runtime_manual", "in").read_text(),
    textwrap.dedent("""\
        # -*- coding: utf-8 -*-
        def cp_async_gs(size, dst, dst_offset, src, src_offset):  # é
            copy(dst + dst_offset, "ü", src + src_offset)
        """),
])
def test_the_fast_pass_gives_the_same_helper_fix(text):
    full = py_analyze(text, "cpasync.py", OPTS, fast=False).findings
    quick = fast.findings(text, "cpasync.py", OPTS)
    assert quick is not None

    def key(fs):
        return [(f.line, f.code, f.message, None if f.fix is None else
                 ([(e.start, e.end, e.replacement) for e in f.fix.edits], f.fix.applicability, f.fix.assumptions,
                  f.fix.set_established)) for f in fs]
    assert key(quick.findings) == key(full)
    assert full and all(f.code == "CPA007" for f in full)
