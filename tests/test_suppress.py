"""Suppression comments through the command line (issue 27 section 9, issue 28 section 3): only comments
suppress (a marker in a string does not), an unused one is reported also in a file that does not name the
intrinsic, the range form (`off` ... `on`) in both languages, and the spelling read from
rules/namespaces.toml by both languages."""
import json
import shutil
import tomllib
from pathlib import Path

from conftest import run_cli
from cpasync_migrate.rules import RULES_ENV

ROOT = Path(__file__).resolve().parent.parent
CALL = 'T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)'
HEAD = '''import tilelang.language as T


@T.prim_func
def main(A: T.Tensor((64,), "float16")):
    with T.Kernel(1, threads=8) as bx:
        S = T.alloc_shared((64,), "float16")
        tx = T.get_thread_binding()
'''
CPP = '''#include <tvm/tir/builtin.h>
namespace tvm {
namespace tir {

Stmt Lower(PrimExpr dst, PrimExpr doff, PrimExpr src, PrimExpr soff, PrimExpr bytes) {
  Array<PrimExpr> args = {dst, doff, src, soff, bytes};
  return Evaluate(Call(DataType::Handle(), builtin::ptx_cp_async(),
                       {dst, doff, src, soff, bytes}));
}

}  // namespace tir
}  // namespace tvm
'''


def put(p: Path, text: str) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def _findings(r):
    return [(f["path"], f["line"], f["code"], f["status"]) for f in json.loads(r.stdout)["findings"]]


def test_a_marker_inside_a_string_does_not_suppress(tmp_path):
    put(tmp_path / "s.py", HEAD + f'        {CALL}; note = "# cpasync-migrate: ignore"\n')
    put(tmp_path / "c.py", HEAD + f"        {CALL}  # cpasync-migrate: ignore\n")
    r = run_cli("--check", "--format", "json", ".", cwd=tmp_path)
    assert _findings(r) == [("c.py", 9, "CPA001", "suppressed"), ("s.py", 9, "CPA001", "fixable")]
    assert r.returncode == 1
    r = run_cli("-q", "s.py", cwd=tmp_path)  # and write mode migrates it, the string kept
    assert '"# cpasync-migrate: ignore"' in (tmp_path / "s.py").read_text()
    assert "T.tvm_access_ptr(" in (tmp_path / "s.py").read_text()


def test_a_marker_inside_a_cpp_string_does_not_suppress(tmp_path):
    body = CPP.replace("{dst, doff, src, soff, bytes}));", '{dst, doff, src, soff, bytes}));  const char* m = "// cpasync-migrate: ignore";')
    put(tmp_path / "a.cc", body)
    r = run_cli("--check", "--format", "json", "--accept-partial-sets", "a.cc", cwd=tmp_path)
    statuses = {f[3] for f in _findings(r) if f[2] != "CPA010"}
    assert "suppressed" not in statuses and statuses, _findings(r)
    put(tmp_path / "a.cc", CPP.replace("builtin::ptx_cp_async(),", "builtin::ptx_cp_async(),  // cpasync-migrate: ignore"))
    r = run_cli("--check", "--format", "json", "--accept-partial-sets", "a.cc", cwd=tmp_path)
    assert [f[3] for f in _findings(r) if f[1] == 7] == ["suppressed"], _findings(r)


def test_unused_suppression_in_a_file_that_does_not_name_the_intrinsic(tmp_path):
    put(tmp_path / "plain.py", "x = 1  # cpasync-migrate: ignore[CPA001]\n")
    put(tmp_path / "plain.cc", "int x = 1;  // cpasync-migrate: ignore\n")
    put(tmp_path / "quiet.py", "x = 1\n")
    r = run_cli("--check", ".", cwd=tmp_path)
    assert r.returncode == 0  # a warning: the exit code is not changed
    lines = sorted(ln for ln in r.stdout.splitlines() if "CPA010" in ln)
    assert lines == ["plain.cc:1:13: CPA010 unused suppression (ignore): no site starts on this line; delete the comment",
                     "plain.py:1:8: CPA010 unused suppression (ignore[CPA001]): CPA001: no such site starts on this line"]


