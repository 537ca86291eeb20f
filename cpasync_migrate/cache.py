"""Results cache: one file's analysis, remembered under a key of everything it depends on.

A file that contains the intrinsic's name is parsed and analysed; that is most of the cost of
a run over a large tree.  The analysis is a pure function of the file's bytes, its path, its
language, the options that change results (those options.py marks so: target, source generation, style,
--migrate-tvm, line length), the rules,
the Python version and the code of the tool and of its parsers (libcst, tree-sitter and its C++
grammar), and, for Python, whether the ``ast`` pass may have made its fixes (``key``'s ``ast_fixes``), so the
key is a SHA-256 over all of them, each by content (an edited rule, an edited
tool or another build of a parser never reads an old entry).  No modification time plays a
part: a fresh CI checkout and a fresh install of the same tool with a restored cache hit.

Entries are JSON (never pickle: a cache directory restored in CI must not be able to run
code), written atomically; an entry that cannot be read or does not have the expected shape
is a miss.  The cache only ever saves work: the engine still chooses the fixes, applies them
and, in write mode, analyses every file afresh and re-parses the rewritten text before writing.

Only this machine's entries are used.  Each entry carries an HMAC-SHA256 over its key and its
JSON, made with a secret kept outside every tree (``$XDG_CACHE_HOME/cpasync-migrate/key``, else
``~/.cache/cpasync-migrate/key``; 32 random bytes, created once with mode 0600, ``O_EXCL`` and no
link followed); an entry whose MAC does not check (one committed to the scanned repository, one
another machine wrote, an edited one) is a miss.  Without a usable key the cache is neither read
nor written.  Every file of the cache is written and read through :mod:`.safe_write` (no link
followed); the prune deletes only entry files (``??/<62 hex digits>.json``) inside the folder.
"""
from __future__ import annotations

import hmac
import json
import os
import re
from typing import Optional

from . import safe_write
from .findings import Analysis, Applicability, Edit, Finding, Fix, Status

FORMAT = 2  # 2: entries carry a MAC
ENV = "CPASYNC_MIGRATE_CACHE_DIR"
KEY_BYTES = 32
MAX_ENTRY_BYTES = 64 << 20  # a larger file under an entry's name is a miss, never read whole
# an entry's file is one JSON object: {"mac":"<64 hex digits>","v":<the value, as written>}; the MAC is
# over the value's exact bytes
_HEAD, _TAIL = b'{"mac":"', b'","v":'
_BODY_AT = len(_HEAD) + 64 + len(_TAIL)


def default_dir() -> Optional[str]:
    """``$CPASYNC_MIGRATE_CACHE_DIR``, else ``$XDG_CACHE_HOME/cpasync-migrate/results``, else ``~/.cache/...``;
    None (no cache) when there is no home folder to put it in."""
    env = os.environ.get(ENV)
    if env:
        return env
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        home = os.path.expanduser("~")
        if home.startswith("~"):
            return None  # never a folder named "~" in the current directory
        base = os.path.join(home, ".cache")
    return os.path.join(base, "cpasync-migrate", "results")


def key_dir() -> Optional[str]:
    """The folder of the MAC key: ``$XDG_CACHE_HOME/cpasync-migrate``, else ``~/.cache/cpasync-migrate``
    (never the results folder, which the command line or a tree's configuration may place in a tree);
    None when there is no home folder."""
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        home = os.path.expanduser("~")
        if home.startswith("~"):
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "cpasync-migrate")


_KEYS: dict = {}


def mac_key() -> Optional[bytes]:
    """This machine's secret (read once per process and folder; made on first use); None when it cannot
    be read or made (then the cache is off)."""
    where = key_dir()
    if where not in _KEYS:
        _KEYS[where] = None if where is None else _load_key(where)
    return _KEYS[where]


def _load_key(where: str) -> Optional[bytes]:
    try:
        fd = safe_write.open_dir(where, mode=0o700)
    except OSError:
        return None
    try:
        data = safe_write.read_at(fd, "key", limit=KEY_BYTES)
        if data is None:
            try:
                safe_write.create_at(fd, "key", os.urandom(KEY_BYTES), 0o600)
            except OSError:
                return None
            data = safe_write.read_at(fd, "key", limit=KEY_BYTES)
        return data if data is not None and len(data) == KEY_BYTES else None
    finally:
        os.close(fd)


