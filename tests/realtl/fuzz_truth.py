"""Truth for the differential fuzzer: what real TileLang makes of two texts.

Lowering goes through ``tests/realtl/lower.py`` in the environments of
scripts/realtl_setup.sh, one process per environment for a whole batch of
files (``lower_batch``), with ``--source-dir`` so that each kernel's CUDA and
launch facts are at hand.  Addresses are read with ``tests/realtl/addresses.py``
(``parse_address``: array, C element type, offset text).

What this module adds is the evaluation: every ``tl::cp_async_gs<N>`` (and
``_conditional``) of a kernel is evaluated at every point of its launch grid
(each block and thread index) and of the ``for`` loops around it, under the
``if`` conditions around it, in C's integer semantics (``int`` is 32 bits and
wraps, ``/`` and ``%`` truncate, ``int64_t`` where the CUDA says so).  One row per
executed copy: thread, width, destination array and byte, source array and
byte, and the predicate (a false predicate zero-fills: its source is not read).
Two kernels agree when their sorted rows are equal (``compare_entries``): the
same copies per thread, whatever order or loop shape printed them.
"""
from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
LOWER = HERE / "lower.py"

_spec = importlib.util.spec_from_file_location("realtl_addresses", HERE / "addresses.py")
addresses = sys.modules.get("realtl_addresses")
if addresses is None:
    addresses = importlib.util.module_from_spec(_spec)
    sys.modules[_spec.name] = addresses
    _spec.loader.exec_module(addresses)


# ---------------------------------------------------------------- lowering in batches

_SHARED_DECL_RE = re.compile(r"__shared__\s+(?:__align__\(\d+\)\s+)?((?:signed|unsigned)\s+char|[A-Za-z_][\w:]*)"
                             r"\s+([A-Za-z_]\w*)\s*\[")


def lower_batch(env: Path, paths: list[Path], source_dir: Path, timeout: int = 1800) -> dict[str, dict]:
    """Lower ``paths`` in one process of ``env``: file name -> lower.py's object, each kernel entry with
    ``source`` (its CUDA) and ``launch`` (grid and block) added where lowering wrote them.

    A process that dies without printing its JSON (a crash inside TileLang) is retried on the two
    halves of the batch; a single file that still fails gets an object with that ``error``.
    """
    if not paths:
        return {}
    proc = subprocess.run([str(env / "run-python"), str(LOWER), *map(str, paths), "--source-dir", str(source_dir)],
                          check=False, capture_output=True, text=True, timeout=timeout, cwd=paths[0].parent)
    out = proc.stdout
    start = out.find("[\n" if len(paths) > 1 else "{\n")
    if start < 0:
        if len(paths) == 1:
            return {paths[0].name: {"file": str(paths[0]), "kernels": {},
                                    "error": f"lowering process exit {proc.returncode}: {proc.stderr[-600:]}"}}
        half = len(paths) // 2
        return {**lower_batch(env, paths[:half], source_dir, timeout),
                **lower_batch(env, paths[half:], source_dir, timeout)}
    results = json.loads(out[start:])
    if len(paths) == 1:
        results = [results]
    got = {}
    for r in results:
        stem = Path(r["file"]).stem
        for name, entry in r["kernels"].items():
            key = re.sub(r"\W", "", name)  # lower.py's file name for the kernel
            cu, js = source_dir / f"{stem}.{key}.cu", source_dir / f"{stem}.{key}.json"
            if entry["error"] is None and cu.is_file():
                entry["source"] = cu.read_text()
                entry["launch"] = json.loads(js.read_text())["kernels"]
                for m in _SHARED_DECL_RE.finditer(entry["source"]):  # lower.py reads one-word types only
                    entry["buffers"].setdefault(m.group(2), m.group(1))
        got[Path(r["file"]).name] = r
    return got


# ---------------------------------------------------------------- C integer expressions

_TOKEN_RE = re.compile(
    r"\s*(?:(?P<num>\d+)(?P<suf>[uUlL]*)|(?P<id>[A-Za-z_]\w*(?:\.[xyz])?)"
    r"|(?P<op><<|>>|<=|>=|==|!=|&&|\|\||[-+*/%<>&|^!~?:(),]))")
