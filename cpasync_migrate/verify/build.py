"""Build the kernel IR of every ``@T.prim_func`` in a file from its text.

Works from the parsed syntax tree only (stdlib ``ast``); the user's code is
never imported or run.  Factories (``def make(M=128, dtype="float16"):``
holding a prim_func) are bound from their default values, module-level
constants and explicit binds; ``@T.macro`` functions are inlined at their
call sites.  Anything outside the modelled subset raises
:class:`~cpasync_migrate.verify.ir.Unsupported` naming the construct, which
makes that kernel (not the file) inconclusive.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Optional

from .ir import (
    Assign, Barrier, Bin, Buffer, Cast, Cmp, Commit, Const, CopyRegion, CpAsync, Evaluate, Expr, Fill, For, If,
    Kernel, Load, Logic, Math, Opaque, Parallel, Ptr, Region, Select, Store, Unary, Unsupported, Var, Wait, flat_index,
)

NOOP_OPS = {"reads", "writes", "func_attr", "block_attr", "use_swizzle", "no_set_max_nreg", "annotate_l2_hit_ratio"}
BLOCK_CTX = {"block", "sblock", "init"}
LOOP_OPS = {"serial": "serial", "unroll": "unroll", "vectorized": "vectorized", "Pipelined": "pipelined",
            "range": "serial"}
MATH_FNS = {"exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs", "fabs", "sin", "cos", "tanh", "floor", "ceil",
            "round", "trunc", "sigmoid"}
BIN_OPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "fdiv",
           ast.Mod: "fmod", ast.LShift: "shl", ast.RShift: "shr", ast.BitAnd: "band", ast.BitOr: "bor",
           ast.BitXor: "bxor"}
CMP_OPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
DEFAULT_SCOPES = {"alloc_shared": "shared.dyn", "alloc_fragment": "local.fragment", "alloc_local": "local",
                  "alloc_buffer": "global", "decl_buffer": "global"}
THREAD_TAGS = {"threadIdx.x": ("threadIdx", 0), "threadIdx.y": ("threadIdx", 1), "threadIdx.z": ("threadIdx", 2),
               "blockIdx.x": ("blockIdx", 0), "blockIdx.y": ("blockIdx", 1), "blockIdx.z": ("blockIdx", 2)}
PY_OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
          "fdiv": lambda a, b: a // b, "fmod": lambda a, b: a % b, "shl": lambda a, b: a << b,
          "shr": lambda a, b: a >> b, "band": lambda a, b: a & b, "bor": lambda a, b: a | b,
          "bxor": lambda a, b: a ^ b}

_MISSING = object()


class Unknown:
    """A compile-time name whose value cannot be known from the text."""

    def __init__(self, reason: str):
        self.reason = reason


@dataclass
class MacroDef:
    node: ast.FunctionDef
    env: dict  # closure constants


@dataclass
class KernelSource:
    qualname: str
    node: ast.FunctionDef
    env: dict  # compile-time constants visible to the prim_func
    macros: dict
    factory: list = field(default_factory=list)  # enclosing function nodes, outermost first
    int_params: dict = field(default_factory=dict)  # factory parameters with integer defaults (not bound)


@dataclass
class Scope:
    names: dict = field(default_factory=dict)
    parent: Optional["Scope"] = None

    def lookup(self, name):
        s = self
        while s is not None:
            if name in s.names:
                return s.names[name]
            s = s.parent
        return _MISSING

    def child(self) -> "Scope":
        return Scope({}, self)


# ---------------------------------------------------------------- module level
class ModuleInfo:
    def __init__(self, tree: ast.Module, rules, binds: dict):
        self.rules = rules
        self.aliases: dict[str, str] = {}  # local name -> qualified module/object name
        self.binds = binds
        self.consts: dict = {}
        self.macros: dict = {}
        self.kernels: list[KernelSource] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.aliases[a.asname] = a.name
                    else:
                        self.aliases[a.name.split(".")[0]] = a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    if a.name == "*":
                        self.star = node.module
                        continue
                    self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        # Module-level names bound once to a TileLang/TVM object or module (cp = T.ptx_cp_async,
        # lang = tilelang.language): read as what they name.  Names bound anywhere else are not.
        stores: dict = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                stores[node.id] = stores.get(node.id, 0) + 1
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                stores[node.name] = stores.get(node.name, 0) + 1
            elif isinstance(node, ast.arg):
                stores[node.arg] = stores.get(node.arg, 0) + 1
        self._bound = set(stores) | set(self.aliases)
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and stores.get(node.targets[0].id) == 1 and node.targets[0].id not in self.aliases:
                q = self.qualname(node.value)
                if q and q.split(".")[0] in ("tilelang", "tvm"):
                    self.aliases[node.targets[0].id] = q
        self.functions: dict = {}
        self._plain_functions = {}
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and not self.decorated(node, "prim_func") and \
                    not self.decorated(node, "macro"):
                self._plain_functions[node.name] = node
        self.final_env: dict = {}
        self.final_macros: dict = {}
        self._scan_body(tree.body, dict(), prefix="", macros={}, final=True)
        self._scan_body(tree.body, dict(), prefix="", macros={})

    # names ----------------------------------------------------------------
    star: Optional[str] = None  # module of a top-level `from M import *`
    _bound: set = set()

    def qualname(self, node) -> Optional[str]:
        if isinstance(node, ast.Name):
            if node.id in self.aliases:
                return self.aliases[node.id]
            if self.star and node.id not in self._bound:
                return f"{self.star}.{node.id}"  # only the star import can bind it
            return None
        if isinstance(node, ast.Attribute):
            base = self.qualname(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def op_name(self, node) -> Optional[str]:
        """The TileLang/TVM op a callee or attribute names (``T.ptx_cp_async`` -> ``ptx_cp_async``)."""
        q = self.qualname(node)
        if not q:
            return None
        root = q.split(".")[0]
        if root not in ("tilelang", "tvm"):
            return None
        return q.rsplit(".", 1)[-1]

    def is_dtype_attr(self, node) -> Optional[str]:
        if isinstance(node, ast.Attribute) and self.op_name(node) is not None:
            name = self.rules.canonical_dtype(node.attr)
            if self.rules.dtype_size(name) is not None:
                return name
        return None

    def decorated(self, fn: ast.FunctionDef, what: str) -> bool:
        for d in fn.decorator_list:
            target = d.func if isinstance(d, ast.Call) else d
            if self.op_name(target) == what:
                return True
        return False

    # scanning -------------------------------------------------------------
    def _scan_body(self, body, env: dict, prefix: str, macros: dict, factory=(), int_params=None, final=False):
        """Record kernels, macros and constants.  Module-level names are read at their final binding
        (a factory runs after the module is loaded); names bound under ``if``/``with``/``try`` are not
        known from the text."""
        env = dict(env)
        macros = dict(macros)
        int_params = dict(int_params or {})
        top = not prefix
        for st in body:
            if isinstance(st, ast.FunctionDef):
                base_env, base_macros = (self.final_env, self.final_macros) if top and not final else (env, macros)
                if self.decorated(st, "prim_func"):
                    if not final:
                        self.kernels.append(KernelSource(prefix + st.name, st, dict(base_env), dict(base_macros),
                                                         list(factory), dict(int_params)))
                    env[st.name] = Unknown(f"{st.name!r} is a prim_func")
                    macros.pop(st.name, None)
                elif self.decorated(st, "macro"):
                    macros[st.name] = MacroDef(st, base_env)
                    env[st.name] = macros[st.name]
                else:
                    env[st.name] = Unknown(f"{st.name!r} is a plain function")
                    macros.pop(st.name, None)
                    self.functions[prefix + st.name] = st
                    if final:
                        continue
                    fenv = dict(base_env)
                    params = self._bind_params(st, base_env, prefix + st.name)
                    fenv.update(params)
                    ip = dict(int_params)
                    for k, v in params.items():
                        if isinstance(v, int) and not isinstance(v, bool) and k not in self.binds:
                            ip[k] = v
                    self._scan_body(st.body, fenv, prefix + st.name + ".", base_macros, list(factory) + [st], ip)
            elif isinstance(st, (ast.Assign, ast.AnnAssign)) and st.value is not None:
                targets = st.targets if isinstance(st, ast.Assign) else [st.target]
                v = self._macro_call(st.value, env)
                if v is None:
                    try:
                        v = self.cval(st.value, env)
                    except Unsupported as e:
                        v = Unknown(f"value of the name is not known from the text ({e.construct})")
                for t in targets:
                    self._bind_target(t, v, env)
                    if isinstance(t, ast.Name):
                        if isinstance(v, MacroDef):
                            macros[t.id] = v
                        else:
                            macros.pop(t.id, None)
            elif isinstance(st, (ast.If, ast.With, ast.Try, ast.For, ast.While)):
                # Names bound under guards or loops are not known from the text; kernels inside are still found.
                for sub in ("body", "orelse", "finalbody"):
                    if hasattr(st, sub):
                        self._scan_body(getattr(st, sub), env, prefix, macros, factory, int_params, final)
                for h in getattr(st, "handlers", []):
                    self._scan_body(h.body, env, prefix, macros, factory, int_params, final)
                for node in ast.walk(st):
                    for n in _bound_names(node):
                        env[n] = Unknown(f"{n!r} is bound under a guard or loop")
                        macros.pop(n, None)
            elif isinstance(st, ast.ClassDef):
                self._scan_body(st.body, env, prefix + st.name + ".", macros, factory, int_params, final)
            else:
                for n in _bound_names(st):
                    env[n] = Unknown(f"{n!r} is bound by a statement the verifier does not read")
                    macros.pop(n, None)
        if top and final:
            self.final_env, self.final_macros = env, macros
        if top:
            self.consts = env

    def _macro_call(self, node, env):
        """``m = T.macro(fn)``: the macro made from a plain function defined in the text."""
        if isinstance(node, ast.Call) and self.op_name(node.func) == "macro" and len(node.args) == 1 and \
                isinstance(node.args[0], ast.Name):
            fn = self._plain_functions.get(node.args[0].id)
            if fn is not None:
                return MacroDef(fn, env)
            return Unknown(f"T.macro({node.args[0].id}) of a function not found in the text")
        return None

    def _bind_target(self, t, v, env):
        if isinstance(t, ast.Name):
            env[t.id] = self.binds.get(t.id, v)
        elif isinstance(t, (ast.Tuple, ast.List)):
            if isinstance(v, (tuple, list)) and len(v) == len(t.elts):
                for sub, sv in zip(t.elts, v):
                    self._bind_target(sub, sv, env)
            else:
                for sub in t.elts:
                    self._bind_target(sub, Unknown("tuple unpacking not known from the text"), env)

    def _bind_params(self, fn: ast.FunctionDef, env: dict, qual: str) -> dict:
        out = {}
        args = fn.args
        pos = args.posonlyargs + args.args
        defaults = [None] * (len(pos) - len(args.defaults)) + list(args.defaults)
        pairs = list(zip(pos, defaults)) + list(zip(args.kwonlyargs, args.kw_defaults))
        for a, d in pairs:
            if a.arg in self.binds:
                out[a.arg] = self.binds[a.arg]
            elif d is not None:
                try:
                    out[a.arg] = self.cval(d, env)
                except Unsupported as e:
                    out[a.arg] = Unknown(f"default of factory parameter {a.arg!r} is not a constant ({e.construct})")
            else:
                out[a.arg] = Unknown(f"factory parameter {a.arg!r} of {qual} has no default; bind it with --bind {a.arg}=VALUE")
        return out

    # compile-time evaluation ---------------------------------------------
    def cval(self, node, env: dict):
        """Evaluate ``node`` at build time (numbers, strings, tuples, dtypes)."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in env:
                v = env[node.id]
                if isinstance(v, Unknown):
                    raise Unsupported(v.reason, node.lineno)
                return v
            if node.id in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[node.id]
            raise Unsupported(f"name {node.id!r} has no value known from the text", node.lineno)
        if isinstance(node, (ast.Tuple, ast.List)):
            return tuple(self.cval(e, env) for e in node.elts)
        if isinstance(node, ast.Attribute):
            dt = self.is_dtype_attr(node)
            if dt:
                return dt
            v = node.value
            if node.attr == "bits" and isinstance(v, ast.Call) and self.op_name(v.func) == "DataType" and \
                    len(v.args) == 1 and not v.keywords:
                # T.DataType(dtype).bits: TVM's DataType of a dtype string, as TileLang evaluates it
                name = self.rules.canonical_dtype(str(self.cval(v.args[0], env)))
                size = self.rules.dtype_size(name)
                if size is None:
                    raise Unsupported(f"DataType of {name!r}, a dtype of unknown size", node.lineno)
                return 8 * size
            raise Unsupported(f"attribute {ast.unparse(node)}", node.lineno)
        if isinstance(node, ast.UnaryOp):
            v = self.cval(node.operand, env)
            if isinstance(node.op, ast.USub):
                return -v
            if isinstance(node.op, ast.UAdd):
                return +v
            if isinstance(node.op, ast.Not):
                return not v
            if isinstance(node.op, ast.Invert):
                return ~v
        if isinstance(node, ast.BinOp):
            a, b = self.cval(node.left, env), self.cval(node.right, env)
            if isinstance(node.op, ast.Div):
                return a / b
            if isinstance(node.op, ast.Pow):
                return a ** b
            op = BIN_OPS.get(type(node.op))
            if op in PY_OPS:
                return PY_OPS[op](a, b)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            a, b = self.cval(node.left, env), self.cval(node.comparators[0], env)
            return {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b, "eq": a == b,
                    "ne": a != b}[CMP_OPS[type(node.ops[0])]]
        if isinstance(node, ast.BoolOp):
            vals = [self.cval(v, env) for v in node.values]
            return all(vals) if isinstance(node.op, ast.And) else any(vals)
        if isinstance(node, ast.IfExp):
            return self.cval(node.body if self.cval(node.test, env) else node.orelse, env)
        if isinstance(node, ast.Call):
            op = self.op_name(node.func)
            fname = node.func.id if isinstance(node.func, ast.Name) and op is None else None
            args = [self.cval(a, env) for a in node.args]
            if op in ("ceildiv", "cdiv") and len(args) == 2:
                return -(-args[0] // args[1])
            if fname in ("min", "max", "int", "float", "abs", "len", "str", "bool") and not node.keywords:
                return {"min": min, "max": max, "int": int, "float": float, "abs": abs, "len": len,
                        "str": str, "bool": bool}[fname](*args)
            if op == "dtype" and len(args) == 1:
                return self.rules.canonical_dtype(str(args[0]))
        raise Unsupported(f"expression {ast.unparse(node)[:60]!r} is not a build-time constant",
                          getattr(node, "lineno", None))


def _bound_names(node) -> list:
    out = []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        out.append(node.name)
    elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
            out.extend(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        out.extend((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
    elif isinstance(node, (ast.For, ast.With)):
        for t in ([node.target] if isinstance(node, ast.For) else [i.optional_vars for i in node.items]):
            if t is not None:
                out.extend(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
    elif isinstance(node, ast.Global):
        out.extend(node.names)
    return out


def parse_bind_value(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


# ---------------------------------------------------------------- kernel body
class KernelBuilder:
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

    def dtype(self, node, scope: Scope) -> str:
        v = self.cval(node, scope)
        if not isinstance(v, str):
            raise Unsupported(f"dtype {ast.unparse(node)!r}", node.lineno)
        name = self.rules.canonical_dtype(v)
        if self.rules.dtype_size(name) is None:
            raise Unsupported(f"dtype {v!r} of unknown size", node.lineno)
        return name

    def shape(self, node, scope: Scope) -> tuple:
        v = self.cval(node, scope)
        if isinstance(v, int):
            v = (v,)
        if not isinstance(v, tuple) or not all(isinstance(x, int) and x >= 0 for x in v):
            raise Unsupported(f"shape {ast.unparse(node)!r} is not known from the text", node.lineno)
        return v

    def call_arg(self, call: ast.Call, pos: int, kw: str, default=_MISSING):
        for k in call.keywords:
            if k.arg == kw:
                return k.value
        if pos < len(call.args):
            return call.args[pos]
        if default is _MISSING:
            raise Unsupported(f"{ast.unparse(call.func)} without its {kw!r} argument", call.lineno)
        return default

    def make_buffer(self, name, call: ast.Call, opname: str, scope: Scope, param=False) -> Buffer:
        decl = self.rules.declarations.get(opname, {"position": 1, "keyword": "dtype"})
        shape_node = self.call_arg(call, 0, "shape")
        dt_node = self.call_arg(call, decl.get("position", 1), decl.get("keyword", "dtype"), None)
        if dt_node is not None:
            dt = self.dtype(dt_node, scope)
        elif decl.get("default") is not None:
            dt = self.rules.canonical_dtype(decl["default"])
        else:
            raise Unsupported(f"T.{opname} without a dtype (it requires one)", call.lineno)
        if param:
            sc = "global"
        else:
            sc_node = None
            for k in call.keywords:
                if k.arg == "scope":
                    sc_node = k.value
            if sc_node is None and opname in ("alloc_buffer", "decl_buffer") and len(call.args) > 2:
                sc_node = call.args[2]
            sc = self.cval(sc_node, scope) if sc_node is not None else DEFAULT_SCOPES.get(opname, "global")
            if opname == "alloc_shared" and dt == "bool":
                sc = "shared"  # TileLang 0.1.7.post1 forces bool shared buffers out of the merged pool
        buf = Buffer(self.fresh(name), self.shape(shape_node, scope), dt, str(sc), self.rules.dtype_size(dt),
                     param=param, line=call.lineno)
        return buf

    # build ----------------------------------------------------------------
    def build(self) -> Kernel:
        fn = self.src.node
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
                if any(k.arg == "strides" for k in ann.keywords) or self.op(ann.func) == "StridedTensor":
                    raise Unsupported("strided tensor parameter", ann.lineno)
                buf = self.make_buffer(a.arg, ann, "Tensor", scope, param=True)
            elif isinstance(ann, ast.Subscript) and self.op(ann.value) in ("Tensor", "Buffer"):
                sl = ann.slice
                fake = ast.Call(func=ann.value, args=list(sl.elts) if isinstance(sl, ast.Tuple) else [sl],
                                keywords=[], lineno=ann.lineno, col_offset=ann.col_offset)
                buf = self.make_buffer(a.arg, fake, "Tensor", scope, param=True)
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
                      self.sites, self.unsupported)

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
            if isinstance(node, ast.Call) and self.op(node.func) == "ptx_cp_async":
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
                raise Unsupported("chained assignment", line)
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
                for k in value.keywords:
                    if k.arg == "elem_offset":
                        ok, v = self.try_cval(k.value, scope)
                        if not (ok and v == 0):
                            raise Unsupported(f"T.{op}(elem_offset=...) moves the buffer's address", line)
                    if k.arg in ("strides", "offset_factor", "axis_separators") and op == "decl_buffer":
                        raise Unsupported(f"T.{op}({k.arg}=...)", line)
                data = next((k.value for k in value.keywords if k.arg == "data"), None)
                if data is not None:
                    base = self.data_buffer(data, scope)
                    view = self.make_buffer(name, value, op, scope)
                    if view.shape != base.shape or view.dtype != base.dtype:
                        raise Unsupported(f"T.{op}(data={ast.unparse(data)}) declares a {view.dtype} {view.shape} "
                                          f"view of {base.name} ({base.dtype} {base.shape}); views of another "
                                          "shape or type are not modelled", line)
                    self.used.discard(view.name)
                    scope.names[name] = ("buf", base)  # the same memory under another name
                    return []
                buf = self.make_buffer(name, value, op, scope)
                self.allocs.append(buf)
                scope.names[name] = ("buf", buf)
                return []
            if op == "match_buffer":
                h = value.args[0] if value.args else None
                if not (isinstance(h, ast.Name) and scope.lookup(h.id) == ("handle", h.id)):
                    raise Unsupported("match_buffer of something other than a handle parameter", line)
                buf = self.make_buffer(name, ast.Call(func=value.func, args=value.args[1:],
                                                       keywords=value.keywords, lineno=line), "Tensor", scope,
                                       param=True)
                self.params.append(buf)
                scope.names[name] = ("buf", buf)
                return []
            if op == "env_thread":
                tag = self.cval(value.args[0], scope)
                scope.names[name] = ("env_thread", tag)
                return []
            if op == "launch_thread":
                return self.launch(value, scope, name)
            if op == "get_thread_binding":
                dim = self.cval(value.args[0], scope) if value.args else 0
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
        first = call.args[0]
        if isinstance(first, ast.Name) and isinstance(scope.lookup(first.id), tuple) and \
                scope.lookup(first.id)[0] == "env_thread":
            tag = scope.lookup(first.id)[1]
            name = first.id
        else:
            tag = self.cval(first, scope)
        if tag not in THREAD_TAGS:
            raise Unsupported(f"thread tag {tag!r}", call.lineno)
        ext = self.cval(call.args[1], scope)
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
            inner = call.args[0] if call.args else None
            if isinstance(inner, ast.Call) and self.op(inner.func) is not None:
                return self.call_stmt(inner, scope)
            if isinstance(inner, ast.Constant):
                return []
            return [Evaluate(self.expr(inner, scope), line)]
        if op in DEFAULT_SCOPES:
            # an allocation bound to no name: nothing can touch it (the merge rule does not count it)
            self.allocs.append(self.make_buffer("unnamed", call, op, scope))
            return []
        if op == "ptx_cp_async":
            site = self.cp_async(call, scope)
            self.sites.append(site)
            return [site]
        if op == "ptx_commit_group":
            return [Commit(line)]
        if op == "ptx_wait_group":
            n = self.cval(call.args[0], scope) if call.args else 0
            if not isinstance(n, int):
                raise Unsupported("wait_group count is not a constant", line)
            return [Wait(n, line)]
        if op in ("sync_threads", "__syncthreads"):
            return [Barrier(line)]
        if op == "tvm_storage_sync":
            sc = self.cval(call.args[0], scope) if call.args else "shared"
            if sc not in ("shared", "shared.dyn"):
                raise Unsupported(f"tvm_storage_sync({sc!r})", line)
            return [Barrier(line)]
        if op in NOOP_OPS:
            return []
        if op == "launch_thread":
            return self.launch(call, scope, None)
        if op in ("clear", "fill"):
            buf = self.buffer_of(call.args[0], scope)
            val = Const(0, "int32") if op == "clear" else self.expr(call.args[1], scope)
            return [Fill(buf, val, line)]
        if op == "copy":
            return [CopyRegion(self.region(call.args[0], scope), self.region(call.args[1], scope), line)]
        raise Unsupported(f"T.{op}", line)

    def inline_macro(self, m: MacroDef, call: ast.Call, scope: Scope) -> list:
        self.depth += 1
        if self.depth > 32:
            raise Unsupported("recursive T.macro", call.lineno)
        fn = m.node
        mscope = Scope({k: ("const", v) if not isinstance(v, (Unknown, MacroDef)) else
                        (("macro", v) if isinstance(v, MacroDef) else ("unknown", v)) for k, v in m.env.items()})
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
                inner.names[p.arg] = ("const", self.mod.cval(d, m.env))
            else:
                raise Unsupported(f"macro {fn.name!r} called without {p.arg!r}", call.lineno)
        out = self.stmts(fn.body, inner)
        self.depth -= 1
        return out

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
            dims = [self.cval(a, scope) for a in call.args]
            if len(dims) > 3 or not all(isinstance(d, int) and d > 0 for d in dims):
                raise Unsupported("T.Kernel grid is not known from the text", st.lineno)
            threads = None
            for k in call.keywords:
                if k.arg == "threads":
                    threads = self.cval(k.value, scope)
                elif k.arg in ("is_cpu",):
                    if self.cval(k.value, scope):
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
            tag = None
            for k in it.keywords:
                if k.arg == "thread":
                    tag = self.cval(k.value, scope)
            args = [self.cval(a, scope) for a in it.args]
            if tag is None and len(args) == 3:
                tag, args = args[2], args[:2]
            if tag not in THREAD_TAGS or len(tnames) != 1:
                raise Unsupported("T.thread_binding form", line)
            start, stop = (0, args[0]) if len(args) == 1 else (args[0], args[1])
            if start != 0:
                raise Unsupported("T.thread_binding with a nonzero start", line)
            self.bind_thread(tnames[0], THREAD_TAGS[tag], stop, inner)
            return self.stmts(st.body, inner)
        if op in ("Parallel", "grid"):
            exts = [self.cval(a, scope) for a in it.args]
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
            args = list(it.args)
            step = None
            if op == "range" and len(args) == 3:
                step = args.pop()
            if op == "Pipelined":
                for k in it.keywords:
                    if k.arg not in ("num_stages", "order", "stage", "sync", "group"):
                        raise Unsupported(f"T.Pipelined({k.arg}=...)", line)
            if step is not None:
                ok, sv = self.try_cval(step, scope)
                if not (ok and sv == 1):
                    raise Unsupported("range with a step other than 1", line)
            if len(args) == 1:
                start, ext = Const(0, "int32"), self.expr(args[0], scope)
            elif len(args) == 2:
                start = self.expr(args[0], scope)
                ext = fold(Bin("sub", self.expr(args[1], scope), start))
            else:
                raise Unsupported(f"{op} with {len(args)} arguments", line)
            ir = self.fresh(tnames[0])
            inner.names[tnames[0]] = ("var", ir)
            return [For(ir, start, ext, LOOP_OPS[op], self.stmts(st.body, inner), line)]
        raise Unsupported(f"for over {ast.unparse(it.func)[:40]}", line)

    def target_names(self, t) -> list:
        if isinstance(t, ast.Name):
            return [t.id]
        if isinstance(t, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in t.elts):
            return [e.id for e in t.elts]
        raise Unsupported("loop target", getattr(t, "lineno", None))

    # cp.async ------------------------------------------------------------------
    def cp_async(self, call: ast.Call, scope: Scope) -> CpAsync:
        line, col = call.lineno, call.col_offset
        kws = {k.arg: k.value for k in call.keywords}
        if None in kws:
            raise Unsupported("**kwargs in ptx_cp_async", line)
        first = call.args[0] if call.args else kws.get("dst_access_ptr")
        new_form = isinstance(first, ast.Call) and self.op(first.func) in ("tvm_access_ptr", "access_ptr") or \
            (isinstance(first, ast.Call) and isinstance(first.func, ast.Attribute) and first.func.attr == "access_ptr")
        if new_form:
            names = ["dst", "src", "size", "predicate"]
            kwmap = {"dst_access_ptr": "dst", "src_access_ptr": "src", "bytes": "size", "num_elems": "size",
                     "predicate": "predicate"}
            got = {}
            for n, a in zip(names, call.args):
                got[n] = a
            dtype_kw = False
            for k, v in kws.items():
                if k == "dtype":
                    dtype_kw = True
                    continue
                if k not in kwmap:
                    raise Unsupported(f"ptx_cp_async keyword {k!r}", line)
                got[kwmap[k]] = v
            if len(call.args) > 4 or "size" not in got:
                raise Unsupported("ptx_cp_async argument list", line)
            dst = self.access_ptr(got["dst"], scope)
            src = self.access_ptr(got["src"], scope)
            size_node = got["size"]
            size_lit = isinstance(size_node, ast.Constant) and isinstance(size_node.value, int)
            pred = self.expr(got["predicate"], scope) if "predicate" in got and not (
                isinstance(got["predicate"], ast.Constant) and got["predicate"].value is None) else None
            return CpAsync("access_ptr", dst, src, self.expr(size_node, scope), self.meaning, pred, line, col,
                           None, dtype_kw, size_lit)
        params = list(self.rules.legacy.python_params) or ["dtype", "shared_ptr", "shared_offset", "global_ptr",
                                                           "global_offset", "bytes"]
        dtype_name = params[0]
        got = {}
        pos_names = params[1:] if dtype_name in kws else params
        pos_names = pos_names + ["predicate"]
        if len(call.args) > len(pos_names):
            raise Unsupported("ptx_cp_async with too many arguments", line)
        for n, a in zip(pos_names, call.args):
            got[n] = a
        for k, v in kws.items():
            if k not in params and k != "predicate":
                raise Unsupported(f"ptx_cp_async keyword {k!r}", line)
            got[k] = v
        missing = [p for p in params if p not in got]
        if missing:
            raise Unsupported(f"ptx_cp_async without {', '.join(missing)}", line)
        ldt = None
        ok, v = self.try_cval(got[dtype_name], scope)
        if ok and isinstance(v, str):
            ldt = self.rules.canonical_dtype(v)
        dst = Ptr(self.data_buffer(got[params[1]], scope), None, self.expr(got[params[2]], scope))
        src = Ptr(self.data_buffer(got[params[3]], scope), None, self.expr(got[params[4]], scope))
        size_node = got[params[5]]
        size_lit = isinstance(size_node, ast.Constant) and isinstance(size_node.value, int)
        pred = self.expr(got["predicate"], scope) if "predicate" in got else None
        return CpAsync("legacy", dst, src, self.expr(size_node, scope), "bytes", pred, line, col, ldt, False, size_lit)

    def data_buffer(self, node, scope: Scope) -> Buffer:
        if isinstance(node, ast.Attribute) and node.attr == "data":
            return self.buffer_of(node.value, scope)
        if isinstance(node, ast.Name):
            b = scope.lookup(node.id)
            if isinstance(b, tuple) and b[0] == "data":
                return b[1]
            return self.buffer_of(node, scope)
        raise Unsupported(f"cp.async pointer {ast.unparse(node)[:40]!r} is not <buffer>.data", node.lineno)

    def buffer_of(self, node, scope: Scope) -> Buffer:
        if isinstance(node, ast.Name):
            b = scope.lookup(node.id)
            if isinstance(b, tuple) and b[0] == "buf":
                return b[1]
        raise Unsupported(f"{ast.unparse(node)[:40]!r} is not a buffer known in the kernel",
                          getattr(node, "lineno", None))

    def access_ptr(self, node, scope: Scope) -> Ptr:
        line = node.lineno
        op = self.op(node.func)
        if op == "tvm_access_ptr":
            a = list(node.args)
            if len(a) != 5 or node.keywords:
                raise Unsupported("tvm_access_ptr without its five arguments", line)
            ta = a[0]
            if not (isinstance(ta, ast.Call) and self.op(ta.func) == "type_annotation" and len(ta.args) == 1):
                raise Unsupported("tvm_access_ptr whose first argument is not T.type_annotation(dtype)", line)
            ptype = self.dtype(ta.args[0], scope)
            return Ptr(self.data_buffer(a[1], scope), ptype, self.expr(a[2], scope), self.expr(a[3], scope),
                       self.expr(a[4], scope), "tvm_access_ptr")
        if op == "access_ptr":
            # tilelang/language/builtin.py (0.1.8): access_ptr(base, access_type="r", *extents, offset=0,
            # extent=None, ignore_last_ndim=0)
            a = list(node.args)
            kw = {k.arg: k.value for k in node.keywords}
            unknown = set(kw) - {"base", "base_load", "access_type", "offset", "extent", "ignore_last_ndim"}
            if unknown or any(isinstance(x, ast.Starred) for x in a):
                raise Unsupported(f"T.access_ptr argument {sorted(unknown)[0] if unknown else '*args'}", line)
            load = a[0] if a else kw.get("base", kw.get("base_load"))
            mode = a[1] if len(a) > 1 else kw.get("access_type", ast.Constant("r"))
            exts = a[2:]
            if len(exts) == 1 and isinstance(exts[0], (ast.Tuple, ast.List)):
                exts = list(exts[0].elts)
            buf, mins, region_exts = self.pointer_base(load, scope, line)
            ig = kw.get("ignore_last_ndim")
            if ig is not None:
                n = self.cval(ig, scope)
                if not isinstance(n, int) or n < 0:
                    raise Unsupported("T.access_ptr ignore_last_ndim is not a constant", line)
                if n:
                    upto = max(0, len(mins) - n)
                    mins = list(mins[:upto]) + [Const(0, "int32")] * (len(mins) - upto)
            off = kw.get("offset")
            if off is not None:
                ok, v = self.try_cval(off, scope)
                if not (ok and v == 0):
                    if len(mins) != 1:
                        raise Unsupported("T.access_ptr(offset!=0) of a buffer of several dimensions (TileLang "
                                          "rejects it)", line)
                    mins = [fold(Bin("add", mins[0], self.expr(off, scope)))]
            if "extent" in kw:
                ext = self.expr(kw["extent"], scope)
            elif exts:
                if len(exts) > len(buf.shape):
                    raise Unsupported("T.access_ptr with more extents than dimensions", line)
                ext = Const(1, "int32")
                for e in exts:
                    ext = fold(Bin("mul", ext, self.expr(e, scope)))
            elif region_exts is not None:
                ext = Const(1, "int32")
                for e in region_exts:
                    ext = fold(Bin("mul", ext, Const(e, "int32")))
            else:
                ext = Const(1, "int32")
            return Ptr(buf, buf.dtype, flat_index(buf, tuple(mins)), ext,
                       Const(self.rw(self.cval(mode, scope)), "int32"), "access_ptr")
        if isinstance(node.func, ast.Attribute) and node.func.attr == "access_ptr":
            # tvm Buffer.access_ptr(access_mask, ptr_type="handle", content_lanes=1, offset=0, extent=None)
            buf = self.buffer_of(node.func.value, scope)
            names = ["access_mask", "ptr_type", "content_lanes", "offset", "extent"]
            got = dict(zip(names, node.args))
            for k in node.keywords:
                if k.arg not in names:
                    raise Unsupported(f"Buffer.access_ptr({k.arg}=...)", line)
                got[k.arg] = k.value
            if "content_lanes" in got:
                ok, v = self.try_cval(got["content_lanes"], scope)
                if not (ok and v == 1):
                    raise Unsupported("Buffer.access_ptr(content_lanes=...) makes a vector pointer whose offset "
                                      "and extent count lanes", line)
            if "ptr_type" in got:
                ok, v = self.try_cval(got["ptr_type"], scope)
                if not (ok and v == "handle"):
                    raise Unsupported("Buffer.access_ptr(ptr_type=...)", line)
            mode = got.get("access_mask")
            if mode is None:
                raise Unsupported("Buffer.access_ptr without its access mask", line)
            off = got.get("offset")
            ext = got.get("extent")
            return Ptr(buf, buf.dtype, self.expr(off, scope) if off is not None else Const(0, "int32"),
                       self.expr(ext, scope) if ext is not None else None,
                       Const(self.rw(self.cval(mode, scope)), "int32"), "buffer.access_ptr")
        raise Unsupported(f"access pointer {ast.unparse(node)[:40]!r}", line)

    def pointer_base(self, node, scope: Scope, line):
        """``buf[i, j]``, ``buf[a:b, ...]`` or ``buf``: the buffer, the minimum indices and the region's extents."""
        if isinstance(node, ast.Name):
            buf = self.buffer_of(node, scope)
            return buf, [Const(0, "int32") for _ in buf.shape], tuple(buf.shape)
        if isinstance(node, ast.Subscript):
            sl = node.slice
            items = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
            if any(isinstance(i, ast.Slice) for i in items):
                r = self.region(node, scope)
                if any(e is None for e in r.extents):
                    r = Region(r.buf, r.starts, tuple(1 if e is None else e for e in r.extents))
                return r.buf, list(r.starts), tuple(r.extents)
            buf, idx = self.subscript(node, scope)
            return buf, list(idx), None
        raise Unsupported("T.access_ptr whose first argument is not a buffer, buf[indices] or a region", line)

    @staticmethod
    def rw(mode) -> int:
        if isinstance(mode, int):
            return mode
        return {"r": 1, "w": 2, "rw": 3}.get(str(mode), 0)

    # regions ---------------------------------------------------------------------
    def region(self, node, scope: Scope) -> Region:
        if isinstance(node, ast.Name):
            buf = self.buffer_of(node, scope)
            return Region(buf, tuple(Const(0, "int32") for _ in buf.shape), tuple(buf.shape))
        if isinstance(node, ast.Subscript):
            buf = self.buffer_of(node.value, scope)
            sl = node.slice
            items = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
            if len(items) != len(buf.shape):
                raise Unsupported(f"region of {buf.name} with {len(items)} indices", node.lineno)
            starts, exts = [], []
            for it, dim in zip(items, buf.shape):
                if isinstance(it, ast.Slice):
                    if it.step is not None:
                        raise Unsupported("strided region", node.lineno)
                    lo = self.expr(it.lower, scope) if it.lower is not None else Const(0, "int32")
                    hi = self.expr(it.upper, scope) if it.upper is not None else Const(dim, "int32")
                    e = fold(Bin("sub", hi, lo))
                    if not isinstance(e, Const):
                        from .poly import poly  # a[i:i + 8]: the extent is a constant polynomial

                        pe = poly(Bin("sub", hi, lo))
                        if not pe or set(pe) == {()}:
                            e = Const(pe.get((), 0), "int32")
                    if not isinstance(e, Const):
                        raise Unsupported("region extent not known from the text", node.lineno)
                    starts.append(lo)
                    exts.append(int(e.value))
                else:
                    starts.append(self.expr(it, scope))
                    exts.append(None)  # taken from the other operand
            return Region(buf, tuple(starts), tuple(exts))
        raise Unsupported(f"T.copy operand {ast.unparse(node)[:40]!r}", getattr(node, "lineno", None))

    # expressions -----------------------------------------------------------------
    def subscript(self, node: ast.Subscript, scope: Scope):
        buf = self.buffer_of(node.value, scope)
        sl = node.slice
        items = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
        if any(isinstance(i, ast.Slice) for i in items):
            raise Unsupported(f"slice of {buf.name} outside T.copy", node.lineno)
        idx = tuple(self.expr(i, scope) for i in items)
        if len(idx) != len(buf.shape):
            raise Unsupported(f"{buf.name} indexed with {len(idx)} indices but has {len(buf.shape)} dimensions",
                              node.lineno)
        return buf, idx

    def expr(self, node, scope: Scope) -> Expr:
        line = getattr(node, "lineno", None)
        if isinstance(node, ast.Constant):
            return const_expr(node.value, line, f"constant {node.value!r} used as a value")
        if isinstance(node, ast.Name):
            b = scope.lookup(node.id)
            if b is _MISSING:
                if node.id in ("True", "False"):
                    return Const(node.id == "True", "bool")
                raise Unsupported(f"name {node.id!r} is not known in the kernel", line)
            kind = b[0]
            if kind == "var":
                return Var(b[1])
            if kind == "expr":
                return b[1]
            if kind == "const":
                return const_expr(b[1], line)
            if kind == "unknown":
                raise Unsupported(b[1].reason, line)
            raise Unsupported(f"{node.id!r} ({kind}) used as a value", line)
        if isinstance(node, ast.BinOp):
            op = BIN_OPS.get(type(node.op))
            if op is None:
                raise Unsupported(f"operator {type(node.op).__name__}", line)
            return fold(Bin(op, self.expr(node.left, scope), self.expr(node.right, scope)))
        if isinstance(node, ast.UnaryOp):
            a = self.expr(node.operand, scope)
            if isinstance(node.op, ast.USub):
                return fold(Unary("neg", a))
            if isinstance(node.op, ast.UAdd):
                return a
            if isinstance(node.op, ast.Not):
                return Unary("not", a)
            return Unary("bnot", a)
        if isinstance(node, ast.Compare):
            parts = []
            left = self.expr(node.left, scope)
            for o, c in zip(node.ops, node.comparators):
                if type(o) not in CMP_OPS:
                    raise Unsupported(f"comparison {type(o).__name__}", line)
                right = self.expr(c, scope)
                parts.append(Cmp(CMP_OPS[type(o)], left, right))
                left = right
            out = parts[0]
            for p in parts[1:]:
                out = Logic("and", out, p)
            return out
        if isinstance(node, ast.BoolOp):
            vals = [self.expr(v, scope) for v in node.values]
            out = vals[0]
            for v in vals[1:]:
                out = Logic("and" if isinstance(node.op, ast.And) else "or", out, v)
            return out
        if isinstance(node, ast.IfExp):
            return Select(self.expr(node.test, scope), self.expr(node.body, scope), self.expr(node.orelse, scope))
        if isinstance(node, ast.Subscript):
            if isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
                return const_expr(self.shape_dim(node, scope), line)
            buf, idx = self.subscript(node, scope)
            return Load(buf, idx)
        if isinstance(node, ast.Call):
            return self.call_expr(node, scope)
        if isinstance(node, ast.Attribute):
            ok, v = self.try_cval(node, scope)
            if ok and not isinstance(v, str):
                return const_expr(v, line)
        raise Unsupported(f"expression {ast.unparse(node)[:60]!r}", line)

    def shape_dim(self, node: ast.Subscript, scope: Scope) -> int:
        buf = self.buffer_of(node.value.value, scope)
        i = self.cval(node.slice, scope)
        return buf.shape[i]

    def call_expr(self, node: ast.Call, scope: Scope) -> Expr:
        line = node.lineno
        op = self.op(node.func)
        fname = node.func.id if isinstance(node.func, ast.Name) and op is None else None
        args = node.args
        kw = {k.arg: k.value for k in node.keywords}
        if op == "if_then_else":
            return Select(self.expr(args[0], scope), self.expr(args[1], scope), self.expr(args[2], scope))
        if op in ("Cast", "cast"):
            if op == "Cast":
                dt, v = args[0], args[1]
            else:
                v, dt = args[0], (args[1] if len(args) > 1 else kw["dtype"])
            return Cast(self.dtype(dt, scope), self.expr(v, scope))
        if op in ("min", "max") or fname in ("min", "max"):
            if len(args) != 2:
                raise Unsupported(f"{op or fname} of {len(args)} arguments", line)
            return fold(Bin(op or fname, self.expr(args[0], scope), self.expr(args[1], scope)))
        if op in ("floordiv", "floormod", "truncdiv", "truncmod"):
            name = {"floordiv": "fdiv", "floormod": "fmod", "truncdiv": "tdiv", "truncmod": "tmod"}[op]
            return fold(Bin(name, self.expr(args[0], scope), self.expr(args[1], scope)))
        if op in ("ceildiv", "cdiv"):
            a, b = self.expr(args[0], scope), self.expr(args[1], scope)
            return fold(Bin("fdiv", Bin("sub", Bin("add", a, b), Const(1, "int32")), b))
        if op in ("shift_left", "shift_right", "bitwise_and", "bitwise_or", "bitwise_xor"):
            name = {"shift_left": "shl", "shift_right": "shr", "bitwise_and": "band", "bitwise_or": "bor",
                    "bitwise_xor": "bxor"}[op]
            return fold(Bin(name, self.expr(args[0], scope), self.expr(args[1], scope)))
        if op in MATH_FNS:
            return Math(op, tuple(self.expr(a, scope) for a in args))
        if op == "get_thread_binding":
            dim = self.cval(args[0], scope) if args else 0
            name = f"threadIdx_{'xyz'[dim]}"
            self.bind_thread(None, ("threadIdx", int(dim)), None, scope)
            ir = [k for k, v in self.thread_vars.items() if v == ("threadIdx", int(dim))][-1]
            del name
            return Var(ir)
        if op is not None:
            dt = self.rules.canonical_dtype(op)
            if self.rules.dtype_size(dt) is not None and len(args) == 1:
                return Cast(dt, self.expr(args[0], scope))
        ok, v = self.try_cval(node, scope)
        if ok and isinstance(v, (int, float, bool)):
            return const_expr(v, line)
        raise Unsupported(f"call of {ast.unparse(node.func)[:40]!r} in an expression", line)


CPP_RESERVED = {"int", "float", "double", "char", "long", "short", "unsigned", "signed", "void", "bool", "half",
                "auto", "const", "static", "struct", "class", "new", "delete", "this", "default", "case", "switch",
                "register", "volatile", "template", "typename", "namespace", "using", "goto", "do", "while", "for",
                "if", "else", "return", "break", "continue", "union", "enum", "sizeof", "extern", "inline",
                "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "main", "operator", "private", "public",
                "protected", "friend", "virtual", "true", "false", "nullptr", "asm", "typedef", "uint", "min", "max"}


def const_expr(v, line=None, message: Optional[str] = None) -> Expr:
    """A Python constant as an IR constant (bool, int32 or float32); anything else is unsupported."""
    if isinstance(v, bool):
        return Const(v, "bool")
    if isinstance(v, int):
        return Const(v, "int32")
    if isinstance(v, float):
        return Const(v, "float32")
    raise Unsupported(message or f"value {v!r} used as a number", line)


def fold(e: Expr) -> Expr:
    """Fold integer constant subexpressions (keeps the tree otherwise)."""
    if isinstance(e, Bin) and isinstance(e.a, Const) and isinstance(e.b, Const) and \
            e.a.dtype == "int32" and e.b.dtype == "int32":
        a, b = e.a.value, e.b.value
        if e.op in PY_OPS and not (e.op in ("fdiv", "fmod") and b == 0):
            return Const(PY_OPS[e.op](a, b), "int32")
        if e.op == "min":
            return Const(min(a, b), "int32")
        if e.op == "max":
            return Const(max(a, b), "int32")
    if isinstance(e, Unary) and e.op == "neg" and isinstance(e.a, Const) and e.a.dtype != "bool":
        return Const(-e.a.value, e.a.dtype)
    return e


# ---------------------------------------------------------------- entry points
@dataclass
class BuiltKernel:
    qualname: str
    line: int
    kernel: Optional[Kernel]
    error: Optional[Unsupported]
    fingerprint: str = ""  # the prim_func's text and everything it can reach
    foreign: str = ""  # a TileLang-only construct spelled through TVM's namespace (the text would not build)
    int_params: dict = field(default_factory=dict)  # factory parameters with integer defaults, not bound


def _definitions(tree: ast.Module) -> dict:
    """Every statement of the module that binds a name, by name (at any depth, in text order)."""
    out: dict = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            for n in _bound_names(node):
                out.setdefault(n, []).append(node)
    for v in out.values():
        v.sort(key=lambda n: (n.lineno, n.col_offset))
    return out


def _names_in(node) -> set:
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
    return out


def _free_names(fn) -> set:
    """Names a function mentions but does not bind itself (parameters and local bindings excluded)."""
    local = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
    for n in ast.walk(fn):
        if n is not fn and isinstance(n, ast.stmt):
            local.update(_bound_names(n))
    return _names_in(fn) - local


def _def_text(text: str, node) -> str:
    if isinstance(node, ast.For):
        return "for " + ast.unparse(node.target) + " in " + ast.unparse(node.iter)
    if isinstance(node, ast.With):
        return "with " + ", ".join(ast.unparse(i) for i in node.items)
    deco = "".join("@" + ast.unparse(d) + "\n" for d in getattr(node, "decorator_list", []))
    return deco + (ast.get_source_segment(text, node) or ast.unparse(node))


def fingerprint(text: str, ks: KernelSource, tree: Optional[ast.Module] = None, defs: Optional[dict] = None) -> str:
    """The text of the prim_func and of everything it can reach: every statement anywhere in the module
    that binds a name the prim_func (or, transitively, such a statement) mentions, every import, and the
    headers of the enclosing factories.  Equal fingerprints mean the kernel's meaning cannot have changed."""
    parts = [_def_text(text, ks.node)]
    for f in ks.factory:
        parts.append("factory " + f.name + "(" + ast.unparse(f.args) + ")")
    if tree is not None:
        defs = defs if defs is not None else _definitions(tree)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                parts.append(ast.unparse(node))
        seen_nodes: set = set()
        todo = list(_free_names(ks.node))
        for f in ks.factory:
            todo.extend(_names_in(f.args))
            todo.extend(_names_in(ast.Module(body=f.decorator_list, type_ignores=[])))
        seen_names: set = set()
        reached = []
        while todo:
            n = todo.pop()
            if n in seen_names:
                continue
            seen_names.add(n)
            for d in defs.get(n, []):
                if id(d) in seen_nodes or d is ks.node:
                    continue
                seen_nodes.add(id(d))
                reached.append(d)
                if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and \
                        any(d is f for f in ks.factory):
                    continue  # a factory's body is reached through the names it binds
                if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    todo.extend(_free_names(d))
                    todo.extend(_names_in(ast.Module(body=d.decorator_list, type_ignores=[])))
                elif isinstance(d, (ast.For, ast.With)):
                    todo.extend(_names_in(ast.Module(body=[ast.Expr(d.iter)] if isinstance(d, ast.For) else
                                                     [ast.Expr(i.context_expr) for i in d.items], type_ignores=[])))
                else:
                    todo.extend(_names_in(d))
        reached.sort(key=lambda d: (d.lineno, d.col_offset))
        for d in reached:
            if any(d is f for f in ks.factory):
                continue
            parts.append(_def_text(text, d))
    for name in sorted(ks.env):
        v = ks.env[name]
        if isinstance(v, MacroDef):
            parts.append(name + ":" + _def_text(text, v.node))
        elif isinstance(v, Unknown):
            parts.append(f"{name}=?{v.reason}")
        else:
            parts.append(f"{name}={v!r}")
    return "\n".join(parts)


def build_kernels(text: str, rules, *, meaning: str, binds: Optional[dict] = None) -> list[BuiltKernel]:
    """Every prim_func in ``text`` with its IR (or the reason it has none).

    ``meaning`` is the size meaning of access-pointer calls in this text
    ("bytes" or "num_elems"); legacy calls always mean bytes.
    Raises SyntaxError when the text does not parse.
    """
    tree = ast.parse(text)
    b = {k: parse_bind_value(v) if isinstance(v, str) else v for k, v in (binds or {}).items()}
    mod = ModuleInfo(tree, rules, b)
    defs = _definitions(tree)
    out = []
    for ks in mod.kernels:
        fp = fingerprint(text, ks, tree, defs)
        fr = foreign_construct(mod, ks)
        try:
            k = KernelBuilder(mod, ks, meaning).build()
            out.append(BuiltKernel(ks.qualname, ks.node.lineno, k, None, fp, fr, ks.int_params))
        except Unsupported as e:
            out.append(BuiltKernel(ks.qualname, ks.node.lineno, None, e, fp, fr, ks.int_params))
        except RecursionError:
            out.append(BuiltKernel(ks.qualname, ks.node.lineno, None, Unsupported("expression nested too deeply"), fp,
                                   fr, ks.int_params))
    return out


# TileLang's own language constructs: TVM's TVMScript namespace (tvm.script.tir) has none of them
TILELANG_ONLY = {"Kernel", "alloc_shared", "alloc_fragment", "alloc_local", "Parallel", "Pipelined", "copy", "fill",
                 "clear", "access_ptr", "gemm", "Tensor", "get_thread_binding", "use_swizzle", "annotate_layout"}


def foreign_construct(mod: ModuleInfo, ks: KernelSource) -> str:
    """A TileLang-only construct the kernel (or a macro it sees) reaches through ``tvm``: the text would not build."""
    nodes = [ks.node] + [m.node for m in ks.macros.values()]
    for node in nodes:
        for n in ast.walk(node):
            if isinstance(n, ast.Attribute) and n.attr in TILELANG_ONLY:
                q = mod.qualname(n)
                if q and q.split(".")[0] == "tvm":
                    return f"{ast.unparse(n)} resolves to {q}, which TVM does not define (line {n.lineno})"
    return ""
