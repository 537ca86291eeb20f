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
    """A rules file that cannot be read or does not hold the layout its schema names."""


@dataclass(frozen=True)
class Generation:
    """One shape of the intrinsic's API (one generation file): its signatures, layouts and sizes."""

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
    # The access-pointer form's facts (None in the offset form).
    dst_rw_mask: Optional[int]
    src_rw_mask: Optional[int]
    access_ptr: Optional[str]
    type_annotation: Optional[str]
    buffer_access_ptr: Optional[str]
    dst_rw: Optional[str]
    src_rw: Optional[str]
    step_from: Optional[str]
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
    # Python: an expression giving the bits of a dtype expression at kernel build time ({T}: the
    # tilelang.language alias, {dtype}: the expression); None where the size must be a literal.
    dtype_bits: Optional[str] = None
    # Python: the tilelang.language loop (``vectorized``) inside which the compiler widens a call
    # by the loop's lanes when the widened copy is a cp.async width; None where it does not.
    widening_loop: Optional[str] = None

    def size_meaning_for(self, op: Optional[str]) -> str:
        """What the size argument of ``op`` (an IR op name) counts in this generation."""
        return dict(self.cpp_size_meaning).get(op, self.size_meaning)


@dataclass(frozen=True)
class Rules:
    """Every rules file of one folder: the generations in step order and the shared facts."""

    generations: tuple[Generation, ...]  # ordered legacy -> newest
    dtype_sizes: dict
    dtype_aliases: dict
    tilelang_modules: tuple[str, ...]
    tvm_modules: tuple[str, ...]
    emit_module: str
    emit_alias: str
    # The alias an added import takes when the module already binds ``emit_alias``.
    emit_fallback_alias: str
    intrinsic: str  # the intrinsic's name, in Python and in C++
    suppress_comment: str  # the text of a suppression comment (after "#" or "//")
    declarations: dict  # func name -> {"position": int, "keyword": str}
    directory: str  # the folder the rules were read from
    versions: dict = field(default_factory=dict)  # file name -> rules_version
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


# ---------------------------------------------------------------- the files' layouts
#
# Every rules file states the format it is written in (``schema``) and holds only the tables
# and keys its layout names: a key this loader does not know is a mistake (a typo, or a
# fact the tool would silently ignore), so it is refused, as is a missing required key.
# Defaults live in the files, not here: a key the layout marks optional is absent when the
# generation has no such thing (no access pointer in the legacy form), never filled in.

SCHEMA = 1  # the rules format this version of the tool reads


class _Key:
    """A value (not a table).  (Plain classes, not dataclasses: the lint's start-up pays for each.)"""

    __slots__ = ("required",)

    def __init__(self, required: bool = True):
        self.required = required


class _Table:
    """A table with the keys ``keys`` names."""

    __slots__ = ("keys", "required")

    def __init__(self, keys: dict, required: bool = True):
        self.keys, self.required = keys, required


class _Data:
    """A table whose keys are data (dtype names, spellings, file names); ``values``, when
    given, is the layout of each value (an inline table)."""

    __slots__ = ("required", "values")

    def __init__(self, required: bool = True, values: Optional[_Table] = None):
        self.required, self.values = required, values


_REQ, _OPT = _Key(True), _Key(False)
_HEAD = {"schema": _REQ, "rules_version": _REQ}

_GENERATION = _Table({
    **_HEAD,
    "generation": _Table({
        "name": _REQ, "title": _REQ, "covers_min": _REQ, "covers_max": _REQ, "form": _REQ,
        "size_meaning": _REQ, "widths": _REQ, "size_literal": _REQ, "same_width": _REQ,
        # the access pointers' masks: required when form = "access_ptr"
        "dst_rw_mask": _OPT, "src_rw_mask": _OPT,
    }),
    "python": _Table({
        "params": _REQ,
        # required when form = "access_ptr"
        "access_ptr": _OPT, "type_annotation": _OPT,
        # T.access_ptr(buf[index], rw, extent): dst_rw and src_rw required with buffer_access_ptr
        "buffer_access_ptr": _OPT, "dst_rw": _OPT, "src_rw": _OPT,
        # an expression of a dtype's bits at kernel build time, where the size need not be a literal
        "dtype_bits": _OPT,
        # the loop (T.<name>(N)) inside which the compiler widens the call by its N lanes
        "widening_loop": _OPT,
    }),
    "cpp": _Table({"args": _REQ, "arity": _REQ, "num_inputs": _REQ, "size_meaning_per_op": _Data(required=False),
                   "tl_access_ptr": _OPT}),
    "step": _Table({"from": _REQ}, required=False),  # every generation but the first
})