def _mac(secret: bytes, k: str, body: bytes) -> bytes:
    return hmac.digest(secret, k.encode("ascii", "replace") + b"\0" + body, "sha256").hex().encode()


_ROOTS: dict = {}  # results folder -> the project root a tree's configuration must keep it inside


def _open(directory: str, create: bool) -> int:
    return safe_write.open_dir(directory, under=_ROOTS.get(directory), create=create)


def _open_sub(directory: str, name: str, create: bool) -> int:
    """The entry folder ``name`` of the results folder, opened without following a link."""
    return safe_write.open_child(directory, name, under=_ROOTS.get(directory), create=create)


_SALT: dict = {}


def _salt(rules_dir: Optional[str]) -> bytes:
    """Digest of the tool's code, the parsers it uses and the rules in use (once per process).

    Every part is identified by what it holds, not by when it was written, so a fresh install of
    the same versions (a CI job that installs the tool on every run and restores the cache) reads
    the entries an earlier install wrote: the tool's own files and the rules are hashed by
    content; a parser package by the file hashes its installed ``RECORD`` lists (pip writes them
    from the wheel).  A parser package with no such list (an editable checkout) falls back to the
    name, size and modification time of its files.
    """
    import hashlib
    import importlib.util
    import sys

    from .rules import RULES_ENV, rules_dir as default_rules

    memo = (rules_dir, os.environ.get(RULES_ENV))  # the folder is looked up once per process and setting
    if memo in _SALT:
        return _SALT[memo]
    folder = rules_dir or str(default_rules())
    if folder not in _SALT:
        h = hashlib.sha256(f"cpasync-migrate cache {FORMAT}\0{sys.version}\0".encode())
        h.update(package_digest("cpasync_migrate", os.path.dirname(os.path.abspath(__file__)), own=True))
        for dep in ("libcst", "tree_sitter", "tree_sitter_cpp"):
            spec = importlib.util.find_spec(dep)
            for loc in (spec.submodule_search_locations or []) if spec else []:
                h.update(package_digest(dep, loc, own=False))
        for name in sorted(os.listdir(folder)):
            if name.endswith(".toml"):
                with open(os.path.join(folder, name), "rb") as fh:
                    data = fh.read()
                h.update(f"rules/{name}:{len(data)}\0".encode() + data)
        _SALT[folder] = h.digest()
    _SALT[memo] = _SALT[folder]
    return _SALT[folder]


def package_digest(label: str, location: str, own: bool) -> bytes:
    """What identifies one package's code in the salt (a line of text, ending in a NUL byte).

    ``own``: every file below ``location`` (bytecode caches left out), hashed by content.  Otherwise
    the hashed file list of the distribution that installed it, when one covers the package;
    failing that, the name, size and modification time of each file at its top level.
    """
    import hashlib

    if own:
        h = hashlib.sha256()
        for root, dirs, names in os.walk(location):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(names):
                full = os.path.join(root, name)
                with open(full, "rb") as fh:
                    data = fh.read()
                h.update(f"{os.path.relpath(full, location)}:{len(data)}\0".encode() + data)
        return f"{label}:content:{h.hexdigest()}\0".encode()
    listed = _record_lines(location)
    if listed:
        return f"{label}:record:".encode() + hashlib.sha256("\n".join(listed).encode()).hexdigest().encode() + b"\0"
    parts = [f"{label}:stat"]
    for name in sorted(os.listdir(location)):
        full = os.path.join(location, name)
        if os.path.isfile(full):
            st = os.stat(full)
            parts.append(f"{name}:{st.st_size}:{st.st_mtime_ns}")
    return "\0".join(parts).encode() + b"\0"


def _record_lines(location: str) -> list[str]:
    """The ``RECORD`` lines (path, hash, size) of the package at ``location`` that carry a hash.

    The distribution is the ``<name>-<version>.dist-info`` folder beside the package.  Empty when
    there is none or its list does not name the package's files (an editable install lists only
    its path hook), so that the caller falls back to file metadata.
    """
    base, pkg = os.path.split(os.path.normpath(location))
    try:
        infos = sorted(n for n in os.listdir(base) if n.endswith(".dist-info") and n.startswith(pkg + "-"))
    except OSError:
        return []
    for info in infos:
        try:
            with open(os.path.join(base, info, "RECORD"), encoding="utf-8") as fh:
                rows = fh.read().splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        listed = sorted(r for r in rows if r.startswith(pkg + "/") and ",sha256=" in r)
        if listed:
            return listed
    return []


