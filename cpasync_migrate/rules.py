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
    # the thread-sync pass of this release fails on some access-pointer copies inside a loop into merged
    # dynamic shared memory (rules/tilelang-0.1.8.toml says what was seen)
    loop_merged_sync_fails: bool = False
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
    # dotted attribute path -> the module it is (``[attributes]``: an attribute that shadows a submodule)
    attributes: dict
    emit_module: str
    emit_alias: str
    # The alias an added import takes when the module already binds ``emit_alias``.
    emit_fallback_alias: str
    intrinsic: str  # the intrinsic's name, in Python and in C++
    suppress_comment: str  # the text of a suppression comment (after "#" or "//")
    declarations: dict  # func name -> {"position": int, "keyword": str}
    directory: str  # the folder the rules were read from
    # shared_memory.toml: how the legacy lowering placed a cp.async destination (merged or not)
    shared_memory: dict
    # python_api.toml: the Python API's own definition and runtime helpers that read the layout
    python_api: dict
    versions: dict = field(default_factory=dict)  # file name -> rules_version
    # namespaces.toml [presence]: module path -> (first, last) releases known to import it ("" open ended),
    # () for none; a path under no entry is in every release
    presence: dict = field(default_factory=dict)

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


def intrinsic_name() -> str:
    """The intrinsic's name (``[intrinsic] name`` of ``namespaces.toml``), for modules that match it
    before a :class:`Rules` reaches them: the byte prefilter, the site count, the cost model, the Python
    front end's patterns.  Read from the rules folder of this process (``rules_dir``), when first asked."""
    return load_rules().intrinsic


def suppress_comment() -> str:
    """The suppression comment's text after its ``#`` or ``//`` (``[suppress] comment`` of ``namespaces.toml``),
    for the modules that match it before a :class:`Rules` reaches them (the byte prefilter, the Python front
    end's line pattern)."""
    return load_rules().suppress_comment


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


# A value's kind: what TOML type (and, for lists, what element type) the key must hold.
_KINDS = {
    "int": ("an integer", lambda v: type(v) is int),
    "str": ("a string", lambda v: type(v) is str),
    "bool": ("true or false", lambda v: type(v) is bool),
    "ints": ("a list of integers", lambda v: type(v) is list and all(type(x) is int for x in v)),
    "strs": ("a list of strings", lambda v: type(v) is list and all(type(x) is str for x in v)),
    "int|ints": ("an integer or a list of integers",
                 lambda v: type(v) is int or (type(v) is list and all(type(x) is int for x in v))),
}


class _Key:
    """A value (not a table) of one kind (``_KINDS``), optionally one of ``choices``.
    (Plain classes, not dataclasses: the lint's start-up pays for each.)"""

    __slots__ = ("required", "kind", "choices")

    def __init__(self, kind: str, required: bool = True, choices: tuple = ()):
        if kind not in _KINDS:
            raise ValueError(f"unknown value kind {kind!r}")
        self.required, self.kind, self.choices = required, kind, choices


class _Table:
    """A table with the keys ``keys`` names."""

    __slots__ = ("keys", "required")

    def __init__(self, keys: dict, required: bool = True):
        self.keys, self.required = keys, required


class _Data:
    """A table whose keys are data (dtype names, spellings, file names); each value is either of
    kind ``kind`` or, when ``values`` is given, an inline table of that layout."""

    __slots__ = ("required", "values", "kind")

    def __init__(self, required: bool = True, values: Optional[_Table] = None, kind: Optional[str] = None):
        self.required, self.values = required, values
        self.kind = _Key(kind) if kind is not None else None


def _req(kind: str, *choices) -> _Key:
    return _Key(kind, True, choices)


def _opt(kind: str, *choices) -> _Key:
    return _Key(kind, False, choices)


_HEAD = {"schema": _req("int"), "rules_version": _req("str")}
_STR, _STRS, _INT = _req("str"), _req("strs"), _req("int")

