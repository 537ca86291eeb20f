"""The C++ front end's structure, read from the source with ``ast`` (never by importing the scanned code).

Every ``self.NAME(...)`` call in a class of ``cpasync_migrate/cpp/`` names a method or attribute the class
defines or inherits from a base it names, or one a ``typing.Protocol`` it names declares (what one site
family calls in another), so an editor can jump from every call to its definition.  ``UNDECLARED`` lists
the calls that do not yet (class.name): it may only shrink.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

from test_verify_structure import undeclared_calls

ROOT = Path(__file__).resolve().parent.parent
CPP = sorted((ROOT / "cpasync_migrate" / "cpp").glob("*.py"))

# calls through ``self`` that no base the class names defines or declares, as the check found them first
UNDECLARED: set[str] = {
    "ConstructionChecks._arg", "ConstructionChecks._layout", "ConstructionChecks._leaf_name",
    "ConstructionChecks._parked_near_error", "ConstructionChecks.fn_declarator", "ConstructionChecks.func_of",
    "ConstructionChecks.ir_op", "ConstructionChecks.is_op_call", "ConstructionChecks.near_error",
    "ConstructionChecks.op_node", "ConstructionChecks.qualname", "ConstructionChecks.text_of",
    "ConsumerChecks._arg", "ConsumerChecks._args_access", "ConsumerChecks._delete_statement",
    "ConsumerChecks._index_map", "ConsumerChecks._layout", "ConsumerChecks._leaf_name",
    "ConsumerChecks._merge_rewrite", "ConsumerChecks._merge_todo", "ConsumerChecks._parked_near_error",
    "ConsumerChecks.func_of", "ConsumerChecks.in_dead", "ConsumerChecks.ir_op", "ConsumerChecks.near_error",
    "ConsumerChecks.op_node", "ConsumerChecks.text_of",
    "DeclarationChecks._declarator_name", "DeclarationChecks._index_map", "DeclarationChecks._leaf_name",
    "DeclarationChecks.fn_declarator", "DeclarationChecks.near_error", "DeclarationChecks.text_of",
    "MergeRebase._args_access", "MergeRebase._args_uses", "MergeRebase._emit_context", "MergeRebase.func_of",
    "MergeRebase.text_of",
}


def _found() -> set[str]:
    sources = {str(p.relative_to(ROOT)): p.read_text() for p in CPP}
    return {b.split(": ", 1)[1].replace(" calls self.", ".") for b in undeclared_calls(sources)}


def test_every_self_call_in_cpp_is_defined_or_declared():
    found = _found()
    assert sorted(found - UNDECLARED) == [], "a class of cpp/ calls through self what no base it names defines"


def test_the_allow_list_only_shrinks():
    # a call that is declared now must leave the list, so that the list says what remains to do
    assert sorted(UNDECLARED - _found()) == []


def test_the_check_finds_one_family_calling_another_and_accepts_a_protocol():
    src = textwrap.dedent("""
        class Context:
            def text_of(self, n): ...
        class Consumers(Context):
            def consumer(self, s):
                return self.text_of(s) + self.merge_rewrite(s)
        class Merge(Context):
            def merge_rewrite(self, s): ...
        class Analyzer(Consumers, Merge, Context):
            pass
    """)
    assert undeclared_calls({"m.py": src}) == ["m.py:6: Consumers calls self.merge_rewrite"]
    declared = src.replace("class Consumers(Context):", "class MergePart(Protocol):\n"
                                                          "    def merge_rewrite(self, s): ...\n"
                                                          "class Consumers(Context, MergePart):")
    assert undeclared_calls({"m.py": declared}) == []
