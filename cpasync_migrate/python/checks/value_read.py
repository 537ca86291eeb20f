"""Reads of the intrinsic as a value that no analysed call accounts for.

CPA008 intrinsic-read-as-value: docs/codes/CPA008.md (the routes, and the reads that are no finding).

The decision (route names, messages, what is no finding) is ``route_rules.py``'s, shared with the
fast pass (``fast_scan.value_reads``); this module finds the reads and follows their values.

A unit over the file's context (``ctx``): it reads the names through ``ctx.resolver`` (reach.py) and the
scopes, and skips the callees of the calls the pass classified (``ctx.analysed``).
"""
from __future__ import annotations

from typing import Optional

import libcst as cst
from libcst.metadata import ClassScope, GlobalScope, ScopeProvider

from ... import codes
from ...findings import Finding, Status
from .. import route_rules as rr
from ..calls import INTRINSIC, SUPPRESS_RE
from ..context import Context

_STATEMENTS = (cst.BaseSmallStatement, cst.BaseCompoundStatement)


def _dotted(node) -> str:
    """``a.b.c`` for a chain of names; "" for anything else."""
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return ""
    parts.append(node.value)
    return ".".join(reversed(parts))


class ValueRead:
    """CPA008: ``ValueRead(ctx).check_value_reads(...)`` once every call is classified (``ctx.analysed``)."""

    ctx: Context

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self._all_names: Optional[set] = None  # the names __all__ lists, once read

    def check_value_reads(self, calls: list, attrs: list, subscripts: list, import_froms: list) -> None:
        """CPA008 for every read no analysed call accounts for; the lists come from the pass's one traversal
        (``rewrite._Collector``): the calls, the attributes named like the intrinsic, the subscripts, the
        ``from ... import`` statements."""
        res = self.ctx.resolver
        work = self._reads(calls, attrs, subscripts, import_froms, res)
        seen: set = set()
        while work:
            node, api, spelled = work.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            read = self._route(node, api, spelled, work)
            if read is None or not rr.is_finding(read):
                continue
            r = self.ctx.pos(node)
            f = Finding(path=self.ctx.path, line=r.start.line, column=r.start.column + 1, end_line=r.end.line,
                        end_column=r.end.column + 1, code=codes.INTRINSIC_READ_AS_VALUE, message=rr.message(read),
                        function=self.ctx.enclosing_function(node))
            if SUPPRESS_RE.search(self.ctx.lines[r.start.line - 1] if r.start.line - 1 < len(self.ctx.lines) else ""):
                f.status = Status.SUPPRESSED
            self.ctx.findings.append(f)

    # ------------------------------------------------------------------ the reads

    def _reads(self, calls: list, attrs: list, subscripts: list, import_froms: list, res) -> list:
        """(node, api, spelled) of every reference to the intrinsic the text spells: attributes, names
        imported as it, string lookups."""
        out = []
        names = {INTRINSIC}
        for node in import_froms:
            for a in node.names if not isinstance(node.names, cst.ImportStar) else ():
                if a.asname is not None and isinstance(a.asname.name, cst.Name) and _dotted(a.name) == INTRINSIC:
                    names.add(a.asname.name.value)  # `from tilelang.language import ptx_cp_async as cp`
        for node in attrs:
            par = self.ctx.parent(node)
            if isinstance(par, cst.Call) and par.func is node and par in self.ctx.analysed:
                continue  # the callee of a call visit_call classified (most of them): no read
            if self._stored(node):
                continue
            api = res.api_by_name(node) or res.module_of(node.value) or res.module_of(node.value, params=True)
            if api is not None:
                out.append((node, api, _dotted(node) or self.ctx.node_text(node)))
        for scope in {s for s in self.ctx.metadata[ScopeProvider].values() if s is not None}:
            for name in names:
                for access in scope.accesses[name]:
                    n = access.node
                    if not isinstance(n, cst.Name) or self._stored(n):
                        continue
                    par = self.ctx.parent(n)
                    if isinstance(par, cst.Call) and par.func is n and par in self.ctx.analysed:
                        continue
                    api = res.api_by_name(n)
                    if api is None and n.value == INTRINSIC and res.star and not self.ctx.assignments(n, n.value):
                        api = res.star  # only the star import can bind it
                    if api is not None:
                        out.append((n, api, n.value))
        for node in list(calls) + subscripts:
            api = res.string_route(node)
            if api is not None:
                out.append((node, api, self.ctx.node_text(node)))
        out.sort(key=lambda t: (self.ctx.pos(t[0]).start.line, self.ctx.pos(t[0]).start.column), reverse=True)
        return out

    def _stored(self, node) -> bool:
        """``node`` is (part of) an assignment's, a loop's, a ``with``'s or a ``del``'s target: no read."""
        cur = node
        while True:
            par = self.ctx.parent(cur)
            if isinstance(par, (cst.Element, cst.StarredElement, cst.Tuple, cst.List)):
                cur = par
                continue
            if isinstance(par, cst.AssignTarget) and par.target is cur:
                return True
            if isinstance(par, (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor)) and par.target is cur:
                return True
            if isinstance(par, cst.AsName) and par.name is cur:
                return True
            if isinstance(par, (cst.MatchAs, cst.MatchStar)) and par.name is cur or \
                    isinstance(par, cst.MatchMapping) and par.rest is cur:
                return True  # a capture pattern binds the name
            if isinstance(par, cst.Del) and par.target is cur:
                return True
            return False

    # ------------------------------------------------------------------ where a read's value goes

    def _route(self, node, api: str, spelled: str, work: list) -> Optional[rr.Read]:
        """The read's route (None: an analysed call accounts for it); the names it binds and the tool
        follows go on ``work``, each use a read of its own."""
        cur = node
        walrus = None
        while True:
            par = self.ctx.parent(cur)
            if isinstance(par, cst.Call) and par.func is cur:
                if par in self.ctx.analysed:
                    return None
                return rr.Read(api, spelled, rr.OTHER)  # called along a route no check classifies
            if isinstance(par, cst.NamedExpr) and par.value is cur:
                line = self._uses(par.target, work, need_one=True)
                if line > 0:
                    return rr.Read(api, spelled, rr.ALIAS, par.target.value, rr.NOT_FOLLOWED, line)
                if line < 0:
                    walrus = par  # a name no use reads: the walrus accounts for the read only where it is called
                cur = par  # the walrus's value goes on where the walrus stands
                continue
            break
        if walrus is not None and self._tested(par, cur):
            return rr.Read(api, spelled, rr.ALIAS, walrus.target.value, rr.NEVER_USED, 0,
                           isinstance(self.ctx.scope_of(walrus.target), GlobalScope))
        if self._tested(par, cur):
            return rr.Read(api, spelled, rr.TESTED)
        whole = self._whole_value_binding(par, cur, api, spelled, work)
        if whole is not False:
            return whole
        route = self._innermost(par, cur, api, spelled)
        carrier = self._carrier(cur)
        if carrier is not None:
            target, module_level = carrier
            name = target.name.value if isinstance(target, cst.Param) else target.value
            if rr.defines_api(self.ctx.path, module_level, name, self._roots()):
                return None
            if self._carried(target):
                return None
        return route

    @staticmethod
    def _tested(par, cur) -> bool:
        """The value at ``cur`` is only tested: an expression statement, a comparison's operand, ``not``'s, a test."""
        if isinstance(par, cst.Expr) and par.value is cur:
            return True
        if isinstance(par, cst.Comparison) and par.left is cur or \
                isinstance(par, cst.ComparisonTarget) and par.comparator is cur:
            return True
        if isinstance(par, cst.UnaryOperation) and isinstance(par.operator, cst.Not) and par.expression is cur:
            return True
        return isinstance(par, (cst.If, cst.While, cst.Assert, cst.IfExp)) and par.test is cur

    def _innermost(self, par, cur, api: str, spelled: str) -> rr.Read:
        r = lambda route, detail="": rr.Read(api, spelled, route, detail)  # noqa: E731
        if isinstance(par, cst.Arg) and par.value is cur:
            call = self.ctx.parent(par)
            if isinstance(call, cst.Call) and par.star == "":
                return rr.Read(api, spelled, rr.ARGUMENT, _dotted(call.func), callee=self._callee_name(call.func))
            return r(rr.OTHER)
        if isinstance(par, cst.Element) and par.value is cur:
            disp = self.ctx.parent(par)
            kind = {cst.List: "list", cst.Tuple: "tuple", cst.Set: "set"}.get(type(disp))
            if kind is None:
                return r(rr.OTHER)
            stmt = self.ctx.parent(disp)
            if kind != "set" and isinstance(stmt, cst.Assign) and stmt.value is disp and \
                    any(isinstance(t.target, (cst.Tuple, cst.List)) for t in stmt.targets):
                return r(rr.UNPACKED, kind)
            return r(rr.ELEMENT, kind)
        if isinstance(par, cst.DictElement):
            return r(rr.DICT_VALUE if par.value is cur else rr.DICT_KEY)
        if isinstance(par, cst.Attribute) and par.value is cur:
            return r(rr.ATTRIBUTE, par.attr.value)
        if isinstance(par, cst.Subscript) and par.value is cur:
            return r(rr.SUBSCRIPTED)
        if isinstance(par, cst.Return) and par.value is cur:
            return r(rr.RETURNED)
        if isinstance(par, cst.Yield) and par.value is cur or \
                isinstance(par, cst.From) and par.item is cur and isinstance(self.ctx.parent(par), cst.Yield):
            return r(rr.YIELDED)
        if isinstance(par, cst.Lambda) and par.body is cur:
            return r(rr.LAMBDA_BODY)
        return r(rr.OTHER)

    def _callee_name(self, func) -> str:
        """The qualified name of a callee that names one thing (a builtin not rebound: ``builtins.<name>``)."""
        if isinstance(func, cst.Name) and self.ctx.resolver.is_builtin(func, func.value):
            return f"builtins.{func.value}"
        q = self.ctx.qnames(func)
        return next(iter(q)) if len(q) == 1 else ""

    def _whole_value_binding(self, par, cur, api: str, spelled: str, work: list):
        """The read is the whole value of a binding: its route (None: the binding's uses account for it),
        or False when it is not."""
        target = None
        if isinstance(par, cst.Assign) and par.value is cur:
            if len(par.targets) != 1 or not isinstance(par.targets[0].target, cst.Name):
                return rr.Read(api, spelled, rr.ASSIGNED, " = ".join(self.ctx.node_text(t.target) for t in par.targets))
            target = par.targets[0].target
        elif isinstance(par, cst.AnnAssign) and par.value is cur:
            if not isinstance(par.target, cst.Name):
                return rr.Read(api, spelled, rr.ASSIGNED, self.ctx.node_text(par.target))
            target = par.target
        elif isinstance(par, cst.Param) and par.default is cur:
            fn = self.ctx.parent(self.ctx.parent(par))
            if not isinstance(fn, cst.FunctionDef):
                return rr.Read(api, spelled, rr.DEFAULT, par.name.value, rr.LAMBDA_PARAM)
            line = self._uses(par, work, need_one=True)
            if line:
                return rr.Read(api, spelled, rr.DEFAULT, par.name.value,
                               rr.NEVER_USED if line < 0 else rr.NOT_FOLLOWED, max(line, 0))
            return None
        else:
            return False
        scope = self.ctx.scope_of(target)
        module_level = isinstance(scope, GlobalScope)
        if rr.defines_api(self.ctx.path, module_level, target.value, self._roots()):
            return None
        if isinstance(scope, ClassScope):
            cls = self.ctx.enclosing_function(target) or ""
            return rr.Read(api, spelled, rr.CLASS_ATTRIBUTE, f"{cls.rpartition('.')[2]}.{target.value}")
        line = self._uses(target, work, need_one=True)
        if line:
            return rr.Read(api, spelled, rr.ALIAS, target.value, rr.NEVER_USED if line < 0 else rr.NOT_FOLLOWED,
                           max(line, 0), module_level)
        if module_level and target.value in self._exported():
            return rr.Read(api, spelled, rr.ALIAS, target.value, rr.EXPORTED, 0, True)
        return None

    def _exported(self) -> set:
        """The names a module-level ``__all__`` lists (libcst's scopes record no access for them)."""
        if self._all_names is None:
            names: set = set()
            for stmt in self.ctx.module.body:
                for small in getattr(stmt, "body", ()) if isinstance(stmt, cst.SimpleStatementLine) else ():
                    if isinstance(small, cst.Assign) and any(
                            isinstance(t.target, cst.Name) and t.target.value == "__all__" for t in small.targets) or \
                            isinstance(small, (cst.AugAssign, cst.AnnAssign)) and \
                            isinstance(small.target, cst.Name) and small.target.value == "__all__":
                        value = small.value
                        for el in getattr(value, "elements", ()) if value is not None else ():
                            v = el.value
                            if isinstance(v, cst.SimpleString):
                                try:
                                    names.add(v.evaluated_value)
                                except Exception:  # noqa: BLE001
                                    pass
            self._all_names = names
        return self._all_names

    def _assignment(self, node):
        """libcst's Assignment for the binding at ``node`` (a target Name or a Param)."""
        name = node.name.value if isinstance(node, cst.Param) else node.value
        scope = self.ctx.scope_of(node.name if isinstance(node, cst.Param) else node)
        if scope is None:
            return None
        try:
            for a in scope.assignments[name]:
                if a.node is node:
                    return a
        except Exception:  # noqa: BLE001
            return None
        return None

    def _uses(self, node, work: list, need_one: bool = False) -> int:
        """Follow the uses of the name bound at ``node``: each that reaches the intrinsic goes on ``work``
        as a read; 0 when every use is such a read or the callee of an analysed call, else the line of
        the first that is neither (-1: no use at all and ``need_one``)."""
        asg = self._assignment(node)
        pos = self.ctx.pos
        refs = sorted(asg.references, key=lambda a: (pos(a.node).start.line, pos(a.node).start.column)) \
            if asg is not None else []
        if not refs:
            return -1 if need_one else 0
        res = self.ctx.resolver
        bad = 0
        for ref in refs:
            n = ref.node
            if isinstance(n, cst.Name) and not self._stored(n):
                reach = res.callee(n)
                if reach.api is not None:
                    work.append((n, reach.api, n.value))
                    continue
                if self._accounted(n):
                    continue
            bad = bad or self.ctx.pos(n).start.line
        return bad

    def _accounted(self, n, depth: int = 0) -> bool:
        """A use that is the callee of a call the pass classified, or the whole value of a one-name binding
        (outside a class body) whose every use is accounted for in turn, at least one (``cp2 = cp``)."""
        par = self.ctx.parent(n)
        if isinstance(par, cst.Call) and par.func is n:
            return par in self.ctx.analysed
        target = None
        if isinstance(par, cst.Assign) and par.value is n and len(par.targets) == 1 and \
                isinstance(par.targets[0].target, cst.Name):
            target = par.targets[0].target
        elif isinstance(par, cst.AnnAssign) and par.value is n and isinstance(par.target, cst.Name):
            target = par.target
        if target is None or depth >= 6 or isinstance(self.ctx.scope_of(target), ClassScope):
            return False
        return self._carried(target, depth + 1)

    def _carrier(self, node):
        """(target Name, module level) of the innermost binding whose value holds ``node`` inside a larger
        expression: a one-name assignment, an annotated assignment, a walrus; None when there is none (a
        parameter's default counts, with module level False)."""
        prev, cur = node, self.ctx.parent(node)
        while cur is not None and not isinstance(cur, _STATEMENTS):
            if isinstance(cur, cst.NamedExpr) and cur.value is prev:
                return cur.target, isinstance(self.ctx.scope_of(cur.target), GlobalScope)
            if isinstance(cur, cst.Param) and cur.default is prev:
                return cur, False
            prev, cur = cur, self.ctx.parent(cur)
        if isinstance(cur, cst.Assign) and cur.value is prev and len(cur.targets) == 1 and \
                isinstance(cur.targets[0].target, cst.Name):
            t = cur.targets[0].target
            return t, isinstance(self.ctx.scope_of(t), GlobalScope)
        if isinstance(cur, cst.AnnAssign) and cur.value is prev and isinstance(cur.target, cst.Name):
            return cur.target, isinstance(self.ctx.scope_of(cur.target), GlobalScope)
        return None

    def _carried(self, target, depth: int = 0) -> bool:
        """Every use of the name bound at ``target`` is accounted for (``_accounted``; at least one), and
        ``__all__`` does not export it."""
        asg = self._assignment(target)
        if asg is None or not asg.references:
            return False
        if isinstance(target, cst.Name) and isinstance(self.ctx.scope_of(target), GlobalScope) and \
                target.value in self._exported():
            return False
        return all(isinstance(ref.node, cst.Name) and self._accounted(ref.node, depth) for ref in asg.references)

    def _roots(self) -> tuple:
        return rr.api_roots(self.ctx.tl_modules, self.ctx.tvm_modules)
