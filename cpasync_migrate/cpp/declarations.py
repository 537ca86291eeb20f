"""Declarations: printer helpers with the legacy parameter shape (CPA105) and macros that name the op (CPA109).

CPA105 cpp-legacy-helper-signature: docs/codes/CPA105.md.
CPA109 cpp-site-in-macro: docs/codes/CPA109.md.

A helper has the legacy shape when it is named in ``[helpers] names`` of ``rules/cpp.toml``
(``PrintCpAsyncAssembly``) or its first and third parameter names are pointer-like and its second
and fourth offset-like.  A pointer-only overload added for a declaration is exact given a change
set that rewrites the definition (``Fix.needs_function``); a declaration and a definition are each
reported.
"""
from __future__ import annotations

import os
import re
from collections import defaultdict
from typing import Optional

from ..findings import Applicability
from .. import codes
from .context import CppContext, PendingSite
from .source import ancestors, named, nodes_of_types, squash, walk


# A switch (CPASYNC_MIGRATE_CPP_DECL_INDEX=0: each helper declaration looks through every function of the file for
# one of its name, as before; a measuring switch).  On: the file's definitions and declarators by name, listed once
# (1,600 helper declarations in one file took 37 s).  tests/test_cpp_speedups.py checks the same analyses on and off.
DECL_INDEX = os.environ.get("CPASYNC_MIGRATE_CPP_DECL_INDEX", "1") != "0"


