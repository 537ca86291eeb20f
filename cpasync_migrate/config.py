"""``[tool.cpasync-migrate]`` of the nearest pyproject.toml that has the table, merged under the command line.

Every mistake in the file is a :class:`ConfigError` whose message is one line naming the file and
the key; the command line turns it into exit code 3 (never a traceback).
"""
from __future__ import annotations

import errno
import os
import stat
import tomllib
from pathlib import Path
from typing import Optional

from . import small_files
from .errors import ConfigError
from .options import config_checks

# The most a configuration file may set max-file-size to (0 or more from a file means this): the file may
# be the scanned tree's.  Only --max-file-size lifts it.  (1 MB of dense kernels took 74-88 s and 1.4 GB.)
CONFIG_MAX_FILE_SIZE = 4 << 20

# key -> (what the value must be, in words; a check): from the option table (options.py)
KEYS = config_checks()

# A switch (CPASYNC_MIGRATE_DIR_CONFIG=0: every file's configuration is looked up from its own real path,
# one os.path.realpath per file, as before; a measuring switch).  On: a file that is not a link takes the
# configuration of its folder as written, looked up once per folder (Configs._for_file).
DIR_CONFIG = os.environ.get("CPASYNC_MIGRATE_DIR_CONFIG", "1") != "0"

# A switch (CPASYNC_MIGRATE_WALK_FACTS=0: as before; a measuring switch).  On: what the walk saw of each
# folder it listed (discovery._walk's ``folders``: reached through no link, whether it holds a regular
# pyproject.toml) stands for the ``lstat`` of the folder and the ``stat`` of its pyproject.toml that
# Configs._real_dir and Configs._for_folder make otherwise, and Run.keep finds a walked file's folder by
# cutting its name off (no os.path.dirname per file).  Only under DIR_CONFIG.
WALK_FACTS = os.environ.get("CPASYNC_MIGRATE_WALK_FACTS", "1") != "0"

# A switch (CPASYNC_MIGRATE_FOLDER_INHERIT=0: as before; a measuring switch).  On: a folder the walk listed
# and saw without any pyproject.toml entry has the configuration of its parent folder as written, taken from
# that folder's answer (Configs._for_file) instead of a lookup from its real path.  Only under WALK_FACTS.
FOLDER_INHERIT = os.environ.get("CPASYNC_MIGRATE_FOLDER_INHERIT", "1") != "0"


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


def _is_file(name: str) -> bool:
    """``Path(name).is_file()`` without building a Path: False where the name does not exist (or a part of it
    is not a folder, or a link loops), other errors raised."""
    try:
        return stat.S_ISREG(os.stat(name).st_mode)
    except OSError as e:
        if e.errno in (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP) or \
                getattr(e, "winerror", None) in (21, 123, 1921):
            return False
        raise
    except ValueError:
        return False


def has_table(path: Path) -> bool:
    """Whether a pyproject.toml has a ``[tool.cpasync-migrate]`` table (or any ``tool.cpasync-migrate``
    key, or a ``tool`` that is not a table: a malformed one is then an error of this file).  A file
    that is not UTF-8 TOML counts only where it names the tool (its error is then shown)."""
    try:
        raw = small_files.read(str(path), small_files.TOML_LIMIT)
    except small_files.Refused:
        return True  # too large (or no longer a regular file): load() says so
    except OSError:
        return False
    try:
        data = small_files.loads_toml(path, raw)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, small_files.Refused):
        return b"cpasync-migrate" in raw
    tool = data.get("tool")
    return tool is not None and (not isinstance(tool, dict) or "cpasync-migrate" in tool)


def load(path: Path, required: bool = False) -> dict:
    try:
        raw = small_files.read(str(path), small_files.TOML_LIMIT)
    except small_files.Refused as e:
        raise ConfigError(str(e)) from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise ConfigError(f"{path}: not UTF-8 (byte {e.start}, line {line}); TOML files must be UTF-8") from None
    try:
        data = small_files.loads_toml(path, raw)
    except small_files.Refused as e:
        raise ConfigError(str(e)) from None
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
    if "cache-dir" in out:  # a folder named in the file is relative to the file, and inside its folder
        out["cache-dir"], out["__cache_root__"] = _cache_dir_inside(path, out["cache-dir"])
    out["__file__"] = str(path)
    return out


