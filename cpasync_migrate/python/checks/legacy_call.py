"""CPA001 / CPA002: a legacy offset-form call and its rewrite into the access-pointer form.

CPA001 legacy-call: docs/codes/CPA001.md.
CPA002 legacy-call-manual: docs/codes/CPA002.md.

Each pointer is typed by its buffer's declaration (in merged dynamic shared memory, the
destination by the call's dtype: rules/shared_memory.toml), its extent the bytes in elements
of that type.

A unit over the file's context (``ctx``): it asks ``ctx.bindings`` where buffers and dtypes come from,
``ctx.smem`` how the legacy lowering addressed the destination, ``ctx.imports`` the alias to spell the
new call with; ``callers.py`` reads a macro parameter's callers, ``layout.py`` lays the new call out.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from dataclasses import replace as _replace
from typing import NamedTuple, Optional, Sequence

import libcst as cst

from ... import codes
from ...findings import Edit, Finding, Fix
from .. import layout
from ..calls import INTRINSIC
from ..context import Context, DType, NoFix, Pointer
from ..cst_util import int_value, is_atom
from ..decide import legacy as decide


class LegacyParams(NamedTuple):
    """The legacy call's parameter names in the order of rules/ (``python_params`` of the legacy generation)."""

    dtype: str
    dst_ptr: str
    dst_off: str
    src_ptr: str
    src_off: str
    size: str  # the byte count


@dataclass
class LegacyShape:
    """A legacy call as recognised (:meth:`LegacyCall._recognise`) and decided, what emitting reads.

    ``bound`` maps each parameter name (``keys``, a :class:`LegacyParams`) to the call's argument for it;
    ``dst`` and ``src`` are the pointers, each typed by its buffer's declaration (the destination by the call's
    dtype in merged shared memory: ``retyped``); ``nbytes`` the byte count when it is an integer literal.
    Deciding (a target whose size counts elements) gives both pointers one type, puts the narrow side's
    divided offset text in ``offsets`` (offset parameter -> text) and the element count in ``count``.
    ``assumptions`` collects, in the order found, what the fix rests on (the route's first).
    """

    node: cst.Call
    bound: dict
    keys: LegacyParams
    dst: Pointer
    src: Pointer
    nbytes: Optional[int]
    assumptions: list
    offsets: dict = field(default_factory=dict)
    count: Optional[int] = None

    @property
    def size_arg(self) -> cst.Arg:
        return self.bound[self.keys.size]


