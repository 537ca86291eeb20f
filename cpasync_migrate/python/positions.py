"""One cheap rendering of a libcst module: every node's position (the ranges libcst's PositionProvider
gives), and, as the ``WALK`` switch allows, every node's parent and the nodes the checks start from.

libcst's PositionProvider renders the module with a state that splits every token on line breaks and
builds two position objects for every node; this state does the same bookkeeping in plain integers
(a token without ``\\r`` or ``\\n`` only moves the column) and builds a ``CodeRange`` only for the nodes
the checks ask about.  The rules are libcst's own, kept step for step: a node's range is where its
rendering starts and ends, a node that records a syntactic position (``record_syntactic_position``)
gets that one, with the start or end taken from the child it names, and a range once recorded is not
overwritten.

The same rendering also records each node's parent (the node whose rendering renders it) and the
calls, attributes named like the intrinsic, subscripts and ``from`` imports in the order they are
rendered, which is what a libcst visit (``rewrite._Collector``) gives them: every node renders the
children it visits, and the expressions among them in the order it visits them (libcst's visit
differs from its rendering only in the order of whitespace leaves, such as an ``as`` name's).
A libcst visit rebuilds every node it passes; the rendering builds nothing.

Switches: ``ENABLED`` (environment ``CPASYNC_MIGRATE_FAST_POSITIONS=0``: libcst's PositionProvider)
and ``WALK`` (``CPASYNC_MIGRATE_RENDER_WALK=0``: parents and nodes from ``rewrite._Collector``'s
visit).  ``tests/test_bigfile.py`` checks that both ways give every node of every Python file of the
project (fixtures, kernels, the package's own source) the same range, the same parent and the same
lists in the same order, and that the tool's output is the same with the switches on and off.
"""
from __future__ import annotations

import os
import re

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst._position import CodePosition, CodeRange

from .calls import INTRINSIC

ENABLED = os.environ.get("CPASYNC_MIGRATE_FAST_POSITIONS", "1") != "0"
WALK = os.environ.get("CPASYNC_MIGRATE_RENDER_WALK", "1") != "0"

_NEWLINE_RE = re.compile(r"\r\n?|\n")  # libcst's position provider's line breaks


def note(lists, node) -> None:
    """File ``node`` where the checks start from: ``lists.calls`` (every call, in document order),
    ``.attributes`` (those named like the intrinsic), ``.subscripts``, ``.import_froms``."""
    t = type(node)
    if t is cst.Call:
        lists.calls.append(node)
    elif t is cst.Attribute:
        if node.attr.value == INTRINSIC:
            lists.attributes.append(node)
    elif t is cst.Subscript:
        lists.subscripts.append(node)
    elif t is cst.ImportFrom:
        lists.import_froms.append(node)


class _Syntactic:
    """``record_syntactic_position``'s context: the range of the code rendered inside it."""

    __slots__ = ("state", "node", "start_node", "end_node", "line", "column")

    def __init__(self, state, node, start_node, end_node):
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self):
        self.line, self.column = self.state.line, self.state.column

    def __exit__(self, *exc):
        st = self.state
        computed = st.computed
        sl, sc = (self.line, self.column) if self.start_node is None else computed[self.start_node][:2]
        el, ec = (st.line, st.column) if self.end_node is None else computed[self.end_node][2:]
        computed[self.node] = (sl, sc, el, ec)
        return False


class _State(CodegenState):
    """A rendering that records each node's (start line, start column, end line, end column).

    libcst's ``_codegen`` calls its hooks: add_token, add_indent_tokens, before_codegen, after_codegen and
    record_syntactic_position."""

    def __init__(self, module: cst.Module):
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.computed: dict = {}
        self.line = 1
        self.column = 0
        self._stack: list = []

    def _moved(self, value: str) -> None:
        if "\n" in value or "\r" in value:
            segments = _NEWLINE_RE.split(value)
            self.line += len(segments) - 1
            self.column = len(segments[-1])
        else:
            self.column += len(value)

    def add_indent_tokens(self) -> None:
        self.tokens.extend(self.indent_tokens)
        for token in self.indent_tokens:
            self._moved(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self._moved(value)

    def before_codegen(self, node) -> None:
        self._stack.append((self.line, self.column))

    def after_codegen(self, node) -> None:
        sl, sc = self._stack.pop()
        if node not in self.computed:
            self.computed[node] = (sl, sc, self.line, self.column)

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        return _Syntactic(self, node, start_node, end_node)


class _WalkState(_State):
    """The rendering that also records parents and the nodes the checks start from."""

    def __init__(self, module: cst.Module):
        super().__init__(module)
        self.parents: dict = {}
        self.calls: list = []
        self.attributes: list = []
        self.subscripts: list = []
        self.import_froms: list = []
        self._nodes: list = []

    def before_codegen(self, node) -> None:
        self._stack.append((self.line, self.column))
        if self._nodes:
            self.parents[node] = self._nodes[-1]
        self._nodes.append(node)
        note(self, node)

    def after_codegen(self, node) -> None:
        self._nodes.pop()
        sl, sc = self._stack.pop()
        if node not in self.computed:
            self.computed[node] = (sl, sc, self.line, self.column)


class Positions:
    """node -> CodeRange, as libcst's ``PositionProvider`` maps them (made on the first ask of each node)."""

    def __init__(self, module: cst.Module, state: "_State" = None):
        if state is None:
            state = _State(module)
            module._codegen(state)
        self._raw = state.computed
        self._made: dict = {}

    def get(self, node, default=None):
        r = self._made.get(node)
        if r is None:
            raw = self._raw.get(node)
            if raw is None:
                return default
            r = self._made[node] = CodeRange(CodePosition(raw[0], raw[1]), CodePosition(raw[2], raw[3]))
        return r

    def __getitem__(self, node):
        r = self.get(node)
        if r is None:
            raise KeyError(node)
        return r

    def __contains__(self, node) -> bool:
        return node in self._raw

    def __len__(self) -> int:
        return len(self._raw)

    def __iter__(self):
        return iter(self._raw)


class Walk:
    """One rendering's positions, parents and nodes (the lists ``rewrite._Collector`` makes)."""

    def __init__(self, module: cst.Module):
        state = _WalkState(module)
        module._codegen(state)
        self.positions = Positions(module, state)
        self.parents = state.parents
        self.calls = state.calls
        self.attributes = state.attributes
        self.subscripts = state.subscripts
        self.import_froms = state.import_froms
