"""What each part of the kernel builder offers the others: one :class:`typing.Protocol` per part.

The builder's parts recurse into each other (an expression reads a subscript, a subscript's
indices are expressions, ``T.get_thread_binding`` in an expression binds a thread), so each part
names, as a base, the protocols of the parts it calls: :class:`ExpressionPart` (``expressions.py``),
:class:`CopyPart` (``copies.py``) and :class:`StatementPart` (``statements.py``).  The state and
the questions all parts share are :class:`~.context.KernelContext`'s.  A protocol declares only;
the composed :class:`~.statements.KernelBuilder` resolves every declared method to its part
(``tests/test_verify_structure.py`` checks both).
"""
from __future__ import annotations

import ast
from typing import Optional, Protocol

from ..ir import Buffer, Expr
from .module import Scope


class ExpressionPart(Protocol):
    """``expressions.py``: Python expressions as IR expressions."""

    def expr(self, node, scope: Scope) -> Expr: ...


class CopyPart(Protocol):
    """``copies.py``: the buffer a name denotes and an indexed element (an expression may read one)."""

    def buffer_of(self, node, scope: Scope) -> Buffer: ...

    def subscript(self, node: ast.Subscript, scope: Scope): ...


class StatementPart(Protocol):
    """``statements.py``: thread bindings (an expression may bind a thread)."""

    def bind_thread(self, name, tagdim, extent: Optional[int], scope: Scope) -> list: ...
