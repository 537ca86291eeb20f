"""What every check of the libcst pass reads: the module, its positions, scopes and parents, and the services.

``Context`` is one file's typed state (its text, libcst module and metadata, the run's options, what the pass
has found so far) with the questions every part asks of a node (``pos``, ``span``, ``node_text``, ``qnames``,
``parent``, ``assignments``, ...), and it holds the file's services: ``bindings`` (where a buffer, a dtype or
a constant comes from: bindings.py), ``imports`` (the alias the new text spells ``tilelang.language`` with,
and the import it may add: imports.py), ``resolver`` (which API a callee reaches: reach.py) and ``smem``
(how the legacy lowering addressed shared memory: smem.py), the last two made on first use, each typed by
its protocol in parts.py (those modules import this one).  The checks (``checks/``) are units holding the
context; nothing attaches state to it from outside.

``NoFix`` (a site that cannot be migrated, and why), ``DType`` (a resolved element type)
and ``Pointer`` (one side of a call) are the values the checks pass between them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider, QualifiedName, QualifiedNameSource, ScopeProvider

from ..findings import Finding, FrontEndOptions, line_starts
from .calls import INTRINSIC
from .cst_util import dotted
from .decide.attributes import requalified
from .parts import BindingsPart, ImportsPart, ResolverPart, SmemPart

if TYPE_CHECKING:
    from ..rules import Generation, Rules
    from .file_style import FileStyle


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
    """One file under the libcst pass: its typed state, the questions asked of its nodes, and its services."""

    text: str
    path: str
    module: cst.Module
    opts: FrontEndOptions
    rules: Rules
    target: Generation
    legacy: Generation
    starts: list  # offset of each line's start
    lines: list  # the text's lines, ends kept
    newline: str
    tl_modules: set  # TileLang's module names (rules/namespaces.toml)
    tvm_modules: set  # TVM's
    metadata: dict  # provider -> {node: value}
    parents: dict  # node -> parent node
    file_style: Optional[FileStyle]  # the whole file's style when the text is a window of it (window.py)
    findings: list  # Finding, in the order the pass makes them
    analysed: set  # the calls visit_call classified (checks/value_read.py skips their callees)
    migrated: set  # functions holding TileLang access-pointer calls (Analysis.migrated)
    # assumptions about importers of a module-level macro (importers.py answers them for the run):
    # assumption -> (macro, whether a star import binds it, the question)
    importer_questions: dict
    layout_unit: Optional[str]  # the file's indentation unit and habits (layout.py), read once
    layout_habits: Optional[tuple]
    bindings: BindingsPart  # bindings.Bindings
    imports: ImportsPart  # imports.Imports

    def __init__(self, text: str, path: str, module: cst.Module, options: FrontEndOptions):
        from .bindings import Bindings  # (they import this module: made here, typed by parts.py)
        from .imports import Imports

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
        self.metadata = {}
        self.parents = {}
        self.tl_modules = set(self.rules.tilelang_modules)
        self.tvm_modules = set(self.rules.tvm_modules)
        self.newline = "\r\n" if "\r\n" in text else "\n"
        self.file_style = None
        self.analysed = set()
        self.migrated = set()
        self.importer_questions = {}
        self.layout_unit = None
        self.layout_habits = None
        self._smem: Optional[SmemPart] = None  # made on the first call whose dtypes differ
        self._resolver: Optional[ResolverPart] = None  # made on the first call
        self._star = None  # (the module of the file's one TileLang/TVM star import, or None,), once read
        self.bindings = Bindings(self)
        self.imports = Imports(self)

    @property
    def resolver(self) -> ResolverPart:
        """Which API a callee reaches (reach.Resolver), made on first use."""
        if self._resolver is None:
            from .reach import Resolver

            self._resolver = Resolver(self, INTRINSIC)
        return self._resolver

    @property
    def smem(self) -> SmemPart:
        """How the legacy lowering addressed a destination in shared memory (smem.SharedMemory), made on first
        use."""
        if self._smem is None:
            from .smem import SharedMemory

            self._smem = SharedMemory(self)
        return self._smem

    def md(self, provider, node, default=None):
        if provider is ParentNodeProvider:
            return self.parents.get(node, default)
        return self.metadata[provider].get(node, default)

    def pos(self, node):
        return self.md(PositionProvider, node)

    def parent(self, node):
        return self.md(ParentNodeProvider, node)

    def scope_of(self, node):
        return self.md(ScopeProvider, node)

    def assignments(self, node, name: str) -> set:
        """The bindings of ``name`` that the scope of ``node`` holds (libcst's assignments); empty when none."""
        scope = self.scope_of(node)
        if scope is None:
            return set()
        try:
            return set(scope[name])
        except Exception:  # noqa: BLE001
            return set()

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
        return self.resolver.callee(func)
