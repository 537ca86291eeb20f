"""Suppression comments through the CLI: by code, per file, and the ones that suppress nothing."""
import json
import textwrap

from conftest import run_cli
from test_cli import LEGACY, MIGRATED_CALL, write

CALL = 'T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)'


def _with_comment(comment: str) -> str:
    return LEGACY.replace(CALL, f"{CALL}  {comment}", 1)


def _findings(r):
    return [(f["line"], f["code"], f["status"]) for f in json.loads(r.stdout)["findings"]]


def test_codes_in_brackets_suppress_only_those_codes(tmp_path):
    write(tmp_path / "other.py", _with_comment("# cpasync-migrate: ignore[CPA105]"))
    write(tmp_path / "own.py", _with_comment("# cpasync-migrate: ignore[CPA003, CPA001]"))
    write(tmp_path / "all.py", _with_comment("# cpasync-migrate: ignore"))
    r = run_cli("--check", "--format", "json", ".", cwd=tmp_path)
    got = {f["path"]: (f["code"], f["status"]) for f in json.loads(r.stdout)["findings"] if f["code"] != "CPA010"}
    assert got == {"other.py": ("CPA001", "fixable"), "own.py": ("CPA001", "suppressed"),
                   "all.py": ("CPA001", "suppressed")}
    assert r.returncode == 1  # other.py's site is not silenced by a comment for another code
    # write mode: the site whose code is not named is migrated, the comment kept; the other two stay
    r = run_cli("-q", ".", cwd=tmp_path)
    assert f"{MIGRATED_CALL}  # cpasync-migrate: ignore[CPA105]" in (tmp_path / "other.py").read_text()
    assert (tmp_path / "own.py").read_text() == _with_comment("# cpasync-migrate: ignore[CPA003, CPA001]")
    assert (tmp_path / "all.py").read_text() == _with_comment("# cpasync-migrate: ignore")


def test_file_level_suppression(tmp_path):
    head = "import tilelang.language as T\n"
    write(tmp_path / "f.py", LEGACY.replace(head, head + "# cpasync-migrate: ignore-file\n", 1))
    write(tmp_path / "g.py", LEGACY.replace(head, head + "# cpasync-migrate: ignore-file[CPA002]\n", 1))
    r = run_cli("--check", "--format", "json", ".", cwd=tmp_path)
    rep = json.loads(r.stdout)
    st = {(f["path"], f["code"]): f["status"] for f in rep["findings"]}
    assert st[("f.py", "CPA001")] == "suppressed"
    assert st[("g.py", "CPA001")] == "fixable"
    assert st[("g.py", "CPA010")] == "info"  # no CPA002 site in g.py
    assert ("f.py", "CPA010") not in st


def test_unused_suppressions_are_reported(tmp_path):
    text = _with_comment("# cpasync-migrate: ignore[CPA105, CPA001, E501]").replace(
        "T.ptx_commit_group()", "T.ptx_commit_group()  # cpasync-migrate: ignore", 1)
    write(tmp_path / "k.py", text)
    r = run_cli("--check", "k.py", cwd=tmp_path)
    lines = [ln for ln in r.stdout.splitlines() if " CPA010 " in ln]
    assert lines == [
        "k.py:9:72: CPA010 unused suppression (ignore[CPA105, CPA001, E501]): CPA105: no such site starts on "
        "this line; E501: not a code of this tool",
        "k.py:10:31: CPA010 unused suppression (ignore): no site starts on this line; delete the comment",
    ]
    assert r.returncode == 0, "an unused suppression is a warning; the suppressed site leaves nothing to do"
    gh = run_cli("--check", "--format", "github", "k.py", cwd=tmp_path).stdout
    assert "::warning file=k.py,line=10,col=31," in gh and "title=CPA010::" in gh
    # a comment in a string is no suppression, used or not
    write(tmp_path / "s.py", LEGACY + 'DOC = "# cpasync-migrate: ignore"\n')
    r = run_cli("--check", "--format", "json", "s.py", cwd=tmp_path)
    assert [c for _, c, _ in _findings(r)] == ["CPA001"]


CPP = textwrap.dedent('''\
    #include <tvm/tir/builtin.h>

    namespace tvm {
    namespace tl {
    using namespace tir;

    Stmt Kept(const Buffer& s, const Buffer& g, PrimExpr i, PrimExpr j) {
      return Evaluate(Call(s->dtype, builtin::ptx_cp_async(), {s->data, i, g->data, j, 16}));  // KEPT
    }

    Stmt Plain(const Buffer& s, const Buffer& g, PrimExpr i, PrimExpr j) {
      return Evaluate(Call(s->dtype, builtin::ptx_cp_async(), {s->data, i, g->data, j, 16}));  // PLAIN
    }

    }  // namespace tl
    }  // namespace tvm
    ''')


def test_cpp_suppressions_by_code_per_file_and_unused(tmp_path):
    write(tmp_path / "a.cc", CPP.replace("// KEPT", "// cpasync-migrate: ignore[CPA101]")
          .replace("// PLAIN", "// cpasync-migrate: ignore[CPA104]"))
    r = run_cli("--check", "--format", "json", "--accept-partial-sets", "a.cc", cwd=tmp_path)
    assert _findings(r) == [(8, "CPA101", "suppressed"), (12, "CPA101", "held"), (12, "CPA010", "info")]
    msg = [f["message"] for f in json.loads(r.stdout)["findings"] if f["code"] == "CPA010"][0]
    assert msg == "unused suppression (ignore[CPA104]): CPA104: no such site starts on this line"
    write(tmp_path / "b.cc", "// cpasync-migrate: ignore-file[CPA101]\n" + CPP)
    r = run_cli("--check", "--format", "json", "--accept-partial-sets", "b.cc", cwd=tmp_path)
    assert _findings(r) == [(9, "CPA101", "suppressed"), (13, "CPA101", "suppressed")]
    assert r.returncode == 0
    write(tmp_path / "c.cc", "/* cpasync-migrate: ignore-file[CPA104] */\n" + CPP)
    r = run_cli("--check", "--format", "json", "--accept-partial-sets", "c.cc", cwd=tmp_path)
    assert _findings(r) == [(1, "CPA010", "info"), (9, "CPA101", "fixable"), (13, "CPA101", "fixable")]
