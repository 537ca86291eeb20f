"""Consumers: C++ branches that read a ``ptx_cp_async`` call's arguments (``if (op->op.same_as(<op>))``).

A consumer is an ``if`` whose condition tests ``X->op.same_as(<op>)`` (the op spelled there or
held by a local ``Op`` variable).  It reads the legacy layout when it reads ``X->args[K]`` at a
position the target layout does not have, compares ``X->args.size()`` with a legacy count,
declares a local named like an offset from ``X->args[K]``, or takes a legacy data position as
a ``Var`` (``Downcast<Var>(X->args[0])``).  Also found, and left for a person (the fixes rewrite a
``same_as`` branch's own body, reaching the op where the function spells it): a test with ``==``
or ``!=``, the rest of a block after a guard that leaves for every other op or after
``ICHECK(X->op.same_as(<op>))`` (``asserted``), a test through a predicate of the file, and an op
reached through an ``Op`` variable declared outside the function or looked up by its registered
name (``CppContext.op_node``, ``CppAnalyzer._outside``).  Readers must move with the builders: a tree whose
passes build the new layout while a code generator still reads the old one is a broken
compiler (docs/cpp.md, "Assumptions a change set discharges").

CPA103 cpp-consumer-rewritable: docs/codes/CPA103.md.
CPA104 cpp-consumer-manual: docs/codes/CPA104.md.
CPA106 cpp-dead-duplicate-branch: docs/codes/CPA106.md.
CPA107 cpp-dual-layout-branch: docs/codes/CPA107.md.

The merge pass's own legacy branch (CPA111) is recognised in ``merge.py``; a consumer next
to a parse error is CPA108 and not edited.  A printer's stream statement whose operands the rewrite
drops is written again whole, laid out as the file's clang-format style lays it out (``layout.py``),
where the layout models it; elsewhere the operands are cut out in place.
"""
from __future__ import annotations

import re
from typing import Optional

from ..findings import Applicability
from .. import codes
from . import args_index, hoist
from .context import CppContext, PendingSite, int_suffix, int_value, short
from .layout import layout_statement
from .parts import MergePart
from .source import named, squash, walk

_COMPARISONS = {"==", "!=", "<", ">", "<=", ">="}