_LAYOUTS = {
    "dtypes.toml": _Table({**_HEAD, "sizes": _Data(), "aliases": _Data()}),
    "namespaces.toml": _Table({
        **_HEAD,
        "intrinsic": _Table({"name": _REQ}),
        "suppress": _Table({"comment": _REQ}),
        "tilelang": _Table({"modules": _REQ, "emit_module": _REQ, "emit_alias": _REQ, "emit_fallback_alias": _REQ}),
        "tvm": _Table({"modules": _REQ}),
        "declarations": _Data(values=_Table({"position": _REQ, "keyword": _REQ, "default": _OPT})),
    }),
    "shared_memory.toml": _Table({
        **_HEAD,
        "merged_scope": _REQ, "static_scope": _REQ, "min_allocations": _REQ, "static_merge_config": _REQ,
        "allocations": _Data(values=_Table({"position": _REQ, "keyword": _REQ, "default": _REQ})),
        "allocations_forced": _Data(values=_Table({"dtypes": _REQ, "scope": _REQ})),
        "uses": _Table({"annotations": _REQ}),
        "workspaces": _Table({"ops": _REQ}),
        "functions": _Table({"prim_func": _REQ, "macro": _REQ, "python_builtins": _REQ}),
    }),
    "python_api.toml": _Table({
        **_HEAD,
        "definition": _Table({"forwards_to": _REQ, "op": _REQ,
                              "emit": _Data(values=_Table({"params": _REQ, "body": _REQ}))}),
        "helpers": _Table({"names": _REQ, "offset_param": _REQ, "op": _REQ}),
        "upstream": _Data(),
    }),
    "cpp.toml": _Table({
        **_HEAD,
        "op": _Table({
            "qualifiers": _REQ, "call_constructors": _REQ, "array_types": _REQ, "append_methods": _REQ,
            "op_types": _REQ, "ops": _Data(), "access_pointer_calls": _REQ, "access_pointer_name": _REQ,
            "context": _Table({"default": _REQ, "namespaces": _Data(), "using": _Data()}),
        }),
        "consumer": _Table({"same_as": _REQ, "op_field": _REQ, "args_field": _REQ, "check_macros": _REQ,
                            "condition_macros": _REQ, "offset_join": _REQ, "offset_name": _REQ}),
        "roles": _Data(),
        "emit": _Table({k: _REQ for k in (
            "call", "args", "args_rest", "builtin_scope", "pointer_dtype", "pointer_dtype_helper",
            "pointer_dtype_helper_name", "data_field", "var_types", "extent", "size_primexpr", "size_wrappers",
            "hoist_dtype", "hoist_access_ptr", "hoist_names", "pure_calls", "hoist_pointer_type",
            "hoist_dtype_from_pointer", "hoist_pointer_names")}),
        "registration": _Table({"arity_method": _REQ, "macros": _Data()}),
        "helpers": _Table({"names": _REQ, "pointer_param": _REQ, "offset_param": _REQ, "op": _REQ, "exclude": _REQ}),
    }),
}


def _check_table(data: dict, layout: _Table, path: Path, where: str) -> None:
    """Refuse a key ``layout`` does not name and a required one that is missing."""
    label = f"[{where}]" if where else "the top level"
    for key, value in data.items():
        spec = layout.keys.get(key)
        name = f"{where}.{key}" if where else key
        if spec is None:
            known = ", ".join(sorted(layout.keys))
            raise RulesError(f"{path}: unknown key {key!r} in {label} (known there: {known})")
        if isinstance(spec, _Key):
            if isinstance(value, dict):
                raise RulesError(f"{path}: {key!r} in {label} is a table; expected a value")
            continue
        if not isinstance(value, dict):
            raise RulesError(f"{path}: {key!r} in {label} is a value; expected a table [{name}]")
        if isinstance(spec, _Table):
            _check_table(value, spec, path, name)
        elif spec.values is not None:
            for item, inner in value.items():
                if not isinstance(inner, dict):
                    raise RulesError(f"{path}: {item!r} in [{name}] is a value; expected an inline table")
                _check_table(inner, spec.values, path, f"{name}.{item}")
    for key, spec in layout.keys.items():
        if spec.required and key not in data:
            what = "table" if not isinstance(spec, _Key) else "key"
            raise RulesError(f"{path}: missing required {what} {key!r} in {label}")


def _require(table: dict, keys: tuple, path: Path, where: str, why: str) -> None:
    for key in keys:
        if key not in table:
            raise RulesError(f"{path}: missing required key {key!r} in [{where}] ({why})")