def prepare(settings, confine_to: Optional[str] = None) -> bool:
    """Compute the salt and read the MAC key now (before worker processes are forked, so they inherit
    them); False when there is no usable key (the caller then runs without the cache).
    ``confine_to``: the folder was named by a scanned tree's configuration and must be reached inside
    that project root without a link (:func:`.safe_write.open_dir`)."""
    if not settings.cache_dir:
        return False
    if confine_to is None:
        _ROOTS.pop(settings.cache_dir, None)
    else:
        _ROOTS[settings.cache_dir] = confine_to
    _salt(settings.rules_dir)
    return mac_key() is not None


def salt(settings) -> bytes:
    """The digest every key of this run starts from (the tool's code, its parsers, the rules)."""
    return _salt(settings.rules_dir)


def key(settings, path: str, language: str, raw: bytes, kind: str = "analysis", line_length: int = 88,
        layout=None, ast_fixes: bool = False) -> str:
    """``ast_fixes``: the analysis may hold fixes the Python front end's ``ast`` pass made (``python.fast_fixes``);
    such an analysis is never read by a run that asks for libcst's fixes only (``CPASYNC_MIGRATE_FAST_WRITE=0``
    in write mode, ``--diff`` or ``--verify``), and the other way round."""
    import hashlib

    from .options import result_values

    h = hashlib.sha256(_salt(settings.rules_dir))
    # every option the table marks as changing results, by construction (the line length: the file's)
    opts = (kind, path, language, result_values(settings, line_length=line_length))
    if layout is not None:  # the C++ layout options (clang_format.py); absent for Python, keys unchanged
        opts = opts + (list(layout),)
    if ast_fixes:  # which pass may have made the fixes (absent: libcst's only)
        opts = opts + ("ast-fixes",)
    h.update(json.dumps(opts).encode() + b"\0")
    h.update(raw)
    return h.hexdigest()


MAX_AGE_DAYS = 30  # an entry not read or written for this long is deleted
PRUNE_EVERY_S = 24 * 3600  # how often a run looks for such entries


_ENTRY = re.compile(r"[0-9a-f]{62}\.json")


def _read(directory: str, k: str):
    """The JSON value of entry ``k`` when its MAC checks under this machine's key (the entry is then
    marked as in use: not pruned); None otherwise."""
    secret = mac_key()
    if secret is None:
        return None
    try:
        sub = _open_sub(directory, k[:2], create=False)
    except OSError:
        return None
    try:
        raw = safe_write.read_at(sub, k[2:] + ".json", limit=MAX_ENTRY_BYTES, touch=True)
    finally:
        os.close(sub)
    if (raw is None or not raw.startswith(_HEAD) or raw[_BODY_AT - len(_TAIL):_BODY_AT] != _TAIL
            or not raw.endswith(b"}")):
        return None
    body = raw[_BODY_AT:-1]
    if not hmac.compare_digest(raw[len(_HEAD):_BODY_AT - len(_TAIL)], _mac(secret, k, body)):
        return None  # not made by this machine (or edited since): a miss
    try:
        return json.loads(body)
    except ValueError:
        return None


def read_json(directory: str, k: str):
    """The JSON value stored under ``k``, or None (another module's entry: the stat memo)."""
    return _read(directory, k)


def write_json(directory: str, k: str, obj) -> None:
    _write(directory, k, obj)


def _write(directory: str, k: str, obj) -> None:
    """Best effort: a cache that cannot be written only costs time."""
    secret = mac_key()
    if secret is None:
        return
    body = json.dumps(obj, separators=(",", ":")).encode("utf-8", "surrogatepass")
    try:
        fd = _open(directory, create=True)
    except OSError:
        return
    try:
        try:
            sub = safe_write.open_subdir(fd, k[:2])
        except OSError:
            return
        try:
            safe_write.write_at(sub, k[2:] + ".json", _HEAD + _mac(secret, k, body) + _TAIL + body + b"}")
        except OSError:
            return
        finally:
            os.close(sub)
        _prune(fd)
    finally:
        os.close(fd)


