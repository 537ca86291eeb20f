"""Structural argument binding: a TileLang API call's arguments bound to the API's real signature.

Every API call the kernel builder reads goes through :func:`bind` (through
``KernelContext.bind_call``): like :meth:`inspect.Signature.bind`, but on syntax tree nodes.  It
maps each positional and keyword argument to its parameter and refuses, with
:class:`~cpasync_migrate.verify.ir.Unsupported` naming the argument, whatever the builder does not
model: a keyword the API does not have, more positional arguments than it takes, ``*args`` or
``**kw`` (the values they carry are not known from the text), an argument given twice, a
required one missing, and any parameter the builder does not read given a value other than one
that changes nothing (its default).  So a reader cannot ignore an argument by accident: an
argument is either read (``Signature.read``) or checked to be neutral (``Signature.neutral``).

The table below was read from the Python sources of TileLang 0.1.7.post1 and 0.1.8 (the file
named on each entry, under ``tilelang/``; TVM's under ``tilelang/3rdparty/tvm/python/tvm/``).
These signatures are the same in both releases unless the entry says otherwise; the one API
whose signature changed between releases, ``T.ptx_cp_async``, is a version fact and is built
from ``rules/*.toml`` (:func:`cp_async_signature`).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Callable, Optional

from ..ir import Unsupported


@dataclass(frozen=True)
class Signature:
    """One API's parameters: positional-or-keyword ``params`` (the first ``required`` of them
    without a default), an optional ``*varargs``, keyword-only ``kwonly``; which of them the
    builder reads, and for the others the values that leave the meaning unchanged."""

    api: str  # how a message names it, e.g. "T.alloc_shared"
    params: tuple = ()
    required: int = 0
    varargs: Optional[str] = None
    kwonly: tuple = ()
    read: frozenset = frozenset()
    neutral: dict = field(default_factory=dict)  # unread parameter -> values that change nothing
    source: str = ""  # the TileLang file it was read from


@dataclass
class Bound:
    """A call bound to its signature: ``args`` (parameter -> node) and ``rest`` (the ``*varargs``)."""

    sig: Signature
    call: ast.Call
    args: dict
    rest: list

    def __contains__(self, name) -> bool:
        return name in self.args

    def __getitem__(self, name):
        return self.args[name]

    def get(self, name, default=None):
        return self.args.get(name, default)


def _sig(api, params=(), required=0, read=None, neutral=None, varargs=None, kwonly=(), source=""):
    names = tuple(params) + tuple(kwonly) + ((varargs,) if varargs else ())
    return Signature(api, tuple(params), required, varargs, tuple(kwonly),
                     frozenset(names if read is None else read), dict(neutral or {}), source)


_ALLOC = "language/allocate.py"
_TVM_IRB = "3rdparty/tvm/python/tvm/script/ir_builder/tir/ir.py"
_TIR_OP = "language/tir/op.py"
# Buffer parameters the builder does not model, at the values that change nothing.
_BUF_NEUTRAL = {"strides": (None,), "elem_offset": (None, 0), "offset_factor": (0,),
                "buffer_type": ("default", ""), "axis_separators": (None, ())}
_BUF_PARAMS = ("shape", "dtype", "data", "strides", "elem_offset", "scope", "align", "offset_factor", "buffer_type",
               "axis_separators")

SIGNATURES: dict = {
    # allocations (tilelang/language/allocate.py): scope is the third positional
    "alloc_shared": _sig("T.alloc_shared", ("shape", "dtype", "scope"), 2, source=_ALLOC),
    "alloc_local": _sig("T.alloc_local", ("shape", "dtype", "scope"), 2, source=_ALLOC),
    "alloc_fragment": _sig("T.alloc_fragment", ("shape", "dtype", "scope"), 2, source=_ALLOC),
    # TVM's builders, re-exported by tilelang.language: data is the third positional, not scope
    "alloc_buffer": _sig("T.alloc_buffer", _BUF_PARAMS, 1, {"shape", "dtype", "data", "scope"},
                         dict(_BUF_NEUTRAL, align=(-1, 0)), source=_TVM_IRB),
    "decl_buffer": _sig("T.decl_buffer", _BUF_PARAMS, 1, {"shape", "dtype", "data", "scope"},
                        dict(_BUF_NEUTRAL, align=(0, -1)), source=_TVM_IRB),
    "match_buffer": _sig("T.match_buffer", ("param",) + _BUF_PARAMS, 2, {"param", "shape", "dtype"},
                         dict(_BUF_NEUTRAL, data=(None,), scope=("global",), align=(-1, 0)), source=_TVM_IRB),
    # kernel parameters (language/proxy.py): TensorProxy.__call__ and BufferProxy.__call__
    "Tensor": _sig("T.Tensor", ("shape", "dtype", "data", "scope"), 1, {"shape", "dtype"},
                   {"data": (None,), "scope": (None, "global")}, source="language/proxy.py"),
    "Buffer": _sig("T.Buffer", _BUF_PARAMS, 1, {"shape", "dtype"},
                   dict(_BUF_NEUTRAL, data=(None,), scope=(None, "global"), align=(0, -1)), source="language/proxy.py"),
    # the launch (language/kernel.py)
    "Kernel": _sig("T.Kernel", (), 0, {"blocks", "threads", "is_cpu"}, {"prelude": (None,)}, "blocks",
                   ("threads", "is_cpu", "prelude"), source="language/kernel.py"),
    "get_thread_binding": _sig("T.get_thread_binding", ("dim",), 0, source="language/kernel.py"),
    "env_thread": _sig("T.env_thread", ("thread_tag", "dtype"), 1, {"thread_tag"}, {"dtype": ("int32",)},
                       source=_TVM_IRB),
    "launch_thread": _sig("T.launch_thread", ("thread", "extent"), 2, source=_TVM_IRB),
    # access pointers
    "tvm_access_ptr": _sig("T.tvm_access_ptr", ("ptype", "data", "offset", "extent", "rw_mask"), 5, source=_TIR_OP),
    "type_annotation": _sig("T.type_annotation", ("dtype",), 1, source=_TIR_OP),
    # 0.1.8 only (tilelang/language/builtin.py; 0.1.7.post1 has no T.access_ptr)
    "access_ptr": _sig("T.access_ptr", ("base", "access_type"), 1, None, None, "extents",
                       ("offset", "extent", "ignore_last_ndim"), source="language/builtin.py (0.1.8)"),
    # tvm.tir.Buffer.access_ptr (3rdparty/tvm/python/tvm/tir/buffer.py)
    "Buffer.access_ptr": _sig("Buffer.access_ptr", ("access_mask", "ptr_type", "content_lanes", "offset", "extent"), 1,
                              source="3rdparty/tvm/python/tvm/tir/buffer.py"),
    # loops (language/loop.py; thread_binding, vectorized: language/tir/ir.py)
    "serial": _sig("T.serial", ("start", "stop", "step"), 1, {"start", "stop", "step"}, {"annotations": (None,)},
                   kwonly=("annotations",), source="language/loop.py"),
    "unroll": _sig("T.unroll", ("start", "stop", "step"), 1, {"start", "stop", "step", "explicit", "unroll_factor"},
                   {"annotations": (None,)}, kwonly=("explicit", "unroll_factor", "annotations"),
                   source="language/loop.py"),
    "vectorized": _sig("T.vectorized", ("start", "stop"), 1, {"start", "stop"}, {"annotations": (None,)},
                       kwonly=("annotations",), source="language/loop.py"),
    # num_stages .. group steer TileLang's software pipelining; the builder reads the loop as sequential
    "Pipelined": _sig("T.Pipelined", ("start", "stop", "num_stages", "order", "stage", "sync", "group"), 1,
                      source="language/loop.py"),
    # coalesced_width is a vectorization hint; loop_layout (0.1.8) maps iterations to threads
    "Parallel": _sig("T.Parallel", (), 0, {"extents", "coalesced_width"}, {"loop_layout": (None,)}, "extents",
                     ("coalesced_width", "loop_layout"), source="language/loop.py"),
    "grid": _sig("T.grid", (), 0, None, None, "extents", source=_TVM_IRB),
    "thread_binding": _sig("T.thread_binding", ("start", "stop", "thread"), 1, {"start", "stop", "thread"},
                           {"annotations": (None,)}, kwonly=("annotations",), source="language/tir/ir.py"),
    "range": _sig("range", ("start", "stop", "step"), 1, source="Python's builtin"),
    # statements
    "ptx_commit_group": _sig("T.ptx_commit_group", source=_TIR_OP),
    "ptx_wait_group": _sig("T.ptx_wait_group", ("num",), 1, source=_TIR_OP),
    "tvm_storage_sync": _sig("T.tvm_storage_sync", ("storage_scope",), 1, source=_TIR_OP),
    "sync_threads": _sig("T.sync_threads", (), 0, source="language/builtin.py"),
    "evaluate": _sig("T.evaluate", ("value",), 1, source=_TVM_IRB),
    "fill": _sig("T.fill", ("buffer", "value"), 2, source="language/fill_op.py"),
    "clear": _sig("T.clear", ("buffer",), 1, source="language/fill_op.py"),
    # coalesced_width, disable_tma, eviction_policy choose how the copy is lowered, not what it copies
    "copy": _sig("T.copy", ("src", "dst", "coalesced_width", "disable_tma", "eviction_policy"), 2,
                 source="language/copy_op.py"),
    # decorators (0.1.7.post1 language/v2/builder.py, 0.1.8 language/eager/builder.py, which
    # tilelang.language exports over TVM's): prim_func's generator= (0.1.7.post1) and eager_jit=
    # (0.1.8) change what the decorator returns; macro takes the function only (no hygienic=)
    "prim_func": _sig("T.prim_func", ("func",), 0, {"func"}, {"generator": (False,), "eager_jit": (False,)},
                      kwonly=("generator", "eager_jit"), source="language/v2/builder.py, language/eager/builder.py"),
    "macro": _sig("T.macro", ("func",), 0, {"func"}, source="language/v2/builder.py, language/eager/builder.py"),
    # expressions
    "if_then_else": _sig("T.if_then_else", ("cond", "t", "f", "span"), 3, {"cond", "t", "f"}, {"span": (None,)},
                         source=_TIR_OP),
    "Cast": _sig("T.Cast", ("dtype", "value", "span"), 2, {"dtype", "value"}, {"span": (None,)},
                 source="3rdparty/tvm/python/tvm/tir/expr.py"),
    "cast": _sig("T.cast", ("value", "dtype", "span"), 2, {"value", "dtype"}, {"span": (None,)},
                 source="language/tir/ir.py"),
    "min": _sig("T.min", ("a", "b"), 2, source=_TVM_IRB),
    "max": _sig("T.max", ("a", "b"), 2, source=_TVM_IRB),
    "ceildiv": _sig("T.ceildiv", ("lhs", "rhs", "span"), 2, {"lhs", "rhs"}, {"span": (None,)}, source=_TIR_OP),
    "dtype_cast": _sig("a dtype conversion", ("expr", "is_size_var"), 1, {"expr"}, {"is_size_var": (False,)},
                       source=_TVM_IRB),
}
for _op in ("floordiv", "floormod", "truncdiv", "truncmod"):
    SIGNATURES[_op] = _sig(f"T.{_op}", ("a", "b", "span"), 2, {"a", "b"}, {"span": (None,)}, source=_TIR_OP)
for _op in ("shift_left", "shift_right", "bitwise_and", "bitwise_or", "bitwise_xor"):
    SIGNATURES[_op] = _sig(f"T.{_op}", ("x", "y", "span"), 2, {"x", "y"}, {"span": (None,)}, source=_TIR_OP)
SIGNATURES["cdiv"] = SIGNATURES["ceildiv"]
SIGNATURES["__syncthreads"] = SIGNATURES["sync_threads"]
MATH_SIGNATURE = _sig("a math function", ("x",), 1, source=_TIR_OP)


def cp_async_signature(rules, form: str, meaning: str, dtype_keyword: bool = False) -> Signature:
    """``T.ptx_cp_async``'s signature in ``form`` ("legacy" or "access_ptr", the latter for size
    ``meaning``), read from the rules (a version fact).  The legacy call as TVMScript takes it with
    ``dtype=`` given as a keyword (``dtype_keyword``) has the other five as its positionals."""
    if form == "legacy":
        params = tuple(rules.legacy.python_params)
        src = f"rules: {rules.legacy.source or rules.legacy.name}"
        # The legacy IR call's optional trailing predicate (rules/legacy.toml [cpp] args and arity), read
        # when a seventh argument gives it: 0.1.7.post1's own wrapper takes six, a fork's may take seven.
        cpp = tuple(rules.legacy.cpp_args)
        opt = (cpp[-1],) if cpp and len(cpp) in rules.legacy.cpp_arity and len(cpp) - 1 in rules.legacy.cpp_arity \
            else ()
        if dtype_keyword:
            return _sig("T.ptx_cp_async (legacy form)", params[1:] + opt, len(params) - 1, kwonly=params[:1],
                        source=src)
        return _sig("T.ptx_cp_async (legacy form)", params + opt, len(params), source=src)
    gens = [g for g in rules.generations if g.form == "access_ptr" and g.size_meaning == meaning]
    if not gens:
        raise Unsupported(f"no access-pointer generation with size meaning {meaning!r} in the rules")
    params = tuple(gens[0].python_params)
    # the last parameter, the predicate, defaults to None (as rules/python_api.toml's emitted definition)
    return _sig("T.ptx_cp_async (access-pointer form)", params, len(params) - 1,
                source=f"rules: {gens[0].source or gens[0].name}")


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is b
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return tuple(a) == tuple(b)
    return type(a) is type(b) and a == b


def _ordinal(i: int) -> str:
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(i, f"{i}th")


def bind(sig: Signature, call: ast.Call, value: Optional[Callable] = None) -> Bound:
    """Bind ``call``'s arguments to ``sig``; raise Unsupported naming what the builder does not model.

    ``value(node)`` gives ``(ok, build-time value)`` of an argument; it decides whether an unread
    parameter was given a neutral value.
    """
    line = call.lineno
    where = f" ({sig.source})" if sig.source else ""
    args: dict = {}
    rest: list = []
    for i, a in enumerate(call.args):
        if isinstance(a, ast.Starred):
            raise Unsupported(f"{sig.api}(*{ast.unparse(a.value)[:30]}): arguments unpacked with * are not known "
                              "from the text", line)
        if i < len(sig.params):
            args[sig.params[i]] = a
        elif sig.varargs:
            rest.append(a)
        else:
            raise Unsupported(f"{sig.api} given {len(call.args)} positional arguments; it takes at most "
                              f"{len(sig.params)}{where}", line)
    for k in call.keywords:
        if k.arg is None:
            raise Unsupported(f"{sig.api}(**{ast.unparse(k.value)[:30]}): arguments unpacked with ** are not known "
                              "from the text", line)
        if k.arg not in sig.params and k.arg not in sig.kwonly:
            raise Unsupported(f"{sig.api} keyword {k.arg!r}: not a parameter of {sig.api}{where}", line)
        if k.arg in args:
            raise Unsupported(f"{sig.api} given {k.arg!r} twice (positionally and by keyword)", line)
        args[k.arg] = k.value
    for p in sig.params[:sig.required]:
        if p not in args:
            raise Unsupported(f"{sig.api} without its {p!r} argument", line)
    for i, p in enumerate(sig.params):
        if p in args and p not in sig.read:
            _check_neutral(sig, p, args[p], value, line, i + 1 if args[p] in call.args else None)
    for p in sig.kwonly:
        if p in args and p not in sig.read:
            _check_neutral(sig, p, args[p], value, line, None)
    if rest and sig.varargs not in sig.read:
        raise Unsupported(f"{sig.api} *{sig.varargs} is not modelled", line)
    return Bound(sig, call, args, rest)


def _check_neutral(sig: Signature, p: str, node, value, line, position) -> None:
    how = f"{_ordinal(position)} positional argument {p!r}" if position else f"{p}="
    vals = sig.neutral.get(p)
    if vals is None or value is None:
        raise Unsupported(f"{sig.api} {how} is not modelled", line)
    ok, v = value(node)
    if not ok or not any(_same(v, n) for n in vals):
        shown = " or ".join(repr(n) for n in vals)
        raise Unsupported(f"{sig.api} {how} = {ast.unparse(node)[:40]} is not modelled (only {shown}, which changes "
                          "nothing, is)", line)
