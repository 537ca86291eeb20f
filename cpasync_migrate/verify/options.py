"""What one verification is asked to do: :class:`VerifyOptions`, and the generations it names.

The CPU verifier (:func:`cpasync_migrate.verify.verify_source`), its GPU path and the bundle writer
(:func:`cpasync_migrate.verify.bundle.kernel_items`) take one ``VerifyOptions`` value.  They also take
the same fields as keywords, as a shorthand: :meth:`VerifyOptions.of` is the one place that turns them
into a value.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping, Optional

def generation(rules, g):
    """The generation ``g`` names (a name such as ``"0.1.9"``), or ``g`` itself when it is one already."""
    return rules.generation(g) if isinstance(g, str) else g


def widths(rules, target) -> dict:
    """The cp.async widths (bytes) each size meaning allows: the legacy form's, and the target's for both
    meanings of the access-pointer form."""
    return {"legacy": tuple(rules.legacy.widths), "bytes": tuple(target.widths), "num_elems": tuple(target.widths)}


@dataclass(frozen=True)
class VerifyOptions:
    """The settings of one verification.

    ``rules``: :func:`cpasync_migrate.rules.load_rules`'s value.  ``target``: the generation (object or
    name) the new text is written for; it fixes what the size argument of access-pointer calls means
    (bytes for "0.1.8", element counts for "0.1.9").  ``source``: the generation of access-pointer calls
    already in the old text (None: ``target``; "0.1.8" for ``--from 0.1.8``).  ``binds``: values of
    factory parameters (``--bind NAME=VALUE``), kept read-only.  ``device``: "cpu" or "auto" run the numpy
    interpreter, "gpu" the lowered CUDA on a device.  ``seeds``: number of input sets.
    ``emit_cuda_dir``: also write the lowered CUDA of both forms there.  ``crosscheck_bytes``: kernels
    with at most this many parameter bytes carry the interpreter's output for the GPU's cross-check
    (None: the default of the path, 1 MiB in a bundle, 256 KiB for ``device="gpu"``).
    """

    rules: Any
    target: Any
    source: Any = None
    binds: Optional[Mapping[str, Any]] = None
    device: str = "cpu"
    seeds: int = 3
    emit_cuda_dir: Optional[str] = None
    crosscheck_bytes: Optional[int] = None

    def __post_init__(self):
        if self.binds is not None and not isinstance(self.binds, MappingProxyType):
            object.__setattr__(self, "binds", MappingProxyType(dict(self.binds)))

    @classmethod
    def of(cls, options: Optional["VerifyOptions"] = None, **fields) -> "VerifyOptions":
        """``options``, with ``fields`` replacing its own; without ``options``, a value of ``fields``."""
        if options is None:
            return cls(**fields)
        return dataclasses.replace(options, **fields) if fields else options

    def resolved(self) -> "VerifyOptions":
        """The same options with ``target`` and ``source`` as generation objects (``source`` never None)."""
        target = generation(self.rules, self.target)
        source = generation(self.rules, self.source) if self.source is not None else target
        return dataclasses.replace(self, target=target, source=source)

    def widths(self) -> dict:
        """:func:`widths` of the (resolved) target."""
        return widths(self.rules, generation(self.rules, self.target))
