"""CPA111: the shared-memory merge pass's legacy ``ptx_cp_async`` branch, rewritten in the upstream shape.

CPA111 cpp-merge-rebase-rewritable: docs/codes/CPA111.md (the fix, its assumptions, what is not offered).

Every TileLang fork carries ``SharedMemoryRewriter::VisitExpr_`` (in
``merge_shared_memory_allocations.cc``), whose ``ptx_cp_async`` branch takes the legacy
destination data ``Var`` from ``args[0]``, re-bases the offset ``args[1]`` into the merged
byte buffer (scaled by the call dtype's size) and rebuilds the 5/6-argument call.

The branch is recognised by what it reads and builds, statement by statement (names,
spellings, comments and the way the predicated form is told apart are free):

- an optional size check (``ICHECK``/``TVM_FFI_ICHECK``... of ``X->args.size()`` against 5/6);
- optional ``T D = X->dtype;`` and ``int K = <call dtype>.bytes();`` locals;
- ``V B = Downcast<V>(X->args[0]);`` with ``V`` a ``Var`` spelling (the destination data);
- a guard ``if (...B...) return ...;`` that does not build the op;
- ``E = F(B, <call dtype>);`` (the buffer's place in the merged buffer);
- ``O = [this->]VisitExpr(X->args[1]);`` (the destination offset);
- the rebuilt call(s), at the end of the branch: ``return Call(<call dtype>, X->op, L[, ann]);``,
  directly or in an ``if``/``else`` on ``X->args.size()``, with ``L`` an inline list or a local
  ``Array`` (plus ``A.push_back(X->args[5])``); every list is
  ``{M, mul(E + O, <factor>), X->args[2], X->args[3], X->args[4][, X->args[5]]}``, the factor
  being ``K`` or the call dtype's ``.bytes()``, the same ``M`` and sum everywhere;
- and, in the same if/else chain, a ``tvm_access_ptr`` branch that re-bases access pointers
  with the same ``F`` and ``M``: its existence is what shows ``F(B, T)`` counts in units of ``T``.

The fix opens the destination access pointer and re-bases it in its own type's units, as the
``tvm_access_ptr`` branch of the same visitor does; how that differs from upstream PR #1590's
byte factor: docs/cpp.md, "Comparison with upstream's hand migration".
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from ..findings import Applicability
from .. import codes
from .context import CppContext, int_suffix, short
from .layout import layout_statement
from .parts import ArgsReader, EmitSpellings
from .source import named, squash, walk

_DOWNCAST = re.compile(r"^((?:[A-Za-z_]\w*::)*Downcast)<(.+)>$")
_VISIT = re.compile(r"^(?:this->|\(\*this\)\.)?(?:[A-Za-z_]\w*::)*VisitExpr$")
_ACCESS_PTR_TEST = re.compile(r"same_as\(\s*(?:[\w:]*::)?tvm_access_ptr\(\s*\)\s*\)")


class _NotMerge(Exception):
    """The branch is not the merge pass's legacy shape; ``rebuilds`` says whether it rebuilds the call."""

    def __init__(self, reason: str, rebuilds: bool = True):
        super().__init__(reason)
        self.reason = reason
        self.rebuilds = rebuilds


def _fresh(name: str, taken: set) -> str:
    """``name``, with underscores appended until no identifier of ``taken`` is spelled so."""
    while name in taken:
        name += "_"
    return name


@dataclass
class MergeShape:
    """The merge pass's legacy branch as recognised (:meth:`MergeRebase._merge_fix`), what emitting reads.

    ``*_decl`` are the statements, ``*_name`` the locals they declare: ``d`` the call dtype
    (``T D = X->dtype``), ``k`` its byte size (``int K = D.bytes()``), ``b`` the destination Var
    (``V B = Downcast<V>(X->args[0])``: ``b_sub`` the ``args[0]`` node, ``downcast`` the spelling),
    ``e`` the buffer's place in the merged buffer (``E = F(B, <dtype>)``: ``e_fn`` is ``F``, ``e_dtype``
    the dtype node), ``o`` the destination offset (``O = VisitExpr(X->args[1])``: ``o_sub`` the
    ``args[1]`` node, ``o_type`` the declared type).  ``tail`` is the statements that rebuild the call,
    ``first_call`` the first rebuilt ``Call(...)`` (``ctor`` its spelling, ``dtype_text``, ``opcall_text``
    and ``ann`` its dtype, op and extra arguments), ``merged`` and ``summed`` the destination and the
    re-based sum every rebuilt list gives.  ``decided``: the file's ``tvm_access_ptr`` branch re-bases in
    each pointer's own units, so the fix's unit assumption is a fact (see ``_rebases_in_own_type``).
    """

    s: object  # the if statement of the branch
    body: object
    opnode: object
    check: Optional[tuple] = None  # (statement, check call) of the size check
    guard: object = None
    d_decl: object = None
    d_name: Optional[str] = None
    k_decl: object = None
    k_name: Optional[str] = None
    b_decl: object = None
    b_name: Optional[str] = None
    b_sub: object = None
    downcast: str = ""
    e_decl: object = None
    e_name: Optional[str] = None
    e_dtype: object = None
    e_fn: str = ""
    o_decl: object = None
    o_name: Optional[str] = None
    o_sub: object = None
    o_type: str = "PrimExpr"
    tail: list = field(default_factory=list)
    arrays: dict = field(default_factory=dict)  # name -> initializer list of a local rebuilt-list Array
    pushes: list = field(default_factory=list)  # what the tail appends to a rebuilt list
    first_call: object = None
    ctor: Optional[str] = None
    dtype_text: Optional[str] = None
    opcall_text: Optional[str] = None
    ann: Optional[str] = None
    merged: Optional[str] = None
    summed: Optional[str] = None
    decided: bool = False


