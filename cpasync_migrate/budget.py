"""A file's analysis within a CPU-time budget.

The files a run reads belong to whoever wrote the tree, and in pull-request CI that is the pull request's
author.  Every front end is meant to be linear in its file, and the shapes found to be worse were made
linear, but a shape nobody has found yet must not make a run go on without end.  So each file's analysis
gets a budget of CPU time that grows with the file's size (:func:`limit_for`); a file that needs more is a
file error naming it, not analysed and left unchanged, and the run goes on with the next file.

How: a one-shot ``ITIMER_PROF`` timer (CPU time of this process) whose signal raises :class:`OverBudget`
in the analysing thread.  Python runs a signal handler between two steps of the interpreter, so one call
into a parser (tree-sitter, ``ast.parse``) finishes first; each of those is linear in the text.  Where the
timer cannot be used (no ``setitimer``, as on Windows, or not the main thread) the analysis runs without
a budget.  The budget is set on the command line only (``--file-cpu-limit``): a tree's configuration
chooses what is scanned and reported, never how much the tool runs.
"""
from __future__ import annotations

from contextlib import contextmanager

DEFAULT_SECONDS = 5.0  # --file-cpu-limit's default
# the budget grows by this many times its base per MiB of the file: libcst's write mode on 1 MiB of dense kernels
# took up to 55 s of CPU on a quiet machine and more than 65 s on a loaded one, so a large file has room to spare
PER_MIB = 60
_MIB = 1 << 20


class OverBudget(BaseException):
    """The analysis used up its CPU time.  A BaseException, as KeyboardInterrupt is: no ``except
    Exception`` inside a front end may take it for an error of its own and go on."""


def limit_for(seconds: float, size: int) -> float:
    """CPU seconds one file of ``size`` bytes may take: ``seconds`` plus ``PER_MIB`` times that per MiB
    (5 s and 305 s for a 1 MiB file, at the default).  0 or less: no limit (0.0)."""
    if seconds <= 0:
        return 0.0
    return seconds * (1 + PER_MIB * size / _MIB)


def message(limit: float) -> str:
    return (f"its analysis took more than {limit:.3g} s of CPU time (--file-cpu-limit); not analysed, "
            "left unchanged")


def usable() -> bool:
    import signal  # here, not at import: a run whose every file is in the results cache never asks
    import threading

    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextmanager
def cpu_budget(limit: float):
    """Run the body with at most ``limit`` CPU seconds (0: no limit); past it, :class:`OverBudget`."""
    if limit <= 0 or not usable():
        yield
        return
    import signal

    armed = [True]

    def expired(signum, frame):
        if armed[0]:  # a signal already on its way when the body ended is dropped
            armed[0] = False
            raise OverBudget()

    old = signal.signal(signal.SIGPROF, expired)
    signal.setitimer(signal.ITIMER_PROF, limit)
    try:
        yield
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old if old is not None else signal.SIG_DFL)