def _cache_dir_inside(path: Path, value: str) -> tuple[str, str]:
    """(the folder, the project root) for ``cache-dir = value`` in ``path``: a relative path that stays
    inside the folder holding ``path`` (the project root) and meets no link there.  The file may be the
    scanned tree's, so it may not choose a place to write elsewhere (the command line and
    ``$CPASYNC_MIGRATE_CACHE_DIR`` may name any folder).  Writes re-check it (:mod:`.safe_write`)."""
    from . import safe_write

    root = os.path.dirname(os.path.abspath(path))
    rel = None if os.path.isabs(value) else safe_write.inside(value, root)
    elsewhere = ("a folder elsewhere is named by --cache-dir or $CPASYNC_MIGRATE_CACHE_DIR, never by the "
                 "scanned tree's configuration")
    if not rel:
        raise ConfigError(f"{path}: [tool.cpasync-migrate] cache-dir = {value!r} must name a folder inside "
                          f"{root} (the folder of this file), by a relative path; {elsewhere}")
    from .inputs import note

    note(os.path.join(root, *rel.split("/")))  # each folder on the way is looked at, maybe outside the walk (replay.py)
    link = safe_write.links_below(root, rel)
    if link is not None:
        raise ConfigError(f"{path}: [tool.cpasync-migrate] cache-dir = {value!r}: {link} is a link or not a "
                          f"folder; the cache folder must be reached without links; {elsewhere}")
    return os.path.join(root, *rel.split("/")), root


def _what(v) -> str:
    text = repr(v)
    if len(text) > 40:
        text = text[:37] + "..."
    kind = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list",
            dict: "a table"}.get(type(v), type(v).__name__)
    return f"{kind} ({' '.join(text.split())})"


# ------------------------------------------------------------------ excludes


_WILD = "*?["


def _norm_glob(g: str) -> str:
    g = g.replace("\\", "/") if os.sep == "\\" else g
    while g.startswith("./"):
        g = g[2:]
    return g


def glob_for_folder(glob: str, prefix: str) -> Optional[str]:
    """The exclude glob, written relative to its anchor folder, as a glob relative to a folder
    ``prefix`` below that anchor ("." : the anchor itself); None when it cannot match there.

    A glob without a ``/`` matches names, wherever they are, and stays as it is.  One whose literal
    start names the folder loses that start (``3rdparty/**`` seen from ``3rdparty/sub``: ``**``);
    one that starts with a wildcard stays as it is; one whose literal start leads elsewhere is dropped."""
    g = _norm_glob(glob)
    if "/" not in g.rstrip("/") or prefix in ("", "."):
        return g
    cut = min((g.index(c) for c in _WILD if c in g), default=len(g))
    lit = g[:cut]
    if not lit:
        return g
    pre = prefix.rstrip("/") + "/"
    if lit.startswith(pre):
        return g[len(pre):]
    if pre.startswith(lit):
        rest = g[len(lit):]
        return rest if rest.startswith("*") else g
    if lit.rstrip("/") == prefix.rstrip("/") and g[len(lit.rstrip("/")):] in ("", "/"):
        return "*"
    return None


def path_excluded(rel: str, globs) -> bool:
    """Whether a file at ``rel`` (relative to the globs' anchor, ``/``-separated) is excluded: a glob
    matches the path, one of its folders, or the name of the file or of one of its folders."""
    import fnmatch

    norm = os.path.normcase
    parts = rel.split("/")
    for g in globs:
        g = norm(_norm_glob(g))
        gd = g.rstrip("/")
        for i in range(1, len(parts) + 1):
            sub = norm("/".join(parts[:i]))
            name = norm(parts[i - 1])
            if fnmatch.fnmatchcase(sub, g) or fnmatch.fnmatchcase(name, g) or fnmatch.fnmatchcase(sub, gd):
                return True
    return False


