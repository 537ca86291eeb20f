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
    # shared_memory.toml: how the legacy lowering placed a cp.async destination (merged or not)
    shared_memory: dict = field(default_factory=dict)

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


_VERSION_RE = re.compile(r"^\s*v?(\d+(?:\.\d+)*)((?:a|b|rc)\d+)?(?:\.?post(\d+))?(?:\.?dev(\d+))?(?:\+.*)?\s*$")


def parse_version(text: str) -> tuple:
    """A sortable key for PEP 440 release strings such as ``0.1.7.post1``."""
    m = _VERSION_RE.match(text)
    if not m:
        raise RulesError(f"not a version: {text!r}")
    release = tuple(int(p) for p in m.group(1).split("."))
    release = release + (0,) * (4 - len(release))
    pre = m.group(2)
    post = int(m.group(3)) if m.group(3) is not None else -1
    dev = m.group(4)
    # dev < pre < final < post
    if dev is not None and pre is None and m.group(3) is None:
        phase = (0, 0)
    elif pre is not None:
        phase = (1, pre)
    else:
        phase = (2, "")
    return release + (phase, post)


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
    )


@lru_cache(maxsize=4)
def load_rules(directory: Optional[str] = None) -> Rules:
    d = Path(directory) if directory else rules_dir()
    gens: dict[str, Generation] = {}
    versions: dict[str, str] = {}
    dtypes = namespaces = None
    shared_memory: dict = {}
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
    )