_CAST_TYPES = {"int": 32, "int32_t": 32, "unsigned": 32, "uint": 32, "int64_t": 64, "long": 64,
               "uint64_t": 64, "bool": 1}
_BINARY = [("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="), ("<<", ">>"),
           ("+", "-"), ("*", "/", "%")]


class Unsupported(ValueError):
    """A construct of the printed CUDA this evaluator does not read."""


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if not m or m.end() == pos:
            raise Unsupported(f"cannot read {text[pos:pos + 20]!r} in {text!r}")
        tok = m.group("num") and (m.group("num") + ("L" if "l" in m.group("suf").lower() else "")) \
            or m.group("id") or m.group("op")
        out.append(tok)
        pos = m.end()
    return out


def _as(v, bits: int):
    if bits == 1:
        return (v != 0).astype(np.int32)
    return v.astype(np.int64 if bits == 64 else np.int32)


def _bits(v) -> int:
    return 64 if v.dtype == np.int64 else 32


def _promote(a, b):
    bits = max(_bits(a), _bits(b))
    return _as(a, bits), _as(b, bits)


def _apply(op: str, a, b):
    if op in ("&&", "||"):
        a, b = a != 0, b != 0
        return (a & b if op == "&&" else a | b).astype(np.int32)
    a, b = _promote(a, b)
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op in ("/", "%"):
        if np.any(b == 0):
            raise Unsupported("division by zero")
        q = np.abs(a) // np.abs(b) * np.sign(a) * np.sign(b)  # C truncates toward zero
        q = q.astype(a.dtype)
        return q if op == "/" else (a - q * b).astype(a.dtype)
    if op == "<<":
        return a << (b & (_bits(a) - 1))
    if op == ">>":
        return a >> (b & (_bits(a) - 1))
    if op == "&":
        return a & b
    if op == "|":
        return a | b
    if op == "^":
        return a ^ b
    return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op].astype(np.int32)


class _Parser:
    def __init__(self, text: str, env: dict[str, np.ndarray], size: int):
        self.toks = _tokens(text)
        self.i = 0
        self.env = env
        self.size = size
        self.text = text

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, want: str | None = None):
        tok = self.peek()
        if tok is None or (want is not None and tok != want):
            raise Unsupported(f"expected {want!r} at token {self.i} of {self.text!r}")
        self.i += 1
        return tok

    def parse(self):
        v = self.ternary()
        if self.peek() is not None:
            raise Unsupported(f"trailing {self.peek()!r} in {self.text!r}")
        return v

    def ternary(self):
        c = self.binary(0)
        if self.peek() == "?":
            self.take("?")
            a = self.ternary()
            self.take(":")
            b = self.ternary()
            a, b = _promote(a, b)
            return np.where(c != 0, a, b)
        return c

    def binary(self, level: int):
        if level == len(_BINARY):
            return self.unary()
        v = self.binary(level + 1)
        while self.peek() in _BINARY[level]:
            op = self.take()
            v = _apply(op, v, self.binary(level + 1))
        return v

    def unary(self):
        tok = self.peek()
        if tok == "-":
            self.take()
            v = self.unary()
            return -v
        if tok == "!":
            self.take()
            return (self.unary() == 0).astype(np.int32)
        if tok == "~":
            self.take()
            return ~self.unary()
        if tok == "(" and self.i + 2 < len(self.toks) and self.toks[self.i + 1] in _CAST_TYPES \
                and self.toks[self.i + 2] == ")":
            bits = _CAST_TYPES[self.toks[self.i + 1]]
            self.i += 3
            return _as(self.unary(), bits)
        return self.primary()

    def primary(self):
        tok = self.take()
        if tok == "(":
            v = self.ternary()
            self.take(")")
            return v
        if tok[0].isdigit():
            value = int(tok.rstrip("L"))
            bits = 64 if tok.endswith("L") or value >= 2 ** 31 else 32
            return np.full(self.size, value, dtype=np.int64 if bits == 64 else np.int32)
        if tok in ("min", "max") and self.peek() == "(":
            self.take("(")
            a = self.ternary()
            self.take(",")
            b = self.ternary()
            self.take(")")
            a, b = _promote(a, b)
            return np.minimum(a, b) if tok == "min" else np.maximum(a, b)
        if tok in ("true", "false"):
            return np.full(self.size, int(tok == "true"), dtype=np.int32)
        if tok in self.env:
            return self.env[tok]
        raise Unsupported(f"unknown name {tok!r} in {self.text!r}")


