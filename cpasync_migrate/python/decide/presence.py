"""Whether the target's releases import the module a call reaches the intrinsic through (parser-free).

What: ``rules/namespaces.toml``'s ``[presence]`` says which releases import a module path (``tilelang.cuda``
from 0.1.13; ``tilelang.language.ast`` in none).  A legacy call reached through a path that no release of the
target generation imports is left for a person: the migrated text would load under none of the releases whose
form it is written in (``tilelang.cuda.language.ptx_cp_async`` migrated to 0.1.8's byte-counted form runs
nowhere: 0.1.8 lacks the module, and the releases that have it count elements).

Why here: both Python passes ask it with the callee's module path, so they cannot disagree.
"""
from __future__ import annotations

from typing import Optional

from ...rules import parse_version


def _entry(module: str, presence: dict) -> Optional[str]:
    keys = [k for k in presence if module == k or module.startswith(k + ".")]
    return max(keys, key=len) if keys else None


def unimported(module: str, target, rules) -> Optional[str]:
    """Why no release of generation ``target`` imports ``module`` (None: some release does, or the rules
    name no bound for it)."""
    key = _entry(module, rules.presence)
    if key is None:
        return None
    span = rules.presence[key]
    if not span:
        return f"`{key}` is imported by no TileLang release (rules/namespaces.toml [presence])"
    first, last = span
    lo, hi = target.covers_min, target.covers_max
    after = bool(hi) and parse_version(first) > parse_version(hi)
    before = bool(last) and parse_version(last) < parse_version(lo)
    if not (after or before):
        return None
    seen = f"from {first}" if not last else f"{first} to {last}"
    return (f"`{key}` is imported only by releases {seen} (rules/namespaces.toml [presence]), none of which the "
            f"target {target.name} covers; pass a --target whose releases have it")
