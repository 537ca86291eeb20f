"""The errors a kernel run can stop with: :class:`KernelError` (the kernel itself fails: out of bounds, an
illegal width, a read of in-flight bytes, ...) and :class:`IndexOverflow` (index arithmetic leaves its
type where the lowered value is not known from the text: see :mod:`.index`)."""
from __future__ import annotations


class KernelError(Exception):
    def __init__(self, message: str, line: int = 0):
        super().__init__(message)
        self.message = message
        self.line = line

    def __str__(self):
        return f"line {self.line}: {self.message}" if self.line else self.message


class IndexOverflow(KernelError):
    """Integer index arithmetic that leaves its type where the lowered value is not known from the text.
    A :class:`KernelError` to callers that only need to know the run stopped (the bundle writer's
    cross-check); :func:`.dynamic.run_pair` tells it apart (inconclusive, never a mismatch)."""


class OverBudget(IndexOverflow):
    """A run that would take more loop iterations than :data:`.interp.MAX_STEPS` (a kernel's text may
    ask for 10**12): stopped before it starts them, and told apart as :class:`IndexOverflow` is
    (inconclusive, never a mismatch)."""