class MergeRebase:
    """Detection and rewrite of the merge pass's legacy branch (CPA111): a unit over the file's context,
    reading ``args`` as the consumers do (``consumers``) and spelling the rebuilt call as a construction
    does (``constructions``); the analyzer hands it both."""

    consumers: ArgsReader
    constructions: EmitSpellings

    def __init__(self, ctx: CppContext, consumers: Optional[ArgsReader] = None,
                 constructions: Optional[EmitSpellings] = None):
        self.ctx = ctx
        self.consumers = consumers
        self.constructions = constructions

    _merge_obj: str = ""  # the CallNode expression of the branch being matched (``op``)

    def merge_rewrite(self, site, obj: str, s, cond, body, opnode) -> tuple[Optional[str], bool]:
        """Give ``site`` the CPA111 fix; (None, True) on success, else (reason, rebuilds the call)."""
        try:
            self._merge_fix(site, obj, s, cond, body, opnode)
        except _NotMerge as e:
            return e.reason, e.rebuilds
        return None, True

    # -------------------------------------------------------------- matching
    def _is_obj_arg(self, node, k: Optional[int] = None) -> bool:
        """``node`` is ``<obj>->args[k]`` (any k when None)."""
        if node is None or node.type != "subscript_expression":
            return False
        if not self.ctx.args_access(node.child_by_field_name("argument"), self._merge_obj):
            return False
        idx = named(node.child_by_field_name("indices"))
        if len(idx) != 1 or idx[0].type != "number_literal":
            return False
        return k is None or self.ctx.text_of(idx[0]).rstrip("uUlL") == str(k)

    def _is_call_dtype(self, node, d_name: Optional[str]) -> bool:
        text = squash(self.ctx.text_of(node))
        return (d_name is not None and text == d_name) or text in (f"{self._merge_obj}->dtype", f"{self._merge_obj}.dtype")

    def _uses(self, region, name: str) -> list:
        return [n for n in walk(region) if n.type == "identifier" and self.ctx.text_of(n) == name]

    def _single_init(self, st):
        """(type node, name, value node) of ``T NAME = value;``, else None."""
        if st.type != "declaration":
            return None
        decls = st.children_by_field_name("declarator")
        if len(decls) != 1 or decls[0].type != "init_declarator":
            return None
        ident = decls[0].child_by_field_name("declarator")
        val = decls[0].child_by_field_name("value")
        if ident is None or ident.type != "identifier" or val is None:
            return None
        return st.child_by_field_name("type"), self.ctx.text_of(ident), val

    def _check_call(self, st):
        """The check macro call of a statement ``MACRO(...) [<< ...];``, else None."""
        if st.type != "expression_statement" or not named(st):
            return None
        e = named(st)[0]
        while e.type == "binary_expression" and self.ctx.text_of(e.child_by_field_name("operator")) == "<<":
            e = e.child_by_field_name("left")
        if e.type != "call_expression":
            return None
        fn = self.ctx.text_of(e.child_by_field_name("function"))
        if fn in self.ctx.cpp.check_macros or fn in self.ctx.cpp.condition_macros:
            return e
        return None

    def _returned_call(self, st):
        """``return Ctor(dtype, <obj>->op, list[, more]);`` -> the call node, else None."""
        if st.type != "return_statement" or not named(st):
            return None
        c = named(st)[0]
        if c.type != "call_expression" or squash(self.ctx.text_of(c.child_by_field_name("function"))) not in self.ctx.cpp.call_constructors:
            return None
        a = named(c.child_by_field_name("arguments"))
        if len(a) < 3 or squash(self.ctx.text_of(a[1])) not in (f"{self._merge_obj}->{self.ctx.cpp.op_field}", f"{self._merge_obj}.{self.ctx.cpp.op_field}"):
            return None
        return c

    def _returns_only(self, node):
        """The statements of a branch: a compound statement's, or the single statement."""
        if node is None:
            return []
        if node.type == "compound_statement":
            return named(node)
        if node.type == "else_clause":
            return self._returns_only(named(node)[0] if named(node) else None)
        return [node]

    # -------------------------------------------------------------- the fix
    def _merge_fix(self, site, obj: str, s, cond, body, opnode) -> None:
        """Recognise the branch (:class:`MergeShape`, step by step) and give ``site`` its fix; ``_NotMerge`` else."""
        self._merge_obj = obj
        ir_op = self.ctx.tested_ops[0] if self.ctx.tested_ops else None
        if self.ctx.target.tl_access_ptr and self.ctx.target.size_meaning_for(ir_op) != "bytes":
            raise _NotMerge(
                f"under the target API {self.ctx.target.name} the producers of `{ir_op}` build "
                f"`{self.ctx.target.tl_access_ptr}(BufferLoad, ...)` destinations, which this rewrite does not open")
        if body.type != "compound_statement":
            raise _NotMerge("the branch is not a block", rebuilds=False)
        shape = MergeShape(s=s, body=body, opnode=opnode)
        self._merge_statements(shape, obj)
        lists = self._merge_calls(shape)
        self._merge_lists(shape, obj, lists)
        # The same visitor re-bases tvm_access_ptr with the same offset function and merged buffer.
        sib = self._access_ptr_branch(s, shape.e_fn, shape.merged)
        if sib is None:
            e_fn, merged = shape.e_fn, shape.merged
            raise _NotMerge(
                f"no `tvm_access_ptr` branch of the same if/else chain re-bases access pointers with `{e_fn}` "
                f"onto `{short(merged)}`, so nothing shows `{e_fn}` counts in the unit of the type it is given")
        self._merge_uses_checked(shape)
        shape.decided = self._rebases_in_own_type(sib, shape.e_fn, shape.merged)
        self._merge_emit(site, shape)

    def _merge_statements(self, shape: "MergeShape", obj: str) -> None:
        """Step 1: sort the branch's statements into the shape's declarations, its guard and its tail."""
        var_types = {squash(v) for v in self.ctx.cpp.emit["var_types"]}
        tail = shape.tail
        for st in named(shape.body):
            ln = self.ctx.src.linecol(self.ctx.src.char_offset(st.start_byte))[0]
            if tail:
                tail.append(st)
                continue
            chk = self._check_call(st)
            if (chk is not None and f"{self.ctx.cpp.args_field}.size()" in squash(self.ctx.text_of(chk))
                    and shape.check is None and shape.b_decl is None):
                shape.check = (st, chk)
                continue
            init = self._single_init(st)
            if init is not None and self._merge_declaration(shape, st, init, var_types):
                continue
            if st.type == "if_statement" and shape.b_name and shape.guard is None and shape.e_decl is None:
                c = st.child_by_field_name("condition")
                cons = self._returns_only(st.child_by_field_name("consequence"))
                if (self._uses(c, shape.b_name) and st.child_by_field_name("alternative") is None
                        and len(cons) == 1 and cons[0].type == "return_statement"
                        and self._returned_call(cons[0]) is None and self.ctx.cpp.op_name not in self.ctx.text_of(cons[0])):
                    shape.guard = st
                    continue
            if st.type in ("if_statement", "return_statement"):
                tail.append(st)
                continue
            raise _NotMerge(
                f"line {ln} holds a statement the merge-pass rewrite does not follow (`{short(self.ctx.text_of(st))}`)",
                rebuilds=shape.b_decl is not None)
        if shape.b_decl is None:
            raise _NotMerge(f"it does not take the destination as `Downcast<Var>({obj}->args[0])`", rebuilds=False)
        missing = [what for what, d in (("a guard on the destination", shape.guard),
                                         (f"the buffer offset `F({shape.b_name}, <call dtype>)`", shape.e_decl),
                                         (f"the offset `VisitExpr({obj}->args[1])`", shape.o_decl)) if d is None]
        if missing:
            raise _NotMerge("it lacks " + ", ".join(missing) + " in the upstream order")
        if not tail:
            raise _NotMerge("it does not end by rebuilding the call")

    def _merge_declaration(self, shape: "MergeShape", st, init, var_types) -> bool:
        """Whether ``st`` (one initialised local: ``init`` = (type, name, value)) is one the shape names
        (recorded there) or a rebuilt-list array (recorded, and the tail starts)."""
        ty, name, val = init
        if self._is_call_dtype(val, None) and shape.d_decl is None:
            shape.d_decl, shape.d_name = st, name
            return True
        if val.type == "call_expression":
            fn = squash(self.ctx.text_of(val.child_by_field_name("function")))
            a = named(val.child_by_field_name("arguments"))
            m = _DOWNCAST.match(fn)
            if m and m.group(2) in var_types and len(a) == 1 and self._is_obj_arg(a[0], 0) and shape.b_decl is None:
                shape.b_decl, shape.b_name, shape.b_sub, shape.downcast = st, name, a[0], m.group(1)
                return True
            if (shape.b_name and shape.e_decl is None and len(a) == 2 and a[0].type == "identifier"
                    and self.ctx.text_of(a[0]) == shape.b_name and self._is_call_dtype(a[1], shape.d_name)):
                shape.e_decl, shape.e_name, shape.e_dtype, shape.e_fn = st, name, a[1], fn
                return True
            if _VISIT.match(fn) and len(a) == 1 and self._is_obj_arg(a[0], 1) and shape.o_decl is None:
                shape.o_decl, shape.o_name, shape.o_sub = st, name, a[0]
                shape.o_type = self.ctx.text_of(ty) if ty is not None else "PrimExpr"
                return True
            if (fn.endswith(".bytes") or fn.endswith("->bytes")) and not a and shape.k_decl is None:
                recv = val.child_by_field_name("function").child_by_field_name("argument")
                if recv is not None and self._is_call_dtype(recv, shape.d_name):
                    shape.k_decl, shape.k_name = st, name
                    return True
        if ty is not None and self.ctx.cpp.is_array_type(self.ctx.text_of(ty)) and val.type == "initializer_list":
            shape.arrays[name] = val
            shape.tail.append(st)
            return True
        return False

    def _merge_calls(self, shape: "MergeShape") -> list:
        """Step 2: the rebuilt calls of the tail (the first one's dtype, op and extra arguments recorded), and
        their argument lists."""
        calls, pushes = [], []
        for st in shape.tail:
            self._collect_tail(st, calls, pushes, shape.arrays)
        if not calls:
            raise _NotMerge("it does not end by returning the rebuilt call")
        shape.pushes = pushes
        lists = []
        for c in calls:
            a = named(c.child_by_field_name("arguments"))
            if not self._is_call_dtype(a[0], shape.d_name):
                raise _NotMerge(f"the rebuilt call's dtype `{short(self.ctx.text_of(a[0]))}` is not the call's own")
            lst = a[2]
            if lst.type == "identifier" and self.ctx.text_of(lst) in shape.arrays:
                lst = shape.arrays[self.ctx.text_of(lst)]
            if lst.type != "initializer_list":
                raise _NotMerge(f"the rebuilt argument list `{short(self.ctx.text_of(a[2]))}` is not visible")
            extra = ", ".join(self.ctx.text_of(x) for x in a[3:])
            if shape.ann is None:
                shape.ann, shape.dtype_text = extra, self.ctx.text_of(a[0])
                shape.ctor = squash(self.ctx.text_of(c.child_by_field_name("function")))
                shape.opcall_text = self.ctx.text_of(a[1])
                shape.first_call = c
            elif extra != shape.ann:
                raise _NotMerge("the rebuilt calls pass different extra arguments")
            lists.append(lst)
        return lists

    def _merge_lists(self, shape: "MergeShape", obj: str, lists) -> None:
        """Step 3: every rebuilt list re-bases the destination the same way (``merged``, ``summed``)."""
        e_name, o_name = shape.e_name, shape.o_name
        for lst in lists:
            el = named(lst)
            if len(el) not in self.ctx.legacy.cpp_arity and len(el) != 2:
                raise _NotMerge(f"a rebuilt list has {len(el)} elements")
            if any(c.type == "comment" for c in lst.named_children):
                raise _NotMerge("a rebuilt list holds comments")
            m_text = squash(self.ctx.text_of(el[0]))
            if f"{obj}->" in m_text or f"{obj}." in m_text:
                raise _NotMerge("the rebuilt destination is taken from the call's own arguments")
            s_node = self._scaled_sum(el[1], shape.d_name, shape.k_name)
            if s_node is None:
                raise _NotMerge(f"the rebuilt offset `{short(self.ctx.text_of(el[1]))}` is not `mul({e_name} + {o_name}, "
                                "<call dtype bytes>)`")
            s_text = self.ctx.text_of(s_node)
            if not (self._uses(s_node, e_name) and self._uses(s_node, o_name)):
                raise _NotMerge(f"the rebuilt offset does not add `{e_name}` and `{o_name}`")
            for k, x in enumerate(el[2:], start=2):
                if not self._is_obj_arg(x, k):
                    raise _NotMerge(f"element {k} of a rebuilt list is `{short(self.ctx.text_of(x))}`, not `{obj}->args[{k}]`")
            if shape.merged is None:
                shape.merged, shape.summed = self.ctx.text_of(el[0]), s_text
            elif (m_text, squash(s_text)) != (squash(shape.merged), squash(shape.summed)):
                raise _NotMerge("the rebuilt lists re-base the destination differently")
        for p in shape.pushes:
            if not self._is_obj_arg(p, 5):
                raise _NotMerge(f"it appends `{short(self.ctx.text_of(p))}` to the rebuilt list")

    def _merge_uses_checked(self, shape: "MergeShape") -> None:
        """Step 4: only the rebuilt calls use the index factor, the sum's parts and the destination Var."""
        tail_lo, tail_hi = shape.tail[0].start_byte, shape.tail[-1].end_byte
        for name, decl in ((shape.e_name, shape.e_decl), (shape.o_name, shape.o_decl), (shape.k_name, shape.k_decl)):
            if name is None:
                continue
            for u in self._uses(shape.body, name):
                if decl.start_byte <= u.start_byte < decl.end_byte or tail_lo <= u.start_byte < tail_hi:
                    continue
                ln = self.ctx.src.linecol(self.ctx.src.char_offset(u.start_byte))[0]
                raise _NotMerge(f"`{name}` is used again at line {ln}")
        for u in self._uses(shape.body, shape.b_name):
            if tail_lo <= u.start_byte < tail_hi:
                raise _NotMerge(f"the destination `{shape.b_name}` is used in the rebuilt call")

    def _collect_tail(self, st, calls, pushes, arrays) -> None:
        obj = self._merge_obj
        if st.type == "declaration":
            return  # a rebuilt-list array (recorded)
        if st.type == "return_statement":
            c = self._returned_call(st)
            if c is None:
                raise _NotMerge(f"it returns `{short(self.ctx.text_of(st))}`, not the rebuilt call")
            calls.append(c)
            return
        if st.type == "expression_statement":
            e = named(st)[0] if named(st) else None
            if e is not None and e.type == "call_expression":
                f = e.child_by_field_name("function")
                if f is not None and f.type == "field_expression" and self.ctx.text_of(f.child_by_field_name("field")) in \
                        self.ctx.cpp.append_methods and self.ctx.text_of(f.child_by_field_name("argument")) in arrays:
                    a = named(e.child_by_field_name("arguments"))
                    pushes.extend(a)
                    return
            raise _NotMerge(f"the rebuilt call is followed by `{short(self.ctx.text_of(st))}`")
        if st.type == "if_statement":
            c = squash(self.ctx.text_of(st.child_by_field_name("condition")))
            if f"{obj}->{self.ctx.cpp.args_field}.size()" not in c and f"{obj}.{self.ctx.cpp.args_field}.size()" not in c:
                raise _NotMerge(f"it rebuilds the call under `{short(c)}`, not a test of the argument count")
            for part in ("consequence", "alternative"):
                for inner in self._returns_only(st.child_by_field_name(part)):
                    self._collect_tail(inner, calls, pushes, arrays)
            return
        if st.type == "compound_statement":
            for inner in named(st):
                self._collect_tail(inner, calls, pushes, arrays)
            return
        raise _NotMerge(f"the branch ends with `{short(self.ctx.text_of(st))}`")

    def _scaled_sum(self, node, d_name, k_name):
        """``mul(SUM, F)`` / ``SUM * F`` with F the call dtype's size: the SUM node."""
        while node.type == "parenthesized_expression":
            node = named(node)[0]
        if node.type == "call_expression":
            fn = squash(self.ctx.text_of(node.child_by_field_name("function")))
            a = named(node.child_by_field_name("arguments"))
            if re.fullmatch(r"(?:\w+::)*mul", fn) and len(a) == 2:
                s, f = a
            else:
                return None
        elif node.type == "binary_expression" and self.ctx.text_of(node.child_by_field_name("operator")) == "*":
            s, f = node.child_by_field_name("left"), node.child_by_field_name("right")
        else:
            return None
        while s.type == "parenthesized_expression":
            s = named(s)[0]
        ft = squash(self.ctx.text_of(f))
        m = re.fullmatch(r"(?:\w+::)*(?:PrimExpr|Integer)\((.+)\)", ft)
        inner = m.group(1) if m else ft
        obj = self._merge_obj
        ok = (k_name is not None and inner == k_name) or inner in (
            f"{d_name}.bytes()" if d_name else "-", f"{obj}->dtype.bytes()")
        if not ok:
            return None
        if s.type != "binary_expression" or self.ctx.text_of(s.child_by_field_name("operator")) != "+":
            return None
        return s

    def _access_ptr_branch(self, s, e_fn: str, merged: str):
        """The ``tvm_access_ptr`` branch of ``s``'s if/else chain that calls ``e_fn`` and builds on ``merged``."""
        top = s
        while top.parent is not None and top.parent.type == "else_clause" and top.parent.parent is not None \
                and top.parent.parent.type == "if_statement":
            top = top.parent.parent
        cur = top
        while cur is not None and cur.type == "if_statement":
            c = cur.child_by_field_name("condition")
            b = cur.child_by_field_name("consequence")
            if cur is not s and c is not None and b is not None and _ACCESS_PTR_TEST.search(squash(self.ctx.text_of(c))):
                text = squash(self.ctx.text_of(b))
                if f"{e_fn}(" in text and squash(merged) in text:
                    return cur
            alt = cur.child_by_field_name("alternative")
            cur = named(alt)[0] if alt is not None and named(alt) else None
        return None

    def _rebases_in_own_type(self, sib, e_fn: str, merged: str) -> bool:
        """Whether the ``tvm_access_ptr`` branch ``sib`` shows, in its code, that ``e_fn(buffer, T)`` counts in
        units of ``T``: it calls ``e_fn(V, X->args[0].dtype())`` (directly or through a local that holds that
        dtype) and returns ``Call(.., {X->args[0], <merged>, E + <offset>, ...})`` with ``E`` that call (or the
        local holding it) added with no factor.  A tvm_access_ptr's offset counts its own type's elements, so
        the branch re-bases every access pointer by ``e_fn`` in that type's units."""
        cond = sib.child_by_field_name("condition")
        body = sib.child_by_field_name("consequence")
        objs = [squash(self.ctx.text_of(n.child_by_field_name("argument"))) for n in walk(cond)
                if n.type == "field_expression" and self.ctx.text_of(n.child_by_field_name("field")) == self.ctx.cpp.op_field]
        if len(objs) != 1 or body is None:
            return False
        x, a = objs[0], self.ctx.cpp.args_field
        own = {f"{x}->{a}[0].dtype()", f"{x}.{a}[0].dtype()"}
        names = set()  # locals holding the access pointer's own dtype
        offsets = set()  # texts that denote e_fn(V, own dtype): the call, or a local initialised with it
        for n in walk(body):
            if n.type == "init_declarator":
                ident, val = n.child_by_field_name("declarator"), n.child_by_field_name("value")
                if ident is not None and ident.type == "identifier" and val is not None:
                    if squash(self.ctx.text_of(val)) in own:
                        names.add(self.ctx.text_of(ident))
        for n in walk(body):
            if n.type != "call_expression" or squash(self.ctx.text_of(n.child_by_field_name("function"))) != e_fn:
                continue
            args = named(n.child_by_field_name("arguments"))
            if len(args) == 2 and (squash(self.ctx.text_of(args[1])) in own or self.ctx.text_of(args[1]) in names):
                offsets.add(squash(self.ctx.text_of(n)))
                p = n.parent
                if p is not None and p.type == "init_declarator":
                    offsets.add(self.ctx.text_of(p.child_by_field_name("declarator")))
        if not offsets:
            return False
        for n in walk(body):
            if n.type != "initializer_list":
                continue
            el = named(n)
            if len(el) < 3 or squash(self.ctx.text_of(el[0])) not in {f"{x}->{a}[0]", f"{x}.{a}[0]"} \
                    or squash(self.ctx.text_of(el[1])) != squash(merged):
                continue
            total = el[2]
            while total.type == "parenthesized_expression" and named(total):
                total = named(total)[0]
            if total.type == "binary_expression" and self.ctx.text_of(total.child_by_field_name("operator")) == "+":
                parts = {squash(self.ctx.text_of(total.child_by_field_name(k))) for k in ("left", "right")}
                if parts & offsets:
                    return True
        return False

    def _merge_emit(self, site, shape: "MergeShape") -> None:
        """Give ``site`` the fix of the recognised ``shape``: the edits of each step, then the assumptions."""
        obj = self._merge_obj
        spell = self.constructions.emit_context(shape.first_call, shape.opnode)
        taken = {self.ctx.text_of(n) for n in walk(self.ctx.func_of(shape.s) or shape.body) if n.type == "identifier"}
        dptr, new_dst = _fresh("dst_access_ptr", taken), _fresh("rebased_dst", taken)
        ind = self.ctx.src.indent_of_line(self.ctx.src.char_offset(shape.b_decl.start_byte))
        outer = self.ctx.src.indent_of_line(self.ctx.src.char_offset(shape.s.start_byte))
        unit = ind[len(outer):] if ind.startswith(outer) and len(ind) > len(outer) else "  "
        edits, cond_macro = self._merge_size_check(shape, obj)
        edits += self._merge_open_dst(shape, obj, spell["builtin"], cond_macro, dptr, ind, unit)
        if shape.k_decl is not None:
            edits.append(self._merge_drop_factor(shape.k_decl))
        edits.append(self._merge_rebuilt(shape, obj, spell["tvm"], spell["builtin"], dptr, new_dst, unit))
        site.code = codes.CPP_MERGE_REBASE_REWRITABLE
        site.edits = edits
        site.fixable = True
        site.applicability = Applicability.UNSAFE
        self._merge_assumptions(site, shape)

    def _merge_size_check(self, shape: "MergeShape", obj: str) -> tuple[list, str]:
        """The size check's edits (5/6 -> 3/4) and the check macro the branch uses (or the file's)."""
        edits = []
        arity_map = dict(zip(self.ctx.legacy.cpp_arity, self.ctx.target.cpp_arity))
        if shape.check is not None:
            _, sizes, _ = self.consumers.args_uses(obj, [shape.check[0]])
            for lit, v in sizes:
                if v not in arity_map:
                    raise _NotMerge(f"the size check compares with {v}")
                edits.append((lit.start_byte, lit.end_byte, str(arity_map[v]) + int_suffix(self.ctx.text_of(lit))))
            macro = self.ctx.text_of(shape.check[1].child_by_field_name("function"))
            cond_macro = re.sub(r"_(EQ|NE|GE|LE|GT|LT)$", "", macro)
        else:
            cond_macro = "TVM_FFI_ICHECK" if "TVM_FFI_ICHECK" in self.ctx.text else "ICHECK"
        return edits, cond_macro

    def _merge_open_dst(self, shape: "MergeShape", obj, builtin, cond_macro, dptr, ind, unit) -> list:
        """Open the destination access pointer before the data Var is taken from it, and read the Var, the
        buffer offset's type and the offset from it."""
        nl, a = self.ctx.nl, self.ctx.cpp.args_field
        lines = []
        if shape.check is None:
            n3, n4 = self.ctx.target.cpp_arity[0], self.ctx.target.cpp_arity[-1]
            lines.append(f"{cond_macro}({obj}->{a}.size() == {n3}U || {obj}->{a}.size() == {n4}U);")
        ctor = shape.ctor
        lines += [
            f"{ctor} {dptr} = {shape.downcast}<{ctor}>({obj}->{a}[0]);",
            f"{cond_macro}({dptr}->{self.ctx.cpp.op_field}.same_as({builtin}tvm_access_ptr()))",
            f"{unit}{unit}<< \"{self.ctx.cpp.op_name}'s destination must be a tvm_access_ptr\";",
        ]
        at = self.ctx.src.data.rfind(b"\n", 0, shape.b_decl.start_byte) + 1
        edits = [(at, at, "".join(ind + ln + nl for ln in lines))]
        small = [(shape.b_sub.start_byte, shape.b_sub.end_byte, f"{dptr}->{a}[1]"),
                 (shape.e_dtype.start_byte, shape.e_dtype.end_byte, f"{dptr}->{a}[0].dtype()"),
                 (shape.o_sub.start_byte, shape.o_sub.end_byte, f"{dptr}->{a}[2]")]
        relaid = [self._relaid(x) for x in small]
        spans = sorted((x[0], x[1]) for x in relaid)
        if any(a2 < b1 for (_, b1), (a2, _) in zip(spans, spans[1:])):
            relaid = small  # two of them in one statement: edited in place, as before the layout
        return edits + relaid

    def _merge_drop_factor(self, k_decl) -> tuple:
        """The edit deleting the byte factor's local (with the comments just above it)."""
        data = self.ctx.src.data
        lo = k_decl
        prev = k_decl.prev_sibling
        while prev is not None and prev.type == "comment":  # the comment that explains the byte factor
            lo = prev
            prev = prev.prev_sibling
        start = data.rfind(b"\n", 0, lo.start_byte) + 1
        end = data.find(b"\n", k_decl.end_byte)
        end = len(data) if end == -1 else end + 1
        if data[start:lo.start_byte].strip() or data[k_decl.end_byte:end].strip():
            return (lo.start_byte, k_decl.end_byte, "")
        return (start, end, "")

    def _merge_rebuilt(self, shape: "MergeShape", obj, tvm, builtin, dptr, new_dst, unit) -> tuple:
        """The edit replacing the tail: the re-based access pointer, then the 3/4-argument calls."""
        nl, a, ctor = self.ctx.nl, self.ctx.cpp.args_field, shape.ctor
        extra = f", {shape.ann}" if shape.ann else ""
        n3 = self.ctx.target.cpp_arity[0]
        dtype_text, opcall_text = shape.dtype_text, shape.opcall_text
        # (nesting, statement) in order; each statement laid out by layout.py where it models it
        rebuilt = [
            (0, f"{shape.o_type} {new_dst} = {ctor}({tvm}DataType::Handle(), {builtin}tvm_access_ptr(),",
             f"{{{dptr}->{a}[0], {shape.merged}, {shape.summed}, {dptr}->{a}[3], {dptr}->{a}[4]}});"),
            (0, f"if ({obj}->{a}.size() == {n3}U) {{", None),
            (1, f"return {ctor}({dtype_text}, {opcall_text}, {{{new_dst}, {obj}->{a}[1], {obj}->{a}[2]}}{extra});",
             None),
            (0, "}", None),
            (0, f"return {ctor}({dtype_text}, {opcall_text}, {{{new_dst}, {obj}->{a}[1], {obj}->{a}[2], "
                f"{obj}->{a}[3]}}{extra});", None),
        ]
        tail = shape.tail
        tail_ind = self.ctx.src.indent_of_line(self.ctx.src.char_offset(tail[0].start_byte))
        style = self.ctx.style
        tail_text = []
        for depth, head, cont in rebuilt:
            laid = None
            if "\t" not in tail_ind + unit and not head.endswith("{") and head != "}":
                whole = head + (" " + cont if cont else "")
                laid = layout_statement(whole, len(tail_ind) + depth * len(unit), style)
            if laid is not None:
                tail_text.append(unit * depth + laid.replace("\n", nl))
            else:
                tail_text.append(unit * depth + head + (nl + tail_ind + unit + unit + cont if cont else ""))
        return (tail[0].start_byte, tail[-1].end_byte, (nl + tail_ind).join(tail_text))

    def _merge_assumptions(self, site, shape: "MergeShape") -> None:
        producers = (
            f"Every producer of this call in the program now builds the access-pointer layout "
            f"({'/'.join(map(str, self.ctx.target.cpp_arity))} arguments) with a `tvm_access_ptr` destination "
            f"(a legacy call or another destination form now fails the check).")
        if shape.decided:
            # the file's own tvm_access_ptr branch re-bases every access pointer by the same function in the
            # pointer's own units (see _rebases_in_own_type): the destination now gets exactly that treatment
            site.assumptions = [producers]
            site.set_established = True
            return
        site.assumptions = [
            producers,
            f"The buffer offset `{shape.e_fn}(buffer, T)` counts in units of `T`, as the "
            f"`tvm_access_ptr` branch of the same visitor uses it: the destination is re-based in its own pointer "
            f"type's units, with no byte factor, exactly as that branch re-bases every other access pointer.",
            "The merged buffer's offset of the destination is a whole number of the access pointer's element "
            "size (the merged allocations are aligned to at least that size).",
        ]

    def _relaid(self, edit):
        """``edit`` (inside one statement) as an edit of its whole statement, laid out as the file's
        clang-format style lays it out (layout.py), when the layout models that statement; else as it is."""
        a, b, r = edit
        node = self.ctx.src.root.descendant_for_byte_range(a, b)
        stmt = node
        while stmt is not None and stmt.type not in ("declaration", "expression_statement", "return_statement"):
            stmt = stmt.parent
        if stmt is None or stmt.parent is None or stmt.parent.type != "compound_statement":
            return edit
        data = self.ctx.src.data
        ls = data.rfind(b"\n", 0, stmt.start_byte) + 1
        pre = data[ls:stmt.start_byte]
        if pre.strip() or b"\t" in pre or not (stmt.start_byte <= a <= b <= stmt.end_byte):
            return edit
        new = (data[stmt.start_byte:a] + r.encode() + data[b:stmt.end_byte]).decode("utf-8", "replace")
        style = self.ctx.style
        laid = layout_statement(new, len(pre), style)
        if laid is None:
            return edit
        return (stmt.start_byte, stmt.end_byte, laid.replace("\n", self.ctx.nl))

    def merge_todo(self, obj: str) -> str:
        """What a person changes in a merge-style branch (one clause of the message)."""
        a = self.ctx.cpp.args_field
        return (
            f"change: open the destination access pointer (`Call dst = Downcast<Call>({obj}->{a}[0])`, checked to be "
            f"`tvm_access_ptr`; its data Var at `dst->{a}[1]`, its offset at `dst->{a}[2]`), re-base the offset onto "
            f"the merged buffer in the access pointer's own type (the data Var's place in the merged buffer counted in "
            f"`dst->{a}[0].dtype()`, plus the offset, no byte factor, as a `tvm_access_ptr` branch does), rebuild it with the same type, extent "
            f"and mask, keep `{obj}->{a}[1..]` and accept {'/'.join(map(str, self.ctx.target.cpp_arity))} arguments"
        )
