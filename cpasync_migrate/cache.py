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

The cache only ever saves work: the engine still chooses the fixes, applies them and, in write mode,
analyses every file afresh and re-parses the rewritten text before writing.  How entries are stored, signed
with this machine's key and pruned is ``cache_store.py``'s job; this module says what an entry holds and
under which key.
"""
from __future__ import annotations

import json
import os
from typing import Optional

from .cache_store import (  # noqa: F401 - the store's names, as callers and tests know them
    ENV, KEY_BYTES, MAX_AGE_DAYS, MAX_ENTRY_BYTES, PRUNE_EVERY_S, _ROOTS, _prune, _read, _write, default_dir, key_dir,
    mac_key, read_json, write_json)
from .findings import Analysis, Applicability, Edit, Finding, Fix, Status

FORMAT = 2  # 2: entries carry a MAC
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
