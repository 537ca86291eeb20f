"""What every check of the libcst pass reads: the module, its positions, scopes and parents.

``Context`` holds one file's text, its libcst module and metadata, and the run's options;
``NoFix`` (a site that cannot be migrated, and why), ``DType`` (a resolved element type)
and ``Pointer`` (one side of a call) are the values the checks pass between them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider, QualifiedName, QualifiedNameSource, ScopeProvider

from ..findings import Edit, Finding, FrontEndOptions, line_starts
from .calls import INTRINSIC
from .cst_util import dotted
from .decide.attributes import requalified


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



class Context:
    """One file under the libcst pass: text, module, metadata (positions, scopes, parents), options."""

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
        # assumptions about importers of a module-level macro (importers.py answers them for the run):
        # assumption -> (macro, whether a star import binds it)
        self.importer_questions: dict = {}
        self.migrated: set = set()  # functions holding TileLang access-pointer calls (Analysis.migrated)
        self._star = None  # (the module of the file's one TileLang/TVM star import, or None,), once read

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
        """What QualifiedNameProvider gives ``node``: the names its scope resolves it to.

        A bare name nothing in the file binds (not a builtin either), in a module whose one star import
        is of TileLang's or TVM's namespace, is that module's own name (``prim_func``, ``alloc_shared``
        under ``from tilelang.language import *``): only the star import can bind it."""
        scope = self.md(ScopeProvider, node)
        names = scope.get_qualified_names_for(node) if scope is not None else set()
        if not names and isinstance(node, cst.Name) and scope is not None:
            mod = self.star_module()
            if mod is not None:
                try:
                    bound = bool(scope[node.value])
                except Exception:  # noqa: BLE001
                    bound = True
                if not bound:
                    return {QualifiedName(f"{mod}.{node.value}", QualifiedNameSource.IMPORT)}
        shadows = self.rules.attributes
        if names and shadows and scope is not None:
            names = self._through_attributes(node, names, scope, shadows)
        return names

    def _through_attributes(self, node, names: set, scope, shadows: dict) -> set:
        """Imported names followed attribute by attribute (``decide/attributes.py``): libcst joins
        ``import a.b.c as X`` + ``X.f`` into ``a.b.c.f`` whatever ``a.b``'s attribute ``c`` is; the root
        name's import says which part was found by its path (an ``import``'s top-level package, a
        ``from M import``'s ``M``)."""
        root = node
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name):
            return names
        try:
            assignments = scope[root.value]
        except Exception:  # noqa: BLE001
            return names
        paths = set()
        for a in assignments:
            imp = getattr(a, "node", None)
            if isinstance(imp, cst.Import):
                paths.add(None)  # the top-level package of the name itself
            elif isinstance(imp, cst.ImportFrom) and not imp.relative and imp.module is not None:
                paths.add(dotted(imp.module))
        if not paths:
            return names
        out = set()
        for q in names:
            if q.source is not QualifiedNameSource.IMPORT:
                out.add(q)
                continue
            for path in paths:
                base = q.name.split(".")[0] if path is None else path
                out.add(QualifiedName(requalified(q.name, base, shadows), q.source))
        return out

    def star_module(self) -> Optional[str]:
        """The module of the file's one star import when it is TileLang's or TVM's (``from tilelang.language
        import *``); None when there is none, it is another module's, or the file has several (then a bare
        name may come from either)."""
        if self._star is None:
            stars = []
            for stmt in self.module.body:
                if isinstance(stmt, cst.SimpleStatementLine):
                    for x in stmt.body:
                        if isinstance(x, cst.ImportFrom) and isinstance(x.names, cst.ImportStar):
                            stars.append(None if x.module is None or x.relative else dotted(x.module))
            mod = stars[0] if len(stars) == 1 else None
            self._star = (mod if mod in self.tl_modules or mod in self.tvm_modules else None,)
        return self._star[0]

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

    def which_api(self, func: cst.BaseExpression):
        """The API the callee reaches (reach.py): a Reach with api "tilelang", "tvm" or None."""
        if self._resolver is None:
            from .reach import Resolver

            self._resolver = Resolver(self, INTRINSIC)
        return self._resolver.callee(func)
