"""What a file is to the tool: its suffixes, the needles of the prefilter, faithful reading and
atomic writing (which files a run looks at: ``discovery.py``).

Reading keeps everything needed to write the file back byte for byte:
the encoding (PEP 263 cookie for Python, UTF-8 otherwise), a BOM, and the
newline style (text is decoded without newline translation).
"""
from __future__ import annotations

import codecs
import errno
import operator
import os
import re
import stat
from itertools import accumulate, count
from dataclasses import dataclass
from typing import Optional

# Byte strings one of which every file worth parsing contains: the intrinsic's name (NEEDLE, from
# rules/namespaces.toml, read when first asked), and the names of the helpers that carry its legacy
# layout without naming it (the Python runtime helpers of rules/python_api.toml, the C++ printer helpers
# of rules/cpp.toml; a test checks every name listed there contains one of these).
HELPER_NEEDLES = (b"cp_async_gs", b"CpAsyncAssembly")

def _marker_needle() -> bytes:
    """The suppression comment's marker (rules/namespaces.toml's [suppress] comment, up to its first ":"):
    a file with a suppression comment is read even if it names nothing else, so a comment that suppresses
    nothing there is reported (suppress.py)."""
    from .suppress import spelling

    return (spelling().marker + ":").encode("utf-8")


def _common_part(needles) -> bytes:
    """The longest byte string every needle contains (searched first: one pass rules most files out)."""
    first = min(needles, key=len)
    for n in range(len(first), 0, -1):
        for i in range(len(first) - n + 1):
            part = first[i : i + n]
            if all(part in x for x in needles):
                return part
    return b""


def _needles() -> tuple:
    """Set NEEDLE, NEEDLES and COMMON (the longest part every needle holds: b"sync") from the rules."""
    global NEEDLE, NEEDLES, COMMON
    from .rules import intrinsic_name

    NEEDLE = intrinsic_name().encode("ascii")
    NEEDLES = (NEEDLE, *HELPER_NEEDLES, _marker_needle())
    COMMON = _common_part(NEEDLES)
    return NEEDLES


def __getattr__(name: str):  # files.NEEDLE, files.NEEDLES, files.COMMON: computed on first use
    if name in ("NEEDLE", "NEEDLES", "COMMON"):
        _needles()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def has_needle(data) -> bool:
    needles = globals().get("NEEDLES") or _needles()
    return any(n in data for n in needles)

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


def describe_special(path: str) -> str:
    """What a path that is not a regular file is, in words ("a FIFO", "a symbolic link to a folder", ...)."""
    try:
        link = os.path.islink(path)
        st = os.stat(path)
    except OSError:
        return "a broken symbolic link" if os.path.islink(path) else "not readable"
    m = st.st_mode
    kind = ("a folder" if stat.S_ISDIR(m) else "a FIFO (named pipe)" if stat.S_ISFIFO(m) else
            "a socket" if stat.S_ISSOCK(m) else "a character device" if stat.S_ISCHR(m) else
            "a block device" if stat.S_ISBLK(m) else "a regular file" if stat.S_ISREG(m) else "not a regular file")
    if link:
        kind = "a symbolic link to " + kind
    return kind


@dataclass
class SourceFile:
    path: str
    raw: bytes
    text: str
    encoding: str  # codec used to decode (without BOM handling)
    bom: bytes  # b"" or the BOM that preceded the text
    mode: int
    newline: str = ""  # "\r": the file's lines end in a lone CR; ``text`` has "\n" in its place (same offsets)


_COOKIE_RE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


def _python_encoding(raw: bytes) -> str:
    for line in raw.split(b"\n", 2)[:2]:
        m = _COOKIE_RE.match(line)
        if m:
            return m.group(1).decode("ascii")
        if line.strip() and not line.lstrip().startswith(b"#"):
            break
    return "utf-8"


DEFAULT_MAX_FILE_SIZE = 1024 * 1024  # bytes; 0: no limit (see docs/safety.md; docs/benchmarks.md, "Big single files")

_OPEN_READ = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)


class TooLarge(FileError):
    """A regular file over the size limit; ``has_needle`` says whether it names the intrinsic."""

    def __init__(self, path: str, size: int, limit: int, has_needle: bool):
        super().__init__(path, f"{size} bytes, over the size limit of {limit} bytes; not analysed "
                               "(raise it with --max-file-size or max-file-size in [tool.cpasync-migrate], "
                               "0 for no limit)")
        self.size, self.limit, self.has_needle = size, limit, has_needle


