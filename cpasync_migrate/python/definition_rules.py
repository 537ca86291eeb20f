"""What CPA006 / CPA007 decide from the facts of rules/python_api.toml, apart from any parse tree.

``definitions.py`` (libcst) and ``definitions_ast.py`` (the fast pass's stdlib ``ast``) read the
text each in its own way and ask this module for the rest: which helpers have the legacy shape,
the message of a definition with or without its fix, why a body is not upstream's, and the new
text of the parameters and the body.  Neither imports the other, and this module imports no
parser, so the fast pass stays free of libcst.
"""
from __future__ import annotations

import re
from typing import Optional

# Why a definition's body is not upstream's (one forward of every parameter to TVM's wrapper).
HAS_DEFAULTS = "a parameter has a default value, so a caller may leave it out"
NOT_ONE_FORWARD = "its body is not a single forward to TVM's wrapper"
NOT_A_CALL = "its body does not return a call"
NOT_IN_ORDER = "it does not forward its parameters unchanged and in order"


def not_tvm_wrapper(callee_text: str) -> str:
    return f"it returns `{callee_text}(...)`, not TVM's wrapper"


def helper_message(facts: dict, name: str, params: list[str]) -> Optional[str]:
    """CPA007's message for a module-level def named ``name``; None when it is no legacy helper."""
    helpers = facts["helpers"]
    if name not in set(helpers["names"]):
        return None
    offset_re = re.compile(helpers["offset_param"])
    if sum(1 for p in params if offset_re.search(p)) < 2:
        return None
    return (f"runtime helper `{name}({', '.join(params)})` takes the legacy shape (a pointer and an offset per "
            "side); under access pointers the code generator prints one pointer per side: give it a pointer-only "
            "form and change the printer that calls it in the same change")


HELPER_FIX = "drop the offset parameters and stop adding the offsets: the printer passes each pointer with its offset applied"


def helper_outcome(message: str, why: Optional[str]) -> str:
    """CPA007's whole message: with its fix note (``why`` None) or why it is left for a person."""
    return f"{message}; fix: {HELPER_FIX}" if why is None else f"{message}; left for a person: {why}"


def helper_assumption(name: str) -> str:
    """The one fact a helper's fix rests on, which the change set establishes when it migrates the printer."""
    return (f"The code generator that prints calls of `{name}` passes one pointer per side with the offset applied "
            "(an access pointer), as the printer migrated in the same change set does.")


def definition_message(facts: dict, name: str, target, why: Optional[str]) -> tuple[str, Optional[dict]]:
    """CPA006's message, and the emit facts of its fix (None: no fix), for a legacy definition ``name``
    whose body is upstream's (``why`` None) or not (``why`` says how)."""
    definition = facts["definition"]
    new_params = list(target.python_params)
    signature = f"{name}({', '.join(new_params[:-1])}, {new_params[-1]}=None)"
    op = definition["op"]
    emit = definition["emit"].get(target.name)
    if why is None and emit is None:
        why = f"the rules hold no rewrite of the definition for {target.name}"
    if why is not None:
        return (f"the tree's own definition of ptx_cp_async keeps the legacy signature; change it by hand to "
                f"`def {signature}` building `{op}` from the access pointers, together with its callers: {why}"), None
    return (f"the tree's own definition of ptx_cp_async keeps the legacy signature; migrate it to `def {signature}` "
            "with its callers (its docstring still describes the legacy parameters)"), emit


def new_text(facts: dict, emit: dict, target, indent: str, newline: str) -> tuple[str, str]:
    """(the new parameter list, the new body after the docstring, without its last newline)."""
    values = {f"p{i}": p for i, p in enumerate(target.python_params)}
    op = facts["definition"]["op"]
    params = emit["params"].format(**values)
    body = emit["body"].format(indent=indent, nl=newline, op=op, **values)
    return params, body[: -len(newline)] if body.endswith(newline) else body
