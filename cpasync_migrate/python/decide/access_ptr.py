"""CPA004 / CPA005 of a call already in the access-pointer form, and ``--from``'s conversion of its size.

The facts, as either pass reads them from its own tree:

* whether the call passes the legacy ``dtype=`` keyword (CPA004);
* the size argument: an integer literal's value, or None (anything else);
* each access pointer's type (``PointerType``: its canonical name and element size; the size None
  where the text does not give it), or None where the pointer's type cannot be read at all;
* the lanes of the one widening loop around the call (``loop_lanes`` of its arguments), asked only
  when the answer hangs on them.

This module imports no parser (``checks/access_ptr_call.py`` and ``fast_sizes.py`` read the facts).
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional

DTYPE_KW_MESSAGE = (
    "access-pointer call still passes dtype=: TileLang's dtype-forwarding wrapper moves it to the "
    "front and shifts every argument; delete the dtype= keyword"
)


DTYPE_KEYWORD, CONVERT, SIZE = "dtype keyword", "convert", "size"


def check(has_dtype_keyword: bool, source, target) -> str:
    """Which question an access-pointer call asks: ``DTYPE_KEYWORD`` (CPA004: it still passes ``dtype=``),
    ``CONVERT`` (``--from`` names an older access-pointer generation: its size is converted) or ``SIZE``
    (CPA005: whether its size reads right under ``target``)."""
    if has_dtype_keyword:
        return DTYPE_KEYWORD
    if source.form == "access_ptr" and source.name != target.name:
        return CONVERT
    return SIZE


class PointerType(NamedTuple):
    """One access pointer's element type: canonical name, size in bytes (None: not known), and its text."""

    name: Optional[str]
    size: Optional[int]
    text: str = ""


def loop_lanes(ends: list) -> Optional[int]:
    """The lanes of a widening loop (``T.vectorized(N)`` or ``T.vectorized(0, N)``) from its arguments,
    each an int or None where it is not a literal; None when the text does not give them (TileLang's
    vectorizer takes only loops that start at 0)."""
    if None in ends or len(ends) not in (1, 2) or len(ends) == 2 and ends[0] != 0:
        return None
    return ends[-1]


def pointers_matter(rules, target, value: Optional[int]) -> bool:
    """Whether the size warning can depend on the pointer types: False for a size that is no integer
    literal, and, where the size counts bytes, for a cp.async width every element size divides (no
    warning whatever the pointers are)."""
    if value is None:
        return False
    return not (target.size_meaning != "num_elems" and value in target.widths and
                all(value % k == 0 for k in set(rules.dtype_sizes.values())))


def size_warning(target, value: Optional[int], dst: Optional[PointerType], src: Optional[PointerType],
                 lanes: Callable[[], Optional[int]]) -> Optional[str]:
    """CPA005's message for an access-pointer call of size ``value`` under ``target``; None: no warning.

    ``dst``/``src`` None (a pointer whose type cannot be read) or of unknown size: no warning.
    ``lanes()``: the widening loop's lanes (None: no such loop), asked only under element counts."""
    if value is None or dst is None or src is None or dst.size is None or src.size is None:
        return None
    widths = "/".join(map(str, target.widths))
    if target.size_meaning == "num_elems":
        if dst.size != src.size:
            return (f"the pointer types {dst.name} and {src.name} differ in width; {target.name} derives the copy "
                    f"width from each side and needs them equal")
        n = lanes()
        if n is not None and value * dst.size * n in target.widths:
            return None  # widened to one copy of all its lanes (rules: widening_loop)
        if value * dst.size not in target.widths:
            hint = ""
            if value in target.widths and value % dst.size == 0:
                hint = (f"; if it was written for 0.1.8 with a byte count, run with --from 0.1.8 to convert it "
                        f"to {value // dst.size} elements")
            return (f"size {value} means {value} {dst.name} elements = {value * dst.size} bytes under "
                    f"{target.name}, not a cp.async width ({widths}){hint}")
        return None
    for d in (dst, src):
        if value % d.size:
            return f"size {value} bytes is not a whole number of {d.name} elements of its access pointer"
    if value not in target.widths:
        return f"size {value} bytes is not a cp.async width ({widths}) under {target.name}"
    return None


class NotConverted(Exception):
    """``--from``: the call cannot be converted; the message says why."""


def converts(source, target) -> bool:
    """``--from``: whether a size written for ``source`` means something else under ``target``."""
    return source.size_meaning != target.size_meaning


def converted_size(source, target, dst: PointerType, src: PointerType, value: Optional[int], size_text: str) -> int:
    """``--from`` (where ``converts``): the new size argument of a call written for ``source``;
    ``NotConverted`` with the reason where no exact conversion exists."""
    for d in (dst, src):
        if d.size is None:
            raise NotConverted(f"the element size of `{d.text}` is not known from the text")
    if dst.size != src.size:
        raise NotConverted(f"the pointer types {dst.name} and {src.name} differ in width; "
                           f"{target.name} needs both pointers in one type")
    k = dst.size
    if value is None:
        raise NotConverted(f"the size `{size_text}` is not an integer literal")
    if source.size_meaning == "bytes":
        if value % k:
            raise NotConverted(f"{value} bytes is not a whole number of {dst.name} elements")
        new, nbytes = value // k, value
    else:
        new, nbytes = value * k, value * k
    if nbytes not in target.widths:
        raise NotConverted(f"the copy is {nbytes} bytes, not a cp.async width")
    return new
