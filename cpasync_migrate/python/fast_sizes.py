"""The facts of CPA005 for an access-pointer call from the stdlib ``ast`` (what ``checks/access_ptr_call.py``
reads with libcst): the size literal, the pointer types read where the text decides them simply, the
widening loop's lanes; ``Undecided`` anywhere else.  What the facts mean is ``decide/access_ptr.py``'s."""
from __future__ import annotations

import ast
import re
from typing import Optional

from ..findings import FrontEndOptions
from .decide import access_ptr as decide
from .fast_scan import Scan, Undecided, qualify


class _NoFix(Exception):
    """What ``rewrite.NoFix`` is there: the pointer type cannot be read, so no size warning."""


_SIMPLE_STR = re.compile(r"""[uU]?(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')\Z""")


class NewForm:
    """CPA005's facts for a call in the access-pointer shape, as ``checks/access_ptr_call.py`` reads them.

    Reads what ``new_form_parts``, ``access_pointer_dtype``, ``declaration_of``, ``decl_dtype_expr``
    and ``dtype_of_expr`` read, on the stdlib tree.  Names are looked up only where the
    text decides them here: a name bound once in the file whose scope is the module or a function
    around the lookup; anything else that could change the answer raises ``Undecided``.
    """

    def __init__(self, s: Scan, lines: list[str], options: FrontEndOptions):
        self.s = s
        self.lines = lines
        self.rules = options.rules
        self.target = options.target
        self.mods = set(self.rules.tilelang_modules) | set(self.rules.tvm_modules)

    # ------------------------------------------------------------ positions and scopes

    @staticmethod
    def _pos(node):
        return (node.lineno, node.col_offset)

    def _innermost(self, node):
        """The scope a binding belongs to: ('module', None) or ('def', F); undecided for any other scope."""
        p, e = self._pos(node), (node.end_lineno, node.end_col_offset)
        best = None
        for kind, sc in self.s.scopes:
            if sc is node:
                continue
            if kind == "def":
                start, end = self._pos(sc.body[0]), (sc.body[-1].end_lineno, sc.body[-1].end_col_offset)
            else:
                start, end = self._pos(sc), (sc.end_lineno, sc.end_col_offset)
            if start <= p and e <= end and (best is None or start >= best[0]):
                best = (start, kind, sc)
        if best is None:
            return None
        if best[1] != "def":
            raise Undecided  # a class body, lambda or comprehension binds it
        return best[2]

    def _visible(self, name: str, at) -> list:
        """The bindings of ``name`` that a lookup at ``at`` sees, as libcst's scopes give them.

        Python's rule: the innermost function around ``at`` (or the module) that binds the name
        holds every binding the lookup sees.  Undecided where a binding is not in a function or
        the module, is one libcst records otherwise, or ``at`` is in the signature or decorators
        of a function that binds the name.
        """
        bs = self.s.bindings.get(name, [])
        if not bs:
            return []
        placed = []
        for b in bs:
            kind, node, extra = b
            if kind == "uncertain":
                raise Undecided
            if kind == "param":
                placed.append((extra, b))
            else:
                where = extra if kind in ("assign", "annassign", "tuple") else \
                    extra.context_expr if kind == "with" else node
                placed.append((self._innermost(where), b))
        p = self._pos(at)
        chain = []
        for kind, sc in self.s.scopes:
            if kind != "def":
                continue
            if self._pos(sc.body[0]) <= p <= (sc.body[-1].end_lineno, sc.body[-1].end_col_offset):
                chain.append(sc)
            elif min([self._pos(sc)] + [self._pos(d) for d in sc.decorator_list]) <= p <= \
                    (sc.end_lineno, sc.end_col_offset) and any(f is sc for f, _ in placed):
                raise Undecided  # which scope libcst reads a signature in is not this pass's to say
        chain.sort(key=lambda f: self._pos(f.body[0]), reverse=True)
        for f in chain + [None]:
            seen = [b for g, b in placed if g is f]
            if seen:
                return seen
        return []

    # ------------------------------------------------------------ names and text

    def _qname_parts(self, func):
        """(module, name) of what ``func`` names through imports; None when its root is no import."""
        q = qualify(func, self.s)
        if q is None:
            return None
        mod, _, name = q.rpartition(".")
        return mod, name

    def _segment(self, node) -> str:
        if node.lineno != node.end_lineno:
            raise Undecided
        b = self.lines[node.lineno - 1].encode("utf-8")
        return b[node.col_offset:node.end_col_offset].decode("utf-8", "replace")

    @staticmethod
    def _positional(call: ast.Call):
        if call.keywords or any(type(a) is ast.Starred for a in call.args):
            raise Undecided  # libcst's argument list mixes them in source order
        return call.args

    # ------------------------------------------------------------ dtypes

    def dtype_of_expr(self, expr, at, depth: int = 0):
        """(name, size) as ``dtype_of_expr`` resolves it; size None when unknown."""
        if type(expr) is ast.Constant and isinstance(expr.value, (str, bytes)):
            if not _SIMPLE_STR.match(self._segment(expr)):
                raise Undecided  # implicit concatenation, prefixes, triple quotes: libcst reads those otherwise
            if not isinstance(expr.value, str):
                raise _NoFix
            name = self.rules.canonical_dtype(expr.value)
            size = self.rules.dtype_size(name)
            if size is None:
                raise _NoFix
            return name, size
        if type(expr) is ast.Attribute:
            q = self._qname_parts(expr)
            if q is not None and q[0] in self.mods and self.rules.dtype_size(expr.attr) is not None:
                name = self.rules.canonical_dtype(expr.attr)
                return name, self.rules.dtype_size(name)
            raise _NoFix
        if type(expr) is ast.Name and depth < 4:
            bs = self.s.bindings.get(expr.id, [])
            if any(k == "chain" for k, _, _ in bs):
                raise Undecided  # `DT = ACC = "float16"`: rewrite.dtype_of_expr follows the chain
            if not any(k == "assign" for k, _, _ in bs):
                return None, None  # a parameter, a loop variable, unbound: the type is not known from the text
            seen = self._visible(expr.id, at)
            if len(seen) != 1 or seen[0][0] != "assign":
                return None, None
            return self.dtype_of_expr(seen[0][2].value, seen[0][2], depth + 1)
        raise _NoFix

    def decl_of(self, name: str, at):
        """(context node, declaration expression) as ``declaration_of`` finds it; None when none."""
        seen = self._visible(name, at)
        if len(seen) != 1:
            return None
        kind, node, extra = seen[0]
        if kind == "param":
            return (node, node.annotation) if node.annotation is not None else None
        if kind in ("tuple", "chain") or (kind == "assign" and type(extra.value) is ast.Name):
            raise Undecided  # unpacking and aliases: rewrite.declaration_of follows them
        if kind in ("assign", "annassign"):
            return extra, extra.value
        if kind == "with":
            return extra.context_expr, extra.context_expr
        return None

    def decl_dtype(self, decl):
        """The dtype expression of a declaration (None: the API default), as ``decl_dtype_expr``."""
        if type(decl) is ast.Subscript:
            raise Undecided  # T.Buffer[...]: libcst's slice elements are not ast's
        if type(decl) is not ast.Call:
            raise _NoFix
        q = self._qname_parts(decl.func)
        if q is None or q[1] not in self.rules.declarations or q[0] not in self.mods:
            raise _NoFix  # (a bare name only a star import binds: star imports went to libcst before)
        spec = self.rules.declarations[q[1]]
        if any(type(a) is ast.Starred for a in decl.args) or any(k.arg is None for k in decl.keywords):
            raise _NoFix
        for k in decl.keywords:
            if k.arg == spec["keyword"]:
                return k.value
        if len(decl.args) > spec["position"]:
            return decl.args[spec["position"]]
        return None

    def pointer_dtype(self, expr, call):
        """(name, size) of a new-form argument, as ``access_pointer_dtype``."""
        if type(expr) is not ast.Call:
            raise _NoFix
        q = self._qname_parts(expr.func)
        names = {q[1]} if q is not None and q[0] in self.mods else set()
        g = self.target
        args = self._positional(expr) if names & {g.access_ptr, g.buffer_access_ptr} else []
        if g.access_ptr in names and args:
            ta = args[0]
            if type(ta) is ast.Call and self._positional(ta):
                tq = self._qname_parts(ta.func)
                if tq is None:
                    raise Undecided  # libcst's qualified names of an unimported root are its own
                if tq[1] == g.type_annotation:
                    return self.dtype_of_expr(ta.args[0], call)
            raise _NoFix
        if g.buffer_access_ptr and g.buffer_access_ptr in names and args:
            sub = args[0]
            if type(sub) is ast.Subscript and type(sub.value) is ast.Name:
                found = self.decl_of(sub.value.id, call)
                if found is not None:
                    dexpr = self.decl_dtype(found[1])
                    if dexpr is not None:
                        return self.dtype_of_expr(dexpr, found[0])
            raise _NoFix
        raise _NoFix

    # ------------------------------------------------------------ the call

    def lanes(self, call: ast.Call) -> Optional[int]:
        """The lanes of the one widening loop (``for i in T.vectorized(N)``, the target's
        ``widening_loop``) whose body holds ``call``; None: no such loop, more than one, or lanes
        the text does not give as literals."""
        name = self.target.widening_loop
        if name is None:
            return None
        at, end = (call.lineno, call.col_offset), (call.end_lineno, call.end_col_offset)
        found = []
        for loop in self.s.loops:
            first, last = loop.body[0], loop.body[-1]
            if not ((first.lineno, first.col_offset) <= at and end <= (last.end_lineno, last.end_col_offset)):
                continue
            it = loop.iter
            if type(it) is not ast.Call or type(it.func) is not ast.Attribute or it.func.attr != name:
                continue
            q = qualify(it.func, self.s)
            if q is not None and q.rpartition(".")[0] in self.rules.tilelang_modules:
                found.append(it)
        if len(found) != 1 or found[0].keywords:
            return None
        return decide.loop_lanes([a.value if type(a) is ast.Constant and type(a.value) is int else None
                           for a in found[0].args])

    def size_warning(self, call: ast.Call) -> Optional[str]:
        rules, g = self.rules, self.target
        pos = call.args
        names_size = {gen.python_params[2] for gen in rules.generations[1:]}
        if len(pos) < 2:
            return None
        if len(pos) > 2:
            size = pos[2]
        else:
            named = [k.value for k in call.keywords if k.arg in names_size]
            if len(named) > 1:
                raise Undecided
            if not named:
                return None
            size = named[0]
        value = size.value if type(size) is ast.Constant and type(size.value) is int else None
        if not decide.pointers_matter(rules, g, value):
            return None  # no warning whatever the pointers are (not a literal, or a width every size divides)
        try:
            dst = decide.PointerType(*self.pointer_dtype(pos[0], call))
            src = decide.PointerType(*self.pointer_dtype(pos[1], call))
        except _NoFix:
            return None
        return decide.size_warning(g, value, dst, src, lambda: self.lanes(call))
