"""What a call of the intrinsic looks like in Python: its name, the file suffixes, the
suppression comment, and the shape of a call's arguments (shared by both passes)."""
from __future__ import annotations

import re
from typing import Optional

from ..rules import intrinsic_name
from ..suppress import spelling

SUFFIXES = (".py", ".pyi")
INTRINSIC = intrinsic_name()  # rules/namespaces.toml, [intrinsic] name
# rules/namespaces.toml, [suppress] comment (suppress.spelling), after a "#": `# MARKER: WORD`, blanks optional
_SP = spelling()
SUPPRESS_RE = re.compile(rf"#\s*{re.escape(_SP.marker)}:\s*{re.escape(_SP.word)}\b")

def call_shape(rules, has_star: bool, total: int, keywords: list[str]) -> Optional[str]:
    """'legacy', 'new', None (not this API), or what is wrong (shared by both passes).

    Legacy is exactly the legacy arity (six) with every keyword a legacy parameter after the
    positional ones, or one fewer positional plus ``dtype=`` (TVMScript's dtype forwarding),
    or any call naming a parameter only the legacy signature has.  New is three or four
    arguments (``dtype=`` aside) whose keywords are new parameter names.  Any other shape,
    such as a fork's own seven-argument form, is not this API: None, and no finding.
    """
    if has_star:
        return "it uses *args or **kwargs"
    params = rules.legacy.python_params
    dtype_kw = rules.legacy.python_params[0]
    new_names = {p for g in rules.generations[1:] for p in g.python_params}
    legacy_only = set(params) - new_names - {dtype_kw}
    if any(k in legacy_only for k in keywords):
        return "legacy"
    npos = total - len(keywords)
    rest = [k for k in keywords if k != dtype_kw]
    if total == len(params):
        # positional first, then keywords for the parameters after them (dtype forwarded from the end)
        skip = 1 if dtype_kw in keywords else 0
        if set(rest) <= set(params[skip + npos:]):
            return "legacy"
    # the access-pointer forms: every parameter, or all but the optional predicate
    new_arity = {n for g in rules.generations[1:] for n in (len(g.python_params) - 1, len(g.python_params))}
    if len(rest) + npos in new_arity and set(rest) <= new_names:
        return "new"
    return None