# ------------------------------------------------------------------ per file


class Configs:
    """Each path's configuration: the nearest pyproject.toml with a ``[tool.cpasync-migrate]`` table at or
    above its folder (hierarchical, as ruff resolves it), each file read once; ``--config FILE`` stands for
    every path, ``--isolated`` for none."""

    def __init__(self, explicit: Optional[str], isolated: bool):
        self.isolated = isolated
        self.explicit = load(Path(explicit), required=True) if explicit and not isolated else None
        self._folders: dict = {}  # folder (real path) -> its configuration ({}: none)
        self._loaded: dict = {}  # pyproject.toml -> its configuration
        self._by_dir: dict = {}  # folder as written -> the configuration of the files in it (DIR_CONFIG)
        self._real_dirs: dict = {}  # folder as written -> its real path (DIR_CONFIG)
        # folder as written -> whether it holds a regular pyproject.toml (None: not known), for the folders a walk
        # listed below a folder argument (WALK_FACTS; discovery._walk fills it)
        self.walked: dict = {}

    def for_path(self, path: str, folder: bool = False, regular: bool = False) -> dict:
        """The configuration of a file (``folder``: of a folder) at ``path``; {} when none applies.
        ``regular``: the caller has seen that ``path`` is a regular file and not a link (a walk's entry),
        so no system call is made to learn it."""
        if self.isolated:
            return {}
        if self.explicit is not None:
            return self.explicit
        if DIR_CONFIG and not folder:
            found = self._for_file(path, regular)
            if found is not None:
                return found
        try:
            start = os.path.realpath(path)
            if not (folder or os.path.isdir(start)):
                start = os.path.dirname(start)
            return self._for_folder(start)
        except (OSError, RuntimeError, ValueError):  # a link loop, a vanished folder: no configuration
            return {}

    def _for_file(self, path: str, regular: bool) -> Optional[dict]:
        """The configuration of a regular file that is not a link, from its folder as written (one lookup per
        folder, not per file); None for anything else (a link, a folder, a path that cannot be looked at),
        which :meth:`for_path` looks up from its real path.

        The same answer as that lookup: the real path of a name that is not a link is the real path of its
        folder joined with the name, so the file's real folder is its folder's real path."""
        try:
            if not regular and not stat.S_ISREG(os.lstat(path).st_mode):
                return None
            d = os.path.dirname(path)
            found = self._by_dir.get(d)
            if found is None:
                found = self._inherited(d) if FOLDER_INHERIT and self.walked.get(d) is False else None
                if found is None:
                    found = self._for_folder(self._real_dir(d), self.walked.get(d))
                self._by_dir[d] = found
            return found
        except (OSError, RuntimeError, ValueError):
            return None

    def _inherited(self, d: str) -> Optional[dict]:
        """The configuration of the files of folder ``d`` (as written), which the walk listed and saw without a
        ``pyproject.toml`` entry: that of the nearest folder above it that the walk did not see so (or whose
        answer is known), as :meth:`_for_file` gives it for a file there; None where no such folder lies above.

        The same answer as the lookup from ``d``'s real path: a listed folder is reached through entries
        that are not links, so its real path is its parent's real path joined with its name
        (:meth:`_real_dir`), and :meth:`_for_folder` passes a folder without a regular pyproject.toml on
        to that parent."""
        chain = []
        by_dir, walked = self._by_dir, self.walked
        cur = d
        while True:
            found = by_dir.get(cur)
            if found is not None:
                break
            if walked.get(cur) is not False:  # a folder with a pyproject.toml entry, or not listed: looked up
                found = self._for_folder(self._real_dir(cur), walked.get(cur))
                by_dir[cur] = found
                break
            chain.append(cur)
            up = os.path.dirname(cur)
            if up == cur or not up:
                return None
            cur = up
        for f in chain:
            by_dir[f] = found
        return found

    def _real_dir(self, d: str) -> str:
        """``os.path.realpath(d)`` for a folder as written, from its parent's (memoised): one ``lstat`` per
        folder where the name is not a link, instead of one per part of the path."""
        r = self._real_dirs.get(d)
        if r is None:
            parent, name = os.path.split(d)
            if parent and parent != d and name not in ("", ".", ".."):
                if d in self.walked:  # listed by the walk, reached through entries that are not links
                    plain = True
                else:
                    try:
                        plain = stat.S_ISDIR(os.lstat(d).st_mode)
                    except OSError:
                        plain = False
                r = os.path.join(self._real_dir(parent), name) if plain else os.path.realpath(d)
            else:
                r = os.path.realpath(d)
            self._real_dirs[d] = r
        return r

    def _for_folder(self, folder: str, listed: Optional[bool] = None) -> dict:
        """``listed``: whether ``folder`` holds a regular pyproject.toml, as a walk saw it (None: look)."""
        chain = []
        cur = folder
        while cur not in self._folders:
            chain.append(cur)
            name = os.path.join(cur, "pyproject.toml")
            seen, listed = listed, None  # what the walk saw is of the first folder only
            if (_is_file(name) if seen is None else seen) and has_table(Path(name)):
                found = self._loaded.get(name)
                if found is None:
                    found = self._loaded[name] = load(Path(name))
                break
            parent = os.path.dirname(cur)
            if parent == cur:
                found = {}
                break
            cur = parent
        else:
            found = self._folders[cur]
        for f in chain:
            self._folders[f] = found
        return found

    def for_run(self, paths) -> dict:
        """The configuration of the whole run (its keys that are not per file): that of the folder
        holding every path given, so the order of the arguments changes nothing (the current folder's
        where no path exists)."""
        real = []
        for p in paths:
            try:
                if os.path.exists(p):
                    real.append(os.path.realpath(p))
            except (OSError, ValueError):
                continue
        if not real:
            return self.for_path(os.getcwd(), folder=True)
        if len(real) == 1:
            return self.for_path(real[0])
        return self.for_path(os.path.commonpath(real), folder=True)

    def loaded(self) -> list:
        """The configuration files read so far."""
        return sorted(self._loaded)