def read_rules_file(path: Path) -> dict:
    """One rules file's data, checked against its layout: the schema it is written in, no key
    the layout does not name, every required key present (:class:`RulesError` otherwise, naming
    the file, the table and the key)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise RulesError(f"{path}: {e}") from e
    if "schema" not in data:
        raise RulesError(f"{path}: missing required key 'schema' in the top level (this version reads schema {SCHEMA})")
    if data["schema"] != SCHEMA:
        raise RulesError(f"{path}: schema {data['schema']!r} is not one this version reads (it reads schema {SCHEMA})")
    layout = _LAYOUTS.get(path.name)
    if layout is None:
        if "generation" not in data:
            raise RulesError(f"{path}: not a rules file this version knows (expected {', '.join(sorted(_LAYOUTS))} "
                             "or a generation file with a [generation] table)")
        layout = _GENERATION
    _check_table(data, layout, path, "")
    if layout is _GENERATION:
        g, py = data["generation"], data["python"]
        if g["form"] == "access_ptr":
            why = "the generation's form is access_ptr"
            _require(g, ("dst_rw_mask", "src_rw_mask"), path, "generation", why)
            _require(py, ("access_ptr", "type_annotation"), path, "python", why)
        if "buffer_access_ptr" in py:
            _require(py, ("dst_rw", "src_rw"), path, "python", "buffer_access_ptr is given")
    return data


def _gen_from(data: dict, source: str) -> Generation:
    """A generation from its file's data (checked by :func:`read_rules_file`: no defaults here)."""
    g, py, cpp = data["generation"], data["python"], data["cpp"]
    step = data.get("step", {})
    return Generation(
        name=g["name"],
        title=g["title"],
        covers_min=g["covers_min"],
        covers_max=g["covers_max"],
        form=g["form"],
        size_meaning=g["size_meaning"],
        widths=tuple(g["widths"]),
        python_params=tuple(py["params"]),
        cpp_args=tuple(cpp["args"]),
        cpp_arity=tuple(cpp["arity"]),
        dst_rw_mask=g.get("dst_rw_mask"),
        src_rw_mask=g.get("src_rw_mask"),
        access_ptr=py.get("access_ptr"),
        type_annotation=py.get("type_annotation"),
        buffer_access_ptr=py.get("buffer_access_ptr"),
        dst_rw=py.get("dst_rw"),
        src_rw=py.get("src_rw"),
        step_from=step.get("from"),
        size_literal=bool(g["size_literal"]),
        same_width=bool(g["same_width"]),
        rules_version=str(data["rules_version"]),
        source=source,
        cpp_size_meaning=tuple(sorted(cpp.get("size_meaning_per_op", {}).items())),
        cpp_num_inputs=_ints(cpp["num_inputs"]),
        tl_access_ptr=cpp.get("tl_access_ptr"),
        dtype_bits=py.get("dtype_bits"),
        widening_loop=py.get("widening_loop"),
    )


def _ints(v) -> tuple[int, ...]:
    return (int(v),) if isinstance(v, int) else tuple(int(x) for x in v)


@lru_cache(maxsize=4)
def load_rules(directory: Optional[str] = None) -> Rules:
    """Every rules file of ``directory`` (default: :func:`rules_dir`), each checked by
    :func:`read_rules_file`; the generations ordered by their steps from legacy."""
    d = Path(directory) if directory else rules_dir()
    gens: dict[str, Generation] = {}
    versions: dict[str, str] = {}
    named: dict[str, dict] = {}
    for f in sorted(d.glob("*.toml")):
        data = read_rules_file(f)
        versions[f.name] = str(data["rules_version"])
        if f.name in _LAYOUTS:
            named[f.name] = data
        else:
            g = _gen_from(data, f.name)
            gens[g.name] = g
    missing = [n for n in ("dtypes.toml", "namespaces.toml") if n not in named]
    if missing or "legacy" not in gens:
        raise RulesError(f"{d}: rules are incomplete (need legacy.toml, dtypes.toml, namespaces.toml)")
    dtypes, namespaces = named["dtypes.toml"], named["namespaces.toml"]
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
        dtype_aliases=dict(dtypes["aliases"]),
        tilelang_modules=tuple(namespaces["tilelang"]["modules"]),
        tvm_modules=tuple(namespaces["tvm"]["modules"]),
        emit_module=namespaces["tilelang"]["emit_module"],
        emit_alias=namespaces["tilelang"]["emit_alias"],
        emit_fallback_alias=namespaces["tilelang"]["emit_fallback_alias"],
        intrinsic=namespaces["intrinsic"]["name"],
        suppress_comment=namespaces["suppress"]["comment"],
        declarations=dict(namespaces["declarations"]),
        directory=str(d),
        versions=versions,
        shared_memory=named.get("shared_memory.toml", {}),
        python_api=named.get("python_api.toml", {}),
    )
