"""The module-level reading of a kernel file: what a prim_func sees from outside its body.

:class:`ModuleInfo` reads a parsed module once: its imports and the names they bind (a
module-level ``cp = T.ptx_cp_async`` too), every ``@T.prim_func`` as a :class:`KernelSource`
(with its enclosing factories and the constants it sees), the ``@T.macro`` functions as
:class:`MacroDef`, and module and factory constants with the ``--bind`` values
(:class:`Unknown` where the text does not decide one); :meth:`ModuleInfo.cval` evaluates a
build-time constant.  :class:`Scope` is the chain of names the kernel builder
(``statements.py``) looks a name up in.  The operator tables here are shared with the
expressions (``expressions.py``).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Optional

from ..ir import Unsupported
from .names import NameModel
from .signatures import SIGNATURES, bind

BIN_OPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "fdiv",
           ast.Mod: "fmod", ast.LShift: "shl", ast.RShift: "shr", ast.BitAnd: "band", ast.BitOr: "bor",
           ast.BitXor: "bxor"}
CMP_OPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
PY_OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
          "fdiv": lambda a, b: a // b, "fmod": lambda a, b: a % b, "shl": lambda a, b: a << b,
          "shr": lambda a, b: a >> b, "band": lambda a, b: a & b, "bor": lambda a, b: a | b,
          "bxor": lambda a, b: a ^ b}

MISSING = object()


class Unknown:
    """A compile-time name whose value cannot be known from the text."""

    def __init__(self, reason: str):
        self.reason = reason


@dataclass
class MacroDef:
    node: ast.FunctionDef
    env: dict  # closure constants
    top: bool = False  # defined at module level: it reads the module's names when it is expanded


@dataclass
class KernelSource:
    qualname: str
    node: ast.FunctionDef
    env: dict  # compile-time constants visible to the prim_func
    macros: dict
    factory: list = field(default_factory=list)  # enclosing function nodes, outermost first
    int_params: dict = field(default_factory=dict)  # factory parameters with integer defaults (not bound)
    globals: dict = field(default_factory=dict)  # the module's names when the kernel is built


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
        return MISSING

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
        self.names = NameModel(tree, rules.tilelang_modules + rules.tvm_modules)  # every binding of every name, by scope (the gate: apis.py)
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
        self._top_defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and not self.decorated(node, "prim_func") and \
                    not self.decorated(node, "macro"):
                self._plain_functions[node.name] = node
        # Names some function rebinds through `global`: when that happens depends on execution order.
        self._global_written = {n for node in ast.walk(tree) if isinstance(node, ast.Global) for n in node.names}
        # globals()/vars()/exec()/eval() can rebind any module name by string: then none is known
        self._dynamic_globals = next((f"{n.func.id}() at line {n.lineno}" for n in ast.walk(tree)
                                      if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and
                                      n.func.id in ("globals", "vars", "exec", "eval")), "")
        self._module_calls: dict = {}  # plain function name -> [(line, module names before that statement)]
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
    def _scan_body(self, body, env: dict, prefix: str, macros: dict, factory=(), int_params=None, final=False,
                   module_env=None):
        """Record kernels, macros and constants, in program order.  A module-level prim_func is built
        when its ``def`` runs and sees the names bound at that moment; a module-level factory is run
        after the module is loaded (final bindings), and a name its text reads that the module rebinds
        after calling it at module level is not known (the kernels built there and later differ);
        names bound under ``if``/``with``/``try``/loops, or through ``global`` in a function, are not
        known from the text.  ``final`` is the pre-pass that finds the final bindings."""
        env = dict(env)
        macros = dict(macros)
        int_params = dict(int_params or {})
        top = not prefix
        for st in body:
            if top and final and not isinstance(st, (ast.FunctionDef, ast.ClassDef)):
                for node in ast.walk(st):
                    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                            node.func.id in self._plain_functions:
                        self._module_calls.setdefault(node.func.id, []).append((st.lineno, dict(env)))
            if isinstance(st, ast.FunctionDef):
                if top and not final and not self.decorated(st, "prim_func") and not self.decorated(st, "macro"):
                    base_env, base_macros = self._call_env(st), self.final_macros
                else:
                    base_env, base_macros = env, macros
                if self.decorated(st, "prim_func"):
                    if not final:
                        self.kernels.append(KernelSource(prefix + st.name, st, dict(base_env), dict(base_macros),
                                                         list(factory), dict(int_params),
                                                         dict(env if top else (module_env or {}))))
                    env[st.name] = Unknown(f"{st.name!r} is a prim_func")
                    macros.pop(st.name, None)
                elif self.decorated(st, "macro"):
                    macros[st.name] = MacroDef(st, base_env, top)
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
                    self._scan_body(st.body, fenv, prefix + st.name + ".", base_macros, list(factory) + [st], ip,
                                    module_env=base_env if top else module_env)
            elif isinstance(st, (ast.Assign, ast.AnnAssign)) and st.value is not None:
                self._scan_assign(st, env, macros)
            elif isinstance(st, (ast.If, ast.With, ast.Try, ast.For, ast.While)):
                # Names bound under guards or loops are not known from the text; kernels inside are still found.
                for sub in ("body", "orelse", "finalbody"):
                    if hasattr(st, sub):
                        self._scan_body(getattr(st, sub), env, prefix, macros, factory, int_params, final)
                for h in getattr(st, "handlers", []):
                    self._scan_body(h.body, env, prefix, macros, factory, int_params, final)
                for node in ast.walk(st):
                    for n in bound_names(node):
                        env[n] = Unknown(f"{n!r} is bound under a guard or loop")
                        macros.pop(n, None)
            elif isinstance(st, ast.ClassDef):
                self._scan_body(st.body, env, prefix + st.name + ".", macros, factory, int_params, final)
            else:
                for n in {n for node in ast.walk(st) for n in bound_names(node)}:
                    env[n] = Unknown(f"{n!r} is bound by a statement the verifier does not read")
                    macros.pop(n, None)
        if top and final:
            self.final_env, self.final_macros = env, macros
        if top:
            self.consts = env

    def _scan_assign(self, st, env: dict, macros: dict) -> None:
        """An assignment of ``_scan_body``: its targets bound in ``env`` (a macro also in ``macros``)."""
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

    def _call_env(self, fn: ast.FunctionDef) -> dict:
        """The module's names a module-level function runs with: the final bindings, except a name its
        text (and the module-level functions and macros it names) reads whose binding differs where
        the module itself calls the function: that one is not known."""
        reads, todo, seen = set(), [fn], set()
        calls = [(line, before, f"{fn.name}()") for line, before in self._module_calls.get(fn.name, [])]
        for g, sites in self._module_calls.items():  # a module-level call of a function that calls fn
            if g != fn.name and fn.name in self._callees(g):
                calls.extend((line, before, f"{g}() (which calls {fn.name}())") for line, before in sites)
        defs = {d.name: d for d in self._top_defs}
        while todo:
            f = todo.pop()
            if id(f) in seen:
                continue
            seen.add(id(f))
            for n in ast.walk(f):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                    reads.add(n.id)
                    if n.id in defs:
                        todo.append(defs[n.id])
        env = dict(self.final_env)
        for line, before, via in calls:
            for n in sorted(reads):
                a, b = before.get(n, MISSING), self.final_env.get(n, MISSING)
                if not same_binding(a, b) and not isinstance(env.get(n), Unknown):
                    env[n] = Unknown(f"{n!r} is rebound after the module calls {via} at line {line}: the kernel "
                                     "built by that call and one built after loading see different values")
        return env

    def _callees(self, name: str) -> set:
        """The module-level functions ``name`` calls, transitively (by name, as the text spells them)."""
        out, todo = set(), [name]
        while todo:
            f = self._plain_functions.get(todo.pop())
            if f is None:
                continue
            for n in ast.walk(f):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in self._plain_functions \
                        and n.func.id not in out:
                    out.add(n.func.id)
                    todo.append(n.func.id)
        return out

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
            if self._dynamic_globals and t.id not in self.binds and not isinstance(v, MacroDef):
                v = Unknown(f"{t.id!r}: the module's names can be rebound by string ({self._dynamic_globals})")
            elif t.id in self._global_written and t.id not in self.binds:
                v = Unknown(f"{t.id!r} is rebound through `global` in a function: its value depends on when that "
                            "function runs")
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
            if op in ("ceildiv", "cdiv"):
                b = bind(SIGNATURES[op], node, lambda n: _try(self.cval, n, env))
                return -(-self.cval(b["lhs"], env) // self.cval(b["rhs"], env))
            if fname in ("min", "max", "int", "float", "abs", "len", "str", "bool") and not node.keywords:
                return {"min": min, "max": max, "int": int, "float": float, "abs": abs, "len": len,
                        "str": str, "bool": bool}[fname](*args)
            if op == "dtype" and len(args) == 1:
                return self.rules.canonical_dtype(str(args[0]))
        raise Unsupported(f"expression {ast.unparse(node)[:60]!r} is not a build-time constant",
                          getattr(node, "lineno", None))


def same_binding(a, b) -> bool:
    """Whether two bindings of one name give a kernel the same value."""
    if isinstance(a, Unknown) or isinstance(b, Unknown):
        return isinstance(a, Unknown) and isinstance(b, Unknown)
    if isinstance(a, MacroDef) or isinstance(b, MacroDef):
        return isinstance(a, MacroDef) and isinstance(b, MacroDef) and a.node is b.node
    return type(a) is type(b) and a == b


def bound_names(node) -> list:
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
    elif isinstance(node, ast.Delete):
        for t in node.targets:
            out.extend(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
    elif isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
        out.append(node.target.id)
    return out


def parse_bind_value(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _try(f, node, env):
    try:
        return True, f(node, env)
    except (Unsupported, TypeError, ZeroDivisionError, ValueError):
        return False, None
