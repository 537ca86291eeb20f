"""Compare the cp.async copies of two lowerings of one kernel (pure Python).

Works on the JSON that ``lower.py`` prints.  The two TileLang generations print
a copy's addresses differently:

    legacy  (0.1.7.post1)  tl::cp_async_gs<16>(A_s+((i * 512) + ...), A+(...))
    new     (0.1.8 on)     tl::cp_async_gs<16>((&(A_s[((i * 512) + ...)])), (&(A[(...)])))
    merged dynamic shared memory, legacy: buf_dyn_shmem+(BYTE offset)
    merged dynamic shared memory, new:    (&(((half_t*)buf_dyn_shmem)[ELEMENT offset]))

Every address is parsed into (base array, C element type, offset expression).
Two copies are the same when the base arrays match and the byte offsets
``sizeof(type) * offset`` agree at every point of a fixed sample of the
variables (thread and block indices, loop counters).  Where both sides count
in the same element type, the offset texts themselves can also be compared
(``textual_key``).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

# Storage size of the C element types TileLang's CUDA codegen prints.
C_SIZEOF = {
    "uchar": 1, "uint8_t": 1, "char": 1, "signed char": 1, "int8_t": 1, "bool": 1,
    "fp8_e4_t": 1, "fp8_e5_t": 1,
    "half_t": 2, "half": 2, "bfloat16_t": 2, "short": 2, "int16_t": 2, "ushort": 2, "uint16_t": 2,
    "float": 4, "int": 4, "int32_t": 4, "uint": 4, "uint32_t": 4, "unsigned": 4,
    "double": 8, "int64_t": 8, "uint64_t": 8, "long": 8,
}

_CAST_RE = re.compile(r"^\(\s*([A-Za-z_][\w:]*)\s*\*\s*\)\s*([A-Za-z_]\w*)$")
_INT_CAST_RE = re.compile(r"\(\s*(?:int|int64_t|long|uint|unsigned int|int32_t)\s*\)")
_IDENT_RE = re.compile(r"\b[A-Za-z_]\w*(?:\.[xyz])?\b")


def _matching_close(text: str, start: int) -> int:
    """Index of the bracket closing the one at text[start]."""
    pairs = {"(": ")", "[": "]"}
    stack = []
    for i in range(start, len(text)):
        ch = text[i]
        if ch in pairs:
            stack.append(pairs[ch])
        elif ch in ")]":
            if not stack or stack.pop() != ch:
                raise ValueError(f"unbalanced brackets in {text!r}")
            if not stack:
                return i
    raise ValueError(f"unbalanced brackets in {text!r}")


def strip_parens(text: str) -> str:
    """Remove parentheses that enclose the whole expression, and spaces at the ends."""
    text = text.strip()
    while text.startswith("(") and _matching_close(text, 0) == len(text) - 1:
        text = text[1:-1].strip()
    return text


def _top_level_plus(text: str) -> int:
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "+" and depth == 0:
            return i
    return -1


@dataclass(frozen=True)
class Address:
    base: str  # the array the pointer starts from
    ctype: str  # the element type the offset counts in
    offset: str  # the offset expression, outer parentheses removed
    extra_bytes: int = 0  # where a named pointer into `base` starts

    @property
    def elem_size(self) -> int:
        try:
            return C_SIZEOF[self.ctype]
        except KeyError:
            raise ValueError(f"unknown C element type {self.ctype!r} of {self.base}") from None


def _base_and_type(text: str, buffers: dict[str, str]) -> tuple[str, str]:
    text = strip_parens(text)
    m = _CAST_RE.match(text)
    if m:
        return m.group(2), m.group(1)
    if not re.fullmatch(r"[A-Za-z_]\w*", text):
        raise ValueError(f"cannot read the base of address {text!r}")
    if text not in buffers:
        raise ValueError(f"no declaration of {text!r} in the kernel")
    return text, buffers[text]


def parse_address(text: str, buffers: dict[str, str], aliases: dict[str, list] | None = None) -> Address:
    """Parse one address argument of tl::cp_async_gs as printed by either generation.

    ``aliases`` maps a pointer name declared into a shared array to
    ``[array, byte offset]``; such a base is resolved to the array.
    """
    addr = _parse_address(text, buffers)
    if aliases and addr.base in aliases:
        array, start = aliases[addr.base]
        return Address(array, addr.ctype, addr.offset, addr.extra_bytes + int(start))
    return addr


def _parse_address(text: str, buffers: dict[str, str]) -> Address:
    body = strip_parens(text)
    if body.startswith("&"):
        inner = strip_parens(body[1:])
        if not inner.endswith("]"):
            raise ValueError(f"address-of without subscript: {text!r}")
        # the subscript is the last top-level [...]
        depth = 0
        open_at = -1
        for i in range(len(inner) - 1, -1, -1):
            ch = inner[i]
            if ch in ")]":
                depth += 1
            elif ch in "([":
                depth -= 1
                if depth == 0:
                    open_at = i
                    break
        if open_at <= 0 or inner[open_at] != "[":
            raise ValueError(f"cannot read the subscript of {text!r}")
        base, ctype = _base_and_type(inner[:open_at], buffers)
        return Address(base, ctype, strip_parens(inner[open_at + 1 : -1]))
    plus = _top_level_plus(body)
    if plus < 0:
        base, ctype = _base_and_type(body, buffers)
        return Address(base, ctype, "0")
    base, ctype = _base_and_type(body[:plus], buffers)
    return Address(base, ctype, strip_parens(body[plus + 1 :]))


def textual_key(addr: Address) -> str:
    """A form of the address in which the two generations' spellings coincide."""
    offset = re.sub(r"\s+", "", addr.offset)
    start = f"+{addr.extra_bytes}B" if addr.extra_bytes else ""
    return f"{addr.base}{start}[{offset}]"


