"""The verifier fails closed on names: a name the text allows more than one reading of, or a callee whose API
under the text's generation is not the one whose signature the builder reads, makes the kernel inconclusive
(or "does not build" where real TileLang says so), naming the name and the line.  The facts behind each case
were asked of real TileLang (tests/test_verify_names_realtl.py)."""
from __future__ import annotations

import pytest

from cpasync_migrate.rules import load_rules
from cpasync_migrate.verify import verify_source

RULES = load_rules()

BODY = '''

@T.prim_func
def main(A: T.Tensor((1024,), "float16"), B: T.Tensor((1024,), "float16")):
    with T.Kernel(8, threads=16) as bx:
        tx = T.get_thread_binding()
        S = T.alloc_shared((128,), "float16")
        CALL
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(8):
            B[bx * 128 + tx * 8 + i] = S[tx * 8 + i]
'''
LEGACY = 'T.ptx_cp_async("float16", S.data, tx * 8, A.data, bx * 128 + tx * 8, 16)'
NEW = ('{cp}(T.tvm_access_ptr(T.type_annotation("float16"), S.data, tx * 8, 8, 2), '
       'T.tvm_access_ptr(T.type_annotation("float16"), A.data, bx * 128 + tx * 8, 8, 1), 16)')


def pair(head: str = "", cp: str = "T.ptx_cp_async", new_head: str = None, tail: str = "") -> tuple:
    old = "import tilelang.language as T\n" + head + BODY.replace("CALL", LEGACY) + tail
    new = "import tilelang.language as T\n" + (head if new_head is None else new_head) + \
        BODY.replace("CALL", NEW.format(cp=cp)) + tail
    return old, new


def verdict(old: str, new: str, target: str = "0.1.8"):
    (v,) = verify_source(old, new, "k.py", rules=RULES, target=target, seeds=1)
    return v


def test_the_plain_pair_is_proven():
    assert verdict(*pair()).verdict == "equivalent"


@pytest.mark.parametrize("head, named", [
    ("try:\n    from tvm.script import tir as T\nexcept ImportError:\n    pass\n", "'T' in the module is bound 2 times"),
    ("if True:\n    import tvm.script.tir as T\n", "line 3: import of tvm.script.tir"),
    ("T = object()\n", "'T' in the module is bound 2 times"),
    ("del T\nimport tilelang.language as T\n", "line 2: del"),
    ("def f():\n    global T\n    T = None\n", "global in a function"),
    ("globals()['T'] = None\n", "rebound by string"),
    ("globals().update(T=None)\n", "rebound by string"),
    ("g = globals()\ng['T'] = None\n", "rebound by string"),
    ("exec('import tvm.script.tir as T')\n", "rebound by string"),
    ("print(T := None)\n", "walrus"),
])
def test_a_name_bound_more_than_once_is_named(head, named):
    v = verdict(*pair(head))
    assert v.verdict == "inconclusive" and named in v.reason and "'T'" in v.reason, v.to_dict()


def test_a_comprehension_variable_does_not_rebind_the_module_name():
    assert verdict(*pair("xs = [T for T in range(3)]\n")).verdict == "equivalent"
    assert verdict(*pair("X = globals()['__name__']\n")).verdict == "equivalent"  # read by a constant key


def test_a_local_name_shadowing_the_import_is_named():
    old, new = pair()
    old = old.replace("        tx = T.get_thread_binding()", "        tx = T.get_thread_binding()\n        T = 0", 1)
    new = new.replace("        tx = T.get_thread_binding()", "        tx = T.get_thread_binding()\n        T = 0", 1)
    v = verdict(old, new)
    assert v.verdict == "inconclusive" and "'T' at line" in v.reason and "local" in v.reason, v.to_dict()


def test_an_attribute_route_through_tilelang_language_tir_is_not_read_as_tilelang_s_op():
    # 0.1.7.post1 and 0.1.8 bind T.tir to TVM's tvm.tir (legacy wrapper only), 0.1.15 to TileLang's own
    v = verdict(*pair(cp="T.tir.ptx_cp_async"))
    assert v.verdict == "inconclusive" and "T.tir.ptx_cp_async at line" in v.reason and "[attributes]" in v.reason, \
        v.to_dict()
    v = verdict(*pair(new_head="import tilelang.language.tir as X\n", cp="X.ptx_cp_async"))
    assert v.verdict == "inconclusive" and "tvm.tir.ptx_cp_async" in v.reason, v.to_dict()
    # a from-import of the module path is TileLang's op in every release
    v = verdict(*pair(new_head="from tilelang.language.tir import ptx_cp_async as cp\n", cp="cp"))
    assert v.verdict == "equivalent", v.to_dict()


@pytest.mark.parametrize("head, cp", [("import tvm\n", "tvm.tir.ptx_cp_async"),
                                      ("from tvm.script import tir as TV\n", "TV.ptx_cp_async")])
def test_an_access_pointer_call_through_tvm_s_wrapper_does_not_build(head, cp):
    v = verdict(*pair(new_head=head, cp=cp))
    assert v.verdict == "mismatch" and "TVM's wrapper" in v.reason and "does not build" in v.reason, v.to_dict()


@pytest.mark.parametrize("head, cp, named", [
    ("from tilelang.language.ast import ptx_cp_async as cp\n", "cp", "[presence]"),
    ("import tilelang.cuda.language as TC\n", "TC.ptx_cp_async", "[presence]"),
    ("from mylib import *\nfrom otherlib import *\n", "ptx_cp_async", "`from mylib import *` at line 2"),
])
def test_a_callee_whose_module_is_not_known_to_build_is_inconclusive(head, cp, named):
    v = verdict(*pair(new_head=head, cp=cp))
    assert v.verdict == "inconclusive" and named in v.reason, v.to_dict()


