"""The old text's kernels paired with the new text's, and when a pair needs no checking at all.

Shared by the CPU verifier (:mod:`cpasync_migrate.verify`) and the bundle writer (:mod:`.bundle`)."""
from __future__ import annotations

from typing import Iterator, Optional

from .build import BuiltKernel
from .ir import CpAsync, Kernel


def pair_kernels(old: list[BuiltKernel], new: list[BuiltKernel]) -> Iterator[tuple[BuiltKernel, Optional[BuiltKernel]]]:
    """Each old kernel with the new kernel of the same qualified name (in order, for repeated names), or None."""
    pool: dict = {}
    for b in new:
        pool.setdefault(b.qualname, []).append(b)
    for b in old:
        cands = pool.get(b.qualname)
        yield b, (cands.pop(0) if cands else None)


def has_access_ptr_sites(k: Optional[Kernel]) -> bool:
    """Whether ``k`` holds a cp.async call in the access-pointer form (whose size meaning may change)."""
    return bool(k) and any(isinstance(s, CpAsync) and s.form == "access_ptr" for s in k.sites)


def unchanged_text(bo: BuiltKernel, bn: BuiltKernel, source, target) -> bool:
    """The two texts of the kernel (and all they can reach) are identical and mean the same: either the
    size meaning did not change, or the old kernel holds no access-pointer call it could change."""
    return bo.fingerprint == bn.fingerprint and (source.size_meaning == target.size_meaning or not (
        has_access_ptr_sites(bo.kernel) or bo.error is not None))
