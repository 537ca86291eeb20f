"""Exact division of offsets (0.1.9 mixed widths): the emitted text means offset / ratio for every value."""
import itertools

import libcst as cst
import pytest

from cpasync_migrate.python.checks.legacy_call import _divide, _divisible

CASES = [
    ("tx * 16", 2, True),
    ("bx * block * 2 + tx * 16", 2, True),
    ("a * 4 - (b * 4 + c * 8)", 4, True),
    ("a - (b * 4 + c * 8)", 4, False),
    ("a * 3 - b * 6", 3, True),
    ("(a + 1) * 8 - 16", 8, True),
    ("a * 8 + 1", 2, False),
    ("a + b", 2, False),
    ("a * b", 2, False),
    ("a // 2 * 4", 2, True),
    ("16", 4, True),
    ("6", 4, False),
]


def _text(src):
    return lambda node: cst.Module([]).code_for_node(node)


@pytest.mark.parametrize("src,r,ok", CASES)
def test_divide_is_exact(src, r, ok):
    node = cst.parse_expression(src)
    assert _divisible(node, r) is ok
    if not ok:
        return
    out = _divide(node, _text(src), r)
    for a, b, c, bx, block, tx in itertools.product(range(-3, 4), range(0, 3), range(0, 3), range(3), (1, 4), range(5)):
        env = dict(a=a, b=b, c=c, bx=bx, block=block, tx=tx)
        assert eval(src, {}, env) % r == 0
        assert eval(out, {}, env) == eval(src, {}, env) // r, (src, out, env)
