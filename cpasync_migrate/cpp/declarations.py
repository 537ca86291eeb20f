"""Declarations: printer helpers with the legacy parameter shape (CPA105) and macros that name the op (CPA109).

CPA105 (cpp-legacy-helper-signature)
    What: a function declared with the legacy (pointer, offset, pointer, offset, bytes) shape:
    named in ``[helpers] names`` of ``rules/cpp.toml`` (``PrintCpAsyncAssembly``), or with a
    pointer-like first and third and offset-like second and fourth parameter name.
    Why: under access pointers the offsets are inside each pointer; a code generator that
    reads the new layout has no offsets to pass, so the helper's form changes with it.
    Example::

        std::string PrintCpAsyncAssembly(const std::string& shared_ptr,
                                         const std::string& shared_elem_offset,
                                         const std::string& global_ptr,
                                         const std::string& global_elem_offset,
                                         const std::string& bytes);

    Fix: none (a person gives it a ``(dst_ptr, src_ptr, bytes[, predicate])`` form and updates
    its callers); a declaration and a definition are each reported.
    Not reported: the helper as upstream's migration left it (tile-ai/tilelang PR #1590), which
    kept the shape and made it take empty offsets: a definition whose body tests both offset
    parameters for emptiness (``shared_elem_offset.empty()``, or ``== ""``), and a declaration
    whose file defines a pointer-only overload of the same name that forwards ``""`` for both
    offsets (``PrintCpAsyncAssembly(shared_ptr, "", global_ptr, "", bytes)``).

CPA109 (cpp-macro-names-op)
    What: a ``#define`` whose body names ``ptx_cp_async()``.  Why: macro bodies are not
    parsed, so the tool cannot tell which layout the macro builds or reads.  Fix: none; the
    message maps every legacy index to its new place.  Its role is "builder" when a call
    constructor takes the op in the body, else "reader".
"""
from __future__ import annotations

import re
from typing import Optional

from . import codes
from .context import PendingSite
from .source import ancestors, named, nodes_of_types, squash


class DeclarationChecks:
    """Mixin of :class:`~.analyzer.CppAnalyzer`: CPA105 and CPA109 (see the module docstring)."""

    def _param_names(self, fdecl) -> Optional[list[str]]:
        """The parameter names of a function declarator; None when it has no parameter list."""
        node = fdecl.child_by_field_name("parameters")
        if node is None:
            return None
        return [self._leaf_name(p.child_by_field_name("declarator")) for p in named(node)
                if p.type in ("parameter_declaration", "optional_parameter_declaration")]

    def _short_name(self, node) -> str:
        """A declarator's or callee's name without its qualifiers (``codegen::PrintCpAsyncAssembly``: the last part)."""
        return squash(self.text_of(node)).split("::")[-1]

    def _helper(self, fdecl) -> None:
        names = self._param_names(fdecl)
        inner = fdecl.child_by_field_name("declarator")
        if names is None or inner is None or len(names) < 4:
            return
        off = self.cpp.offset_param
        ptr = self.cpp.pointer_param
        if not (off.search(names[1]) and off.search(names[3])):
            return
        fname = self._short_name(inner)
        if fname not in self.cpp.helper_names and (
            not (ptr.search(names[0]) and ptr.search(names[2])) or self.cpp.helper_exclude.search(fname)
        ):
            return
        if any(a.type in ("call_expression", "argument_list") for a in ancestors(fdecl)):
            return
        if self._takes_empty_offsets(fdecl, fname, names[1], names[3]):
            return
        self._tag = (self.cpp.helper_op, "reader")
        message = (
            f"helper `{fname}` takes the legacy shape ({', '.join(names[:5])}); with access pointers the offsets are "
            "already in each pointer: give it a (dst_ptr, src_ptr, bytes[, predicate]) form and update its callers, or "
            "let it take empty offsets (test each with `.empty()`) and call it with \"\" for both"
        )
        self.sites.append(PendingSite(fdecl, codes.HELPER_SIGNATURE, message, op=self.cpp.helper_op, role="reader",
                                      function=self._declarator_name(fdecl)))

    def _takes_empty_offsets(self, fdecl, fname: str, off1: str, off2: str) -> bool:
        """Whether the helper is in the shape upstream's migration left it (see the module docstring):
        its definition tests both offsets for emptiness, or (a declaration) its file defines a
        pointer-only overload of the same name that forwards ``""`` for both offsets."""
        parent = fdecl.parent
        body = parent.child_by_field_name("body") if parent is not None and parent.type == "function_definition" \
            else None
        if body is not None:
            text = self.text_of(body)
            return all(re.search(rf'\b{re.escape(o)}\s*\.\s*empty\s*\(\s*\)|\b{re.escape(o)}\s*[!=]=\s*""'
                                 rf'|""\s*[!=]=\s*{re.escape(o)}\b', text) for o in (off1, off2))
        off = self.cpp.offset_param
        for fn in self._fns:
            decl = self.fn_declarator(fn)
            if decl is None or decl is fdecl:
                continue
            inner = decl.child_by_field_name("declarator")
            if inner is None or self._short_name(inner) != fname:
                continue
            pnames = self._param_names(decl) or []
            if len(pnames) < 3 or any(off.search(n) for n in pnames):
                continue  # not a pointer-only overload
            for call in nodes_of_types(fn, ("call_expression",)):
                callee = call.child_by_field_name("function")
                args = call.child_by_field_name("arguments")
                if callee is None or args is None or self._short_name(callee) != fname:
                    continue
                a = named(args)
                if len(a) >= 5 and self.text_of(a[1]) == '""' and self.text_of(a[3]) == '""':
                    return True
        return False

    def _macro(self, m) -> None:
        val = m.child_by_field_name("value")
        if val is None:
            return
        if not re.search(rf"\b{re.escape(self.cpp.op_name)}\s*\(\s*\)", self.text_of(val)):
            return
        name = self.text_of(m.child_by_field_name("name"))
        body = self.text_of(val)
        self._tag = (self._macro_op(body), self._macro_role(body))
        site = PendingSite(m, codes.MACRO, op=self._tag[0], role=self._tag[1], message=(
            f"macro `{name}` names `{self.cpp.op_name}`; its body is not parsed, so a person must check which layout it "
            f"builds or reads ({self._index_map()})"
        ))
        self.sites.append(site)

    def _macro_op(self, body: str) -> Optional[str]:
        """The op a macro body names: by the qualifier it spells, else the rules' default context."""
        m = re.search(rf"((?:::)?(?:\w+\s*::\s*)*){re.escape(self.cpp.op_name)}\s*\(\s*\)", body)
        op = self.cpp.op_of_scope(squash(m.group(1))) if m else None
        return op if op is not None else self.cpp.context_default

    def _macro_role(self, body: str) -> str:
        """"builder" when a call constructor takes the op (``Call(t, <op>, ...)``), else "reader"."""
        ctors = "|".join(re.escape(c) for c in self.cpp.call_constructors)
        name = re.escape(self.cpp.op_name)
        if re.search(rf"(?<![\w:])(?:{ctors})\s*\([^;]*?{name}\s*\(\s*\)", body):
            return "builder"
        return "reader"

