"""The alias the rewritten text spells ``tilelang.language`` with, and the import it may need.

One get-or-add-import service for every fix of a file: a call keeps the alias it was
spelled with (``TL.ptx_cp_async`` -> ``TL.tvm_access_ptr``) when that is a module-level
import of ``tilelang.language`` seen unchanged at the call; otherwise the module's own
import of it is used, and where there is none, one ``import tilelang.language as T`` (or
the fallback alias of rules/namespaces.toml when ``T`` is taken) is added after the
module's imports, one edit every fix that needs it carries.
"""
from __future__ import annotations

import sys
from typing import Optional

import libcst as cst
from libcst.metadata import Assignment

from ..findings import Edit
from .context import Context
from .cst_util import dotted, is_docstring


class Imports:
    """Aliases of tilelang.language and the added import: the service ``ctx.imports``.

    ``alias``: the name the file's fixes spell tilelang.language with, once ``emit_alias`` chose it;
    ``import_edit``: the import it added for it (None: none needed).  Reads the module through the context
    (``ctx.module``, ``ctx.pos``, ``ctx.qnames``, ``ctx.assignments``, ``ctx.scope_of``, ``ctx.text``,
    ``ctx.starts``, ``ctx.newline``) and the rules (``ctx.rules``)."""

    ctx: Context
    alias: Optional[str]
    import_edit: Optional[Edit]

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.alias = None
        self.import_edit = None

    def own_alias(self, call: cst.Call) -> Optional[str]:
        """The name the call itself spells tilelang.language with (``TL`` in ``TL.ptx_cp_async``), when
        it is a module-level import of it seen unchanged at the call: a file with two aliases keeps
        each call's own."""
        f = call.func
        if not (isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name)):
            return None
        name = f.value.value
        if self.ctx.qnames(f.value) != {self.ctx.rules.emit_module} or not self._global_binding_is_import(name) or \
                not self.alias_visible_at(name, call):
            return None
        return name

    def emit_alias(self) -> str:
        """Name bound to tilelang.language at module level, adding an import if needed."""
        if self.alias is not None:
            return self.alias
        want = self.ctx.rules.emit_module
        alias = None
        last_import_end = None
        body = self.ctx.module.body
        top: list[cst.SimpleStatementLine] = []  # the module's top import block
        i = 0
        if body and is_docstring(body[0]):
            last_import_end = self.ctx.pos(body[0]).end.line
            i = 1
        while i < len(body):
            stmt = body[i]
            if not (isinstance(stmt, cst.SimpleStatementLine) and all(
                    isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)):
                break
            last_import_end = self.ctx.pos(stmt).end.line
            top.append(stmt)
            i += 1
        for stmt in body:
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for s in stmt.body:
                if isinstance(s, cst.Import):
                    for n in s.names:
                        full = dotted(n.name)
                        if full == want:
                            alias = n.asname.name.value if n.asname else want
                elif isinstance(s, cst.ImportFrom) and s.module is not None and not s.relative:
                    mod = dotted(s.module)
                    if isinstance(s.names, cst.ImportStar):
                        continue
                    for n in s.names:
                        if f"{mod}.{dotted(n.name)}" == want:
                            alias = n.asname.name.value if n.asname else dotted(n.name)
        if alias is not None and self._global_binding_is_import(alias.split(".")[0]):
            self.alias = alias
            return alias
        # add an import
        name = self.ctx.rules.emit_alias
        if self._globally_bound(name):
            base = name = self.ctx.rules.emit_fallback_alias
            k = 2
            while self._globally_bound(name):
                name = f"{base}{k}"
                k += 1
        stmt_text = f"import {want} as {name}{self.ctx.newline}"
        if last_import_end is None:
            off = 0
            # keep a shebang / encoding cookie first
            while off < len(self.ctx.text) and self.ctx.text.startswith("#", off):
                nl = self.ctx.text.find("\n", off)
                if nl == -1:
                    break
                off = nl + 1
        else:
            at = self._sorted_place(top, want, name, stmt_text)
            if at is not None:
                off, stmt_text = at
            else:
                off = self.ctx.starts[last_import_end] if last_import_end < len(self.ctx.starts) else len(self.ctx.text)
                if off == len(self.ctx.text) and not self.ctx.text.endswith("\n"):
                    stmt_text = self.ctx.newline + stmt_text.rstrip("\r\n")
        self.import_edit = Edit(off, off, stmt_text)
        self.alias = name
        return name

    def _sorted_place(self, top: list, want: str, name: str, stmt_text: str) -> Optional[tuple[int, str]]:
        """Where isort puts ``import <want> as <name>`` in the top import block, and the text to insert
        there; None where that is right after the block (rule in the module's docstring)."""
        paragraphs: list[list] = []  # isort's sections as the file shows them: a blank line right before an
        for st in top:  # import starts one (a blank line before a comment above an import does not)
            if not paragraphs or (st.leading_lines and st.leading_lines[-1].comment is None):
                paragraphs.append([])
            paragraphs[-1].append(st)
        root = want.split(".")[0]
        para = next((p for p in paragraphs if any(_root(st) == root for st in p)), None) or \
            next((p for p in paragraphs if any(_section(st) == "other" for st in p)), None)
        nl = self.ctx.newline
        if para is None:
            # no third-party paragraph: one of its own after the standard library's, before the relative imports
            local = next((p for p in paragraphs if _section(p[0]) == "local"), None)
            if local is not None:
                return self._line_before(local[0]), stmt_text + nl
            if top and all(_section(st) in ("future", "stdlib") for st in top):
                ln = self.ctx.pos(top[-1]).end.line
                if ln < len(self.ctx.starts):
                    return self.ctx.starts[ln], nl + stmt_text
            return None
        mine = (want.lower(), name.lower(), want, name)
        others = [st for st in para if _section(st) == "other"]
        straight = [i for i, st in enumerate(others) if isinstance(st.body[0], cst.Import)]
        after = next((others[i] for i in straight if _key(others[i]) > mine), None)
        if after is None:  # the first `from` import after the last straight one
            after = next((st for st in others[(straight[-1] + 1 if straight else 0):]
                          if isinstance(st.body[0], cst.ImportFrom)), None)
        if after is not None:
            if after is not para[0] and any(el.comment is None for el in after.leading_lines):
                # a comment block set off by a blank line: the import goes before the blank line
                prev = para[para.index(after) - 1]
                return self.ctx.starts[self.ctx.pos(prev).end.line], stmt_text
            return self._line_before(after), stmt_text
        ln = self.ctx.pos(others[-1]).end.line
        return (self.ctx.starts[ln], stmt_text) if ln < len(self.ctx.starts) else None

    def _line_before(self, stmt: cst.SimpleStatementLine) -> int:
        """The offset of the statement's line, or of the comment lines just above it (they go with it)."""
        ln = self.ctx.pos(stmt).start.line
        k = len(stmt.leading_lines)
        while k and stmt.leading_lines[k - 1].comment is not None:
            k -= 1
            ln -= 1
        return self.ctx.starts[ln - 1]

    def _globally_bound(self, name: str) -> bool:
        scope = self.ctx.scope_of(self.ctx.module)
        try:
            return bool(scope[name]) if scope is not None else False
        except Exception:  # noqa: BLE001
            return False

    def _global_binding_is_import(self, name: str) -> bool:
        scope = self.ctx.scope_of(self.ctx.module)
        if scope is None:
            return False
        asgs = scope[name]
        return bool(asgs) and all(
            isinstance(a, Assignment) and isinstance(a.node, (cst.Import, cst.ImportFrom)) for a in asgs)

    def alias_visible_at(self, alias: str, node: cst.CSTNode) -> bool:
        head = alias.split(".")[0]
        mod_scope = self.ctx.scope_of(self.ctx.module)
        return set(self.ctx.assignments(node, head)) == set(mod_scope[head]) if mod_scope else False


def _root(stmt: cst.SimpleStatementLine) -> Optional[str]:
    s = stmt.body[0]
    if isinstance(s, cst.Import):
        return dotted(s.names[0].name).split(".")[0]
    if s.relative or s.module is None:
        return None
    return dotted(s.module).split(".")[0]


def _section(stmt: cst.SimpleStatementLine) -> str:
    """isort's section of an import statement: "future", "stdlib", "local" (relative) or "other"."""
    root = _root(stmt)
    if root is None:
        return "local"
    if root == "__future__":
        return "future"
    return "stdlib" if root in sys.stdlib_module_names else "other"


def _key(stmt: cst.SimpleStatementLine) -> tuple:
    """isort's order of ``import x [as y]`` statements: the module name case-insensitively, then its alias."""
    alias = stmt.body[0].names[0]
    mod = dotted(alias.name)
    asname = alias.asname.name.value if alias.asname else ""
    return (mod.lower(), asname.lower(), mod, asname)
