"""The Python front end's structure, read from the source with ``ast`` (never by importing the scanned code).

The libcst pass is a file's ``Context`` (python/context.py: typed state, the questions asked of a node) that
holds its services (``bindings``, ``imports``, ``resolver``, ``smem``), and checks that are units holding the
context as ``ctx`` (``checks/``), composed by ``rewrite._Pass``.  So (issue 28, item 1):

* every ``self.NAME(...)`` call in a class of ``python/`` names what the class defines or inherits from a base
  it names (``UNDECLARED`` listed the 42 calls of the mixins that did not when the check was written; it may
  only shrink, and is empty now);
* every read (or store) through a typed name, ``self.ATTR...NAME`` or ``ctx...NAME`` where ``ctx`` is a
  parameter annotated with a class of ``python/``, names what that class defines, stores or inherits, link by
  link (``ctx.bindings.declaration_of``: ``Context`` has ``bindings``, typed ``Bindings``, which defines
  ``declaration_of``), and none is private (``_name``) to the class it reads: a unit reaches the context's
  state and questions, and the services' public methods, only;
* the context, its services and the checks are units (no base but ``object``) over a ``Context``, and nothing
  reads or sets their attributes by a string (``getattr(ctx, "name")``).
"""
from __future__ import annotations

import ast
import inspect
import textwrap
from pathlib import Path

from test_verify_structure import undeclared_calls

ROOT = Path(__file__).resolve().parent.parent
PY = ROOT / "cpasync_migrate" / "python"
# Modules with classes of their own that are not the libcst pass's parts (a local visitor, an exception, the
# decisions): the call check resolves bases by class name, and these reuse names.
LEFT_OUT = {"cst_util.py", "reach.py", "definitions_ast.py", "fast_scan.py"}
PYTHON = [p for p in sorted(PY.rglob("*.py")) if p.name not in LEFT_OUT and "decide" not in p.parts]
# the libcst pass: the context, its services, the checks and the modules given the context (the read check;
# only top-level classes count, so reach.py's local visitor is no trouble here)
PASS = ["context.py", "parts.py", "bindings.py", "imports.py", "reach.py", "smem.py", "callers.py", "definitions.py",
        "layout.py", "rewrite.py", "checks/legacy_call.py", "checks/access_ptr_call.py", "checks/value_read.py"]

# calls through ``self`` that no base the class names defined (42 when the check was written, 2026-12-02: the
# mixins of ``rewrite._Context`` reaching each other); the list only shrinks
UNDECLARED: set[str] = set()


def _found() -> set[str]:
    sources = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in PYTHON}
    return {b.split(": ", 1)[1].replace(" calls self.", ".") for b in undeclared_calls(sources)}


def test_no_new_undeclared_call_through_self():
    assert sorted(_found() - UNDECLARED) == []


def test_the_list_names_only_calls_that_are_still_undeclared():
    assert sorted(UNDECLARED - _found()) == []


def test_the_check_sees_an_undeclared_call():
    src = "class A:\n    def f(self):\n        return self.g()\n\nclass B(A):\n    def g(self):\n        return 1\n"
    got = undeclared_calls({"m.py": src})
    assert len(got) == 1 and "A calls self.g" in got[0], got


# ------------------------------------------------------------------ reads through typed names


def _type_name(ann) -> str:
    """The class an annotation names (``T``, ``"T"``, ``Optional[T]``, ``T | None``), else ""."""
    if ann is None:
        return ""
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        ann = ast.parse(ann.value, mode="eval").body
    if isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Name) and ann.value.id == "Optional":
        return _type_name(ann.slice)
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        return _type_name(ann.left) or _type_name(ann.right)
    return ann.id if isinstance(ann, ast.Name) else ""