def evaluate(text: str, env: dict[str, np.ndarray], size: int) -> np.ndarray:
    """The value of a C expression at ``size`` points (``env``: int32 arrays of that length)."""
    with np.errstate(all="ignore"):
        return _Parser(text, env, size).parse()


# ---------------------------------------------------------------- copies in context

_COPY_RE = re.compile(r"\btl::cp_async_gs(?:_conditional)?\s*<\s*\d+\s*>\s*\(")
_FOR_RE = re.compile(r"^for\s*\(\s*int\s+(\w+)\s*=\s*(.+?);\s*\1\s*<\s*(.+?);\s*\+\+\1\s*\)$", re.DOTALL)
_IF_RE = re.compile(r"^if\s*\((.*)\)$", re.DOTALL)


@dataclass
class Scope:
    kind: str  # for | if | other
    var: str = ""
    lo: str = ""
    hi: str = ""
    cond: str = ""


def copy_scopes(source: str) -> list[list[Scope]]:
    """For each cp.async copy of ``source``, in text order, the loops and conditions around it."""
    kernel = re.search(r"__global__\s+void", source)
    if not kernel:
        raise Unsupported("no __global__ function in the CUDA")
    stack: list[Scope] = []
    last_if: str | None = None
    out: list[list[Scope]] = []
    copies = {m.start() for m in _COPY_RE.finditer(source)}
    seg_start = kernel.start()
    i = kernel.start()
    depth = 0
    while i < len(source):
        if i in copies:
            out.append(list(stack))
        ch = source[i]
        if ch == "{":
            header = re.sub(r"\s+", " ", source[seg_start:i]).strip()
            if header.startswith("}"):
                header = header[1:].strip()
            m_for, m_if = _FOR_RE.match(header), _IF_RE.match(header)
            if m_for:
                stack.append(Scope("for", m_for.group(1), m_for.group(2), m_for.group(3)))
            elif m_if:
                stack.append(Scope("if", cond=m_if.group(1)))
            elif header == "else" and last_if is not None:
                stack.append(Scope("if", cond=f"!({last_if})"))
            elif header.startswith("else"):
                stack.append(Scope("other", cond=header))  # read as unknown below
            else:
                stack.append(Scope("other"))
            seg_start = i + 1
        elif ch == "}":
            if stack:
                top = stack.pop()
                last_if = top.cond if top.kind == "if" else None
            seg_start = i + 1
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == ";" and depth == 0:  # not the semicolons of a for header
            seg_start = i + 1
        i += 1
    return out


def _grid_env(launch: dict) -> tuple[dict[str, np.ndarray], int]:
    grid, block = launch["grid"], launch["block"]
    dims = [(f"blockIdx.{a}", n) for a, n in zip("xyz", grid)] + [(f"threadIdx.{a}", n) for a, n in zip("xyz", block)]
    shape = [n for _, n in dims]
    mesh = np.indices(shape).reshape(len(shape), -1)
    env = {name: mesh[k].astype(np.int32) for k, (name, _) in enumerate(dims)}
    size = int(np.prod(shape))
    tid = np.zeros(size, dtype=np.int64)
    for k, (_, n) in enumerate(dims):
        tid = tid * n + mesh[k]
    env["__tid"] = tid
    return env, size


_READBACK_RE = re.compile(r"\b(O\d+)\[[^;\n]*\]\s*=\s*([^;\n]+);")
_NAME_RE = re.compile(r"\b[A-Za-z_]\w*(?:\.[xyz])?\b")


