"""The progress bar of a long run (rich, on stderr, only on a terminal)."""
from __future__ import annotations

import sys
from contextlib import contextmanager


PROGRESS_MIN_FILES = 8


class Progress:
    """A rich progress bar on stderr for long runs (only on a terminal), over the files parsed."""

    def __init__(self, enabled: bool):
        self.enabled = enabled and sys.stderr.isatty()
        self.total = 0
        self.done = 0
        self.bar = None
        self.task = None

    def hits(self, n: int) -> None:
        self.total += n
        if self.bar is None and self.enabled and self.total >= PROGRESS_MIN_FILES:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("cpasync-migrate"), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), transient=True,
                                # transient: not the run's output, so not in its record (replay._Kept.transient)
                                console=Console(file=getattr(sys.stderr, "transient", sys.stderr)))
            self.bar.start()
            self.task = self.bar.add_task("files", total=self.total, completed=self.done)
        elif self.bar is not None:
            self.bar.update(self.task, total=self.total)

    def advance(self) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.update(self.task, completed=self.done)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


@contextmanager
def progress(enabled: bool):
    p = Progress(enabled)
    try:
        yield p
    finally:
        p.stop()
