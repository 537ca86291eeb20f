"""Find legacy ``ptx_cp_async`` calls in TileLang scripts and compute their rewrite.

Pure: takes text, returns findings whose fixes are character-offset edits.
Name resolution uses libcst's ScopeProvider (the qualified names its scopes give), so
aliases, ``from`` imports and local shadowing are handled as Python does.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace as _replace
from typing import Optional, Sequence

import libcst as cst
from libcst.metadata import (
    Assignment,
    MetadataWrapper,
    ParentNodeProvider,
    PositionProvider,
    ScopeProvider,
)

from . import TVM_MESSAGE, call_shape
from ..findings import (
    Analysis,
    Applicability,
    Edit,
    Finding,
    Fix,
    FrontEndOptions,
    Status,
    line_starts,
)

from . import INTRINSIC, SUPPRESS_RE  # noqa: E402
from . import layout  # noqa: E402

CODE_FIX = "CPA001"
CODE_MANUAL = "CPA002"
CODE_TVM = "CPA003"
CODE_DTYPE_KW = "CPA004"
CODE_SIZE = "CPA005"


class NoFix(Exception):
    """The site cannot be migrated automatically; the message says why."""


@dataclass
class DType:
    """A resolved element type: the text to emit and, when known, its size."""

    text: str  # expression to put inside T.type_annotation(...)
    name: Optional[str]  # canonical dtype name when statically known
    size: Optional[int]
    assumptions: list[str] = field(default_factory=list)
    # size used for extents when `size` is unknown (e.g. a parameter default)
    assumed_size: Optional[int] = None
    assumed_name: Optional[str] = None


@dataclass
class Pointer:
    arg: cst.Arg
    buffer: Optional[str]
    dtype: DType
    # the pointer type is the call's dtype rather than the buffer's (merged shared memory), and why
    retyped: bool = False
    why: str = ""
    # a macro parameter read through the macro's calls (callers.py): the callers' declarations
    routed_decls: list = field(default_factory=list)
    note: str = ""  # information for the finding's message (an annotation the calls contradict)


def _is_atom(node: cst.BaseExpression) -> bool:
    if node.lpar:
        return True
    return isinstance(
        node,
        (cst.Name, cst.Attribute, cst.Integer, cst.Float, cst.Call, cst.Subscript, cst.SimpleString),
    )


def _string_value(node: cst.BaseExpression) -> Optional[str]:
    if isinstance(node, cst.SimpleString):
        try:
            v = node.evaluated_value
        except Exception:  # noqa: BLE001 - odd prefixes
            return None
        return v if isinstance(v, str) else None
    return None


def _int_value(node: cst.BaseExpression) -> Optional[int]:
    if isinstance(node, cst.Integer) and not node.lpar:
        try:
            return int(node.value.replace("_", ""), 0)
        except ValueError:
            return None
    if isinstance(node, cst.Integer):
        return int(node.value.replace("_", ""), 0)
    return None


# What the analysis reads about nodes: positions and scopes from libcst's providers.  Qualified
# names come from the scopes on demand (QualifiedNameProvider would compute them for every node of
# the module in a traversal of its own; the analysis asks for a handful), and parents from the one
# traversal below (ParentNodeProvider would make another).
_PROVIDERS = (PositionProvider, ScopeProvider)
_ALIAS_DEPTH = 4  # links of `S = staged` followed to a buffer's declaration


class _Collector(cst.CSTVisitor):
    """One traversal of the module: every node's parent, and the calls in document order."""

    def __init__(self):
        super().__init__()
        self.parents: dict = {}
        self.calls: list = []
        self._stack: list = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self._stack:
            self.parents[node] = self._stack[-1]
        self._stack.append(node)
        if isinstance(node, cst.Call):
            self.calls.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._stack.pop()

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        pass

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        pass