class _NoRewrite(Exception):
    """The code-generator rewrite does not apply, for ``reason`` (a step of ``_codegen_rewrite``)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class ConsumerChecks:
    """CPA103, CPA104, CPA106, CPA107 of one file (see the module docstring): a unit over the file's context,
    calling the merge pass's family (``merge``) for a branch that re-bases the destination."""

    merge: MergePart

    def __init__(self, ctx: CppContext, merge: MergePart):
        self.ctx = ctx
        self.merge = merge
        self._args = args_index.ArgsIndex(ctx.text_of, ctx.cpp.args_field) if args_index.ON else None
        self._sub_of: dict = {}  # a read's index literal's id -> (its subscript, the subscript's parent): _data_as_var

    # ---------------------------------------------------------- consumers
    def _op_tests(self, cond, fn) -> list[str]:
        """Objects ``X`` in ``X->op.same_as(<op>)`` tests inside ``cond`` (and in ``X->op == <op>``, noted in
        ``outer_op_uses``: such a branch is reported and left for a person)."""
        objs = []
        for n in walk(cond):
            if n.type == "binary_expression":
                inner, opnode = self._compared(n, fn)
            elif n.type == "call_expression" and self._predicate_of(n) is not None:
                obj, opnode = self._predicate_test(n)
                if obj is not None:
                    objs.append(obj)
                    self.ctx.tested_ops.append(self.ctx.ir_op(opnode))
                    if len(objs) == 1:
                        self.ctx.tested_opnode = opnode
                continue
            elif n.type == "call_expression":
                f = n.child_by_field_name("function")
                if f is None or f.type != "field_expression" or \
                        self.ctx.text_of(f.child_by_field_name("field")) != self.ctx.cpp.same_as:
                    continue
                a = named(n.child_by_field_name("arguments"))
                opnode = self.ctx.op_node(a[0], fn) if len(a) == 1 else None
                inner = f.child_by_field_name("argument")
            else:
                continue
            if opnode is None:
                continue
            if inner is not None and inner.type == "field_expression" and self.ctx.text_of(
                inner.child_by_field_name("field")
            ) == self.ctx.cpp.op_field:
                objs.append(squash(self.ctx.text_of(inner.child_by_field_name("argument"))))
                self.ctx.tested_ops.append(self.ctx.ir_op(opnode))
                if len(objs) == 1:
                    self.ctx.tested_opnode = opnode
        return objs

    def _predicate_of(self, n) -> Optional[tuple]:
        """(kind, op call nodes) of the predicate of the file (``op_predicates``) the call ``n`` calls, else None."""
        preds = self.ctx.op_predicates()
        f = n.child_by_field_name("function")
        if not preds or f is None or f.type not in ("identifier", "qualified_identifier", "field_expression"):
            return None
        key = f.child_by_field_name("field") if f.type == "field_expression" else f  # `this->IsCpAsync(...)`
        return preds.get(self.ctx.short_name(key)) if key is not None else None

    def _predicate_test(self, n):
        """(``X``, the predicate's first op node) of a call of a predicate on ``X->op`` (or ``Downcast<Op>(X->op)``,
        kind "op") or on ``X`` (kind "call"), noted in ``outer_op_uses``; else (None, None)."""
        kind, ops = self._predicate_of(n)
        a = named(n.child_by_field_name("arguments"))
        if len(a) != 1 or not ops:
            return None, None
        arg = a[0]
        if kind == "op" and arg.type == "call_expression" and arg.child_by_field_name("arguments") is not None and \
                len(named(arg.child_by_field_name("arguments"))) == 1 and \
                squash(self.ctx.text_of(arg.child_by_field_name("function"))).endswith("Downcast<Op>"):
            arg = named(arg.child_by_field_name("arguments"))[0]
        if kind == "op" and arg.type == "field_expression" and \
                self.ctx.text_of(arg.child_by_field_name("field")) == self.ctx.cpp.op_field:
            obj = squash(self.ctx.text_of(arg.child_by_field_name("argument")))
        elif kind == "call" and arg.type == "identifier":
            obj = self.ctx.text_of(arg)
        else:
            return None, None
        self.ctx.outer_op_uses.append(f"tested by `{self.ctx.short_name(n.child_by_field_name('function'))}`, a "
                                      "predicate of the file")
        return obj, ops[0]

    def _compared(self, n, fn):
        """(``X->op``, the op node) of ``X->op == <op>`` or ``!=`` (either way round), else (None, None)."""
        if self.ctx.text_of(n.child_by_field_name("operator")) not in ("==", "!="):
            return None, None
        left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
        for obj, other in ((left, right), (right, left)):
            if obj is not None and obj.type == "field_expression" and \
                    self.ctx.text_of(obj.child_by_field_name("field")) == self.ctx.cpp.op_field:
                opnode = self.ctx.op_node(other, fn)
                if opnode is not None:
                    self.ctx.outer_op_uses.append("compared with `==` or `!=`, not tested with `same_as`")
                    return obj, opnode
        return None, None

    def _chain_conditions(self, s) -> list[str]:
        """Conditions of the earlier branches of the if/else-if chain ``s`` is in, each also as its
        ``||`` operands (``A || B`` takes every case ``A`` does), without enclosing parentheses."""
        out = []
        cur = s
        while cur.parent is not None and cur.parent.type == "else_clause":
            owner = cur.parent.parent
            if owner is None or owner.type != "if_statement":
                break
            c = owner.child_by_field_name("condition")
            if c is not None:
                out.append(self._bare(c))
                out.extend(self._disjuncts(c))
            cur = owner
        return out

    def _bare(self, node) -> str:
        """``node``'s text without spaces and enclosing parentheses (an if's condition clause is one)."""
        while node.type in ("parenthesized_expression", "condition_clause") and len(named(node)) == 1:
            node = named(node)[0]
        return squash(self.ctx.text_of(node))

    def _disjuncts(self, node) -> list[str]:
        while node.type in ("parenthesized_expression", "condition_clause") and len(named(node)) == 1:
            node = named(node)[0]
        if node.type == "binary_expression" and self.ctx.text_of(node.child_by_field_name("operator")) == "||":
            return self._disjuncts(node.child_by_field_name("left")) + self._disjuncts(node.child_by_field_name("right"))
        return [squash(self.ctx.text_of(node))]

    def consumer(self, s) -> None:
        cond = s.child_by_field_name("condition")
        body = s.child_by_field_name("consequence")
        if cond is None or body is None or self.ctx.in_dead(s):
            return
        text = self.ctx.text_of(cond)
        if self.ctx.cpp.same_as not in text and "=" not in text and \
                not any(p in text for p in self.ctx.op_predicates()):
            return  # no `X->op.same_as(...)` test (nor `==`, `!=`, a predicate) in the condition (cheap text check)
        fn = self.ctx.func_of(s)
        self.ctx.tested_ops = []
        tests = self._polarities(cond)
        guarded = self._guarded(s, body, tests)
        if guarded is not None:
            self._guard(s, cond, guarded, fn)
            return
        if tests and all(negated for _, negated in tests):
            return  # the body runs for every other op: no reader of this one
        objs = self._op_tests(cond, fn)
        if not objs:
            return
        # A branch testing both ops reads both; its op is the first one tested, and a rewrite
        # must suit every op it tests.
        self.ctx.tag = (self.ctx.tested_ops[0], "reader")
        if self._bare(cond) in self._chain_conditions(s):
            self._dead(s, cond, body)
            return
        obj = objs[0]
        reads, sizes, loose = self.args_uses(obj, [cond, body])
        legacy_idx, legacy_n, new_n = self._layouts(reads, sizes)
        named_offsets = self._offset_reads(obj, body)
        var_reads = self._data_as_var(reads)
        legacy = bool(legacy_idx or legacy_n or named_offsets or var_reads)
        head = s  # report the test line (an "else if" starts at "if")
        if legacy and new_n:
            self.ctx.sites.append(self._dual_layout_site(head))
            return
        if not legacy:
            return
        site = PendingSite(head, codes.CPP_CONSUMER_MANUAL)
        if self.ctx.probe:  # the window only asks whether there is a site: from here there always is one
            self.ctx.sites.append(site)
            return
        if self.ctx.near_error(s):
            site.message = f"`{self.ctx.cpp.op_name}` consumer reads the legacy layout"
            site.park(f"it is inside or next to a parse error; {self.ctx.index_map()}")
            self.ctx.sites.append(site)
            return
        why = self._codegen_rewrite(site, obj, cond, body, reads, sizes, loose)
        if why is not None and var_reads and self.ctx.target.form == "access_ptr" and self._merge_branch(
                site, obj, s, cond, body):
            self.ctx.sites.append(site)
            return
        self._printed_or_left(site, why)
        self.ctx.sites.append(site)

    # ---------------------------------------------------------- readers past a guard
    _JUMPS = ("return_statement", "continue_statement", "break_statement", "throw_statement")

    def _layouts(self, reads, sizes) -> tuple[set, set, set]:
        """Of ``args_uses``' reads and size literals: the positions the target layout does not have, the legacy
        counts and the target's counts compared."""
        return ({i for _, i in reads if i >= max(self.ctx.target.cpp_arity)},
                {v for _, v in sizes if v in self.ctx.legacy.cpp_arity},
                {v for _, v in sizes if v in self.ctx.target.cpp_arity})

    def _guarded(self, s, body, tests: list) -> Optional[list]:
        """The statements after ``s`` in its block when ``s`` is a guard that leaves for every other op
        (``if (!X->op.same_as(<op>)) return ...;``, ``!(A || X->op.same_as(<op>))``, ``X->op != <op>``, with other
        ``||`` terms such as ``!X``, no else, its body ending in a jump): they run only for the op.  None otherwise
        (a test that is not negated, or one under ``&&``: the branch is the if's own body, as before)."""
        if s.child_by_field_name("alternative") is not None or s.parent is None or \
                s.parent.type != "compound_statement":
            return None
        last = named(body)[-1] if body.type == "compound_statement" and named(body) else body
        if last.type not in self._JUMPS:
            return None
        if not tests or not all(negated for _, negated in tests):
            return None
        siblings = named(s.parent)
        return siblings[siblings.index(s) + 1:]

    def _polarities(self, cond) -> list:
        """(the test, negated?) of each op test in ``cond`` that is a ``same_as`` call or a ``==``/``!=``
        comparison of ``X->op``, reached through parentheses, ``||`` and ``!`` only; [] where any test lies
        under another operator."""
        out = []

        def visit(n, neg: bool) -> bool:
            while n.type in ("parenthesized_expression", "condition_clause") and len(named(n)) == 1:
                n = named(n)[0]
            if n.type == "unary_expression" and self.ctx.text_of(n.child_by_field_name("operator")) == "!":
                return visit(n.child_by_field_name("argument"), not neg)
            if n.type == "binary_expression":
                op = self.ctx.text_of(n.child_by_field_name("operator"))
                if op == "||":
                    return visit(n.child_by_field_name("left"), neg) and visit(n.child_by_field_name("right"), neg)
                if op in ("==", "!=") and self._names_op_field(n):
                    out.append((n, neg != (op == "!=")))
                    return True
            if n.type == "call_expression" and self._predicate_of(n) is not None:
                out.append((n, neg))
                return True
            if n.type == "call_expression" and self.ctx.text_of(n).find(self.ctx.cpp.same_as) != -1:
                f = n.child_by_field_name("function")
                if f is not None and f.type == "field_expression" and \
                        self.ctx.text_of(f.child_by_field_name("field")) == self.ctx.cpp.same_as:
                    out.append((n, neg))
                    return True
            # anything else: a term with no op test in it (a null check), else a test under another operator
            return self.ctx.cpp.same_as not in self.ctx.text_of(n) and not any(
                (m.type == "binary_expression" and self._names_op_field(m)) or
                (m.type == "call_expression" and self._predicate_of(m) is not None) for m in walk(n))

        return out if visit(cond, False) else []

    def _names_op_field(self, n) -> bool:
        return any(c is not None and c.type == "field_expression" and
                   self.ctx.text_of(c.child_by_field_name("field")) == self.ctx.cpp.op_field
                   for c in (n.child_by_field_name("left"), n.child_by_field_name("right")))

    def asserted(self, call) -> None:
        """A reader past a check that the call is the op (``ICHECK(X->op.same_as(<op>)) << ...;``, a macro of
        ``[consumer] condition_macros`` whose condition tests for the op through ``||`` only, as a statement of its
        own): the rest of the block reads ``X->args``.  Reported as a guard's reader (``_guard``)."""
        f = call.child_by_field_name("function")
        args = named(call.child_by_field_name("arguments")) if call.child_by_field_name("arguments") else []
        if f is None or len(args) != 1 or squash(self.ctx.text_of(f)) not in self.ctx.cpp.condition_macros:
            return
        stmt = call.parent
        while stmt is not None and stmt.type == "binary_expression" and stmt.child_by_field_name("left") == call:
            call, stmt = stmt, stmt.parent  # `ICHECK(cond) << "message"`
        if stmt is None or stmt.type != "expression_statement" or stmt.parent is None or \
                stmt.parent.type != "compound_statement":
            return
        tests = self._polarities(args[0])
        if not tests or any(negated for _, negated in tests):
            return
        self.ctx.tested_ops = []
        siblings = named(stmt.parent)
        self._guard(stmt, args[0], siblings[siblings.index(stmt) + 1:], self.ctx.func_of(stmt))

    def _guard(self, s, cond, after: list, fn) -> None:
        """A reader past a guard (``_guarded``, ``asserted``): the statements after it read ``X->args`` in the legacy
        layout.  Reported and left for a person (the tool rewrites the body of a branch, not the rest of a block)."""
        objs = self._op_tests(cond, fn)
        if not objs:
            return
        self.ctx.tag = (self.ctx.tested_ops[0], "reader")
        reads, sizes, _ = self.args_uses(objs[0], [cond, *after])
        legacy_idx, legacy_n, new_n = self._layouts(reads, sizes)
        legacy = bool(legacy_idx or legacy_n or any(self._offset_reads(objs[0], st) for st in after))
        if legacy and new_n:
            self.ctx.sites.append(self._dual_layout_site(s))
            return
        if not legacy:
            return
        site = PendingSite(s, codes.CPP_CONSUMER_MANUAL)
        if not self.ctx.probe:
            after_what = "a check that the call is the op" if s.type == "expression_statement" else \
                "a guard that leaves for every other op"
            site.message = (f"`{self.ctx.cpp.op_name}` consumer reads the legacy layout after {after_what}; "
                            f"{self.ctx.index_map()}")
            site.leave("its reads are the rest of the block after the guard: not rewritten")
        self.ctx.sites.append(site)

    def _dual_layout_site(self, head) -> PendingSite:
        """CPA106: a branch that accepts both layouts (information only)."""
        return PendingSite(head, codes.CPP_DUAL_LAYOUT_BRANCH, info=True, message=(
            f"`{self.ctx.cpp.op_name}` branch accepts both the legacy layout (args.size() "
            f"{'/'.join(map(str, self.ctx.legacy.cpp_arity))}) and the access-pointer layout "
            f"({'/'.join(map(str, self.ctx.target.cpp_arity))}); information only"
        ))

    def _merge_branch(self, site, obj, s, cond, body) -> bool:
        """Whether the branch is the merge pass's (merge.py): ``site`` then has its fix (CPA111) or says why
        the re-basing shape is not rewritten; False when it is not that pass's shape at all."""
        merge_why, rebuilds = self.merge.merge_rewrite(site, obj, s, cond, body, self.ctx.tested_opnode)
        if merge_why is None:
            site.message = (
                f"`{self.ctx.cpp.op_name}` merge-pass branch re-bases the legacy destination (data `args[0]`, offset "
                f"`args[1]` scaled by the call dtype's size) and rebuilds the "
                f"{'/'.join(map(str, self.ctx.legacy.cpp_arity))}-argument call"
            )
            site.fix_note = (
                f"open the destination access pointer (data at its args[1], offset at its args[2]), rebuild it "
                f"on the merged buffer with its offset in the access pointer's own type, keep the other "
                f"arguments, args.size() {'/'.join(map(str, self.ctx.target.cpp_arity))}"
            )
            return True
        if rebuilds:
            why = f"a merge-style pass that re-bases the destination, in a shape the tool does not rewrite: {merge_why}"
            site.message = f"`{self.ctx.cpp.op_name}` consumer reads the legacy layout ({why}); {self.merge.merge_todo(obj)}; {self.ctx.index_map()}"
            return True
        return False

    def _printed_or_left(self, site, why: Optional[str]) -> None:
        """The message (and fix note) of a consumer: CPA104 when ``_codegen_rewrite`` rewrote it (``why`` None),
        else CPA103 saying ``why``."""
        if why is None:
            site.code = codes.CPP_CONSUMER_REWRITABLE
            runtime = [h for h in site.needs_function.split(";") if h]
            shown = "pointer + offset" if not runtime else (
                f"each pointer and its offset as arguments of the runtime helper{'s' if len(runtime) > 1 else ''} "
                + ", ".join(f"`{h}`" for h in runtime))
            site.message = (
                f"`{self.ctx.cpp.op_name}` consumer prints the legacy layout ({shown}, args.size() "
                f"{'/'.join(map(str, self.ctx.legacy.cpp_arity))})"
            )
            site.fix_note = (
                f"read {self.ctx.arg_layout(self.ctx.target, self.ctx.target.cpp_arity[0])}"
                f"[, {self.ctx.arg_name(self.ctx.target, self.ctx.target.cpp_arity[-1] - 1)}] and print each access pointer as it is"
                + ("" if not runtime else ", one per side, with the runtime helpers' pointer-only form (CPA007) in "
                   "the same change set")
            )
        else:
            site.message = f"`{self.ctx.cpp.op_name}` consumer reads the legacy layout ({why}); {self.ctx.index_map()}"

    def args_uses(self, obj, regions):
        """Reads ``args[K]`` (node, K), size literals (literal node, N), and other uses."""
        reads, sizes, loose = [], [], []
        for region in regions:
            if self._args is not None:
                uses = self._args.reads(region)
            else:
                uses = ((n, n.parent, None) for n in walk(region) if self.ctx.args_access(n, obj))
            for n, p, pp in uses:
                if not self.ctx.args_access(n, obj):
                    continue
                if p is not None and p.type == "subscript_expression" and p.child_by_field_name("argument") == n:
                    idx = named(p.child_by_field_name("indices"))
                    v = int_value(self.ctx.text_of(idx[0])) if len(idx) == 1 and idx[0].type == "number_literal" else None
                    if v is None:
                        loose.append(p)
                    else:
                        reads.append((idx[0], v))
                        if self._args is not None:
                            self._sub_of[idx[0].id] = (p, pp)
                    continue
                if self._args is None and p is not None:
                    pp = p.parent
                if (
                    p is not None
                    and p.type == "field_expression"
                    and self.ctx.text_of(p.child_by_field_name("field")) == "size"
                    and pp is not None
                    and pp.type == "call_expression"
                ):
                    lit = self._size_literal(pp)
                    if lit is None:
                        loose.append(pp)
                    else:
                        sizes.append(lit)
                    continue
                loose.append(n)
        return reads, sizes, loose

    def _size_literal(self, size_call):
        """The literal ``args.size()`` is compared with: (node, value) or None."""
        cur = size_call
        while cur.parent is not None and cur.parent.type == "parenthesized_expression":
            cur = cur.parent
        p = cur.parent
        if p is None:
            return None
        if p.type == "binary_expression" and self.ctx.text_of(p.child_by_field_name("operator")) in _COMPARISONS:
            other = p.child_by_field_name("right") if p.child_by_field_name("left") == cur else p.child_by_field_name("left")
            if other is not None and other.type == "number_literal" and int_value(self.ctx.text_of(other)) is not None:
                return other, int_value(self.ctx.text_of(other))
            return None
        if p.type == "argument_list" and p.parent is not None and p.parent.type == "call_expression":
            macro = self.ctx.text_of(p.parent.child_by_field_name("function"))
            if macro in self.ctx.cpp.check_macros:
                others = [a for a in named(p) if a != cur]
                if len(others) == 1 and others[0].type == "number_literal" and int_value(self.ctx.text_of(others[0])) is not None:
                    return others[0], int_value(self.ctx.text_of(others[0]))
        return None

    def _data_as_var(self, reads) -> list:
        """Reads of a legacy data position taken as a ``Var`` (``Downcast<Var>(args[0])``,
        ``args[2].as<VarNode>()``): in the new layout those positions hold access-pointer
        calls, or the byte count."""
        roles = [self.ctx.cpp.role(a) for a in self.ctx.legacy.cpp_args]
        data_idx = {k for k, r in enumerate(roles) if r in ("dst", "src")}
        var_types = {squash(v) for v in self.ctx.cpp.emit["var_types"]}
        out = []
        for lit, k in reads:
            if k not in data_idx:
                continue
            if lit.id in self._sub_of:  # as the index's walk met them (Node.parent costs the node's depth)
                sub, p = self._sub_of[lit.id]
            else:
                sub = lit.parent.parent if lit.parent is not None else None  # subscript_expression
                p = sub.parent if sub is not None else None
            if p is not None and p.type == "argument_list" and p.parent is not None:
                fn = squash(self.ctx.text_of(p.parent.child_by_field_name("function") or p.parent))
                m = re.fullmatch(r"(?:\w+::)*Downcast<(.+)>", fn)
                if m and m.group(1) in var_types:
                    out.append(lit)
                    continue
            if p is not None and p.type == "field_expression":
                field = p.child_by_field_name("field")
                if field is not None and re.fullmatch(r"as<(?:\w+::)*VarNode>", squash(self.ctx.text_of(field))):
                    out.append(lit)
        return out

    def _offset_reads(self, obj, body) -> list:
        """Declarations ``NAME = f(<obj>->args[K])`` whose NAME says "offset"."""
        out = []
        for n in self._args.declarators(body) if self._args is not None else walk(body):
            if n.type != "init_declarator":
                continue
            name = self.ctx.leaf_name(n.child_by_field_name("declarator"))
            if self.ctx.cpp.offset_name not in name.lower():
                continue
            val = n.child_by_field_name("value")
            if val is None:
                continue
            if self._args is not None:
                lo, hi = val.start_byte, val.end_byte
                if any(p is not None and p.type == "subscript_expression" and lo <= p.start_byte and p.end_byte <= hi
                       and p.child_by_field_name("argument") == a and self.ctx.args_access(a, obj)
                       for a, p, _ in self._args.reads(val)):
                    out.append(n)
                continue
            for m in walk(val):
                if m.type == "subscript_expression" and self.ctx.args_access(m.child_by_field_name("argument"), obj):
                    out.append(n)
                    break
        return out

    def _top_reads(self, obj, body) -> dict:
        """K -> (name identifier node, declaration node) for ``T NAME = f(<obj>->args[K]);``
        statements directly in the branch body."""
        out = {}
        if body.type != "compound_statement":
            return out
        for st in named(body):
            if st.type != "declaration":
                continue
            decls = st.children_by_field_name("declarator")
            if len(decls) != 1 or decls[0].type != "init_declarator":
                continue
            val = decls[0].child_by_field_name("value")
            if val is None or val.type != "call_expression":
                continue
            a = named(val.child_by_field_name("arguments"))
            if len(a) != 1 or a[0].type != "subscript_expression" or not self.ctx.args_access(
                a[0].child_by_field_name("argument"), obj
            ):
                continue
            idx = named(a[0].child_by_field_name("indices"))
            k = int_value(self.ctx.text_of(idx[0])) if len(idx) == 1 else None
            ident = decls[0].child_by_field_name("declarator")
            if k is not None and ident is not None and ident.type == "identifier" and k not in out:
                out[k] = (ident, st)
        return out

    def _codegen_rewrite(self, site, obj, cond, body, reads, sizes, loose) -> Optional[str]:
        """Try the code-generator rewrite; None on success, else the reason it does not apply."""
        try:
            keys, top, remap = self._codegen_remap(obj, body, loose)
            edits = self._codegen_index_edits(reads, sizes, keys, top, remap)
            offsets, printed, runtime = self._codegen_offset_edits(body, keys, top)
        except _NoRewrite as e:
            return e.reason
        self._codegen_fix(site, edits + offsets, printed, runtime)
        return None

    def _codegen_remap(self, obj, body, loose) -> tuple:
        """Step 1: the legacy indices by role (dst, dst_offset, src, src_offset, size), the branch's top-level
        locals read from them (``_top_reads``) and where each non-offset legacy index goes in the target."""
        tgt = self.ctx.target
        counts = [op for op in dict.fromkeys(self.ctx.tested_ops) if tgt.size_meaning_for(op) != "bytes"]
        if tgt.form != "access_ptr" or counts:
            raise _NoRewrite(
                f"under the target API {tgt.name} `{counts[0] if counts else self.ctx.tested_ops[0]}` counts the copy "
                "in elements (num_elems); the printer must derive bytes from the access pointer's type"
            )
        if loose:
            ln = self.ctx.src.linecol(self.ctx.src.char_offset(loose[0].start_byte))[0]
            raise _NoRewrite(f"the argument array is used at line {ln} in a way the tool does not follow")
        legacy_args = self.ctx.legacy.cpp_args
        roles = [self.ctx.cpp.role(a) for a in legacy_args]
        try:
            keys = tuple(roles.index(r) for r in ("dst", "dst_offset", "src", "src_offset", "size"))
        except ValueError:
            raise _NoRewrite("the rules do not name every legacy argument's role") from None
        top = self._top_reads(obj, body)
        if not all(k in top for k in keys):
            raise _NoRewrite(
                "not the printer shape the tool rewrites: locals read from args[0..4] and printed as pointer + offset")
        # Where each legacy index goes.
        remap = {}
        for k, name in enumerate(legacy_args):
            role = roles[k]
            if role in ("dst_offset", "src_offset"):
                continue
            j = next((i for i, n in enumerate(tgt.cpp_args) if self.ctx.cpp.role(n) == role), None)
            if j is None:
                raise _NoRewrite(f"the target layout has no place for {name}")
            remap[k] = j
        return keys, top, remap

    def _codegen_index_edits(self, reads, sizes, keys, top, remap) -> list:
        """Step 2: the edits of the ``args[k]`` reads (renumbered) and of the ``args.size()`` literals."""
        legacy_args = self.ctx.legacy.cpp_args
        _, k_doff, _, k_soff, _ = keys
        edits = []
        off_decls = {k_doff: top[k_doff], k_soff: top[k_soff]}
        for lit, k in reads:
            if k in off_decls:
                decl = off_decls[k][1]
                if not (decl.start_byte <= lit.start_byte and lit.end_byte <= decl.end_byte):
                    ln = self.ctx.src.linecol(self.ctx.src.char_offset(lit.start_byte))[0]
                    raise _NoRewrite(f"args[{k}] ({legacy_args[k]}) is read again at line {ln}")
                continue
            if k not in remap:
                raise _NoRewrite(f"args[{k}] is outside the legacy layout")
            if remap[k] != k:
                edits.append((lit.start_byte, lit.end_byte, str(remap[k])))
        arity_map = dict(zip(self.ctx.legacy.cpp_arity, self.ctx.target.cpp_arity))
        if not sizes:
            raise _NoRewrite("the branch does not tell the predicated form by args.size()")
        for lit, v in sizes:
            if v not in arity_map:
                raise _NoRewrite(f"args.size() is compared with {v}, which is not a legacy argument count")
            edits.append((lit.start_byte, lit.end_byte, str(arity_map[v]) + int_suffix(self.ctx.text_of(lit))))
        return edits

    def _codegen_offset_edits(self, body, keys, top) -> tuple[list, list, list[str]]:
        """Step 3: every use of an offset local must be `<< ptr << "+" << offset` in a stream chain, or a
        separate argument right after its pointer in a printed call of a runtime helper of the set (CuTeDSL):
        (the edits cutting them out and deleting the locals, the uses, the runtime helpers printed)."""
        k_dst, k_doff, k_src, k_soff, _ = keys
        edits: list = []
        runtime: list[str] = []
        printed: list = []  # the offsets' uses, each cut out of the statement that prints it
        for k_off, k_ptr in ((k_doff, k_dst), (k_soff, k_src)):
            ident, decl = top[k_off]
            ptr_name = self.ctx.text_of(top[k_ptr][0])
            off_name = self.ctx.text_of(ident)
            uses = [
                n
                for n in walk(body)
                if n.type == "identifier" and self.ctx.text_of(n) == off_name and n.start_byte != ident.start_byte
            ]
            if not uses:
                raise _NoRewrite(f"`{off_name}` is read but never printed")
            for u in uses:
                span = self._joined_offset(u, ptr_name) or self._helper_offset(u, ptr_name)
                if span is None:
                    span, helper = self._runtime_offset(u, ptr_name)
                    if helper is not None and helper not in runtime:
                        runtime.append(helper)
                if span is None:
                    raise _NoRewrite(self._unprinted_offset(body, u, off_name, ptr_name))
                edits.append(span)
                printed.append(u)
            edits.append(self.ctx.delete_statement(decl))
        return edits, printed, runtime

    def _unprinted_offset(self, body, u, off_name: str, ptr_name: str) -> str:
        """Why the use ``u`` of the offset local ``off_name`` stops the rewrite."""
        ln = self.ctx.src.linecol(self.ctx.src.char_offset(u.start_byte))[0]
        helpers = self._printed_helpers(body, off_name)
        if helpers:
            names = ", ".join(f"`{h}`" for h in helpers)
            runtime = ", ".join("`" + re.split(r"[.:]+", h)[-1] + "`" for h in helpers)
            return (
                f"it prints the offsets as separate arguments of the runtime helper"
                f"{'s' if len(helpers) > 1 else ''} {names} (`{off_name}` at line {ln}), so the runtime "
                f"helper must change with it: print only the access pointers "
                f"(`{helpers[0]}(size, {ptr_name}, src)`, the predicate last) and give the runtime's "
                f"{runtime} a pointer-only form "
                f"in the same change (CPA007 where the runtime is Python in the scanned tree)"
            )
        return f"`{off_name}` is used at line {ln} other than as `{ptr_name} << \"+\" << {off_name}`"

    def _codegen_fix(self, site, edits, printed, runtime) -> None:
        """Step 4: ``site``'s fix (CPA104) and its assumptions."""
        site.edits = self._laid_out_streams(edits, printed)
        site.fixable = True
        site.applicability = Applicability.UNSAFE
        site.assumptions = [
            f"Every producer of this call in the program now builds the access-pointer layout "
            f"({'/'.join(map(str, self.ctx.target.cpp_arity))} arguments), so the branch no longer needs to accept the "
            "legacy one.",
        ]
        site.set_established = True  # a complete change set migrated whole makes it a fact (sets.py)
        if runtime:
            site.assumptions.append(
                f"The runtime helpers {', '.join(f'`{h}`' for h in runtime)} take one pointer per side (their "
                f"CPA007 fixes in the same change set).")
            site.needs_function = ";".join(runtime)  # sets.py: the set must migrate these helpers with it

    def _laid_out_streams(self, edits, uses) -> list:
        """``edits`` with the ones inside each expression statement that prints a use in ``uses`` folded
        into one edit that writes the statement again whole, laid out (``layout.py``: a stream chain
        ``os << ... ;`` is broken before ``<<`` as clang-format breaks it); a statement the layout does not
        model, one not directly in a ``{ }`` block or not starting its line, keeps its edits as they are."""
        data = self.ctx.src.data
        style = self.ctx.style
        stmts = {}
        for u in uses:
            st = u
            while st is not None and st.type != "expression_statement":
                st = st.parent
            if st is not None:
                stmts[(st.start_byte, st.end_byte)] = st
        for (a, b), st in stmts.items():
            if st.parent is None or st.parent.type != "compound_statement" or st.has_error or self.ctx.near_error(st):
                continue
            indent = hoist.line_start_indent(data, a)
            if indent is None or "\t" in indent:
                continue
            inside = [e for e in edits if a <= e[0] and e[1] <= b]
            if any(e[0] < b and e[1] > a and e not in inside for e in edits):
                continue  # an edit that reaches out of the statement
            text = data[a:b]
            for lo, hi, rep in sorted(inside, reverse=True):
                text = text[: lo - a] + rep.encode() + text[hi - a:]
            try:
                laid = layout_statement(text.decode(), len(indent), style)
            except UnicodeDecodeError:
                laid = None
            if laid is None:
                continue
            edits = [e for e in edits if e not in inside] + [(a, b, laid.replace("\n", self.ctx.nl))]
        return edits

    def _runtime_offset(self, use, ptr_name):
        """For ``... << ptr << ", " << use`` inside a ``<<`` chain that prints a call of a runtime helper of
        ``[helpers] names`` (rules/python_api.toml): (the span from after ``ptr`` to after ``use``, the
        helper's name); (None, None) otherwise.  The offset is that helper's argument right after its
        pointer, the place the helper's own fix drops (CPA007), so the printed call loses it too."""
        helpers = self.ctx.rules.python_api.get("helpers", {})
        joins = {j.strip() for j in helpers.get("printed_join", [])}
        names = set(helpers.get("names", []))
        span = self._joined_offset(use, ptr_name, joins) if joins else None
        if span is None:
            return None, None
        printed = self._chain_helpers(use)
        if len(printed) != 1 or re.split(r"[.:]+", printed[0])[-1] not in names:
            return None, None
        return span, re.split(r"[.:]+", printed[0])[-1]

    def _chain_helpers(self, n) -> list[str]:
        """Calls ``"name("`` printed by string literals of the ``<<`` chain ``n`` is in, before ``n``."""
        top = n
        while top.parent is not None and top.parent.type == "binary_expression" and \
                self.ctx.text_of(top.parent.child_by_field_name("operator")) == "<<":
            top = top.parent
        out: list[str] = []
        if top is n:
            return out
        for lit in walk(top):
            if lit.type != "string_literal" or lit.start_byte > n.start_byte:
                continue
            content = "".join(self.ctx.text_of(c) for c in lit.named_children if c.type == "string_content")
            m = re.search(r"([A-Za-z_][\w.:]*)\(\s*$", content)
            if m and m.group(1) not in out:
                out.append(m.group(1))
        return out

    def _printed_helpers(self, body, off_name: str) -> list[str]:
        """Runtime helpers a printer branch prints calls of with ``off_name`` among their
        arguments: string literals ``"name("`` in the same ``<<`` chain as a use of the offset
        (CuTeDSL prints ``tl.cp_async_gs(size, dst, dst_offset, src, src_offset)``)."""
        out: list[str] = []
        for n in walk(body):
            if n.type != "identifier" or self.ctx.text_of(n) != off_name:
                continue
            top = n
            while top.parent is not None and top.parent.type == "binary_expression" and \
                    self.ctx.text_of(top.parent.child_by_field_name("operator")) == "<<":
                top = top.parent
            if top is n:
                continue
            for lit in walk(top):
                if lit.type != "string_literal" or lit.start_byte > n.start_byte:
                    continue
                content = "".join(self.ctx.text_of(c) for c in lit.named_children if c.type == "string_content")
                m = re.search(r"([A-Za-z_][\w.:]*)\(\s*$", content)
                if m and m.group(1) not in out:
                    out.append(m.group(1))
        return out

    def _helper_offset(self, use, ptr_name):
        """For ``Helper(..., ptr, use, ...)`` with ``Helper`` a printer helper of ``[helpers] names``: the byte
        span of ``, use`` (the call becomes the helper's pointer-only form, upstream's shape; CPA105 gives
        the helper that form in the same change)."""
        args = use.parent
        if args is None or args.type != "argument_list" or args.parent is None or args.parent.type != "call_expression":
            return None
        callee = args.parent.child_by_field_name("function")
        if callee is None or squash(self.ctx.text_of(callee)).split("::")[-1] not in self.ctx.cpp.helper_names:
            return None
        a = named(args)
        k = next((i for i, x in enumerate(a) if x == use), None)
        if k not in (1, 3) or a[k - 1].type != "identifier" or self.ctx.text_of(a[k - 1]) != ptr_name:
            return None
        return (a[k - 1].end_byte, use.end_byte, "")

    def _joined_offset(self, use, ptr_name, joins=None):
        """For ``... << ptr << "+" << use`` (``joins``: the literal's stripped contents, ``[consumer]
        offset_join`` unless given): the byte span from after ``ptr`` to after ``use``."""
        p = use.parent
        if p is None or p.type != "binary_expression" or p.child_by_field_name("right") != use:
            return None
        if self.ctx.text_of(p.child_by_field_name("operator")) != "<<":
            return None
        left = p.child_by_field_name("left")
        if left is None or left.type != "binary_expression" or self.ctx.text_of(left.child_by_field_name("operator")) != "<<":
            return None
        join = left.child_by_field_name("right")
        if join is None or join.type != "string_literal":
            return None
        content = "".join(self.ctx.text_of(c) for c in join.named_children if c.type == "string_content")
        if content.strip() not in (self.ctx.cpp.offset_join if joins is None else joins):
            return None
        ll = left.child_by_field_name("left")
        if ll is None or ll.type != "binary_expression" or self.ctx.text_of(ll.child_by_field_name("operator")) != "<<":
            return None
        ptr = ll.child_by_field_name("right")
        if ptr is None or ptr.type != "identifier" or self.ctx.text_of(ptr) != ptr_name:
            return None
        return (ptr.end_byte, use.end_byte, "")


    def _dead(self, s, cond, body) -> None:
        # no part in the op's change set: the branch never runs, so deleting it is right whatever the rest of
        # the program does, and a set that is held or incomplete does not hold it back
        self.ctx.tag = (self.ctx.tag[0], None)
        self.ctx.dead_ranges.append((s.start_byte, s.end_byte))
        site = PendingSite(s, codes.CPP_DEAD_DUPLICATE_BRANCH, (
            f"unreachable branch: an earlier branch of this if/else chain already tests `{short(self.ctx.text_of(cond), 80)}`"
        ))
        if self.ctx.parked_near_error(site, s):
            return
        clause = s.parent  # else_clause
        alt = s.child_by_field_name("alternative")
        if alt is not None:
            span = (clause.start_byte, alt.start_byte, "")
        else:
            prev = clause.prev_sibling
            start = prev.end_byte if prev is not None else clause.start_byte
            span = (start, s.end_byte, "")
        site.edits = [span]
        site.fixable = True
        # the same test is made earlier in the chain, so this branch never runs: deleting it changes no behaviour
        site.applicability = Applicability.SAFE
        site.fix_note = "delete it"
        self.ctx.sites.append(site)

