"""What a function or class declares, assigns and names, found by one walk of it and then looked up.

The builder checks (``constructions.py``) ask of each legacy call what a name is in its function: is it
declared as a ``tir::Var``, is it initialised with an access pointer, which assignments give an Op variable
its value, where is an array used.  Each of those questions walked the whole function, so a function of n
builders took n walks of itself (200 builders in one function: 9 s and 290 MB).  A :class:`ScopeIndex`
walks its node once, keeping the nodes of the few types these questions read, in document order (the order
the walks met them), and answers by name.

The same switch covers the questions asked of the whole file per builder: which functions a helper's name
defines (``CppContext.definitions_named``), where a helper's name is used (a ScopeIndex of the root), and whether
a name a hoist would declare is free in a function and outside every function (asked once per function and
name): 400 helper builders took 37 s, now 2.4 s.

A switch (``CPASYNC_MIGRATE_CPP_SCOPE_INDEX=0``: every question walks the function, or the file, again, as before;
a measuring switch).  ``tests/test_cpp_speedups.py`` checks the same analyses on and off.
"""
from __future__ import annotations

import os
from collections import defaultdict

from .source import squash, walk

ON = os.environ.get("CPASYNC_MIGRATE_CPP_SCOPE_INDEX", "1") != "0"

DECLARATIONS = ("declaration", "field_declaration", "parameter_declaration")
_KEPT = frozenset((*DECLARATIONS, "init_declarator", "assignment_expression"))
_NAMES = frozenset(("identifier", "field_identifier"))


class ScopeIndex:
    """The nodes of one function, function body or class body that the builder checks ask about.

    ``text_of`` and ``leaf_name`` are the file context's (how a node's text and a declarator's name are read)."""

    def __init__(self, node, text_of, leaf_name) -> None:
        self._text_of, self._leaf_name = text_of, leaf_name
        self._by_type: dict = defaultdict(list)
        for n in walk(node):
            kind = n.type
            if kind in _KEPT:
                self._by_type[kind].append(n)
            elif kind in _NAMES:
                self._by_type["name"].append(n)
        self._tables: dict = {}  # question -> {name: answer}, each built when first asked

    def _lookup(self, question: str, name: str, build):
        table = self._tables.get(question)
        if table is None:
            table = self._tables[question] = build()
        return table.get(name, ())

    def declared_types(self, name: str):
        """The types (whitespace removed) of the declarations of ``name`` in the scope: declarations, fields
        and parameters, each declarator by its leaf name."""
        def build():
            out: dict = defaultdict(set)
            for kind in DECLARATIONS:
                for n in self._by_type.get(kind, ()):
                    ty = n.child_by_field_name("type")
                    if ty is not None:
                        t = squash(self._text_of(ty))
                        for d in n.children_by_field_name("declarator"):
                            out[self._leaf_name(d)].add(t)
            return out

        return self._lookup("declared", name, build)

    def initialisers(self, name: str):
        """(start byte, value) of each ``name = value`` init declarator (a plain identifier declared), in
        document order."""
        def build():
            out: dict = defaultdict(list)
            for n in self._by_type.get("init_declarator", ()):
                d, v = n.child_by_field_name("declarator"), n.child_by_field_name("value")
                if d is not None and d.type == "identifier" and v is not None:
                    out[self._text_of(d)].append((n.start_byte, v))
            return out

        return self._lookup("initialisers", name, build)

    def assignments(self, name: str):
        """The assignment expressions whose left side is the identifier ``name``, in document order."""
        def build():
            out: dict = defaultdict(list)
            for n in self._by_type.get("assignment_expression", ()):
                left = n.child_by_field_name("left")
                if left is not None and left.type == "identifier":
                    out[self._text_of(left)].append(n)
            return out

        return self._lookup("assignments", name, build)

    def names(self, name: str):
        """The identifier and field identifier nodes spelled ``name``, in document order."""
        def build():
            out: dict = defaultdict(list)
            for n in self._by_type.get("name", ()):
                out[self._text_of(n)].append(n)
            return out

        return self._lookup("names", name, build)