class _Context:
    def __init__(self, text: str, path: str, module: cst.Module, options: FrontEndOptions):
        self.text = text
        self.path = path
        self.module = module
        self.opts = options
        self.rules = options.rules
        self.target = options.target
        self.legacy = self.rules.legacy
        self.starts = line_starts(text)
        self.lines = text.splitlines(True)
        self.findings: list[Finding] = []
        self.metadata: dict = {}  # provider -> {node: value}
        self.parents: dict = {}  # node -> parent node
        self.tl_modules = set(self.rules.tilelang_modules)
        self.tvm_modules = set(self.rules.tvm_modules)
        self.newline = "\r\n" if "\r\n" in text else "\n"
        self._import_edit: Optional[Edit] = None
        self._emit_alias: Optional[str] = None
        self._smem = None  # smem.SharedMemory, made on the first call whose dtypes differ
        self._resolver = None  # reach.Resolver, made on the first call

    # ---------------------------------------------------------------- metadata helpers

    def md(self, provider, node, default=None):
        if provider is ParentNodeProvider:
            return self.parents.get(node, default)
        return self.metadata[provider].get(node, default)

    def pos(self, node):
        return self.md(PositionProvider, node)

    def offset(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def span(self, node) -> tuple[int, int]:
        r = self.pos(node)
        return self.offset(r.start.line, r.start.column), self.offset(r.end.line, r.end.column)

    def vspan(self, node) -> tuple[int, int]:
        """Span of an expression including its own parentheses."""
        s, e = self.span(node)
        lpar = getattr(node, "lpar", None)
        rpar = getattr(node, "rpar", None)
        if lpar:
            s = self.span(lpar[0])[0]
        if rpar:
            e = self.span(rpar[-1])[1]
        return s, e

    def node_text(self, node) -> str:
        s, e = self.vspan(node)
        return self.text[s:e]

    def qualified_names(self, node) -> set:
        """What QualifiedNameProvider gives ``node``: the names its scope resolves it to."""
        scope = self.md(ScopeProvider, node)
        return scope.get_qualified_names_for(node) if scope is not None else set()

    def qnames(self, node) -> set[str]:
        try:
            return {q.name for q in self.qualified_names(node)}
        except Exception:  # noqa: BLE001
            return set()

    def enclosing_function(self, node) -> Optional[str]:
        names = []
        cur = node
        while True:
            cur = self.md(ParentNodeProvider, cur)
            if cur is None:
                break
            if isinstance(cur, cst.FunctionDef):
                names.append(cur.name.value)
            elif isinstance(cur, cst.ClassDef):
                names.append(cur.name.value)
            if isinstance(cur, cst.Module):
                break
        return ".".join(reversed(names)) or None

    # ---------------------------------------------------------------- classification

    def which_api(self, func: cst.BaseExpression):
        """The API the callee reaches (reach.py): a Reach with api "tilelang", "tvm" or None."""
        if self._resolver is None:
            from .reach import Resolver

            self._resolver = Resolver(self, INTRINSIC)
        return self._resolver.callee(func)

    def visit_call(self, node: cst.Call) -> None:
        reach = self.which_api(node.func)
        api = reach.api
        if api is None:
            if reach.unresolved and self.call_shape(node) != "new":
                self._unresolved(node, reach.unresolved)
            return
        r = self.pos(node)
        line_text = self.lines[r.start.line - 1] if r.start.line - 1 < len(self.lines) else ""
        suppressed = bool(SUPPRESS_RE.search(line_text))
        finding = Finding(
            path=self.path,
            line=r.start.line,
            column=r.start.column + 1,
            end_line=r.end.line,
            end_column=r.end.column + 1,
            code=CODE_FIX,
            message="",
            function=self.enclosing_function(node),
        )
        kind = self.call_shape(node)
        if kind is None:
            if api == "tvm":
                return  # not this API's shape (a fork's own op through TVM's namespace): no finding
            # TileLang's intrinsic with a layout of neither form: no TileLang release builds it, so it is
            # left for a person rather than passed over (a lint must not pass while it remains)
            kw = [a.keyword.value for a in node.args if a.keyword is not None]
            kind = (f"{len(node.args)} arguments ({len(node.args) - len(kw)} positional"
                    + (f"; keywords {', '.join(kw)}" if kw else "") + "), neither the legacy nor the access-pointer "
                    "form; if it is a fork's own op, suppress it with a `cpasync-migrate: ignore` comment")
        if kind == "new":
            if any(a.keyword is not None and a.keyword.value == self.legacy_dtype_kw() for a in node.args):
                finding.code = CODE_DTYPE_KW
                finding.message = (
                    "access-pointer call still passes dtype=: TileLang's dtype-forwarding wrapper moves it to the "
                    "front and shifts every argument; delete the dtype= keyword"
                )
            elif self.opts.source.form == "access_ptr" and self.opts.source.name != self.target.name:
                # --from: the call was written for an older access-pointer generation
                try:
                    fix = self.convert_new(node)
                except NoFix as e:
                    finding.code = CODE_MANUAL
                    finding.message = (f"access-pointer call written for {self.opts.source.name} cannot be converted "
                                       f"to {self.target.name}: {e}")
                else:
                    if fix is None:
                        return  # nothing to convert (the size already means the same)
                    finding.fix = fix
                    finding.message = (f"access-pointer call written for the {self.opts.source.name} API "
                                       f"({self.opts.source.size_meaning}); convert its size to "
                                       f"{self.target.size_meaning} for {self.target.name}")
            else:
                warning = self.size_warning(node)
                if warning is None:
                    return  # already migrated: not a finding
                finding.code = CODE_SIZE
                finding.message = warning
                finding.legacy_site = False
                finding.status = Status.INFO
                finding.severity = "warning"
        elif api == "tvm" and not (self.opts.migrate_tvm and kind == "legacy"):
            finding.code = CODE_TVM
            finding.message = TVM_MESSAGE
        elif kind == "legacy":
            try:
                finding.fix, note = self.rewrite(node, switch_callee=(api == "tvm"))
                finding.message = "legacy offset-form ptx_cp_async; migrate to access pointers" + note
            except NoFix as e:
                finding.code = CODE_MANUAL
                finding.message = f"legacy ptx_cp_async cannot be migrated automatically: {e}"
        else:
            finding.code = CODE_MANUAL
            finding.message = f"ptx_cp_async call with an argument layout the tool cannot read: {kind}"
        if suppressed:
            finding.status = Status.SUPPRESSED
            finding.fix = None
        if api == "tilelang" and finding.legacy_site:
            finding.role = "caller"  # of the tree's own definition, when it has one (sets.py)
        self.findings.append(finding)

    def _unresolved(self, node: cst.Call, route: str) -> None:
        """A legacy-shaped call that may reach the intrinsic along a route the tool does not follow."""
        r = self.pos(node)
        line_text = self.lines[r.start.line - 1] if r.start.line - 1 < len(self.lines) else ""
        f = Finding(path=self.path, line=r.start.line, column=r.start.column + 1, end_line=r.end.line,
                    end_column=r.end.column + 1, code=CODE_MANUAL,
                    message=f"legacy ptx_cp_async cannot be migrated automatically: {route}",
                    function=self.enclosing_function(node), role="caller")
        if SUPPRESS_RE.search(line_text):
            f.status = Status.SUPPRESSED
        self.findings.append(f)

    def legacy_dtype_kw(self) -> str:
        return self.legacy.python_params[0]

    def call_shape(self, node: cst.Call) -> str:
        """'legacy', 'new', or a description of what is wrong."""
        return call_shape(self.rules, any(a.star for a in node.args), len(node.args),
                          [a.keyword.value for a in node.args if a.keyword is not None])

    # ---------------------------------------------------------------- binding

    def bind_legacy(self, node: cst.Call) -> dict[str, cst.Arg]:
        params = list(self.legacy.python_params)
        bound: dict[str, cst.Arg] = {}
        positional = [a for a in node.args if a.keyword is None]
        keywords = [a for a in node.args if a.keyword is not None]
        kwnames = [a.keyword.value for a in keywords]
        # TVMScript's dtype forwarding: dtype given as keyword, the rest shift left
        order = params[1:] if self.legacy_dtype_kw() in kwnames else params
        if len(positional) > len(order):
            raise NoFix("too many positional arguments")
        for p, a in zip(order, positional):
            bound[p] = a
        for a in keywords:
            k = a.keyword.value
            if k not in params:
                raise NoFix(f"unknown keyword argument {k}=")
            if k in bound:
                raise NoFix(f"argument {k} given twice")
            bound[k] = a
        missing = [p for p in params if p not in bound]
        if missing:
            raise NoFix("missing argument(s) " + ", ".join(missing))
        return bound

    # ---------------------------------------------------------------- declarations and dtypes

    def scope_of(self, node):
        return self.md(ScopeProvider, node)

    def assignments(self, node, name: str):
        scope = self.scope_of(node)
        if scope is None:
            return set()
        try:
            return set(scope[name])
        except Exception:  # noqa: BLE001
            return set()

    def parent(self, node):
        return self.md(ParentNodeProvider, node)

    def declaration_of(self, at: cst.CSTNode, name: str,
                       depth: int = 0) -> Optional[tuple[cst.CSTNode, cst.BaseExpression]]:
        """The declaring call (or subscript) of buffer ``name`` visible at ``at``.

        Returns (context node, declaration expression), or None when no
        single declaration is visible.  Followed as Python binds them: a plain alias
        (``S = staged``: the declaration of ``staged`` seen at that statement, up to
        ``_ALIAS_DEPTH`` links) and tuple unpacking of as many declarations
        (``a_s, b_s = T.alloc_shared(...), T.alloc_shared(...)``; tuples only: TileLang's
        parser rejects a list target).
        """
        decls = []
        for asg in self.assignments(at, name):
            if not isinstance(asg, Assignment):
                return None
            n = asg.node
            if isinstance(n, cst.Param):
                if n.annotation is None:
                    return None
                decls.append((n, n.annotation.annotation))
                continue
            par = self.parent(n)
            if isinstance(par, cst.AssignTarget):
                stmt = self.parent(par)
                if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and par.target is n:
                    if isinstance(stmt.value, cst.Name):
                        if stmt.value.value == name or depth >= _ALIAS_DEPTH:
                            return None
                        found = self.declaration_of(stmt, stmt.value.value, depth + 1)
                        if found is None:
                            return None
                        decls.append(found)
                        continue
                    decls.append((stmt, stmt.value))
                    continue
                return None
            if isinstance(par, cst.Element):
                found = self._unpacked(par, n)
                if found is None:
                    return None
                decls.append(found)
                continue
            if isinstance(par, cst.AnnAssign) and par.target is n and par.value is not None:
                decls.append((par, par.value))
                continue
            if isinstance(par, cst.AsName):
                witem = self.parent(par)
                if isinstance(witem, cst.WithItem):
                    decls.append((witem, witem.item))
                    continue
            return None
        if len(decls) != 1:
            return None
        return decls[0]

    def _unpacked(self, element: cst.Element, n: cst.Name):
        """``a, b = X, Y``: (the statement, the value matching ``n``) when ``X``, ``Y`` are declarations
        (calls or subscripts, never names, so no value reads a name the statement rebinds)."""
        tup = self.parent(element)
        if not isinstance(tup, cst.Tuple):
            return None  # (TileLang's parser rejects a list target: `[a, b] = ...`)
        target = self.parent(tup)
        if not isinstance(target, cst.AssignTarget) or target.target is not tup:
            return None
        stmt = self.parent(target)
        if not isinstance(stmt, cst.Assign) or len(stmt.targets) != 1 or not isinstance(stmt.value, cst.Tuple):
            return None
        names, values = tup.elements, stmt.value.elements
        if len(names) != len(values) or any(isinstance(e, cst.StarredElement) for e in (*names, *values)) or \
                not all(isinstance(e.value, cst.Name) for e in names):
            return None
        i = next(i for i, e in enumerate(names) if e is element)
        value = values[i].value
        if not isinstance(value, (cst.Call, cst.Subscript)):
            return None
        return stmt, value

    def decl_dtype_expr(self, decl: cst.BaseExpression) -> tuple[Optional[cst.BaseExpression], str]:
        """The dtype argument of a declaration expression.

        Returns (expr or None for the API default, declaring function name);
        raises NoFix when the expression is not a known declaration.
        """
        if isinstance(decl, cst.Subscript):  # T.Buffer[(M, N), "float16"]
            fname = self.decl_function(decl.value)
            if fname is None:
                raise NoFix("the buffer's declaration is not a TileLang buffer declaration")
            elems = [e.slice for e in decl.slice]
            vals = [e.value for e in elems if isinstance(e, cst.Index)]
            if len(vals) >= 2:
                return vals[1], fname
            return None, fname
        if not isinstance(decl, cst.Call):
            raise NoFix("the buffer's declaration is not a call")
        fname = self.decl_function(decl.func)
        if fname is None:
            raise NoFix(f"the buffer is declared by `{self.node_text(decl.func)}`, not a known buffer declaration")
        spec = self.rules.declarations[fname]
        positional = [a for a in decl.args if a.keyword is None and not a.star]
        if any(a.star for a in decl.args):
            raise NoFix("the buffer's declaration uses *args/**kwargs")
        for a in decl.args:
            if a.keyword is not None and a.keyword.value == spec["keyword"]:
                return a.value, fname
        if len(positional) > spec["position"]:
            return positional[spec["position"]].value, fname
        return None, fname

    def declared_default(self, fname: str, buf: str) -> str:
        """The dtype ``fname`` gives a buffer declared without one (rules/namespaces.toml); NoFix when it
        requires one (TileLang's ``alloc_shared``: such a kernel does not build)."""
        d = self.rules.declarations[fname].get("default")
        if d is None:
            raise NoFix(f"`{buf}` is declared by {fname} without a dtype, which {fname} requires")
        return self.rules.canonical_dtype(d)

    def decl_function(self, func: cst.BaseExpression) -> Optional[str]:
        for q in self.qnames(func):
            mod, _, name = q.rpartition(".")
            if name in self.rules.declarations and (mod in self.tl_modules or mod in self.tvm_modules):
                return name
        if isinstance(func, cst.Name) and func.value in self.rules.declarations and \
                not self.assignments(func, func.value):
            self.which_api(func)  # makes the resolver, which knows the module's star imports
            if self._resolver.star:
                return func.value  # only `from tilelang.language import *` can bind it
        return None

    def same_binding(self, a: cst.CSTNode, b: cst.CSTNode, expr: cst.BaseExpression) -> bool:
        """Every name in ``expr`` (evaluated at ``a``) means the same at ``b``."""
        for n in _names_in(expr):
            if self.assignments(a, n) != self.assignments(b, n):
                return False
            if not self.assignments(a, n) and n not in _BUILTIN_NAMES:
                return False
        return True

    def dtype_of_expr(self, expr: cst.BaseExpression, at: cst.CSTNode, depth: int = 0) -> DType:
        """Resolve a dtype expression as seen at ``at`` (the declaration)."""
        text = self.node_text(expr)
        s = _string_value(expr)
        if s is not None:
            name = self.rules.canonical_dtype(s)
            size = self.rules.dtype_size(name)
            if size is None:
                raise NoFix(f"unknown element type {s!r}")
            return DType(text, name, size)
        if isinstance(expr, cst.Attribute):
            mods = {q.name.rpartition(".")[0] for q in self.qualified_names(expr)}
            attr = expr.attr.value
            if mods & (self.tl_modules | self.tvm_modules) and self.rules.dtype_size(attr) is not None:
                name = self.rules.canonical_dtype(attr)
                return DType(text, name, self.rules.dtype_size(name))
            raise NoFix(f"dtype expression `{text}` is not a known dtype")
        if isinstance(expr, cst.Name) and depth < 4:
            asgs = self.assignments(at, expr.value)
            if len(asgs) == 1:
                (asg,) = asgs
                if isinstance(asg, Assignment):
                    n = asg.node
                    if isinstance(n, cst.Param):
                        d = DType(text, None, None)
                        if n.default is not None:
                            try:
                                inner = self.dtype_of_expr(n.default, n, depth + 1)
                            except NoFix:
                                inner = None
                            if inner is not None and inner.size is not None:
                                d.assumed_size = inner.size
                                d.assumed_name = inner.name
                        return d
                    par = self.parent(n)
                    if isinstance(par, cst.AssignTarget):
                        stmt = self.parent(par)
                        if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and par.target is n:
                            inner = self.dtype_of_expr(stmt.value, stmt, depth + 1)
                            return DType(text, inner.name, inner.size, inner.assumptions,
                                         inner.assumed_size, inner.assumed_name)
            return DType(text, None, None)
        raise NoFix(f"dtype expression `{text}` is not a string, a dtype attribute or a name")

    def pointer(self, arg: cst.Arg, call: cst.Call, call_dtype: Optional[cst.Arg]) -> Pointer:
        v = arg.value
        buf = None
        if not (isinstance(v, cst.Name) or (isinstance(v, cst.Attribute) and v.attr.value == "data"
                                            and isinstance(v.value, cst.Name))):
            raise NoFix(f"the data pointer `{self.node_text(v)}` is not a buffer's `.data` or a name: "
                        "tvm_access_ptr takes the buffer's data Var")
        routed = self.through_callers(arg, call)
        if routed is not None:
            return routed
        if isinstance(v, cst.Attribute) and v.attr.value == "data" and isinstance(v.value, cst.Name):
            buf = v.value.value
            found = self.declaration_of(call, buf)
            if found is not None:
                ctx_node, decl = found
                dexpr, fname = self.decl_dtype_expr(decl)
                if dexpr is None:
                    d = self.declared_default(fname, buf)
                    return Pointer(arg, buf, DType(f'"{d}"', d, self.rules.dtype_size(d)))
                dt = self.dtype_of_expr(dexpr, ctx_node)
                if not self.same_binding(ctx_node, call, dexpr):
                    # the declaration's dtype expression means something else here
                    if dt.name is None:
                        raise NoFix(f"the dtype of `{buf}` (`{dt.text}`) is not visible at the call")
                    dt = DType(f'"{dt.name}"', dt.name, dt.size)
                return Pointer(arg, buf, dt)
        # no declaration visible: fall back to the call's dtype
        what = f"`{buf}`" if buf else f"`{self.node_text(v)}`"
        if call_dtype is None:
            raise NoFix(f"no declaration of {what} is visible and the call has no dtype")
        dt = self.dtype_of_expr(call_dtype.value, call)
        dt.assumptions = dt.assumptions + [
            f"no declaration of {what} is visible; its element type is assumed to be the call's dtype "
            f"{self.node_text(call_dtype.value)}"
        ]
        return Pointer(arg, buf, dt)

    def through_callers(self, arg: cst.Arg, call: cst.Call) -> Optional[Pointer]:
        """A pointer that is a T.macro's parameter, typed by the buffers the macro's calls pass (callers.py).

        None when the pointer is not a macro parameter or no call of the macro is visible (then the
        declaration or the call's dtype decides, with its assumption)."""
        from .callers import param_route

        v = arg.value
        data = isinstance(v, cst.Attribute)
        name = v.value.value if data else v.value
        route = param_route(self, call, name, set(self.rules.shared_memory.get("functions", {}).get("macro", [])))
        if route is None or route.why_unknown or not route.bindings:
            return None
        macro = route.macro.name.value
        seen = []
        for b in route.bindings:
            e = b.expr
            line = self.pos(b.site).start.line
            if data and isinstance(e, cst.Name):
                bufname = e.value
            elif not data and isinstance(e, cst.Attribute) and e.attr.value == "data" and isinstance(e.value, cst.Name):
                bufname = e.value.value
            else:
                raise NoFix(f"the call of macro `{macro}` at line {line} passes `{self.node_text(e)}` for `{name}`, "
                            "not a buffer whose declaration the tool can read")
            found = self.declaration_of(b.site, bufname)
            if found is None:
                raise NoFix(f"the call of macro `{macro}` at line {line} passes `{bufname}` for `{name}`, and no "
                            "single declaration of it is visible there")
            dexpr, fname = self.decl_dtype_expr(found[1])
            if dexpr is None:
                dn = self.declared_default(fname, bufname)
                dt = DType(f'"{dn}"', dn, self.rules.dtype_size(dn))
            else:
                dt = self.dtype_of_expr(dexpr, found[0])
            if dt.name is None:
                raise NoFix(f"the call of macro `{macro}` at line {line} passes `{bufname}`, whose dtype "
                            f"`{dt.text}` is not known inside the macro")
            seen.append((dt, bufname, line, found[1]))
        kinds = {dt.name for dt, _, _, _ in seen}
        sizes = {dt.size for dt, _, _, _ in seen}
        if len(sizes) > 1 or len(kinds) > 1:
            listing = ", ".join(f"`{b}` ({dt.name}, line {ln})" for dt, b, ln, _ in seen)
            raise NoFix(f"the calls of macro `{macro}` pass buffers of different element types for `{name}`: "
                        f"{listing}; one rewrite cannot serve them all")
        dt0 = seen[0][0]
        d = DType(f'"{dt0.name}"', dt0.name, dt0.size)
        if route.public:
            d.assumptions.append(f"only the calls of macro `{macro}` in this file pass `{name}` (another file could "
                                 "import the macro and pass another buffer)")
        note = ""
        ann = route.param.annotation
        if data and ann is not None:
            try:
                aexpr, _ = self.decl_dtype_expr(ann.annotation)
                adt = self.dtype_of_expr(aexpr, route.param) if aexpr is not None else None
            except NoFix:
                adt = None
            if adt is not None and adt.name is not None and adt.size != dt0.size:
                note = (f"; the annotation of `{name}` says {adt.name}, but every call of `{macro}` passes "
                        f"{dt0.name}: the calls decide")
        return Pointer(arg, name if data else None, d, routed_decls=[x[3] for x in seen], note=note)

    def destination(self, ptr: Pointer, call: cst.Call, call_dtype: cst.Arg) -> Pointer:
        """The destination's pointer type under the legacy lowering's own addressing.

        A legacy destination offset counts elements of the buffer's type, except in merged dynamic
        shared memory, where it counts elements of the call's dtype (``smem.py``).  The question
        only arises when the two types differ.
        """
        if ptr.routed_decls:
            found = (call, ptr.routed_decls[0])  # the buffer the macro's calls pass
            if any(not self._same_decl_scope(d, ptr.routed_decls[0]) for d in ptr.routed_decls[1:]):
                raise NoFix("the calls of the macro pass destination buffers of different storage scopes")
        else:
            found = self.declaration_of(call, ptr.buffer) if ptr.buffer else None
        if found is None or (ptr.dtype.assumptions and not ptr.routed_decls):
            return ptr  # no declaration: the call's dtype is already the pointer type (an assumption)
        try:
            cdt = self.dtype_of_expr(call_dtype.value, call)
        except NoFix:
            cdt = None
        if cdt is not None and self._same_type(ptr.dtype, cdt, found[0], call_dtype.value, call):
            return ptr
        if self._smem is None:
            from .smem import SharedMemory

            self._smem = SharedMemory(self)
        reading = self._smem.reading(call, found[1])
        buf_t = ptr.dtype.name or ptr.dtype.text
        call_t = self.node_text(call_dtype.value)
        if reading.merged is None:
            raise NoFix(
                f"the destination's offset counts elements of the call's dtype {call_t} if TileLang 0.1.7.post1 "
                f"merged this kernel's dynamic shared memory (two or more used shared.dyn buffers), and of "
                f"`{ptr.buffer}`'s own type {buf_t} if not; the text does not decide it: {reading.why}")
        if not reading.merged:
            ptr.dtype.assumptions = ptr.dtype.assumptions + reading.assumptions
            return ptr
        if cdt is None:
            raise NoFix(f"`{ptr.buffer}` sits in merged shared memory ({reading.why}), so its offset counts elements "
                        f"of the call's dtype `{call_t}`, which is not a known dtype")
        cdt.assumptions = cdt.assumptions + reading.assumptions
        return Pointer(ptr.arg, ptr.buffer, cdt, retyped=True, why=reading.why, routed_decls=ptr.routed_decls)

    def _same_decl_scope(self, a, b) -> bool:
        from .smem import SharedMemory

        if self._smem is None:
            self._smem = SharedMemory(self)
        return self._smem.scope_of_declaration(a) == self._smem.scope_of_declaration(b)

    def _same_type(self, a: DType, b: DType, a_at, b_expr, b_at) -> bool:
        """Pointer arithmetic in ``a`` and in ``b`` moves by the same bytes, whatever their values."""
        if a.size is not None and b.size is not None:
            return a.size == b.size
        return a.text == b.text and self.same_binding(a_at, b_at, b_expr)

    # ---------------------------------------------------------------- emitting

    def own_alias(self, call: cst.Call) -> Optional[str]:
        """The name the call itself spells tilelang.language with (``TL`` in ``TL.ptx_cp_async``), when
        it is a module-level import of it seen unchanged at the call: a file with two aliases keeps
        each call's own."""
        f = call.func
        if not (isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name)):
            return None
        name = f.value.value
        if self.qnames(f.value) != {self.rules.emit_module} or not self._global_binding_is_import(name) or \
                not self.alias_visible_at(name, call):
            return None
        return name

    def emit_alias(self) -> str:
        """Name bound to tilelang.language at module level, adding an import if needed."""
        if self._emit_alias is not None:
            return self._emit_alias
        want = self.rules.emit_module
        alias = None
        last_import_end = None
        body = self.module.body
        i = 0
        if body and _is_docstring(body[0]):
            last_import_end = self.pos(body[0]).end.line
            i = 1
        while i < len(body):
            stmt = body[i]
            if not (isinstance(stmt, cst.SimpleStatementLine) and all(
                    isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)):
                break
            last_import_end = self.pos(stmt).end.line
            i += 1
        for stmt in body:
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for s in stmt.body:
                if isinstance(s, cst.Import):
                    for n in s.names:
                        full = _dotted(n.name)
                        if full == want:
                            alias = n.asname.name.value if n.asname else want
                elif isinstance(s, cst.ImportFrom) and s.module is not None and not s.relative:
                    mod = _dotted(s.module)
                    if isinstance(s.names, cst.ImportStar):
                        continue
                    for n in s.names:
                        if f"{mod}.{_dotted(n.name)}" == want:
                            alias = n.asname.name.value if n.asname else _dotted(n.name)
        if alias is not None and self._global_binding_is_import(alias.split(".")[0]):
            self._emit_alias = alias
            return alias
        # add an import
        name = self.rules.emit_alias
        if self._globally_bound(name):
            base = name = self.rules.emit_fallback_alias
            k = 2
            while self._globally_bound(name):
                name = f"{base}{k}"
                k += 1
        stmt_text = f"import {want} as {name}{self.newline}"
        if last_import_end is None:
            off = 0
            # keep a shebang / encoding cookie first
            while off < len(self.text) and self.text.startswith("#", off):
                nl = self.text.find("\n", off)
                if nl == -1:
                    break
                off = nl + 1
        else:
            off = self.starts[last_import_end] if last_import_end < len(self.starts) else len(self.text)
            if off == len(self.text) and not self.text.endswith("\n"):
                stmt_text = self.newline + stmt_text.rstrip("\r\n")
        self._import_edit = Edit(off, off, stmt_text)
        self._emit_alias = name
        return name

    # ---------------------------------------------------------------- 0.1.9 helpers

    def const_int(self, name: cst.Name, at: cst.CSTNode, depth: int = 0) -> Optional[int]:
        """Value of a name bound exactly once (not a parameter) to integer arithmetic on constants."""
        if depth > 8:
            return None
        asgs = self.assignments(at, name.value)
        if len(asgs) != 1:
            return None
        (asg,) = asgs
        if not isinstance(asg, Assignment) or isinstance(asg.node, cst.Param):
            return None
        n = asg.node
        par = self.parent(n)
        value = None
        if isinstance(par, cst.AssignTarget):
            stmt = self.parent(par)
            if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1:
                value = stmt.value
        elif isinstance(par, cst.Element):
            tup = self.parent(par)
            tgt = self.parent(tup)
            if isinstance(tup, (cst.Tuple, cst.List)) and isinstance(tgt, cst.AssignTarget):
                stmt = self.parent(tgt)
                idx = [e for e in tup.elements].index(par)
                if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and \
                        isinstance(stmt.value, (cst.Tuple, cst.List)) and len(stmt.value.elements) == len(tup.elements):
                    value = stmt.value.elements[idx].value
        if value is None:
            return None
        return self._eval_int(value, value, depth + 1)  # names in the value mean what they mean there

    def _eval_int(self, e: cst.BaseExpression, at: cst.CSTNode, depth: int) -> Optional[int]:
        iv = _int_value(e)
        if iv is not None:
            return iv
        if isinstance(e, cst.Name):
            return self.const_int(e, at, depth)
        if isinstance(e, cst.BinaryOperation):
            a = self._eval_int(e.left, at, depth)
            b = self._eval_int(e.right, at, depth)
            if a is None or b is None:
                return None
            op = e.operator
            if isinstance(op, cst.Add):
                return a + b
            if isinstance(op, cst.Subtract):
                return a - b
            if isinstance(op, cst.Multiply):
                return a * b
            if isinstance(op, cst.FloorDivide) and b:
                return a // b
        return None

    def buffer_style_problem(self, ptr: Pointer, call: cst.Call, parg: cst.Arg, oarg: cst.Arg,
                             scaled: Optional[str]) -> Optional[str]:
        """Why ``T.access_ptr(buf[off], ...)`` would not be exact here (None when it is)."""
        if ptr.buffer is None:
            return "the pointer is not `<buffer>.data`"
        if scaled is not None:
            return "its offset is rescaled to the other pointer's type"
        found = self.declaration_of(call, ptr.buffer)
        if found is None:
            return f"no declaration of `{ptr.buffer}` is visible"
        ndim = self.decl_ndim(found[1])
        if ndim != 1:
            return (f"`{ptr.buffer}` has {ndim if ndim else 'an unknown number of'} dimension(s); "
                    "a flat offset is an index only of a one-dimensional buffer")
        if ptr.dtype.assumptions:
            return "its element type rests on an assumption"
        if ptr.retyped:
            return "its offset counts elements of the call's dtype, not of the buffer's"
        _, pe = self.vspan(parg.value)
        os_, _ = self.vspan(oarg.value)
        if "#" in self.text[pe:os_]:
            return "a comment sits between the pointer and the offset"
        return None

    def decl_ndim(self, decl: cst.BaseExpression) -> Optional[int]:
        shape = None
        if isinstance(decl, cst.Subscript):
            vals = [e.slice.value for e in decl.slice if isinstance(e.slice, cst.Index)]
            shape = vals[0] if vals else None
        elif isinstance(decl, cst.Call):
            fname = self.decl_function(decl.func)
            pos = 1 if fname == "match_buffer" else 0
            positional = [a for a in decl.args if a.keyword is None]
            kw = [a for a in decl.args if a.keyword is not None and a.keyword.value == "shape"]
            if kw:
                shape = kw[0].value
            elif len(positional) > pos:
                shape = positional[pos].value
        if shape is None:
            return None
        if isinstance(shape, (cst.Tuple, cst.List)):
            return len(shape.elements)
        if isinstance(shape, (cst.Integer, cst.Name, cst.BinaryOperation)):
            return 1
        return None

    def access_pointer_dtype(self, expr: cst.BaseExpression, call: cst.Call) -> DType:
        """Pointer type of a new-form argument: tvm_access_ptr(type_annotation(P), ...) or access_ptr(buf[i], ...)."""
        if not isinstance(expr, cst.Call):
            raise NoFix(f"`{self.node_text(expr)}` is not an access pointer")
        names = {q.rpartition(".")[2] for q in self.qnames(expr.func)
                 if q.rpartition(".")[0] in (self.tl_modules | self.tvm_modules)}
        g = self.target
        if g.access_ptr in names and expr.args:
            ta = expr.args[0].value
            if isinstance(ta, cst.Call) and ta.args and g.type_annotation in {
                    q.rpartition(".")[2] for q in self.qnames(ta.func)}:
                return self.dtype_of_expr(ta.args[0].value, call)
            raise NoFix(f"the pointer type of `{self.node_text(expr)}` is not a type_annotation")
        if g.buffer_access_ptr and g.buffer_access_ptr in names and expr.args:
            sub = expr.args[0].value
            if isinstance(sub, cst.Subscript) and isinstance(sub.value, cst.Name):
                found = self.declaration_of(call, sub.value.value)
                if found is not None:
                    dexpr, _ = self.decl_dtype_expr(found[1])
                    if dexpr is not None:
                        return self.dtype_of_expr(dexpr, found[0])
            raise NoFix(f"the buffer behind `{self.node_text(expr)}` has no visible dtype")
        raise NoFix(f"`{self.node_text(expr)}` is not an access pointer")

    def new_form_parts(self, node: cst.Call):
        pos = [a for a in node.args if a.keyword is None]
        byname = {a.keyword.value: a for a in node.args if a.keyword is not None}
        names_size = {g.python_params[2] for g in self.rules.generations[1:]}
        if len(pos) < 2:
            raise NoFix("the access pointers are not positional")
        size = pos[2] if len(pos) > 2 else next((byname[k] for k in names_size if k in byname), None)
        if size is None:
            raise NoFix("no size argument")
        dst = self.access_pointer_dtype(pos[0].value, node)
        src = self.access_pointer_dtype(pos[1].value, node)
        return dst, src, size

    def convert_new(self, node: cst.Call) -> Optional[Fix]:
        """--from: convert the size argument of an access-pointer call between generations."""
        src_meaning = self.opts.source.size_meaning
        dst_meaning = self.target.size_meaning
        if src_meaning == dst_meaning:
            return None
        dst, src, size = self.new_form_parts(node)
        for d in (dst, src):
            if d.size is None:
                raise NoFix(f"the element size of `{d.text}` is not known from the text")
        if dst.size != src.size:
            raise NoFix(f"the pointer types {dst.name} and {src.name} differ in width; "
                        f"{self.target.name} needs both pointers in one type")
        k = dst.size
        value = _int_value(size.value)
        if value is None:
            raise NoFix(f"the size `{self.node_text(size.value)}` is not an integer literal")
        if src_meaning == "bytes":
            if value % k:
                raise NoFix(f"{value} bytes is not a whole number of {dst.name} elements")
            new, nbytes = value // k, value
        else:
            new, nbytes = value * k, value * k
        if nbytes not in self.target.widths:
            raise NoFix(f"the copy is {nbytes} bytes, not a cp.async width")
        vs, ve = self.vspan(size.value)
        as_, _ = self.span(size)
        edits = [Edit(as_ if size.keyword is not None else vs, ve, str(new))]
        steps = self.rules.steps(self.opts.source.name, self.target.name)
        return Fix(edits, Applicability.SAFE, [], steps)

    def size_warning(self, node: cst.Call) -> Optional[str]:
        """CPA005: a three/four-argument call whose size reads wrong under the target."""
        try:
            dst, src, size = self.new_form_parts(node)
        except NoFix:
            return None
        value = _int_value(size.value)
        if value is None or dst.size is None or src.size is None:
            return None
        g = self.target
        widths = "/".join(map(str, g.widths))
        if g.size_meaning == "num_elems":
            if dst.size != src.size:
                return (f"the pointer types {dst.name} and {src.name} differ in width; {g.name} derives the copy "
                        f"width from each side and needs them equal")
            if value * dst.size not in g.widths:
                hint = ""
                if value in g.widths and value % dst.size == 0:
                    hint = (f"; if it was written for 0.1.8 with a byte count, run with --from 0.1.8 to convert it "
                            f"to {value // dst.size} elements")
                return (f"size {value} means {value} {dst.name} elements = {value * dst.size} bytes under {g.name}, "
                        f"not a cp.async width ({widths}){hint}")
            return None
        for d in (dst, src):
            if value % d.size:
                return f"size {value} bytes is not a whole number of {d.name} elements of its access pointer"
        if value not in g.widths:
            return f"size {value} bytes is not a cp.async width ({widths}) under {g.name}"
        return None

    def _globally_bound(self, name: str) -> bool:
        scope = self.md(ScopeProvider, self.module)
        try:
            return bool(scope[name]) if scope is not None else False
        except Exception:  # noqa: BLE001
            return False

    def _global_binding_is_import(self, name: str) -> bool:
        scope = self.md(ScopeProvider, self.module)
        if scope is None:
            return False
        asgs = scope[name]
        return bool(asgs) and all(
            isinstance(a, Assignment) and isinstance(a.node, (cst.Import, cst.ImportFrom)) for a in asgs)

    def alias_visible_at(self, alias: str, node: cst.CSTNode) -> bool:
        head = alias.split(".")[0]
        mod_scope = self.md(ScopeProvider, self.module)
        return set(self.assignments(node, head)) == set(mod_scope[head]) if mod_scope else False

    def rewrite(self, node: cst.Call, switch_callee: bool = False) -> tuple[Fix, str]:
        bound = self.bind_legacy(node)
        p = self.legacy.python_params
        k_dtype, k_dptr, k_doff, k_sptr, k_soff, k_bytes = p
        call_dtype = bound[k_dtype]
        dst = self.destination(self.pointer(bound[k_dptr], node, call_dtype), node, call_dtype)
        src = self.pointer(bound[k_sptr], node, call_dtype)
        size_arg = bound[k_bytes]
        nbytes = _int_value(size_arg.value)
        assumptions: list[str] = []
        steps = self.rules.steps(self.legacy.name, self.target.name)
        to_elems = self.target.size_meaning == "num_elems"

        d_off_new = s_off_new = None  # replacements for offsets (divided), when any

        if to_elems:
            # one common pointer type; both sizes must be known, or both pointers typed by one expression
            # with a default (a factory's `dtype`): the literal count then rests on that default
            if dst.dtype.size is None and src.dtype.size is None and dst.dtype.text == src.dtype.text and \
                    dst.dtype.assumed_size is not None:
                d = dst.dtype
                assumptions.append(f"`{d.text}` keeps its default {d.assumed_name} ({d.assumed_size}-byte elements): "
                                   f"{self.target.name} needs the element count as an integer literal")
                dst = _replace(dst, dtype=DType(d.text, d.assumed_name, d.assumed_size, list(d.assumptions)))
                src = _replace(src, dtype=DType(d.text, d.assumed_name, d.assumed_size,
                                                           list(src.dtype.assumptions)))
            for ptr in (dst, src):
                if ptr.dtype.size is None:
                    raise NoFix(f"the element size of `{ptr.dtype.text}` is not known from the text; "
                                f"{self.target.name} needs the element count as an integer literal")
            if nbytes is None:
                raise NoFix(f"the byte count `{self.node_text(size_arg.value)}` is not an integer literal; "
                            f"{self.target.name} needs num_elems as an integer literal")
            if dst.dtype.size != src.dtype.size:
                # One pointer type for both sides.  The wider type keeps every offset in bounds of its
                # own buffer (TileLang checks access-pointer offsets against the buffer's element count,
                # so a byte view of a wide tensor with scaled offsets is guarded out); the narrow side's
                # offset is divided exactly, which needs it to be a visible multiple of the ratio.
                narrow, wide = (dst, src) if dst.dtype.size < src.dtype.size else (src, dst)
                ratio = wide.dtype.size // narrow.dtype.size
                k_off = k_doff if narrow is dst else k_soff
                off_node = bound[k_off].value
                if not _divisible(off_node, ratio, lambda n: self.const_int(n, node)):
                    raise NoFix(
                        f"`{narrow.buffer}` ({narrow.dtype.name}) and `{wide.buffer}` ({wide.dtype.name}) differ in "
                        f"width and {self.target.name} needs one pointer type; addressing `{narrow.buffer}` as "
                        f"{wide.dtype.name} needs its offset `{self.node_text(off_node)}` to be a multiple of {ratio}, "
                        "which the text does not show")
                divided = _divide(off_node, self.node_text, ratio)
                if narrow is dst:
                    d_off_new = divided
                else:
                    s_off_new = divided
                widened = Pointer(narrow.arg, narrow.buffer, DType(wide.dtype.text, wide.dtype.name, wide.dtype.size,
                                                                   list(narrow.dtype.assumptions)),
                                  retyped=narrow.retyped, why=narrow.why)
                if narrow is dst:
                    dst = widened
                else:
                    src = widened
            k = dst.dtype.size
            if nbytes % k:
                raise NoFix(f"{nbytes} bytes is not a whole number of {dst.dtype.name} elements")
            if nbytes not in self.target.widths:
                raise NoFix(f"{nbytes} bytes is not a cp.async width ({'/'.join(map(str, self.target.widths))})")
            n_common = nbytes // k
        for ptr in (dst, src):
            assumptions.extend(ptr.dtype.assumptions)

        T = self.own_alias(node) or self.emit_alias()

        def extent(ptr: Pointer) -> str:
            size = ptr.dtype.size
            if size is None and nbytes is not None and self.target.dtype_bits and not ptr.dtype.assumptions:
                # the element count as an expression TileLang evaluates when it builds the kernel, exact
                # whatever the factory passes (rules: the generation's `dtype_bits`), where the text decides
                # the pointer type (no fallback to the call's dtype)
                bits = self.target.dtype_bits.format(T=T, dtype=ptr.dtype.text)
                widest = max(self.rules.dtype_sizes.values())
                if nbytes % widest:
                    assumptions.append(f"`{ptr.dtype.text}` is a type whose elements divide {nbytes} bytes")
                return f"{nbytes} * 8 // {bits}"
            if size is None:
                if ptr.dtype.assumed_size is None:
                    raise NoFix(f"the element size of `{ptr.dtype.text}` is not known from the text "
                                "(give it a default or a literal dtype)")
                size = ptr.dtype.assumed_size
                assumptions.append(f"`{ptr.dtype.text}` keeps its default {ptr.dtype.assumed_name} "
                                   f"({size}-byte elements) for the access pointer's extent")
            if nbytes is not None:
                if nbytes % size:
                    raise NoFix(f"{nbytes} bytes is not a whole number of {ptr.dtype.name or ptr.dtype.text} elements")
                return str(nbytes // size)
            stext = self.node_text(size_arg.value)
            if size == 1:
                return stext
            if size >= 8:
                assumptions.append(f"the byte count `{stext}` is a multiple of {size}")
            return f"{stext} // {size}" if _is_atom(size_arg.value) else f"({stext}) // {size}"

        n_dst = extent(dst)
        n_src = extent(src)
        if not self.alias_visible_at(T, node) and self._import_edit is None:
            raise NoFix(f"`{T}` (tilelang.language) is shadowed at this call")
        g = self.target
        before = {
            k_dptr: f"{T}.{g.access_ptr}({T}.{g.type_annotation}({dst.dtype.text}), ",
            k_sptr: f"{T}.{g.access_ptr}({T}.{g.type_annotation}({src.dtype.text}), ",
        }
        after = {k_doff: f", {n_dst}, {g.dst_rw_mask})", k_soff: f", {n_src}, {g.src_rw_mask})"}
        replace = {k: v for k, v in ((k_doff, d_off_new), (k_soff, s_off_new)) if v is not None}
        merge: dict = {}
        note_extra = ""
        if self.opts.style == "access_ptr" and g.buffer_access_ptr:
            for ptr, kp, ko, rw, n in ((dst, k_dptr, k_doff, g.dst_rw, n_dst), (src, k_sptr, k_soff, g.src_rw, n_src)):
                why = self.buffer_style_problem(ptr, node, bound[kp], bound[ko], replace.get(ko))
                if why:
                    note_extra += f"; --style access_ptr not used for `{self.node_text(ptr.arg.value)}`: {why}"
                    continue
                before[kp] = f"{T}.{g.buffer_access_ptr}({ptr.buffer}["
                after[ko] = f'], "{rw}", {n})'
                merge[kp] = ko  # the text between the pointer and the offset goes away
        if to_elems:
            replace[k_bytes] = str(n_common)
        edits = self.layout_edits(
            node, bound,
            order=[k_dptr, k_doff, k_sptr, k_soff, k_bytes],
            drop=k_dtype, before=before, after=after, replace=replace, merge=merge,
        )
        if switch_callee:
            fs, fe = self.vspan(node.func)
            edits.append(Edit(fs, fe, f"{T}.{INTRINSIC}"))
            steps = ["tvm->tilelang"] + steps
        edits = layout.lay_out(self, node, edits)  # the new call laid out like the file (python/layout.py)
        if self._import_edit is not None:
            # every fix that needs the import carries the same edit; the engine applies it once
            edits.append(self._import_edit)
        assumptions = list(dict.fromkeys(assumptions))
        applic = Applicability.UNSAFE if assumptions else Applicability.SAFE
        note = ""
        if assumptions:
            note = f" (unsafe fix: rests on {len(assumptions)} assumption(s))"
        note += dst.note + src.note
        if dst.retyped:
            note += (f"; the destination's offset counts elements of the call's dtype "
                     f"{self.node_text(call_dtype.value)} (merged shared memory: {dst.why})")
        note += note_extra
        return Fix(edits, applic, assumptions, steps), note

    def layout_edits(self, node: cst.Call, bound: dict[str, cst.Arg], order: Sequence[str], drop: str,
                     before: dict, after: dict, replace: dict, merge: Optional[dict] = None) -> list[Edit]:
        """Edits that turn the legacy argument list into the new one.

        ``before``/``after``: text inserted around an argument's value;
        ``replace``: new text for a value; ``merge``: pointer -> offset
        pairs whose pointer value and separator are replaced by
        ``before[pointer]`` (the offset becomes an index).
        """
        merge = merge or {}
        merged_into = {v: k for k, v in merge.items()}
        args = list(node.args)
        index = {id(a): i for i, a in enumerate(args)}
        keep = [bound[k] for k in order]
        in_order = [a for a in args if a is not bound[drop]]
        edits: list[Edit] = []
        if [id(a) for a in in_order] == [id(a) for a in keep]:
            # drop the dtype argument
            di = index[id(bound[drop])]
            ds, de = self.span(args[di])
            if di + 1 < len(args):
                ns, _ = self.span(args[di + 1])
                gap = self.text[de:ns]
                if "#" in gap:
                    # keep the comment: remove only the value and its comma token
                    cs, ce = self.span(args[di].comma)
                    edits.append(Edit(ds, de, ""))
                    edits.append(Edit(cs, ce, ""))
                else:
                    edits.append(Edit(ds, ns, ""))
            else:
                prev = args[di - 1]
                _, pe = self.span(prev)
                gap = self.text[pe:ds]
                if "#" in gap:
                    cs, ce = self.span(prev.comma)
                    edits.append(Edit(cs, ce, ""))
                    edits.append(Edit(ds, de, ""))
                else:
                    edits.append(Edit(pe, de, ""))
            for k in order:
                a = bound[k]
                vs, ve = self.vspan(a.value)
                as_, _ = self.span(a)
                if k in merge:
                    ovs, _ = self.vspan(bound[merge[k]].value)
                    edits.append(Edit(as_, ovs, before[k]))
                    continue
                if k in merged_into:
                    pass
                elif a.keyword is not None:
                    # drop `name=` (and the whitespace up to the value)
                    edits.append(Edit(as_, vs, before.get(k, "")))
                elif k in before:
                    edits.append(Edit(vs, vs, before[k]))
                if k in replace:
                    edits.append(Edit(vs, ve, replace[k]))
                if k in after:
                    edits.append(Edit(ve, ve, after[k]))
            return _merge_point_edits(edits)
        # out of order: re-emit the argument list in canonical order
        gaps = "".join(self.text[self.span(args[i])[1]:self.span(args[i + 1])[0]] for i in range(len(args) - 1))
        if "#" in gaps:
            raise NoFix("keyword arguments are out of order and comments sit between them")
        parts = []
        for k in order:
            a = bound[k]
            if k in merge:
                continue
            if k in merged_into:
                parts.append(before[merged_into[k]] + replace.get(k, self.node_text(a.value)) + after.get(k, ""))
                continue
            vtext = replace.get(k, self.node_text(a.value))
            parts.append(before.get(k, "") + vtext + after.get(k, ""))
        s, _ = self.span(args[0])
        _, e = self.span(args[-1])
        return [Edit(s, e, ", ".join(parts))]


_BUILTIN_NAMES = frozenset({"True", "False", "None"})


def _names_in(expr: cst.CSTNode) -> set[str]:
    out: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            out.add(n.value)

        def visit_Attribute(self, n: cst.Attribute):
            # only the head of a dotted name is looked up
            head = n
            while isinstance(head, cst.Attribute):
                head = head.value
            head.visit(self)
            return False

    expr.visit(V())
    return out


def _dotted(node) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return _dotted(node.value) + "." + node.attr.value
    return ""


def _is_docstring(stmt) -> bool:
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.Expr)
            and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def _divisible(node: cst.BaseExpression, r: int, const=lambda n: None) -> bool:
    """The integer expression is a multiple of ``r`` for every value of its variables.

    ``const(name_node)`` gives the value of a name bound once to an integer constant, or None.
    """
    iv = _int_value(node)
    if iv is None and isinstance(node, cst.Name):
        iv = const(node)
    if iv is not None:
        return iv % r == 0
    if isinstance(node, cst.BinaryOperation):
        if isinstance(node.operator, (cst.Add, cst.Subtract)):
            return _divisible(node.left, r, const) and _divisible(node.right, r, const)
        if isinstance(node.operator, cst.Multiply):
            return _divisible(node.left, r, const) or _divisible(node.right, r, const)
    return False