def test_range_form(tmp_path):
    src = HEAD + ("        # cpasync-migrate: off\n"
                  f"        {CALL}\n"
                  f"        {CALL}\n"
                  "        # cpasync-migrate: on\n"
                  f"        {CALL}\n"
                  "        # cpasync-migrate: off[CPA002]\n"
                  f"        {CALL}\n")
    put(tmp_path / "k.py", src)
    r = run_cli("--check", "--format", "json", "k.py", cwd=tmp_path)
    assert _findings(r) == [("k.py", 10, "CPA001", "suppressed"), ("k.py", 11, "CPA001", "suppressed"),
                            ("k.py", 13, "CPA001", "fixable"), ("k.py", 14, "CPA010", "info"),
                            ("k.py", 15, "CPA001", "fixable")]
    msgs = [f["message"] for f in json.loads(r.stdout)["findings"] if f["code"] == "CPA010"]
    assert msgs == ["unused suppression (off[CPA002]): CPA002: no such site in its range"]
    # write mode migrates only the sites outside the range
    run_cli("-q", "k.py", cwd=tmp_path)
    out = (tmp_path / "k.py").read_text()
    assert out.count(CALL) == 2 and out.count("T.tvm_access_ptr(") == 4
    # an `on` with no `off` before it
    put(tmp_path / "k.py", HEAD + f"        {CALL}\n        # cpasync-migrate: on\n")
    r = run_cli("--check", "k.py", cwd=tmp_path)
    assert "k.py:10:9: CPA010 unused suppression (on): no `cpasync-migrate: off` before it" in r.stdout


def test_range_form_in_cpp(tmp_path):
    body = CPP.replace("  Array<PrimExpr> args", "  // cpasync-migrate: off\n  Array<PrimExpr> args")
    body = body.replace("}\n\n}  // namespace tir", "  /* cpasync-migrate: on */\n}\n\n}  // namespace tir")
    put(tmp_path / "a.cc", body)
    r = run_cli("--check", "--format", "json", "--accept-partial-sets", "a.cc", cwd=tmp_path)
    got = _findings(r)
    assert got and all(st == "suppressed" for _, _, code, st in got if code != "CPA010"), got
    assert not [g for g in got if g[2] == "CPA010"], got


def test_the_spelling_comes_from_the_rules(tmp_path):
    rules = tmp_path / "rules"
    shutil.copytree(ROOT / "rules", rules)
    ns = rules / "namespaces.toml"
    ns.write_text(ns.read_text().replace('comment = "cpasync-migrate: ignore"', 'comment = "kernel-lint: skip"'))
    put(tmp_path / "k.py", HEAD + f"        {CALL}  # kernel-lint: skip\n")
    put(tmp_path / "a.cc", CPP.replace("builtin::ptx_cp_async(),", "builtin::ptx_cp_async(),  // kernel-lint: skip"))
    put(tmp_path / "o.py", HEAD + "        # kernel-lint: off\n" + f"        {CALL}\n")
    r = run_cli("--check", "--format", "json", "--accept-partial-sets", ".", cwd=tmp_path,
                env={RULES_ENV: str(rules)})
    got = _findings(r)
    assert ("k.py", 9, "CPA001", "suppressed") in got and ("o.py", 10, "CPA001", "suppressed") in got, got
    assert [f[3] for f in got if f[0] == "a.cc" and f[1] == 7] == ["suppressed"], got


def test_the_shipped_spelling_agrees_with_the_prefilter_and_the_front_end():
    from cpasync_migrate import files
    from cpasync_migrate.python.calls import SUPPRESS_RE

    comment = tomllib.loads((ROOT / "rules" / "namespaces.toml").read_text())["suppress"]["comment"]
    marker = comment.partition(":")[0]
    assert files.NEEDLES[-1] == (marker + ":").encode()
    head, tail = comment.split(":", 1)
    for spelled in (f"# {comment}", f"#{head}:{tail.strip()}", f"x = 1  #   {head}:   {tail.strip()}"):
        assert SUPPRESS_RE.search(spelled), spelled
    for other in (f"# {comment}d", f"# {head}-{tail.strip()}", comment):
        assert not SUPPRESS_RE.search(other), other
