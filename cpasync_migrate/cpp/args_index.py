"""Where a consumer's region reads ``X->args`` and declares names, by one walk of the outermost region asked.

A consumer check reads the ``args`` uses and the declarations in its branch (its condition and body).  Each
walked its own branch, and a branch holds the branches nested in it: a thousand nested consumer ``if``s walked
the innermost a thousand times (41 s).  And each use asked ``Node.parent``, which tree-sitter answers by going
down from the root, so a use deep in a long ``a << b << ...`` chain cost the chain's depth (32,000 reads never
ended).  An :class:`ArgsIndex` walks a region once, keeping each ``args`` field expression with its parent
and grandparent as the walk met them, and each init declarator, in document order; a region inside one
already walked is answered from that walk's lists by bisection.

A switch (``CPASYNC_MIGRATE_CPP_ARGS_INDEX=0``: each question walks its region and asks ``Node.parent``, as
before; a measuring switch).  ``tests/test_cpp_speedups.py`` checks the same analyses on and off.
"""
from __future__ import annotations

import bisect
import os

ON = os.environ.get("CPASYNC_MIGRATE_CPP_ARGS_INDEX", "1") != "0"


class _Region:
    __slots__ = ("lo", "hi", "reads", "read_starts", "decls", "decl_starts")

    def __init__(self, node, text_of, field: str) -> None:
        self.lo, self.hi = node.start_byte, node.end_byte
        reads, decls = [], []
        stack = [(node, None, None, True)]  # (node, parent, grandparent, parents unknown: the region's root)
        while stack:
            n, p, pp, root = stack.pop()
            kind = n.type
            if kind == "field_expression":
                f = n.child_by_field_name("field")
                if f is not None and text_of(f) == field:
                    if root:
                        p = n.parent
                        pp = p.parent if p is not None else None
                    reads.append((n, p, pp))
            elif kind == "init_declarator":
                decls.append(n)
            children = n.children
            if children:
                stack.extend((c, n, p, False) for c in reversed(children))
        self.reads, self.read_starts = reads, [r[0].start_byte for r in reads]
        self.decls, self.decl_starts = decls, [d.start_byte for d in decls]


def _inside(items, starts, node, key=lambda x: x):
    lo, hi = node.start_byte, node.end_byte
    out = []
    for i in range(bisect.bisect_left(starts, lo), len(items)):
        n = key(items[i])
        if n.start_byte >= hi:
            break
        if n.end_byte <= hi:  # below ``node`` (a node starting inside it and ending past it holds it)
            out.append(items[i])
    return out


class ArgsIndex:
    """The ``<field>`` field expressions and init declarators below the regions a file's consumer checks ask
    about.  ``text_of`` reads a node's text; ``field`` is the arguments' field name (``args``)."""

    def __init__(self, text_of, field: str) -> None:
        self._text_of, self._field = text_of, field
        self._los: list = []  # the walked regions' starts, sorted; the regions lie apart
        self._regions: list = []

    def _region(self, node) -> _Region:
        lo, hi = node.start_byte, node.end_byte
        j = bisect.bisect_right(self._los, lo) - 1
        if j >= 0 and hi <= self._regions[j].hi:
            return self._regions[j]
        r = _Region(node, self._text_of, self._field)
        a = bisect.bisect_left(self._los, lo)
        b = a
        while b < len(self._los) and self._regions[b].hi <= hi:  # walked regions inside this one: superseded
            b += 1
        self._los[a:b] = [lo]
        self._regions[a:b] = [r]
        return r

    def reads(self, node) -> list:
        """(field expression, its parent, its grandparent) for each ``X-><field>`` below ``node`` (itself
        included), in document order."""
        r = self._region(node)
        return _inside(r.reads, r.read_starts, node, key=lambda x: x[0])

    def declarators(self, node) -> list:
        """The init declarators below ``node``, in document order."""
        r = self._region(node)
        return _inside(r.decls, r.decl_starts, node)
