"""importers.py step by step: the steps of reading an importing file and of settling a fix that the end-to-end
tests of test_python_frontend.py (section 5) do not reach."""
from __future__ import annotations

import subprocess

import pytest

from cpasync_migrate import importers
from cpasync_migrate.findings import Applicability, Finding, Fix
from cpasync_migrate.rules import load_rules

MACRO = '''\
import tilelang.language as T


@T.macro
def stage(dst, src, base, tx):
    T.ptx_cp_async("float16", dst.data, tx * 16, src.data, base + tx * 8, 16)
'''

KERNEL = '''
@T.prim_func
def third(A: T.Tensor((1024,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        buf = T.alloc_shared((256,), "uint8")
        {call}(buf, A, bx * 128, T.get_thread_binding())
'''


@pytest.fixture(autouse=True)
def _fresh():
    importers.forget()
    yield
    importers.forget()


@pytest.fixture(scope="module")
def rules():
    return load_rules()


def _repo(tmp_path, files: dict):
    root = tmp_path / "repo"
    (root / "kernels").mkdir(parents=True)
    (root / "kernels" / "__init__.py").write_text("")
    (root / "kernels" / "stage.py").write_text(MACRO)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(text if isinstance(text, bytes) else text.encode())
    subprocess.run(["git", "-c", "core.fsmonitor=false", "init", "-q", "."], cwd=root, check=True, capture_output=True)
    return root


def _sites(root, rules, name="stage"):
    return importers.call_sites(str(root / "kernels" / "stage.py"), name, False, rules)


def test_an_importer_that_is_not_utf8_is_named_unread(tmp_path, rules):
    root = _repo(tmp_path, {"bad.py": b"from kernels.stage import stage\nx = '\xff'\n"})
    s = _sites(root, rules)
    assert s.sites == [] and s.unread == ["`bad.py` cannot be read (UnicodeDecodeError)"]


def test_an_import_inside_a_block_is_named_with_its_line(tmp_path, rules):
    text = "import tilelang.language as T\n\n\ndef run():\n    from kernels.stage import stage\n    return stage\n"
    root = _repo(tmp_path, {"tools/late.py": text})
    s = _sites(root, rules)
    assert s.unread == ["`tools/late.py` imports it inside a block (line 5), which this reading does not follow"]


def test_a_relative_import_from_above_the_root_binds_nothing(tmp_path, rules):
    # `from ...kernels.stage import stage` at the root names no module of the repository: its `stage` is not the
    # macro; `kernels.stage.first` reads another name of the module; the one call is through the module
    text = ("import tilelang.language as T\nimport kernels.stage\nfrom ...kernels.stage import stage\n"
            "other = kernels.stage.first\n" + KERNEL.format(call="stage") + KERNEL.format(call="kernels.stage.stage"))
    root = _repo(tmp_path, {"use.py": text})
    s = _sites(root, rules)
    assert s.unread == []
    assert [(x.file, x.line, x.kernel.name) for x in s.sites] == [("use.py", 16, "third")]


def test_a_chain_of_files_binding_the_macro_is_followed_three_links_deep(tmp_path, rules):
    files = {"a1.py": "from kernels.stage import stage\n"}
    for i in range(2, 6):
        files[f"a{i}.py"] = f"from a{i - 1} import stage\n"
    files["a5.py"] += "import tilelang.language as T\n" + KERNEL.format(call="stage")
    root = _repo(tmp_path, files)
    s = _sites(root, rules)
    assert s.sites == []
    assert s.unread == ["`a4.py` binds the macro as `stage` (line 1), and files import it from there too deeply to "
                        "follow"]
    importers.forget()
    files.pop("a5.py"), files.pop("a4.py")
    files["a3.py"] += "import tilelang.language as T\n" + KERNEL.format(call="stage")
    s = _sites(_repo(tmp_path / "short", files), rules)
    assert [(x.file, x.line) for x in s.sites] == [("a3.py", 8)] and s.unread == []