@pytest.mark.parametrize("tail, named", [
    ("\nT.ptx_cp_async = print\n", "T.ptx_cp_async is written at line"),
    ("\nsetattr(T, 'ptx_cp_async', print)\n", "T.ptx_cp_async is written at line"),
    ("\nname = 'ptx_cp_async'\nsetattr(T, name, print)\n", "an attribute the text does not give"),
])
def test_a_write_to_a_tilelang_module_is_named(tail, named):
    old, new = pair()
    v = verdict(old + tail, new + tail)
    assert v.verdict == "inconclusive" and named in v.reason, v.to_dict()


def test_a_write_to_sys_modules_is_named():
    v = verdict(*pair("import sys\nsys.modules['tilelang.language'] = None\n"))
    assert v.verdict == "inconclusive" and "changes what an import binds" in v.reason, v.to_dict()


@pytest.mark.parametrize("deco, named", [("@functools.wraps(print)", "@functools.wraps"), ("@my_kernel", "@my_kernel")])
def test_a_decorator_that_is_not_tilelang_s_is_named(deco, named):
    head = "import functools\n\n\ndef my_kernel(f):\n    return f\n"
    old, new = pair(head)
    old, new = (t.replace("@T.prim_func", deco + "\n@T.prim_func") for t in (old, new))
    v = verdict(old, new)
    assert v.verdict == "inconclusive" and f"decorator {named} of 'main'" in v.reason, v.to_dict()


def test_an_import_not_every_release_of_the_target_has_is_named():
    # 0.1.15 has no tvm.script.tir (0.1.9 and earlier do): the file may not load under the 0.1.9 generation
    old, new = pair("from tvm.script.tir import *\n")
    new = new.replace(", 16)", ", 8)")
    v = verdict(old, new, target="0.1.9")
    assert v.verdict == "inconclusive" and "line 2 needs tvm.script.tir" in v.reason and "0.1.9" in v.reason, \
        v.to_dict()
    assert verdict(*pair("from tvm.script.tir import *\n")).verdict == "equivalent"  # 0.1.8 has it
    assert verdict(old.replace("tvm.script.tir", "tvm.script.parser.tir"),
                   new.replace("tvm.script.tir", "tvm.script.parser.tir"), target="0.1.9").verdict == "equivalent"


def test_a_module_constant_built_through_a_name_bound_twice_is_named():
    head = "try:\n    import tvm.script.tir as T\nexcept ImportError:\n    pass\nimport tilelang.language as T\n" \
           "W = T.ceildiv(16, 2)\n"
    old, new = pair(head)
    old, new = (t.replace("T.serial(8)", "T.serial(W)").replace("import tilelang.language as T\ntry", "try", 1)
                for t in (old, new))
    v = verdict(old, new)
    assert v.verdict == "inconclusive" and "'T' in the module is bound 2 times" in v.reason, v.to_dict()


def test_prim_func_through_an_alias_bound_twice_is_named():
    old, new = pair("P = T.prim_func\nif True:\n    P = T.macro\n")
    old, new = (t.replace("@T.prim_func", "@P") for t in (old, new))
    v = verdict(old, new)
    assert v.verdict != "equivalent", v.to_dict()


def test_a_user_decorator_wrapping_prim_func_leaves_the_kernel_unproven():
    head = "\n\ndef kernel(f):\n    return T.prim_func(f)\n"
    old, new = pair(head)
    old, new = (t.replace("@T.prim_func", "@kernel") for t in (old, new))
    (v,) = verify_source(old, new, "k.py", rules=RULES, target="0.1.8", seeds=1)
    assert v.verdict == "inconclusive" and "in no prim_func the verifier builds" in v.reason, v.to_dict()


def test_a_module_made_by_importlib_is_not_read_as_tilelang():
    old, new = pair()
    old, new = (t.replace("import tilelang.language as T\n",
                          "import importlib\nT = importlib.import_module('tilelang.language')\n", 1) for t in (old, new))
    (v,) = verify_source(old, new, "k.py", rules=RULES, target="0.1.8", seeds=1)
    assert v.verdict == "inconclusive", v.to_dict()


def test_a_macro_defined_two_ways_under_a_guard_is_not_picked():
    def text(first: str, second: str) -> str:
        guarded = ("import os\nif os.environ.get('X'):\n    @T.macro\n    def load(S, A, bx, tx):\n        " + first +
                   "\nelse:\n    @T.macro\n    def load(S, A, bx, tx):\n        " + second + "\n")
        return "import tilelang.language as T\n" + guarded + BODY.replace("CALL", "load(S, A, bx, tx)")

    shifted = LEGACY.replace("tx * 8, 16", "tx * 8 + 8, 16")
    new = NEW.format(cp="T.ptx_cp_async")
    v = verdict(text(LEGACY, shifted), text(new, new.replace("tx * 8, 8, 1", "tx * 8 + 8, 8, 1")))
    assert v.verdict == "inconclusive" and "'load'" in v.reason, v.to_dict()


def test_an_alias_of_the_op_rebound_by_string_is_named():
    old, new = pair("cp = T.ptx_cp_async\nglobals()['cp'] = print\n", cp="cp")
    old = old.replace("T.ptx_cp_async(\"float16\"", "cp(\"float16\"")
    v = verdict(old, new)
    assert v.verdict == "inconclusive" and "'cp'" in v.reason and "rebound by string" in v.reason, v.to_dict()
