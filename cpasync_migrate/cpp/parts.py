"""What one C++ site family calls in another, declared (``typing.Protocol``).

The families (``constructions.py``, ``consumers.py``, ``merge.py``, ``declarations.py``) are units that
each hold the file's :class:`~.context.CppContext` as ``ctx``; ``analyzer.py`` builds them and hands each
the others it calls, typed by these protocols, so an editor can jump from every such call to its
declaration (``tests/test_cpp_structure.py`` checks that every call through ``self`` is declared).

- consumers -> merge: a consumer branch that re-bases the destination may be the merge pass's (CPA111);
- merge -> consumers: the merge branch's ``args`` reads and size literals, read as a consumer reads them;
- merge -> constructions: the spellings a rebuilt call uses (``tvm::``, ``builtin::``), as a construction's.
"""
from __future__ import annotations

from typing import Optional, Protocol


class MergePart(Protocol):
    """``merge.py``'s :class:`~.merge.MergeRebase`, as ``consumers.py`` calls it."""

    def merge_rewrite(self, site, obj: str, s, cond, body, opnode) -> tuple[Optional[str], bool]:
        """Give ``site`` the CPA111 fix; (None, True) on success, else (reason, rebuilds the call)."""
        ...

    def merge_todo(self, obj: str) -> str:
        """What a person changes in a merge-style branch (one clause of the message)."""
        ...


class ArgsReader(Protocol):
    """``consumers.py``'s :class:`~.consumers.ConsumerChecks`, as ``merge.py`` calls it."""

    def args_uses(self, obj, regions) -> tuple:
        """(``args[k]`` reads, ``args.size()`` literals, uses not followed) of ``obj`` in ``regions``."""
        ...


class EmitSpellings(Protocol):
    """``constructions.py``'s :class:`~.constructions.ConstructionChecks`, as ``merge.py`` calls it."""

    def emit_context(self, call, op) -> dict:
        """The namespace spellings (``tvm``, ``builtin``) a call built next to ``call`` uses."""
        ...
