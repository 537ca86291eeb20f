"""The examples, migrated by the tool, against real TileLang releases.

Opt-in (CPASYNC_REALTL=1, marker ``realtl``): every kernel in examples/ and
tests/realtl/kernels/ is
lowered to CUDA by ``tilelang==0.1.7.post1`` in its legacy form; then a copy
of the file is migrated by ``python -m cpasync_migrate`` and lowered by the
release the target names:

- ``--target 0.1.8`` -> ``tilelang==0.1.8``: the same copies in the same
  order, each with the same width N, and the same byte addresses; where no
  dynamic shared memory is merged, the same address text once the two
  spellings (``S+off`` and ``&(S[off])``) are brought to one form.
- ``--target <newest release>`` -> that release (0.1.9 or later, element
  counts): the same widths and byte addresses; the pipelined loop may be
  unrolled differently by the two releases (see tests/realtl/addresses.py).

The virtual environments come from scripts/realtl_setup.sh (run here when
they are missing; CPASYNC_REALTL_DIR overrides their folder).  With
CPASYNC_REALTL_REPORT=FILE, each comparison is appended to FILE as one JSON
line (docs/realtl.md's table is made from it).

The unit tests at the bottom check the address comparison itself on text
that TileLang printed, and always run.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The bundled examples, and kernels of the project's own for shapes the examples lack (merged
# shared memory with a call dtype other than the tile's, at every width).
EXAMPLES = sorted((ROOT / "examples").glob("*.py")) + sorted((ROOT / "tests" / "realtl" / "kernels").glob("*.py"))
LOWER = ROOT / "tests" / "realtl" / "lower.py"
SETUP = ROOT / "scripts" / "realtl_setup.sh"
REALTL_DIR = Path(os.environ.get("CPASYNC_REALTL_DIR", "~/.cache/cpasync-migrate/realtl")).expanduser()
ENV_NAMES = {"legacy": "tl-0.1.7.post1", "0.1.8": "tl-0.1.8", "latest": "tl-latest"}

_spec = importlib.util.spec_from_file_location("realtl_addresses", ROOT / "tests" / "realtl" / "addresses.py")
addresses = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = addresses
_spec.loader.exec_module(addresses)

# Sites the tool leaves for a person under a target (README's rules), by (file, target).
# transpose_factory's pointer type is the factory parameter `dtype`: under 0.1.8 its
# extent is `16 * 8 // T.DataType(dtype).bits` (safe); under 0.1.9+ the element count
# must be a literal, taken from the parameter's default (an unsafe fix, applied here).
EXPECTED_MANUAL: dict = {
    # two declarations of one tile (uint8 and float16, the branches of the factory's `if`) reach the call
    ("two_declarations.py", "0.1.8"): "2 declarations of `S` reach the call",
    ("two_declarations.py", "latest"): "2 declarations of `S` reach the call",
    # 0.1.9+ needs one pointer type: the uint8 side's offset is a macro parameter, not a visible multiple of 2
    ("macro_chain.py", "latest"): "differ in width and 0.1.9 needs one pointer type",
    ("macro_chain_three_deep.py", "latest"): "differ in width and 0.1.9 needs one pointer type",
}


# ---------------------------------------------------------------- helpers

def _ready(name: str) -> bool:
    return (REALTL_DIR / name / ".ready").is_file()


@pytest.fixture(scope="session")
def envs() -> dict[str, Path]:
    missing = [n for n in ENV_NAMES.values() if not _ready(n)]
    if missing:
        proc = subprocess.run(["bash", str(SETUP)], capture_output=True, text=True,
                              env={**os.environ, "CPASYNC_REALTL_DIR": str(REALTL_DIR)})
        if proc.returncode != 0 or any(not _ready(n) for n in missing):
            pytest.fail(f"scripts/realtl_setup.sh failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return {key: REALTL_DIR / name for key, name in ENV_NAMES.items()}


def latest_version(envs: dict[str, Path]) -> str:
    """The TileLang version in tl-latest, from its .ready line (`tilelang==X apache-tvm-ffi==Y (...)`)."""
    line = (envs["latest"] / ".ready").read_text()
    m = re.match(r"tilelang==(\S+)", line)
    assert m, line
    return m.group(1)


def lower_all(env: Path, paths: list[Path]) -> dict[str, dict]:
    """Lower several files in one process (TileLang is imported once): file name -> lower.py's object."""
    if not paths:
        return {}
    proc = subprocess.run([str(env / "run-python"), str(LOWER), *map(str, paths)],
                          capture_output=True, text=True, timeout=1800, cwd=paths[0].parent)
    out = proc.stdout
    start = out.find("[\n" if len(paths) > 1 else "{\n")
    if start < 0:
        pytest.fail(f"lowering in {env.name} printed no JSON (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    results = json.loads(out[start:])
    if len(paths) == 1:
        results = [results]
    return {Path(r["file"]).name: r for r in results}


def check_lowered(result: dict, env_name: str) -> None:
    assert result["error"] is None, f"{result['file']} does not import under {env_name}: {result['error']}"
    errors = {k: v["error"] for k, v in result["kernels"].items() if v["error"]}
    assert not errors, f"{result['file']} does not lower under {env_name}: {errors}"
    assert result["kernels"], f"no kernel found in {result['file']}"


@pytest.fixture(scope="session")
def legacy(envs) -> dict[str, dict]:
    return lower_all(envs["legacy"], EXAMPLES)


@pytest.fixture(scope="session")
def migrated(envs, tmp_path_factory):
    """Per target: the examples migrated by the tool, and their lowerings.

    target -> {"version": the --target value, "tool": {file: CompletedProcess},
    "check": {file: CompletedProcess}, "lowered": {file: lower.py object}}.
    """
    cache: dict[str, dict] = {}

    def get(target: str) -> dict:
        if target in cache:
            return cache[target]
        work = tmp_path_factory.mktemp(f"migrated-{target}")
        version = "0.1.8" if target == "0.1.8" else latest_version(envs)
        tool, check, to_lower = {}, {}, []
        for example in EXAMPLES:
            copy = work / example.name
            shutil.copyfile(example, copy)
            tool[example.name] = run_tool("--target", version, "--unsafe-fixes", copy, cwd=work)
            check[example.name] = run_tool("--check", "--target", version, copy, cwd=work)
            if tool[example.name].returncode == 0:
                if target == "latest":
                    copy.write_text(strip_region_annotations(copy.read_text()))
                to_lower.append(copy)
        cache[target] = {"version": version, "tool": tool, "check": check, "work": work,
                         "lowered": lower_all(envs[target], to_lower)}
        return cache[target]

    return get


def run_tool(*args, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("FORCE_COLOR", None)
    return subprocess.run([sys.executable, "-m", "cpasync_migrate", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, env=env)


def strip_region_annotations(text: str) -> str:
    """Remove `T.reads(...)` / `T.writes(...)` statements (they may span lines; under any alias of the module, and
    bare `reads(...)` too).

    TileLang <= 0.1.8 needs them on a kernel that takes `.data` of a global
    buffer; later releases declare the kernel block's regions themselves and
    reject a second declaration ("Duplicate read region declaration").  This
    is API drift outside cp.async, so the test removes them, not the tool.
    """
    out, pos = [], 0
    for m in re.finditer(r"(?m)^[ \t]*(?:[A-Za-z_]\w*\.)?(?:reads|writes)\(", text):  # any alias; bare under a star import
        if m.start() < pos:
            continue
        depth, i = 0, m.end() - 1
        while True:
            ch = text[i]
            depth += ch == "("
            depth -= ch == ")"
            i += 1
            if depth == 0:
                break
        end = text.find("\n", i)
        end = len(text) if end < 0 else end + 1
        assert text[i:end].strip() == "", f"unexpected text after a region annotation: {text[i:end]!r}"
        out.append(text[pos:m.start()])
        pos = end
    out.append(text[pos:])
    return "".join(out)


def record(row: dict) -> None:
    path = os.environ.get("CPASYNC_REALTL_REPORT")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")


def summary(entry: dict) -> str:
    widths = [c["n"] for c in entry["copies"]]
    pred = sum(c["predicate"] is not None for c in entry["copies"])
    return f"{len(widths)} x {sorted(set(widths))}" + (f", {pred} predicated" if pred else "")


# ---------------------------------------------------------------- real TileLang

@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
@pytest.mark.parametrize("target", ["0.1.8", "latest"])
@pytest.mark.realtl
@pytest.mark.skipif(os.environ.get("CPASYNC_REALTL") != "1", reason="opt-in: set CPASYNC_REALTL=1")
def test_migrated_example_lowers_to_the_same_copies(legacy, migrated, example, target):
    old = legacy[example.name]
    check_lowered(old, ENV_NAMES["legacy"])
    for name, entry in old["kernels"].items():
        assert entry["copies"], f"{example.name}:{name} has no cp.async under 0.1.7.post1"

    run = migrated(target)
    proc = run["tool"][example.name]
    copy = run["work"] / example.name
    expected_manual = EXPECTED_MANUAL.get((example.name, target))
    if expected_manual:
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert expected_manual in proc.stdout, proc.stdout
        assert copy.read_text() == example.read_text()
        record({"example": example.name, "target": run["version"], "kernel": "*",
                "legacy": {k: summary(v) for k, v in old["kernels"].items()},
                "migrated": f"left for a person ({expected_manual})", "problems": []})
        return
    assert proc.returncode == 0, f"tool exit {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    assert copy.read_text() != example.read_text()
    check = run["check"][example.name]
    assert check.returncode == 0, f"legacy sites remain after migration:\n{check.stdout}"

    new = run["lowered"][example.name]
    check_lowered(new, ENV_NAMES[target])
    assert set(new["kernels"]) == set(old["kernels"])

    failures = {}
    for name, old_entry in old["kernels"].items():
        new_entry = new["kernels"][name]
        merged = bool(old_entry["dyn_shmem"] or new_entry["dyn_shmem"])
        problems = addresses.compare_kernel(old_entry, new_entry, textual=not merged,
                                            allow_peeling=(target == "latest"))
        record({"example": example.name, "target": run["version"], "kernel": name,
                "tilelang": new["tilelang"], "merged_dyn_shmem": merged,
                "legacy": summary(old_entry), "migrated": summary(new_entry),
                "legacy_copies": old_entry["copies"], "migrated_copies": new_entry["copies"],
                "problems": problems})
        if problems:
            failures[name] = problems
    assert not failures, f"{example.name} under tilelang {new['tilelang']}:\n" + json.dumps(failures, indent=1)


def lowering_failure(result: dict) -> str:
    """Why lower.py's object is no lowered file: the import's error, every kernel's error, or "no kernel"; "" when it
    imported and every kernel it found lowered."""
    if result["error"]:
        return result["error"]
    if not result["kernels"]:
        return "no kernel"
    return " | ".join(v["error"] for v in result["kernels"].values() if v["error"])


@pytest.mark.realtl
@pytest.mark.skipif(os.environ.get("CPASYNC_REALTL") != "1", reason="opt-in: set CPASYNC_REALTL=1")
def test_fixtures_marked_as_lowering_lower_under_0_1_7_post1_and_the_others_do_not(envs, tmp_path):
    """Each Python fixture's ``lowers`` (tests/test_fixtures.py requires it) is what real TileLang 0.1.7.post1 does
    with the legacy input; a text-only one fails with the ``error`` its TOML gives."""
    sys.path.insert(0, str(ROOT / "tests"))
    from fixture_cases import cases

    fixtures = cases("python")
    copies = []
    for c in fixtures:
        shutil.copyfile(c.input, tmp_path / c.input.name)
        copies.append(tmp_path / c.input.name)
    lowered = lower_all(envs["legacy"], copies)
    wrong = []
    for c in fixtures:
        why = lowering_failure(lowered[c.input.name])
        if c.meta["lowers"] and why:
            wrong.append(f"{c}: marked as lowering, but {why[-300:]}")
        elif not c.meta["lowers"] and c.meta["error"] not in why:
            wrong.append(f"{c}: marked text-only ({c.meta['error']!r}), but " + (f"{why[-300:]}" if why else "it lowers"))
    assert not wrong, "\n".join(wrong)
    assert any(c.meta["lowers"] for c in fixtures) and not all(c.meta["lowers"] for c in fixtures)


# One access-pointer copy of `count` float16 elements (or bytes) per kernel, inside a loop of the given kind.
_SIZE_KERNEL = """import tilelang.language as T


@T.prim_func
def main(A: T.Tensor((256,), "float16"), B: T.Tensor((256,), "float16")):
    with T.Kernel(4, threads=32) as bx:
        S = T.alloc_shared((64,), "float16")
        for v in {loop}:
            T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation("float16"), S.data, v, 1, 2),
                           T.tvm_access_ptr(T.type_annotation("float16"), A.data, bx * 64 + v, 1, 1), {count})
        T.ptx_commit_group()
        T.ptx_wait_group(0)
        for i in T.serial(64):
            B[bx * 64 + i] = S[i]
"""


@pytest.mark.realtl
@pytest.mark.skipif(os.environ.get("CPASYNC_REALTL") != "1", reason="opt-in: set CPASYNC_REALTL=1")
@pytest.mark.parametrize("target,env", [("0.1.9", "latest"), ("0.1.8", "0.1.8")])
def test_the_size_warning_agrees_with_real_lowering(envs, tmp_path, target, env):
    """CPA005 on an already-migrated call is given exactly where real lowering makes no legal cp.async
    of the copy (a width other than 4, 8 or 16 bytes, or the compiler's own refusal of it), inside
    T.vectorized loops (which the newer compiler widens by their lanes) and outside them."""
    loops = ["T.vectorized(4)", "T.vectorized(0, 2)", "T.vectorized(3)", "T.vectorized(8)", "T.serial(4)",
             "T.unroll(4)"]
    counts = [1, 2, 4, 8] if target == "0.1.9" else [2, 4, 8, 16]
    files = []
    for i, loop in enumerate(loops):
        for count in counts:
            f = tmp_path / f"k{i}_{count}.py"
            f.write_text(_SIZE_KERNEL.format(loop=loop, count=count))
            files.append((f, loop, count))
    r = subprocess.run([sys.executable, "-m", "cpasync_migrate", "--check", "--no-cache", "--isolated", "--format",
                        "json", "--target", target, str(tmp_path)], capture_output=True, text=True)
    warned = {Path(f["path"]).name for f in json.loads(r.stdout)["findings"] if f["code"] == "CPA005"}
    lowered = lower_all(envs[env], [f for f, _, _ in files])
    disagree = []
    for f, loop, count in files:
        k = lowered[f.name]["kernels"]["main"]
        legal = k["error"] is None and bool(k["copies"]) and all(c["n"] in (4, 8, 16) for c in k["copies"])
        if (f.name in warned) == legal:
            disagree.append((loop, count, "warned" if f.name in warned else "not warned",
                             k["error"][-160:] if k["error"] else [c["n"] for c in k["copies"]]))
    assert not disagree, disagree
    assert warned and len(warned) < len(files)  # both outcomes occur


@pytest.mark.realtl
@pytest.mark.skipif(os.environ.get("CPASYNC_REALTL") != "1", reason="opt-in: set CPASYNC_REALTL=1")
def test_the_installed_tilelang_lints_as_its_own_api(envs):
    """The lint of TileLang's own package (its Python and the C++ sources the wheel ships; the vendored
    TVM left out): 0.1.7.post1 holds the legacy sites, its printer helpers among them; the migrated
    releases (0.1.8 and the newest) pass, their printer helpers kept in the offset-taking shape that
    takes empty offsets (CPA105 is not reported for it)."""
    def lint(env: Path) -> tuple:
        pkg = next(env.glob("lib/python3*/site-packages/tilelang"))
        r = subprocess.run([sys.executable, "-m", "cpasync_migrate", "--check", "--no-cache", "--isolated",
                            "--format", "json", "--exclude", "3rdparty", str(pkg)], capture_output=True, text=True)
        found = json.loads(r.stdout)["findings"]
        return r.returncode, sorted((f["path"][len(str(pkg)) + 1:], f["code"]) for f in found)

    code, found = lint(envs["legacy"])
    assert code == 1
    helpers = [f for f in found if f[1] == "CPA105"]
    assert helpers == [("src/target/ptx.cc", "CPA105")] * 2 + [("src/target/ptx.h", "CPA105")] * 2
    assert {c for _, c in found} >= {"CPA101", "CPA102", "CPA103", "CPA006"}
    for key in ("0.1.8", "latest"):
        assert lint(envs[key]) == (0, []), key


@pytest.mark.realtl
@pytest.mark.skipif(os.environ.get("CPASYNC_REALTL") != "1", reason="opt-in: set CPASYNC_REALTL=1")
def test_a_wrong_pointer_type_is_caught_by_real_lowering(envs, legacy, migrated, tmp_path):
    """The comparison has teeth: the classic mistake of typing the source pointer
    with the call's dtype (uint8) instead of the tensor's (float16) lowers fine
    under 0.1.8 but addresses the wrong bytes, and must be reported."""
    problems = _mutant_problems(envs, legacy, migrated, tmp_path, "pack_f16_bytes.py", "pack_f16_bytes",
                                'T.type_annotation("float16"), A.data', 'T.type_annotation("uint8"), A.data')
    assert any("src" in p and "bytes" in p for p in problems), problems


@pytest.mark.realtl
@pytest.mark.skipif(os.environ.get("CPASYNC_REALTL") != "1", reason="opt-in: set CPASYNC_REALTL=1")
def test_the_buffer_dtype_in_merged_shared_memory_is_caught_by_real_lowering(envs, legacy, migrated, tmp_path):
    """In merged dynamic shared memory the legacy offset counts the call's dtype: typing the
    destination with the tile's own type (uint8), right only where nothing is merged, lowers
    under 0.1.8 at half the legacy byte offset, and the comparison must say so."""
    assert legacy["merged_mixed_dtypes.py"]["kernels"]["halves_into_bytes"]["dyn_shmem"], \
        "the legacy kernel is expected to merge its shared memory"
    problems = _mutant_problems(envs, legacy, migrated, tmp_path, "merged_mixed_dtypes.py", "halves_into_bytes",
                                'T.type_annotation("float16"), stage.data, tx * 8, 8, 2)',
                                'T.type_annotation("uint8"), stage.data, tx * 8, 16, 2)')
    assert any("dst" in p for p in problems), problems


def _mutant_problems(envs, legacy, migrated, tmp_path, name: str, kernel: str, needle: str, wrong: str) -> list:
    """Lower the tool's 0.1.8 migration of ``name`` with ``needle`` (once in it) replaced by ``wrong``,
    and compare ``kernel`` with its legacy lowering (by byte address where shared memory is merged)."""
    good = (migrated("0.1.8")["work"] / name).read_text()
    # the migration is laid out like the file: the needle's tokens may be split over lines
    pattern = re.compile(r"\s*".join(map(re.escape, needle.split())))
    assert len(pattern.findall(good)) == 1, good
    mutant = tmp_path / name
    mutant.write_text(pattern.sub(lambda m: wrong, good))
    new = lower_all(envs["0.1.8"], [mutant])[name]
    check_lowered(new, ENV_NAMES["0.1.8"])
    old = legacy[name]["kernels"][kernel]
    return addresses.compare_kernel(old, new["kernels"][kernel], textual=not old["dyn_shmem"])


# ---------------------------------------------------------------- the README's shapes, each in the comparison

# Every shape "What gets rewritten (Python)" claims the tool migrates for TileLang kernels: (the README's words,
# the file of the comparison above that holds it, a regular expression the file's text must match there).
CLAIMED_SHAPES = [
    ("`import tilelang.language as T` (any alias)", "spellings.py", r"import tilelang\.language as TL\b"),
    ("`from tilelang import language as T`", "spellings.py", r"from tilelang import language as L\b"),
    ("`from tilelang.language import ptx_cp_async [as cp]`", "spellings.py",
     r"(?m)^from tilelang\.language import ptx_cp_async\nfrom tilelang\.language import ptx_cp_async as cp$"),
    ("`tilelang.language.ptx_cp_async(...)`", "spellings.py", r"\btilelang\.language\.ptx_cp_async\("),
    ("`tilelang.language.tir`", "spellings.py", r"from tilelang\.language\.tir import ptx_cp_async as tir_cp"),
    ("`.tir.op`", "spellings.py", r"from tilelang\.language\.tir\.op import ptx_cp_async as op_cp"),
    ("All argument spellings: six positional", "argument_forms.py", r'T\.ptx_cp_async\(\s*"float16",  # the'),
    ("five positional plus `dtype=` (TVMScript's style, often inside\n`T.evaluate(...)`)", "argument_forms.py",
     r'T\.evaluate\(T\.ptx_cp_async\(S\.data, [^()]*, dtype="float16"\)\)'),
    ("keywords by the legacy names", "argument_forms.py", r"T\.ptx_cp_async\(bytes=8, global_offset="),
    ("comments inside the call stay", "argument_forms.py", r"tx \* 8,  # eight halves per thread"),
    ("`cp = T.ptx_cp_async`", "routes.py", r"(?m)^cp = T\.ptx_cp_async$"),
    ("`lang = tilelang.language`", "routes.py", r"(?m)^lang = tilelang\.language$"),
    ("`L2 = T`", "routes.py", r"(?m)^L2 = T$"),
    ("a bare name under\n`from tilelang.language import *`", "star_import.py", r"from tilelang\.language import \*"),
    ("A walrus (`(cp := T.ptx_cp_async)(...)`)", "routes.py", r"\(copy := T\.ptx_cp_async\)\("),
    ("a parameter never rebound whose default is the intrinsic", "routes.py", r"copy=T\.ptx_cp_async\)"),
    ("**the buffer's declared dtype**, not the call's", "pack_f16_bytes.py", r"uint8"),
    ("**merged dynamic shared memory**", "merged_mixed_dtypes.py", r"alloc_shared"),
    ("`T.alloc_shared` is `shared.dyn` unless its\nscope says otherwise", "smem_counting.py",
     r'alloc_shared\(\(256,\), "uint8", scope="shared"\)'),
    ("or its dtype is `bool`", "smem_counting.py", r'alloc_shared\(\(16,\), "bool"\)'),
    ("an allocation nothing uses", "smem_counting.py", r'spare = T\.alloc_shared'),
    ("a macro's allocations count once per call", "smem_counting.py", r"stage_into_fresh\(A, B, bx \* 256 \+ 128, tx\)"),
    ("Allocations are\ncounted, not dtypes", "merge_by_count.py", r"alloc_shared"),
    ("`T.Tensor`/`T.Buffer` annotations (call and subscript forms,\npositional or `shape=`/`dtype=` keywords)",
     "declarations.py", r'T\.Tensor\(shape=\(N,\), dtype="float16"\), B: T\.Buffer\(\(N,\), "float16"\)'),
    ("`T.alloc_buffer`", "declarations.py", r'T\.alloc_buffer\(\(128,\), "float16", scope="shared\.dyn"\)'),
    ("`T.decl_buffer`", "declarations.py", r'T\.decl_buffer\('),
    ("`T.alloc_fragment`", "declarations.py", r"T\.alloc_fragment\("),
    ("`T.alloc_local`", "declarations.py", r"T\.alloc_local\("),
    ("`T.match_buffer`", "declarations.py", r"T\.match_buffer\(a, "),
    ("plain aliases (`S = staged`", "declarations.py", r"(?m)^\s+S = staged$"),
    ("chained assignments (`stage = tile = raw`)", "chained_assignment.py", r"stage = tile = raw"),
    ("tuple unpacking of\ndeclarations", "declarations.py", r"lo, hi = T\.alloc_shared\("),
    ("a\ndeclaration without a dtype takes its function's default", "declarations.py", r"C: T\.Tensor\(\(N,\)\)"),
    ("Two declarations of different types that both reach a call", "two_declarations.py", r"if "),
    ("A macro's buffer parameters are typed by what its calls pass", "macro_callers.py", r"@T\.macro"),
    ("through macros that call\nmacros", "macro_chain.py", r"@T\.macro"),
    ("A public module-level macro", "module_macro.py", r"(?m)^@T\.macro"),
    ("The dtype may be a string, `T.float16`, a module constant or a variable", "declarations.py",
     r'(?s)HALF = "float16".*dtype=T\.float16.*T\.ptx_cp_async\(HALF, '),
    ("where `P` is a factory parameter (`dtype`)", "transpose_factory.py", r"T\.ptx_cp_async\(dtype, "),
    ("A file with two aliases of `tilelang.language` keeps each call's own", "spellings.py", r"TL\.ptx_cp_async.*\n"
     r"(?s:.*)L\.ptx_cp_async"),
    ("A uint8 staging tile that is a kernel's only shared buffer", "pack_f16_bytes.py", r'"uint8"'),
]
# Shapes the README claims whose legacy text real TileLang 0.1.7.post1 does not load: the fixture that shows it
# (its TOML's `error` is what lowering it reports).
CLAIMED_BUT_NOT_LOADED = {
    "`tilelang.language.ast` under every target (no release imports it)": ("deeper_ast_ir",),
    "`import tilelang.language.tir.ir` fails in those releases": ("deeper_tir_op",),
    "`tilelang.cuda.language`": ("module_paths_0113", "module_paths_0113_default_target"),
}


def _readme_words() -> str:
    """The README and the page its "what is rewritten" summary links to (docs/python.md holds the list)."""
    return re.sub(r"\s+", " ", " ".join((ROOT / p).read_text(encoding="utf-8") for p in ("README.md", "docs/python.md")))


@pytest.mark.parametrize("words, file, pattern", CLAIMED_SHAPES, ids=[w[:40] for w, _, _ in CLAIMED_SHAPES])
def test_every_shape_the_readme_claims_has_a_kernel_in_the_comparison(words, file, pattern):
    assert re.sub(r"\s+", " ", words) in _readme_words(), f"the README no longer says: {words}"
    path = next((p for p in EXAMPLES if p.name == file), None)
    assert path is not None, f"{file} is not one of the files the comparison lowers"
    assert re.search(pattern, path.read_text(encoding="utf-8")), f"{file} does not hold the shape: {pattern}"


def test_claimed_shapes_0_1_7_post1_cannot_load_have_a_text_only_fixture_saying_so():
    sys.path.insert(0, str(ROOT / "tests"))
    from fixture_cases import cases

    meta = {c.name: c.meta for c in cases("python")}
    for words, names in CLAIMED_BUT_NOT_LOADED.items():
        assert re.sub(r"\s+", " ", words) in _readme_words(), words
        for n in names:
            assert meta[n]["lowers"] is False and meta[n]["error"], n


# ---------------------------------------------------------------- unit tests (always run)
# Address texts below are as TileLang 0.1.7.post1 / 0.1.8 / 0.1.15 printed them for examples/.

LEGACY_STATIC = {"copies": [
    {"op": "cp_async_gs", "n": 4, "dst": "scale_s+((int)threadIdx.x)",
     "src": "scale+((((int)blockIdx.x) * 64) + ((int)threadIdx.x))", "predicate": None}],
    "buffers": {"scale": "float", "scale_s": "float"}, "dyn_shmem": False}
NEW_STATIC = {"copies": [
    {"op": "cp_async_gs", "n": 4, "dst": "(&(scale_s[((int)threadIdx.x)]))",
     "src": "(&(scale[((((int)blockIdx.x) * 64) + ((int)threadIdx.x))]))", "predicate": None}],
    "buffers": {"scale": "float", "scale_s": "float"}, "dyn_shmem": False}


def _with(entry, **changes):
    c = dict(entry["copies"][0], **changes)
    return {**entry, "copies": [c]}


def test_two_spellings_of_one_address_agree():
    assert addresses.compare_kernel(LEGACY_STATIC, NEW_STATIC, textual=True) == []
    a = addresses.parse_address("scale_s+((int)threadIdx.x)", {"scale_s": "float"})
    b = addresses.parse_address("(&(scale_s[((int)threadIdx.x)]))", {"scale_s": "float"})
    assert addresses.textual_key(a) == addresses.textual_key(b) == "scale_s[(int)threadIdx.x]"


def test_width_offset_and_predicate_changes_are_caught():
    assert addresses.compare_kernel(LEGACY_STATIC, _with(NEW_STATIC, n=16), textual=True)
    shifted = _with(NEW_STATIC, src="(&(scale[((((int)blockIdx.x) * 64) + ((int)threadIdx.x) + 1)]))")
    assert any("bytes" in p for p in addresses.compare_kernel(LEGACY_STATIC, shifted, textual=False))
    assert addresses.compare_kernel(LEGACY_STATIC, _with(NEW_STATIC, predicate="(((int)blockIdx.y) < 8)"),
                                    textual=True)
    # the same byte address through a wrongly typed pointer: float offsets read as bytes
    retyped = _with(NEW_STATIC, dst="(&(((uchar*)scale_s)[((int)threadIdx.x)]))")
    assert addresses.compare_kernel(LEGACY_STATIC, retyped, textual=False)


def test_merged_dynamic_shared_memory_compares_bytes():
    old = {"copies": [{"op": "cp_async_gs", "n": 16,
                       "dst": "buf_dyn_shmem+((((int)threadIdx.x) * 16) + 16384)",
                       "src": "x+((ko * 64) + (((int)threadIdx.x) * 8))", "predicate": None}],
           "buffers": {"x": "half_t", "buf_dyn_shmem": "uchar"}, "dyn_shmem": True}
    new_018 = {"copies": [{"op": "cp_async_gs", "n": 16,
                           "dst": "(&(((half_t*)buf_dyn_shmem)[((((int)threadIdx.x) * 8) + 8192)]))",
                           "src": "(&(x[((ko * 64) + (((int)threadIdx.x) * 8))]))", "predicate": None}],
               "buffers": {"x": "half_t", "buf_dyn_shmem": "uchar"}, "dyn_shmem": True}
    new_015 = {"copies": [{"op": "cp_async_gs", "n": 16, "dst": "(&(((half_t*)x_s)[(((int)threadIdx.x) * 8)]))",
                           "src": "(&(x[((ko * 64) + (((int)threadIdx.x) * 8))]))", "predicate": None}],
               "buffers": {"x": "half_t", "buf_dyn_shmem": "uchar"},
               "aliases": {"x_s": ["buf_dyn_shmem", 16384]}, "dyn_shmem": True}
    assert addresses.compare_kernel(old, new_018, textual=False) == []
    assert addresses.compare_kernel(old, new_015, textual=False) == []
    wrong = {**new_015, "aliases": {"x_s": ["buf_dyn_shmem", 0]}}
    assert addresses.compare_kernel(old, wrong, textual=False)


def test_peeled_iterations_are_instances_of_the_loop():
    loop = {"copies": [{"op": "cp_async_gs", "n": 16, "dst": "(&(S[(((int)threadIdx.x) * 8)]))",
                        "src": "(&(A[((ko * 64) + (((int)threadIdx.x) * 8))]))", "predicate": None}],
            "buffers": {"A": "half_t", "S": "half_t"}, "dyn_shmem": False}
    peeled = {"copies": [
        {"op": "cp_async_gs", "n": 16, "dst": "S+(((int)threadIdx.x) * 8)",
         "src": "A+((ko * 64) + (((int)threadIdx.x) * 8))", "predicate": None},
        {"op": "cp_async_gs", "n": 16, "dst": "S+(((int)threadIdx.x) * 8)",
         "src": "A+((((int)threadIdx.x) * 8) + 128)", "predicate": None}],
        "buffers": {"A": "half_t", "S": "half_t"}, "dyn_shmem": False}
    assert addresses.compare_kernel(peeled, loop, textual=False, allow_peeling=True) == []
    assert addresses.compare_kernel(peeled, loop, textual=False)  # counts differ without the allowance
    odd = {**peeled, "copies": [peeled["copies"][0],
                                dict(peeled["copies"][1], src="A+((((int)threadIdx.x) * 8) + 129)")]}
    assert addresses.compare_kernel(odd, loop, textual=False, allow_peeling=True)


def test_region_annotations_are_removed_whole():
    text = ("    with T.Kernel(4, threads=128) as bx:\n"
            "        T.reads(A[0:4,\n                  0:8])\n"
            "        T.writes(B[0:4])\n"
            "        tx = T.get_thread_binding()\n")
    assert strip_region_annotations(text) == ("    with T.Kernel(4, threads=128) as bx:\n"
                                               "        tx = T.get_thread_binding()\n")


def test_region_annotations_under_another_alias_are_removed_too():
    text = "        TL.reads(A[0:4])\n        L.writes(B[0:4])\n        x = TL.reads_count\n"
    assert strip_region_annotations(text) == "        x = TL.reads_count\n"
