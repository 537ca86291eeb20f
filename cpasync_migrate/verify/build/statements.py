"""The kernel builder: a prim_func's body as a :class:`~cpasync_migrate.verify.ir.Kernel`.

:class:`KernelBuilder` reads the parameters and the statements of one prim_func: assignments
and unpacking, buffer declarations, the launch (``T.Kernel``, thread bindings and launched
threads), ``T.macro`` calls inlined at their call sites, loops, ``if`` and the statement calls
(cp.async, commit and wait groups, barriers, ``T.copy``, ``T.fill``).  A statement outside the
modelled subset becomes an :class:`~cpasync_migrate.verify.ir.Opaque` so that the rest is still
read.  It is composed from the parts of ``copies.py`` and ``expressions.py`` over the shared
:class:`~.context.KernelContext` and is the one class that defines every method the protocols of
``parts.py`` declare; ``build_kernels`` (the package's front door) runs it.
"""
from __future__ import annotations

import ast
from typing import Optional

from ..ir import (
    Assign, Barrier, Bin, Commit, Const, CopyRegion, Evaluate, Fill, For, If, Kernel, Load, Opaque, Parallel, Store,
    Unsupported, Wait,
)
from .context import KernelContext
from .copies import DEFAULT_SCOPES, CopyBuilder
from .expressions import ExpressionBuilder, fold
from .module import BIN_OPS, MacroDef, Scope, Unknown
from .parts import StatementPart

NOOP_OPS = {"reads", "writes", "func_attr", "block_attr", "use_swizzle", "no_set_max_nreg", "annotate_l2_hit_ratio"}
BLOCK_CTX = {"block", "sblock", "init"}
LOOP_OPS = {"serial": "serial", "unroll": "unroll", "vectorized": "vectorized", "Pipelined": "pipelined",
            "range": "serial"}
THREAD_TAGS = {"threadIdx.x": ("threadIdx", 0), "threadIdx.y": ("threadIdx", 1), "threadIdx.z": ("threadIdx", 2),
               "blockIdx.x": ("blockIdx", 0), "blockIdx.y": ("blockIdx", 1), "blockIdx.z": ("blockIdx", 2)}


