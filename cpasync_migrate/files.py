"""File discovery, faithful reading and atomic writing.

Discovery walks directories with ``os.scandir``, honours ``.gitignore`` files
(a practical subset of git's rules: negation, anchoring, directory-only
patterns, ``*``, ``?``, ``[...]`` and ``**``), skips VCS, virtual-environment,
build and cache folders, and applies ``--exclude`` globs.  Explicit file
arguments are always processed.

Reading keeps everything needed to write the file back byte for byte:
the encoding (PEP 263 cookie for Python, UTF-8 otherwise), a BOM, and the
newline style (text is decoded without newline translation).
"""
from __future__ import annotations

import codecs
import fnmatch
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Optional

NEEDLE = b"ptx_cp_async"

PYTHON_SUFFIXES = (".py", ".pyi")
CPP_SUFFIXES = (".cc", ".cpp", ".cxx", ".h", ".hpp", ".cu", ".cuh")

SKIP_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".bzr", "_darcs", ".jj",
        "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis",
        ".tox", ".nox", ".eggs", "node_modules", "site-packages",
        ".venv", "venv", ".env", "env",  # also any folder holding pyvenv.cfg
        "build", "dist", "_build", ".cache", ".ipynb_checkpoints",
    }
)


class FileError(Exception):
    def __init__(self, path: str, message: str, line: Optional[int] = None):
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message
        self.line = line


# ---------------------------------------------------------------- gitignore