def merged_layout(entry: dict, live: set[str] | None = None) -> dict[str, list[tuple[int, str]]]:
    """Where each generated tile starts in a merged shared array: array -> [(byte, tile), ...] sorted.

    Releases lay the merged array out in different orders, so an absolute byte in it says
    nothing by itself.  The generated kernels read tile ``Sk`` back into ``Ok`` from its first
    element (``Ok[...] = Sk[i * threads + tx]``), so the readback's address at loop counter,
    thread and block 0 is where ``Sk`` starts.  Arrays no readback names are not listed.

    The merge pass also reuses memory: a tile no copy writes (its content is undefined) may share
    its bytes with another.  ``live`` names the tiles the kernel's copies write (the generator
    knows them); only those are placed, and two of them at one start are refused.
    """
    buffers = {k: _plain_types(v) for k, v in entry["buffers"].items()}
    layout: dict[str, list[tuple[int, str]]] = {}
    for m in _READBACK_RE.finditer(entry["source"]):
        out, rhs = m.group(1), m.group(2).strip()
        if "[" not in rhs:
            continue
        try:
            addr = addresses.parse_address(f"(&({_plain_types(rhs)}))", buffers, entry.get("aliases"))
        except ValueError:
            continue
        names = {n for n in _NAME_RE.findall(addr.offset) if not n[0].isdigit()} - {"int", "int64_t"}
        zero = {n: np.zeros(1, dtype=np.int32) for n in names}
        try:
            start = addr.extra_bytes + addr.elem_size * int(evaluate(addr.offset, zero, 1)[0])
        except (Unsupported, ValueError):
            continue
        tile = "S" + out[1:]
        if tile != addr.base and (live is None or tile in live):  # a tile of its own needs no placing
            layout.setdefault(addr.base, []).append((start, tile))
    for array, places in layout.items():
        starts = [st for st, _ in places]
        if len(set(starts)) != len(starts):
            raise Unsupported(f"two written tiles start at one byte of {array}: {sorted(places)}")
    return {k: sorted(v) for k, v in layout.items()}