def _is_self_attr(node) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _classes(sources: dict) -> dict:
    """{name: (defined names, base names, {attribute: type name})} of the top-level classes of ``sources``."""
    out = {}
    for label, text in sources.items():
        for node in ast.parse(text).body:
            if not isinstance(node, ast.ClassDef):
                continue
            defined, types = set(), {}
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    defined.add(item.name)
                    if any(isinstance(d, ast.Name) and d.id == "property" for d in item.decorator_list):
                        types[item.name] = _type_name(item.returns)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    defined.add(item.target.id)
                    types[item.target.id] = _type_name(item.annotation)
                elif isinstance(item, ast.Assign):
                    defined.update(t.id for t in item.targets if isinstance(t, ast.Name))
            for fn in (i for i in node.body if isinstance(i, (ast.FunctionDef, ast.AsyncFunctionDef))):
                params = {a.arg: _type_name(a.annotation) for a in fn.args.args + fn.args.kwonlyargs}
                for sub in ast.walk(fn):
                    if _is_self_attr(sub) and isinstance(sub.ctx, ast.Store):
                        defined.add(sub.attr)  # an instance attribute the class sets
                    if isinstance(sub, ast.AnnAssign) and _is_self_attr(sub.target):
                        types.setdefault(sub.target.attr, _type_name(sub.annotation))
                    if isinstance(sub, ast.Assign) and len(sub.targets) == 1 and _is_self_attr(sub.targets[0]):
                        v, attr = sub.value, sub.targets[0].attr
                        if isinstance(v, ast.Name) and params.get(v.id):
                            types.setdefault(attr, params[v.id])  # `self.ctx = ctx` with `ctx: Context`
                        elif isinstance(v, ast.Call) and isinstance(v.func, ast.Name):
                            types.setdefault(attr, v.func.id)  # `self.legacy = LegacyCall(ctx)`
            assert node.name not in out, f"two classes named {node.name} ({label})"
            bases = [b.id if isinstance(b, ast.Name) else "?" for b in node.bases]
            out[node.name] = (defined, bases, {k: v for k, v in types.items() if v})
    return out


def undeclared_reads(sources: dict) -> list[str]:
    """Each link ``X.NAME`` of an attribute chain rooted at ``self`` or at a parameter annotated with a class
    of ``sources``, whose ``X`` is typed with such a class that (with the bases it names) neither defines,
    declares nor stores ``NAME``.  A class with a base outside ``sources`` is not checked (the base may define
    anything)."""
    classes = _classes(sources)

    def closed(name, seen=()) -> bool:  # what the class and its bases define is all there is (a Protocol: declares)
        return name in classes and name not in seen and \
            all(b == "Protocol" or closed(b, seen + (name,)) for b in classes[name][1])

    def known(name, seen=()) -> set:
        if name not in classes or name in seen:
            return set()
        defined, bases, _ = classes[name]
        out = set(defined)
        for b in bases:
            out |= known(b, seen + (name,))
        return out

    def type_of_attr(name, attr, seen=()) -> str:
        if name not in classes or name in seen:
            return ""
        _, bases, types = classes[name]
        return types.get(attr) or next((t for t in (type_of_attr(b, attr, seen + (name,)) for b in bases) if t), "")

    bad = []

    def check(fn, env: dict, label: str):
        def type_of(expr) -> str:
            if isinstance(expr, ast.Name):
                return env.get(expr.id, "")
            if isinstance(expr, ast.Attribute):
                return type_of_attr(type_of(expr.value), expr.attr)
            return ""

        for sub in ast.walk(fn):
            if isinstance(sub, ast.Attribute):
                t = type_of(sub.value)
                if t and closed(t) and sub.attr not in known(t):
                    bad.append(f"{label}:{sub.lineno}: {ast.unparse(sub)} ({t} has no {sub.attr})")
                elif t and sub.attr.startswith("_") and not sub.attr.startswith("__") and \
                        not (isinstance(sub.value, ast.Name) and sub.value.id == "self"):
                    bad.append(f"{label}:{sub.lineno}: {ast.unparse(sub)} (private to {t})")

    for label, text in sources.items():
        for node in ast.parse(text).body:
            if isinstance(node, ast.ClassDef):
                for fn in (i for i in node.body if isinstance(i, (ast.FunctionDef, ast.AsyncFunctionDef))):
                    env = {a.arg: _type_name(a.annotation) for a in fn.args.args + fn.args.kwonlyargs
                           if _type_name(a.annotation) in classes}
                    if fn.args.args and not any(isinstance(d, ast.Name) and d.id == "staticmethod"
                                                for d in fn.decorator_list):
                        env[fn.args.args[0].arg] = node.name
                    check(fn, env, label)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                env = {a.arg: _type_name(a.annotation) for a in node.args.args + node.args.kwonlyargs
                       if _type_name(a.annotation) in classes}
                if env:
                    check(node, env, label)
    return sorted(set(bad))


def _pass_sources() -> dict:
    return {f: (PY / f).read_text(encoding="utf-8") for f in PASS}


def test_every_read_through_the_context_and_its_parts_is_declared():
    assert undeclared_reads(_pass_sources()) == []


