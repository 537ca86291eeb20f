"""The verifier's name model against real TileLang: what each spelling of the cp.async callee reaches.

Opt-in (CPASYNC_REALTL=1, marker ``realtl``; skipped where the virtual environments are missing).  For
every spelling of the table (imports and a callee expression: data, no expected answer), each real
release is asked, in its own interpreter (``run-python``; TileLang is never imported here), what the
callee is (``__module__``, ``__qualname__``, signature) and which IR call it builds from six legacy
arguments and from three access-pointer arguments.  The truth for a form is "does not build" (the
name or the call raises, or the IR call has an arity the release's generation does not take:
rules ``[cpp] arity``) or "reads" with the callee's parameters.  The verifier builds a kernel
holding that call under the release's generation; its answer must be the truth or inconclusive.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from cpasync_migrate.rules import load_rules
from cpasync_migrate.verify.build import accepted_forms, build_kernels
from cpasync_migrate.verify.ir import CpAsync

RULES = load_rules()
REALTL_DIR = Path(os.environ.get("CPASYNC_REALTL_DIR", "~/.cache/cpasync-migrate/realtl")).expanduser()
ENVS = {"tl-0.1.7.post1": "legacy", "tl-0.1.8": "0.1.8", "tl-latest": "0.1.9"}

SPELLINGS = [
    ("import tilelang.language as T", "T.ptx_cp_async"),
    ("import tilelang.language as T", "T.tir.ptx_cp_async"),
    ("import tilelang.language as T", "T.tir.op.ptx_cp_async"),
    ("import tilelang.language as T", "T.ast.ptx_cp_async"),
    ("import tilelang", "tilelang.language.ptx_cp_async"),
    ("import tilelang.language.tir as X", "X.ptx_cp_async"),
    ("import tilelang.language.tir.op as X", "X.ptx_cp_async"),
    ("import tilelang.language.tir.ir as X", "X.ptx_cp_async"),
    ("from tilelang.language.tir import ptx_cp_async", "ptx_cp_async"),
    ("from tilelang.language import tir", "tir.ptx_cp_async"),
    ("from tilelang.language.tir import op", "op.ptx_cp_async"),
    ("from tilelang.language.tir import ir", "ir.ptx_cp_async"),
    ("from tilelang.language.tir.op import ptx_cp_async as cp", "cp"),
    ("import tilelang.language.ast as X", "X.ptx_cp_async"),
    ("from tilelang.language.ast import ptx_cp_async", "ptx_cp_async"),
    ("from tilelang.language import ast", "ast.ptx_cp_async"),
    ("from tilelang.language.ast import ir", "ir.ptx_cp_async"),
    ("from tvm.script import tir as T", "T.ptx_cp_async"),
    ("import tvm", "tvm.tir.ptx_cp_async"),
    ("import tvm.tir.op as X", "X.ptx_cp_async"),
    ("from tilelang.language import *", "ptx_cp_async"),
    ("import tilelang.language as T\nfrom tilelang.language import *", "T.ptx_cp_async"),
    ("import tilelang.language as T\nfrom tvm.script.tir import *", "T.ptx_cp_async"),
    ("import tilelang.language as T\ncp = T.ptx_cp_async", "cp"),
    ("import tilelang.language as T\ncp = T.tir.ptx_cp_async", "cp"),
    ("import tilelang.cuda.language as T", "T.ptx_cp_async"),
    ("import tilelang.language.tir", "tilelang.language.tir.ptx_cp_async"),
    ("from tvm.script.parser import tir as T", "T.ptx_cp_async"),
    ("import tvm.tirx.op as X", "X.ptx_cp_async"),
    ("from tvm.script.parser import tirx as T", "T.ptx_cp_async"),
    ("try:\n    from tvm.script import tir as T\nexcept ImportError:\n    import tilelang.language as T", "T.ptx_cp_async"),
    ("import tilelang.language as T\nif False:\n    import tvm.script.tir as T", "T.ptx_cp_async"),
]

PROBE = r'''
import inspect, json, sys
import tilelang, tvm
tirm = getattr(tvm, "tirx", None) or tvm.tir
A = tirm.decl_buffer((128,), "float16", name="A", scope="shared")
B = tirm.decl_buffer((128,), "float16", name="B")
FORMS = {"legacy": lambda f: f("float16", A.data, 8, B.data, 8, 16),
         "access_ptr": lambda f: f(A.access_ptr("w", offset=8), B.access_ptr("r", offset=8), 16)}
out = []
for imports, callee in json.loads(sys.argv[1]):
    row = {}
    ns = {}
    try:
        exec(imports, ns)
        f = eval(callee, ns)
        row["module"], row["qualname"] = getattr(f, "__module__", None), getattr(f, "__qualname__", None)
        row["params"] = list(inspect.signature(f).parameters)
    except Exception as e:
        row["error"] = f"{type(e).__name__}: {e}"[:200]
        out.append(row)
        continue
    for form, make in FORMS.items():
        try:
            c = make(f)
            row[form] = {"op": c.op.name, "nargs": len(c.args), "ir": str(c)}
        except Exception as e:
            row[form] = {"error": f"{type(e).__name__}: {e}"[:200]}
    out.append(row)
print("PROBE" + json.dumps({"version": tilelang.__version__, "rows": out}))
'''

KERNEL = '''import tilelang.language as TLK
{imports}


@TLK.prim_func
def main(A: TLK.Tensor((128,), "float16"), B: TLK.Tensor((128,), "float16")):
    with TLK.Kernel(1, threads=16) as bx:
        tx = TLK.get_thread_binding()
        S = TLK.alloc_shared((128,), "float16")
        {callee}({args})
        TLK.ptx_commit_group()
        TLK.ptx_wait_group(0)
        for i in TLK.serial(8):
            B[tx * 8 + i] = S[tx * 8 + i]
'''
ARGS = {"legacy": '"float16", S.data, tx * 8, A.data, tx * 8, 16',
        "access_ptr": ('TLK.tvm_access_ptr(TLK.type_annotation("float16"), S.data, tx * 8, 8, 2), '
                       'TLK.tvm_access_ptr(TLK.type_annotation("float16"), A.data, tx * 8, 8, 1), {size}')}


def ask(env: Path) -> dict:
    r = subprocess.run([str(env / "run-python"), "-c", PROBE, json.dumps(SPELLINGS)], capture_output=True, text=True,
                       timeout=300)
    line = next((x for x in r.stdout.splitlines() if x.startswith("PROBE")), None)
    assert line, r.stderr[-3000:]
    return json.loads(line[len("PROBE"):])


def truth(row: dict, form: str, gen) -> tuple:
    """What the release does with a call of ``form`` through the spelling."""
    if "error" in row or "error" in row[form]:
        return ("does not build",)
    if row[form]["nargs"] not in gen.cpp_arity:
        return ("does not build",)  # an IR call of another layout: the release's compiler rejects it
    return ("reads", tuple(row["params"]))


def model(imports: str, callee: str, form: str, gen) -> tuple:
    """What the verifier makes of a kernel holding that call, under the generation ``gen``."""
    size = 8 if gen.size_meaning == "num_elems" else 16
    text = KERNEL.format(imports=imports, callee=callee, args=ARGS[form].format(size=size))
    (b,) = build_kernels(text, RULES, meaning=gen.size_meaning, forms=accepted_forms(gen))
    if b.foreign:
        return ("does not build",)
    if b.error is not None:
        return ("inconclusive", b.error.construct)
    (site,) = [s for s in b.kernel.sites if isinstance(s, CpAsync)]
    if site.form == "legacy":
        return ("reads", tuple(RULES.legacy.python_params))
    return ("reads", tuple(gen.python_params))  # read with the size meaning of the generation


@pytest.mark.realtl
@pytest.mark.skipif(os.environ.get("CPASYNC_REALTL") != "1", reason="opt-in: set CPASYNC_REALTL=1")
@pytest.mark.parametrize("env_name", sorted(ENVS))
def test_the_name_model_agrees_with_each_release_or_is_inconclusive(env_name):
    env = REALTL_DIR / env_name
    if not (env / "run-python").exists():
        pytest.skip(f"{env} is missing (scripts/realtl_setup.sh makes it)")
    gen = RULES.generation(ENVS[env_name])
    got = ask(env)
    wrong, decided = [], 0
    for (imports, callee), row in zip(SPELLINGS, got["rows"]):
        for form in ("legacy", "access_ptr"):
            t, m = truth(row, form, gen), model(imports, callee, form, gen)
            if m[0] != "inconclusive":
                decided += 1
                if m != t:
                    wrong.append(f"{imports!r} {callee} ({form}): real {got['version']} {t} [{row}], verifier {m}")
    assert not wrong, "\n".join(wrong)
    assert decided >= 10  # the comparison decides most rows: it could fail
    # every spelling the verifier reads builds, in the legacy release, the very IR call the plain one does
    if gen.form == "offset":
        plain = got["rows"][0]["legacy"]["ir"]
        for (imports, callee), row in zip(SPELLINGS, got["rows"]):
            if model(imports, callee, "legacy", gen)[0] == "reads":
                assert row["legacy"]["ir"] == plain, (imports, callee, row)
