"""Load ``rules/*.toml``: the only home of API-version facts.

A *generation* is one shape of the intrinsic's API (legacy, 0.1.8, 0.1.9+).
Each generation after the first names the step that leads to it from the
previous one; the engine chains steps to reach the target.
"""
from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Optional

RULES_ENV = "CPASYNC_MIGRATE_RULES"


def rules_dir() -> Path:
    env = os.environ.get(RULES_ENV)
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent
    for cand in (here / "rules", here.parent / "rules"):
        if (cand / "legacy.toml").is_file():
            return cand
    raise FileNotFoundError("rules/ folder not found next to the cpasync_migrate package")


class RulesError(Exception):
    pass


@dataclass(frozen=True)
class Generation:
    name: str
    title: str
    covers_min: str
    covers_max: str
    form: str  # "offset" | "access_ptr"
    size_meaning: str  # "bytes" | "num_elems"
    widths: tuple[int, ...]
    python_params: tuple[str, ...]
    cpp_args: tuple[str, ...]
    cpp_arity: tuple[int, ...]
    dst_rw_mask: int
    src_rw_mask: int
    access_ptr: str
    type_annotation: str
    buffer_access_ptr: Optional[str]
    dst_rw: str
    src_rw: str
    step_from: Optional[str]
    step_size: Optional[str]
    size_literal: bool
    same_width: bool
    rules_version: str
    source: str
    # C++: the size argument's meaning per IR op where it differs from ``size_meaning``
    # (pairs, e.g. (("tl.ptx_cp_async", "num_elems"),)), the arities a registration declares
    # (``set_num_inputs``) for this layout, and TileLang's BufferLoad access pointer.
    cpp_size_meaning: tuple = ()
    cpp_num_inputs: tuple[int, ...] = ()
    tl_access_ptr: Optional[str] = None
    tl_access_ptr_since: Optional[str] = None
    # Python: an expression giving the bits of a dtype expression at kernel build time ({T}: the
    # tilelang.language alias, {dtype}: the expression); None where the size must be a literal.
    dtype_bits: Optional[str] = None

    def size_meaning_for(self, op: Optional[str]) -> str:
        """What the size argument of ``op`` (an IR op name) counts in this generation."""
        return dict(self.cpp_size_meaning).get(op, self.size_meaning)


@dataclass(frozen=True)
class Rules:
    generations: tuple[Generation, ...]  # ordered legacy -> newest
    dtype_sizes: dict
    dtype_aliases: dict
    default_dtype: str
    tilelang_modules: tuple[str, ...]
    tvm_modules: tuple[str, ...]
    emit_module: str
    emit_alias: str
    declarations: dict  # func name -> {"position": int, "keyword": str}
    versions: dict = field(default_factory=dict)  # file name -> rules_version
    # Module path -> the release it first appeared in (TileLang's, TVM's); documentation data.
    tilelang_since: dict = field(default_factory=dict)
    tvm_since: dict = field(default_factory=dict)
    # shared_memory.toml: how the legacy lowering placed a cp.async destination (merged or not)
    shared_memory: dict = field(default_factory=dict)
    # python_api.toml: the Python API's own definition and runtime helpers that read the layout
    python_api: dict = field(default_factory=dict)

    def generation(self, name: str) -> Generation:
        for g in self.generations:
            if g.name == name:
                return g
        raise RulesError(f"unknown API generation {name!r}; known: {', '.join(g.name for g in self.generations)}")

    @property
    def legacy(self) -> Generation:
        return self.generations[0]

    def chain(self, src: str, dst: str) -> list[Generation]:
        """Generations passed through from ``src`` (exclusive) to ``dst`` (inclusive)."""
        names = [g.name for g in self.generations]
        i, j = names.index(self.generation(src).name), names.index(self.generation(dst).name)
        if j <= i:
            raise RulesError(f"cannot migrate from {src} to {dst}: the target is not newer")
        return list(self.generations[i + 1 : j + 1])

    def steps(self, src: str, dst: str) -> list[str]:
        """Names of the migration steps from ``src`` to ``dst``, e.g. ["legacy->0.1.8", "0.1.8->0.1.9"]."""
        out, prev = [], self.generation(src).name
        for g in self.chain(src, dst):
            out.append(f"{prev}->{g.name}")
            prev = g.name
        return out

    def dtype_size(self, name: str) -> Optional[int]:
        name = self.dtype_aliases.get(name, name)
        return self.dtype_sizes.get(name)

    def canonical_dtype(self, name: str) -> str:
        return self.dtype_aliases.get(name, name)

    def resolve(self, spec: str) -> Generation:
        """The generation named ``spec``, else the one that covers TileLang version ``spec``."""
        if any(g.name == spec for g in self.generations):
            return self.generation(spec)
        return self.generation_for_version(spec)

    def generation_for_version(self, version: str) -> Generation:
        v = parse_version(version)
        for g in reversed(self.generations):
            lo = parse_version(g.covers_min)
            hi = parse_version(g.covers_max) if g.covers_max else None
            if v >= lo and (hi is None or v <= hi):
                return g
        raise RulesError(f"no API generation covers TileLang {version}")