def _prune(dir_fd: int, now: Optional[float] = None) -> None:
    """At most once a day: delete the entries nobody read or wrote for ``MAX_AGE_DAYS``.

    ``dir_fd``: the results folder, open.  Only entry files are deleted (``??/<62 hex>.json``,
    regular files), in sub-folders that are not links; the marker ``last-pruned`` is replaced,
    never written through."""
    import stat
    import time

    now = time.time() if now is None else now
    try:
        if now - os.stat("last-pruned", dir_fd=dir_fd, follow_symlinks=False).st_mtime < PRUNE_EVERY_S:
            return
    except OSError:
        pass
    try:
        safe_write.write_at(dir_fd, "last-pruned", ("the results cache of cpasync-migrate; entries unused for %d "
                                                    "days are deleted\n" % MAX_AGE_DAYS).encode())
        os.utime("last-pruned", (now, now), dir_fd=dir_fd, follow_symlinks=False)
        for sub in os.scandir(dir_fd):
            if len(sub.name) != 2 or not sub.is_dir(follow_symlinks=False):
                continue
            try:
                sfd = safe_write.open_subdir(dir_fd, sub.name, create=False)
            except OSError:
                continue
            try:
                for e in os.scandir(sfd):
                    if not _ENTRY.fullmatch(e.name) or not e.is_file(follow_symlinks=False):
                        continue
                    st = e.stat(follow_symlinks=False)
                    if stat.S_ISREG(st.st_mode) and now - st.st_mtime > MAX_AGE_DAYS * 86400:
                        os.unlink(e.name, dir_fd=sfd)
            finally:
                os.close(sfd)
    except OSError:
        pass


# ------------------------------------------------------------------ analyses


def _finding_dict(f: Finding) -> dict:
    fix = None
    if f.fix is not None:
        fix = {"edits": [[e.start, e.end, e.replacement] for e in f.fix.edits],
               "applicability": f.fix.applicability.value, "assumptions": list(f.fix.assumptions),
               "steps": list(f.fix.steps), "importers": {a: list(q) for a, q in f.fix.importers.items()},
               "set_established": f.fix.set_established, "needs_function": f.fix.needs_function}
    return {"line": f.line, "column": f.column, "end_line": f.end_line, "end_column": f.end_column,
            "code": f.code, "message": f.message, "function": f.function,
            "status": f.status.value if f.status is not None else None, "legacy_site": f.legacy_site,
            "severity": f.severity, "op": f.op, "role": f.role, "fix": fix}


def _finding(d: dict, path: str) -> Finding:
    fx = d["fix"]
    fix = None
    if fx is not None:
        fix = Fix(edits=[Edit(int(a), int(b), str(r)) for a, b, r in fx["edits"]],
                  applicability=Applicability(fx["applicability"]),
                  assumptions=[str(a) for a in fx["assumptions"]], steps=[str(s) for s in fx["steps"]],
                  importers={str(a): (str(q[0]), bool(q[1])) + ((dict(q[2]),) if len(q) > 2 else ())
                             for a, q in fx.get("importers", {}).items()},
                  set_established=bool(fx.get("set_established", False)),
                  needs_function=str(fx.get("needs_function", "")))
    return Finding(path=path, line=int(d["line"]), column=int(d["column"]), end_line=int(d["end_line"]),
                   end_column=int(d["end_column"]), code=str(d["code"]), message=str(d["message"]), fix=fix,
                   function=d["function"], status=Status(d["status"]) if d["status"] is not None else None,
                   legacy_site=bool(d["legacy_site"]), severity=d["severity"],
                   op=d.get("op"), role=d.get("role"))


def load_analysis(directory: str, k: str, path: str) -> Optional[Analysis]:
    d = _read(directory, k)
    try:
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            return None
        return Analysis(findings=[_finding(f, path) for f in d["findings"]], error=d["error"],
                        error_line=d["error_line"], error_column=d["error_column"],
                        migrated=[str(x) for x in d.get("migrated", [])])
    except (KeyError, TypeError, ValueError):
        return None


def store_analysis(directory: str, k: str, a: Analysis) -> None:
    _write(directory, k, {"format": FORMAT, "findings": [_finding_dict(f) for f in a.findings],
                          "error": a.error, "error_line": a.error_line, "error_column": a.error_column,
                          "migrated": list(a.migrated)})


def load_text(directory: str, k: str) -> tuple[bool, Optional[str]]:
    """(found, value) for a remembered string-or-None (the re-parse check of a rewrite)."""
    d = _read(directory, k)
    if isinstance(d, dict) and d.get("format") == FORMAT and "value" in d and (
            d["value"] is None or isinstance(d["value"], str)):
        return True, d["value"]
    return False, None


def store_text(directory: str, k: str, value: Optional[str]) -> None:
    _write(directory, k, {"format": FORMAT, "value": value})
