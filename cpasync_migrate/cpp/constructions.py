"""Constructions: C++ code that builds a legacy ``ptx_cp_async`` IR call, and the op's registration.

CPA101 cpp-construction-brace-list: docs/codes/CPA101.md.
CPA102 cpp-construction-args-array: docs/codes/CPA102.md.
CPA110 cpp-registration-legacy-arity: docs/codes/CPA110.md.

Each side of a rewritten construction becomes ``tvm_access_ptr(TypeAnnotation(<data's own element
type>), data, offset, floordiv(bytes, ptype.bytes()), rw_mask)``.  A construction next to a parse
error is CPA108 and not edited.
"""
from __future__ import annotations

import re
from typing import Optional

from ..findings import Applicability
from .. import codes
from . import hoist, scope_index
from .context import CppContext, PendingSite, int_value, short
from .layout import layout_statement
from .source import ancestors, named, squash, walk

_WRAP_COLUMN = 40  # a rewritten list starting further right begins on its own line
_INDENT = "    "  # continuation indent for such a line
_NAME = r"[A-Za-z_]\w*"


def squash_ws(text: str) -> str:
    """An expression's text on one line (its line breaks and their indentation become one space)."""
    return re.sub(r"\s*\n\s*", " ", text)
_SIMPLE_ATOM = rf"(?:{_NAME}(?:::{_NAME})*|\d+[uUlL]*|(?:{_NAME}::)*DataType::{_NAME}\(\d*\))"