_GENERATION = _Table({
    **_HEAD,
    "generation": _Table({
        "name": _STR, "title": _STR, "covers_min": _STR, "covers_max": _STR,
        "form": _req("str", "offset", "access_ptr"),
        "size_meaning": _req("str", "bytes", "num_elems"), "widths": _req("ints"),
        "size_literal": _req("bool"), "same_width": _req("bool"),
        # the access pointers' masks: required when form = "access_ptr"
        "dst_rw_mask": _opt("int"), "src_rw_mask": _opt("int"),
        # the release's thread-sync pass fails on some access-pointer copies in a loop into merged dynamic
        # shared memory (seen, not characterised): the verifier does not prove such a site
        "loop_merged_sync_fails": _opt("bool"),
    }),
    "python": _Table({
        "params": _STRS,
        # required when form = "access_ptr"
        "access_ptr": _opt("str"), "type_annotation": _opt("str"),
        # T.access_ptr(buf[index], rw, extent): dst_rw and src_rw required with buffer_access_ptr
        "buffer_access_ptr": _opt("str"), "dst_rw": _opt("str"), "src_rw": _opt("str"),
        # an expression of a dtype's bits at kernel build time, where the size need not be a literal
        "dtype_bits": _opt("str"),
        # the loop (T.<name>(N)) inside which the compiler widens the call by its N lanes
        "widening_loop": _opt("str"),
    }),
    "cpp": _Table({"args": _STRS, "arity": _req("ints"), "num_inputs": _req("int|ints"),
                   "size_meaning_per_op": _Data(required=False, kind="str"), "tl_access_ptr": _opt("str")}),
    "step": _Table({"from": _STR}, required=False),  # every generation but the first
})

_DECLARATION = _Table({"position": _INT, "keyword": _STR, "default": _opt("str")})

_LAYOUTS = {
    "dtypes.toml": _Table({**_HEAD, "sizes": _Data(kind="int"), "aliases": _Data(kind="str")}),
    "namespaces.toml": _Table({
        **_HEAD,
        "intrinsic": _Table({"name": _STR}),
        "suppress": _Table({"comment": _STR}),
        "tilelang": _Table({"modules": _STRS, "emit_module": _STR, "emit_alias": _STR, "emit_fallback_alias": _STR}),
        "tvm": _Table({"modules": _STRS}),
        "attributes": _Data(kind="str"),
        "presence": _Data(required=False, kind="strs"),
        "declarations": _Data(values=_DECLARATION),
    }),
    "shared_memory.toml": _Table({
        **_HEAD,
        "merged_scope": _STR, "static_scope": _STR, "min_allocations": _INT, "static_merge_config": _STR,
        "allocations": _Data(values=_Table({"position": _INT, "keyword": _STR, "default": _STR})),
        "allocations_forced": _Data(values=_Table({"dtypes": _STRS, "scope": _STR})),
        "uses": _Table({"annotations": _STRS}),
        "workspaces": _Table({"ops": _STRS}),
        "functions": _Table({"prim_func": _STRS, "macro": _STRS, "python_builtins": _STRS}),
    }),
    "python_api.toml": _Table({
        **_HEAD,
        "definition": _Table({"forwards_to": _STRS, "op": _STR,
                              "emit": _Data(values=_Table({"params": _STR, "body": _STR}))}),
        "helpers": _Table({"names": _STRS, "offset_param": _STR, "op": _STR,
                           "printed_join": _opt("strs")}),
        "upstream": _Data(kind="str"),
    }),
    "cpp.toml": _Table({
        **_HEAD,
        "op": _Table({
            "qualifiers": _STRS, "call_constructors": _STRS, "array_types": _STRS, "append_methods": _STRS,
            "op_types": _STRS, "ops": _Data(kind="str"), "access_pointer_calls": _STRS, "access_pointer_name": _STR,
            "getters": _opt("strs"), "registered": _Data(required=False, kind="str"),
            "context": _Table({"default": _STR, "namespaces": _Data(kind="str"), "using": _Data(kind="str")}),
        }),
        "consumer": _Table({"same_as": _STR, "op_field": _STR, "args_field": _STR, "check_macros": _STRS,
                            "condition_macros": _STRS, "offset_join": _STRS, "offset_name": _STR}),
        "roles": _Data(kind="str"),
        "emit": _Table({
            **{k: _STR for k in ("call", "args", "args_rest", "builtin_scope", "pointer_dtype", "pointer_dtype_helper",
                                 "pointer_dtype_helper_name", "data_field", "extent", "size_primexpr", "hoist_dtype",
                                 "hoist_access_ptr", "hoist_pointer_type", "hoist_dtype_from_pointer")},
            "var_types": _STRS, "size_wrappers": _STRS, "hoist_names": _STRS, "pure_calls": _STRS,
            "hoist_pointer_names": _STRS}),
        "registration": _Table({"arity_method": _STR, "macros": _Data(kind="str")}),
        "helpers": _Table({"names": _STRS, "pointer_param": _STR, "offset_param": _STR, "op": _STR, "exclude": _STR}),
    }),
}


