"""Which check a call of the intrinsic goes to, apart from any parse tree (both passes ask this module).

The facts (``Call``), as either pass reads them: the API the callee reaches (``"tilelang"``, ``"tvm"`` or
None; the libcst pass also names a route it does not follow, ``unresolved``), the argument list's shape
(``calls.call_shape``: ``"legacy"``, ``"new"``, None for no shape of this API, or what is wrong with it),
the argument count and the keywords in source order, and whether the callee is a walrus (``(cp :=
T.ptx_cp_async)(...)``).  ``route`` gives the check:

* ``LEGACY``: the legacy offset form (``checks/legacy_call.py``: CPA001, or CPA002 with the reason), the
  callee switched to TileLang's op where it is TVM's wrapper under ``--migrate-tvm``;
* ``ACCESS_PTR``: the access-pointer form (``decide/access_ptr.py``: CPA004, CPA005, ``--from``);
* ``TVM``: CPA003, TVM's own wrapper, which keeps the legacy signature;
* ``MANUAL``: CPA002 with the message given (TileLang's op in neither layout, an argument list the tool
  cannot read, a route the tool does not follow);
* ``NONE``: no finding (no API reached, or a shape that is not this API's through TVM's namespace).

A finding at a TileLang call that counts as a legacy site is a ``caller`` of the tree's own definition
(``role``); a TileLang call in the access-pointer form marks its function as migrated (``Analysis.migrated``).
"""
from __future__ import annotations

from typing import NamedTuple, Optional

from ... import codes

TVM_MESSAGE = (
    "ptx_cp_async resolves to TVM's own wrapper, which keeps the legacy signature; a rewrite would break "
    "this call. Switch the file to TileLang (import tilelang.language as T) and run again, or pass "
    "--migrate-tvm to switch the call to TileLang's op"
)
_WALRUS_NOTE = ("; --migrate-tvm does not switch a walrus callee, whose binding the switch would drop: bind the "
                "name first, then call it")

LEGACY, ACCESS_PTR, TVM, MANUAL, NONE = "legacy", "access_ptr", "tvm", "manual", "none"


class Call(NamedTuple):
    """The facts of one call whose callee may reach the intrinsic."""

    api: Optional[str]
    shape: Optional[str]
    total: int  # arguments, keywords included
    keywords: tuple  # keyword names, in source order
    walrus_callee: bool = False
    unresolved: str = ""  # a route to the intrinsic the tool does not follow (the libcst pass's reach.py)


class Route(NamedTuple):
    check: str
    code: Optional[str] = None
    message: str = ""
    switch_callee: bool = False  # LEGACY: the callee becomes TileLang's op (--migrate-tvm)


def route(call: Call, migrate_tvm: bool) -> Route:
    api, kind = call.api, call.shape
    if api is None:
        if call.unresolved and kind != "new":
            return Route(MANUAL, codes.LEGACY_CALL_MANUAL,
                         f"legacy ptx_cp_async cannot be migrated automatically: {call.unresolved}")
        return Route(NONE)
    if kind is None:
        if api == "tvm":
            return Route(NONE)  # not this API's shape (a fork's own op through TVM's namespace): no finding
        # TileLang's intrinsic with a layout of neither form: no TileLang release builds it, so it is left for a
        # person rather than passed over (a lint must not pass while it remains)
        kw = call.keywords
        kind = (f"{call.total} arguments ({call.total - len(kw)} positional"
                + (f"; keywords {', '.join(kw)}" if kw else "") + "), neither the legacy nor the access-pointer "
                "form; if it is a fork's own op, suppress it with a `cpasync-migrate: ignore` comment")
    if kind == "new":
        return Route(ACCESS_PTR)
    switch = migrate_tvm and kind == "legacy"
    if api == "tvm" and not (switch and not call.walrus_callee):
        return Route(TVM, codes.TVM_NAMESPACE_CALL, TVM_MESSAGE + (_WALRUS_NOTE if switch else ""))
    if kind == "legacy":
        return Route(LEGACY, codes.LEGACY_CALL, switch_callee=api == "tvm")
    return Route(MANUAL, codes.LEGACY_CALL_MANUAL, f"ptx_cp_async call with an argument layout the tool cannot read: {kind}")


def role(call: Call, legacy_site: bool) -> Optional[str]:
    """A finding's part in the change (``sets.py``): a TileLang call (or one along a route the tool does not follow)
    that is a legacy site is a caller of the tree's own definition, when it has one; None otherwise."""
    if not legacy_site:
        return None
    return "caller" if call.api == "tilelang" or call.api is None and call.unresolved else None


def marks_migrated(call: Call) -> bool:
    """A TileLang call in the access-pointer form: its function counts as migrated (``findings.half_migrated``)."""
    return call.api == "tilelang" and call.shape == "new"