def copy_rows(entry: dict, bases: dict[str, int], live: set[str] | None = None,
              limit: int = 1 << 22) -> np.ndarray:
    """Every copy the kernel executes, one row each (see the module's text), sorted."""
    source, launches = entry["source"], entry["launch"]
    if len(launches) != 1:
        raise Unsupported(f"{len(launches)} device functions")
    base_env, size = _grid_env(launches[0])
    scopes = copy_scopes(source)
    if len(scopes) != len(entry["copies"]):
        raise Unsupported(f"{len(scopes)} copies found in context, {len(entry['copies'])} listed")
    layout = merged_layout(entry, live)
    rows = []
    for copy, around in zip(entry["copies"], scopes):
        env, n = dict(base_env), size
        active = np.ones(n, dtype=bool)
        for sc in around:
            if sc.kind == "for":
                lo = evaluate(sc.lo, env, n)
                hi = evaluate(sc.hi, env, n)
                if lo.min() != lo.max() or hi.min() != hi.max():
                    raise Unsupported(f"loop {sc.var} with bounds that vary: {sc.lo} .. {sc.hi}")
                count = max(0, int(hi[0]) - int(lo[0]))
                if n * count > limit:
                    raise Unsupported(f"more than {limit} points")
                env = {k: np.repeat(v, count) for k, v in env.items()}
                active = np.repeat(active, count)
                n *= count
                env[sc.var] = (np.tile(np.arange(count, dtype=np.int64), n // max(count, 1)) + int(lo[0])).astype(
                    np.int32)
            elif sc.kind == "if":
                active &= evaluate(sc.cond, env, n) != 0
            elif sc.cond:
                raise Unsupported(f"a copy under {sc.cond!r}")
        buffers = {k: _plain_types(v) for k, v in entry["buffers"].items()}
        dst = addresses.parse_address(_plain_types(copy["dst"]), buffers, entry.get("aliases"))
        src = addresses.parse_address(_plain_types(copy["src"]), buffers, entry.get("aliases"))
        if not dst.base or not src.base:
            raise Unsupported("an address without a named array")
        cols = [env["__tid"], np.full(n, copy["n"], dtype=np.int64)]
        pred = np.ones(n, dtype=np.int64)
        if copy["predicate"] is not None:
            pred = (evaluate(copy["predicate"], env, n) != 0).astype(np.int64)
        for addr in (dst, src):
            off = evaluate(addr.offset, env, n).astype(np.int64)
            byte = addr.extra_bytes + addr.elem_size * off
            base = np.full(n, bases.setdefault(addr.base, len(bases)), dtype=np.int64)
            starts = np.zeros(n, dtype=np.int64)
            for start, tile in layout.get(addr.base, []):  # a byte of a merged array: the tile holding it
                inside = byte >= start
                base = np.where(inside, bases.setdefault(f"{addr.base}:{tile}", len(bases)), base)
                starts = np.where(inside, start, starts)
            cols.append(base)
            cols.append(byte - starts)
        cols.append(pred)
        block = np.stack(cols, axis=1)[active]
        block[block[:, 6] == 0, 4:6] = -1  # a zero-fill reads nothing
        rows.append(block)
    if not rows:
        return np.zeros((0, 7), dtype=np.int64)
    allrows = np.concatenate(rows)
    order = np.lexsort(allrows.T[::-1])
    return allrows[order]


_COLS = ["thread", "width", "dst array", "dst byte", "src array", "src byte", "predicate"]


def compare_entries(old: dict, new: dict, live: set[str] | None = None) -> list[str]:
    """Problems between two lowerings of one kernel (lower_batch entries): empty when every thread
    executes the same copies (width, both arrays and byte addresses, predicate)."""
    if old.get("error"):
        return [f"old does not lower: {old['error'][-300:]}"]
    if new.get("error"):
        return [f"new does not lower: {new['error'][-300:]}"]
    if old["launch"][0]["grid"] != new["launch"][0]["grid"] or old["launch"][0]["block"] != new["launch"][0]["block"]:
        return [f"launch differs: {old['launch'][0]} vs {new['launch'][0]}"]
    bases: dict[str, int] = {}
    a, b = copy_rows(old, bases, live), copy_rows(new, bases, live)
    if a.shape == b.shape and np.array_equal(a, b):
        return []
    names = {v: k for k, v in bases.items()}
    if a.shape != b.shape:
        problems = [f"{len(a)} copies executed before, {len(b)} after"]
    else:
        problems = []
    k = next((i for i in range(min(len(a), len(b))) if not np.array_equal(a[i], b[i])), min(len(a), len(b)))

    def show(r):
        return ", ".join(f"{c} {names.get(int(v), v) if 'array' in c else int(v)}" for c, v in zip(_COLS, r))
    problems.append(f"first difference (sorted row {k}): before {show(a[k]) if k < len(a) else '-'}; "
                    f"after {show(b[k]) if k < len(b) else '-'}")
    return problems


def lowering_usable(entry: dict, live: set[str] | None = None) -> str | None:
    """Why a legacy lowering cannot serve as truth, or None."""
    if entry.get("error"):
        return f"error: {entry['error'][-200:]}"
    if not entry["copies"]:
        return "no cp.async copy"
    if "source" not in entry:
        return "no CUDA source written"
    try:
        copy_rows(entry, {}, live)
    except (Unsupported, ValueError) as exc:
        return f"unreadable CUDA: {exc}"
    return None


# ---------------------------------------------------------------- the differential run

ROOT = HERE.parent.parent
ENV_NAMES = {"legacy": "tl-0.1.7.post1", "0.1.8": "tl-0.1.8", "0.1.9": "tl-latest"}


def _plain_types(text: str) -> str:
    """One-word spellings of the two-word C types (addresses.py reads one-word types)."""
    return text.replace("unsigned char", "uchar").replace("signed char", "int8_t")


def _strip_regions():
    """tests/test_realtl.py's strip_region_annotations (0.1.9+ declares the kernel's regions itself)."""
    name = "realtl_test_module"
    mod = sys.modules.get(name)
    if mod is None:
        spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / "test_realtl.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return mod.strip_region_annotations


@dataclass
class Pair:
    case: str
    kind: str  # tool | hand | a mutant's name
    target: str
    old: str
    new: str
    truth: str = ""  # agree | differ | unreadable
    truth_detail: str = ""
    verdict: str = ""  # equivalent | mismatch | inconclusive | error
    reasons: tuple = ()

    @property
    def false_proof(self) -> bool:
        return self.verdict == "equivalent" and self.truth == "differ"


def truth_of(old: dict, new: dict | None, live=lambda kernel: None) -> tuple[str, str]:
    """``agree`` / ``differ`` / ``unreadable`` for two lower_batch file objects, and why
    (``live(kernel)``: the tiles that kernel's copies write, see merged_layout)."""
    if new is None:
        return "differ", "the new text was not lowered"
    if new.get("error"):
        return "differ", f"new text does not import: {new['error'][-300:]}"
    problems = []
    for name, entry in old["kernels"].items():
        other = new["kernels"].get(name)
        if other is None:
            problems.append(f"{name}: missing after")
            continue
        try:
            found = compare_entries(entry, other, live(name))
        except (Unsupported, ValueError) as exc:
            return "unreadable", f"{name}: {exc}"
        problems += [f"{name}: {p}" for p in found]
    extra = set(new["kernels"]) - set(old["kernels"])
    problems += [f"{name}: only after" for name in sorted(extra)]
    return ("differ", "; ".join(problems)[:1500]) if problems else ("agree", "")


def run_tool(directory: Path, target: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cpasync_migrate", "--target", target, "--unsafe-fixes",
                           "--no-cache", "--isolated", "-q", str(directory)],
                          check=False, capture_output=True, text=True, cwd=directory,
                          env={"NO_COLOR": "1", **_env()})