class DeclarationChecks:
    """CPA105 and CPA109 of one file (see the module docstring): a unit over the file's context."""

    def __init__(self, ctx: CppContext):
        self.ctx = ctx
        self._decls: Optional[dict] = None  # short name -> [function declarator]
        self._arity: dict = {}  # (short name, parameters) -> (a definition has it, a declarator has it)
        self._overloads: dict = {}  # short name -> a pointer-only overload of it forwards "" for both offsets

    def _definitions(self, fname: str) -> list:
        """(definition, its declarator) of each function definition of the file named ``fname`` (without its
        qualifiers), in the file's order; every definition with a declarator when DECL_INDEX is off."""
        if not DECL_INDEX:
            return [(fn, self.ctx.fn_declarator(fn)) for fn in self.ctx.fns]
        return self.ctx.definitions_named(fname)

    def _declarators(self, fname: str) -> list:
        """The function declarators of the file named ``fname``, in the file's order (every one when DECL_INDEX
        is off)."""
        if not DECL_INDEX:
            return nodes_of_types(self.ctx.src.root, ("function_declarator",))
        if self._decls is None:
            self._decls = defaultdict(list)
            for d in nodes_of_types(self.ctx.src.root, ("function_declarator",)):
                inner = d.child_by_field_name("declarator")
                if inner is not None:
                    self._decls[self.ctx.short_name(inner)].append(d)
        return self._decls.get(fname, [])

    def _param_names(self, fdecl) -> Optional[list[str]]:
        """The parameter names of a function declarator; None when it has no parameter list."""
        node = fdecl.child_by_field_name("parameters")
        if node is None:
            return None
        return [self.ctx.leaf_name(p.child_by_field_name("declarator")) for p in named(node)
                if p.type in ("parameter_declaration", "optional_parameter_declaration")]

    def helper(self, fdecl) -> None:
        names = self._param_names(fdecl)
        inner = fdecl.child_by_field_name("declarator")
        if names is None or inner is None or len(names) < 4:
            return
        off = self.ctx.cpp.offset_param
        ptr = self.ctx.cpp.pointer_param
        if not (off.search(names[1]) and off.search(names[3])):
            return
        fname = self.ctx.short_name(inner)
        if fname not in self.ctx.cpp.helper_names and (
            not (ptr.search(names[0]) and ptr.search(names[2])) or self.ctx.cpp.helper_exclude.search(fname)
        ):
            return
        if any(a.type in ("call_expression", "argument_list") for a in ancestors(fdecl)):
            return
        if self._takes_empty_offsets(fdecl, fname, names[1], names[3]):
            return
        if self.ctx.probe:  # the window only asks whether there is a site: from here there always is one
            self.ctx.sites.append(PendingSite(fdecl, codes.CPP_LEGACY_HELPER_SIGNATURE))
            return
        self.ctx.tag = (self.ctx.cpp.helper_op, "reader")
        message = (
            f"helper `{fname}` takes the legacy shape ({', '.join(names[:5])}); with access pointers the offsets are "
            "already in each pointer: give it a (dst_ptr, src_ptr, bytes[, predicate]) form and update its callers, or "
            "let it take empty offsets (test each with `.empty()`) and call it with \"\" for both"
        )
        site = PendingSite(fdecl, codes.CPP_LEGACY_HELPER_SIGNATURE, message, op=self.ctx.cpp.helper_op, role="reader",
                           function=self.ctx.declarator_name(fdecl))
        parent = fdecl.parent
        if self.ctx.near_error(fdecl):
            pass  # reported, not edited
        elif parent is not None and parent.type == "function_definition":
            why = self._empty_offsets_fix(site, parent.child_by_field_name("body"), names)
            if why:
                site.leave(why)
        elif parent is not None and parent.type in ("declaration", "field_declaration"):
            why = self._overload_fix(site, parent, fdecl, fname, names)
            if why:
                site.leave(why)
        self.ctx.sites.append(site)

    # ------------------------------------------------ CPA105 fixes (upstream PR #1590's shape)
    def _empty_offsets_fix(self, site, body, names) -> Optional[str]:
        """The definition takes empty offsets: every ``P + " + " + O`` (O an offset parameter, P the
        pointer parameter before it) becomes ``O.empty() ? P : P + " + " + O``.  Safe: a non-empty offset
        prints what it printed; an empty one prints the pointer alone (it printed ``P + `` before)."""
        if body is None:
            return "its definition has no body"
        pairs = {names[1]: names[0], names[3]: names[2]}
        edits = []
        for off, ptr in pairs.items():
            uses = [n for n in walk(body) if n.type == "identifier" and self.ctx.text_of(n) == off]
            if not uses:
                return f"`{off}` is not used in the definition"
            for u in uses:
                if self._forward_use(u, ptr):
                    continue  # handed on to a helper of this file at the same place: it takes what that one takes
                e = u.parent
                ok = False
                if e is not None and e.type == "binary_expression" and e.child_by_field_name("right") == u \
                        and self.ctx.text_of(e.child_by_field_name("operator")) == "+":
                    left = e.child_by_field_name("left")
                    if left is not None and left.type == "binary_expression" \
                            and self.ctx.text_of(left.child_by_field_name("operator")) == "+":
                        p, join = left.child_by_field_name("left"), left.child_by_field_name("right")
                        content = "".join(self.ctx.text_of(c) for c in join.named_children) \
                            if join is not None and join.type == "string_literal" else None
                        ok = (p is not None and p.type == "identifier" and self.ctx.text_of(p) == ptr
                              and content is not None and content.strip() in self.ctx.cpp.offset_join)
                if not ok:
                    ln = self.ctx.src.linecol(self.ctx.src.char_offset(u.start_byte))[0]
                    return (f"`{off}` is used at line {ln} other than as `{ptr} + \" + \" + {off}`, the shape "
                            "the tool makes take an empty offset")
                edits.append(self._ternary(e, off, ptr))
        site.edits = edits
        site.fixable = True
        site.fix_note = ("let it take empty offsets: print the pointer alone where the offset is empty "
                         "(upstream's shape)")
        return None

    def _forward_use(self, u, ptr: Optional[str]) -> bool:
        """``u`` (an offset parameter) is passed to a printer helper defined in this file, at an offset's
        place (second or fourth argument), after ``ptr`` (the matching pointer; any name when None)."""
        args = u.parent
        if args is None or args.type != "argument_list" or args.parent is None or args.parent.type != "call_expression":
            return False
        callee = args.parent.child_by_field_name("function")
        name = self.ctx.short_name(callee) if callee is not None else ""
        if name not in self.ctx.cpp.helper_names or not any(
                (d := self.ctx.fn_declarator(f)) is not None and d.child_by_field_name("declarator") is not None
                and self.ctx.short_name(d.child_by_field_name("declarator")) == name for f in self.ctx.fns):
            return False
        a = named(args)
        k = next((i for i, x in enumerate(a) if x == u), None)
        return k in (1, 3) and (ptr is None or (a[k - 1].type == "identifier" and self.ctx.text_of(a[k - 1]) == ptr))

    def _forwards(self, body, off: str, ptr: Optional[str]) -> bool:
        uses = [n for n in walk(body) if n.type == "identifier" and self.ctx.text_of(n) == off]
        return bool(uses) and all(self._forward_use(u, ptr) for u in uses)

    def _ternary(self, e, off: str, ptr: str):
        """The edit turning ``e`` (``ptr + " + " + off``) into ``off.empty() ? ptr : e``, on one line where
        it fits in 80 columns, else broken before ``?`` and ``:`` (clang-format's LLVM layout)."""
        old = self.ctx.text_of(e)
        start = self.ctx.src.char_offset(e.start_byte)
        col = len(self.ctx.src.column_pad(start))
        line, _ = self.ctx.src.linecol(start)
        rest = self.ctx.src.line_text(line)[col + len(old):] if "\n" not in old else ""
        one = f"{off}.empty() ? {ptr} : {old}"
        wrap = e.parent is not None and e.parent.type not in ("argument_list", "init_declarator",
                                                               "return_statement", "assignment_expression")
        if wrap:
            one = f"({one})"
        if col + len(one) + len(rest) <= 80 or "\n" in old:
            return (e.start_byte, e.end_byte, one)
        ind = " " * (col + 4)
        text = f"{off}.empty(){self.ctx.nl}{ind}? {ptr}{self.ctx.nl}{ind}: {old}"
        return (e.start_byte, e.end_byte, f"({text})" if wrap else text)

    def _overload_fix(self, site, decl, fdecl, fname: str, names) -> Optional[str]:
        """A declaration gets upstream's pointer-only overload right after it, forwarding ``""`` for both
        offsets.  Nothing calls the overload but the callers migrated to it in the same change, and it is
        right only once the definition takes empty offsets: exact given a set that rewrites that definition."""
        params = [p for p in named(fdecl.child_by_field_name("parameters"))
                  if p.type in ("parameter_declaration", "optional_parameter_declaration",
                                "variadic_parameter_declaration")]
        if any(p.type != "parameter_declaration" for p in params):
            return "a parameter has a default value or is variadic, so a pointer-only overload could be ambiguous"
        keep = [p for k, p in enumerate(params) if k not in (1, 3)]
        defined, declared = self._has_arity(fname, len(keep), fdecl)  # an overload of that arity already: a person
        if defined:                                                   # decides how they relate
            return f"the file already defines a {len(keep)}-parameter `{fname}`"
        if declared:
            return f"the file already declares a {len(keep)}-parameter `{fname}`"
        ty = decl.child_by_field_name("type")
        if ty is None or any(c.type in ("storage_class_specifier", "template_declaration") for c in decl.children):
            return "its declaration is not a plain function declaration"
        # the return type's text and any pointer/reference declarators between it and the name
        head = " ".join(self.ctx.src.data[decl.start_byte:fdecl.start_byte].decode("utf-8", "surrogatepass").split())
        fname_text = squash(self.ctx.text_of(fdecl.child_by_field_name("declarator")))
        indent = self.ctx.src.indent_of_line(self.ctx.src.char_offset(decl.start_byte))
        unit = "  "
        ptext = [" ".join(self.ctx.text_of(p).split()) for p in keep]
        pnames = [names[k] for k in range(len(names)) if k not in (1, 3)]
        call_args = [names[0], '""', names[2], '""'] + names[4:]
        sig = self._packed(f"{indent}inline {head}{'' if head.endswith(('&', '*')) else ' '}{fname_text}(",
                           ptext, ") {", indent + "    ")
        ret = self._packed(f"{indent}{unit}return {fname_text}(", call_args, ");", indent + unit + "    ")
        nl = self.ctx.nl
        text = f"{nl}{nl}{sig}{nl}{ret}{nl}{indent}}}".replace("\n", nl) if nl != "\n" else \
            f"{nl}{nl}{sig}{nl}{ret}{nl}{indent}}}"
        site.edits = [(decl.end_byte, decl.end_byte, text)]
        site.fixable = True
        site.applicability = Applicability.UNSAFE
        site.set_established = True
        site.needs_function = self.ctx.declarator_name(fdecl)
        site.assumptions = [
            f"The definition of `{fname}` takes empty offsets (it prints the pointer alone for an empty offset): "
            "its definition is migrated in the same change.",
        ]
        site.fix_note = (f"add the pointer-only overload `{fname}({', '.join(pnames)})`, forwarding \"\" for both "
                         "offsets (upstream's shape)")
        return None

    def _has_arity(self, fname: str, n: int, fdecl) -> tuple[bool, bool]:
        """(a definition of the file named ``fname`` takes ``n`` parameters, a function declarator other than
        ``fdecl`` does); asked once per name and count under DECL_INDEX (``fdecl`` takes n + 2: never one of them)."""
        key = (fname, n)
        if DECL_INDEX and key in self._arity:
            return self._arity[key]
        defined = declared = False
        for fn, d in self._definitions(fname):
            inner = d.child_by_field_name("declarator") if d is not None else None
            if inner is not None and self.ctx.short_name(inner) == fname and len(self._param_names(d) or []) == n:
                defined = True
                break
        for d in self._declarators(fname):
            inner = d.child_by_field_name("declarator")
            if d is not fdecl and inner is not None and self.ctx.short_name(inner) == fname \
                    and len(self._param_names(d) or []) == n:
                declared = True
                break
        self._arity[key] = (defined, declared)
        return defined, declared

    @staticmethod
    def _packed(head: str, items: list, tail: str, hanging: str) -> str:
        """``head`` + items joined by ", " + ``tail`` within 80 columns: on one line, else packed after the
        open parenthesis (aligned with it), else on lines of their own indented by ``hanging``."""
        one = head + ", ".join(items) + tail
        if len(one) <= 80:
            return one

        def pack(first: str, pad: str):
            lines, cur, fresh = [], first, True
            for i, it in enumerate(items):
                piece = it + ("," if i < len(items) - 1 else tail)
                if fresh:
                    cur, fresh = cur + piece, False
                elif len(cur) + 1 + len(piece) > 80:
                    lines.append(cur)
                    cur = pad + piece
                else:
                    cur += " " + piece
            lines.append(cur)
            return lines

        aligned = pack(head, " " * len(head))
        if all(len(ln) <= 80 for ln in aligned):
            return "\n".join(aligned)
        return "\n".join([head.rstrip()] + pack(hanging, hanging))

    def _takes_empty_offsets(self, fdecl, fname: str, off1: str, off2: str) -> bool:
        """Whether the helper is in the shape upstream's migration left it (see the module docstring):
        its definition tests both offsets for emptiness, or (a declaration) its file defines a
        pointer-only overload of the same name that forwards ``""`` for both offsets."""
        parent = fdecl.parent
        body = parent.child_by_field_name("body") if parent is not None and parent.type == "function_definition" \
            else None
        if body is not None:
            text = self.ctx.text_of(body)
            fwd = [self._forwards(body, o, p) for o, p in ((off1, None), (off2, None))]
            if all(f is True for f in fwd):
                return True  # it only hands both offsets on to a helper of this file, which is judged itself
            return all(re.search(rf'\b{re.escape(o)}\s*\.\s*empty\s*\(\s*\)|\b{re.escape(o)}\s*[!=]=\s*""'
                                 rf'|""\s*[!=]=\s*{re.escape(o)}\b', text) for o in (off1, off2))
        if DECL_INDEX and fname in self._overloads:
            return self._overloads[fname]
        self._overloads[fname] = found = self._forwarding_overload(fdecl, fname)
        return found

    def _forwarding_overload(self, fdecl, fname: str) -> bool:
        """Whether the file defines a pointer-only overload of ``fname`` that forwards ``""`` for both offsets (the
        same answer for every declaration of that name: ``fdecl`` is a declaration's, never a definition's)."""
        off = self.ctx.cpp.offset_param
        for fn, decl in self._definitions(fname):
            if decl is None or decl is fdecl:
                continue
            inner = decl.child_by_field_name("declarator")
            if inner is None or self.ctx.short_name(inner) != fname:
                continue
            pnames = self._param_names(decl) or []
            if len(pnames) < 3 or any(off.search(n) for n in pnames):
                continue  # not a pointer-only overload
            for call in nodes_of_types(fn, ("call_expression",)):
                callee = call.child_by_field_name("function")
                args = call.child_by_field_name("arguments")
                if callee is None or args is None or self.ctx.short_name(callee) != fname:
                    continue
                a = named(args)
                if len(a) >= 5 and self.ctx.text_of(a[1]) == '""' and self.ctx.text_of(a[3]) == '""':
                    return True
        return False

    def macro(self, m) -> None:
        val = m.child_by_field_name("value")
        if val is None:
            return
        if not re.search(rf"\b{re.escape(self.ctx.cpp.op_name)}\s*\(\s*\)", self.ctx.text_of(val)):
            return
        name = self.ctx.text_of(m.child_by_field_name("name"))
        body = self.ctx.text_of(val)
        self.ctx.tag = (self._macro_op(body), self._macro_role(body))
        site = PendingSite(m, codes.CPP_SITE_IN_MACRO, op=self.ctx.tag[0], role=self.ctx.tag[1], message=(
            f"macro `{name}` names `{self.ctx.cpp.op_name}`; its body is not parsed, so a person must check which layout it "
            f"builds or reads ({self.ctx.index_map()})"
        ))
        self.ctx.sites.append(site)

    def _macro_op(self, body: str) -> Optional[str]:
        """The op a macro body names: by the qualifier it spells, else the rules' default context."""
        m = re.search(rf"((?:::)?(?:\w+\s*::\s*)*){re.escape(self.ctx.cpp.op_name)}\s*\(\s*\)", body)
        op = self.ctx.cpp.op_of_scope(squash(m.group(1))) if m else None
        return op if op is not None else self.ctx.cpp.context_default

    def _macro_role(self, body: str) -> str:
        """"builder" when a call constructor takes the op (``Call(t, <op>, ...)``), else "reader"."""
        ctors = "|".join(re.escape(c) for c in self.ctx.cpp.call_constructors)
        name = re.escape(self.ctx.cpp.op_name)
        if re.search(rf"(?<![\w:])(?:{ctors})\s*\([^;]*?{name}\s*\(\s*\)", body):
            return "builder"
        return "reader"

