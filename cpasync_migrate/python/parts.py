"""What the libcst pass's parts ask of the services a file's context holds, declared (``typing.Protocol``).

``context.Context`` holds four services, each a unit over the context: ``bindings`` (bindings.py), ``imports``
(imports.py), ``resolver`` (reach.py) and ``smem`` (smem.py).  They call back into the context (its node
questions, and one another through it: the bindings ask the resolver about star imports, the shared-memory
reader asks the bindings about declarations), and they import context.py for ``Context``, ``NoFix`` and
``DType``; so context.py types them by these protocols instead of importing their modules, which would make an
import cycle.  Each protocol lists what the checks and the other services call; an editor jumps from
``ctx.bindings.declaration_of`` here, and from here to the class named in the docstring.
``tests/test_python_structure.py`` checks that each class meets its protocol (the same parameters) and that
every read through the context's services is one its protocol declares.

This module imports nothing of the pass (the values it mentions: ``DType`` and ``NoFix`` of context.py,
``Reach`` of reach.py, ``Reading`` of smem.py, are named in the docstrings).
"""
from __future__ import annotations

from typing import Optional, Protocol

import libcst as cst


class BindingsPart(Protocol):
    """bindings.py's :class:`~.bindings.Bindings`: where a buffer, a dtype or a constant comes from.

    Every lookup answers only what the text decides: None (no single binding) or ``NoFix`` with the reason."""

    def declaration_of(self, at: cst.CSTNode, name: str,
                       depth: int = 0) -> Optional[tuple[cst.CSTNode, cst.BaseExpression]]:
        """The one declaration of buffer ``name`` visible at ``at``: (context node, declaration), or None."""
        ...

    def declarations_of(self, at: cst.CSTNode, name: str,
                        depth: int = 0) -> Optional[list[tuple[cst.CSTNode, cst.BaseExpression]]]:
        """Every declaration of buffer ``name`` that reaches ``at``; None when a binding is not one."""
        ...

    def no_declaration_why(self, at: cst.CSTNode, name: str) -> str:
        """Why ``declaration_of(at, name)`` found none."""
        ...

    def readings(self, decls: list, name: str) -> str:
        """``line N: `T.alloc_shared(...)`, uint8`` for each declaration."""
        ...

    def decl_dtype_expr(self, decl: cst.BaseExpression) -> tuple[Optional[cst.BaseExpression], str]:
        """(the declaration's dtype argument, or None for the declaring function's default; its name)."""
        ...

    def declared_default(self, fname: str, buf: str) -> str:
        """The dtype ``fname`` gives a buffer declared without one (``NoFix`` where it requires one)."""
        ...

    def decl_function(self, func: cst.BaseExpression) -> Optional[str]:
        """The declaration function ``func`` names (rules/namespaces.toml), or None."""
        ...

    def same_binding(self, a: cst.CSTNode, b: cst.CSTNode, expr: cst.BaseExpression) -> bool:
        """Every name in ``expr`` (evaluated at ``a``) means the same at ``b``."""
        ...

    def dtype_of_expr(self, expr: cst.BaseExpression, at: cst.CSTNode, depth: int = 0):
        """The ``DType`` a dtype expression gives, as seen at ``at``."""
        ...

    def const_int(self, name: cst.Name, at: cst.CSTNode, depth: int = 0) -> Optional[int]:
        """The value of a name bound once to integer arithmetic on constants, or None."""
        ...

    def decl_ndim(self, decl: cst.BaseExpression) -> Optional[int]:
        """The number of dimensions a declaration gives its buffer, or None."""
        ...


class ImportsPart(Protocol):
    """imports.py's :class:`~.imports.Imports`: the alias the new text spells tilelang.language with."""

    import_edit: object  # the import ``emit_alias`` added (a findings.Edit), or None

    def own_alias(self, call: cst.Call) -> Optional[str]:
        """The alias the call itself is spelled with, when it is a module-level import seen unchanged there."""
        ...

    def emit_alias(self) -> str:
        """The name bound to tilelang.language at module level, adding an import where there is none."""
        ...

    def alias_visible_at(self, alias: str, node: cst.CSTNode) -> bool:
        """``alias`` means at ``node`` what it means at module level."""
        ...


class ResolverPart(Protocol):
    """reach.py's :class:`~.reach.Resolver`: which API a callee or a read of the intrinsic reaches."""

    star: Optional[str]  # "tilelang" / "tvm": the module's star import of that namespace, else None

    def callee(self, func: cst.BaseExpression, depth: int = 0):
        """The ``Reach`` of a callee: its API, or why it may reach the intrinsic along a route not followed."""
        ...

    def api_by_name(self, func) -> Optional[str]:
        """The API ``func`` reaches by its qualified names (TileLang's before TVM's where they disagree)."""
        ...

    def module_of(self, expr: cst.BaseExpression, depth: int = 0, params: bool = False) -> Optional[str]:
        """'tilelang' / 'tvm' when ``expr`` is the module that holds the intrinsic."""
        ...

    def string_route(self, node: cst.BaseExpression) -> Optional[str]:
        """'tilelang' / 'tvm' when ``node`` looks the intrinsic up by its name in a string."""
        ...

    def is_builtin(self, func: cst.BaseExpression, name: str) -> bool:
        """``func`` is the builtin ``name``, not rebound."""
        ...


class SmemPart(Protocol):
    """smem.py's :class:`~.smem.SharedMemory`: how the legacy lowering addressed shared memory."""

    def reading(self, call: cst.Call, decl: cst.BaseExpression):
        """The ``Reading`` of the destination declared by ``decl`` in ``call``: merged or not, and why."""
        ...

    def scope_of_declaration(self, decl: cst.BaseExpression) -> tuple[Optional[str], str]:
        """The storage scope a declaration gives its buffer, or (None, why)."""
        ...