def _env() -> dict:
    import os
    env = dict(os.environ)
    env.pop("FORCE_COLOR", None)
    return env


def verdict_of(pair: Pair, rules, seeds: int = 1) -> tuple[str, tuple]:
    """The verifier's verdict on the whole file: equivalent when every kernel is, mismatch when one is."""
    from cpasync_migrate.verify import verify_source
    try:
        vs = verify_source(pair.old, pair.new, f"{pair.case}.py", rules=rules, target=pair.target, seeds=seeds)
    except Exception as exc:  # noqa: BLE001 - the verifier's own failure is a result too (counted as `error`)
        return "error", (f"{type(exc).__name__}: {exc}",)
    if not vs:
        return "inconclusive", ("no verdict",)
    kinds = [v.verdict for v in vs]
    reasons = tuple(f"{v.kernel}: {v.reason}" for v in vs if v.verdict != "equivalent")
    if all(k == "equivalent" for k in kinds):
        return "equivalent", ()
    return ("mismatch" if "mismatch" in kinds else "inconclusive"), reasons


def run(cases: list, work: Path, realtl_dir: Path, *, verify: bool = True, seeds: int = 1,
        log=lambda msg: None) -> dict:
    """The whole differential run over generated cases (fuzz_gen.Case): counts and the pairs.

    The tool migrates every legacy file while 0.1.7.post1 lowers them (two processes at once);
    then 0.1.8 and the newest release lower their candidates at once; then the verifier judges
    every pair in this process.  Legacy files that do not lower to readable copies are
    discarded (counted by reason).
    """
    import time
    from concurrent.futures import ThreadPoolExecutor

    t0 = time.monotonic()

    def say(msg):
        log(f"[{time.monotonic() - t0:6.1f}s] {msg}")

    work.mkdir(parents=True, exist_ok=True)
    envs = {k: realtl_dir / v for k, v in ENV_NAMES.items()}
    legacy_dir = work / "legacy"
    legacy_dir.mkdir(exist_ok=True)
    paths = []
    for c in cases:
        p = legacy_dir / f"{c.name}.py"
        p.write_text(c.legacy)
        paths.append(p)
    tool_dirs = {}
    for target in ("0.1.8", "0.1.9"):
        tdir = tool_dirs[target] = work / f"tool-{target}"
        tdir.mkdir(exist_ok=True)
        for c in cases:
            if c.target == target:
                (tdir / f"{c.name}.py").write_text(c.legacy)
    say(f"lowering {len(paths)} legacy files with {ENV_NAMES['legacy']}; the tool migrates them meanwhile")
    with ThreadPoolExecutor(2) as pool:
        old_job = pool.submit(lower_batch, envs["legacy"], paths, work / "legacy-cu")
        for target, tdir in tool_dirs.items():
            if any(c.target == target for c in cases):
                run_tool(tdir, target)
        old_low = old_job.result()
    discarded: dict[str, int] = {}
    usable = []
    for c in cases:
        r = old_low.get(f"{c.name}.py")
        why = None
        if r is None or r["error"]:
            why = "import: " + (r["error"] if r else "no result")
        elif not r["kernels"]:
            why = "no kernel"
        else:
            for kname, entry in r["kernels"].items():
                why = lowering_usable(entry, c.live_tiles(kname))
                if why:
                    break
        if why:
            key = re.sub(r"\d+", "N", why)[:110]
            discarded[key] = discarded.get(key, 0) + 1
        elif c.candidates:
            usable.append(c)

    pairs: list[Pair] = []
    tool_unchanged = 0
    strip = _strip_regions()
    new_paths: dict[str, list[Path]] = {"0.1.8": [], "0.1.9": []}
    for c in usable:
        texts = dict(c.candidates)
        migrated = (tool_dirs[c.target] / f"{c.name}.py").read_text()
        if migrated != c.legacy:
            texts = {"tool": migrated, **texts}
        else:
            tool_unchanged += 1
        ndir = work / f"new-{c.target}"
        ndir.mkdir(exist_ok=True)
        for kind, text in texts.items():
            pairs.append(Pair(c.name, kind, c.target, c.legacy, text))
            p = ndir / f"{c.name}__{kind}.py"
            p.write_text(strip(text) if c.target == "0.1.9" else text)
            new_paths[c.target].append(p)
    say(f"lowering {len(new_paths['0.1.8'])} candidates with {ENV_NAMES['0.1.8']} and "
        f"{len(new_paths['0.1.9'])} with {ENV_NAMES['0.1.9']}")
    lowered: dict[str, dict] = {}
    with ThreadPoolExecutor(2) as pool:
        jobs = [pool.submit(lower_batch, envs[t], ps, work / f"new-{t}-cu") for t, ps in new_paths.items() if ps]
        for job in jobs:
            lowered.update(job.result())
    by_name = {c.name: c for c in usable}
    for p in pairs:
        p.truth, p.truth_detail = truth_of(old_low[f"{p.case}.py"], lowered.get(f"{p.case}__{p.kind}.py"),
                                           by_name[p.case].live_tiles)
    if verify:
        from cpasync_migrate.rules import load_rules
        rules = load_rules()
        say(f"verifying {len(pairs)} pairs")
        for p in pairs:
            p.verdict, p.reasons = verdict_of(p, rules, seeds)
    say("done")
    return {"generated": len(cases), "lowered": len(usable), "discarded": discarded,
            "tool_unchanged": tool_unchanged, "pairs": pairs}