_SUFFIX_RE = re.compile(r"\b([A-Za-z]\w*?)_\d+\b")


def _unsuffix(expr: str) -> str:
    """Loop counters of copied loop bodies print as i, i_1, i_2: one name for all."""
    return _SUFFIX_RE.sub(r"\1", expr)


def variables(expr: str) -> set[str]:
    return set(_IDENT_RE.findall(_INT_CAST_RE.sub("", _unsuffix(expr))))


def _to_python(expr: str) -> str:
    out = _INT_CAST_RE.sub("", _unsuffix(expr))
    out = re.sub(r"\b(threadIdx|blockIdx)\.([xyz])\b", r"\1_\2", out)
    out = out.replace("&&", " and ").replace("||", " or ")
    out = re.sub(r"(?<![/])/(?![/])", "//", out)
    return out


def evaluate(expr: str, env: dict[str, int]) -> int:
    """Value of a C integer expression (non-negative operands: C's / and % agree with Python's)."""
    py_env = {re.sub(r"\.", "_", k): v for k, v in env.items()}
    return int(eval(_to_python(expr), {"__builtins__": {}}, py_env))  # noqa: S307 - our own lowering output


def sample_points(names: set[str], count: int = 64, seed: int = 20261101) -> list[dict[str, int]]:
    rng = random.Random(seed)
    ordered = sorted(names)
    points = [{n: 0 for n in ordered}]
    for n in ordered:  # each variable alone
        points.append({m: (5 if m == n else 0) for m in ordered})
    while len(points) < count:
        points.append({n: rng.randrange(0, 256) for n in ordered})
    return points


def byte_offset(addr: Address, env: dict[str, int]) -> int:
    return addr.extra_bytes + addr.elem_size * evaluate(addr.offset, env)


def byte_offsets_agree(a: Address, b: Address, count: int = 64) -> tuple[bool, str]:
    names = variables(a.offset) | variables(b.offset)
    for env in sample_points(names, count):
        va = byte_offset(a, env)
        vb = byte_offset(b, env)
        if va != vb:
            return False, f"at {env}: {va} bytes vs {vb} bytes"
    return True, ""


def _addresses(copy: dict, entry: dict) -> tuple[Address, Address]:
    return (parse_address(copy["dst"], entry["buffers"], entry.get("aliases")),
            parse_address(copy["src"], entry["buffers"], entry.get("aliases")))