class _Pattern:
    __slots__ = ("negate", "dir_only", "regex", "base", "name_only")

    def __init__(self, line: str, base: str):
        self.base = base  # directory (relative to the walk root, "" for root) holding the .gitignore
        self.negate = line.startswith("!")
        if self.negate:
            line = line[1:]
        if line.startswith("\\"):
            line = line[1:]
        self.dir_only = line.endswith("/")
        line = line.rstrip("/")
        anchored = "/" in line
        line = line.lstrip("/")
        rx = _glob_to_regex(line)
        self.regex = re.compile(("^" if anchored else "^(?:.*/)?") + rx + "$")
        # Without a slash, "**" or a bracket (whose negation would match "/"), the pattern can only
        # match a whole last path component: then matching the name alone gives the same answer.
        self.name_only = None if anchored or "**" in line or "[" in line else rx

    def matches(self, rel: str, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        if self.base:
            if not rel.startswith(self.base + "/"):
                return False
            rel = rel[len(self.base) + 1 :]
        return bool(self.regex.match(rel))


def _glob_to_regex(pat: str) -> str:
    i, n, out = 0, len(pat), []
    while i < n:
        c = pat[i]
        if c == "*":
            if pat[i : i + 3] == "**/":
                out.append("(?:.*/)?")
                i += 3
                continue
            if pat[i : i + 2] == "**":
                out.append(".*")
                i += 2
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = pat.find("]", i + 1)
            if j == -1:
                out.append(re.escape(c))
            else:
                body = pat[i + 1 : j].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body + "]")
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _read_gitignore(directory: str, base: str) -> list[_Pattern]:
    try:
        with open(os.path.join(directory, ".gitignore"), encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    pats = []
    for raw in lines:
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        pats.append(_Pattern(line, base))
    return pats


def _ignored(patterns: list[_Pattern], rel: str, is_dir: bool) -> bool:
    ignored = False
    for p in patterns:
        if p.negate == ignored and p.matches(rel, is_dir):
            ignored = not p.negate
    return ignored


class _Filter:
    """The ``.gitignore`` patterns and ``--exclude`` globs in force in one folder, compiled for the walk.

    The walk asks about every folder and every source file, so instead of one regular expression
    (or three ``fnmatch`` calls) per pattern and entry it asks one alternation per group of
    patterns.  When none matches, the entry is kept, as the ordered evaluation would keep it.  When
    one does, the answer is "ignored" unless some pattern negates; then :func:`_ignored` decides,
    pattern by pattern in order.  An ``--exclude`` glob excludes a path that ``fnmatch`` matches it
    with, whose name it matches, or that lies below a folder it names.  Same answers as asking
    each pattern and glob in turn (tested).
    """

    __slots__ = ("patterns", "negations", "groups", "rel_rx", "name_rx")

    def __init__(self, patterns: list, excludes: tuple[str, ...]):
        self.patterns = patterns
        self.negations = any(p.negate for p in patterns)
        grouped: dict = {}
        for p in patterns:
            on_name = p.name_only is not None
            grouped.setdefault((p.base, p.dir_only, on_name), []).append(p.name_only if on_name else p.regex.pattern)
        self.groups = []  # (folder prefix, dir_only, matched against the name, alternation)
        for (base, dir_only, on_name), rxs in grouped.items():
            alt = "|".join(f"(?:{x})" for x in rxs)
            self.groups.append((base + "/" if base else "", dir_only, on_name, re.compile(f"(?:{alt})$" if on_name else alt)))
        norm = os.path.normcase
        self.rel_rx = self.name_rx = None
        if excludes:
            rel = [fnmatch.translate(norm(g)) for g in excludes]
            rel += [fnmatch.translate(norm(g.rstrip("/") + "/*")) for g in excludes]
            self.rel_rx = re.compile("|".join(f"(?:{x})" for x in rel))
            self.name_rx = re.compile("|".join(f"(?:{fnmatch.translate(norm(g))})" for g in excludes))

    def skip(self, rel: str, name: str, is_dir: bool) -> bool:
        if self.rel_rx is not None:
            norm = os.path.normcase
            if self.rel_rx.match(norm(rel)) or self.name_rx.match(norm(name)):
                return True
        for base, dir_only, on_name, rx in self.groups:
            if dir_only and not is_dir or base and not rel.startswith(base):
                continue
            if rx.match(name) if on_name else rx.match(rel[len(base):]):
                break
        else:
            return False
        return True if not self.negations else _ignored(self.patterns, rel, is_dir)


def _git_root_patterns(start: Path) -> tuple[Optional[Path], list[_Pattern]]:
    """.gitignore files of the enclosing repository above ``start`` (outermost first)."""
    chain = []
    cur = start.resolve()
    root = None
    while True:
        chain.append(cur)
        if (cur / ".git").exists():
            root = cur
            break
        if cur.parent == cur:
            break
        cur = cur.parent
    if root is None:
        return None, []
    pats: list[_Pattern] = []
    chain.reverse()
    for d in chain[:-1]:  # the start folder's own .gitignore is read by the walk
        rel_to_start = os.path.relpath(d, start.resolve())
        # express the parent's patterns relative to `start`: only unanchored ones still apply
        for p in _read_gitignore(str(d), ""):
            if p.regex.pattern.startswith("^(?:.*/)?"):
                pats.append(p)
        del rel_to_start
    return root, pats


def discover(
    paths: Iterable[str],
    suffixes: tuple[str, ...],
    excludes: tuple[str, ...] = (),
    respect_gitignore: bool = True,
    errors: Optional[list] = None,
) -> Iterator[str]:
    """Yield candidate files (explicit files first in argument order; a folder's files in no set order).

    A folder that cannot be listed is appended to ``errors`` as (path, reason), when given.
    """
    seen: set[str] = set()
    for arg in paths:
        p = Path(arg)
        if p.is_file() or not p.exists():
            # explicit files are always processed (a missing one is reported by the reader)
            if arg not in seen:
                seen.add(arg)
                yield arg
            continue
        outer = _git_root_patterns(p)[1] if respect_gitignore else []
        for f in _walk(str(p), outer, suffixes, excludes, respect_gitignore, errors):
            if f not in seen:
                seen.add(f)
                yield f


def _walk(top: str, outer: list[_Pattern], suffixes, excludes, respect_gitignore,
          errors: Optional[list] = None) -> Iterator[str]:
    """Files under ``top`` in scope, in no particular order (callers sort what they report).

    One ``scandir`` per folder and no other system call: a folder's own ``.gitignore`` and
    ``pyvenv.cfg`` are seen among its entries, and ``rel`` paths are built only when a
    pattern or an exclude needs them.
    """
    stack = [("", outer)]
    filters: dict = {}  # id of a pattern list -> its compiled filter (sibling folders share one list)
    while stack:
        rel_dir, pats = stack.pop()
        full_dir = os.path.join(top, rel_dir) if rel_dir else top
        try:
            with os.scandir(full_dir) as it:
                entries = list(it)
        except OSError as e:
            if errors is not None:
                errors.append((full_dir, e.strerror or str(e)))
            continue
        names = [e.name for e in entries]
        if rel_dir and "pyvenv.cfg" in names:
            continue  # a virtual environment, whatever its folder is called
        if respect_gitignore and ".gitignore" in names:
            own = _read_gitignore(full_dir, rel_dir)
            if own:
                pats = pats + own
        filt = None
        if pats or excludes:
            filt = filters.get(id(pats))
            if filt is None or filt.patterns is not pats:
                filt = filters[id(pats)] = _Filter(pats, excludes)
        for e in entries:
            name = e.name
            try:
                is_dir = e.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if name in SKIP_DIRS or name.endswith(".egg-info"):
                    continue
                rel = f"{rel_dir}/{name}" if rel_dir else name
                if filt is not None and filt.skip(rel, name, True):
                    continue
                stack.append((rel, pats))
            elif name.endswith(suffixes):
                if filt is not None and filt.skip(f"{rel_dir}/{name}" if rel_dir else name, name, False):
                    continue
                yield e.path


# ---------------------------------------------------------------- reading


@dataclass
class SourceFile:
    path: str
    raw: bytes
    text: str
    encoding: str  # codec used to decode (without BOM handling)
    bom: bytes  # b"" or the BOM that preceded the text
    mode: int


_COOKIE_RE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


def _python_encoding(raw: bytes) -> str:
    for line in raw.split(b"\n", 2)[:2]:
        m = _COOKIE_RE.match(line)
        if m:
            return m.group(1).decode("ascii")
        if line.strip() and not line.lstrip().startswith(b"#"):
            break
    return "utf-8"


def read_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        raise FileError(path, "no such file") from None
    except IsADirectoryError:
        raise FileError(path, "is a directory") from None
    except PermissionError:
        raise FileError(path, "permission denied (cannot read)") from None
    except OSError as e:
        raise FileError(path, f"cannot read: {e.strerror or e}") from None


def decode(path: str, raw: bytes, python: bool) -> SourceFile:
    if b"\x00" in raw[:8192]:
        raise FileError(path, "binary file (contains NUL bytes); not a source file")
    bom = b""
    if raw.startswith(codecs.BOM_UTF8):
        bom = codecs.BOM_UTF8
    encoding = _python_encoding(raw[len(bom):]) if python else "utf-8"
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise FileError(path, f"unknown encoding {encoding!r} declared", 1) from None
    if bom and codecs.lookup(encoding).name != "utf-8":
        raise FileError(path, f"UTF-8 BOM together with a {encoding!r} coding cookie", 1)
    try:
        text = raw[len(bom):].decode(encoding)
    except UnicodeDecodeError as e:
        line = raw[len(bom):][: e.start].count(b"\n") + 1
        raise FileError(path, f"cannot decode as {encoding} at byte {e.start + len(bom)}", line) from None
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mode = 0o644
    return SourceFile(path, raw, text, encoding, bom, mode)


def encode(src: SourceFile, text: str) -> bytes:
    return src.bom + text.encode(src.encoding)


def atomic_write(src: SourceFile, text: str) -> None:
    """Write ``text`` back with the file's encoding, BOM and permission bits.

    Refuses when the file changed on disk since it was read.
    """
    data = encode(src, text)
    path = src.path
    try:
        with open(path, "rb") as fh:
            current = fh.read()
    except OSError as e:
        raise FileError(path, f"cannot re-read before writing: {e.strerror or e}") from None
    if current != src.raw:
        raise FileError(path, "changed on disk since it was read; not overwritten")
    import tempfile  # write mode only: kept off the start-up of a run that writes nothing

    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = None, None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".cpasync-", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "wb") as fh:
            fd = None
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, src.mode)
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        raise FileError(path, f"cannot write: {e.strerror or e}") from None
    finally:
        if fd is not None:
            os.close(fd)
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