def version_spec(text: str) -> str:
    """A --target/--from value without its package name: "tilelang==0.1.13" -> "0.1.13"."""
    s = text.strip()
    if s.lower().startswith("tilelang"):
        s = s[len("tilelang"):].lstrip("=<>~! ")
    return s


# PEP 440 (the version specification packaging implements), every spelling it accepts:
# epoch, release, pre (a/alpha, b/beta, rc/c/pre/preview), post (post/rev/r, or "-N"),
# dev, local; separators ".", "-", "_" or none; case-insensitive.
_VERSION_RE = re.compile(
    r"""^\s*v?
    (?:(?P<epoch>\d+)!)?
    (?P<release>\d+(?:\.\d+)*)
    (?:[-_.]?(?P<pre_l>alpha|a|beta|b|preview|pre|c|rc)[-_.]?(?P<pre_n>\d+)?)?
    (?:-(?P<post_n1>\d+)|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>\d+)?)?
    (?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>\d+)?)?
    (?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?
    \s*$""",
    re.VERBOSE | re.IGNORECASE,
)
_PRE = {"a": "a", "alpha": "a", "b": "b", "beta": "b", "c": "rc", "rc": "rc", "pre": "rc", "preview": "rc"}
# Sentinels that sort below / above every value of a component: (0,) < (1, x) < (2,).
_LOW, _HIGH = (0,), (2,)