class ConstructionChecks:
    """CPA101, CPA102 and CPA110 of one file (see the module docstring): a unit over the file's context."""

    def __init__(self, ctx: CppContext):
        self.ctx = ctx
        # name -> not used outside every function; (function id, name) -> nor in that function (_name_free)
        self._free: dict = {}

    # ------------------------------------------------------ constructions
    def construction(self, call) -> None:
        fn_node = call.child_by_field_name("function")
        if fn_node is None or squash(self.ctx.text_of(fn_node)) not in self.ctx.cpp.call_constructors:
            return
        arglist = call.child_by_field_name("arguments")
        args = named(arglist) if arglist is not None else []
        if len(args) < 3:
            return
        fn = self.ctx.func_of(call)
        op = self.ctx.op_node(args[1], fn)
        if op is None:
            return
        self.ctx.tag = (self.ctx.ir_op(op), "builder")
        via_var = not self.ctx.is_op_call(args[1])
        arr = args[2]
        if self.ctx.near_error(call) or any(self.ctx.near_error(a) or a.has_error for a in args):
            site = PendingSite(call, codes.CPP_SITE_NEAR_PARSE_ERROR, (
                f"`{self.ctx.cpp.op_name}` call next to a parse error (a macro or #if block tree-sitter cannot follow)"
            ))
            site.park(
                f"check by hand that it builds {self.ctx.arg_layout(self.ctx.target, self.ctx.target.cpp_arity[0])}"
                f"[, {self.ctx.arg_name(self.ctx.target, self.ctx.target.cpp_arity[-1] - 1)}]"
            )
            self.ctx.sites.append(site)
            return
        legacy_arity = self.ctx.legacy.cpp_arity
        target_arity = self.ctx.target.cpp_arity
        if arr.type == "initializer_list":
            elems = named(arr)
            if len(elems) not in legacy_arity:
                return
            if via_var and not self._reaches_op(call, args[1], fn):
                return  # on this path the Op variable holds another op
            if self._access_pointer_list(elems, fn):
                return  # access pointers already: the new layout, with more arguments than ours
            code = codes.CPP_CONSTRUCTION_ARGS_ARRAY if via_var else codes.CPP_CONSTRUCTION_BRACE_LIST
            how = f"through the Op variable `{self.ctx.text_of(args[1])}` " if via_var else ""
            site = PendingSite(call, code, (
                f"`{self.ctx.cpp.op_name}` call built {how}with the legacy {len(elems)}-element argument list "
                f"({self.ctx.arg_layout(self.ctx.legacy, len(elems))})"
            ))
            self._rewrite_lists(site, call, [arr], op)
            self.ctx.sites.append(site)
            return
        if arr.type == "identifier":
            self._array_construction(call, args, arr, op, fn, via_var)
            return
        helper = self._array_helper(arr)
        if helper is not None:
            self._helper_construction(call, arr, helper, op, via_var)
            return
        # An argument array made by an expression the tool cannot follow.
        site = PendingSite(call, codes.CPP_CONSTRUCTION_ARGS_ARRAY, (
            f"`{self.ctx.cpp.op_name}` call built from the argument expression `{short(self.ctx.text_of(arr))}`, whose layout the "
            f"source does not show here; check it builds {self.ctx.arg_layout(self.ctx.target, target_arity[0])}"
            f"[, {self.ctx.arg_name(self.ctx.target, target_arity[-1] - 1)}]"
        ))
        self.ctx.sites.append(site)

    def _array_construction(self, call, args, arr, op, fn, via_var) -> None:
        """CPA102: the op's call built from the argument array ``arr`` (its lists, appends and other uses in
        ``fn`` read first, then judged, then rewritten)."""
        name = self.ctx.text_of(arr)
        body = fn.child_by_field_name("body") if fn is not None else None
        lists, appends, other, declared = self._array_uses(name, arr, body)
        seen = bool(lists)
        if via_var:  # a list built where the Op variable holds another op builds that op's call
            lists = [lst for lst in lists if self._reaches_op(lst, args[1], fn)]
        # a list of access pointers is the new layout, whatever its length (a fork's variant may add more)
        new_lists = [lst for lst in lists if self._access_pointer_list(named(lst), fn)]
        lists = [lst for lst in lists if lst not in new_lists]
        if seen and not lists:
            return  # every list builds another op, or is already the new layout
        sizes = [len(named(lst)) for lst in lists]
        legacy_sizes = [s for s in sizes if s in self.ctx.legacy.cpp_arity]
        if lists and not legacy_sizes and all(s in self.ctx.target.cpp_arity for s in sizes):
            return  # already the new layout
        if lists and not legacy_sizes:
            return  # some other array; not ours to judge
        site = PendingSite(call, codes.CPP_CONSTRUCTION_ARGS_ARRAY)
        how = f" and the Op variable `{self.ctx.text_of(args[1])}`" if via_var else ""
        if not lists:
            where = "is declared here without a visible value" if declared else "is not built in this function"
            site.message = (
                f"`{self.ctx.cpp.op_name}` call built from the argument array `{name}`{how}, which {where}; "
                f"check it holds {self.ctx.arg_layout(self.ctx.target, self.ctx.target.cpp_arity[0])}"
                f"[, {self.ctx.arg_name(self.ctx.target, self.ctx.target.cpp_arity[-1] - 1)}] and not the legacy layout"
            )
            self.ctx.sites.append(site)
            return
        site.message = (
            f"`{self.ctx.cpp.op_name}` call built from the argument array `{name}`{how} with the legacy layout "
            f"({self.ctx.arg_layout(self.ctx.legacy, max(legacy_sizes))})"
        )
        reason = self._array_left(name, body, lists, sizes, appends, other)
        if reason:
            site.leave(reason)
            self.ctx.sites.append(site)
            return
        self._rewrite_lists(site, call, lists, op)
        self.ctx.sites.append(site)

    def _array_uses(self, name: str, arr, body) -> tuple[list, list, list, bool]:
        """The uses of the array ``name`` in ``body`` other than ``arr``: (the initializer lists it is given,
        the append calls, the uses the tool does not follow, whether it is declared there)."""
        lists, appends, other = [], [], []
        declared = False
        if body is None:
            return lists, appends, other, declared
        for n in self.ctx.scope_index(body).names(name) if scope_index.ON else walk(body):
            if n.type != "identifier" or self.ctx.text_of(n) != name or n.start_byte == arr.start_byte:
                continue
            p = n.parent
            if p is not None and p.type == "init_declarator" and p.child_by_field_name("declarator") == n:
                decl = p.parent
                ty = decl.child_by_field_name("type") if decl is not None else None
                declared = True
                if ty is None or not (self.ctx.cpp.is_array_type(self.ctx.text_of(ty)) or self.ctx.text_of(ty) == "auto"):
                    other.append(n)
                    continue
                val = p.child_by_field_name("value")
                if val is not None and val.type == "initializer_list":
                    lists.append(val)
                elif val is not None:
                    other.append(n)
                continue
            if p is not None and p.type == "declaration" and p.child_by_field_name("declarator") == n:
                declared = True  # declared without a value; assignments follow
                continue
            if (
                p is not None
                and p.type == "assignment_expression"
                and p.child_by_field_name("left") == n
                and self.ctx.text_of(p.child_by_field_name("operator") or p.children[1]) == "="
            ):
                val = p.child_by_field_name("right")
                if val is not None and val.type == "initializer_list":
                    lists.append(val)
                else:
                    other.append(n)
                continue
            if (
                p is not None
                and p.type == "field_expression"
                and p.child_by_field_name("argument") == n
                and self.ctx.text_of(p.child_by_field_name("field")) in self.ctx.cpp.append_methods
                and p.parent is not None
                and p.parent.type == "call_expression"
            ):
                appends.append(p.parent)
                continue
            other.append(n)
        return lists, appends, other, declared

    def _array_left(self, name: str, body, lists, sizes, appends, other) -> Optional[str]:
        """Why the legacy array ``name`` is left for a person, or None when its lists can be rewritten."""
        lmin = min(self.ctx.legacy.cpp_arity)
        if other:
            ln = self.ctx.src.linecol(self.ctx.src.char_offset(other[0].start_byte))[0]
            return f"`{name}` is also used at line {ln} in a way the tool does not follow"
        if any(s != lmin for s in sizes) and appends:
            return f"`{name}` gets both a {max(sizes)}-element list and an appended element"
        if any(self._in_loop(a, body) for a in appends):
            return f"`{name}` gets an element appended in a loop; only the optional predicate is expected"
        if len(appends) > 1 and not self._one_per_path(appends):
            return f"`{name}` gets {len(appends)} appended elements; only the optional predicate is expected"
        if appends and any(a.start_byte < lst.end_byte for a in appends for lst in lists):
            return f"`{name}` gets an element appended before its list is assigned"
        return None

    @staticmethod
    def _in_loop(node, body) -> bool:
        """``node`` is inside a loop of ``body`` (it may run more than once)."""
        for a in ancestors(node):
            if a == body:
                return False
            if a.type in ("for_statement", "for_range_loop", "while_statement", "do_statement"):
                return True
        return False

    @staticmethod
    def _one_per_path(appends) -> bool:
        """Every two of ``appends`` lie in different branches of one if/else (no path runs two of them):
        the optional predicate appended in one of several branches."""
        for i, a in enumerate(appends):
            for b in appends[i + 1:]:
                split = False
                for anc in ancestors(a):
                    if not (anc.start_byte <= b.start_byte and b.end_byte <= anc.end_byte):
                        continue
                    if anc.type == "if_statement":
                        cons = anc.child_by_field_name("consequence")
                        alt = anc.child_by_field_name("alternative")
                        inside = lambda n, x: x is not None and x.start_byte <= n.start_byte and n.end_byte <= x.end_byte
                        split = (inside(a, cons) and inside(b, alt)) or (inside(a, alt) and inside(b, cons))
                    break  # the innermost node holding both decides
                if not split:
                    return False
        return True

    def _array_helper(self, arr):
        """The function of this file that ``arr`` (``Helper(...)``, ``this->Helper(...)``) calls, when it
        returns an argument array; else None."""
        if arr.type != "call_expression":
            return None
        callee = arr.child_by_field_name("function")
        if callee is None:
            return None
        text = squash(self.ctx.text_of(callee))
        if text.startswith("this->"):
            text = text[len("this->"):]
        if not re.fullmatch(rf"{_NAME}(?:::{_NAME})*", text):
            return None
        short_name = text.split("::")[-1]
        found = []
        for f in [f for f, _ in self.ctx.definitions_named(short_name)] if scope_index.ON else self.ctx.fns:
            decl = self.ctx.fn_declarator(f)
            inner = decl.child_by_field_name("declarator") if decl is not None else None
            ty = f.child_by_field_name("type")
            if inner is None or ty is None or self.ctx.short_name(inner) != short_name:
                continue
            if self.ctx.cpp.is_array_type(self.ctx.text_of(ty)) and f.child_by_field_name("body") is not None:
                found.append(f)
        return found[0] if len(found) == 1 else None

    def _helper_construction(self, call, arr, helper, op, via_var) -> None:
        """``Call(dtype, <op>, Helper(...))`` with ``Helper`` a function of this file that returns the array:
        its returned lists are the builder's lists."""
        hname = self.ctx.qualname(helper) or "?"
        if id(helper) in self.ctx.array_helpers_seen:
            return  # its lists were judged at its first call
        self.ctx.array_helpers_seen.add(id(helper))
        body = helper.child_by_field_name("body")
        returns = [n for n in walk(body) if n.type == "return_statement"]
        lists, other = [], []
        for r in returns:
            v = named(r)[0] if named(r) else None
            if v is not None and v.type == "compound_literal_expression":
                v = v.child_by_field_name("value")
            (lists if v is not None and v.type == "initializer_list" else other).append(r if v is None else v)
        sizes = [len(named(lst)) for lst in lists]
        if not lists or not any(s in self.ctx.legacy.cpp_arity for s in sizes):
            return  # not the legacy layout, or nothing the text shows
        if all(self._access_pointer_list(named(lst), helper) for lst in lists):
            return
        how = f" through the Op variable `{self.ctx.text_of(call.child_by_field_name('arguments').named_children[1])}`" \
            if via_var else ""
        site = PendingSite(call, codes.CPP_CONSTRUCTION_ARGS_ARRAY, (
            f"`{self.ctx.cpp.op_name}` call built{how} from the array that `{hname}` returns, with the legacy layout "
            f"({self.ctx.arg_layout(self.ctx.legacy, max(s for s in sizes if s in self.ctx.legacy.cpp_arity))})"
        ))
        users = self._helper_users(helper)
        reason = None
        if other:
            ln = self.ctx.src.linecol(self.ctx.src.char_offset(other[0].start_byte))[0]
            reason = f"`{hname}` also returns at line {ln} a value the tool does not follow"
        elif any(s not in self.ctx.legacy.cpp_arity for s in sizes):
            reason = f"`{hname}` returns lists of {sorted(set(sizes))} elements"
        elif users is not None:
            reason = users
        if reason:
            site.leave(reason)
            self.ctx.sites.append(site)
            return
        self._rewrite_lists(site, call, lists, op)
        self.ctx.sites.append(site)

    def _helper_users(self, helper) -> Optional[str]:
        """None when every use of ``helper``'s name in the file is a call passed as the arguments of a call
        of the intrinsic's op; else why not (rewriting its lists would change its other users)."""
        decl = self.ctx.fn_declarator(helper)
        name = self.ctx.short_name(decl.child_by_field_name("declarator"))
        root = self.ctx.src.root
        for n in self.ctx.scope_index(root).names(name) if scope_index.ON else walk(root):
            if n.type not in ("identifier", "field_identifier") or self.ctx.text_of(n) != name:
                continue
            if helper.start_byte <= n.start_byte < (helper.child_by_field_name("body") or helper).start_byte:
                continue  # its own declarator
            call = n
            while call.parent is not None and call.parent.type in ("field_expression", "qualified_identifier"):
                call = call.parent
            call = call.parent
            ok = False
            if call is not None and call.type == "call_expression" and call.parent is not None \
                    and call.parent.type == "argument_list":
                outer = call.parent.parent
                a = named(call.parent)
                fn_node = outer.child_by_field_name("function") if outer is not None else None
                if fn_node is not None and squash(self.ctx.text_of(fn_node)) in self.ctx.cpp.call_constructors \
                        and len(a) >= 3 and a[2] == call:
                    ok = self.ctx.op_node(a[1], self.ctx.func_of(outer)) is not None
            if not ok:
                ln = self.ctx.src.linecol(self.ctx.src.char_offset(n.start_byte))[0]
                return f"`{name}` is also used at line {ln} other than as the arguments of a `{self.ctx.cpp.op_name}` call"
        return None

    def _reaches_op(self, node, var, fn) -> bool:
        """Whether the Op variable ``var`` holds the intrinsic's op where ``node`` is: the value of the
        last assignment ``var = <value>;`` before ``node`` in a block that also holds ``node`` (an
        assignment in another branch does not reach it), else its declaration's."""
        if var is None or var.type != "identifier" or fn is None:
            return True
        name = self.ctx.text_of(var)
        body = fn.child_by_field_name("body")
        last = None
        if body is None:
            found = ()
        elif scope_index.ON:
            found = self.ctx.scope_index(body).assignments(name)
        else:
            found = walk(body)
        for n in found:
            if n.type != "assignment_expression" or n.start_byte >= node.start_byte:
                continue
            left = n.child_by_field_name("left")
            if left is None or left.type != "identifier" or self.ctx.text_of(left) != name:
                continue
            st = n.parent
            if st is None or st.type != "expression_statement" or st.parent is None:
                continue
            block = st.parent
            if block.start_byte <= node.start_byte and node.end_byte <= block.end_byte:
                if last is None or n.start_byte > last.start_byte:
                    last = n
        if last is None:
            return True  # the declaration's value: op_vars found it to be the intrinsic's op
        return self.ctx.is_op_call(last.child_by_field_name("right"))

    def _access_pointer_list(self, elems, fn) -> bool:
        """The list's first or second element is visibly an access pointer (``[op] access_pointer_*`` in
        rules/cpp.toml): in the legacy layout those are the destination's data and offset."""
        return any(self._is_access_pointer(e, fn, 0) for e in elems[:2])

    def _is_access_pointer(self, e, fn, depth: int) -> bool:
        calls = self.ctx.cpp.access_pointer_calls
        if e.type == "call_expression":
            callee = e.child_by_field_name("function")
            if callee is None:
                return False
            last = re.split(r"::|\.|->", squash(self.ctx.text_of(callee)))[-1]
            if last in calls:
                return True
            a = named(e.child_by_field_name("arguments")) if squash(self.ctx.text_of(callee)) in self.ctx.cpp.call_constructors \
                else []
            if len(a) >= 2 and a[1].type == "call_expression" and not named(a[1].child_by_field_name("arguments")):
                inner = a[1].child_by_field_name("function")
                return inner is not None and re.split(r"::|\.|->", squash(self.ctx.text_of(inner)))[-1] in calls
            return False
        if e.type != "identifier":
            return False
        name = self.ctx.text_of(e)
        if self.ctx.cpp.access_pointer_name is not None and self.ctx.cpp.access_pointer_name.search(name):
            return True
        body = fn.child_by_field_name("body") if fn is not None and depth == 0 else None
        if scope_index.ON:
            for start, v in self.ctx.scope_index(body).initialisers(name) if body is not None else ():
                if start < e.start_byte:  # the first declaration before the use
                    return self._is_access_pointer(v, fn, depth + 1)
            return False
        for n in walk(body) if body is not None else ():
            if n.type == "init_declarator" and n.start_byte < e.start_byte:
                d, v = n.child_by_field_name("declarator"), n.child_by_field_name("value")
                if d is not None and d.type == "identifier" and self.ctx.text_of(d) == name and v is not None:
                    return self._is_access_pointer(v, fn, depth + 1)
        return False

    def _rewrite_lists(self, site: PendingSite, call, lists, op) -> None:
        """Give ``site`` a fix that rewrites each legacy list in ``lists``."""
        if self.ctx.near_error(call) or any(self.ctx.near_error(lst) for lst in lists):
            site.park("it is inside or next to a parse error (a macro or #if block tree-sitter cannot follow)")
            return
        why = self._target_blocks_construction(self.ctx.ir_op(op))
        if why:
            site.leave(why)
            return
        spell = self.emit_context(call, op)
        edits = []
        for lst in lists:
            elems = named(lst)
            if len(elems) not in self.ctx.legacy.cpp_arity:
                continue
            if any(c.type == "comment" for c in lst.named_children):
                site.leave("the argument list holds comments the rewrite would drop")
                return
            new, assumptions, problem = self._new_elements(elems, spell, lst)
            if problem:
                site.leave(problem)
                return
            for a in assumptions:
                if a not in site.assumptions:
                    site.assumptions.append(a)
            laid = self._laid_out(lst, elems, spell)
            if laid is not None:
                edits.append(laid)
                continue
            start = self.ctx.src.char_offset(elems[0].start_byte)
            pad = self.ctx.src.column_pad(start)
            brace = lst.children[0]
            prev = lst.prev_sibling
            if len(pad) > _WRAP_COLUMN and prev is not None and prev.type == "," and self._same_line(prev, brace):
                # Far to the right: start the list on a line of its own.
                outer = self.ctx.src.indent_of_line(start) + _INDENT
                edits.append((prev.end_byte, brace.start_byte, self.ctx.nl + outer))
                pad = outer + " " * (elems[0].start_byte - brace.end_byte + 1)
            text = ("," + self.ctx.nl + pad).join(e.replace("\n", self.ctx.nl + pad) for e in new)
            edits.append((elems[0].start_byte, elems[-1].end_byte, text))
        site.edits = edits
        site.fixable = True
        site.applicability = Applicability.UNSAFE if site.assumptions else Applicability.SAFE
        n = max(len(named(lst)) for lst in lists) - (min(self.ctx.legacy.cpp_arity) - min(self.ctx.target.cpp_arity))
        site.fix_note = (
            f"{self.ctx.arg_layout(self.ctx.target, n)} with tvm_access_ptr built from each data pointer's own element type"
        )

    # ------------------------------------------------------------ layout
    def _laid_out(self, lst, elems, spell):
        """The edit that rewrites the statement holding ``lst`` as a whole, laid out as the file's
        clang-format style lays it out (layout.py), its access pointers and their pointer types named
        in declarations before it where hoist.py allows; None where the statement's shape is not one
        the layout models (the caller then edits the list in place)."""
        stmt = hoist.statement_of(lst)
        if stmt is None or stmt.parent is None or stmt.parent.type != "compound_statement":
            return None
        indent = hoist.line_start_indent(self.ctx.src.data, stmt.start_byte)
        if indent is None or "\t" in indent or self.ctx.near_error(stmt) or stmt.has_error:
            return None
        style = self.ctx.style
        parts = self._parts(elems, spell)
        named_parts = self._hoist(lst, stmt, elems, parts)
        data = self.ctx.src.data
        if named_parts is not None:
            names, decls = named_parts
            new_elems = [names["dst_access_ptr"], names["src_access_ptr"]] + parts["rest"]
        else:
            decls = []
            new_elems = [parts["dst_inline"], parts["src_inline"]] + parts["rest"]
        before = data[stmt.start_byte:elems[0].start_byte].decode("utf-8", "replace")
        after = data[elems[-1].end_byte:stmt.end_byte].decode("utf-8", "replace")
        new_stmt = before + ", ".join(new_elems) + after
        laid = layout_statement(new_stmt, len(indent), style)
        laid_decls = [layout_statement(d, len(indent), style) for d in decls]
        if laid is None or any(d is None for d in laid_decls):
            return None  # the names only where the whole text can be laid out; else the list in place
        if named_parts is not None:
            self.ctx.hoisted.append((self.ctx.func_of(lst), stmt.parent.start_byte, stmt.parent.end_byte))
        text = "".join(d + "\n" + indent for d in laid_decls) + laid
        return (stmt.start_byte, stmt.end_byte, text.replace("\n", self.ctx.nl))

    def _parts(self, elems, spell) -> dict:
        """The pieces of a legacy list's new elements, as one-line texts."""
        emit = self.ctx.cpp.emit
        d, d_off, s, s_off, size = elems[:5]
        fmt = {"tir": spell["tir"], "tvm": spell["tvm"], "builtin": spell["builtin"]}
        wrappers = "|".join(re.escape(w) for w in emit["size_wrappers"])
        size_text = squash_ws(self.ctx.text_of(size))
        callee = size.child_by_field_name("function") if size.type == "call_expression" else None
        is_primexpr = callee is not None and re.fullmatch(rf"(?:{_NAME}::)*(?:{wrappers})", squash(self.ctx.text_of(callee)))
        size_arg = size_text if is_primexpr else emit["size_primexpr"].format(size=size_text, **fmt)
        pdt_key = "pointer_dtype_helper" if spell["helper"] else "pointer_dtype"

        def ptr(data, off, mask, ptype) -> str:
            args = emit["args"].format(ptype=ptype, **fmt)
            extent = emit["extent"].format(size=size_arg, ptype=ptype, **fmt)
            rest = emit["args_rest"].format(data=squash_ws(self.ctx.text_of(data)), offset=squash_ws(self.ctx.text_of(off)),
                                            extent=extent, mask=mask, **fmt)
            return emit["call"].format(**fmt) + " " + args + " " + rest

        out = {"fmt": fmt, "ptr": ptr, "helper": spell["helper"]}
        for side, data, off, mask in (("dst", d, d_off, self.ctx.target.dst_rw_mask),
                                      ("src", s, s_off, self.ctx.target.src_rw_mask)):
            ptype = emit[pdt_key].format(data=squash_ws(self.ctx.text_of(data)), **fmt)
            out[side + "_ptype"] = ptype
            out[side + "_inline"] = ptr(data, off, mask, ptype)
            out[side + "_named"] = (data, off, mask)
        out["rest"] = [squash_ws(self.ctx.text_of(e)) for e in elems[4:]]
        return out

    def _hoist(self, lst, stmt, elems, parts):
        """({role: name}, declarations) when the list's access pointers may be named (hoist.py); else None."""
        emit = self.ctx.cpp.emit
        fn = self.ctx.func_of(lst)
        if fn is None:
            return None
        pure_calls = set(emit.get("pure_calls", ()))
        check = lambda n: hoist.pure(n, self.ctx.text_of, pure_calls, self.ctx.is_op_call)
        if not all(check(e) for e in elems[:5]) or not all(check(x) for x in hoist.siblings(lst, stmt)):
            return None
        listed = list(emit.get("hoist_names", ()))
        if len(listed) != 4 or len(set(listed)) != 4:
            return None
        names = dict(zip(("dst_dtype", "dst_access_ptr", "src_dtype", "src_access_ptr"), listed))
        public = not parts["helper"]  # the pointer type read with public headers: a PointerType local first
        if public:
            pointers = list(emit.get("hoist_pointer_names", ()))
            if len(pointers) != 2 or len(set(pointers) | set(listed)) != 6:
                return None
            names["dst_pointer_type"], names["src_pointer_type"] = pointers
        block = stmt.parent
        for f, a, b in self.ctx.hoisted:
            if f == fn and (a <= block.start_byte < b or block.start_byte <= a < block.end_byte):
                return None  # another hoist of this function declares the same names in a block around it
        if not all(self._name_free(n, fn) for n in names.values()):
            return None
        fmt = parts["fmt"]
        decls = []
        for side in ("dst", "src"):
            data, off, mask = parts[side + "_named"]
            dt = names[side + "_dtype"]
            if public:
                pt = names[side + "_pointer_type"]
                decls.append(emit["hoist_pointer_type"].format(name=pt, data=squash_ws(self.ctx.text_of(data)), **fmt))
                decls.append(emit["hoist_dtype_from_pointer"].format(name=dt, pointer=pt, **fmt))
            else:
                decls.append(emit["hoist_dtype"].format(name=dt, ptype=parts[side + "_ptype"], **fmt))
            decls.append(emit["hoist_access_ptr"].format(name=names[side + "_access_ptr"],
                                                          value=parts["ptr"](data, off, mask, dt), **fmt))
        return names, decls

    def _name_free(self, name: str, fn) -> bool:
        """``name`` is used neither in ``fn`` nor outside every function of the file (a hoisted local may take it);
        asked once per function and name under scope_index.ON (the texts do not change while the file is
        analysed: fixes are edits applied after)."""
        if not scope_index.ON:
            return hoist.name_free(name, self.ctx.text_of(fn), self._outside_functions())
        if name not in self._free:  # the text outside every function: once per name
            self._free[name] = hoist.name_free(name, "", self._outside_functions())
        key = (fn.id, name)
        if key not in self._free:
            self._free[key] = self._free[name] and hoist.name_free(name, self.ctx.text_of(fn), "")
        return self._free[key]

    def _outside_functions(self) -> str:
        """The file's text outside every function body (namespace and class scope, macros)."""
        if self.ctx.outside is None:
            data = self.ctx.src.data
            keep, pos = [], 0
            for f in sorted(self.ctx.fns, key=lambda f: f.start_byte):
                body = f.child_by_field_name("body")
                if body is None or body.start_byte < pos:
                    continue
                keep.append(data[pos:body.start_byte])
                pos = body.end_byte
            keep.append(data[pos:])
            self.ctx.outside = b"".join(keep).decode("utf-8", "replace")
        return self.ctx.outside

    def _same_line(self, a, b) -> bool:
        return a.end_point[0] == b.start_point[0]

    def _target_blocks_construction(self, ir_op) -> Optional[str]:
        tgt = self.ctx.target
        if tgt.form != "access_ptr":
            return f"the target API {tgt.name} does not use access pointers"
        if tgt.size_meaning_for(ir_op) != "bytes":
            hint = ""
            if tgt.tl_access_ptr:
                hint = (
                    f"; build each side as TileLang's own producers do, "
                    f"Call(DataType::Handle(), {tgt.tl_access_ptr}(), {{BufferLoad(buffer, {{index}}), num_elems, rw_mask}}) "
                    f"(rw_mask {tgt.dst_rw_mask} for the destination, {tgt.src_rw_mask} for the source), with one "
                    "element type for both sides and the element count as the size"
                )
            return (
                f"under the target API {tgt.name} `{ir_op}` counts the copy in elements of the access pointer's type "
                "(num_elems), both sides must have the same width, and the element types here are known only when "
                f"the pass runs{hint}"
            )
        return None

    def emit_context(self, call, op) -> dict:
        """The spellings a call built next to ``call`` (of the op node ``op``) uses: ``tir``, ``tvm`` and
        ``builtin`` scopes, and whether the file uses the pointer-dtype helper (``helper``); merge.py asks too."""
        ctor = squash(self.ctx.text_of(call.child_by_field_name("function")))
        tir = ctor[: -len("Call")] if ctor.endswith("Call") else ""
        if "tvm::" in tir:
            tvm = tir[: tir.index("tvm::") + len("tvm::")]
        else:
            tvm = ""
        op_scope = self.ctx.cpp.op_scope(self.ctx.text_of(op.child_by_field_name("function")))
        builtin = op_scope if op_scope.endswith("builtin::") else self.ctx.cpp.emit["builtin_scope"].format(tir=tir)
        helper = self.ctx.cpp.emit["pointer_dtype_helper_name"] + "("
        uses_helper = helper in self.ctx.text
        return {"tir": tir, "tvm": tvm, "builtin": builtin, "helper": uses_helper}

    def _is_var(self, data, call) -> bool:
        """``data`` visibly denotes a tir::Var (so ``->type_annotation`` exists)."""
        if data.type == "field_expression" and self.ctx.text_of(data.child_by_field_name("field")) == self.ctx.cpp.emit["data_field"]:
            op = self.ctx.text_of(data.child_by_field_name("operator") or data.children[1])
            return op == "->"
        if data.type != "identifier":
            return False
        name = self.ctx.text_of(data)
        var_types = {squash(v) for v in self.ctx.cpp.emit["var_types"]}
        scopes = []
        fn = self.ctx.func_of(call)
        if fn is not None:
            scopes.append(fn)
        for a in ancestors(call):
            if a.type in ("class_specifier", "struct_specifier"):
                scopes.append(a.child_by_field_name("body"))
                break
        for sc in scopes:
            if sc is None:
                continue
            if scope_index.ON:
                if not var_types.isdisjoint(self.ctx.scope_index(sc).declared_types(name)):
                    return True
                continue
            for n in walk(sc):
                if n.type in scope_index.DECLARATIONS:
                    ty = n.child_by_field_name("type")
                    if ty is None or squash(self.ctx.text_of(ty)) not in var_types:
                        continue
                    for d in n.children_by_field_name("declarator"):
                        if self.ctx.leaf_name(d) == name:
                            return True
        return False

    def _simple(self, text: str) -> bool:
        s = squash(text)
        if re.fullmatch(_SIMPLE_ATOM, s):
            return True
        wrappers = "|".join(re.escape(w) for w in self.ctx.cpp.emit["size_wrappers"])
        inner = rf"{_SIMPLE_ATOM}(?:,{_SIMPLE_ATOM})*"
        return re.fullmatch(rf"(?:{_NAME}::)*(?:{wrappers})\({inner}\)", s) is not None

    def _new_elements(self, elems, spell, call):
        """New argument texts for a legacy list; (texts, assumptions, problem).  ``call`` is the node whose
        function and class the data arguments' declarations are looked up in (the list itself)."""
        emit = self.ctx.cpp.emit
        d, d_off, s, s_off, size = elems[:5]
        pred = elems[5] if len(elems) > 5 else None
        assumptions = []
        for data in (d, s):
            if not self._is_var(data, call):
                return None, None, (
                    f"the element type of `{short(self.ctx.text_of(data))}` cannot be named: it is not visibly a tir::Var "
                    "(a Buffer's ->data, or a Var declared in this function or class)"
                )
        size_text = self.ctx.text_of(size)
        if not self._simple(size_text):
            assumptions.append(
                f"`{short(size_text)}` has no side effects and gives the same value each time it is evaluated "
                "(it is also written in each access pointer's extent)."
            )
        fmt = {"tir": spell["tir"], "tvm": spell["tvm"], "builtin": spell["builtin"]}
        wrappers = "|".join(re.escape(w) for w in emit["size_wrappers"])
        callee = size.child_by_field_name("function") if size.type == "call_expression" else None
        is_primexpr = callee is not None and re.fullmatch(rf"(?:{_NAME}::)*(?:{wrappers})", squash(self.ctx.text_of(callee)))
        size_arg = size_text if is_primexpr else emit["size_primexpr"].format(size=size_text, **fmt)
        pdt_key = "pointer_dtype_helper" if spell["helper"] else "pointer_dtype"

        def access_ptr(data, off, mask) -> str:
            dt = self.ctx.text_of(data)
            ptype = emit[pdt_key].format(data=dt, **fmt)
            head = emit["call"].format(**fmt)
            lead = emit["call"].format(**fmt).index("(") + 1
            args = emit["args"].format(ptype=ptype, **fmt)
            extent = emit["extent"].format(size=size_arg, ptype=ptype, **fmt)
            rest = emit["args_rest"].format(data=dt, offset=self.ctx.text_of(off), extent=extent, mask=mask, **fmt)
            return head + "\n" + " " * lead + args + "\n" + " " * (lead + 1) + rest

        new = [
            access_ptr(d, d_off, self.ctx.target.dst_rw_mask),
            access_ptr(s, s_off, self.ctx.target.src_rw_mask),
            size_text,
        ]
        if pred is not None:
            new.append(self.ctx.text_of(pred))
        return new, assumptions, None

    # ------------------------------------------------------- registrations
    def registration(self, call) -> None:
        """``MACRO(ptx_cp_async).set_num_inputs(N)``: the registration declares a legacy arity."""
        fn = call.child_by_field_name("function")
        if fn is None or fn.type != "identifier" or self.ctx.text_of(fn) not in self.ctx.cpp.registration_macros:
            return
        a = named(call.child_by_field_name("arguments"))
        if len(a) != 1 or a[0].type != "identifier" or self.ctx.text_of(a[0]) != self.ctx.cpp.op_name:
            return
        op = self.ctx.cpp.registration_macros[self.ctx.text_of(fn)]
        self.ctx.tag = (op, "definition")
        # Walk the method chain: call -> field_expression -> call_expression (...)
        cur, arity = call, None
        while cur.parent is not None and cur.parent.type == "field_expression" and cur.parent.parent is not None \
                and cur.parent.parent.type == "call_expression":
            field = cur.parent.child_by_field_name("field")
            outer = cur.parent.parent
            if field is not None and self.ctx.text_of(field) == self.ctx.cpp.arity_method:
                arity = outer
                break
            cur = outer
        if arity is None:
            return  # no arity declared: every layout is accepted
        args = named(arity.child_by_field_name("arguments"))
        lit = args[0] if len(args) == 1 else None
        if lit is None or lit.type != "number_literal":
            return  # -1 (variadic, as upstream registers the new layouts) or a name: no legacy arity shown
        value = int_value(self.ctx.text_of(lit))
        legacy = self.ctx.legacy.cpp_num_inputs
        target = self.ctx.target.cpp_num_inputs
        if value not in legacy:
            return  # the new arity, or a fork's own: not this API's legacy layout
        site = PendingSite(arity, codes.CPP_REGISTRATION_LEGACY_ARITY, function=f"{self.ctx.text_of(fn)}({self.ctx.cpp.op_name})", message=(
            f"`{self.ctx.text_of(fn)}({self.ctx.cpp.op_name})` registers `{op}` with {self.ctx.cpp.arity_method}({value}), a legacy "
            f"arity ({'/'.join(map(str, self.ctx.legacy.cpp_arity))} arguments); the access-pointer layout has "
            f"{'/'.join(map(str, self.ctx.target.cpp_arity))}"
        ))
        if self.ctx.parked_near_error(site, arity):
            return
        new = str(target[0]) if target else None
        if new is None:
            site.leave("the target declares no registration arity")
            self.ctx.sites.append(site)
            return
        site.edits = [(lit.start_byte, lit.end_byte, new)]
        site.fixable = True
        site.applicability = Applicability.UNSAFE
        site.assumptions = [
            f"Every builder and reader of `{op}` in the program moves to the access-pointer layout in the same change "
            f"(the registration then accepts {'/'.join(map(str, self.ctx.target.cpp_arity))} arguments, not the legacy ones).",
        ]
        site.set_established = True
        site.fix_note = f"{self.ctx.cpp.arity_method}({new})"
        self.ctx.sites.append(site)

