"""settle.MEMBER_INDEX (CPASYNC_MIGRATE_MEMBER_INDEX): a change set's members listed by their place once, against each
finding looking through every member; the same reports, in every mode that settles sets."""
from __future__ import annotations

import pytest

from conftest import run_inproc
from cpasync_migrate import settle

PY_DEFS = "".join(
    f"def ptx_cp_async{'' if i == 0 else i}(dtype, shared_ptr, shared_offset, global_ptr, global_offset, bytes):\n"
    f"    return dtype\n\n\n" for i in range(3))
KERNEL = '''import tilelang.language as T


@T.prim_func
def k{i}(A: T.Buffer((64,), "float16")):
    S = T.alloc_shared((64,), "float16")
    T.ptx_cp_async("float16", S.data, {i}, A.data, {i}, 16)
'''
CPP = '''namespace tvm {{
namespace codegen {{
Stmt Build{i}(const Buffer& s, const Buffer& l) {{
  return Evaluate(Call(DataType::Handle(), builtin::ptx_cp_async(), {{s->data, {i}, l->data, {i}, 16}}));
}}
void Print{i}(const CallNode* op, std::ostream& os) {{
  if (op->op.same_as(builtin::ptx_cp_async())) {{
    os << op->args[0] << op->args[1] << op->args[4];
  }}
}}
}}  // namespace codegen
}}  // namespace tvm
'''


@pytest.mark.parametrize("mode", [["--check"], ["--diff"], ["--check", "--unsafe-fixes"], ["--diff", "--accept-partial-sets"]])
def test_the_same_report_with_and_without_the_member_index(tmp_path, monkeypatch, mode):
    (tmp_path / "defs.py").write_text(PY_DEFS * 20, encoding="utf-8")
    for i in range(12):
        (tmp_path / f"k{i}.py").write_text(KERNEL.format(i=i), encoding="utf-8")
        (tmp_path / f"cg{i}.cc").write_text("".join(CPP.format(i=10 * i + j) for j in range(5)), encoding="utf-8")
    out = {}
    for on in (True, False):
        monkeypatch.setattr(settle, "MEMBER_INDEX", on)
        r = run_inproc(*mode, "--no-cache", "-j", "1", "--format", "json", ".", cwd=tmp_path)
        out[on] = (r.returncode, r.stdout)
    assert out[True] == out[False]
    assert '"set_id"' in out[True][1] and out[True][1].count('"code": "CPA1') >= 100