def _check_value(value, spec: _Key, path: Path, label: str, key: str) -> None:
    """Refuse a value of the wrong kind, or not one of the key's choices, naming the file and the key."""
    what, ok = _KINDS[spec.kind]
    if not ok(value):
        raise RulesError(f"{path}: {key} = {value!r} in {label}: expected {what}")
    if spec.choices and value not in spec.choices:
        raise RulesError(f"{path}: {key} = {value!r} in {label}: expected one of {', '.join(map(repr, spec.choices))}")


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
            _check_value(value, spec, path, label, key)
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
        elif spec.kind is not None:
            for item, inner in value.items():
                if isinstance(inner, dict):
                    raise RulesError(f"{path}: {item!r} in [{name}] is a table; expected a value")
                _check_value(inner, spec.kind, path, f"[{name}]", repr(item) if "." in item else item)
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
        loop_merged_sync_fails=bool(g.get("loop_merged_sync_fails", False)),
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


# Every file a rules folder must hold: the files whose values the code reads (each layout of ``_LAYOUTS``;
# cpp.toml is read again by cpp/cpprules.py) and the first generation.  The values are read from them
# directly: no value of theirs has a second home in the code.
REQUIRED_FILES = ("legacy.toml", *sorted(_LAYOUTS))


def _check_forced_declared(smem: dict, namespaces: dict, d: Path) -> None:
    """Every allocation whose scope its dtype forces (shared_memory.toml ``[allocations_forced]``) has its
    dtype argument declared (namespaces.toml ``[declarations]``): the shared-memory reader finds it there."""
    for name in smem["allocations_forced"]:
        if name not in namespaces["declarations"]:
            raise RulesError(f"{d / 'shared_memory.toml'}: [allocations_forced] {name!r} has no entry in "
                             f"[declarations] of {d / 'namespaces.toml'} (where its dtype argument is)")


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
    missing = [n for n in REQUIRED_FILES if n not in versions]
    if missing:
        raise RulesError(f"{d}: rules are incomplete: {', '.join(missing)} missing (a rules folder holds "
                         f"{', '.join(REQUIRED_FILES)} and the generations stepping from legacy)")
    if "legacy" not in gens:
        raise RulesError(f"{d / 'legacy.toml'}: [generation] name is not 'legacy' (the first generation's name)")
    dtypes, namespaces = named["dtypes.toml"], named["namespaces.toml"]
    _check_forced_declared(named["shared_memory.toml"], namespaces, d)
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
        attributes=dict(namespaces["attributes"]),
        emit_module=namespaces["tilelang"]["emit_module"],
        emit_alias=namespaces["tilelang"]["emit_alias"],
        emit_fallback_alias=namespaces["tilelang"]["emit_fallback_alias"],
        intrinsic=namespaces["intrinsic"]["name"],
        suppress_comment=namespaces["suppress"]["comment"],
        declarations=dict(namespaces["declarations"]),
        directory=str(d),
        versions=versions,
        shared_memory=named["shared_memory.toml"],
        python_api=named["python_api.toml"],
        presence={k: tuple(v) for k, v in namespaces.get("presence", {}).items()},
    )