def parse_version(text: str) -> tuple:
    """A sort key for a PEP 440 version that orders exactly as ``packaging.version.Version``.

    ``0.1.9rc10`` sorts after ``0.1.9rc9`` (numbers compare as numbers); a dev release
    sorts before its pre-releases, those before the release, and that before its post
    releases; trailing zeros of the release do not count (``0.1.9 == 0.1.9.0``); a local
    label sorts after the same version without one.
    """
    m = _VERSION_RE.match(text)
    if not m:
        raise RulesError(f"not a version: {text!r}")
    epoch = int(m.group("epoch") or 0)
    release = [int(p) for p in m.group("release").split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    pre_l, post_l = m.group("pre_l"), m.group("post_l")
    post_n = m.group("post_n1") or m.group("post_n2")
    has_post = m.group("post_n1") is not None or post_l is not None
    has_dev = m.group("dev_l") is not None
    if pre_l is not None:
        pre = (1, _PRE[pre_l.lower()], int(m.group("pre_n") or 0))
    elif has_dev and not has_post:
        pre = _LOW  # 1.0.dev0 sorts before 1.0a0
    else:
        pre = _HIGH
    post = (1, int(post_n or 0)) if has_post else _LOW
    dev = (1, int(m.group("dev_n") or 0)) if has_dev else _HIGH
    if m.group("local"):
        parts = re.split(r"[-_.]", m.group("local").lower())
        local = (1,) + tuple((1, int(p), "") if p.isdigit() else (0, 0, p) for p in parts)
    else:
        local = _LOW
    return (epoch, tuple(release), pre, post, dev, local)


def _gen_from(data: dict, source: str) -> Generation:
    g = data["generation"]
    py = data.get("python", {})
    cpp = data.get("cpp", {})
    step = data.get("step", {})
    return Generation(
        name=g["name"],
        title=g.get("title", g["name"]),
        covers_min=g.get("covers_min", "0"),
        covers_max=g.get("covers_max", ""),
        form=g["form"],
        size_meaning=g["size_meaning"],
        widths=tuple(g.get("widths", (4, 8, 16))),
        python_params=tuple(py.get("params", ())),
        cpp_args=tuple(cpp.get("args", ())),
        cpp_arity=tuple(cpp.get("arity", ())),
        dst_rw_mask=int(py.get("dst_rw_mask", cpp.get("dst_rw_mask", 2))),
        src_rw_mask=int(py.get("src_rw_mask", cpp.get("src_rw_mask", 1))),
        access_ptr=py.get("access_ptr", "tvm_access_ptr"),
        type_annotation=py.get("type_annotation", "type_annotation"),
        buffer_access_ptr=py.get("buffer_access_ptr"),
        dst_rw=py.get("dst_rw", "w"),
        src_rw=py.get("src_rw", "r"),
        step_from=step.get("from"),
        step_size=step.get("size"),
        size_literal=bool(g.get("size_literal", False)),
        same_width=bool(g.get("same_width", False)),
        rules_version=str(data.get("rules_version", "")),
        source=source,
        cpp_size_meaning=tuple(sorted(cpp.get("size_meaning_per_op", {}).items())),
        cpp_num_inputs=_ints(cpp.get("num_inputs", ())),
        tl_access_ptr=cpp.get("tl_access_ptr"),
        tl_access_ptr_since=cpp.get("tl_access_ptr_since"),
        dtype_bits=py.get("dtype_bits"),
    )


def _ints(v) -> tuple[int, ...]:
    return (int(v),) if isinstance(v, int) else tuple(int(x) for x in v)


@lru_cache(maxsize=4)
def load_rules(directory: Optional[str] = None) -> Rules:
    d = Path(directory) if directory else rules_dir()
    gens: dict[str, Generation] = {}
    versions: dict[str, str] = {}
    dtypes = namespaces = None
    shared_memory: dict = {}
    python_api: dict = {}
    for f in sorted(d.glob("*.toml")):
        try:
            data = tomllib.loads(f.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise RulesError(f"{f}: {e}") from e
        versions[f.name] = str(data.get("rules_version", ""))
        if f.name == "dtypes.toml":
            dtypes = data
        elif f.name == "namespaces.toml":
            namespaces = data
        elif f.name == "shared_memory.toml":
            shared_memory = data
        elif f.name == "python_api.toml":
            python_api = data
        elif "generation" in data:
            g = _gen_from(data, f.name)
            gens[g.name] = g
    if dtypes is None or namespaces is None or "legacy" not in gens:
        raise RulesError(f"{d}: rules are incomplete (need legacy.toml, dtypes.toml, namespaces.toml)")
    # Order generations by following the steps from legacy.
    ordered = [gens.pop("legacy")]
    while gens:
        nxt = [g for g in gens.values() if g.step_from == ordered[-1].name]
        if len(nxt) != 1:
            raise RulesError(f"{d}: expected exactly one generation stepping from {ordered[-1].name!r}")
        ordered.append(gens.pop(nxt[0].name))
    return Rules(
        generations=tuple(ordered),
        dtype_sizes=dict(dtypes["sizes"]),
        dtype_aliases=dict(dtypes.get("aliases", {})),
        default_dtype=dtypes.get("defaults", {}).get("buffer", "float32"),
        tilelang_modules=tuple(namespaces["tilelang"]["modules"]),
        tvm_modules=tuple(namespaces["tvm"]["modules"]),
        emit_module=namespaces["tilelang"]["emit_module"],
        emit_alias=namespaces["tilelang"]["emit_alias"],
        declarations=dict(namespaces.get("declarations", {})),
        versions=versions,
        shared_memory=shared_memory,
        python_api=python_api,
        tilelang_since=dict(namespaces["tilelang"].get("since", {})),
        tvm_since=dict(namespaces["tvm"].get("since", {})),
    )
