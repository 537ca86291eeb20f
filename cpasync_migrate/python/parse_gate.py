"""Whether a Python text may be given to libcst's parser, asked before every libcst parse.

libcst's parser takes time that grows faster than the square of an expression's depth, where the standard
library's parser takes milliseconds: a chain of 1,600 subscripts (``c[0][0]...``, 5 kB) took 5 s, one of 20,000
never ended, and 20,000 nested lambdas overflowed the C stack and killed the process.  ``files.nesting`` bounds
brackets and runs of prefix operators before any parser sees a file; depth without nested brackets (trailers
``.a`` ``()`` ``[0]``, binary operators, conditional expressions, lambdas) it cannot see.  So a text goes to
libcst only when the standard library's parser reads it and its expressions nest at most ``MAX_DEPTH`` deep
(counted as libcst nests them, without recursion; see ``_deepest``):

* a text that parser refuses with a SyntaxError is reported with Python's own message and position (libcst is
  never asked: no bound on its time could be read from a text Python cannot parse, and code written for a newer
  Python than the one running the tool is analysed by running the tool under that Python);
* a text it cannot parse at all (MemoryError, RecursionError: nesting deeper than CPython goes) is reported as
  nested too deep;
* an expression nested deeper than ``MAX_DEPTH`` is reported with its line.

Real code stays far below the bound: of 19,553 Python files (the TileLang and TVM trees of the benchmarks,
CPython's standard library and site-packages) 19,524 nest expressions less than 25 deep and all but three less
than 100; the deepest are generated sympy tables (166, 224, 565).
``tests/test_parse_gate.py`` holds the shapes and the bound.
"""
from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass
from typing import Optional

MAX_DEPTH = 200  # nested expressions: libcst then parses about as fast per byte as on flat code


@dataclass(frozen=True)
class Refusal:
    message: str
    line: Optional[int] = None
    column: Optional[int] = None


def _deepest(tree: ast.AST, limit: int) -> Optional[tuple[int, int]]:
    """(depth, line) of the first expression found nested more than ``limit`` deep, or None.

    The depth is counted in expressions only (a statement starts again from 0: ``elif`` chains and blocks cost
    libcst no more than flat code, and Python bounds indentation itself), as libcst nests them: a boolean
    operation of k operands is k - 1 nested binary ones, so its operands count k - 1 levels.  An explicit stack,
    so a deep tree costs no recursion; the line is the node's own or its nearest ancestor's."""
    children = ast.iter_child_nodes
    expr, boolop = ast.expr, ast.BoolOp
    stack = [(tree, 0, 1)]
    pop, extend = stack.pop, stack.extend
    while stack:
        node, depth, line = pop()
        line = getattr(node, "lineno", line)
        if isinstance(node, expr):
            if depth > limit:
                return depth, line
            step = len(node.values) if isinstance(node, boolop) else 1
            extend([(c, depth + step, line) for c in children(node)])
        else:
            extend([(c, 0, line) for c in children(node)])
    return None


def refusal(text: str, limit: int = MAX_DEPTH) -> Optional[Refusal]:
    """Why ``text`` must not be given to libcst, or None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences and the like: warnings, not errors
            tree = ast.parse(text[1:] if text.startswith("\ufeff") else text)  # a byte order mark, as libcst reads it
    except SyntaxError as e:
        return Refusal(f"cannot parse: {e.msg}", e.lineno, e.offset or 1)
    except (MemoryError, RecursionError):
        return Refusal("nested deeper than Python's own parser reads; not analysed")
    except ValueError as e:  # a NUL byte
        return Refusal(f"cannot parse: {e}")
    deep = _deepest(tree, limit)
    if deep is not None:
        return Refusal(f"an expression nested more than {limit} deep; not analysed", deep[1], 1)
    return None
