"""The Python front end's structure, read from the source with ``ast``: calls through ``self`` that no base the
class names defines (issue 28, item 1).

The libcst pass composes its context from mixins (``rewrite._Context``: ``Context``, ``Bindings``, ``Imports``,
``LegacyCall``, ``AccessPtrCall``, ``ValueRead``) that call each other through ``self`` with nothing declaring
what one needs of another.  ``UNDECLARED`` lists those calls as they are (class.name); it may only shrink: a call
that becomes declared (a service the context holds, a ``Protocol``) must leave the list, and no new one may
appear.  The C++ front end's list (tests/test_cpp_structure.py) is empty.
"""
from __future__ import annotations

from pathlib import Path

from test_verify_structure import undeclared_calls

ROOT = Path(__file__).resolve().parent.parent
# Modules with classes of their own that are not the libcst pass's mixins (a local visitor, an exception, the
# decisions): the check resolves bases by class name, and these reuse names.
LEFT_OUT = {"cst_util.py", "reach.py", "definitions_ast.py", "fast_scan.py"}
PYTHON = [p for p in sorted((ROOT / "cpasync_migrate" / "python").rglob("*.py"))
          if p.name not in LEFT_OUT and "decide" not in p.parts]

# 42 calls when the check was written (2026-12-02); the list only shrinks
UNDECLARED = {
    "AccessPtrCall.decl_dtype_expr",
    "AccessPtrCall.declaration_of",
    "AccessPtrCall.dtype_of_expr",
    "AccessPtrCall.legacy_dtype_kw",
    "AccessPtrCall.node_text",
    "AccessPtrCall.qnames",
    "AccessPtrCall.span",
    "AccessPtrCall.vspan",
    "Bindings.md",
    "Bindings.node_text",
    "Bindings.pos",
    "Bindings.qnames",
    "Bindings.qualified_names",
    "Bindings.which_api",
    "Imports.assignments",
    "Imports.md",
    "Imports.pos",
    "Imports.qnames",
    "LegacyCall.alias_visible_at",
    "LegacyCall.const_int",
    "LegacyCall.decl_dtype_expr",
    "LegacyCall.decl_ndim",
    "LegacyCall.declaration_of",
    "LegacyCall.declarations_of",
    "LegacyCall.declared_default",
    "LegacyCall.dtype_of_expr",
    "LegacyCall.emit_alias",
    "LegacyCall.no_declaration_why",
    "LegacyCall.node_text",
    "LegacyCall.own_alias",
    "LegacyCall.pos",
    "LegacyCall.readings",
    "LegacyCall.same_binding",
    "LegacyCall.span",
    "LegacyCall.vspan",
    "ValueRead.assignments",
    "ValueRead.enclosing_function",
    "ValueRead.node_text",
    "ValueRead.parent",
    "ValueRead.pos",
    "ValueRead.qnames",
    "ValueRead.scope_of",
}


def _found() -> set[str]:
    sources = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in PYTHON}
    return {b.split(": ", 1)[1].replace(" calls self.", ".") for b in undeclared_calls(sources)}


def test_no_new_undeclared_call_through_self():
    assert sorted(_found() - UNDECLARED) == []


def test_the_list_names_only_calls_that_are_still_undeclared():
    assert sorted(UNDECLARED - _found()) == []


def test_the_check_sees_an_undeclared_call():
    src = "class A:\n    def f(self):\n        return self.g()\n\nclass B(A):\n    def g(self):\n        return 1\n"
    got = undeclared_calls({"m.py": src})
    assert len(got) == 1 and "A calls self.g" in got[0], got
