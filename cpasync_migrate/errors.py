"""Errors that end a run before any file is processed, and their exit code.

Raised anywhere below the command line (configuration, ``--since``, the git file list) and turned
into one line on stderr by ``cli.main``.  This module imports nothing, so every module may use it
without an import loop.
"""
from __future__ import annotations

# A usage or configuration error (bad arguments, a mistake in [tool.cpasync-migrate], an unknown git
# revision): nothing was processed.  Distinct from 2, a file that cannot be read, parsed or written.
EXIT_USAGE = 3


class UsageError(Exception):
    """Bad usage: arguments or their combination, a revision git does not know, a rules folder that
    cannot be loaded."""


class ConfigError(UsageError):
    """A mistake in ``[tool.cpasync-migrate]``: its message is one line naming the file and the key."""
