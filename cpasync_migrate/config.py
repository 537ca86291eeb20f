"""``[tool.cpasync-migrate]`` in the nearest pyproject.toml, merged under the command line."""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Optional

KEYS = {
    "target": str,
    "from": str,
    "style": str,
    "exclude": list,
    "extend-exclude": list,
    "unsafe-fixes": bool,
    "jobs": int,
    "migrate-tvm": bool,
    "cache": bool,
    "cache-dir": str,
}


class ConfigError(Exception):
    pass


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
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
    section = data.get("tool", {}).get("cpasync-migrate")
    if section is None:
        if required:
            raise ConfigError(f"{path}: no [tool.cpasync-migrate] section")
        return {}
    out = {}
    for k, v in section.items():
        if k not in KEYS:
            raise ConfigError(f"{path}: unknown key {k!r} in [tool.cpasync-migrate] (known: {', '.join(sorted(KEYS))})")
        if not isinstance(v, KEYS[k]):
            raise ConfigError(f"{path}: [tool.cpasync-migrate] {k} must be a {KEYS[k].__name__}")
        out[k] = v
    if "cache-dir" in out:  # a folder named in the file is relative to the file
        out["cache-dir"] = str(path.resolve().parent / out["cache-dir"])
    out["__file__"] = str(path)
    return out