def test_a_failed_search_behind_a_rebinding_file_is_named(tmp_path, rules, monkeypatch):
    root = _repo(tmp_path, {"api.py": "from kernels.stage import stage\n"})
    real = importers.call_sites

    def failing(path, name, exported, rules, depth=0, seen=None):
        if depth:
            raise OSError("git grep failed")
        return real(path, name, exported, rules, depth, seen)

    monkeypatch.setattr(importers, "call_sites", failing)
    s = importers.call_sites(str(root / "kernels" / "stage.py"), "stage", False, rules)
    assert s.unread == ["`api.py` binds the macro as `stage`, and the files importing it from there cannot be "
                        "searched: git grep failed"]


def test_the_judge_reads_only_what_it_can(tmp_path, rules):
    text = "import tilelang.language as T\nfrom kernels.stage import stage\n\nstage(1, 2, 3, 4)\n"
    root = _repo(tmp_path, {"top.py": text})
    s = _sites(root, rules)
    assert [(x.file, x.line, x.kernel) for x in s.sites] == [("top.py", 4, None)]
    merge = {"kind": "merge", "scope": "shared.dyn", "allocs": 1, "merged": False}
    assert importers._judge(s, merge, "stage") == ([], ["the call at `top.py:4` is not inside a function"], [])
    assert importers._judge(s, {"kind": "later"}, "stage") == ([], ["its question is not one this version reads"], [])


def _finding(assumptions: list, importers_: dict) -> Finding:
    fix = Fix(edits=[], applicability=Applicability.UNSAFE, assumptions=list(assumptions), importers=importers_)
    return Finding("kernels/stage.py", 6, 5, 6, 70, "CPA001",
                   "legacy call rewritten (unsafe fix: rests on 2 assumption(s))", fix=fix)


def test_settle_keeps_an_assumption_without_a_question_and_one_whose_calls_are_not_asked(tmp_path):
    root = _repo(tmp_path, {"tools/use.py": "from kernels.stage import stage\n"})
    f = _finding(["the thread count is 16", "only this file's kernels call `stage`"],
                 {"only this file's kernels call `stage`": ["stage", False]})
    importers.settle(str(root / "kernels" / "stage.py"), [f])
    assert f.fix.assumptions == ["the thread count is 16",
                                 f"only this file's kernels call `stage`: `tools/use.py` in the git work tree "
                                 f"{root.resolve()} imports it, and its calls are not read"]
    assert f.fix.applicability is Applicability.UNSAFE and f.fix.importers == {}
    assert f.message == "legacy call rewritten (unsafe fix: rests on 2 assumption(s))"  # no ground, same count


def test_settle_keeps_an_assumption_the_repository_cannot_answer(tmp_path, monkeypatch):
    root = _repo(tmp_path, {})

    def broken(path, name, exported):
        raise OSError("git grep failed")

    monkeypatch.setattr(importers, "importers_of", broken)
    a = "only this file's kernels call `stage`"
    f = _finding([a], {a: ["stage", False, {"kind": "dtype", "param": "dst", "dtype": "uint8"}]})
    importers.settle(str(root / "kernels" / "stage.py"), [f])
    assert f.fix.assumptions == [f"{a} [the repository could not be searched: git grep failed]"]
    assert f.message == "legacy call rewritten (unsafe fix: rests on 1 assumption(s))"


def test_settle_with_no_importer_makes_the_fix_safe_and_names_the_ground_once(tmp_path):
    root = _repo(tmp_path, {})
    a, b = "only this file's kernels call `stage` (dst)", "only this file's kernels call `stage` (src)"
    f = _finding([a, b], {a: ["stage", False, {"kind": "dtype"}], b: ["stage", False, {"kind": "dtype"}]})
    importers.settle(str(root / "kernels" / "stage.py"), [f])
    assert f.fix.assumptions == [] and f.fix.applicability is Applicability.SAFE
    assert f.message == (f"legacy call rewritten; safe: no other file in the git work tree {root.resolve()} imports "
                         "the macro `stage`")
