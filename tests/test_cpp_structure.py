"""The C++ front end's structure, read from the source with ``ast`` (never by importing the scanned code).

The site families of ``cpasync_migrate/cpp/`` are units holding the file's context as ``ctx``; one family
calls another only through an attribute typed by a ``typing.Protocol`` of ``cpp/parts.py``.  So:

* every ``self.NAME(...)`` call in a class of ``cpp/`` names a method or attribute the class defines or
  inherits from a base it names (``UNDECLARED`` lists the calls that did not when this test was written,
  class.name; it may only shrink, and is empty now);
* every ``self.ATTR.NAME`` read, where the class types ``ATTR`` (a class-level annotation, or an annotated
  ``__init__`` parameter it stores) with a class of ``cpp/``, names what that class defines or inherits:
  a family reaches the context's state and questions, and another family's declared methods, only;
* each protocol of ``parts.py`` is met by the family that the analyzer hands over for it.
"""
from __future__ import annotations

import ast
import inspect
import textwrap
from pathlib import Path

from test_verify_structure import undeclared_calls

ROOT = Path(__file__).resolve().parent.parent
CPP = sorted((ROOT / "cpasync_migrate" / "cpp").glob("*.py"))

# calls through ``self`` that no base the class names defined (38 when the check was written: the mixins
# reaching the context and each other); the list only shrinks
UNDECLARED: set[str] = set()


def _sources() -> dict:
    return {str(p.relative_to(ROOT)): p.read_text() for p in CPP}


def _found() -> set[str]:
    return {b.split(": ", 1)[1].replace(" calls self.", ".") for b in undeclared_calls(_sources())}


def _type_name(ann) -> str:
    """The class an annotation names (``T``, ``Optional[T]``, ``"T"``), else ""."""
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        ann = ast.parse(ann.value, mode="eval").body
    if isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Name) and ann.value.id == "Optional":
        ann = ann.slice
    return ann.id if isinstance(ann, ast.Name) else ""


def undeclared_reads(sources: dict) -> list[str]:
    """Each ``self.ATTR.NAME`` whose ``ATTR`` the class types with a class of ``sources`` that (with the
    bases it names) neither defines nor stores ``NAME``."""
    classes, typed, reads = {}, {}, []
    for label, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.ClassDef):
                continue
            defined, types = set(), {}
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    defined.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    defined.add(item.target.id)
                    types[item.target.id] = _type_name(item.annotation)
                elif isinstance(item, ast.Assign):
                    defined.update(t.id for t in item.targets if isinstance(t, ast.Name))
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    params = {a.arg: _type_name(a.annotation) for a in item.args.args + item.args.kwonlyargs
                              if a.annotation is not None}
                    for st in ast.walk(item):
                        if (isinstance(st, ast.Assign) and isinstance(st.value, ast.Name) and st.value.id in params
                                and isinstance(st.targets[0], ast.Attribute)
                                and isinstance(st.targets[0].value, ast.Name) and st.targets[0].value.id == "self"):
                            types.setdefault(st.targets[0].attr, params[st.value.id])
            for sub in ast.walk(node):
                if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self" \
                        and isinstance(sub.ctx, ast.Store):
                    defined.add(sub.attr)
                if (isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Attribute)
                        and isinstance(sub.value.value, ast.Name) and sub.value.value.id == "self"):
                    reads.append((f"{label}:{sub.lineno}", node.name, sub.value.attr, sub.attr))
            bases = [b.id if isinstance(b, ast.Name) else "" for b in node.bases]
            assert node.name not in classes, f"two classes named {node.name} ({label})"
            classes[node.name], typed[node.name] = (defined, bases), types

    def known(name, seen=()):
        if name not in classes or name in seen:
            return set()
        defined, bases = classes[name]
        out = set(defined)
        for b in bases:
            out |= known(b, seen + (name,))
        return out

    return [f"{where}: {cls} reads self.{attr}.{name} ({typed[cls][attr]} has no {name})"
            for where, cls, attr, name in reads
            if typed[cls].get(attr) in classes and name not in known(typed[cls][attr])]


def test_every_self_call_in_cpp_is_defined_or_declared():
    assert sorted(_found() - UNDECLARED) == [], "a class of cpp/ calls through self what no base it names defines"


def test_the_allow_list_only_shrinks():
    # a call that is declared now must leave the list, so that the list says what remains to do
    assert sorted(UNDECLARED - _found()) == []


def test_every_read_through_a_typed_attribute_is_declared():
    assert undeclared_reads(_sources()) == []


def test_the_families_are_units_over_the_context():
    from cpasync_migrate.cpp import analyzer, constructions, consumers, declarations, merge
    from cpasync_migrate.cpp.context import CppContext

    families = [constructions.ConstructionChecks, consumers.ConsumerChecks, merge.MergeRebase,
                declarations.DeclarationChecks]
    for fam in families:
        assert fam.__mro__ == (fam, object), f"{fam.__name__} is a unit, not a mixin"
        assert inspect.signature(fam.__init__).parameters["ctx"].annotation in ("CppContext", CppContext)
    assert analyzer.CppAnalyzer.__mro__[1:] == (CppContext, object)


def test_each_protocol_is_met_by_the_family_handed_over_for_it():
    from typing import Protocol

    from cpasync_migrate.cpp import constructions, consumers, merge, parts

    met_by = {parts.MergePart: merge.MergeRebase, parts.ArgsReader: consumers.ConsumerChecks,
              parts.EmitSpellings: constructions.ConstructionChecks}
    protocols = {c for c in vars(parts).values() if isinstance(c, type) and Protocol in c.__mro__[1:]}
    assert protocols == set(met_by)
    for proto, fam in met_by.items():
        for name, value in vars(proto).items():
            if callable(value) and not name.startswith("_"):
                assert list(inspect.signature(getattr(fam, name)).parameters) == \
                    list(inspect.signature(value).parameters), f"{fam.__name__}.{name} differs from {proto.__name__}"


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


def test_the_read_check_follows_the_typed_attributes():
    src = textwrap.dedent("""
        class Context:
            def __init__(self):
                self.sites = []
            def text_of(self, n): ...
        class MergePart(Protocol):
            def merge_rewrite(self, s): ...
        class Consumers:
            merge: MergePart
            def __init__(self, ctx: Context):
                self.ctx = ctx
            def consumer(self, s):
                self.ctx.sites.append(self.ctx.text_of(s))
                return self.merge.merge_rewrite(s) or self.merge.merge_fix(s) or self.ctx.constructions
    """)
    assert sorted(undeclared_reads({"m.py": src})) == [
        "m.py:14: Consumers reads self.ctx.constructions (Context has no constructions)",
        "m.py:14: Consumers reads self.merge.merge_fix (MergePart has no merge_fix)",
    ]
