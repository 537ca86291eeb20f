"""Find and migrate legacy ``ptx_cp_async`` IR calls in C++ (tree-sitter-cpp).

Site kinds (codes are documented in docs/cpp.md):

- CPA101 construction ``Call(dtype, <op>, {d, d_off, s, s_off, bytes[, pred]})``
- CPA102 construction through a local argument array and/or an ``Op`` variable
- CPA103 consumer branch with the code generator shape (rewritable, unsafe)
- CPA104 consumer branch left for a person (message maps every legacy index)
- CPA105 helper signature with the legacy (ptr, offset, ptr, offset, bytes) shape
- CPA106 unreachable duplicate ``else if (...same_as(<op>))`` branch
- CPA107 branch that accepts both layouts on purpose (information)
- CPA108 site inside or next to a parse error (not edited)
- CPA109 intrinsic named inside a macro definition (not edited)
- CPA110 registration of the op that declares a legacy arity (``set_num_inputs(5)``)
- CPA111 the merge pass's legacy branch (re-bases the destination, rebuilds the call), rewritten in the
  upstream shape (see merge.py)

Every finding carries the IR op it concerns (``Finding.op``: TVM's builtin or TileLang's own
op, by the spelling or, unqualified, by the file's context; see ``[op.context]`` in
``rules/cpp.toml``) and its part in that op's change (``Finding.role``): "builder" for
constructions, "reader" for consumers, printer helpers, dead and dual-layout branches and
macros that test the op, "definition" for registrations.

Everything here is pure: text in, findings with character-offset edits out.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Optional

from ..findings import Analysis, Applicability, Edit, Finding, Fix, FrontEndOptions, Status, apply_edits
from .cpprules import CppRules, load_cpp_rules
from .merge import MergeRebase
from .source import Source, ancestors, error_nodes, error_summary, named, nodes_of_types, squash, walk

_WRAP_COLUMN = 40  # a rewritten list starting further right begins on its own line
_INDENT = "    "  # continuation indent for such a line
_COMPARISONS = {"==", "!=", "<", ">", "<=", ">="}
_INT_RE = re.compile(r"^(\d+)([uUlL]*)$")
_NAME = r"[A-Za-z_]\w*"
_SIMPLE_ATOM = rf"(?:{_NAME}(?:::{_NAME})*|\d+[uUlL]*|(?:{_NAME}::)*DataType::{_NAME}\(\d*\))"


def _int_value(text: str) -> Optional[int]:
    m = _INT_RE.match(text.strip())
    return int(m.group(1)) if m else None


@dataclass
class _Site:
    """A finding under construction (byte offsets)."""

    node: object
    code: str
    message: str
    edits: list = field(default_factory=list)  # (start_byte, end_byte, replacement)
    applicability: Applicability = Applicability.SAFE
    assumptions: list = field(default_factory=list)
    info: bool = False
    fixable: bool = False
    op: Optional[str] = None  # the IR op ("tir.ptx_cp_async" | "tl.ptx_cp_async")
    role: Optional[str] = None  # "builder" | "reader" | "definition"


class CppAnalyzer(MergeRebase):
    gate = True  # look for consumers and constructions only in _hot_ranges; tests compare both settings

    def __init__(self, text: str, path: str, options: FrontEndOptions):
        self.text = text
        self.path = path
        self.opt = options
        self.rules = options.rules
        self.r: CppRules = load_cpp_rules(options.rules)
        self.src = Source(text)
        self.errors = error_nodes(self.src.root)
        self.legacy = self.rules.legacy
        self.target = options.target
        self._op_vars: dict = {}
        self._dead_ranges: list[tuple[int, int]] = []
        self._fns: list = []  # function definitions in document order (filled by run)
        self._usings: Optional[list] = None  # `using namespace X;` directives (filled on demand)
        self._tag: tuple = (None, None)  # (IR op, role) of the sites being built
        self._tested_ops: list = []
        self._fn_starts: list[int] = []
        self.sites: list[_Site] = []
        self.nl = "\r\n" if "\r\n" in text else "\n"

    # ------------------------------------------------------------------ util
    def t(self, node) -> str:
        return self.src.t(node)

    def func_of(self, node):
        """The innermost function definition around ``node`` (not ``node`` itself)."""
        fns, starts = self._fns, self._fn_starts
        lo, hi = node.start_byte, node.end_byte
        # Enclosing definitions form a chain; the one that starts last is the innermost.
        for i in range(bisect.bisect_right(starts, lo) - 1, -1, -1):
            f = fns[i]
            if f.end_byte >= hi and f != node:
                return f
        return None

    def qualname(self, fn) -> Optional[str]:
        if fn is None:
            return None
        decl = fn.child_by_field_name("declarator")
        while decl is not None and decl.type != "function_declarator":
            decl = decl.child_by_field_name("declarator")
        if decl is None:
            return None
        return self._declarator_name(decl)

    def _declarator_name(self, fdecl) -> str:
        inner = fdecl.child_by_field_name("declarator")
        name = squash(self.t(inner)) if inner is not None else "?"
        scopes = []
        for a in ancestors(fdecl):
            if a.type in ("class_specifier", "struct_specifier"):
                n = a.child_by_field_name("name")
                if n is not None:
                    scopes.append(self.t(n))
        if scopes:
            name = "::".join(list(reversed(scopes)) + [name])
        return name

    def is_op_call(self, node) -> bool:
        if node is None or node.type != "call_expression":
            return False
        args = node.child_by_field_name("arguments")
        fn = node.child_by_field_name("function")
        if args is None or fn is None or named(args):
            return False
        return self.r.is_op_spelling(self.t(fn))

    def op_vars(self, fn) -> dict:
        """Local variables of ``fn`` that hold the intrinsic's Op: name -> op call node."""
        if fn is None:
            return {}
        key = fn.id
        if key not in self._op_vars:
            found = {}
            body = fn.child_by_field_name("body")
            lo, hi = (body.start_byte, body.end_byte) if body is not None else (0, 0)
            # An Op variable's initialiser names the op: a body without the name declares none.
            name_in_body = body is not None and self.src.data.find(self.r.op_name.encode(), lo, hi) != -1
            decls = nodes_of_types(body, ("declaration",), [(lo, hi)]) if name_in_body else []
            for n in decls:
                if n.start_byte < lo or n.end_byte > hi:
                    continue  # around the body, not in it
                ty = n.child_by_field_name("type")
                quals = "".join(self.t(c) for c in n.children if c.type == "type_qualifier")
                for d in n.children_by_field_name("declarator"):
                    if d.type != "init_declarator":
                        continue
                    val = d.child_by_field_name("value")
                    if self.is_op_call(val) and ty is not None and self.r.is_op_type(quals + self.t(ty)):
                        found[self._leaf_name(d.child_by_field_name("declarator"))] = val
            self._op_vars[key] = found
        return self._op_vars[key]

    def _leaf_name(self, decl) -> str:
        while decl is not None and decl.type not in ("identifier", "field_identifier"):
            inner = decl.child_by_field_name("declarator")
            if inner is None:
                inner = next((c for c in decl.named_children if c.type in ("identifier", "field_identifier")), None)
            decl = inner
        return self.t(decl) if decl is not None else ""

    def op_node(self, node, fn):
        """The op-call node ``node`` denotes (itself, or an Op variable's initialiser)."""
        if self.is_op_call(node):
            return node
        if node is not None and node.type == "identifier":
            return self.op_vars(fn).get(self.t(node))
        return None

    def ir_op(self, opcall) -> Optional[str]:
        """The IR op an op-call node names: by its qualifier, else by its context."""
        fn = opcall.child_by_field_name("function") if opcall is not None else None
        if fn is None:
            return self.r.context_default
        op = self.r.op_of_scope(self.r.op_scope(self.t(fn)))
        return op if op is not None else self.context_op(opcall)

    def context_op(self, node) -> Optional[str]:
        """The op an unqualified ``ptx_cp_async()`` at ``node`` names ([op.context] in cpp.toml):
        the innermost enclosing namespace that names one, else the using-namespace directives in
        force there when they agree, else the rules' default."""
        for a in ancestors(node):
            if a.type != "namespace_definition":
                continue
            name = a.child_by_field_name("name")
            if name is None:
                name = next((c for c in a.named_children if c.type in ("namespace_identifier",
                                                                       "nested_namespace_specifier")), None)
            path = squash(self.t(name)) if name is not None else ""
            for key, op in self.r.context_namespaces.items():
                if path == key or path.endswith("::" + key):
                    return op
        if self._usings is None:
            self._usings = []
            if b"using" in self.src.data:
                for u in nodes_of_types(self.src.root, ("using_declaration",)):
                    if any(c.type == "namespace" for c in u.children):
                        target = next((c for c in u.named_children if c.type in ("identifier", "qualified_identifier")), None)
                        if target is not None:
                            self._usings.append((u, squash(self.t(target))))
        ops = set()
        for u, name in self._usings:
            scope = u.parent
            if u.start_byte < node.start_byte and scope is not None and scope.start_byte <= node.start_byte \
                    and node.end_byte <= scope.end_byte and name in self.r.context_using:
                ops.add(self.r.context_using[name])
        if len(ops) == 1:
            return ops.pop()
        return self.r.context_default

    def near_error(self, node) -> bool:
        if not self.errors:
            return False
        for a in ancestors(node):
            if a.type == "ERROR":
                return True
        stmt = node
        for a in [node, *ancestors(node)]:
            if a.type.endswith("statement") or a.type in ("declaration", "field_declaration"):
                stmt = a
                break
        lo, hi = stmt.start_byte, stmt.end_byte
        data = self.src.data
        while lo > 0 and data[lo - 1 : lo].isspace():
            lo -= 1
        while hi < len(data) and data[hi : hi + 1].isspace():
            hi += 1
        return any(e.start_byte <= hi and e.end_byte >= lo for e in self.errors)

    def in_dead(self, node) -> bool:
        return any(s <= node.start_byte and node.end_byte <= e for s, e in self._dead_ranges)

    # ------------------------------------------------------------ run
    def run(self) -> Analysis:
        err = self._whole_file_error()
        if err is not None:
            return err
        fdecls, macros = [], []
        for n in nodes_of_types(self.src.root, ("function_definition", "function_declarator",
                                                "preproc_function_def", "preproc_def")):
            t = n.type
            if t == "function_definition":
                self._fns.append(n)
                self._fn_starts.append(n.start_byte)
            elif t == "function_declarator":
                fdecls.append(n)
            else:
                macros.append(n)
        ifs, calls = [], []
        for n in nodes_of_types(self.src.root, ("if_statement", "call_expression"),
                                self._hot_ranges() if self.gate else None):
            (ifs if n.type == "if_statement" else calls).append(n)
        for s in ifs:
            self._tagged(self._consumer, s)
        for c in calls:
            if not self.in_dead(c):
                self._tagged(self._construction, c)
                self._tagged(self._registration, c)
        for f in fdecls:
            self._helper(f)
        for m in macros:
            self._macro(m)
        return Analysis(findings=self._finish())

    def _tagged(self, method, node) -> None:
        """Run ``method(node)``; the sites it adds get the op and role it left in ``self._tag``."""
        n0 = len(self.sites)
        self._tag = (None, None)
        method(node)
        op, role = self._tag
        for site in self.sites[n0:]:
            site.op = site.op or op
            site.role = site.role or role

    def _hot_ranges(self) -> list[tuple[int, int]]:
        """Byte ranges outside which no if statement or call can be a consumer or a construction.

        Both need an Op node: a call spelled with the op's name inside the node itself, or a
        local Op variable of the enclosing function, whose initialiser names the op.  So a node
        can matter only when it contains the name or lies in a top-level function that does:
        the ranges are those functions, and each occurrence of the name outside every function.
        (Only the outermost function is known to hold the name; the analysis itself decides.)
        """
        data, name = self.src.data, self.r.op_name.encode()
        occ = []
        i = data.find(name)
        while i != -1:
            occ.append(i)
            i = data.find(name, i + 1)
        ranges = []
        end = -1
        for f in self._fns:  # document order: a nested definition starts inside its outer one
            if f.start_byte < end:
                continue
            end = f.end_byte
            j = bisect.bisect_left(occ, f.start_byte)
            if j < len(occ) and occ[j] + len(name) <= end:
                ranges.append((f.start_byte, end))
        loose = []
        for o in occ:
            k = bisect.bisect_right(ranges, (o, len(data) + 1)) - 1
            if k < 0 or not (ranges[k][0] <= o and o + len(name) <= ranges[k][1]):
                loose.append((o, o + len(name)))
        return sorted(ranges + loose)

    def _whole_file_error(self) -> Optional[Analysis]:
        if "\x00" in self.text:
            return Analysis(findings=[], error="the file holds NUL characters; not C++ text", error_line=1)
        if not self.errors:
            return None
        covered = sum(e.end_byte - e.start_byte for e in self.errors)
        body = len(self.src.data.strip()) or 1
        if covered * 2 > body:
            first = min(self.errors, key=lambda e: e.start_byte)
            line, col = self.src.linecol(self.src.c(first.start_byte))
            return Analysis(
                findings=[],
                error=f"tree-sitter-cpp cannot parse most of the file (parse errors cover {covered} of {body} bytes)",
                error_line=line,
                error_column=col,
            )
        return None

    # ------------------------------------------------------ constructions
    def _construction(self, call) -> None:
        fn_node = call.child_by_field_name("function")
        if fn_node is None or squash(self.t(fn_node)) not in self.r.call_constructors:
            return
        arglist = call.child_by_field_name("arguments")
        args = named(arglist) if arglist is not None else []
        if len(args) < 3:
            return
        fn = self.func_of(call)
        op = self.op_node(args[1], fn)
        if op is None:
            return
        self._tag = (self.ir_op(op), "builder")
        via_var = not self.is_op_call(args[1])
        arr = args[2]
        if self.near_error(call) or any(self.near_error(a) or a.has_error for a in args):
            site = _Site(call, "CPA108", "")
            site.message = (
                f"`{self.r.op_name}` call next to a parse error (a macro or #if block tree-sitter cannot follow); "
                f"not edited: check by hand that it builds {self._layout(self.target, self.target.cpp_arity[0])}"
                f"[, {self._arg(self.target, self.target.cpp_arity[-1] - 1)}]"
            )
            self.sites.append(site)
            return
        legacy_arity = self.legacy.cpp_arity
        target_arity = self.target.cpp_arity
        if arr.type == "initializer_list":
            elems = named(arr)
            if len(elems) not in legacy_arity:
                return
            code = "CPA102" if via_var else "CPA101"
            site = _Site(call, code, "")
            how = f"through the Op variable `{self.t(args[1])}` " if via_var else ""
            site.message = (
                f"`{self.r.op_name}` call built {how}with the legacy {len(elems)}-element argument list "
                f"({self._layout(self.legacy, len(elems))})"
            )
            self._rewrite_lists(site, call, [arr], op)
            self.sites.append(site)
            return
        if arr.type == "identifier":
            self._array_construction(call, args, arr, op, fn, via_var)
            return
        # An argument array made by an expression the tool cannot follow.
        site = _Site(call, "CPA102", "")
        site.message = (
            f"`{self.r.op_name}` call built from the argument expression `{_short(self.t(arr))}`, whose layout the "
            f"source does not show here; check it builds {self._layout(self.target, target_arity[0])}"
            f"[, {self._arg(self.target, target_arity[-1] - 1)}]"
        )
        self.sites.append(site)

    def _array_construction(self, call, args, arr, op, fn, via_var) -> None:
        name = self.t(arr)
        body = fn.child_by_field_name("body") if fn is not None else None
        lists, appends, other = [], [], []
        declared = False
        if body is not None:
            for n in walk(body):
                if n.type == "identifier" and self.t(n) == name and n.start_byte != arr.start_byte:
                    p = n.parent
                    if p is not None and p.type == "init_declarator" and p.child_by_field_name("declarator") == n:
                        decl = p.parent
                        ty = decl.child_by_field_name("type") if decl is not None else None
                        declared = True
                        if ty is None or not (self.r.is_array_type(self.t(ty)) or self.t(ty) == "auto"):
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
                        and self.t(p.child_by_field_name("operator") or p.children[1]) == "="
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
                        and self.t(p.child_by_field_name("field")) in self.r.append_methods
                        and p.parent is not None
                        and p.parent.type == "call_expression"
                    ):
                        appends.append(p.parent)
                        continue
                    other.append(n)
        sizes = [len(named(lst)) for lst in lists]
        legacy_sizes = [s for s in sizes if s in self.legacy.cpp_arity]
        if lists and not legacy_sizes and all(s in self.target.cpp_arity for s in sizes):
            return  # already the new layout
        if lists and not legacy_sizes:
            return  # some other array; not ours to judge
        site = _Site(call, "CPA102", "")
        how = f" and the Op variable `{self.t(args[1])}`" if via_var else ""
        if not lists:
            where = "is declared here without a visible value" if declared else "is not built in this function"
            site.message = (
                f"`{self.r.op_name}` call built from the argument array `{name}`{how}, which {where}; "
                f"check it holds {self._layout(self.target, self.target.cpp_arity[0])}"
                f"[, {self._arg(self.target, self.target.cpp_arity[-1] - 1)}] and not the legacy layout"
            )
            self.sites.append(site)
            return
        lmin = min(self.legacy.cpp_arity)
        site.message = (
            f"`{self.r.op_name}` call built from the argument array `{name}`{how} with the legacy layout "
            f"({self._layout(self.legacy, max(legacy_sizes))})"
        )
        reason = None
        if other:
            ln = self.src.linecol(self.src.c(other[0].start_byte))[0]
            reason = f"`{name}` is also used at line {ln} in a way the tool does not follow"
        elif any(s != lmin for s in sizes) and appends:
            reason = f"`{name}` gets both a {max(sizes)}-element list and an appended element"
        elif len(appends) > 1:
            reason = f"`{name}` gets {len(appends)} appended elements; only the optional predicate is expected"
        if reason:
            site.message += f"; left for a person: {reason}"
            self.sites.append(site)
            return
        self._rewrite_lists(site, call, lists, op)
        self.sites.append(site)

    def _args_of(self, gen) -> tuple:
        """``gen``'s C++ argument names for the op of the site being built (``self._tag``):
        where that op's size keeps another meaning than the generation's (TVM's builtin keeps
        bytes under 0.1.9), the size is named by an earlier generation's name for that meaning."""
        op = self._tag[0]
        meaning = gen.size_meaning_for(op)
        if meaning == gen.size_meaning:
            return gen.cpp_args
        other = next((g for g in self.rules.generations if g.size_meaning == meaning and g.form == gen.form),
                     self.legacy)
        size_name = next((a for a in other.cpp_args if self.r.role(a) == "size"), None)
        return tuple(size_name if self.r.role(a) == "size" and size_name else a for a in gen.cpp_args)

    def _layout(self, gen, n: int) -> str:
        return "{" + ", ".join(self._args_of(gen)[:n]) + "}"

    def _arg(self, gen, i: int) -> str:
        names = self._args_of(gen)
        return names[i] if i < len(names) else "?"

    def _rewrite_lists(self, site: _Site, call, lists, op) -> None:
        """Give ``site`` a fix that rewrites each legacy list in ``lists``."""
        if self.near_error(call) or any(self.near_error(lst) for lst in lists):
            site.code = "CPA108"
            site.message += "; not edited: it is inside or next to a parse error (a macro or #if block tree-sitter cannot follow)"
            return
        why = self._target_blocks_construction(self.ir_op(op))
        if why:
            site.message += f"; left for a person: {why}"
            return
        ctx = self._emit_context(call, op)
        edits = []
        for lst in lists:
            elems = named(lst)
            if len(elems) not in self.legacy.cpp_arity:
                continue
            if any(c.type == "comment" for c in lst.named_children):
                site.message += "; left for a person: the argument list holds comments the rewrite would drop"
                return
            new, assumptions, problem = self._new_elements(elems, ctx, call)
            if problem:
                site.message += f"; left for a person: {problem}"
                return
            for a in assumptions:
                if a not in site.assumptions:
                    site.assumptions.append(a)
            start = self.src.c(elems[0].start_byte)
            pad = self.src.column_pad(start)
            brace = lst.children[0]
            prev = lst.prev_sibling
            if len(pad) > _WRAP_COLUMN and prev is not None and prev.type == "," and self._same_line(prev, brace):
                # Far to the right: start the list on a line of its own.
                outer = self.src.indent_of_line(start) + _INDENT
                edits.append((prev.end_byte, brace.start_byte, self.nl + outer))
                pad = outer + " " * (elems[0].start_byte - brace.end_byte + 1)
            text = ("," + self.nl + pad).join(e.replace("\n", self.nl + pad) for e in new)
            edits.append((elems[0].start_byte, elems[-1].end_byte, text))
        site.edits = edits
        site.fixable = True
        site.applicability = Applicability.UNSAFE if site.assumptions else Applicability.SAFE
        n = max(len(named(lst)) for lst in lists) - (min(self.legacy.cpp_arity) - min(self.target.cpp_arity))
        site.message += (
            f"; fix: {self._layout(self.target, n)} with tvm_access_ptr built from each "
            "data pointer's own element type"
        )

    def _same_line(self, a, b) -> bool:
        return a.end_point[0] == b.start_point[0]

    def _target_blocks_construction(self, ir_op) -> Optional[str]:
        tgt = self.target
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

    def _emit_context(self, call, op) -> dict:
        ctor = squash(self.t(call.child_by_field_name("function")))
        tir = ctor[: -len("Call")] if ctor.endswith("Call") else ""
        if "tvm::" in tir:
            tvm = tir[: tir.index("tvm::") + len("tvm::")]
        else:
            tvm = ""
        op_scope = self.r.op_scope(self.t(op.child_by_field_name("function")))
        builtin = op_scope if op_scope.endswith("builtin::") else self.r.emit["builtin_scope"].format(tir=tir)
        helper = self.r.emit["pointer_dtype_helper_name"] + "("
        uses_helper = helper in self.text
        return {"tir": tir, "tvm": tvm, "builtin": builtin, "helper": uses_helper}

    def _is_var(self, data, call) -> bool:
        """``data`` visibly denotes a tir::Var (so ``->type_annotation`` exists)."""
        if data.type == "field_expression" and self.t(data.child_by_field_name("field")) == self.r.emit["data_field"]:
            op = self.t(data.child_by_field_name("operator") or data.children[1])
            return op == "->"
        if data.type != "identifier":
            return False
        name = self.t(data)
        var_types = {squash(v) for v in self.r.emit["var_types"]}
        scopes = []
        fn = self.func_of(call)
        if fn is not None:
            scopes.append(fn)
        for a in ancestors(call):
            if a.type in ("class_specifier", "struct_specifier"):
                scopes.append(a.child_by_field_name("body"))
                break
        for sc in scopes:
            if sc is None:
                continue
            for n in walk(sc):
                if n.type in ("declaration", "field_declaration", "parameter_declaration"):
                    ty = n.child_by_field_name("type")
                    if ty is None or squash(self.t(ty)) not in var_types:
                        continue
                    for d in n.children_by_field_name("declarator"):
                        if self._leaf_name(d) == name:
                            return True
        return False

    def _simple(self, text: str) -> bool:
        s = squash(text)
        if re.fullmatch(_SIMPLE_ATOM, s):
            return True
        wrappers = "|".join(re.escape(w) for w in self.r.emit["size_wrappers"])
        inner = rf"{_SIMPLE_ATOM}(?:,{_SIMPLE_ATOM})*"
        return re.fullmatch(rf"(?:{_NAME}::)*(?:{wrappers})\({inner}\)", s) is not None

    def _new_elements(self, elems, ctx, call):
        """New argument texts for a legacy list; (texts, assumptions, problem)."""
        emit = self.r.emit
        d, d_off, s, s_off, size = elems[:5]
        pred = elems[5] if len(elems) > 5 else None
        assumptions = []
        for data in (d, s):
            if not self._is_var(data, call):
                return None, None, (
                    f"the element type of `{_short(self.t(data))}` cannot be named: it is not visibly a tir::Var "
                    "(a Buffer's ->data, or a Var declared in this function or class)"
                )
        size_text = self.t(size)
        if not self._simple(size_text):
            assumptions.append(
                f"`{_short(size_text)}` has no side effects and gives the same value each time it is evaluated "
                "(it is also written in each access pointer's extent)."
            )
        fmt = {"tir": ctx["tir"], "tvm": ctx["tvm"], "builtin": ctx["builtin"]}
        wrappers = "|".join(re.escape(w) for w in emit["size_wrappers"])
        callee = size.child_by_field_name("function") if size.type == "call_expression" else None
        is_primexpr = callee is not None and re.fullmatch(rf"(?:{_NAME}::)*(?:{wrappers})", squash(self.t(callee)))
        size_arg = size_text if is_primexpr else emit["size_primexpr"].format(size=size_text, **fmt)
        pdt_key = "pointer_dtype_helper" if ctx["helper"] else "pointer_dtype"

        def access_ptr(data, off, mask) -> str:
            dt = self.t(data)
            ptype = emit[pdt_key].format(data=dt, **fmt)
            head = emit["call"].format(**fmt)
            lead = emit["call"].format(**fmt).index("(") + 1
            args = emit["args"].format(ptype=ptype, **fmt)
            extent = emit["extent"].format(size=size_arg, ptype=ptype, **fmt)
            rest = emit["args_rest"].format(data=dt, offset=self.t(off), extent=extent, mask=mask, **fmt)
            return head + "\n" + " " * lead + args + "\n" + " " * (lead + 1) + rest

        new = [
            access_ptr(d, d_off, self.target.dst_rw_mask),
            access_ptr(s, s_off, self.target.src_rw_mask),
            size_text,
        ]
        if pred is not None:
            new.append(self.t(pred))
        return new, assumptions, None

    # ---------------------------------------------------------- consumers
    def _op_tests(self, cond, fn) -> list[str]:
        """Objects ``X`` in ``X->op.same_as(<op>)`` tests inside ``cond``."""
        objs = []
        for n in walk(cond):
            if n.type != "call_expression":
                continue
            f = n.child_by_field_name("function")
            if f is None or f.type != "field_expression" or self.t(f.child_by_field_name("field")) != self.r.same_as:
                continue
            a = named(n.child_by_field_name("arguments"))
            opnode = self.op_node(a[0], fn) if len(a) == 1 else None
            if opnode is None:
                continue
            inner = f.child_by_field_name("argument")
            if inner is not None and inner.type == "field_expression" and self.t(
                inner.child_by_field_name("field")
            ) == self.r.op_field:
                objs.append(squash(self.t(inner.child_by_field_name("argument"))))
                self._tested_ops.append(self.ir_op(opnode))
                if len(objs) == 1:
                    self._tested_opnode = opnode
        return objs

    def _chain_conditions(self, s) -> list[str]:
        """Conditions of the earlier branches of the if/else-if chain ``s`` is in."""
        out = []
        cur = s
        while cur.parent is not None and cur.parent.type == "else_clause":
            owner = cur.parent.parent
            if owner is None or owner.type != "if_statement":
                break
            c = owner.child_by_field_name("condition")
            if c is not None:
                out.append(squash(self.t(c)))
            cur = owner
        return out

    def _consumer(self, s) -> None:
        cond = s.child_by_field_name("condition")
        body = s.child_by_field_name("consequence")
        if cond is None or body is None or self.in_dead(s):
            return
        if self.r.same_as not in self.t(cond):
            return  # no `X->op.same_as(...)` test in the condition (cheap text check before the tree walk)
        fn = self.func_of(s)
        self._tested_ops = []
        objs = self._op_tests(cond, fn)
        if not objs:
            return
        # A branch testing both ops reads both; its op is the first one tested, and a rewrite
        # must suit every op it tests.
        self._tag = (self._tested_ops[0], "reader")
        if squash(self.t(cond)) in self._chain_conditions(s):
            self._dead(s, cond, body)
            return
        obj = objs[0]
        reads, sizes, loose = self._args_uses(obj, [cond, body])
        legacy_idx = {i for _, i in reads if i >= max(self.target.cpp_arity)}
        legacy_n = {v for _, v in sizes if v in self.legacy.cpp_arity}
        new_n = {v for _, v in sizes if v in self.target.cpp_arity}
        named_offsets = self._offset_reads(obj, body)
        var_reads = self._data_as_var(reads)
        legacy = bool(legacy_idx or legacy_n or named_offsets or var_reads)
        head = s  # report the test line (an "else if" starts at "if")
        if legacy and new_n:
            site = _Site(head, "CPA107", "", info=True)
            site.message = (
                f"`{self.r.op_name}` branch accepts both the legacy layout (args.size() "
                f"{'/'.join(map(str, self.legacy.cpp_arity))}) and the access-pointer layout "
                f"({'/'.join(map(str, self.target.cpp_arity))}); information only"
            )
            self.sites.append(site)
            return
        if not legacy:
            return
        site = _Site(head, "CPA104", "")
        if self.near_error(s):
            site.code = "CPA108"
            site.message = (
                f"`{self.r.op_name}` consumer reads the legacy layout; not edited: it is inside or next to a parse "
                f"error; {self._index_map()}"
            )
            self.sites.append(site)
            return
        why = self._codegen_rewrite(site, obj, cond, body, reads, sizes, loose)
        merge_why = None
        if why is not None and var_reads and self.target.form == "access_ptr":
            merge_why, rebuilds = self._merge_rewrite(site, obj, s, cond, body, self._tested_opnode)
            if merge_why is None:
                site.message = (
                    f"`{self.r.op_name}` merge-pass branch re-bases the legacy destination (data `args[0]`, offset "
                    f"`args[1]` scaled by the call dtype's size) and rebuilds the "
                    f"{'/'.join(map(str, self.legacy.cpp_arity))}-argument call; fix: open the destination "
                    f"access pointer (data at its args[1], offset at its args[2]), rebuild it on the merged buffer "
                    f"with its offset in the access pointer's own type, keep the other arguments, "
                    f"args.size() {'/'.join(map(str, self.target.cpp_arity))}"
                )
                self.sites.append(site)
                return
            if rebuilds:
                why = f"a merge-style pass that re-bases the destination, in a shape the tool does not rewrite: {merge_why}"
                site.message = f"`{self.r.op_name}` consumer reads the legacy layout ({why}); {self._merge_todo(obj)}; {self._index_map()}"
                self.sites.append(site)
                return
        if why is None:
            site.code = "CPA103"
            site.message = (
                f"`{self.r.op_name}` consumer prints the legacy layout (pointer + offset, args.size() "
                f"{'/'.join(map(str, self.legacy.cpp_arity))}); fix: read {self._layout(self.target, self.target.cpp_arity[0])}"
                f"[, {self._arg(self.target, self.target.cpp_arity[-1] - 1)}] and print each access pointer as it is"
            )
        else:
            site.message = f"`{self.r.op_name}` consumer reads the legacy layout ({why}); {self._index_map()}"
        self.sites.append(site)

    def _index_map(self) -> str:
        tgt = self.target
        tgt_args = self._args_of(tgt)
        parts = []
        for i, name in enumerate(self.legacy.cpp_args):
            role = self.r.role(name) or name
            if role.endswith("_offset"):
                side = role[: -len("_offset")]
                j = next((k for k, n in enumerate(tgt.cpp_args) if self.r.role(n) == side), None)
                parts.append(f"args[{i}] {name} -> offset inside args[{j}] {tgt_args[j]}")
            else:
                j = next((k for k, n in enumerate(tgt.cpp_args) if self.r.role(n) == role), None)
                if j is None:
                    parts.append(f"args[{i}] {name} -> no place")
                elif self.r.role(name) == "dst" or self.r.role(name) == "src":
                    parts.append(f"args[{i}] {name} -> data inside args[{j}] {tgt_args[j]}")
                else:
                    parts.append(f"args[{i}] {name} -> args[{j}] {tgt_args[j]}")
        sizes = "/".join(map(str, self.legacy.cpp_arity)) + " -> " + "/".join(map(str, tgt.cpp_arity))
        return "map " + ", ".join(parts) + f", args.size() {sizes}"

    def _args_access(self, node, obj) -> bool:
        """``node`` is ``<obj>->args`` (or ``<obj>.args``)."""
        return (
            node is not None
            and node.type == "field_expression"
            and self.t(node.child_by_field_name("field")) == self.r.args_field
            and squash(self.t(node.child_by_field_name("argument"))) == obj
        )

    def _args_uses(self, obj, regions):
        """Reads ``args[K]`` (node, K), size literals (literal node, N), and other uses."""
        reads, sizes, loose = [], [], []
        for region in regions:
            for n in walk(region):
                if not self._args_access(n, obj):
                    continue
                p = n.parent
                if p is not None and p.type == "subscript_expression" and p.child_by_field_name("argument") == n:
                    idx = named(p.child_by_field_name("indices"))
                    v = _int_value(self.t(idx[0])) if len(idx) == 1 and idx[0].type == "number_literal" else None
                    if v is None:
                        loose.append(p)
                    else:
                        reads.append((idx[0], v))
                    continue
                if (
                    p is not None
                    and p.type == "field_expression"
                    and self.t(p.child_by_field_name("field")) == "size"
                    and p.parent is not None
                    and p.parent.type == "call_expression"
                ):
                    lit = self._size_literal(p.parent)
                    if lit is None:
                        loose.append(p.parent)
                    else:
                        sizes.append(lit)
                    continue
                loose.append(n)
        return reads, sizes, loose

    def _size_literal(self, size_call):
        """The literal ``args.size()`` is compared with: (node, value) or None."""
        cur = size_call
        while cur.parent is not None and cur.parent.type == "parenthesized_expression":
            cur = cur.parent
        p = cur.parent
        if p is None:
            return None
        if p.type == "binary_expression" and self.t(p.child_by_field_name("operator")) in _COMPARISONS:
            other = p.child_by_field_name("right") if p.child_by_field_name("left") == cur else p.child_by_field_name("left")
            if other is not None and other.type == "number_literal" and _int_value(self.t(other)) is not None:
                return other, _int_value(self.t(other))
            return None
        if p.type == "argument_list" and p.parent is not None and p.parent.type == "call_expression":
            macro = self.t(p.parent.child_by_field_name("function"))
            if macro in self.r.check_macros:
                others = [a for a in named(p) if a != cur]
                if len(others) == 1 and others[0].type == "number_literal" and _int_value(self.t(others[0])) is not None:
                    return others[0], _int_value(self.t(others[0]))
        return None

    def _data_as_var(self, reads) -> list:
        """Reads of a legacy data position taken as a ``Var`` (``Downcast<Var>(args[0])``,
        ``args[2].as<VarNode>()``): in the new layout those positions hold access-pointer
        calls, or the byte count."""
        roles = [self.r.role(a) for a in self.legacy.cpp_args]
        data_idx = {k for k, r in enumerate(roles) if r in ("dst", "src")}
        var_types = {squash(v) for v in self.r.emit["var_types"]}
        out = []
        for lit, k in reads:
            if k not in data_idx:
                continue
            sub = lit.parent.parent if lit.parent is not None else None  # subscript_expression
            p = sub.parent if sub is not None else None
            if p is not None and p.type == "argument_list" and p.parent is not None:
                fn = squash(self.t(p.parent.child_by_field_name("function") or p.parent))
                m = re.fullmatch(r"(?:\w+::)*Downcast<(.+)>", fn)
                if m and m.group(1) in var_types:
                    out.append(lit)
                    continue
            if p is not None and p.type == "field_expression":
                field = p.child_by_field_name("field")
                if field is not None and re.fullmatch(r"as<(?:\w+::)*VarNode>", squash(self.t(field))):
                    out.append(lit)
        return out

    def _offset_reads(self, obj, body) -> list:
        """Declarations ``NAME = f(<obj>->args[K])`` whose NAME says "offset"."""
        out = []
        for n in walk(body):
            if n.type != "init_declarator":
                continue
            name = self._leaf_name(n.child_by_field_name("declarator"))
            if self.r.offset_name not in name.lower():
                continue
            val = n.child_by_field_name("value")
            if val is None:
                continue
            for m in walk(val):
                if m.type == "subscript_expression" and self._args_access(m.child_by_field_name("argument"), obj):
                    out.append(n)
                    break
        return out

    def _top_reads(self, obj, body) -> dict:
        """K -> (name identifier node, declaration node) for ``T NAME = f(<obj>->args[K]);``
        statements directly in the branch body."""
        out = {}
        if body.type != "compound_statement":
            return out
        for st in named(body):
            if st.type != "declaration":
                continue
            decls = st.children_by_field_name("declarator")
            if len(decls) != 1 or decls[0].type != "init_declarator":
                continue
            val = decls[0].child_by_field_name("value")
            if val is None or val.type != "call_expression":
                continue
            a = named(val.child_by_field_name("arguments"))
            if len(a) != 1 or a[0].type != "subscript_expression" or not self._args_access(
                a[0].child_by_field_name("argument"), obj
            ):
                continue
            idx = named(a[0].child_by_field_name("indices"))
            k = _int_value(self.t(idx[0])) if len(idx) == 1 else None
            ident = decls[0].child_by_field_name("declarator")
            if k is not None and ident is not None and ident.type == "identifier" and k not in out:
                out[k] = (ident, st)
        return out

    def _codegen_rewrite(self, site, obj, cond, body, reads, sizes, loose) -> Optional[str]:
        """Try the code-generator rewrite; None on success, else the reason it does not apply."""
        tgt = self.target
        counts = [op for op in dict.fromkeys(self._tested_ops) if tgt.size_meaning_for(op) != "bytes"]
        if tgt.form != "access_ptr" or counts:
            return (
                f"under the target API {tgt.name} `{counts[0] if counts else self._tested_ops[0]}` counts the copy "
                "in elements (num_elems); the printer must derive bytes from the access pointer's type"
            )
        if loose:
            ln = self.src.linecol(self.src.c(loose[0].start_byte))[0]
            return f"the argument array is used at line {ln} in a way the tool does not follow"
        legacy_args = self.legacy.cpp_args
        roles = [self.r.role(a) for a in legacy_args]
        try:
            k_dst, k_doff, k_src, k_soff, k_size = (roles.index(r) for r in ("dst", "dst_offset", "src", "src_offset", "size"))
        except ValueError:
            return "the rules do not name every legacy argument's role"
        top = self._top_reads(obj, body)
        if not all(k in top for k in (k_dst, k_doff, k_src, k_soff, k_size)):
            return "not the printer shape the tool rewrites: locals read from args[0..4] and printed as pointer + offset"
        # Where each legacy index goes.
        remap = {}
        for k, name in enumerate(legacy_args):
            role = roles[k]
            if role in ("dst_offset", "src_offset"):
                continue
            j = next((i for i, n in enumerate(tgt.cpp_args) if self.r.role(n) == role), None)
            if j is None:
                return f"the target layout has no place for {name}"
            remap[k] = j
        edits = []
        off_decls = {k_doff: top[k_doff], k_soff: top[k_soff]}
        for lit, k in reads:
            if k in off_decls:
                decl = off_decls[k][1]
                if not (decl.start_byte <= lit.start_byte and lit.end_byte <= decl.end_byte):
                    ln = self.src.linecol(self.src.c(lit.start_byte))[0]
                    return f"args[{k}] ({legacy_args[k]}) is read again at line {ln}"
                continue
            if k not in remap:
                return f"args[{k}] is outside the legacy layout"
            if remap[k] != k:
                edits.append((lit.start_byte, lit.end_byte, str(remap[k])))
        arity_map = dict(zip(self.legacy.cpp_arity, tgt.cpp_arity))
        if not sizes:
            return "the branch does not tell the predicated form by args.size()"
        for lit, v in sizes:
            if v not in arity_map:
                return f"args.size() is compared with {v}, which is not a legacy argument count"
            m = _INT_RE.match(self.t(lit).strip())
            edits.append((lit.start_byte, lit.end_byte, str(arity_map[v]) + m.group(2)))
        # Every use of an offset local must be `<< ptr << "+" << offset` in a stream chain.
        for k_off, k_ptr in ((k_doff, k_dst), (k_soff, k_src)):
            ident, decl = top[k_off]
            ptr_name = self.t(top[k_ptr][0])
            off_name = self.t(ident)
            uses = [
                n
                for n in walk(body)
                if n.type == "identifier" and self.t(n) == off_name and n.start_byte != ident.start_byte
            ]
            if not uses:
                return f"`{off_name}` is read but never printed"
            for u in uses:
                span = self._joined_offset(u, ptr_name)
                if span is None:
                    ln = self.src.linecol(self.src.c(u.start_byte))[0]
                    helpers = self._printed_helpers(body, off_name)
                    if helpers:
                        names = ", ".join(f"`{h}`" for h in helpers)
                        runtime = ", ".join("`" + re.split(r"[.:]+", h)[-1] + "`" for h in helpers)
                        return (
                            f"it prints the offsets as separate arguments of the runtime helper"
                            f"{'s' if len(helpers) > 1 else ''} {names} (`{off_name}` at line {ln}), so the runtime "
                            f"helper must change with it: print only the access pointers "
                            f"(`{helpers[0]}(size, {ptr_name}, src)`, the predicate last) and give the runtime's "
                            f"{runtime} a pointer-only form "
                            f"in the same change (CPA007 where the runtime is Python in the scanned tree)"
                        )
                    return f"`{off_name}` is used at line {ln} other than as `{ptr_name} << \"+\" << {off_name}`"
                edits.append(span)
            edits.append(self._delete_statement(decl))
        site.edits = edits
        site.fixable = True
        site.applicability = Applicability.UNSAFE
        site.assumptions = [
            f"Every producer of this call in the program now builds the access-pointer layout "
            f"({'/'.join(map(str, tgt.cpp_arity))} arguments), so the branch no longer needs to accept the legacy one.",
        ]
        return None

    def _printed_helpers(self, body, off_name: str) -> list[str]:
        """Runtime helpers a printer branch prints calls of with ``off_name`` among their
        arguments: string literals ``"name("`` in the same ``<<`` chain as a use of the offset
        (CuTeDSL prints ``tl.cp_async_gs(size, dst, dst_offset, src, src_offset)``)."""
        out: list[str] = []
        for n in walk(body):
            if n.type != "identifier" or self.t(n) != off_name:
                continue
            top = n
            while top.parent is not None and top.parent.type == "binary_expression" and \
                    self.t(top.parent.child_by_field_name("operator")) == "<<":
                top = top.parent
            if top is n:
                continue
            for lit in walk(top):
                if lit.type != "string_literal" or lit.start_byte > n.start_byte:
                    continue
                content = "".join(self.t(c) for c in lit.named_children if c.type == "string_content")
                m = re.search(r"([A-Za-z_][\w.:]*)\(\s*$", content)
                if m and m.group(1) not in out:
                    out.append(m.group(1))
        return out

    def _joined_offset(self, use, ptr_name):
        """For ``... << ptr << "+" << use``: the byte span from after ``ptr`` to after ``use``."""
        p = use.parent
        if p is None or p.type != "binary_expression" or p.child_by_field_name("right") != use:
            return None
        if self.t(p.child_by_field_name("operator")) != "<<":
            return None
        left = p.child_by_field_name("left")
        if left is None or left.type != "binary_expression" or self.t(left.child_by_field_name("operator")) != "<<":
            return None
        join = left.child_by_field_name("right")
        if join is None or join.type != "string_literal":
            return None
        content = "".join(self.t(c) for c in join.named_children if c.type == "string_content")
        if content.strip() not in self.r.offset_join:
            return None
        ll = left.child_by_field_name("left")
        if ll is None or ll.type != "binary_expression" or self.t(ll.child_by_field_name("operator")) != "<<":
            return None
        ptr = ll.child_by_field_name("right")
        if ptr is None or ptr.type != "identifier" or self.t(ptr) != ptr_name:
            return None
        return (ptr.end_byte, use.end_byte, "")

    def _delete_statement(self, st):
        """Delete a statement; whole lines when it stands alone on them."""
        data = self.src.data
        lo = data.rfind(b"\n", 0, st.start_byte) + 1
        hi = data.find(b"\n", st.end_byte)
        hi = len(data) if hi == -1 else hi + 1
        if data[lo : st.start_byte].strip() == b"" and data[st.end_byte : hi].strip() == b"":
            return (lo, hi, "")
        return (st.start_byte, st.end_byte, "")

    def _parked_near_error(self, site, node) -> bool:
        """A site inside or next to a parse error is reported as CPA108 and not edited (True then)."""
        if not self.near_error(node):
            return False
        site.code = "CPA108"
        site.message += "; not edited: it is inside or next to a parse error"
        self.sites.append(site)
        return True

    def _dead(self, s, cond, body) -> None:
        self._dead_ranges.append((s.start_byte, s.end_byte))
        site = _Site(s, "CPA106", "")
        site.message = (
            f"unreachable branch: an earlier branch of this if/else chain already tests `{_short(self.t(cond), 80)}`"
        )
        if self._parked_near_error(site, s):
            return
        clause = s.parent  # else_clause
        alt = s.child_by_field_name("alternative")
        if alt is not None:
            span = (clause.start_byte, alt.start_byte, "")
        else:
            prev = clause.prev_sibling
            start = prev.end_byte if prev is not None else clause.start_byte
            span = (start, s.end_byte, "")
        site.edits = [span]
        site.fixable = True
        site.applicability = Applicability.UNSAFE
        site.assumptions = ["Nobody means to keep the unreachable branch's code (it never runs: the same test is made earlier)."]
        site.message += "; fix: delete it"
        self.sites.append(site)

    # ------------------------------------------------------------ helpers
    def _helper(self, fdecl) -> None:
        params_node = fdecl.child_by_field_name("parameters")
        inner = fdecl.child_by_field_name("declarator")
        if params_node is None or inner is None:
            return
        params = [p for p in named(params_node) if p.type in ("parameter_declaration", "optional_parameter_declaration")]
        if len(params) < 4:
            return
        names = [self._leaf_name(p.child_by_field_name("declarator")) for p in params]
        off = self.r.offset_param
        ptr = self.r.pointer_param
        if not (off.search(names[1]) and off.search(names[3])):
            return
        fname = squash(self.t(inner)).split("::")[-1]
        if fname not in self.r.helper_names and (
            not (ptr.search(names[0]) and ptr.search(names[2])) or self.r.helper_exclude.search(fname)
        ):
            return
        if any(a.type in ("call_expression", "argument_list") for a in ancestors(fdecl)):
            return
        self._tag = (self.r.helper_op, "reader")
        site = _Site(fdecl, "CPA105", "", op=self.r.helper_op, role="reader")
        site.message = (
            f"helper `{fname}` takes the legacy shape ({', '.join(names[:5])}); with access pointers the offsets are "
            "already in each pointer: give it a (dst_ptr, src_ptr, bytes[, predicate]) form and update its callers"
        )
        site.function_override = self._declarator_name(fdecl)  # type: ignore[attr-defined]
        self.sites.append(site)

    def _macro(self, m) -> None:
        val = m.child_by_field_name("value")
        if val is None:
            return
        if not re.search(rf"\b{re.escape(self.r.op_name)}\s*\(\s*\)", self.t(val)):
            return
        name = self.t(m.child_by_field_name("name"))
        body = self.t(val)
        self._tag = (self._macro_op(body), self._macro_role(body))
        site = _Site(m, "CPA109", "", op=self._tag[0], role=self._tag[1])
        site.message = (
            f"macro `{name}` names `{self.r.op_name}`; its body is not parsed, so a person must check which layout it "
            f"builds or reads ({self._index_map()})"
        )
        self.sites.append(site)

    def _macro_op(self, body: str) -> Optional[str]:
        """The op a macro body names: by the qualifier it spells, else the rules' default context."""
        m = re.search(rf"((?:::)?(?:\w+\s*::\s*)*){re.escape(self.r.op_name)}\s*\(\s*\)", body)
        op = self.r.op_of_scope(squash(m.group(1))) if m else None
        return op if op is not None else self.r.context_default

    def _macro_role(self, body: str) -> str:
        """"builder" when a call constructor takes the op (``Call(t, <op>, ...)``), else "reader"."""
        ctors = "|".join(re.escape(c) for c in self.r.call_constructors)
        name = re.escape(self.r.op_name)
        if re.search(rf"(?<![\w:])(?:{ctors})\s*\([^;]*?{name}\s*\(\s*\)", body):
            return "builder"
        return "reader"

    # ------------------------------------------------------- registrations
    def _registration(self, call) -> None:
        """``MACRO(ptx_cp_async).set_num_inputs(N)``: the registration declares a legacy arity."""
        fn = call.child_by_field_name("function")
        if fn is None or fn.type != "identifier" or self.t(fn) not in self.r.registration_macros:
            return
        a = named(call.child_by_field_name("arguments"))
        if len(a) != 1 or a[0].type != "identifier" or self.t(a[0]) != self.r.op_name:
            return
        op = self.r.registration_macros[self.t(fn)]
        self._tag = (op, "definition")
        # Walk the method chain: call -> field_expression -> call_expression (...)
        cur, arity = call, None
        while cur.parent is not None and cur.parent.type == "field_expression" and cur.parent.parent is not None \
                and cur.parent.parent.type == "call_expression":
            field = cur.parent.child_by_field_name("field")
            outer = cur.parent.parent
            if field is not None and self.t(field) == self.r.arity_method:
                arity = outer
                break
            cur = outer
        if arity is None:
            return  # no arity declared: every layout is accepted
        args = named(arity.child_by_field_name("arguments"))
        lit = args[0] if len(args) == 1 else None
        if lit is None or lit.type != "number_literal":
            return  # -1 (variadic, as upstream registers the new layouts) or a name: no legacy arity shown
        value = _int_value(self.t(lit))
        legacy = self.legacy.cpp_num_inputs
        target = self.target.cpp_num_inputs
        if value not in legacy:
            return  # the new arity, or a fork's own: not this API's legacy layout
        site = _Site(arity, "CPA110", "")
        site.function_override = f"{self.t(fn)}({self.r.op_name})"  # type: ignore[attr-defined]
        site.message = (
            f"`{self.t(fn)}({self.r.op_name})` registers `{op}` with {self.r.arity_method}({value}), a legacy "
            f"arity ({'/'.join(map(str, self.legacy.cpp_arity))} arguments); the access-pointer layout has "
            f"{'/'.join(map(str, self.target.cpp_arity))}"
        )
        if self._parked_near_error(site, arity):
            return
        new = str(target[0]) if target else None
        if new is None:
            site.message += "; left for a person: the target declares no registration arity"
            self.sites.append(site)
            return
        site.edits = [(lit.start_byte, lit.end_byte, new)]
        site.fixable = True
        site.applicability = Applicability.UNSAFE
        site.assumptions = [
            f"Every builder and reader of `{op}` in the program moves to the access-pointer layout in the same change "
            f"(the registration then accepts {'/'.join(map(str, self.target.cpp_arity))} arguments, not the legacy ones).",
        ]
        site.message += f"; fix: {self.r.arity_method}({new})"
        self.sites.append(site)

    # ------------------------------------------------------------- finish
    def _finish(self) -> list[Finding]:
        out = []
        candidates: list[tuple[Finding, _Site, list[Edit]]] = []
        steps = self._steps()
        for site in sorted(self.sites, key=lambda x: x.node.start_byte):
            start, end = self.src.span(site.node)
            line, col = self.src.linecol(start)
            eline, ecol = self.src.linecol(end)
            fn = getattr(site, "function_override", None) or self.qualname(self.func_of(site.node))
            f = Finding(
                path=self.path,
                line=line,
                column=col,
                end_line=eline,
                end_column=ecol,
                code=site.code,
                message=site.message,
                function=fn,
                op=site.op,
                role=site.role,
            )
            out.append(f)
            if site.info:
                f.status = Status.INFO
                f.legacy_site = False
                continue
            if self.r.suppress_comment in self.src.line_text(line):
                f.status = Status.SUPPRESSED
                f.message = f.message.split("; fix: ")[0] + "; suppressed by a comment"
                continue
            if site.fixable and site.edits:
                candidates.append((f, site, [Edit(self.src.c(a), self.src.c(b), r) for a, b, r in site.edits]))
        self._check_fixes(candidates, steps)
        return out

    def _check_fixes(self, candidates, steps) -> None:
        """Give each candidate (in document order) its fix, unless its edits overlap an earlier
        fix's or the rewritten text would have more parse errors than the original.

        The candidates that do not overlap are first checked together, with one parse (the
        engine's final check of the file then finds that text remembered); only when that
        fails is each checked on its own, so that the fix that breaks the parse is refused.
        Either way the result is the one the one-by-one check gives whenever each fix
        parses on its own.
        """
        if not candidates:
            return
        base = len(self.errors)
        error_summary(self.text, self.src.root)

        def clashes(edits, taken) -> bool:
            return any(a < te and ta < b or (a == b == ta) for a, b in ((e.start, e.end) for e in edits)
                       for ta, te in taken)

        def accept(f, site, edits, taken) -> None:
            f.fix = Fix(edits=edits, applicability=site.applicability, assumptions=list(site.assumptions),
                        steps=list(steps))
            taken.extend((e.start, e.end) for e in edits)

        taken: list[tuple[int, int]] = []
        free = []
        for c in candidates:
            if not clashes(c[2], taken):
                free.append(c)
                taken.extend((e.start, e.end) for e in c[2])
        together = apply_edits(self.text, [e for _, _, edits in free for e in edits])
        together_ok = error_summary(together)[0] <= base
        taken = []
        for f, site, edits in candidates:
            if clashes(edits, taken):
                f.message += "; left for a person: its edits would overlap another site's"
            elif together_ok or error_summary(apply_edits(self.text, edits))[0] <= base:
                accept(f, site, edits, taken)
            else:
                f.code = "CPA108"
                f.message += "; not edited: the rewritten text would not parse"

    def _steps(self) -> list[str]:
        try:
            return self.rules.steps(self.opt.source.name, self.target.name)
        except Exception:
            return [f"{self.legacy.name}->{self.target.name}"]


def _short(text: str, limit: int = 60) -> str:
    s = " ".join(text.split())
    return s if len(s) <= limit else s[: limit - 3] + "..."