def test_the_read_check_follows_the_typed_links():
    src = textwrap.dedent("""
        class Bindings:
            def __init__(self, ctx: "Context"):
                self.ctx = ctx
            def declaration_of(self, at, name): ...
        class Context:
            bindings: Bindings
            def __init__(self):
                self.text = ""
            def pos(self, node): ...
        class Check:
            ctx: Context
            def __init__(self, ctx: Context):
                self.ctx = ctx
            def run(self, node):
                self.ctx.bindings.declaration_of(node, "S")
                self.ctx.pos(node), self.ctx.text
                self.ctx.declaration_of(node, "S")
                return self.ctx.bindings.dtype_of_expr(node, node)
        def helper(ctx: Context, node):
            ctx.bindings.ctx.pos(node)
            ctx.layout_cache = {}
            return ctx._star
    """)
    assert undeclared_reads({"m.py": src}) == [
        "m.py:18: self.ctx.declaration_of (Context has no declaration_of)",
        "m.py:19: self.ctx.bindings.dtype_of_expr (Bindings has no dtype_of_expr)",
        "m.py:22: ctx.layout_cache (Context has no layout_cache)",
        "m.py:23: ctx._star (Context has no _star)",
    ]
    private = src.replace("self.text = \"\"", "self._star = None")
    assert "m.py:23: ctx._star (private to Context)" in undeclared_reads({"m.py": private})


def test_the_context_its_services_and_the_checks_are_units_over_a_context():
    from cpasync_migrate.python import bindings, callers, context, definitions, imports, layout, reach, rewrite, smem
    from cpasync_migrate.python.checks import access_ptr_call, legacy_call, value_read

    Context = context.Context
    assert Context.__mro__ == (Context, object)
    units = [bindings.Bindings, imports.Imports, reach.Resolver, smem.SharedMemory, legacy_call.LegacyCall,
             access_ptr_call.AccessPtrCall, value_read.ValueRead, rewrite._Pass]
    for unit in units:
        assert unit.__mro__ == (unit, object), f"{unit.__name__} is a unit, not a mixin"
        assert inspect.signature(unit.__init__).parameters["ctx"].annotation in ("Context", Context)
        assert unit.__annotations__.get("ctx") in ("Context", Context), f"{unit.__name__} declares its ctx"
    # the services the context holds, typed by their protocols (parts.py; the next test: each class meets its own)
    ann = Context.__annotations__
    assert (ann["bindings"], ann["imports"]) == ("BindingsPart", "ImportsPart")
    assert inspect.signature(Context.resolver.fget).return_annotation == "ResolverPart"
    assert inspect.signature(Context.smem.fget).return_annotation == "SmemPart"
    # the modules given the context say so
    for fn in (callers.param_route, callers.exported, definitions.find, layout.lay_out):
        assert inspect.signature(fn).parameters["ctx"].annotation in ("Context", Context), fn.__qualname__


def test_nothing_reads_or_sets_a_part_by_a_string():
    for name, text in _pass_sources().items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                    node.func.id in ("getattr", "setattr", "hasattr", "delattr") and node.args:
                root = node.args[0]
                while isinstance(root, ast.Attribute):
                    root = root.value
                assert not (isinstance(root, ast.Name) and root.id in ("self", "ctx")), \
                    f"{name}:{node.lineno}: {ast.unparse(node)}"


def test_each_protocol_is_met_by_the_service_the_context_holds_for_it():
    from typing import Protocol

    from cpasync_migrate.python import bindings, imports, parts, reach, smem

    met_by = {parts.BindingsPart: bindings.Bindings, parts.ImportsPart: imports.Imports,
              parts.ResolverPart: reach.Resolver, parts.SmemPart: smem.SharedMemory}
    protocols = {c for c in vars(parts).values() if isinstance(c, type) and Protocol in c.__mro__[1:]}
    assert protocols == set(met_by)
    for proto, cls in met_by.items():
        assert proto.__name__ in (cls.__doc__ or "") or cls.__name__ in (proto.__doc__ or "")
        for name, value in vars(proto).items():
            if callable(value) and not name.startswith("_"):
                assert list(inspect.signature(getattr(cls, name)).parameters) == \
                    list(inspect.signature(value).parameters), f"{cls.__name__}.{name} differs from {proto.__name__}"
        for name in getattr(proto, "__annotations__", {}):
            assert name in _classes(_pass_sources())[cls.__name__][0], f"{cls.__name__} has no {name}"
    # and the context hands over those very classes
    from harness import options
    import libcst as cst
    from cpasync_migrate.python.context import Context

    ctx = Context("x = 1\n", "k.py", cst.parse_module("x = 1\n"), options())
    assert type(ctx.bindings) is bindings.Bindings and type(ctx.imports) is imports.Imports
    assert type(ctx.resolver) is reach.Resolver and type(ctx.smem) is smem.SharedMemory
