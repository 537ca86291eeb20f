"""The module an attribute chain reaches, where a module's attribute is not its submodule.

Python resolves ``import a.b.c as X`` and every dotted use (``a.b.c.f``, ``X.f``) attribute by attribute,
and ``from M import n`` takes ``n`` as an attribute of the module ``M`` (found by its path).  Where a
package binds an attribute that shadows its submodule (``[attributes]`` of ``rules/namespaces.toml``:
``tilelang.language``'s ``tir`` is TVM's ``tvm.tir`` in the releases the legacy form runs on), the
chain reaches that binding, not the submodule; a module path itself (``from tilelang.language.tir
import ...``) is always the submodule.  Both Python passes qualify callees through this one function.
"""
from __future__ import annotations

from typing import Iterable, Optional


def through(base: str, steps: Iterable[str], shadows: dict) -> str:
    """``base`` (a module found by its path) followed attribute by attribute along ``steps``."""
    cur = base
    for step in steps:
        cur = f"{cur}.{step}" if cur else step
        cur = shadows.get(cur, cur)
    return cur


def requalified(qualified: str, module_path: str, shadows: dict) -> str:
    """A dotted name a resolver gave as ``module_path`` + attributes, followed attribute by attribute
    (``module_path``: the part found by its path: the top-level package of an ``import``, the module of
    a ``from M import``)."""
    if not shadows or not (qualified == module_path or qualified.startswith(module_path + ".")):
        return qualified
    rest = qualified[len(module_path) + 1:]
    return through(module_path, rest.split(".") if rest else (), shadows)


def shadowed_module(qualified: str, shadows: dict) -> Optional[str]:
    """The shadowing attribute (a key of ``shadows``) whose module a qualified name lies under, when it does
    (``tvm.tir.ir.f`` under ``tilelang.language.tir`` -> ``tvm.tir``): a name reached that way that neither
    API lists is a module no release the legacy form runs on has (``import tilelang.language.tir.ir`` fails
    there), so the call is left for a person, not passed over."""
    for key, target in shadows.items():
        if qualified.startswith(target + "."):
            return key
    return None
