"""The verifier's structure, read from the source with ``ast`` (never by importing the scanned code).

Every ``self.NAME(...)`` call in a class of the verifier (``cpasync_migrate/verify/``, ``runner.py``,
``pool.py``) names a method or attribute the class defines or one of the bases it names defines or
declares (a ``typing.Protocol`` of ``verify/build/parts.py`` declares what a builder part calls in
another), so an editor can jump from every call to its definition.  The composed kernel builder resolves
each method a protocol declares to a part, never to the declaration.
"""
from __future__ import annotations

import ast
import builtins
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "cpasync_migrate"
VERIFIER = sorted((PACKAGE / "verify").rglob("*.py")) + [PACKAGE / "runner.py", PACKAGE / "pool.py"]


def _classes(sources: dict) -> dict:
    """{class name: (defined names, base names, [(line, called self name)])} over ``sources`` ({label: text})."""
    out = {}
    for label, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.ClassDef):
                continue
            defined, calls = set(), []
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    defined.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    defined.add(item.target.id)
                elif isinstance(item, ast.Assign):
                    defined.update(t.id for t in item.targets if isinstance(t, ast.Name))
            for sub in ast.walk(node):
                if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self":
                    if isinstance(sub.ctx, ast.Store):
                        defined.add(sub.attr)  # an instance attribute the class sets
                if (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute)
                        and isinstance(sub.func.value, ast.Name) and sub.func.value.id == "self"):
                    calls.append((f"{label}:{sub.lineno}", sub.func.attr))
            bases = [b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else "" for b in
                     node.bases]
            assert node.name not in out, f"two classes named {node.name} ({label}): the check resolves bases by name"
            out[node.name] = (defined, bases, calls)
    return out


def undeclared_calls(sources: dict) -> list[str]:
    """Each ``self.NAME(...)`` call whose name neither the class nor a base it names (transitively) defines."""
    classes = _classes(sources)

    def known(name, seen=()):
        if name not in classes or name in seen:
            return set()
        defined, bases, _ = classes[name]
        out = set(defined)
        for b in bases:
            out |= known(b, seen + (name,))
        return out

    bad = []
    for name, (_, bases, calls) in classes.items():
        have = known(name)
        for b in bases:
            if b not in classes:  # a base outside the verifier (Exception, Protocol, ...) defines what it defines
                have |= set(dir(getattr(builtins, b, object)))
        bad.extend(f"{where}: {name} calls self.{attr}" for where, attr in calls if attr not in have)
    return bad


def _sources(paths) -> dict:
    return {str(p.relative_to(ROOT)): p.read_text() for p in paths}


def test_every_self_call_in_the_verifier_is_defined_or_declared():
    assert undeclared_calls(_sources(VERIFIER)) == []


def test_the_check_finds_a_part_calling_what_only_its_composer_defines():
    # the shape issue 28 found: a part calling a method only the class composing it defines
    src = textwrap.dedent("""
        class Context:
            def fresh(self): ...
        class Part(Context):
            def expr(self):
                return self.fresh() + self.bind_thread()
        class Builder(Part, Context):
            def bind_thread(self): ...
    """)
    assert undeclared_calls({"m.py": src}) == ["m.py:6: Part calls self.bind_thread"]
    declared = src.replace("class Part(Context):", "class Needs(Protocol):\n    def bind_thread(self): ...\n"
                                                   "class Part(Context, Needs):")
    assert undeclared_calls({"m.py": declared}) == []


def test_the_kernel_builder_resolves_every_declared_method_to_a_part():
    from typing import Protocol

    from cpasync_migrate.verify.build import parts
    from cpasync_migrate.verify.build.statements import KernelBuilder

    protocols = [c for c in vars(parts).values() if isinstance(c, type) and Protocol in c.__mro__[1:]]
    assert {p.__name__ for p in protocols} == {"ExpressionPart", "CopyPart", "StatementPart"}
    for proto in protocols:
        assert proto in KernelBuilder.__mro__
        for name, value in vars(proto).items():
            if callable(value) and not name.startswith("_"):
                owner = next(c for c in KernelBuilder.__mro__ if name in vars(c))
                assert owner.__module__ != parts.__name__, f"{proto.__name__}.{name} has no part defining it"


# ---------------------------------------------------------------------------------------------- long functions
MAX_LINES = 80
REASON = "Over 80 lines:"  # a function that stays longer says why in its docstring, after these words
# long functions of the modules other work is changing at the same time (issue 28, section 5): theirs to
# split or to give a reason; the verifier (verify/, runner.py, pool.py) has none here
OTHERS: frozenset = frozenset()  # empty: every function over 80 lines was split or says why


def long_functions(sources: dict) -> dict:
    """{module:qualified name: (lines from ``def`` to the end, docstring)} of every function over MAX_LINES."""
    out = {}
    for path, text in sources.items():
        module = path[:-3].replace("/", ".").removesuffix(".__init__")

        def walk(node, prefix):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    n = child.end_lineno - child.lineno + 1
                    if n > MAX_LINES:
                        out[f"{module}:{prefix}{child.name}"] = (n, ast.get_docstring(child) or "")
                    walk(child, f"{prefix}{child.name}.")
                elif isinstance(child, ast.ClassDef):
                    walk(child, f"{prefix}{child.name}.")
        walk(ast.parse(text), "")
    return out


def unexplained(sources: dict, allowed=frozenset()) -> list[str]:
    return sorted(f"{q} ({n} lines)" for q, (n, doc) in long_functions(sources).items()
                  if q not in allowed and REASON not in doc)


def test_no_function_over_80_lines_without_a_reason():
    assert unexplained(_sources(sorted(PACKAGE.rglob("*.py"))), OTHERS) == []


def test_the_allow_list_names_no_verifier_function():
    verifier = {f"{p.relative_to(ROOT).with_suffix('')}".replace("/", ".") for p in VERIFIER}
    assert not [q for q in OTHERS if q.split(":")[0].removesuffix(".__init__") in verifier]
    assert all(q.split(":")[0].startswith("cpasync_migrate.") for q in OTHERS)


def test_the_length_check_counts_from_def_to_the_end_and_reads_the_reason():
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES - 1))  # def + 79 lines: 80, allowed
    src = f"def ok():\n{body}\n\nclass C:\n    def long(self):\n    {body.replace(chr(10), chr(10) + '    ')}\n" \
          f"        y = 0\n"
    assert unexplained({"m.py": src}) == [f"m:C.long ({MAX_LINES + 1} lines)"]
    reasoned = src.replace("    def long(self):\n", f'    def long(self):\n        """{REASON} one table."""\n')
    assert unexplained({"m.py": reasoned}) == []
    assert unexplained({"m.py": src}, {"m:C.long"}) == []