def data_ranges(fd: int, start: int = 0) -> list:
    """(start, end) of each part of the regular file ``fd`` from ``start`` on that holds data: a sparse
    file's holes read as zeros, and no needle holds a zero byte, so a search may pass them over (a 10 GB
    file made by ``truncate`` is then searched in no time).  The whole rest where the system cannot say."""
    size = os.fstat(fd).st_size
    whole = [(start, size)] if start < size else []
    if not hasattr(os, "SEEK_DATA"):
        return whole
    out, off = [], start
    try:
        while off < size:
            d = os.lseek(fd, off, os.SEEK_DATA)
            h = os.lseek(fd, d, os.SEEK_HOLE)
            out.append((d, min(h, size)))
            off = h
    except OSError as e:
        if e.errno != errno.ENXIO:  # ENXIO: no data after off
            return whole
    return out


def _needle_in(fd: int) -> bool:
    import mmap

    try:
        needles = globals().get("NEEDLES") or _needles()
        ranges = data_ranges(fd)
        if not ranges:
            return False
        with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as m:
            return any(m.find(n, a, b) != -1 for a, b in ranges for n in needles)
    except (OSError, ValueError):
        return True  # cannot tell: treat it as a candidate (reported as too large)


def _read_fd(fd: int) -> bytes:
    parts = []
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            return b"".join(parts)
        parts.append(b)


def read_bytes(path: str) -> bytes:
    """The bytes of a regular file; anything else is an error (nothing that could block is opened
    in blocking mode)."""
    return _read(path, 0)


_GIVEN: dict = {}  # path -> bytes given in place of the file's (the text read from stdin, under its name)


def give(path: str, data: bytes) -> None:
    """Let :func:`read_source` answer ``data`` for ``path`` (``-`` with ``--stdin-filename``): the
    pipeline then treats the text as that file's, without the file being read (or having to exist)."""
    _GIVEN[path] = data


def read_source(path: str, max_size: int = 0) -> bytes:
    """:func:`read_bytes`, but a regular file over ``max_size`` bytes (0: no limit) is not read:
    :class:`TooLarge` says whether it names the intrinsic (searched through a memory map)."""
    if _GIVEN and path in _GIVEN:
        data = _GIVEN[path]
        if max_size and len(data) > max_size:
            raise TooLarge(path, len(data), max_size, has_needle(data))
        return data
    if max_size:
        try:
            st = os.stat(path)
        except OSError:
            st = None
        if st is not None and stat.S_ISREG(st.st_mode) and st.st_size > max_size:
            return _read(path, max_size)
    return read_bytes(path)


