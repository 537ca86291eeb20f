"""Whether the legacy lowering merged a cp.async destination into one dynamic shared buffer.

What: for a legacy call whose destination is ``S.data``, read from the text which addressing
TileLang 0.1.7.post1 gave it (``rules/shared_memory.toml`` holds the facts):

* **merged**: the kernel has two or more used ``shared.dyn`` allocations, so
  ``MergeSharedMemoryAllocations`` placed them in one byte buffer and the legacy offset counts
  elements of the **call's** dtype;
* **not merged**: ``S`` is the kernel's only used ``shared.dyn`` allocation, or a static
  ``shared`` buffer, so the offset counts elements of ``S``'s own type.

Why: the access pointer's type must make ``type x offset`` the old byte address; where the two
readings differ (the call's dtype is not the buffer's), picking the wrong one moves the copy.

How the count follows the pass: every allocation statement of the kernel counts once (loops do
not repeat it), an inlined ``T.macro`` counts its allocations once per call, an allocation that
nothing uses is dropped (naming it only in ``T.reads``/``T.writes`` is not a use), ``alloc_shared``
of ``bool`` is static, and tile operators that may add a workspace of their own (reductions,
``cumsum``) can add one more.  Where the text does not decide the count (an allocation under an
``if`` that may be a Python condition, a call of a function the file does not show, a scope that
is not a literal, a macro no visible kernel calls), the reading is undecided and says why.

Pure: the service ``ctx.smem`` of the file's context (context.py), made on first use; works on the libcst
tree through it (``qnames``, ``parent``, ``scope_of``, ``pos``, ``node_text``, ``rules``, ``tl_modules``,
``tvm_modules``, and ``ctx.bindings`` for declarations and dtypes); it never reads files or imports the
user's code.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import libcst as cst
from libcst.metadata import Assignment, QualifiedNameSource

from .context import Context
from .cst_util import string_value

_MAX_DEPTH = 6  # nested macro calls followed


@dataclass
class Reading:
    """How one legacy destination was addressed: merged (True), not (False) or undecided (None)."""

    merged: Optional[bool]
    why: str
    # a fact the reading rests on that the text does not show (makes the fix unsafe)
    assumptions: list[str] = field(default_factory=list)


@dataclass
class _ScopedDecl:
    """A declaration read as if it gave its buffer ``scope`` (one of the scopes the text leaves open)."""

    decl: cst.BaseExpression
    scope: str


@dataclass
class _Alloc:
    name: Optional[str]
    scope: Optional[str]  # None: not a literal
    line: int
    certain: bool  # the statement surely reaches the lowered kernel
    used: Optional[bool]  # None: the text does not decide
    why_uncertain: str = ""


@dataclass
class _Census:
    allocs: list = field(default_factory=list)
    maybe_more: list = field(default_factory=list)  # reasons an allocation the text does not show may exist


class SharedMemory:
    """Answers :meth:`reading` for the legacy calls of one module (results cached per kernel)."""

    ctx: Context

    def __init__(self, ctx: Context):
        self.ctx = ctx
        facts = ctx.rules.shared_memory
        self.facts = facts
        self.merged_scope = facts["merged_scope"]
        self.static_scope = facts["static_scope"]
        self.min_allocs = facts["min_allocations"]
        self.static_config = facts["static_merge_config"]
        self.allocations = dict(facts["allocations"])
        self.forced = dict(facts["allocations_forced"])
        self.annotations = set(facts["uses"]["annotations"])
        self.workspace_ops = set(facts["workspaces"]["ops"])
        fn = facts["functions"]
        self.prim_func_names = set(fn["prim_func"])
        self.macro_names = set(fn["macro"])
        self.builtins = set(fn["python_builtins"])
        self._census: dict = {}
        self.mentions_static_config = bool(self.static_config) and self.static_config in ctx.text

    # ------------------------------------------------------------------ the question

    def reading(self, call: cst.Call, decl: cst.BaseExpression) -> Reading:
        """How the legacy lowering addressed the destination declared by ``decl`` in ``call``."""
        scope, why = self.scope_of_declaration(decl)
        if scope is None:
            return self._any_scope(call, decl, why)
        if scope not in (self.merged_scope, self.static_scope):
            return Reading(False, f"the destination's scope is {scope!r}, never merged")
        kernels, why = self.kernels_around(call)
        if not kernels:
            return Reading(None, why)
        readings = [(k, self.kernel_reading(k, scope)) for k in kernels]
        decided = {r.merged for _, r in readings}
        if None in decided:
            k, r = next((k, r) for k, r in readings if r.merged is None)
            return Reading(None, f"in kernel `{k.name.value}`: {r.why}")
        if len(decided) > 1:
            parts = [f"`{k.name.value}` {'merges' if r.merged else 'does not merge'} ({r.why})" for k, r in readings]
            return Reading(None, "the kernels that reach this call disagree: " + "; ".join(parts))
        assumptions = []
        for _, r in readings:
            assumptions.extend(a for a in r.assumptions if a not in assumptions)
        k0, r0 = readings[0]
        assumptions.extend(a for a in self._macro_assumptions(call, scope, bool(r0.merged)) if a not in assumptions)
        why = r0.why if len(readings) == 1 else (
            f"every kernel that reaches this call ({', '.join(f'`{k.name.value}`' for k, _ in readings)}) "
            f"{'merges' if r0.merged else 'does not merge'}: {r0.why}")
        return Reading(bool(r0.merged), why, assumptions)

    def _any_scope(self, call: cst.Call, decl: cst.BaseExpression, why: str) -> Reading:
        """The reading when the destination's scope is one of several the text leaves open (an ``alloc_shared``
        whose dtype is a factory parameter: ``shared.dyn``, or static ``shared`` if it is bool; a scope that
        is a parameter): decided when no scope it may have merges it (too few allocations in each)."""
        scopes = self.possible_scopes(decl)
        if not scopes:
            return Reading(None, why)
        readings = []
        for scope in scopes:
            r = self.reading(call, _ScopedDecl(decl, scope))
            if r.merged is None or r.merged:
                return Reading(None, why if r.merged is None and not readings else f"{why}; as {scope!r}: {r.why}")
            readings.append(r)
        out = Reading(False, f"{why}, but in every scope it may have ({', '.join(map(repr, scopes))}) it is not merged: "
                      + readings[0].why)
        for r in readings:
            out.assumptions.extend(a for a in r.assumptions if a not in out.assumptions)
        return out

    def possible_scopes(self, decl) -> list:
        """The scopes an allocation may have where the text does not give one: its dtype is not a literal and
        decides it (``alloc_shared`` of bool is static ``shared``), or its scope is not a literal (only
        ``shared.dyn`` and ``shared`` can merge); [] when the declaration is no allocation the file shows."""
        if not isinstance(decl, cst.Call):
            return []
        fname = self.ctx.bindings.decl_function(decl.func)
        spec = self.allocations.get(fname)
        if spec is None or any(a.star for a in decl.args):
            return []
        asked, _ = self._alloc_scope(decl, fname, spec, forced_check=False)
        if asked is None:
            # a scope that is not a literal: any other scope than these two is never merged
            return [self.merged_scope, self.static_scope]
        forced = self.forced.get(fname)
        return list(dict.fromkeys([asked, forced["scope"]])) if forced else []

    def kernel_reading(self, kernel: cst.FunctionDef, scope: str) -> Reading:
        census = self.census(kernel)
        name = kernel.name.value
        same = [a for a in census.allocs if a.scope == scope]
        unknown_scope = [a for a in census.allocs if a.scope is None and a.used is not False]
        sure = [a for a in same if a.certain and a.used]
        unsure = [a for a in same if not (a.certain and a.used) and a.used is not False]
        listing = ", ".join(f"`{a.name or '?'}` (line {a.line})" for a in sure)
        if scope == self.static_scope:
            count = len(sure) + len(unsure) + len(unknown_scope)
            if count < self.min_allocs:
                return Reading(False, f"the destination is static {scope!r} memory, which is not merged")
            if self.mentions_static_config:
                return Reading(None, f"the kernel has {count} static {scope!r} allocations and the file names "
                                     f"`{self.static_config}`, which merges them when set")
            return Reading(False, f"the destination is static {scope!r} memory", [
                f"the kernel `{name}` is compiled without the pass config `{self.static_config}` (TileLang's "
                f"default), so its {count} static shared buffers are not merged"])
        if len(sure) >= self.min_allocs:
            return Reading(True, f"`{name}` has {len(sure)} used {scope} allocations ({listing}), which TileLang "
                                 "0.1.7.post1 merges into one byte buffer")
        doubts = [a.why_uncertain for a in unsure + unknown_scope] + census.maybe_more
        if not doubts:
            return Reading(False, f"the destination is the only used {scope} allocation of `{name}`, which is not merged")
        most = len(sure) + len(unsure) + len(unknown_scope)
        if not census.maybe_more and most < self.min_allocs:
            # counting decides what the doubts leave open: however they fall, too few allocations to merge
            return Reading(False, f"`{name}` has at most {most} {scope} allocation(s), which is never merged")
        return Reading(None, f"`{name}` has {len(sure)} used {scope} allocation(s) the text shows, and "
                             + "; ".join(dict.fromkeys(doubts)))

    # ------------------------------------------------------------------ declarations

    def scope_of_declaration(self, decl: cst.BaseExpression) -> tuple[Optional[str], str]:
        """The storage scope a declaration gives its buffer, or (None, why) when the text does not say."""
        if isinstance(decl, _ScopedDecl):
            return decl.scope, ""
        if not isinstance(decl, cst.Call):
            return None, "the destination is not allocated by a call the file shows"
        fname = self.ctx.bindings.decl_function(decl.func)
        spec = self.allocations.get(fname)
        if spec is None:
            return None, f"the destination is declared by `{self.ctx.node_text(decl.func)}`, not an allocation"
        return self._alloc_scope(decl, fname, spec)

    def _alloc_scope(self, decl: cst.Call, fname: str, spec: dict,
                     forced_check: bool = True) -> tuple[Optional[str], str]:
        positional = [a for a in decl.args if a.keyword is None]
        if any(a.star for a in decl.args):
            return None, "the allocation passes *args or **kwargs"
        arg = next((a for a in decl.args if a.keyword is not None and a.keyword.value == spec["keyword"]), None)
        if arg is None and len(positional) > spec["position"]:
            arg = positional[spec["position"]]
        if arg is None:
            scope = spec["default"]
        else:
            scope = string_value(arg.value)
            if scope is None:
                return None, f"the allocation's scope `{self.ctx.node_text(arg.value)}` is not a string literal"
        forced = self.forced.get(fname)
        if forced and forced_check:
            dspec = self.ctx.rules.declarations[fname]  # load_rules checks every forced allocation has one
            dt = next((a.value for a in decl.args if a.keyword is not None and a.keyword.value == dspec["keyword"]),
                      None)
            if dt is None and len(positional) > dspec["position"]:
                dt = positional[dspec["position"]].value
            dname = self._dtype_name(dt, decl) if dt is not None else None
            if dname is not None and dname in forced["dtypes"]:
                scope = forced["scope"]
            elif dname is None and dt is not None:
                return None, (f"the allocation's dtype `{self.ctx.node_text(dt)}` is not a literal, and "
                              f"{fname} of {'/'.join(forced['dtypes'])} is always {forced['scope']!r}")
        return scope, ""

    def _dtype_name(self, expr, at) -> Optional[str]:
        try:
            return self.ctx.bindings.dtype_of_expr(expr, at).name
        except Exception:  # noqa: BLE001 - the front end's NoFix: not a dtype it can name
            return None

    # ------------------------------------------------------------------ kernels

    def decorated(self, fdef: cst.FunctionDef, names: set) -> bool:
        from .callers import decorated

        return decorated(self.ctx, fdef, names)

    def enclosing_def(self, node) -> Optional[cst.FunctionDef]:
        cur = self.ctx.parent(node)
        while cur is not None and not isinstance(cur, cst.FunctionDef):
            cur = self.ctx.parent(cur)
        return cur

    def kernels_around(self, call: cst.CSTNode, depth: int = 0) -> tuple[list, str]:
        """The prim_funcs whose body reaches ``call`` (directly or through macros in this file)."""
        fdef = self.enclosing_def(call)
        if fdef is None:
            return [], "the call is not inside a function"
        if self.decorated(fdef, self.prim_func_names):
            return [fdef], ""
        if not self.decorated(fdef, self.macro_names):
            return [], f"the call is inside `{fdef.name.value}`, which is neither a prim_func nor a T.macro"
        if depth >= _MAX_DEPTH:
            return [], "macros nest too deeply to follow"
        callers, why = self.macro_callers(fdef)
        if why:
            return [], why
        if not callers:
            return [], f"no kernel in this file calls the macro `{fdef.name.value}`"
        out: list = []
        for c in callers:
            ks, why = self.kernels_around(c, depth + 1)
            if not ks:
                return [], why
            out.extend(k for k in ks if k not in out)
        return out, ""

    def macro_callers(self, fdef: cst.FunctionDef) -> tuple[list, str]:
        """Calls of the macro ``fdef`` in this file; a reference that is not a call makes it undecided."""
        asg = self._binding(fdef.name.value, fdef)
        if asg is None:
            return [], f"the macro `{fdef.name.value}` is bound more than once"
        calls = []
        for acc in asg.references:
            par = self.ctx.parent(acc.node)
            if isinstance(par, cst.Call) and par.func is acc.node:
                calls.append(par)
            else:
                return [], f"the macro `{fdef.name.value}` is used other than by a call (line {self._line(acc.node)})"
        return calls, ""

    def _macro_assumptions(self, call, scope: str, merged: bool) -> list[str]:
        """A public module-level macro may be called from other files' kernels: the assumption that none does,
        with the question importers.py asks of each importing kernel (the same reading: ``merged`` in
        ``scope``; ``allocs``: the most allocations of that scope the macro's own body adds where it is
        inlined, None when the text does not bound them)."""
        out = []
        fdef = self.enclosing_def(call)
        seen = 0
        while fdef is not None and self.decorated(fdef, self.macro_names) and seen < _MAX_DEPTH:
            seen += 1
            from .callers import exported

            star = exported(self.ctx, fdef.name.value)
            if isinstance(self.ctx.parent(fdef), cst.Module) and star is not None:
                a = (f"only kernels of this file call the macro `{fdef.name.value}` (another file could "
                     "import it into a kernel that merges shared memory differently)")
                out.append(a)
                own = self.census(fdef)
                allocs = None if own.maybe_more else sum(
                    1 for x in own.allocs if x.used is not False and x.scope in (None, scope))
                self.ctx.importer_questions[a] = (fdef.name.value, star, {
                    "kind": "merge", "scope": scope, "merged": merged, "allocs": allocs})
            callers, _ = self.macro_callers(fdef)
            fdef = self.enclosing_def(callers[0]) if callers else None
        return out

    def _binding(self, name: str, node) -> Optional[Assignment]:
        """The one binding of ``name`` whose node is ``node`` (a target Name, a Param or a def)."""
        scope = self.ctx.scope_of(node)
        if scope is None:
            return None
        try:
            asgs = [a for a in scope[name] if isinstance(a, Assignment)]
        except Exception:  # noqa: BLE001
            return None
        if len(asgs) != 1 or asgs[0].node is not node:
            return None
        return asgs[0]

    # ------------------------------------------------------------------ counting

    def census(self, fdef: cst.FunctionDef, depth: int = 0) -> _Census:
        """Allocations of ``fdef``'s body as the merge pass would see them (macros inlined per call)."""
        key = (id(fdef), depth)
        if key in self._census:
            return self._census[key]
        out = _Census()
        self._census[key] = out
        for node in _walk(fdef.body):
            if not isinstance(node, cst.Call):
                continue
            kind, name = self.classify_call(node)
            if kind == "alloc":
                out.allocs.append(self.allocation(node, name, fdef))
            elif kind == "workspace":
                out.maybe_more.append(f"`{self.ctx.node_text(node.func)}` (line {self._line(node)}) may add a "
                                      "shared.dyn workspace of its own")
            elif kind == "inline":
                target = self._callee_def(node)
                if depth >= _MAX_DEPTH:
                    out.maybe_more.append(f"the macro call at line {self._line(node)} nests too deeply to follow")
                    continue
                inner = self.census(target, depth + 1)
                out.allocs.extend(inner.allocs)
                out.maybe_more.extend(inner.maybe_more)
            elif kind == "unknown":
                out.maybe_more.append(f"`{self.ctx.node_text(node.func)}` (line {self._line(node)}) is a call the "
                                      "file does not show and may allocate")
        return out

    def classify_call(self, node: cst.Call) -> tuple[str, str]:
        """'alloc' | 'alias' | 'workspace' | 'inline' | 'known' | 'unknown', and the function's name.

        'inline': a function this file defines (a T.macro or a plain helper), whose body is
        counted where it is called.
        """
        try:
            names = set(self.ctx.qualified_names(node.func))
        except Exception:  # noqa: BLE001
            names = set()
        mods = self.ctx.tl_modules | self.ctx.tvm_modules
        for q in names:
            mod, _, last = q.name.rpartition(".")
            if mod in mods or mod.split(".")[0] in ("tilelang", "tvm"):
                if last in self.allocations:
                    if any(a.keyword is not None and a.keyword.value == "data" for a in node.args):
                        return "alias", last
                    return "alloc", last
                if last in self.workspace_ops:
                    return "workspace", last
                return "known", last
            if q.source is QualifiedNameSource.BUILTIN and last in self.builtins:
                return "known", last
        if self._callee_def(node) is not None:
            return "inline", ""
        if isinstance(node.func, cst.Attribute) and names and all(
                q.source is QualifiedNameSource.LOCAL for q in names):
            return "known", ""  # a method of a value the kernel holds (S.access_ptr(...))
        return "unknown", ""

    def _callee_def(self, node: cst.Call) -> Optional[cst.FunctionDef]:
        """The function ``node`` calls, when this file defines it under that one name."""
        if not isinstance(node.func, cst.Name):
            return None
        scope = self.ctx.scope_of(node.func)
        if scope is None:
            return None
        try:
            asgs = list(scope[node.func.value])
        except Exception:  # noqa: BLE001
            return None
        if len(asgs) != 1 or not isinstance(asgs[0], Assignment):
            return None
        d = asgs[0].node
        return d if isinstance(d, cst.FunctionDef) else None

    def allocation(self, node: cst.Call, fname: str, fdef: cst.FunctionDef) -> _Alloc:
        scope, why_scope = self._alloc_scope(node, fname, self.allocations[fname])
        line = self._line(node)
        names = self._targets_of(node)
        name = names[0].value if names else None
        a = _Alloc(name=name, scope=scope, line=line, certain=True, used=None)
        if scope is None:
            a.why_uncertain = f"the allocation at line {line}: {why_scope}"
        cond = self._conditional(node, fdef)
        if cond:
            a.certain = False
            a.why_uncertain = f"the allocation of `{name or '?'}` at line {line} is {cond}"
        if names is None:
            if not a.why_uncertain:
                a.why_uncertain = (f"whether the allocation at line {line} is used cannot be told: a chained assignment "
                                   "binds it to a target that is not a name")
            return a
        if not names:
            a.used = False  # the result is not kept: nothing can use it
            return a
        a.used, why = self.used(names[0].value, names[0], 0)
        for other in names[1:]:  # `S = W = T.alloc_shared(...)`: a use of any name is a use of the buffer
            if a.used:
                break
            u, w = self.used(other.value, other, 0)
            if u or (u is None and a.used is False):
                a.used, why = u, w
        if a.used is None and not a.why_uncertain:
            a.why_uncertain = f"whether `{name}` (line {line}) is used {why}"
        return a

    def _targets_of(self, node: cst.Call) -> Optional[list]:
        """The names the allocation's buffer is bound to, the first one first: ``S = T.alloc_shared(...)``, a chain
        ``S = W = T.alloc_shared(...)``, an annotated assignment, a ``with ... as S``, and an element of tuple
        unpacking (``a, b = T.alloc_shared(...), T.alloc_shared(...)``, also chained: ``lo, hi = a, b = ...``, where
        ``lo`` and ``a`` are one buffer); [] when the result is not kept; None when a chain binds it to a target
        that is not a name (its uses are not followed)."""
        par = self.ctx.parent(node)
        if isinstance(par, cst.Assign) and par.value is node:
            names = [t.target for t in par.targets]
            if all(isinstance(t, cst.Name) for t in names):
                return names
            return [] if len(names) == 1 else None
        if isinstance(par, cst.AnnAssign) and isinstance(par.target, cst.Name):
            return [par.target]
        if isinstance(par, cst.Element):
            tup = self.ctx.parent(par)
            stmt = self.ctx.parent(tup)
            if not (isinstance(tup, cst.Tuple) and isinstance(stmt, cst.Assign) and stmt.value is tup):
                return []
            i = list(tup.elements).index(par)
            out = []
            for t in stmt.targets:
                tgt = t.target
                if isinstance(tgt, (cst.Tuple, cst.List)) and len(tgt.elements) == len(tup.elements) and \
                        not any(isinstance(e, cst.StarredElement) for e in tgt.elements):
                    e = tgt.elements[i].value
                    if isinstance(e, cst.Name):
                        out.append(e)
                        continue
                if len(stmt.targets) == 1:
                    return []
                return None
            return out
        if isinstance(par, cst.WithItem) and par.asname is not None and isinstance(par.asname.name, cst.Name):
            return [par.asname.name]
        return []

    def _conditional(self, node, fdef) -> str:
        """Why the statement may not reach the lowered kernel ('' when it surely does)."""
        cur = self.ctx.parent(node)
        while cur is not None and cur is not fdef:
            if isinstance(cur, (cst.If, cst.IfExp)):
                return (f"under the `if` at line {self._line(cur)}, which TVMScript drops when its condition is a "
                        "Python value")
            if isinstance(cur, cst.While):
                return f"inside the `while` at line {self._line(cur)}"
            if isinstance(cur, cst.For):
                it = cur.iter
                known = isinstance(it, cst.Call) and any(
                    q.rpartition(".")[0].split(".")[0] in ("tilelang", "tvm") or q == "builtins.range"
                    for q in self.ctx.qnames(it.func))
                if not known:
                    return f"inside the loop at line {self._line(cur)} over `{self.ctx.node_text(it)}`"
            if isinstance(cur, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return f"inside `{getattr(getattr(cur, 'name', None), 'value', 'a lambda')}`, not the kernel body"
            if isinstance(cur, (cst.Try, cst.CompFor)):
                return f"inside the construct at line {self._line(cur)}"
            cur = self.ctx.parent(cur)
        return ""

    def used(self, name: str, node, depth: int) -> tuple[Optional[bool], str]:
        """Whether the buffer ``name`` bound at ``node`` is used in the lowered kernel (None: undecided)."""
        asg = self._binding(name, node)
        if asg is None:
            return None, "cannot be told: the name is bound more than once"
        undecided = ""
        for acc in asg.references:
            verdict, why = self._use_of(acc.node, depth)
            if verdict:
                return True, ""
            if verdict is None and not undecided:
                undecided = why
        if undecided:
            return None, undecided
        return False, ""

    def _use_of(self, name_node: cst.CSTNode, depth: int) -> tuple[Optional[bool], str]:
        """Is this reference a use?  Walks up to the innermost call that holds it."""
        child, cur = name_node, self.ctx.parent(name_node)
        while cur is not None and not isinstance(cur, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            if isinstance(cur, cst.Call) and child is not cur.func:
                kind, last = self.classify_call(cur)
                if kind == "known" and last in self.annotations:
                    return False, ""
                if kind == "alias":
                    return None, (f"cannot be told: `{self.ctx.node_text(cur.func)}` (line {self._line(cur)}) "
                                  "declares a view of it")
                if kind == "inline" and isinstance(child, cst.Arg) and child.value is name_node:
                    return self._param_use(cur, child, depth)
                if kind in ("unknown", "inline"):
                    return None, (f"cannot be told: it is passed to `{self.ctx.node_text(cur.func)}` "
                                  f"(line {self._line(cur)})")
                return True, ""
            child, cur = cur, self.ctx.parent(cur)
        return True, ""

    def _param_use(self, call: cst.Call, arg: cst.Arg, depth: int) -> tuple[Optional[bool], str]:
        """A buffer passed to a macro is used when the macro uses the parameter it lands in."""
        target = self._callee_def(call)
        why = f"cannot be told: it is passed to the macro `{self.ctx.node_text(call.func)}` (line {self._line(call)})"
        if target is None or depth >= _MAX_DEPTH:
            return None, why
        params = list(target.params.params)
        param = None
        if arg.keyword is not None:
            param = next((p for p in params if p.name.value == arg.keyword.value), None)
        elif not arg.star:
            i = [a for a in call.args if a.keyword is None].index(arg)
            param = params[i] if i < len(params) else None
        if param is None:
            return None, why
        return self.used(param.name.value, param, depth + 1)

    def _line(self, node) -> int:
        try:
            return self.ctx.pos(node).start.line
        except Exception:  # noqa: BLE001
            return 0


def _walk(nodes):
    """Every node under ``nodes`` in document order, not entering nested function or class bodies."""
    stack = list(reversed(nodes if isinstance(nodes, (list, tuple)) else [nodes]))
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        stack.extend(reversed(n.children))
