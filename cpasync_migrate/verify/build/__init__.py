"""Build the kernel IR of every ``@T.prim_func`` in a file from its text.

Works from the parsed syntax tree only (stdlib ``ast``); the user's code is
never imported or run.  Factories (``def make(M=128, dtype="float16"):``
holding a prim_func) are bound from their default values, module-level
constants and explicit binds; ``@T.macro`` functions are inlined at their
call sites.  Anything outside the modelled subset raises
:class:`~cpasync_migrate.verify.ir.Unsupported` naming the construct, which
makes that kernel (not the file) inconclusive.

The package, one job per module: ``module.py`` reads the module (imports, kernels, macros,
constants, binds); ``statements.py`` builds one prim_func's kernel (statements, declarations,
launches, macros, loops) from the parts ``copies.py`` (the cp.async call, buffers, access
pointers, regions) and ``expressions.py`` (expressions, folding) over ``context.py`` (the typed
state they share), each declaring what it calls in the others in ``parts.py`` (a protocol per
part); ``identity.py`` says what a built kernel is and what its meaning depends on.  Here:
:func:`build_kernels`, the entry point.
"""
from __future__ import annotations

import ast
from typing import Optional

from ..ir import Unsupported
from .apis import imports_problem, names_problem, text_generations
from .identity import BuiltKernel, definitions, fingerprint, foreign_construct, imports
from .copies import text_forms
from .module import ModuleInfo, parse_bind_value
from .statements import KernelBuilder

__all__ = ["BuiltKernel", "accepted_forms", "build_kernels"]


# ---------------------------------------------------------------- entry points
def build_kernels(text: str, rules, *, meaning: str, binds: Optional[dict] = None,
                  forms: Optional[tuple] = None, tree: Optional[ast.Module] = None) -> list[BuiltKernel]:
    """Every prim_func in ``text`` with its IR (or the reason it has none).

    ``meaning`` is the size meaning of access-pointer calls in this text
    ("bytes" or "num_elems"); legacy calls always mean bytes.  ``forms``: the
    cp.async forms ("legacy", "access_ptr") the generation the text is built
    for accepts (None: either).  A kernel reaching a call in another form does
    not build there: it gets that as ``foreign`` (the text would not build).  ``tree``: ``text`` parsed,
    when the caller has it (read, never changed).  Raises SyntaxError when the text does not parse.
    """
    tree = ast.parse(text) if tree is None else tree
    b = {k: parse_bind_value(v) if isinstance(v, str) else v for k, v in (binds or {}).items()}
    mod = ModuleInfo(tree, rules, b)
    defs, imported = definitions(tree), imports(tree)
    gens = text_generations(mod, tree, meaning, forms)
    loads = imports_problem(mod, tree, gens)
    out = []
    for ks in mod.kernels:
        fp = fingerprint(text, ks, tree, defs, imported)
        fr = foreign_construct(mod, ks)
        bad_form = _form_problem(mod, ks, forms)
        if bad_form:
            # whether the kernel builds under the target is part of its meaning: never the unchanged shortcut
            fp += f"\0forms={forms}\0{bad_form}"
            fr = fr or bad_form
        name_error, name_foreign = names_problem(mod, ks, gens)
        name_error = name_error or loads
        if name_error or name_foreign:
            # which API a name reaches is part of the kernel's meaning too
            fp += f"\0names\0{name_error}\0{name_foreign}"
            fr = fr or name_foreign
        if name_error:
            out.append(BuiltKernel(ks.qualname, ks.node.lineno, None, Unsupported(name_error, ks.node.lineno), fp, fr,
                                   ks.int_params))
            continue
        try:
            k = KernelBuilder(mod, ks, meaning).build()
            out.append(BuiltKernel(ks.qualname, ks.node.lineno, k, None, fp, fr, ks.int_params))
        except Unsupported as e:
            out.append(BuiltKernel(ks.qualname, ks.node.lineno, None, e, fp, fr, ks.int_params))
        except RecursionError:
            out.append(BuiltKernel(ks.qualname, ks.node.lineno, None, Unsupported("expression nested too deeply"), fp,
                                   fr, ks.int_params))
    return out


def accepted_forms(generation) -> tuple:
    """The cp.async forms a generation (rules) accepts: its own only (0.1.7.post1 takes only the
    six-argument call, 0.1.8 and later only the access-pointer form)."""
    return ("legacy",) if generation.form == "offset" else ("access_ptr",)


FORM_NAMES = {"legacy": "the legacy six-argument form", "access_ptr": "the access-pointer form"}


def _form_problem(mod, ks, forms) -> str:
    """A ``T.ptx_cp_async`` call the kernel (or a macro it sees) holds in a form ``forms`` does not accept."""
    if forms is None:
        return ""
    nodes, todo = [], [ks.node]
    while todo:  # the prim_func and the macros it calls, transitively
        node = todo.pop()
        if any(node is n for n in nodes):
            continue
        nodes.append(node)
        todo.extend(ks.macros[n.id].node for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in ks.macros)
    for node in nodes:
        for f, lines in text_forms(mod, node).items():
            if lines and f not in forms:
                return (f"T.ptx_cp_async at line {lines[0]} is in {FORM_NAMES[f]}, which the target does not accept "
                        "(the kernel does not build under it)")
    return ""