def _divide(node: cst.BaseExpression, text_of, r: int) -> str:
    """Text of ``node / r`` for an expression that ``_divisible`` accepted, simplified where it is plain."""
    iv = _int_value(node)
    if iv is not None and not node.lpar:
        return str(iv // r)
    if isinstance(node, cst.BinaryOperation) and not node.lpar:
        op = node.operator
        if isinstance(op, (cst.Add, cst.Subtract)):
            left = _divide(node.left, text_of, r)
            right = _divide(node.right, text_of, r)
            # a right operand whose quotient reads as a sum would change meaning after "-": keep it whole
            if node.right.lpar or not _is_sum(right):
                sign = "+" if isinstance(op, cst.Add) else "-"
                return f"{left} {sign} {right}"
        elif isinstance(op, cst.Multiply):
            for lit, other in ((node.right, node.left), (node.left, node.right)):
                k = _int_value(lit)
                if k is not None and k % r == 0 and not lit.lpar:
                    t = text_of(other)
                    if isinstance(other, cst.BinaryOperation) and not other.lpar and \
                            not isinstance(other.operator, (cst.Multiply, cst.FloorDivide, cst.Modulo)):
                        t = f"({t})"
                    return t if k // r == 1 else f"{t} * {k // r}"
    t = text_of(node)
    return f"{t} // {r}" if _is_atom(node) else f"({t}) // {r}"


def _is_sum(text: str) -> bool:
    return " + " in text or " - " in text


def _merge_point_edits(edits: list[Edit]) -> list[Edit]:
    """Combine edits that touch the same point so they apply in order."""
    edits = sorted(edits, key=lambda e: (e.start, e.end))
    out: list[Edit] = []
    for e in edits:
        if out and out[-1].end == e.start and (out[-1].start == out[-1].end or e.start == e.end):
            prev = out.pop()
            out.append(Edit(prev.start, e.end, prev.replacement + e.replacement))
        else:
            out.append(e)
    return out


def analyze(text: str, path: str, options: FrontEndOptions) -> Analysis:
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as e:
        return Analysis([], error=f"cannot parse: {e.message}", error_line=e.raw_line, error_column=e.raw_column + 1)
    except Exception as e:  # noqa: BLE001 - libcst raises a few other types on odd input
        return Analysis([], error=f"cannot parse: {e}")
    ctx = _Context(text, path, module, options)
    ctx.metadata = MetadataWrapper(module, unsafe_skip_copy=True).resolve_many(_PROVIDERS)
    seen = _Collector()
    module.visit(seen)
    ctx.parents = seen.parents
    for call in seen.calls:
        ctx.visit_call(call)
    from .definitions import find as find_definitions

    defs = find_definitions(ctx, INTRINSIC)
    if defs:
        # the definition's own forward to TVM's wrapper is part of the definition's site
        inside = [(d.line, d.end_line) for d in defs if d.code == "CPA006"]
        ctx.findings = [f for f in ctx.findings
                        if not (f.code == CODE_TVM and any(a <= f.line and f.end_line <= b for a, b in inside))]
    ctx.findings.extend(defs)
    ctx.findings.sort(key=lambda f: (f.line, f.column))
    return Analysis(ctx.findings)


def reparse_problem(old_text: str, new_text: str) -> Optional[str]:
    try:
        cst.parse_module(new_text)
    except cst.ParserSyntaxError as e:
        return f"the rewritten text does not parse (line {e.raw_line}: {e.message})"
    return None