class LegacyCall:
    """The legacy form's rewrite: ``LegacyCall(ctx).check_legacy_call(node, finding, ...)``."""

    ctx: Context

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def check_legacy_call(self, node: cst.Call, finding: Finding, switch_callee: bool,
                          route_assumptions: Sequence[str] = ()) -> None:
        """Fill ``finding`` for a call in the legacy shape: its fix (CPA001), or why there is none (CPA002).
        ``route_assumptions``: what the route to the intrinsic rests on (reach.py's ``Reach.assumption``)."""
        try:
            finding.fix, note = self.rewrite(node, switch_callee=switch_callee, route_assumptions=route_assumptions)
            finding.message = decide.FIX_MESSAGE + note
        except NoFix as e:
            finding.code = codes.LEGACY_CALL_MANUAL
            finding.message = decide.manual_message(str(e))

    def bind_legacy(self, node: cst.Call) -> dict[str, cst.Arg]:
        positional = [a for a in node.args if a.keyword is None]
        keywords = {a.keyword.value: a for a in node.args if a.keyword is not None}
        try:
            where = decide.bind(list(self.ctx.legacy.python_params), len(positional),
                                [a.keyword.value for a in node.args if a.keyword is not None])
        except decide.NotMigrated as e:
            raise NoFix(str(e)) from None
        return {p: positional[i] if how == "pos" else keywords[i] for p, (how, i) in where.items()}

    def pointer(self, arg: cst.Arg, call: cst.Call, call_dtype: Optional[cst.Arg]) -> Pointer:
        v = arg.value
        buf = None
        shape = decide.NAME if isinstance(v, cst.Name) else decide.DATA if (
            isinstance(v, cst.Attribute) and v.attr.value == "data" and isinstance(v.value, cst.Name)) else decide.OTHER
        why = decide.pointer_problem(shape, self.ctx.node_text(v) if shape == decide.OTHER else "")
        if why:
            raise NoFix(why)
        routed = self.through_callers(arg, call)
        if routed is not None:
            return routed
        if isinstance(v, cst.Attribute) and v.attr.value == "data" and isinstance(v.value, cst.Name):
            buf = v.value.value
            found = self.ctx.bindings.declaration_of(call, buf)
            if found is not None:
                ctx_node, decl = found
                dexpr, fname = self.ctx.bindings.decl_dtype_expr(decl)
                if dexpr is None:
                    d = self.ctx.bindings.declared_default(fname, buf)
                    return Pointer(arg, buf, DType(f'"{d}"', d, self.ctx.rules.dtype_size(d)))
                dt = self.ctx.bindings.dtype_of_expr(dexpr, ctx_node)
                if not self.ctx.bindings.same_binding(ctx_node, call, dexpr):
                    # the declaration's dtype expression means something else here
                    if dt.name is None:
                        raise NoFix(f"the dtype of `{buf}` (`{dt.text}`) is not visible at the call")
                    dt = DType(f'"{dt.name}"', dt.name, dt.size)
                return Pointer(arg, buf, dt)
        if buf is not None:
            agreed = self.no_conflicting_declarations(call, buf)
            if agreed is not None:
                dt, decls = agreed
                # every declaration that reaches the call gives one type: the text decides it (the merge question,
                # where it arises, is asked of them as of a macro's callers' buffers)
                return Pointer(arg, buf, DType(f'"{dt}"', dt, self.ctx.rules.dtype_size(dt)), routed_decls=decls)
        # no declaration visible: fall back to the call's dtype
        what = f"`{buf}`" if buf else f"`{self.ctx.node_text(v)}`"
        if call_dtype is None:
            raise NoFix(f"no declaration of {what} is visible and the call has no dtype")
        dt = self.ctx.bindings.dtype_of_expr(call_dtype.value, call)
        dt.assumptions = dt.assumptions + [
            f"no declaration of {what} is visible; its element type is assumed to be the call's dtype "
            f"{self.ctx.node_text(call_dtype.value)}"
        ]
        return Pointer(arg, buf, dt)

    def no_conflicting_declarations(self, call: cst.Call, buf: str) -> Optional[tuple[str, list]]:
        """NoFix when several declarations of ``buf`` reach the call (branches of a factory's ``if``, nested or
        not) and they give different element types: no fix may pick one of them.  When they all give one known
        type: (that type, the declarations); None when fewer than two reach it."""
        decls = self.ctx.bindings.declarations_of(call, buf)
        if not decls or len(decls) < 2:
            return None
        kinds = set()
        for ctx_node, decl in decls:
            try:
                dexpr, fname = self.ctx.bindings.decl_dtype_expr(decl)
                b = self.ctx.bindings
                dt = b.declared_default(fname, buf) if dexpr is None else b.dtype_of_expr(dexpr, ctx_node).name
            except NoFix:
                dt = None
            kinds.add(dt)
        if len(kinds) > 1 or None in kinds:
            raise NoFix(f"{len(decls)} declarations of `{buf}` reach the call "
                        f"({self.ctx.bindings.readings(decls, buf)}); "
                        "each gives the access pointer its own type and the text does not decide which one "
                        "holds: migrate each branch by hand")
        (dt,) = kinds
        if self.ctx.rules.dtype_size(dt) is None:
            return None
        return dt, [d for _, d in decls]

    def through_callers(self, arg: cst.Arg, call: cst.Call) -> Optional[Pointer]:
        """A pointer that is a T.macro's parameter, typed by the buffers the macro's calls pass (callers.py).

        None when the pointer is not a macro parameter or no call of the macro is visible (then the
        declaration or the call's dtype decides, with its assumption)."""
        from ..callers import param_route

        v = arg.value
        data = isinstance(v, cst.Attribute)
        name = v.value.value if data else v.value
        macros = set(self.ctx.rules.shared_memory.get("functions", {}).get("macro", []))
        route = param_route(self.ctx, call, name, macros)
        if route is None or route.why_unknown or not route.bindings:
            return None
        macro = route.macro.name.value
        seen = []  # (dtype, buffer, line, declaration) per kernel-side buffer the calls pass
        public: list = []  # public module-level macros on the way (their other callers are not read)
        self._routed(route, name, data, seen, public, 0)
        kinds = {dt.name for dt, _, _, _ in seen}
        sizes = {dt.size for dt, _, _, _ in seen}
        if len(sizes) > 1 or len(kinds) > 1:
            listing = ", ".join(f"`{b}` ({dt.name}, line {ln})" for dt, b, ln, _ in seen)
            raise NoFix(f"the calls of macro `{macro}` pass buffers of different element types for `{name}`: "
                        f"{listing}; one rewrite cannot serve them all")
        dt0 = seen[0][0]
        d = DType(f'"{dt0.name}"', dt0.name, dt0.size)
        from ..callers import exported

        for m, pname, index, pdata in public:
            a = (f"only the calls of macro `{m}` in this file pass `{pname}` (another file could import the macro "
                 "and pass another buffer)")
            d.assumptions.append(a)
            # importers.py reads the importing files' calls of `m` for the same reading
            self.ctx.importer_questions[a] = (m, bool(exported(self.ctx, m)), {
                "kind": "dtype", "param": pname, "index": index, "data": pdata, "dtype": dt0.name})
        note = ""
        ann = route.param.annotation
        if data and ann is not None:
            try:
                aexpr, _ = self.ctx.bindings.decl_dtype_expr(ann.annotation)
                adt = self.ctx.bindings.dtype_of_expr(aexpr, route.param) if aexpr is not None else None
            except NoFix:
                adt = None
            if adt is not None and adt.name is not None and adt.size != dt0.size:
                note = (f"; the annotation of `{name}` says {adt.name}, but every call of `{macro}` passes "
                        f"{dt0.name}: the calls decide")
        return Pointer(arg, name if data else None, d, routed_decls=[x[3] for x in seen], note=note)

    def _routed(self, route, name: str, data: bool, seen: list, public: list, depth: int) -> None:
        """Add to ``seen`` the buffers the calls of ``route``'s macro pass for parameter ``name``, following a
        macro called from another macro (its argument a parameter of the outer one) to the kernels that pass
        declared buffers; ``data``: the parameter is a buffer (``name.data`` at the call), else a pointer."""
        from ..callers import param_route

        macro = route.macro.name.value
        if route.public and not any(p[:2] == (macro, name) for p in public):
            params = list(route.macro.params.params)
            public.append((macro, name, params.index(route.param) if route.param in params else None, data))
        macros = set(self.ctx.rules.shared_memory.get("functions", {}).get("macro", []))
        for b in route.bindings:
            e = b.expr
            line = self.ctx.pos(b.site).start.line
            if data and isinstance(e, cst.Name):
                bufname, buffer = e.value, True
            elif not data and isinstance(e, cst.Attribute) and e.attr.value == "data" and isinstance(e.value, cst.Name):
                bufname, buffer = e.value.value, True
            elif not data and isinstance(e, cst.Name):
                bufname, buffer = e.value, False  # a pointer parameter of an outer macro, passed on
            else:
                raise NoFix(f"the call of macro `{macro}` at line {line} passes `{self.ctx.node_text(e)}` "
                            f"for `{name}`, "
                            "not a buffer whose declaration the tool can read")
            outer = param_route(self.ctx, b.site, bufname, macros)
            if outer is not None and not outer.why_unknown and outer.bindings:
                # the argument is a parameter of the macro that holds this call: that macro's calls decide
                # (where none is visible, its annotation, as for a macro no call reaches)
                if depth >= 6:
                    raise NoFix(f"macros call macros too deeply to follow from `{macro}`")
                self._routed(outer, bufname, buffer, seen, public, depth + 1)
                continue
            if not buffer:
                raise NoFix(f"the call of macro `{macro}` at line {line} passes `{bufname}` for `{name}`, "
                            "not a buffer whose declaration the tool can read")
            found = self.ctx.bindings.declaration_of(b.site, bufname)
            if found is None:
                raise NoFix(f"the call of macro `{macro}` at line {line} passes `{bufname}` for `{name}`, and "
                            + self.ctx.bindings.no_declaration_why(b.site, bufname))
            dexpr, fname = self.ctx.bindings.decl_dtype_expr(found[1])
            if dexpr is None:
                dn = self.ctx.bindings.declared_default(fname, bufname)
                dt = DType(f'"{dn}"', dn, self.ctx.rules.dtype_size(dn))
            else:
                dt = self.ctx.bindings.dtype_of_expr(dexpr, found[0])
            if dt.name is None:
                raise NoFix(f"the call of macro `{macro}` at line {line} passes `{bufname}`, whose dtype "
                            f"`{dt.text}` is not known inside the macro")
            seen.append((dt, bufname, line, found[1]))

    def destination(self, ptr: Pointer, call: cst.Call, call_dtype: cst.Arg) -> Pointer:
        """The destination's pointer type under the legacy lowering's own addressing.

        A legacy destination offset counts elements of the buffer's type, except in merged dynamic
        shared memory, where it counts elements of the call's dtype (``smem.py``).  The question
        only arises when the two types differ.
        """
        if ptr.routed_decls:
            found = (call, ptr.routed_decls[0])  # the buffer the macro's calls pass
            if any(not self._same_decl_scope(d, ptr.routed_decls[0]) for d in ptr.routed_decls[1:]):
                raise NoFix("the calls of the macro pass destination buffers of different storage scopes")
        else:
            found = self.ctx.bindings.declaration_of(call, ptr.buffer) if ptr.buffer else None
        if found is None or (ptr.dtype.assumptions and not ptr.routed_decls):
            return ptr  # no declaration: the call's dtype is already the pointer type (an assumption)
        try:
            cdt = self.ctx.bindings.dtype_of_expr(call_dtype.value, call)
        except NoFix:
            cdt = None
        if cdt is not None and self._same_type(ptr.dtype, cdt, found[0], call_dtype.value, call):
            return ptr
        reading = self.ctx.smem.reading(call, found[1])
        buf_t = ptr.dtype.name or ptr.dtype.text
        call_t = self.ctx.node_text(call_dtype.value)
        if reading.merged is None:
            raise NoFix(
                f"the destination's offset counts elements of the call's dtype {call_t} if TileLang 0.1.7.post1 "
                f"merged this kernel's dynamic shared memory (two or more used shared.dyn buffers), and of "
                f"`{ptr.buffer}`'s own type {buf_t} if not; the text does not decide it: {reading.why}")
        if not reading.merged:
            ptr.dtype.assumptions = ptr.dtype.assumptions + reading.assumptions
            return ptr
        if cdt is None:
            raise NoFix(f"`{ptr.buffer}` sits in merged shared memory ({reading.why}), so its offset counts elements "
                        f"of the call's dtype `{call_t}`, which is not a known dtype")
        cdt.assumptions = cdt.assumptions + reading.assumptions
        return Pointer(ptr.arg, ptr.buffer, cdt, retyped=True, why=reading.why, routed_decls=ptr.routed_decls)

    def _same_decl_scope(self, a, b) -> bool:
        smem = self.ctx.smem
        return smem.scope_of_declaration(a) == smem.scope_of_declaration(b)

    def _same_type(self, a: DType, b: DType, a_at, b_expr, b_at) -> bool:
        """Pointer arithmetic in ``a`` and in ``b`` moves by the same bytes, whatever their values."""
        if a.size is not None and b.size is not None:
            return a.size == b.size
        return a.text == b.text and self.ctx.bindings.same_binding(a_at, b_at, b_expr)

    def buffer_style_problem(self, ptr: Pointer, call: cst.Call, parg: cst.Arg, oarg: cst.Arg,
                             scaled: Optional[str]) -> Optional[str]:
        """Why ``T.access_ptr(buf[off], ...)`` would not be exact here (None when it is)."""
        if ptr.buffer is None:
            return "the pointer is not `<buffer>.data`"
        if scaled is not None:
            return "its offset is rescaled to the other pointer's type"
        found = self.ctx.bindings.declaration_of(call, ptr.buffer)
        if found is None:
            return f"no declaration of `{ptr.buffer}` is visible"
        ndim = self.ctx.bindings.decl_ndim(found[1])
        if ndim != 1:
            return (f"`{ptr.buffer}` has {ndim if ndim else 'an unknown number of'} dimension(s); "
                    "a flat offset is an index only of a one-dimensional buffer")
        if ptr.dtype.assumptions:
            return "its element type rests on an assumption"
        if ptr.retyped:
            return "its offset counts elements of the call's dtype, not of the buffer's"
        _, pe = self.ctx.vspan(parg.value)
        os_, _ = self.ctx.vspan(oarg.value)
        if "#" in self.ctx.text[pe:os_]:
            return "a comment sits between the pointer and the offset"
        return None

    def rewrite(self, node: cst.Call, switch_callee: bool = False,
                route_assumptions: Sequence[str] = ()) -> tuple[Fix, str]:
        """The fix of a legacy call and the note for its message, step by step: recognise the call (its
        arguments and pointer types: :class:`LegacyShape`), decide what the target needs of it (one pointer
        type and an element count where the size counts elements), emit the new argument list."""
        shape = self._recognise(node, route_assumptions)
        if self.ctx.target.size_meaning == "num_elems":
            self._decide_one_type(shape)
        for ptr in (shape.dst, shape.src):
            shape.assumptions.extend(ptr.dtype.assumptions)
        return self._emit(shape, switch_callee)

    def _recognise(self, node: cst.Call, route_assumptions: Sequence[str]) -> "LegacyShape":
        """Step 1: the call's arguments by parameter, and each pointer typed as the legacy lowering reads it."""
        bound = self.bind_legacy(node)
        k = LegacyParams(*self.ctx.legacy.python_params)
        call_dtype = bound[k.dtype]
        dst = self.destination(self.pointer(bound[k.dst_ptr], node, call_dtype), node, call_dtype)
        src = self.pointer(bound[k.src_ptr], node, call_dtype)
        return LegacyShape(node, bound, k, dst, src, int_value(bound[k.size].value),
                           list(route_assumptions))  # the route's own assumptions first (reach.py)

    def _decide_one_type(self, shape: "LegacyShape") -> None:
        """Step 2, for a target whose size counts elements: one pointer type for both sides, both sizes
        known, and the element count that replaces the bytes (``shape.count``)."""
        dst, src, target = shape.dst, shape.src, self.ctx.target
        # both sizes must be known, or both pointers typed by one expression with a default (a factory's
        # `dtype`): the literal count then rests on that default
        if dst.dtype.size is None and src.dtype.size is None and dst.dtype.text == src.dtype.text and \
                dst.dtype.assumed_size is not None:
            d = dst.dtype
            shape.assumptions.append(f"`{d.text}` keeps its default {d.assumed_name} ({d.assumed_size}-byte "
                                     f"elements): {target.name} needs the element count as an integer literal")
            shape.dst = _replace(dst, dtype=DType(d.text, d.assumed_name, d.assumed_size, list(d.assumptions)))
            shape.src = _replace(src, dtype=DType(d.text, d.assumed_name, d.assumed_size,
                                                  list(src.dtype.assumptions)))
        for ptr in (shape.dst, shape.src):
            if ptr.dtype.size is None:
                raise NoFix(f"the element size of `{ptr.dtype.text}` is not known from the text; "
                            f"{target.name} needs the element count as an integer literal")
        if shape.nbytes is None:
            raise NoFix(f"the byte count `{self.ctx.node_text(shape.size_arg.value)}` is not an integer literal; "
                        f"{target.name} needs num_elems as an integer literal")
        if shape.dst.dtype.size != shape.src.dtype.size:
            self._widen_narrow_side(shape)
        try:
            shape.count = decide.element_count(target, shape.nbytes, shape.dst.dtype.size, shape.dst.dtype.name)
        except decide.NotMigrated as e:
            raise NoFix(str(e)) from None

    def _widen_narrow_side(self, shape: "LegacyShape") -> None:
        """One pointer type for both sides.  The wider type keeps every offset in bounds of its own buffer
        (TileLang checks access-pointer offsets against the buffer's element count, so a byte view of a wide
        tensor with scaled offsets is guarded out); the narrow side's offset is divided exactly, which needs
        it to be a visible multiple of the ratio (``shape.offsets``)."""
        dst, src, k = shape.dst, shape.src, shape.keys
        narrow, wide = (dst, src) if dst.dtype.size < src.dtype.size else (src, dst)
        ratio = wide.dtype.size // narrow.dtype.size
        k_off = k.dst_off if narrow is dst else k.src_off
        off_node = shape.bound[k_off].value
        if not _divisible(off_node, ratio, lambda n: self.ctx.bindings.const_int(n, shape.node)):
            raise NoFix(
                f"`{narrow.buffer}` ({narrow.dtype.name}) and `{wide.buffer}` ({wide.dtype.name}) differ in "
                f"width and {self.ctx.target.name} needs one pointer type; addressing `{narrow.buffer}` as "
                f"{wide.dtype.name} needs its offset `{self.ctx.node_text(off_node)}` to be a multiple of {ratio}, "
                "which the text does not show")
        shape.offsets[k_off] = _divide(off_node, self.ctx.node_text, ratio)
        widened = Pointer(narrow.arg, narrow.buffer, DType(wide.dtype.text, wide.dtype.name, wide.dtype.size,
                                                           list(narrow.dtype.assumptions)),
                          retyped=narrow.retyped, why=narrow.why)
        if narrow is dst:
            shape.dst = widened
        else:
            shape.src = widened

    def _emit(self, shape: "LegacyShape", switch_callee: bool) -> tuple[Fix, str]:
        """Step 3: the new argument list under the alias the file spells tilelang.language with, laid out like
        the file, and the fix's safety from the assumptions."""
        node, k, imports = shape.node, shape.keys, self.ctx.imports
        T = imports.own_alias(node) or imports.emit_alias()
        n_dst = self._extent(shape, shape.dst, T)
        n_src = self._extent(shape, shape.src, T)
        if not imports.alias_visible_at(T, node) and imports.import_edit is None:
            raise NoFix(f"`{T}` (tilelang.language) is shadowed at this call")
        before, after, replace, merge, style_note = self._arguments(shape, T, n_dst, n_src)
        edits = self.layout_edits(
            node, shape.bound,
            order=[k.dst_ptr, k.dst_off, k.src_ptr, k.src_off, k.size],
            drop=k.dtype, before=before, after=after, replace=replace, merge=merge,
        )
        steps = self.ctx.rules.steps(self.ctx.legacy.name, self.ctx.target.name)
        if switch_callee:
            fs, fe = self.ctx.vspan(node.func)
            edits.append(Edit(fs, fe, f"{T}.{INTRINSIC}"))
            steps = ["tvm->tilelang"] + steps
        edits = layout.lay_out(self.ctx, node, edits)  # the new call laid out like the file (python/layout.py)
        if imports.import_edit is not None:
            # every fix that needs the import carries the same edit; the engine applies it once
            edits.append(imports.import_edit)
        assumptions = list(dict.fromkeys(shape.assumptions))
        applic, note = decide.fix_safety(assumptions)
        questions = self.ctx.importer_questions
        importers = {a: questions[a] for a in assumptions if a in questions}
        note += shape.dst.note + shape.src.note
        if shape.dst.retyped:
            note += decide.retyped_note(self.ctx.node_text(shape.bound[k.dtype].value), shape.dst.why)
        note += style_note
        return Fix(edits, applic, assumptions, steps, importers), note

    def _arguments(self, shape: "LegacyShape", T: str, n_dst: str, n_src: str) -> tuple:
        """What ``layout_edits`` puts around, in place of and between the arguments (``before``, ``after``,
        ``replace``, ``merge``), and the note for the pointers ``--style access_ptr`` could not take."""
        dst, src, k, g = shape.dst, shape.src, shape.keys, self.ctx.target
        before = {
            k.dst_ptr: decide.access_ptr_before(T, g, dst.dtype.text),
            k.src_ptr: decide.access_ptr_before(T, g, src.dtype.text),
        }
        after = {k.dst_off: decide.access_ptr_after(n_dst, g.dst_rw_mask),
                 k.src_off: decide.access_ptr_after(n_src, g.src_rw_mask)}
        replace = {key: shape.offsets[key] for key in (k.dst_off, k.src_off) if key in shape.offsets}
        merge: dict = {}
        note = ""
        if self.ctx.opts.style == "access_ptr" and g.buffer_access_ptr:
            for ptr, kp, ko, rw, n in ((dst, k.dst_ptr, k.dst_off, g.dst_rw, n_dst),
                                       (src, k.src_ptr, k.src_off, g.src_rw, n_src)):
                why = self.buffer_style_problem(ptr, shape.node, shape.bound[kp], shape.bound[ko], replace.get(ko))
                if why:
                    note += f"; --style access_ptr not used for `{self.ctx.node_text(ptr.arg.value)}`: {why}"
                    continue
                before[kp] = f"{T}.{g.buffer_access_ptr}({ptr.buffer}["
                after[ko] = f'], "{rw}", {n})'
                merge[kp] = ko  # the text between the pointer and the offset goes away
        if shape.count is not None:
            replace[k.size] = str(shape.count)
        return before, after, replace, merge, note

    def _extent(self, shape: "LegacyShape", ptr: Pointer, T: str) -> str:
        """The access pointer's extent: the bytes in elements of its type (an assumption where that rests on
        a default or on the byte count's value goes on ``shape.assumptions``)."""
        size, nbytes, target = ptr.dtype.size, shape.nbytes, self.ctx.target
        if size is None and nbytes is not None and target.dtype_bits and not ptr.dtype.assumptions:
            # the element count as an expression TileLang evaluates when it builds the kernel, exact
            # whatever the factory passes (rules: the generation's `dtype_bits`), where the text decides
            # the pointer type (no fallback to the call's dtype)
            bits = target.dtype_bits.format(T=T, dtype=ptr.dtype.text)
            widest = max(self.ctx.rules.dtype_sizes.values())
            if nbytes % widest:
                shape.assumptions.append(f"`{ptr.dtype.text}` is a type whose elements divide {nbytes} bytes")
            return f"{nbytes} * 8 // {bits}"
        if size is None:
            if ptr.dtype.assumed_size is None:
                raise NoFix(f"the element size of `{ptr.dtype.text}` is not known from the text "
                            "(give it a default or a literal dtype)")
            size = ptr.dtype.assumed_size
            shape.assumptions.append(f"`{ptr.dtype.text}` keeps its default {ptr.dtype.assumed_name} "
                                     f"({size}-byte elements) for the access pointer's extent")
        if nbytes is not None:
            try:
                return decide.extent(nbytes, size, ptr.dtype.name or ptr.dtype.text)
            except decide.NotMigrated as e:
                raise NoFix(str(e)) from None
        size_value = shape.size_arg.value
        stext = self.ctx.node_text(size_value)
        if size == 1:
            return stext
        if size >= 8:
            shape.assumptions.append(f"the byte count `{stext}` is a multiple of {size}")
        return f"{stext} // {size}" if is_atom(size_value) else f"({stext}) // {size}"

    def layout_edits(self, node: cst.Call, bound: dict[str, cst.Arg], order: Sequence[str], drop: str,
                     before: dict, after: dict, replace: dict, merge: Optional[dict] = None) -> list[Edit]:
        """Edits that turn the legacy argument list into the new one.

        ``before``/``after``: text inserted around an argument's value;
        ``replace``: new text for a value; ``merge``: pointer -> offset
        pairs whose pointer value and separator are replaced by
        ``before[pointer]`` (the offset becomes an index).
        """
        merge = merge or {}
        merged_into = {v: k for k, v in merge.items()}
        args = list(node.args)
        index = {id(a): i for i, a in enumerate(args)}
        keep = [bound[k] for k in order]
        in_order = [a for a in args if a is not bound[drop]]
        edits: list[Edit] = []
        if [id(a) for a in in_order] == [id(a) for a in keep]:
            # drop the dtype argument
            di = index[id(bound[drop])]
            ds, de = self.ctx.span(args[di])
            if di + 1 < len(args):
                ns, _ = self.ctx.span(args[di + 1])
                gap = self.ctx.text[de:ns]
                if "#" in gap:
                    # keep the comment: remove only the value and its comma token
                    cs, ce = self.ctx.span(args[di].comma)
                    edits.append(Edit(ds, de, ""))
                    edits.append(Edit(cs, ce, ""))
                else:
                    edits.append(Edit(ds, ns, ""))
            else:
                prev = args[di - 1]
                _, pe = self.ctx.span(prev)
                gap = self.ctx.text[pe:ds]
                if "#" in gap:
                    cs, ce = self.ctx.span(prev.comma)
                    edits.append(Edit(cs, ce, ""))
                    edits.append(Edit(ds, de, ""))
                else:
                    edits.append(Edit(pe, de, ""))
            for k in order:
                a = bound[k]
                vs, ve = self.ctx.vspan(a.value)
                as_, _ = self.ctx.span(a)
                if k in merge:
                    ovs, _ = self.ctx.vspan(bound[merge[k]].value)
                    edits.append(Edit(as_, ovs, before[k]))
                    continue
                if k in merged_into:  # its name and what goes before it came with the argument merged into it
                    edits += decide.kept_argument_edits(k, as_, vs, ve, False, {}, replace, after)
                else:
                    edits += decide.kept_argument_edits(k, as_, vs, ve, a.keyword is not None, before, replace, after)
            return _merge_point_edits(edits)
        # out of order: re-emit the argument list in canonical order
        gaps = "".join(self.ctx.text[self.ctx.span(args[i])[1]:self.ctx.span(args[i + 1])[0]] for i in range(len(args) - 1))
        if "#" in gaps:
            raise NoFix("keyword arguments are out of order and comments sit between them")
        parts = []
        for k in order:
            a = bound[k]
            if k in merge:
                continue
            if k in merged_into:
                parts.append(before[merged_into[k]] + replace.get(k, self.ctx.node_text(a.value)) + after.get(k, ""))
                continue
            vtext = replace.get(k, self.ctx.node_text(a.value))
            parts.append(before.get(k, "") + vtext + after.get(k, ""))
        s, _ = self.ctx.span(args[0])
        _, e = self.ctx.span(args[-1])
        return [Edit(s, e, ", ".join(parts))]