def tally(result: dict) -> dict:
    """The counts scripts/fuzz_verify.py prints."""
    pairs = [p for p in result["pairs"]]
    agree = [p for p in pairs if p.truth == "agree"]
    differ = [p for p in pairs if p.truth == "differ"]
    counts = {
        "generated": result["generated"], "lowered": result["lowered"], "pairs": len(pairs),
        "real-agree": len(agree), "real-differ": len(differ),
        "real-differ (new does not lower)": sum("does not" in p.truth_detail for p in differ),
        "real-unreadable": sum(p.truth == "unreadable" for p in pairs),
        "tool left unchanged": result["tool_unchanged"],
    }
    for v in ("equivalent", "mismatch", "inconclusive", "error"):
        counts[f"verifier {v}"] = sum(p.verdict == v for p in pairs)
    counts["false proofs"] = sum(p.false_proof for p in pairs)
    proven = sum(p.verdict == "equivalent" for p in agree)
    counts["proven among real-agree"] = proven
    counts["proven-rate among real-agree"] = round(proven / len(agree), 3) if agree else None
    counts["agree and mismatch (false alarms)"] = sum(p.verdict == "mismatch" for p in agree)
    reasons: dict[str, int] = {}
    for p in agree:
        if p.verdict == "inconclusive":
            for r in p.reasons:
                key = re.sub(r"\d+", "N", r.split(": ", 1)[-1])[:120]
                reasons[key] = reasons.get(key, 0) + 1
    counts["inconclusive reasons (real-agree)"] = dict(sorted(reasons.items(), key=lambda kv: -kv[1]))
    alarms: dict[str, int] = {}
    for p in agree:
        if p.verdict == "mismatch":
            for r in p.reasons:
                key = re.sub(r"\d+", "N", r.split(": ", 1)[-1])[:120]
                alarms[key] = alarms.get(key, 0) + 1
    counts["mismatch reasons (real-agree)"] = dict(sorted(alarms.items(), key=lambda kv: -kv[1]))
    counts["discarded legacy kernels"] = result["discarded"]
    return counts