def covers(general: dict, general_entry: dict, instance: dict, instance_entry: dict,
           limit: int = 64, count: int = 32) -> bool:
    """Whether copy ``instance`` is copy ``general`` with some loop counters fixed.

    A pipelined loop whose iterations one release peels off prints those
    iterations as separate copies with the counter folded into constants;
    another release keeps the loop.  ``general``'s variables that
    ``instance`` lacks are tried at 0..limit-1 (at most two of them); the
    copy is covered when, for one such choice, both byte addresses agree
    at every sample of the remaining variables.
    """
    if general["n"] != instance["n"] or (general["predicate"] is None) != (instance["predicate"] is None):
        return False
    g_dst, g_src = _addresses(general, general_entry)
    i_dst, i_src = _addresses(instance, instance_entry)
    if (g_dst.base, g_src.base) != (i_dst.base, i_src.base):
        return False
    g_vars = variables(g_dst.offset) | variables(g_src.offset)
    i_vars = variables(i_dst.offset) | variables(i_src.offset)
    if not i_vars <= g_vars:
        return False
    extra = sorted(g_vars - i_vars)
    if len(extra) > 2:
        return False
    points = sample_points(i_vars, count)
    choices = [()] if not extra else (
        [(v,) for v in range(limit)] if len(extra) == 1
        else [(v, w) for v in range(limit) for w in range(limit)])
    for choice in choices:
        fixed = dict(zip(extra, choice))
        if all(byte_offset(g_dst, {**env, **fixed}) == byte_offset(i_dst, env)
               and byte_offset(g_src, {**env, **fixed}) == byte_offset(i_src, env)
               for env in points):
            return True
    return False


def compare_kernel(old: dict, new: dict, *, textual: bool, allow_peeling: bool = False) -> list[str]:
    """Problems between two lowerings of one kernel (``lower.py`` entries); empty when they agree.

    Checks: same number of copies, the same width N for each (in order), the
    same base array and the same byte offsets for each address; with
    ``textual`` also the same offset text when both sides count in one type.
    With ``allow_peeling``, differing counts are accepted when every copy of
    each side is an instance of (or covers) a copy of the other (``covers``):
    the releases differ in how they unroll a pipelined loop, not in what a
    copy moves.
    """
    problems: list[str] = []
    oc, nc = old["copies"], new["copies"]
    if not oc:
        return ["no cp.async copy before"]
    if len(oc) != len(nc):
        if not allow_peeling:
            return [f"{len(oc)} copies before, {len(nc)} after"]
        for k, o in enumerate(oc):
            if not any(covers(n, new, o, old) or covers(o, old, n, new) for n in nc):
                problems.append(f"copy {k} before (<{o['n']}> {o['dst']}, {o['src']}) matches no copy after")
        for k, n in enumerate(nc):
            if not any(covers(n, new, o, old) or covers(o, old, n, new) for o in oc):
                problems.append(f"copy {k} after (<{n['n']}> {n['dst']}, {n['src']}) matches no copy before")
        return problems
    for k, (o, n) in enumerate(zip(oc, nc)):
        if o["n"] != n["n"]:
            problems.append(f"copy {k}: cp_async_gs<{o['n']}> before, <{n['n']}> after")
        if (o["predicate"] is None) != (n["predicate"] is None):
            problems.append(f"copy {k}: predicate {o['predicate']!r} before, {n['predicate']!r} after")
        for side in ("dst", "src"):
            try:
                a = parse_address(o[side], old["buffers"], old.get("aliases"))
                b = parse_address(n[side], new["buffers"], new.get("aliases"))
            except ValueError as exc:
                problems.append(f"copy {k} {side}: {exc}")
                continue
            if a.base != b.base:
                problems.append(f"copy {k} {side}: base {a.base} before, {b.base} after")
                continue
            ok, why = byte_offsets_agree(a, b)
            if not ok:
                problems.append(f"copy {k} {side}: {o[side]} vs {n[side]}: {why}")
            if textual and a.ctype == b.ctype and textual_key(a) != textual_key(b):
                problems.append(f"copy {k} {side}: {textual_key(a)} before, {textual_key(b)} after")
    return problems
