"""Where a builder's access pointers may become named locals declared before its statement.

A rewritten argument list ``{dst_access_ptr, src_access_ptr, bytes[, predicate]}`` reads as upstream's
own migration does, but moving the two access pointers (and the pointer types they repeat) out of the
list into declarations before the statement moves their evaluation: earlier than the rest of the
statement, and the pointer type once instead of twice.  That is exact only when what moves, and what it
moves across, has no side effects.  :func:`site` says whether a list allows it:

- the list is reached from its statement only through calls' argument lists, a declarator's value, an
  assignment's right side or a return (it is always evaluated with the statement, never conditionally);
- the statement is a declaration, an expression statement or a return, directly in a ``{ }`` block
  (a declaration may go before it), and starts its line;
- every expression that moves (the data pointers, offsets and byte count) and every other argument of
  the calls on the way (evaluated in an order C++ leaves open, around the list) is plainly free of side
  effects: names, literals, member and subscript reads of those, calls of the side-effect-free builders
  listed as ``[emit] pure_calls`` in rules/cpp.toml, the op's own getter (``builtin::ptx_cp_async()``)
  and arithmetic on those;
- the names are free: not written anywhere in the enclosing function nor outside every function of
  the file, nor taken by another hoist of the same function whose block holds this one or is held by it.

Otherwise the list keeps its access pointers inline.
"""
from __future__ import annotations

import re
from typing import Optional

from .source import ancestors, named, squash

_PATH_TYPES = {"argument_list", "call_expression", "init_declarator", "assignment_expression", "return_statement",
               "declaration", "expression_statement"}
_STATEMENTS = {"declaration", "expression_statement", "return_statement"}
_ARITH = {"+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "==", "!=", "<", ">", "<=", ">=", "&&", "||"}


def statement_of(lst):
    """The statement ``lst`` is always evaluated with, when the path to it allows a hoist; else None."""
    prev = lst
    for a in ancestors(lst):
        if a.type not in _PATH_TYPES:
            return None
        if a.type == "assignment_expression" and a.child_by_field_name("right") != prev:
            return None
        if a.type == "init_declarator" and a.child_by_field_name("value") != prev:
            return None
        if a.type in _STATEMENTS:
            parent = a.parent
            return a if parent is not None and parent.type == "compound_statement" else None
        prev = a
    return None


def siblings(lst, stmt) -> list:
    """The other arguments of every call between ``lst`` and ``stmt`` (and an assignment's left side)."""
    out = []
    prev = lst
    for a in ancestors(lst):
        if a.type == "argument_list":
            out.extend(x for x in named(a) if x != prev)
        elif a.type == "call_expression":
            out.append(a.child_by_field_name("function"))
        elif a.type == "assignment_expression":
            out.append(a.child_by_field_name("left"))
        if a == stmt:
            break
        prev = a
    return [x for x in out if x is not None]


def pure(node, text_of, pure_calls, is_op_call) -> bool:
    """``node`` is plainly free of side effects (see the module docstring)."""
    t = node.type
    if t in ("identifier", "field_identifier", "number_literal", "true", "false", "nullptr", "this",
             "qualified_identifier", "string_literal", "char_literal", "type_identifier"):
        return True
    if t == "field_expression":
        return pure(node.child_by_field_name("argument"), text_of, pure_calls, is_op_call)
    if t == "subscript_expression":
        arg = node.child_by_field_name("argument")
        idx = node.child_by_field_name("indices") or node.child_by_field_name("index")
        parts = [arg] + (named(idx) if idx is not None and idx.type == "subscript_argument_list" else [idx])
        return all(p is not None and pure(p, text_of, pure_calls, is_op_call) for p in parts)
    if t == "parenthesized_expression":
        return all(pure(c, text_of, pure_calls, is_op_call) for c in named(node))
    if t == "binary_expression":
        op = node.child_by_field_name("operator")
        return op is not None and text_of(op) in _ARITH and all(
            pure(node.child_by_field_name(k), text_of, pure_calls, is_op_call) for k in ("left", "right"))
    if t == "unary_expression":
        op = node.child_by_field_name("operator")
        return op is not None and text_of(op) in ("-", "+", "!", "~") and pure(
            node.child_by_field_name("argument"), text_of, pure_calls, is_op_call)
    if t == "call_expression":
        if is_op_call(node):
            return True
        fn = node.child_by_field_name("function")
        args = node.child_by_field_name("arguments")
        if fn is None or args is None:
            return False
        name = squash(text_of(fn)).split("::")[-1]
        return name in pure_calls and all(pure(a, text_of, pure_calls, is_op_call) for a in named(args))
    return False


def name_free(name: str, fn_text: str, outside_text: str) -> bool:
    pat = re.compile(rf"\b{re.escape(name)}\b")
    return not pat.search(fn_text) and not pat.search(outside_text)


def line_start_indent(data: bytes, start_byte: int) -> Optional[str]:
    """The whitespace before ``start_byte`` on its line, when only whitespace is there."""
    ls = data.rfind(b"\n", 0, start_byte) + 1
    pre = data[ls:start_byte]
    if pre.strip():
        return None
    try:
        return pre.decode("ascii")
    except UnicodeDecodeError:
        return None