def _divisible(node: cst.BaseExpression, r: int, const=lambda n: None) -> bool:
    """The integer expression is a multiple of ``r`` for every value of its variables.

    ``const(name_node)`` gives the value of a name bound once to an integer constant, or None.
    """
    iv = int_value(node)
    if iv is None and isinstance(node, cst.Name):
        iv = const(node)
    if iv is not None:
        return iv % r == 0
    if isinstance(node, cst.BinaryOperation):
        if isinstance(node.operator, (cst.Add, cst.Subtract)):
            return _divisible(node.left, r, const) and _divisible(node.right, r, const)
        if isinstance(node.operator, cst.Multiply):
            return _divisible(node.left, r, const) or _divisible(node.right, r, const)
    return False


def _divide(node: cst.BaseExpression, text_of, r: int) -> str:
    """Text of ``node / r`` for an expression that ``_divisible`` accepted, simplified where it is plain."""
    iv = int_value(node)
    if iv is not None and not node.lpar:
        return str(iv // r)
    if isinstance(node, cst.BinaryOperation) and not node.lpar:
        op = node.operator
        if isinstance(op, (cst.Add, cst.Subtract)):
            left = _divide(node.left, text_of, r)
            right = _divide(node.right, text_of, r)
            # a right operand whose quotient reads as a sum would change meaning after "-": keep it whole
            if node.right.lpar or not _is_sum(right):
                sign = "+" if isinstance(op, cst.Add) else "-"
                return f"{left} {sign} {right}"
        elif isinstance(op, cst.Multiply):
            for lit, other in ((node.right, node.left), (node.left, node.right)):
                k = int_value(lit)
                if k is not None and k % r == 0 and not lit.lpar:
                    t = text_of(other)
                    if isinstance(other, cst.BinaryOperation) and not other.lpar and \
                            not isinstance(other.operator, (cst.Multiply, cst.FloorDivide, cst.Modulo)):
                        t = f"({t})"
                    return t if k // r == 1 else f"{t} * {k // r}"
    t = text_of(node)
    return f"{t} // {r}" if is_atom(node) else f"({t}) // {r}"


def _is_sum(text: str) -> bool:
    return " + " in text or " - " in text


_merge_point_edits = decide.merge_point_edits
