"""What every part of the kernel builder shares: the kernel being built and its build-time constants.

:class:`KernelContext` holds one prim_func's build (the module reading of ``module.py``, the
kernel's source, the size meaning of its access-pointer calls, the launch, the buffers, the
cp.async sites and the statements left opaque) and answers the questions every part asks: a
fresh IR name, the TileLang/TVM op a callee names, the build-time value of an expression in a
scope, and a dtype.  Its state is typed, field by field, below.  The parts name it as their
base: ``copies.py`` (the cp.async call, buffers, access pointers, regions) and
``expressions.py`` (expressions, folding), each declaring what it calls in the other parts
through the protocols of ``parts.py``; ``statements.py`` composes them into
:class:`~.statements.KernelBuilder`.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional

from ..ir import Buffer, Unsupported
from .module import KernelSource, ModuleInfo, Scope, Unknown
from .signatures import SIGNATURES, Bound, Signature, bind

if TYPE_CHECKING:
    from ...rules import Rules

CPP_RESERVED = {"int", "float", "double", "char", "long", "short", "unsigned", "signed", "void", "bool", "half",
                "auto", "const", "static", "struct", "class", "new", "delete", "this", "default", "case", "switch",
                "register", "volatile", "template", "typename", "namespace", "using", "goto", "do", "while", "for",
                "if", "else", "return", "break", "continue", "union", "enum", "sizeof", "extern", "inline",
                "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "main", "operator", "private", "public",
                "protected", "friend", "virtual", "true", "false", "nullptr", "asm", "typedef", "uint", "min", "max"}


class KernelContext:
    """One prim_func's build and the questions every part of the builder asks (see the module docstring)."""

    mod: ModuleInfo  # the module's reading (imports, kernels, macros, constants, binds)
    rules: "Rules"  # the rules (``mod.rules``)
    src: KernelSource  # the prim_func being built
    meaning: str  # size meaning of access-pointer calls in this text: "bytes" or "num_elems"
    used: set[str]  # IR names given out (``fresh``)
    grid: list[Optional[int]]  # blockIdx extents x, y, z (None: not launched)
    block: list[Optional[int]]  # threadIdx extents x, y, z (None: not launched)
    thread_vars: dict[str, tuple[str, int]]  # IR name -> ("threadIdx" | "blockIdx", dim)
    allocs: list[Buffer]  # buffers declared in the body
    params: list[Buffer]  # buffer parameters
    sites: list  # the cp.async sites read, in order
    unsupported: list  # the statements left opaque
    kernel_seen: bool  # a T.Kernel or thread launch was read
    depth: int  # macro inlining depth

    def __init__(self, mod: ModuleInfo, src: KernelSource, meaning: str):
        self.mod = mod
        self.rules = mod.rules
        self.src = src
        self.meaning = meaning  # size meaning of access-pointer calls in this text
        self.used: set[str] = set()
        self.grid = [None, None, None]
        self.block = [None, None, None]
        self.thread_vars: dict = {}
        self.allocs: list[Buffer] = []
        self.params: list[Buffer] = []
        self.sites: list = []
        self.unsupported: list = []
        # the statements read as changing nothing the interpreter runs (T.reads, T.func_attr, ...), as text:
        # two kernels are the same program only where these are the same too (structure.py)
        self.notes: list = []
        self.kernel_seen = False
        self.depth = 0

    # helpers -------------------------------------------------------------
    def fresh(self, name: str) -> str:
        base = name if name.isidentifier() else "v"
        n, k = base, 1
        while n in self.used or n in CPP_RESERVED:
            n = f"{base}_{k}"
            k += 1
        self.used.add(n)
        return n

    def op(self, node) -> Optional[str]:
        return self.mod.op_name(node)

    def consts(self, scope: Scope) -> dict:
        out = {}
        chain = []
        s = scope
        while s is not None:
            chain.append(s)
            s = s.parent
        for s in reversed(chain):
            for k, v in s.names.items():
                if isinstance(v, tuple) and v and v[0] == "const":
                    out[k] = v[1]
                elif isinstance(v, tuple) and v and v[0] == "unknown":
                    out[k] = v[1]
                else:
                    out[k] = Unknown(f"{k!r} is not a build-time constant")
        return out

    def cval(self, node, scope: Scope):
        if isinstance(node, ast.Attribute) and node.attr == "dtype" and isinstance(node.value, ast.Name):
            b = scope.lookup(node.value.id)
            if isinstance(b, tuple) and b[0] == "buf":
                return b[1].dtype
        return self.mod.cval(node, self.consts(scope))

    def try_cval(self, node, scope: Scope):
        try:
            return True, self.cval(node, scope)
        except (Unsupported, TypeError, ZeroDivisionError, ValueError):
            return False, None

    def bind_call(self, api, call: ast.Call, scope: Scope) -> Bound:
        """``call``'s arguments bound to the signature of ``api`` (a key of ``signatures.SIGNATURES``
        or a :class:`~.signatures.Signature`); whatever the builder does not model raises Unsupported."""
        sig = api if isinstance(api, Signature) else SIGNATURES[api]
        return bind(sig, call, lambda n: self.try_cval(n, scope))

    def dtype(self, node, scope: Scope) -> str:
        v = self.cval(node, scope)
        if not isinstance(v, str):
            raise Unsupported(f"dtype {ast.unparse(node)!r}", node.lineno)
        name = self.rules.canonical_dtype(v)
        if self.rules.dtype_size(name) is None:
            raise Unsupported(f"dtype {v!r} of unknown size", node.lineno)
        return name
