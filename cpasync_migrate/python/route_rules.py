"""What CPA008 decides about a read of the intrinsic as a value, apart from any parse tree.

A *read* is a reference to the intrinsic (``T.ptx_cp_async``, a name imported as it,
``getattr(T, "ptx_cp_async")``, ``T.__dict__["ptx_cp_async"]``) that is not directly the callee
of a call.  Both Python passes find the reads their own way (``checks/value_read.py`` with
libcst, ``fast_scan.value_reads`` with the standard library's ``ast``), say where each one's value
goes (its *route*, one of the names below, with a detail), and ask this module whether it is a
finding and what its message says.  This module imports no parser.

Where a read's value goes decides it:

* it is only tested (an expression statement, an operand of a comparison or of ``not``, the
  test of ``if``/``while``/``assert`` or of a conditional expression): it reaches no call, so
  it is no finding (a version check such as ``try: T.ptx_cp_async`` or
  ``getattr(T, "ptx_cp_async", None) is None``);
* it is only inspected: passed to ``callable``, ``inspect.signature`` or ``inspect.getfullargspec``
  (by their qualified names, ``INSPECTORS``), which return facts about it and never call it (a version
  check such as ``"dst_access_ptr" in inspect.signature(T.ptx_cp_async).parameters``): no finding;
* it is bound to a name that the file reads only as the callee of calls the tool analyses
  (``cp = T.ptx_cp_async``, a walrus, a parameter's default): the passes account for it through
  those calls and never ask;
* anywhere else the calls it reaches are not analysed, so the read is a finding, with its route.

A module-level binding of the intrinsic's own name in a file of TileLang's or TVM's own package
(``ptx_cp_async = _dtype_forward(_tir_op.ptx_cp_async)`` in ``tilelang/language/tir/ir.py``) is
that package's definition of the API, which callers reach under a module path the tool analyses:
no finding (:func:`defines_api`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .calls import INTRINSIC

# Routes: where the value of a read goes.
TESTED = "tested"  # only tested (no finding)
ARGUMENT = "argument"  # detail: the callee's dotted name, or "" when it is not a dotted name
ELEMENT = "element"  # detail: "list" | "tuple" | "set"
UNPACKED = "unpacked"  # an element of a tuple or list that an assignment unpacks; detail: its kind
DICT_VALUE = "dict value"
DICT_KEY = "dict key"
ATTRIBUTE = "attribute"  # detail: the attribute taken from it ("__call__", "__wrapped__", ...)
SUBSCRIPTED = "subscripted"
RETURNED = "returned"
YIELDED = "yielded"
LAMBDA_BODY = "lambda body"
ASSIGNED = "assigned"  # the whole value of an assignment to targets other than one name; detail: their text
ALIAS = "alias"  # bound to a name (detail) that is read otherwise than as an analysed call (why)
CLASS_ATTRIBUTE = "class attribute"  # detail: "K.cp"
DEFAULT = "default"  # a parameter's default value; detail: the parameter; why as for ALIAS
OTHER = "other"  # any other expression (an operand, an f-string, a starred value, ...)

ROUTES = (TESTED, ARGUMENT, ELEMENT, UNPACKED, DICT_VALUE, DICT_KEY, ATTRIBUTE, SUBSCRIPTED, RETURNED,
          YIELDED, LAMBDA_BODY, ASSIGNED, ALIAS, CLASS_ATTRIBUTE, DEFAULT, OTHER)

# Why a binding does not account for its read (ALIAS, DEFAULT).
NEVER_USED = "never used"  # the file never reads the name (at module level another module may import it)
NOT_FOLLOWED = "not followed"  # a use the tool does not follow to the intrinsic (the name is bound more than once...)
LAMBDA_PARAM = "lambda parameter"  # a lambda's parameter: its calls are not followed
EXPORTED = "exported"  # a module-level name that ``__all__`` lists: other modules call it

# Functions that return facts about a callable and never call it (qualified names).
INSPECTORS = frozenset({"builtins.callable", "inspect.signature", "inspect.getfullargspec"})

# Root packages whose own files define the API (the first part of the rules' module names).
_API_ROOTS_DEFAULT = ("tilelang", "tvm")


@dataclass(frozen=True)
class Read:
    """One read of the intrinsic as a value, as a pass extracted it."""

    api: str  # "tilelang" | "tvm"
    spelled: str  # how it names the intrinsic: "T.ptx_cp_async", "cp", 'getattr(T, "ptx_cp_async")'
    route: str  # one of ROUTES
    detail: str = ""
    why: str = ""
    line: int = 0  # ALIAS / DEFAULT with NOT_FOLLOWED: the line of the first use not followed
    module_level: bool = False  # ALIAS: the name is bound at module level
    callee: str = ""  # ARGUMENT: the qualified name of the function it is passed to ("builtins.callable"), if known


def is_finding(read: Read) -> bool:
    if read.route == ARGUMENT and read.callee in INSPECTORS:
        return False
    return read.route != TESTED


def _route_text(r: Read) -> str:
    if r.route == ARGUMENT:
        return f"passed to `{r.detail}`" if r.detail else "passed to a call"
    if r.route == ELEMENT:
        return f"an element of a {r.detail}"
    if r.route == UNPACKED:
        return f"unpacked from a {r.detail} by an assignment"
    if r.route == DICT_VALUE:
        return "a dict value"
    if r.route == DICT_KEY:
        return "a dict key"
    if r.route == ATTRIBUTE:
        return f"through `.{r.detail}`" if r.detail == "__call__" else f"its attribute `.{r.detail}` is read"
    if r.route == SUBSCRIPTED:
        return "subscripted"
    if r.route == RETURNED:
        return "returned from a function"
    if r.route == YIELDED:
        return "yielded"
    if r.route == LAMBDA_BODY:
        return "the result of a lambda"
    if r.route == ASSIGNED:
        return f"assigned to `{r.detail}`"
    if r.route == CLASS_ATTRIBUTE:
        return f"bound to the class attribute `{r.detail}`"
    if r.route in (ALIAS, DEFAULT):
        what = f"bound to `{r.detail}`" if r.route == ALIAS else f"the default of parameter `{r.detail}`"
        if r.why == NEVER_USED:
            return what + (", which this file never calls (another module may import it)" if r.module_level
                           else ", which is never called")
        if r.why == EXPORTED:
            return what + ", which `__all__` exports (another module may call it)"
        if r.why == LAMBDA_PARAM:
            return what + " of a lambda, whose calls the tool does not follow"
        return what + (f", used at line {r.line} in a way the tool does not follow to the intrinsic" if r.line
                       else ", which the tool does not follow to the intrinsic")
    return "in an expression the tool does not follow"


def message(read: Read) -> Optional[str]:
    """CPA008's message for ``read``; None when it is no finding."""
    if not is_finding(read):
        return None
    who = "TileLang's" if read.api == "tilelang" else "TVM's"
    return (f"`{read.spelled}` reads {who} {INTRINSIC} as a value: {_route_text(read)}. A call reached this way "
            "is not analysed, so a legacy call could pass the lint: call the intrinsic directly "
            f"(`T.{INTRINSIC}(...)`), or suppress this line where no call reaches it")


def defines_api(path: str, module_level: bool, target: Optional[str], roots=_API_ROOTS_DEFAULT) -> bool:
    """A binding that is the API's own definition: the intrinsic's name (``target``) bound at module
    level in a file that lies in a package folder named after one of ``roots`` (``tilelang/``,
    ``tvm/``), as TileLang's ``tilelang/language/tir/ir.py`` binds ``ptx_cp_async``."""
    if not module_level or target != INTRINSIC:
        return False
    parts = path.replace("\\", "/").split("/")[:-1]
    return any(p in roots for p in parts)


def api_roots(tl_modules, tvm_modules) -> tuple:
    """The root packages of the rules' module names."""
    return tuple(sorted({m.split(".")[0] for m in list(tl_modules) + list(tvm_modules)}))
