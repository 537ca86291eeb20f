"""What libcst's parser is given (python/parse_gate.py): only texts Python's own parser reads, with expressions nested
at most MAX_DEPTH deep; every shape of depth without nested brackets is measured, and a refused text never reaches
libcst."""
from __future__ import annotations

import textwrap

import pytest

from cpasync_migrate.findings import FrontEndOptions
from cpasync_migrate.python import parse_gate, rewrite
from cpasync_migrate.rules import load_rules

HEAD = textwrap.dedent('''\
    import tilelang.language as T


    def k(A, S):
        T.ptx_cp_async("float16", S.data, 0, A.data, 0, 16)
        x = {}
''')

# Depth without nested brackets: each makes an expression n deep in libcst's tree.
SHAPES = {
    "conditional": lambda n: "a if b else " * n + "c",
    "lambda": lambda n: "lambda: " * n + "c",
    "attribute": lambda n: "c" + ".a" * n,
    "call": lambda n: "c" + "()" * n,
    "subscript": lambda n: "c" + "[0]" * n,
    "binary": lambda n: " + ".join(["a"] * n),
    "power": lambda n: " ** ".join(["a"] * n),
    "boolean": lambda n: " and ".join(["a"] * n),  # flat in Python's tree, n - 1 nested operations in libcst's
}


def _text(shape: str, n: int) -> str:
    return HEAD.format(SHAPES[shape](n))


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_shape_is_refused_past_the_bound_with_its_line(shape):
    r = parse_gate.refusal(_text(shape, parse_gate.MAX_DEPTH + 5))
    assert r is not None and r.line == 6, (shape, r)
    assert f"nested more than {parse_gate.MAX_DEPTH} deep" in r.message


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_shape_within_the_bound_is_given_to_libcst(shape):
    assert parse_gate.refusal(_text(shape, parse_gate.MAX_DEPTH // 2 - 5)) is None, shape


def test_statements_do_not_count():
    """An elif chain nests in both trees but costs libcst no more than flat code: 1,000 branches pass."""
    src = "def f(x):\n    if x == 0:\n        return 0\n" + "".join(
        f"    elif x == {i}:\n        return ({i} + x) * 2\n" for i in range(1, 1000))
    assert parse_gate.refusal(src) is None


def test_depth_adds_up_through_brackets():
    """Brackets do not start the count again: nested calls, each argument a sum (two levels a call)."""
    assert parse_gate.refusal("x = " + "f(a + " * 150 + "c" + ")" * 150 + "\n") is not None
    assert parse_gate.refusal("x = " + "f(a + " * 60 + "c" + ")" * 60 + "\n") is None


def test_what_python_cannot_read_is_refused_with_its_own_words():
    r = parse_gate.refusal("x = 1\ndef (:\n")
    assert r is not None and r.message.startswith("cannot parse: ") and r.line == 2
    r = parse_gate.refusal("x = " + "c" + "[0]" * 50_000 + "\n")  # past CPython's own parser
    assert r is not None and "deeper than Python's own parser" in r.message
    r = parse_gate.refusal("x = 1\0\n")
    assert r is not None and r.message.startswith("cannot parse")


@pytest.fixture
def no_libcst_parse(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("libcst was given a text the gate refuses")

    monkeypatch.setattr(rewrite.cst, "parse_module", refuse)


@pytest.mark.parametrize("text", [
    pytest.param(_text("subscript", 5_000), id="deep"),
    pytest.param(_text("boolean", 20_000), id="boolean"),
    pytest.param(HEAD.format("1") + "def (:\n", id="syntax-error"),
])
def test_the_libcst_pass_never_parses_a_refused_text(text, no_libcst_parse):
    rules = load_rules()
    a = rewrite.analyze(text, "k.py", FrontEndOptions(rules=rules, target=rules.generation("0.1.8"), source=rules.legacy))
    assert a.error and not a.findings
    assert rewrite.reparse_problem(HEAD.format("1"), text) is not None
