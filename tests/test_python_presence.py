"""A legacy call reached through a module no release of the target imports is left for a person.

``rules/namespaces.toml`` ``[presence]`` (asked of real 0.1.7.post1, 0.1.8 and 0.1.15 by
tests/test_verify_names_realtl.py): ``tilelang.cuda`` and ``tilelang.rocm`` from 0.1.13, ``tilelang.language.ast``
in none.  Migrated to 0.1.8's byte-counted form, a call through ``tilelang.cuda.language`` would load under no
release (0.1.8 lacks the module; the releases that have it count elements), so under the default target it is
CPA002 naming the module and the releases; under a target whose releases have it, it is migrated.  Both passes
(stdlib ``ast`` and libcst) decide it through ``python/decide/presence.py``.
"""
from __future__ import annotations

import pytest

from harness import assert_no_fix, run

from cpasync_migrate.python.decide import presence
from cpasync_migrate.rules import load_rules

HEAD = '''
@T.prim_func
def k(A: T.Buffer((16,), "float16")):
    S = T.alloc_shared((16,), "float16")
'''
CALL = '("float16", S.data, 0, A.data, 0, 16)\n'

SPELLINGS = {
    "import_as": ("import tilelang.language as T\nimport tilelang.cuda.language as CL\n", "CL.ptx_cp_async"),
    "from_import": ("import tilelang.language as T\nfrom tilelang.cuda.language.tir import ptx_cp_async as cp\n", "cp"),
    "rocm": ("import tilelang.language as T\nimport tilelang.rocm.language.tir as RT\n", "RT.ptx_cp_async"),
    "alias_of_module": ("import tilelang.language as T\nimport tilelang.cuda.language\nlang = tilelang.cuda.language\n",
                        "lang.ptx_cp_async"),
    "language_ast": ("import tilelang.language as T\nimport tilelang.language.ast.ir as ast_ir\n", "ast_ir.ptx_cp_async"),
}


def _src(name):
    imports, callee = SPELLINGS[name]
    return imports + HEAD + f"    {callee}{CALL}"


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_default_target_leaves_it_for_a_person(name):
    r = assert_no_fix(_src(name), code="CPA002")
    (f,) = [f for f in r.findings if f.code == "CPA002"]
    assert "[presence]" in f.message and "reached through" in f.message, f.message


@pytest.mark.parametrize("name", ["import_as", "from_import", "rocm", "alias_of_module"])
def test_a_target_whose_releases_have_it_migrates(name):
    r = run(_src(name), target="0.1.13")
    assert r.codes() == ["CPA001"] and r.text != _src(name), r.codes()
    assert "T.tvm_access_ptr(" in r.text


def test_language_ast_is_left_under_every_target():
    for target in ("0.1.8", "0.1.9", "0.1.13"):
        assert_no_fix(_src("language_ast"), code="CPA002", target=target)


def test_the_decision_reads_the_rules():
    rules = load_rules()
    g018, g019 = rules.resolve("0.1.8"), rules.resolve("0.1.9")
    assert presence.unimported("tilelang.cuda.language", g018, rules)
    assert presence.unimported("tilelang.cuda.language", g019, rules) is None  # 0.1.13 is among 0.1.9's releases
    assert presence.unimported("tilelang.language.ast.ir", g019, rules)
    assert presence.unimported("tilelang.language", g018, rules) is None  # under no entry: every release
    assert "tilelang.cuda" in rules.presence and "tilelang.language.ast" in rules.presence