# ---------------------------------------------------------------- kernel body
class KernelBuilder(CopyBuilder, ExpressionBuilder, KernelContext, StatementPart):
    """One prim_func's kernel IR: ``KernelBuilder(mod, src, meaning).build()`` (see the module docstring)."""

    # build ----------------------------------------------------------------
    def build(self) -> Kernel:
        fn = self.src.node
        self.check_decorators(fn, "prim_func")
        top = Scope({k: ("const", v) if not isinstance(v, (Unknown, MacroDef)) else
                     (("macro", v) if isinstance(v, MacroDef) else ("unknown", v)) for k, v in self.src.env.items()})
        for name, m in self.src.macros.items():
            top.names[name] = ("macro", m)
        scope = top.child()
        for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs:
            ann = a.annotation
            if ann is None:
                raise Unsupported(f"prim_func parameter {a.arg!r} without annotation", fn.lineno)
            if isinstance(ann, ast.Call) and self.op(ann.func) in ("Tensor", "Buffer", "StridedTensor"):
                if self.op(ann.func) == "StridedTensor":
                    raise Unsupported("strided tensor parameter", ann.lineno)
                op = self.op(ann.func)
                buf = self.make_buffer(a.arg, self.bind_call(op, ann, scope), op, scope, param=True)
            elif isinstance(ann, ast.Subscript) and self.op(ann.value) in ("Tensor", "Buffer"):
                sl = ann.slice
                fake = ast.Call(func=ann.value, args=list(sl.elts) if isinstance(sl, ast.Tuple) else [sl],
                                keywords=[], lineno=ann.lineno, col_offset=ann.col_offset)
                op = self.op(ann.value)
                buf = self.make_buffer(a.arg, self.bind_call(op, fake, scope), op, scope, param=True)
            elif self.op(ann) == "handle":
                scope.names[a.arg] = ("handle", a.arg)
                continue
            else:
                if a.arg in self.mod.binds:
                    scope.names[a.arg] = ("const", self.mod.binds[a.arg])
                    continue
                raise Unsupported(f"scalar parameter {a.arg!r} ({ast.unparse(ann)}); bind it with --bind {a.arg}=VALUE",
                                  fn.lineno)
            self.params.append(buf)
            scope.names[a.arg] = ("buf", buf)
        body = self.stmts(fn.body, scope)
        if not self.kernel_seen:
            raise Unsupported("prim_func without a T.Kernel or thread launch", fn.lineno)
        grid = tuple(g if g is not None else 1 for g in self.grid)
        block = tuple(b if b is not None else 1 for b in self.block)
        return Kernel(self.src.qualname, fn.lineno, self.params, grid, block, self.thread_vars, self.allocs, body,
                      self.sites, self.unsupported, self.notes)

    def stmts(self, body, scope: Scope) -> list:
        out = []
        for st in body:
            try:
                out.extend(self.stmt(st, scope))
            except Unsupported as e:
                if e.line is None:
                    e.line = getattr(st, "lineno", None)
                out.append(self.opaque(st, e, scope))
        return out

    def opaque(self, st, err: Unsupported, scope: Scope) -> Opaque:
        """Keep going past an unsupported statement so that per-site checks still see the rest."""
        is_site = False
        for node in ast.walk(st):
            if isinstance(node, ast.Call) and self.op(node.func) == self.rules.intrinsic:
                is_site = True
                break
        op = Opaque(err.construct, err.line or getattr(st, "lineno", 0) or 0,
                    is_site and not isinstance(st, (ast.For, ast.With, ast.If)))
        if op.site:
            self.sites.append(op)
        self.unsupported.append(op)
        inner = scope.child()
        bodies = []
        if isinstance(st, ast.For):
            try:
                for n in self.target_names(st.target):
                    inner.names[n] = ("var", self.fresh(n))
            except Unsupported:
                pass
            bodies = [st.body]
        elif isinstance(st, (ast.With,)):
            bodies = [st.body]
        elif isinstance(st, ast.If):
            bodies = [st.body, st.orelse]
        for b in bodies:
            op.body.extend(self.stmts(b, inner.child()))
        return op

    def stmt(self, st, scope: Scope) -> list:
        line = getattr(st, "lineno", None)
        if isinstance(st, ast.Expr):
            v = st.value
            if isinstance(v, ast.Constant):
                return []  # docstring or bare literal
            if isinstance(v, ast.Call):
                return self.call_stmt(v, scope)
            raise Unsupported(f"expression statement {ast.unparse(v)[:60]!r}", line)
        if isinstance(st, ast.Pass):
            return []
        if isinstance(st, ast.With):
            return self.with_stmt(st, scope)
        if isinstance(st, ast.For):
            return self.for_stmt(st, scope)
        if isinstance(st, ast.If):
            ok, v = self.try_cval(st.test, scope)
            if ok and isinstance(v, (bool, int)):
                return self.stmts(st.body if v else st.orelse, scope.child())
            cond = self.expr(st.test, scope)
            return [If(cond, self.stmts(st.body, scope.child()), self.stmts(st.orelse, scope.child()), line)]
        if isinstance(st, (ast.Assign, ast.AnnAssign)):
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            if st.value is None:
                raise Unsupported("annotated name without value", line)
            if len(targets) != 1:
                # `a = b = v`: v evaluated once, bound to each target from left to right
                if not all(isinstance(x, ast.Name) for x in targets):
                    raise Unsupported("chained assignment", line)
                out = self.assign(targets[0], st.value, scope, line)
                for x in targets[1:]:
                    out = out + self.assign(x, ast.Name(id=targets[0].id, ctx=ast.Load()), scope, line)
                return out
            t, v = targets[0], st.value
            if isinstance(t, ast.Tuple) and isinstance(v, ast.Tuple):
                return self.unpack(t, v, scope, line)  # (TileLang's parser rejects a list target)
            return self.assign(t, v, scope, line)
        if isinstance(st, ast.AugAssign):
            op = BIN_OPS.get(type(st.op))
            if op is None:
                raise Unsupported(f"augmented assignment {ast.unparse(st)[:40]}", line)
            t = st.target
            if isinstance(t, ast.Subscript):
                buf, idx = self.subscript(t, scope)
                return [Store(buf, idx, Bin(op, Load(buf, idx), self.expr(st.value, scope)), line)]
            if isinstance(t, ast.Name):
                cur = self.expr(t, scope)
                name = self.fresh(t.id)
                scope.names[t.id] = ("var", name)
                return [Assign(name, Bin(op, cur, self.expr(st.value, scope)), line)]
            raise Unsupported("augmented assignment target", line)
        if isinstance(st, ast.FunctionDef):
            if self.mod.decorated(st, "macro"):
                scope.names[st.name] = ("macro", MacroDef(st, self.consts(scope)))
                return []
            raise Unsupported(f"nested function {st.name!r} inside a prim_func", line)
        raise Unsupported(type(st).__name__.lower() + " statement", line)

    # assignments ------------------------------------------------------------
    def unpack(self, target, value, scope: Scope, line) -> list:
        """``a, b = X, Y``: Python evaluates every value before it binds a name, so the pairs are
        assigned one after the other only when no value reads a name the statement binds."""
        if len(target.elts) != len(value.elts) or any(isinstance(e, ast.Starred) for e in target.elts + value.elts):
            raise Unsupported("unpacking assignment of another length or with *", line)
        bound = {e.id for e in target.elts if isinstance(e, ast.Name)}
        if len(bound) != len(target.elts):
            raise Unsupported("unpacking assignment to something other than distinct names", line)
        if any(isinstance(n, ast.Name) and n.id in bound for v in value.elts for n in ast.walk(v)):
            raise Unsupported("unpacking assignment whose values read the names it binds", line)
        out = []
        for t, v in zip(target.elts, value.elts):
            out.extend(self.assign(t, v, scope, line))
        return out

    def assign(self, target, value, scope: Scope, line) -> list:
        if isinstance(target, ast.Subscript):
            buf, idx = self.subscript(target, scope)
            return [Store(buf, idx, self.expr(value, scope), line)]
        if not isinstance(target, ast.Name):
            raise Unsupported(f"assignment to {ast.unparse(target)[:40]}", line)
        name = target.id
        if isinstance(value, ast.Name):
            b = scope.lookup(value.id)
            if isinstance(b, tuple) and b[0] in ("buf", "data", "macro"):
                scope.names[name] = b  # a second name for the same buffer
                return []
        if isinstance(value, ast.Call):
            op = self.op(value.func)
            if op in DEFAULT_SCOPES:
                b = self.bind_call(op, value, scope)
                data = b.get("data")
                if data is not None and not (isinstance(data, ast.Constant) and data.value is None):
                    base = self.data_buffer(data, scope)
                    view = self.make_buffer(name, b, op, scope)
                    if view.shape != base.shape or view.dtype != base.dtype:
                        raise Unsupported(f"T.{op}(data={ast.unparse(data)}) declares a {view.dtype} {view.shape} "
                                          f"view of {base.name} ({base.dtype} {base.shape}); views of another "
                                          "shape or type are not modelled", line)
                    self.used.discard(view.name)
                    scope.names[name] = ("buf", base)  # the same memory under another name
                    return []
                buf = self.make_buffer(name, b, op, scope)
                self.allocs.append(buf)
                scope.names[name] = ("buf", buf)
                return []
            if op == "match_buffer":
                # elem_offset (which moves the base: 0.1.8 prints &A[i + k]), strides, offset_factor,
                # scope, data, ...: anything but their neutral values is refused by the binding
                b = self.bind_call("match_buffer", value, scope)
                h = b["param"]
                if not (isinstance(h, ast.Name) and scope.lookup(h.id) == ("handle", h.id)):
                    raise Unsupported("match_buffer of something other than a handle parameter", line)
                if "shape" not in b:
                    raise Unsupported("T.match_buffer without a shape", line)
                buf = self.make_buffer(name, b, "match_buffer", scope, param=True)
                self.params.append(buf)
                scope.names[name] = ("buf", buf)
                return []
            if op == "env_thread":
                tag = self.cval(self.bind_call("env_thread", value, scope)["thread_tag"], scope)
                scope.names[name] = ("env_thread", tag)
                return []
            if op == "launch_thread":
                return self.launch(value, scope, name)
            if op == "get_thread_binding":
                dn = self.bind_call("get_thread_binding", value, scope).get("dim")
                dim = self.cval(dn, scope) if dn is not None else 0
                return self.bind_thread(name, ("threadIdx", int(dim)), None, scope)
            if op in ("alloc_var", "alloc_barrier", "alloc_tmem", "alloc_reducer"):
                raise Unsupported(f"T.{op}", line)
        ok, v = self.try_cval(value, scope)
        if ok and isinstance(v, (int, float, bool, str, tuple)):
            scope.names[name] = ("const", v)
            return []
        e = self.expr(value, scope)
        ir = self.fresh(name)
        scope.names[name] = ("var", ir)
        return [Assign(ir, e, line)]

    def bind_thread(self, name, tagdim, extent, scope: Scope) -> list:
        kind, dim = tagdim
        arr = self.block if kind == "threadIdx" else self.grid
        if extent is not None:
            if arr[dim] is not None and arr[dim] != extent:
                raise Unsupported(f"{kind}.{'xyz'[dim]} launched twice with different extents")
            arr[dim] = extent
        self.kernel_seen = True
        ir = self.fresh(name or f"{kind}_{'xyz'[dim]}")
        self.thread_vars[ir] = (kind, dim)
        if name:
            scope.names[name] = ("var", ir)
        return []

    def launch(self, call: ast.Call, scope: Scope, name: Optional[str]) -> list:
        b = self.bind_call("launch_thread", call, scope)
        first = b["thread"]
        if isinstance(first, ast.Name) and isinstance(scope.lookup(first.id), tuple) and \
                scope.lookup(first.id)[0] == "env_thread":
            tag = scope.lookup(first.id)[1]
            name = first.id
        else:
            tag = self.cval(first, scope)
        if tag not in THREAD_TAGS:
            raise Unsupported(f"thread tag {tag!r}", call.lineno)
        ext = self.cval(b["extent"], scope)
        if not isinstance(ext, int):
            raise Unsupported("thread extent is not a constant", call.lineno)
        return self.bind_thread(name, THREAD_TAGS[tag], ext, scope)

    # statements from calls ------------------------------------------------------
    def call_stmt(self, call: ast.Call, scope: Scope) -> list:
        line = call.lineno
        op = self.op(call.func)
        if op is None and isinstance(call.func, ast.Name):
            b = scope.lookup(call.func.id)
            if isinstance(b, tuple) and b[0] == "macro":
                return self.inline_macro(b[1], call, scope)
            raise Unsupported(f"call of {call.func.id!r} (not a T.macro)", line)
        if op is None:
            raise Unsupported(f"call of {ast.unparse(call.func)[:40]!r}", line)
        if op == "evaluate":
            inner = self.bind_call("evaluate", call, scope)["value"]
            if isinstance(inner, ast.Call) and self.op(inner.func) is not None:
                return self.call_stmt(inner, scope)
            if isinstance(inner, ast.Constant):
                return []
            return [Evaluate(self.expr(inner, scope), line)]
        if op in DEFAULT_SCOPES:
            # an allocation bound to no name: nothing can touch it (the merge rule does not count it)
            self.allocs.append(self.make_buffer("unnamed", self.bind_call(op, call, scope), op, scope))
            return []
        if op == self.rules.intrinsic:
            site = self.cp_async(call, scope)
            self.sites.append(site)
            return [site]
        if op == "ptx_commit_group":
            self.bind_call(op, call, scope)
            return [Commit(line)]
        if op == "ptx_wait_group":
            n = self.cval(self.bind_call(op, call, scope)["num"], scope)
            if not isinstance(n, int):
                raise Unsupported("wait_group count is not a constant", line)
            return [Wait(n, line)]
        if op in ("sync_threads", "__syncthreads"):
            self.bind_call(op, call, scope)
            return [Barrier(line)]
        if op == "tvm_storage_sync":
            sc = self.cval(self.bind_call(op, call, scope)["storage_scope"], scope)
            if sc not in ("shared", "shared.dyn"):
                raise Unsupported(f"tvm_storage_sync({sc!r})", line)
            return [Barrier(line)]
        if op in NOOP_OPS:  # nothing the interpreter runs; what it says is compared (structure.py)
            self.notes.append((f"T.{op} at line {line}", ast.dump(call)))
            return []
        if op == "launch_thread":
            return self.launch(call, scope, None)
        if op in ("clear", "fill"):
            b = self.bind_call(op, call, scope)
            buf = self.buffer_of(b["buffer"], scope)
            val = Const(0, "int32") if op == "clear" else self.expr(b["value"], scope)
            return [Fill(buf, val, line)]
        if op == "copy":
            b = self.bind_call(op, call, scope)
            return [CopyRegion(self.region(b["src"], scope), self.region(b["dst"], scope), line)]
        raise Unsupported(f"T.{op}", line)

    def inline_macro(self, m: MacroDef, call: ast.Call, scope: Scope) -> list:
        self.depth += 1
        if self.depth > 32:
            raise Unsupported("recursive T.macro", call.lineno)
        fn = m.node
        self.check_decorators(fn, "macro")
        # A module-level macro reads the module's names, and evaluates its defaults, when it is expanded:
        # while this kernel is built (not when the macro's def ran, nor at the module's final bindings).
        env = self.src.globals if m.top else m.env
        mscope = Scope({k: ("const", v) if not isinstance(v, (Unknown, MacroDef)) else
                        (("macro", v) if isinstance(v, MacroDef) else ("unknown", v)) for k, v in env.items()})
        # macros visible where the kernel is (module / factory level)
        for k, v in self.src.macros.items():
            mscope.names.setdefault(k, ("macro", v))
        inner = mscope.child()
        params = fn.args.posonlyargs + fn.args.args
        defaults = [None] * (len(params) - len(fn.args.defaults)) + list(fn.args.defaults)
        given = {}
        if len(call.args) > len(params):
            raise Unsupported(f"macro {fn.name!r} called with too many arguments", call.lineno)
        for p, a in zip(params, call.args):
            given[p.arg] = a
        for k in call.keywords:
            given[k.arg] = k.value
        for p, d in zip(params, defaults):
            if p.arg in given:
                inner.names[p.arg] = self.bind_arg(given[p.arg], scope)
            elif d is not None:
                inner.names[p.arg] = ("const", self.mod.cval(d, env))
            else:
                raise Unsupported(f"macro {fn.name!r} called without {p.arg!r}", call.lineno)
        out = self.stmts(fn.body, inner)
        self.depth -= 1
        return out

    def check_decorators(self, fn: ast.FunctionDef, what: str) -> None:
        """A decorator written as a call (``@T.prim_func(...)``) binds its arguments like any API call."""
        for d in fn.decorator_list:
            if isinstance(d, ast.Call) and self.op(d.func) == what:
                self.bind_call(what, d, Scope())

    def bind_arg(self, node, scope: Scope):
        if isinstance(node, ast.Name):
            b = scope.lookup(node.id)
            if isinstance(b, tuple) and b[0] in ("buf", "macro", "data"):
                return b
        if isinstance(node, ast.Attribute) and node.attr == "data":
            return ("data", self.buffer_of(node.value, scope))
        ok, v = self.try_cval(node, scope)
        if ok:
            return ("const", v)
        return ("expr", self.expr(node, scope))

    def with_stmt(self, st: ast.With, scope: Scope) -> list:
        if len(st.items) != 1:
            raise Unsupported("with statement of several items", st.lineno)
        item = st.items[0]
        call = item.context_expr
        op = self.op(call.func) if isinstance(call, ast.Call) else None
        inner = scope.child()
        if op == "Kernel":
            if self.kernel_seen:
                raise Unsupported("more than one launch in a prim_func", st.lineno)
            b = self.bind_call("Kernel", call, scope)
            dims = [self.cval(a, scope) for a in b.rest]
            if len(dims) > 3 or not all(isinstance(d, int) and d > 0 for d in dims):
                raise Unsupported("T.Kernel grid is not known from the text", st.lineno)
            threads = self.cval(b["threads"], scope) if "threads" in b else None
            if "is_cpu" in b and self.cval(b["is_cpu"], scope):
                raise Unsupported("CPU kernel", st.lineno)
            if threads is None:
                threads = 128
            if isinstance(threads, int):
                threads = (threads,)
            threads = tuple(threads) + (1,) * (3 - len(threads))
            dims = tuple(dims) + (1,) * (3 - len(dims))
            self.grid = list(dims)
            self.block = list(threads)
            self.kernel_seen = True
            names = []
            tgt = item.optional_vars
            if isinstance(tgt, ast.Name):
                names = [tgt.id]
            elif isinstance(tgt, (ast.Tuple, ast.List)):
                names = [t.id for t in tgt.elts]
            for i, n in enumerate(names):
                self.bind_thread(n, ("blockIdx", i), None, inner)
            return self.stmts(st.body, inner)
        if op in BLOCK_CTX:
            return self.stmts(st.body, inner)
        if op == "launch_thread":
            name = item.optional_vars.id if isinstance(item.optional_vars, ast.Name) else None
            out = self.launch(call, inner, name)
            return out + self.stmts(st.body, inner)
        if op is None and isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
            raise Unsupported(f"with {call.func.id}(...)", st.lineno)
        raise Unsupported(f"with T.{op}" if op else "with statement", st.lineno)

    def for_stmt(self, st: ast.For, scope: Scope) -> list:
        line = st.lineno
        if st.orelse:
            raise Unsupported("for ... else", line)
        it = st.iter
        if not isinstance(it, ast.Call):
            raise Unsupported(f"for over {ast.unparse(it)[:40]}", line)
        op = self.op(it.func)
        if op is None and isinstance(it.func, ast.Name) and it.func.id == "range":
            op = "range"
        tnames = self.target_names(st.target)
        inner = scope.child()
        if op == "thread_binding":
            bd = self.bind_call("thread_binding", it, scope)
            tag = self.cval(bd["thread"], scope) if "thread" in bd else None
            args = [self.cval(bd[p], scope) for p in ("start", "stop") if p in bd]
            if tag not in THREAD_TAGS or len(tnames) != 1:
                raise Unsupported("T.thread_binding form", line)
            start, stop = (0, args[0]) if len(args) == 1 else (args[0], args[1])
            if start != 0:
                raise Unsupported("T.thread_binding with a nonzero start", line)
            self.bind_thread(tnames[0], THREAD_TAGS[tag], stop, inner)
            return self.stmts(st.body, inner)
        if op in ("Parallel", "grid"):
            bd = self.bind_call(op, it, scope)
            exts = [self.cval(a, scope) for a in bd.rest]
            if not all(isinstance(e, int) for e in exts) or len(exts) != len(tnames):
                raise Unsupported(f"T.{op} extents not known from the text", line)
            irn = []
            for n in tnames:
                ir = self.fresh(n)
                inner.names[n] = ("var", ir)
                irn.append(ir)
            body = self.stmts(st.body, inner)
            if op == "Parallel":
                return [Parallel(tuple(irn), tuple(exts), body, line)]
            for ir, e in reversed(list(zip(irn, exts))):
                body = [For(ir, Const(0, "int32"), Const(e, "int32"), "serial", body, line)]
            return body
        if op in LOOP_OPS:
            if len(tnames) != 1:
                raise Unsupported("loop with a tuple target", line)
            # the other parameters (unroll's explicit/unroll_factor, Pipelined's num_stages .. group) are not
            # run by the interpreter: the loop keeps them as text, and two kernels are the same program only where
            # they are the same (a pipeline's stage and order move statements across iterations); unknown ones
            # are refused by the binding
            bd = self.bind_call(op, it, scope)
            params = "; ".join([f"{k}={ast.dump(v)}" for k, v in sorted(bd.args.items()) if k not in ("start", "stop", "step")]
                               + [f"*{ast.dump(v)}" for v in bd.rest])
            step = bd.get("step")
            if step is not None:
                ok, sv = self.try_cval(step, scope)
                if not (ok and (sv == 1 or sv is None)):
                    raise Unsupported(f"{'range' if op == 'range' else 'T.' + op} with a step other than 1", line)
            stop = bd.get("stop")
            if stop is not None and isinstance(stop, ast.Constant) and stop.value is None:
                stop = None
            if stop is None:
                start, ext = Const(0, "int32"), self.expr(bd["start"], scope)
            else:
                start = self.expr(bd["start"], scope)
                ext = fold(Bin("sub", self.expr(stop, scope), start))
            ir = self.fresh(tnames[0])
            inner.names[tnames[0]] = ("var", ir)
            return [For(ir, start, ext, LOOP_OPS[op], self.stmts(st.body, inner), line, params)]
        raise Unsupported(f"for over {ast.unparse(it.func)[:40]}", line)

    def target_names(self, t) -> list:
        if isinstance(t, ast.Name):
            return [t.id]
        if isinstance(t, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in t.elts):
            return [e.id for e in t.elts]
        raise Unsupported("loop target", getattr(t, "lineno", None))