def split_config_arguments(values) -> tuple[Optional[str], list]:
    """``--config`` values: (the one configuration file, the ``KEY = VALUE`` pairs).  A value naming an
    existing file, or without ``=``, is a file."""
    path, pairs = None, []
    for v in values or ():
        if os.path.isfile(v) or "=" not in v:
            if path is not None:
                raise ConfigError(f"--config {v}: a second configuration file (--config {path} was given); "
                                  "give one file, and KEY = VALUE pairs")
            path = v
        else:
            pairs.append(v)
    return path, pairs


def apply_overrides(args, pairs) -> None:
    """``--config KEY=VALUE``: a TOML key and value, checked as in the file, set as the matching option
    (a flag given on the command line wins over it)."""
    from .options import by_key

    options = by_key()
    for text in pairs:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"--config {text!r}: not a TOML KEY = VALUE pair: {' '.join(str(e).split())}") from None
        if len(data) != 1:
            raise ConfigError(f"--config {text!r}: expected one KEY = VALUE pair")
        [(k, v)] = data.items()
        if k not in KEYS:
            raise ConfigError(f"--config {text!r}: unknown key {k!r} (known: {', '.join(sorted(KEYS))})")
        what, ok = KEYS[k]
        if not ok(v):
            raise ConfigError(f"--config {text!r}: {k} must be {what}, not {_what(v)}")
        o = options[k]
        if o.kind.name == "codes":
            v = [",".join(v)]
        elif o.kind.name == "per-file-ignores":
            v = [(g, tuple(c)) for g, c in v.items()]
        elif o.kind.name == "globs":
            v = list(v)
        elif o.kind.name == "size":
            v = str(v)
        current = getattr(args, o.name, None)
        if current is None or current is False and o.kind.name == "bool" and o.default is False:
            setattr(args, o.name, v)
