"""The alias the rewritten text spells ``tilelang.language`` with, and the import it may need.

One get-or-add-import service for every fix of a file: a call keeps the alias it was
spelled with (``TL.ptx_cp_async`` -> ``TL.tvm_access_ptr``) when that is a module-level
import of ``tilelang.language`` seen unchanged at the call; otherwise the module's own
import of it is used, and where there is none, one ``import tilelang.language as T`` (or
the fallback alias of rules/namespaces.toml when ``T`` is taken) is added after the
module's imports, one edit every fix that needs it carries.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst
from libcst.metadata import Assignment, ScopeProvider

from ..findings import Edit
from .cst_util import dotted, is_docstring


class Imports:
    """Aliases of tilelang.language and the added import (mixed into the pass's context)."""

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
        if body and is_docstring(body[0]):
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
