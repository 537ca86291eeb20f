"""``[tool.cpasync-migrate]`` in the nearest pyproject.toml, merged under the command line.

Every mistake in the file is a :class:`ConfigError` whose message is one line naming the file and
the key; the command line turns it into exit code 2 (never a traceback).
"""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Optional

# key -> (what the value must be, in words; a check)
_STR = ("a string", lambda v: isinstance(v, str))
_BOOL = ("true or false", lambda v: isinstance(v, bool))
_GLOBS = ("a list of strings (glob patterns)", lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v))
KEYS = {
    "target": _STR,
    "from": _STR,
    "style": ("one of \"tvm_access_ptr\", \"access_ptr\"", lambda v: v in ("tvm_access_ptr", "access_ptr")),
    "exclude": _GLOBS,
    "extend-exclude": _GLOBS,
    "unsafe-fixes": _BOOL,
    "jobs": ("a whole number of at least 1", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1),
    "migrate-tvm": _BOOL,
    "cache": _BOOL,
    "cache-dir": ("a non-empty string", lambda v: isinstance(v, str) and v != ""),
    "max-file-size": ("a size in bytes (a whole number >= 0, or a string such as \"4MB\"; 0: no limit)",
                      lambda v: parse_size(v) is not None),
    "allow-read-only": _BOOL,
    "accept-partial-sets": _BOOL,
}


class ConfigError(Exception):
    pass


def parse_size(v) -> Optional[int]:
    """Bytes from 1048576, "1048576", "512k", "4MB", "1MiB" (K, M, G are powers of 1024); None when not a size."""
    import re

    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v if v >= 0 else None
    m = re.fullmatch(r"\s*(\d+)\s*([kmg]?)(?:i?b)?\s*", v, re.IGNORECASE) if isinstance(v, str) else None
    if m is None:
        return None
    return int(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]


def find_pyproject(start: Path) -> Optional[Path]:
    cur = start.resolve()
    if cur.is_file():
        cur = cur.parent
    while True:
        cand = cur / "pyproject.toml"
        if cand.is_file():
            return cand
        if cur.parent == cur:
            return None
        cur = cur.parent


def load(path: Path, required: bool = False) -> dict:
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise ConfigError(f"{path}: not UTF-8 (byte {e.start}, line {line}); TOML files must be UTF-8") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {' '.join(str(e).split())}") from None
    tool = data.get("tool")
    if tool is not None and not isinstance(tool, dict):
        raise ConfigError(f"{path}: key 'tool' must be a table ([tool]), not {_what(tool)}")
    section = (tool or {}).get("cpasync-migrate")
    if section is None:
        if required:
            raise ConfigError(f"{path}: no [tool.cpasync-migrate] section")
        return {}
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: key 'tool.cpasync-migrate' must be a table ([tool.cpasync-migrate]), "
                          f"not {_what(section)}")
    out = {}
    for k, v in section.items():
        if k not in KEYS:
            raise ConfigError(f"{path}: unknown key {k!r} in [tool.cpasync-migrate] (known: {', '.join(sorted(KEYS))})")
        what, ok = KEYS[k]
        if not ok(v):
            raise ConfigError(f"{path}: [tool.cpasync-migrate] {k} must be {what}, not {_what(v)}")
        out[k] = v
    if "max-file-size" in out:
        out["max-file-size"] = parse_size(out["max-file-size"])
    if "cache-dir" in out:  # a folder named in the file is relative to the file
        out["cache-dir"] = str(path.resolve().parent / out["cache-dir"])
    out["__file__"] = str(path)
    return out


def _what(v) -> str:
    text = repr(v)
    if len(text) > 40:
        text = text[:37] + "..."
    kind = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list",
            dict: "a table"}.get(type(v), type(v).__name__)
    return f"{kind} ({' '.join(text.split())})"