def _read(path: str, max_size: int) -> bytes:
    try:
        fd = os.open(path, _OPEN_READ)
    except FileNotFoundError:
        raise FileError(path, "no such file") from None
    except IsADirectoryError:
        raise FileError(path, "is a directory") from None
    except PermissionError:
        raise FileError(path, "permission denied (cannot read)") from None
    except OSError as e:
        raise FileError(path, f"cannot read: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise FileError(path, "is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise FileError(path, f"{describe_special(path)}, not a regular file; not read")
        if max_size and st.st_size > max_size:
            raise TooLarge(path, st.st_size, max_size, _needle_in(fd))
        return _read_fd(fd)
    except OSError as e:
        raise FileError(path, f"cannot read: {e.strerror or e}") from None
    finally:
        os.close(fd)


def decode(path: str, raw: bytes, python: bool, deep: bool = True) -> SourceFile:
    """The text of ``raw``, or a :class:`FileError`.  ``deep``: also refuse a text nested deeper than the
    front ends may analyse (:func:`nesting`); False only where that scan is known to pass on these bytes."""
    if b"\x00" in raw[:8192]:
        raise FileError(path, "binary file (contains NUL bytes); not a source file")
    bom = b""
    if raw.startswith(codecs.BOM_UTF8):
        bom = codecs.BOM_UTF8
    encoding = _python_encoding(raw[len(bom):]) if python else "utf-8"
    try:
        info = codecs.lookup(encoding)
    except LookupError:
        raise FileError(path, f"unknown encoding {encoding!r} declared", 1) from None
    if not getattr(info, "_is_text_encoding", True):  # rot13, base64, hex, zlib, ...: not bytes to text
        raise FileError(path, f"coding cookie names {encoding!r}, which is not a text encoding; not read", 1)
    if bom and info.name != "utf-8":
        raise FileError(path, f"UTF-8 BOM together with a {encoding!r} coding cookie", 1)
    try:
        text = raw[len(bom):].decode(encoding)
    except UnicodeDecodeError as e:
        line = raw[len(bom):][: e.start].count(b"\n") + 1
        raise FileError(path, f"cannot decode as {encoding} at byte {e.start + len(bom)}", line) from None
    newline = ""
    if "\r" in text and text.count("\r") != text.count("\r\n"):  # a lone CR: a line end to Python and to compilers
        if "\n" in text:
            raise FileError(path, "lone CR line ends mixed with LF line ends; not analysed (make the line ends "
                                  "one kind)", 1)
        text, newline = text.replace("\r", "\n"), "\r"  # one character for one: every offset stays
    too_deep = nesting(text, python) if deep else None
    if too_deep is not None:
        raise FileError(path, too_deep[0], too_deep[1])
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mode = 0o644
    return SourceFile(path, raw, text, encoding, bom, mode, newline)


def encode(src: SourceFile, text: str) -> bytes:
    if src.newline == "\r":
        text = text.replace("\n", "\r")
    return src.bom + text.encode(src.encoding)


# How deep a file may nest before it is not analysed: CPython's tokenizer refuses more than 200 open
# brackets (MAXLEVEL), clang more than 256 (-fbracket-depth); a run of prefix operators (- - - x,
# not not x) longer than 100 is no program anyone wrote, and parsers and the passes over their trees
# recurse once per level (libcst's parser overflowed the C stack at 100,000 of either).
MAX_BRACKETS = {True: 200, False: 256}
MAX_PREFIX_RUN = 100

# The token patterns of ``nesting`` (compiled on first use: a run whose files are all answered by the results
# cache never scans a file's nesting).  Possessive: a string or comment is taken whole, never backtracked into.
_PY_TOKENS_RX = (
    r"""(?P<s>'''(?:[^'\\]++|\\.|'(?!''))*+(?:'''|\Z)|"""
    r'''"""(?:[^"\\]++|\\.|"(?!""))*+(?:"""|\Z)|'(?:[^'\\\n]++|\\.)*+'?|"(?:[^"\\\n]++|\\.)*+"?)'''
    r"""|(?P<c>\#[^\n]*+)|(?P<o>[(\[{])|(?P<x>[)\]}])|(?P<u>[-+~]|\bnot\b|\bawait\b)|(?P<w>[\w.]++|[^\s\w])""")
_CPP_TOKENS_RX = (
    r"""(?P<s>R"(?P<d>[^(\s]{0,16})\(.*?\)(?P=d)"|'(?:[^'\\\n]++|\\.)*+'?|"(?:[^"\\\n]++|\\.)*+"?)"""
    r"""|(?P<c>//[^\n]*+|/\*.*?(?:\*/|\Z))|(?P<o>[(\[{])|(?P<x>[)\]}])|(?P<u>[-+~!*&])|(?P<w>\w++|[^\s\w])""")
_PATTERNS: Optional[dict] = None

# (environment CPASYNC_MIGRATE_NESTING_QUICK=0 turns it off) a text with no long operator run is passed when its
# deepest bracket, found by C-speed passes (``_depth``), is within the limit; the token loop then runs only to name
# the line of a text that is too deep; the run pattern is searched only where a search over bytes finds a row of
# operators long enough (``_may_run``).  ``tests/test_nesting.py`` checks the same answers on and off.
QUICK = os.environ.get("CPASYNC_MIGRATE_NESTING_QUICK", "1") != "0"


def _patterns() -> dict:
    """The compiled patterns: (python, tokens?) -> pattern, ("depth", python) -> ``_depth``'s, and "run" (see
    ``_LONG_RUN_RX``)."""
    global _PATTERNS
    if _PATTERNS is None:
        _PATTERNS = {
            (True, True): re.compile(_PY_TOKENS_RX, re.S),
            (False, True): re.compile(_CPP_TOKENS_RX, re.S),
            # The same without the operators and words: strings, comments and brackets only (far fewer matches).
            # Each match first skips, in one step, the characters that cannot start one.  A character that can
            # start a token but starts none here (C++'s ``/`` of a division, the ``R`` of a name) is taken alone
            # (``z``), and the text's tail by ``\Z``: a match never fails, so no scan restarts one character
            # further on (which made a long tail without brackets quadratic).
            **{(py, False): re.compile(_bracket_scan(py, r"|(?P<o>[(\[{])|(?P<x>[)\]}])|(?P<z>.)|\Z"), re.S)
               for py in (True, False)},
            # The same scan with one group, the bracket (C++: and the raw string's delimiter, which the pattern
            # refers back to): ``findall`` gives each match's bracket, or "" for a string, a comment, a character.
            **{("depth", py): re.compile(_bracket_scan(py, r"|(?P<b>[()\[\]{}])|.|\Z", unnamed=True), re.S)
               for py in (True, False)},
            "run": re.compile(_LONG_RUN_RX),
        }
    return _PATTERNS


# A bracket as a byte of the depth walk: an opening one counts 2, a closing one 0 (each step is the byte less 1).
_STEP = bytes.maketrans(b"([{)]}", b"\x02\x02\x02\x00\x00\x00")


# What a scan of strings, comments and brackets skips in one step: the characters that cannot start one.
_SKIP = {True: r"""[^'"#()\[\]{}]*+""", False: r"""[^'"/R()\[\]{}]*+"""}


def _bracket_scan(python: bool, rest: str, unnamed: bool = False) -> str:
    """The patterns (python, False) and ("depth", python): ``_SKIP``, then the language's strings and comments
    (``unnamed``: as groups that capture nothing, but C++'s raw-string delimiter, which the pattern refers back
    to), or one of ``rest``'s alternatives."""
    strings_comments = (_PY_TOKENS_RX if python else _CPP_TOKENS_RX).split("|(?P<o>", 1)[0]
    if unnamed:
        strings_comments = strings_comments.replace("(?P<s>", "(?:").replace("(?P<c>", "(?:")
    return _SKIP[python] + "(?:" + strings_comments + rest + ")"


def _depth(text: str, python: bool) -> int:
    """The deepest bracket of ``text`` outside its strings and comments, as ``nesting``'s token loop counts it:
    +1 at an opening bracket, -1 at a closing one, never below 0.  One ``findall`` of the loop's own scan gives
    the brackets in order; the walk is done by ``itertools.accumulate``: with u the running sum (which may go
    below 0), the depth held at 0 from below is u less the lowest u so far (0 included)."""
    found = _patterns()["depth", python].findall(text)
    brackets = "".join(found) if python else "".join(map(operator.itemgetter(1), found))
    steps = brackets.encode("ascii").translate(_STEP)
    if not steps:
        return 0
    if min(map(operator.sub, accumulate(steps), count(1))) >= 0:  # never below 0 (balanced text): no hold
        return max(map(operator.sub, accumulate(steps), count(1)))
    u = list(map(operator.sub, accumulate(steps), count(1)))
    low = accumulate(u, min, initial=0)
    next(low)
    return max(map(operator.sub, u, low))


def nesting(text: str, python: bool):
    """(message, line) when ``text`` nests deeper than the front ends may analyse (see above), else None.

    A scan of the text's tokens (strings and comments skipped whole), before any parser sees it: the
    deepest bracket, and (only where the text holds a long run of operator characters at all) the
    longest run of prefix operators.  A text with few brackets and no such run is passed at once."""
    limit = MAX_BRACKETS[python]
    patterns = _patterns()
    runs = (not QUICK or _may_run(text)) and patterns["run"].search(text) is not None
    if not runs and text.count("(") + text.count("[") + text.count("{") <= limit:
        return None
    if QUICK and not runs and _depth(text, python) <= limit:
        return None
    tokens = patterns[python, runs]
    depth = run = 0
    for m in tokens.finditer(text):
        kind = m.lastgroup if m.lastgroup != "d" else "s"
        if kind == "o":
            depth += 1
            run = 0
            if depth > limit:
                return (f"brackets nested more than {limit} deep; not analysed "
                        f"({'Python' if python else 'clang'} refuses it too)", text.count("\n", 0, m.start(kind)) + 1)
        elif kind == "x":
            depth = max(0, depth - 1)
            run = 0
        elif kind == "u":
            run += 1
            if run > MAX_PREFIX_RUN:
                return (f"more than {MAX_PREFIX_RUN} prefix operators in a row; not analysed",
                        text.count("\n", 0, m.start(kind)) + 1)
        elif kind != "c":
            run = 0
    return None


# (QUICK) Where a run is too long, the text read as bytes, with ``await`` and ``not`` each replaced by one operator
# character, white space and every non-ASCII byte left out, and every other byte made a letter, holds more than
# MAX_PREFIX_RUN operator characters in a row: a search in C over a string of one byte per character.  Leaving
# characters out only joins runs, so a text without such a row has no run, and the run pattern, which tries a match
# at every operator character, ``n`` and ``a`` of the text, is searched only where there is one.
_RUN_BYTES = bytes(0x2B if chr(b) in "-+~!*&" else 0x78 for b in range(256))
_RUN_GAPS = bytes(b for b in range(256) if b >= 0x80 or chr(b).isspace())


def _may_run(text: str) -> bool:
    data = text.encode("utf-8", "surrogatepass").replace(b"await", b"+").replace(b"not", b"+")
    return data.translate(_RUN_BYTES, _RUN_GAPS).find(b"+" * (MAX_PREFIX_RUN + 1)) != -1


# Without this many operator characters or words in a row (white space between), no run can be too long.  The
# first token is written out before the repeat: the pattern then starts with a set of characters, which the
# regular expression engine looks for before it tries a match (about twice as fast; the same language).
_RUN_TOKEN_RX = r"(?:[-+~!*&]|not\b|await\b)\s*"
_LONG_RUN_RX = _RUN_TOKEN_RX + r"(?:%s){%d}" % (_RUN_TOKEN_RX, MAX_PREFIX_RUN)


def _read_only(st: os.stat_result, path: str) -> Optional[str]:
    """Why a file counts as read-only (None: it does not): its owner's write bit is clear, or
    this process may not write it."""
    if not st.st_mode & stat.S_IWUSR:
        return f"read-only (mode {stat.S_IMODE(st.st_mode):04o})"
    if not os.access(path, os.W_OK):
        return "not writable by this user"
    return None


def write_target(path: str) -> str:
    """The file a write of ``path`` changes: the path itself, or the file its symbolic link(s) lead to.
    A link is never replaced; what it points at is written."""
    return os.path.realpath(path) if os.path.islink(path) else path


def atomic_write(src: SourceFile, text: str, allow_read_only: bool = False) -> None:
    """Write ``text`` back with the file's encoding, BOM, permission bits, owner and group.

    Refuses when the file changed on disk since it was read, when it is not a regular file, and
    (unless ``allow_read_only``) when it is read-only.  A symbolic link is written through, never
    replaced.  A file with one name is replaced atomically by a complete new file (given the old
    one's mode, owner and group first); a file with several hard links, or whose owner or group
    this process cannot give a new file, is overwritten in place (see :func:`_write_in_place`), so
    its identity (inode, links, owner) stays.
    """
    data = encode(src, text)
    path = src.path
    target = write_target(path)
    try:
        fd = os.open(target, _OPEN_READ)
    except OSError as e:
        raise FileError(path, f"cannot re-read before writing: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileError(path, f"{describe_special(target)}, not a regular file; not written")
        current = _read_fd(fd)
    except OSError as e:
        raise FileError(path, f"cannot re-read before writing: {e.strerror or e}") from None
    finally:
        os.close(fd)
    if current != src.raw:
        raise FileError(path, "changed on disk since it was read; not overwritten")
    if not allow_read_only:
        why = _read_only(st, target)
        if why:
            raise FileError(path, f"{why}; not written (--allow-read-only writes it, keeping its mode)")
    if st.st_nlink > 1 or not _replace(path, target, data, st):
        _write_in_place(path, target, data, current, st)


def _replace(path: str, target: str, data: bytes, st: os.stat_result) -> bool:
    """Replace ``target`` by a new file holding ``data``, with its mode, owner and group.
    False (nothing changed) when this process cannot give the new file that owner and group."""
    import tempfile  # write mode only: kept off the start-up of a run that writes nothing

    directory = os.path.dirname(os.path.abspath(target))
    fd, tmp = None, None
    try:
        try:
            fd, tmp = tempfile.mkstemp(prefix=".cpasync-", suffix=".tmp", dir=directory)
        except OSError as e:  # a read-only folder: the file itself may be writable, its folder is not
            raise FileError(path, f"cannot write: the new copy of the file cannot be created in its folder "
                                  f"{directory} ({e.strerror or e}); the file is unchanged") from None
        mine = os.fstat(fd)
        if (mine.st_uid, mine.st_gid) != (st.st_uid, st.st_gid):
            try:
                os.fchown(fd, st.st_uid, st.st_gid)
            except PermissionError:
                try:
                    os.fchown(fd, -1, st.st_gid)  # a group the user is in can still be kept...
                except PermissionError:
                    pass
                return False  # ...but not the owner: write the file in place instead
            except OSError:
                return False
        with os.fdopen(fd, "wb") as fh:
            fd = None
            os.fchmod(fh.fileno(), stat.S_IMODE(st.st_mode))  # after fchown, which clears set-id bits
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        _unchanged(path, target, st)  # the last look, after the sync: the window left is this call and the rename
        os.replace(tmp, target)
        tmp = None
        return True
    except OSError as e:
        raise FileError(path, f"cannot write: {e.strerror or e}") from None
    finally:
        if fd is not None:
            os.close(fd)
        if tmp is not None and os.path.lexists(tmp):
            os.unlink(tmp)


def _identity(st: os.stat_result) -> tuple:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _unchanged(path: str, target: str, st: os.stat_result, fd: Optional[int] = None) -> None:
    """FileError unless ``target`` (or the open ``fd``) still has the size, modification and status-change
    times, inode and device it had when it was re-read (``st``): someone wrote it meanwhile, and their
    edit must not be lost."""
    try:
        now = os.fstat(fd) if fd is not None else os.stat(target)
    except OSError as e:
        raise FileError(path, f"cannot check it before writing: {e.strerror or e}; not overwritten") from None
    if _identity(now) != _identity(st):
        raise FileError(path, "changed on disk while it was being written; not overwritten (run again)")


def _write_in_place(path: str, target: str, data: bytes, old: bytes, st: os.stat_result) -> None:
    """Overwrite the file itself (same inode: hard links, owner, group and mode stay).

    A copy of the old bytes is written and synced next to the file first
    (``.cpasync-*.orig``); the space for the new text is allocated before any byte of the
    file changes; on any error the old bytes are written back.  So a failure never leaves the
    file half-written, and only a process killed in the middle of the overwrite can: then the
    ``.orig`` copy, which is removed once the new text is synced, still holds the old bytes.
    """
    import tempfile

    directory = os.path.dirname(os.path.abspath(target))
    backup = None
    try:
        bfd, backup = tempfile.mkstemp(prefix=".cpasync-", suffix=".orig", dir=directory)
        with os.fdopen(bfd, "wb") as fh:
            fh.write(old)
            fh.flush()
            os.fsync(fh.fileno())
        fd = os.open(target, os.O_RDWR | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        if backup is not None:
            _unlink(backup)
        raise FileError(path, f"cannot write in place: {e.strerror or e}") from None
    try:
        _unchanged(path, target, st, fd)  # after the copy was synced, before the first byte changes
        if len(data) > len(old) and hasattr(os, "posix_fallocate"):
            try:
                os.posix_fallocate(fd, 0, len(data))
            except OSError as e:
                if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                    raise FileError(path, f"cannot write in place: {e.strerror or e}; file unchanged") from None
        try:
            _pwrite_all(fd, data)
            os.ftruncate(fd, len(data))
            os.fsync(fd)
        except OSError as e:
            try:
                _pwrite_all(fd, old)
                os.ftruncate(fd, len(old))
                os.fsync(fd)
            except OSError:
                keep, backup = backup, None  # the copy is the only whole version left: keep it
                raise FileError(path, f"cannot write in place: {e.strerror or e}; could not put the old "
                                      f"bytes back either: they are in {keep}") from None
            raise FileError(path, f"cannot write in place: {e.strerror or e}; old bytes put back") from None
    finally:
        os.close(fd)
        if backup is not None:
            _unlink(backup)


def _pwrite_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    pos = 0
    while pos < len(data):
        pos += os.pwrite(fd, view[pos:], pos)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
