"""Which files a run looks at: a folder's files from git inside a git work tree (``git ls-files``:
every ignore rule git has), elsewhere a walk with ``os.scandir`` that honours ``.gitignore`` files (a
practical subset of git's rules, matched segment by segment as git's wildmatch does and never in
exponential time: negation, anchoring, directory-only patterns, ``*``, ``?``, ``[...]``
and ``**``).  Either way it skips VCS, virtual-environment, build and cache folders, and applies
``--exclude`` globs.  Explicit file arguments are always processed.
"""
from __future__ import annotations

import fnmatch
import os
import re
import stat
from pathlib import Path
from typing import Iterable, Iterator, Optional

from .files import SKIP_DIRS, describe_special


# ---------------------------------------------------------------- gitignore


class _Pattern:
    """One ``.gitignore`` line, matched segment by segment as git's wildmatch matches it (``*``, ``?``
    and ``[...]`` never match ``/``; ``**`` is special only as a whole segment).

    Matching is never exponential: a pattern with at most one ``*`` per segment and at most one ``**``
    segment is a regular expression whose backtracking is bounded by the path's length (each ``[^/]*``
    stops at the next ``/``), used as it is; any other pattern (``*a*a*a*b``) is matched by
    :func:`_wildmatch`, which keeps one backtracking point per level and so takes at most (path
    length x pattern length) steps."""

    __slots__ = ("negate", "dir_only", "regex", "base", "name_only", "lead", "segments", "text")

    def __init__(self, line: str, base: str, lead: str = ""):
        self.text = line  # as written in its .gitignore (for -v)
        self.base = base  # directory (relative to the walk root, "" for root) holding the .gitignore
        # for a .gitignore above the walk root: the walk root relative to its folder, with a final "/"
        # (an anchored pattern there matches lead + the path from the walk root)
        self.lead = lead
        self.negate = line.startswith("!")
        if self.negate:
            line = line[1:]
        self.dir_only = line.endswith("/")
        line = line.rstrip("/")
        anchored = "/" in line
        line = line.lstrip("/")
        segments = [_segment_tokens(s) for s in line.split("/")] if anchored else [_segment_tokens(line, False)]
        if segments and segments[-1] is _GLOBSTAR and len(segments) > 1:
            segments[-1:] = [[_STAR], _GLOBSTAR]  # "a/**": everything inside a, not a itself
        self.segments = segments
        safe = (sum(s is _GLOBSTAR for s in segments) <= 1
                and all(s is _GLOBSTAR or s.count(_STAR) <= 1 for s in segments))
        rx = _segments_regex(segments) if safe else None
        # A pattern without a slash matches a whole last path component: the name alone is matched.
        self.name_only = None if anchored else rx if rx is not None else ""
        if self.name_only is not None:
            self.lead = ""  # a name matches wherever the path starts
        self.regex = None if rx is None else re.compile(rx + "$" if not anchored else "^" + rx + "$")

    def matches(self, rel: str, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        if self.base:
            if not rel.startswith(self.base + "/"):
                return False
            rel = rel[len(self.base) + 1 :]
        if self.name_only is not None:
            rel = rel.rpartition("/")[2]
        else:
            rel = self.lead + rel
        if self.regex is not None:
            return self.regex.match(rel) is not None
        return _wildmatch(self.segments, rel.split("/"))


# Tokens of a pattern's segment: a character (str), _ANY ("?"), _STAR ("*"), or a class (negated, chars, ranges).
_ANY, _STAR = object(), object()
_GLOBSTAR = object()  # a whole segment "**": zero or more segments


def _segment_tokens(seg: str, globstar: bool = True):
    if seg == "**" and globstar:
        return _GLOBSTAR
    out: list = []
    i, n = 0, len(seg)
    while i < n:
        c = seg[i]
        if c == "\\" and i + 1 < n:
            out.append(seg[i + 1])
            i += 2
            continue
        if c == "*":
            while i + 1 < n and seg[i + 1] == "*":  # "**" inside a segment is one "*"
                i += 1
            out.append(_STAR)
        elif c == "?":
            out.append(_ANY)
        elif c == "[":
            cls, end = _bracket(seg, i)
            if cls is None:
                out.append("[")
            else:
                out.append(cls)
                i = end
        else:
            out.append(c)
        i += 1
    return out


def _bracket(seg: str, i: int):
    """The class that starts at ``seg[i] == "["``: ((negated, chars, ranges), index of its "]"), or
    (None, i) when it is not closed (then "[" is an ordinary character, as for git)."""
    j = i + 1
    negate = j < len(seg) and seg[j] in "!^"
    if negate:
        j += 1
    chars, ranges = set(), []
    first = True
    while j < len(seg):
        c = seg[j]
        if c == "]" and not first:
            return (negate, frozenset(chars), tuple(ranges)), j
        first = False
        if c == "\\" and j + 1 < len(seg):
            j += 1
            c = seg[j]
        if j + 2 < len(seg) and seg[j + 1] == "-" and seg[j + 2] != "]":
            hi = seg[j + 2]
            if hi == "\\" and j + 3 < len(seg):
                hi = seg[j + 3]
                j += 1
            ranges.append((c, hi))
            j += 3
            continue
        chars.add(c)
        j += 1
    return None, i


def _token_matches(tok, ch: str) -> bool:
    if tok is _ANY:
        return True
    if isinstance(tok, str):
        return tok == ch
    negate, chars, ranges = tok
    hit = ch in chars or any(lo <= ch <= hi for lo, hi in ranges)
    return hit != negate


def _token_regex(tok) -> str:
    if tok is _STAR:
        return "[^/]*"
    if tok is _ANY:
        return "[^/]"
    if isinstance(tok, str):
        return re.escape(tok)
    negate, chars, ranges = tok
    body = "".join(_class_char(c) for c in sorted(chars)) + "".join(
        f"{_class_char(lo)}-{_class_char(hi)}" for lo, hi in ranges)
    if negate:
        return f"[^{body}/]"
    return f"(?!/)[{body}]" if body else "(?!)"


def _class_char(c: str) -> str:
    return "\\" + c if c in "\\]^-[" else c


def _segments_regex(segments) -> str:
    """The expression of a pattern that :class:`_Pattern` deems safe (one ``**`` at most)."""
    out = []
    last = len(segments) - 1
    for k, s in enumerate(segments):
        if s is _GLOBSTAR:  # zero or more folders; last: zero or more segments below the one before
            out.append("(?:.*/)?" if k < last else "(?:/.*)?")
            continue
        slash = k < last and not (k + 1 == last and segments[last] is _GLOBSTAR)
        out.append("".join(map(_token_regex, s)) + ("/" if slash else ""))
    return "".join(out)


STEPS = [0]  # steps _wildmatch took (the tests read it: matching must stay linear in the input)


def _glob_segment(pat: list, s: str) -> bool:
    """Whether one segment ``s`` matches ``pat`` (tokens; ``*`` matches any run of characters).

    One backtracking point, the last ``*`` seen: when the rest fails, that ``*`` takes one more
    character.  Enough, since a later ``*`` can absorb whatever an earlier one would have taken."""
    p = i = 0
    star, mark = -1, 0
    n, m = len(s), len(pat)
    steps = 0
    while i < n:
        steps += 1
        if p < m and pat[p] is _STAR:
            star, mark = p, i
            p += 1
        elif p < m and _token_matches(pat[p], s[i]):
            p += 1
            i += 1
        elif star >= 0:
            p, mark = star + 1, mark + 1
            i = mark
        else:
            STEPS[0] += steps
            return False
    STEPS[0] += steps
    while p < m and pat[p] is _STAR:
        p += 1
    return p == m


def _wildmatch(segments: list, parts: list) -> bool:
    """Whether the path's segments ``parts`` match the pattern's: the algorithm of
    :func:`_glob_segment` one level up, where ``**`` is the star and a segment pattern the token."""
    p = i = 0
    star, mark = -1, 0
    n, m = len(parts), len(segments)
    while i < n:
        STEPS[0] += 1
        if p < m and segments[p] is _GLOBSTAR:
            star, mark = p, i
            p += 1
        elif p < m and _glob_segment(segments[p], parts[i]):
            p += 1
            i += 1
        elif star >= 0:
            p, mark = star + 1, mark + 1
            i = mark
        else:
            return False
    while p < m and segments[p] is _GLOBSTAR:
        p += 1
    return p == m


# The most bytes of one .gitignore the walker reads (git itself stops at 100 MiB; the walker's matching
# cost grows with the patterns, so a tree's file may not be that large).
GITIGNORE_LIMIT = 1 << 20


def _read_gitignore(directory: str, base: str, lead: str = "", skipped: Optional[list] = None) -> list[_Pattern]:
    """The patterns of ``directory``'s .gitignore.  The tree's file: one that is not a regular file (a FIFO
    would stall the walk, a link to /dev/zero never end) or is over :data:`GITIGNORE_LIMIT` is not read
    (``skipped`` says so), as is one that cannot be opened."""
    from .small_files import Refused, read

    path = os.path.join(directory, ".gitignore")
    try:
        lines = read(path, GITIGNORE_LIMIT).decode("utf-8", "replace").splitlines()
    except Refused as e:
        if skipped is not None:
            skipped.append((path, str(e).partition(": ")[2] + "; its patterns are not applied"))
        return []
    except OSError:
        return []
    pats = []
    for raw in lines:
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        pats.append(_Pattern(line, base, lead))
    return pats


def _ignored(patterns: list[_Pattern], rel: str, is_dir: bool) -> bool:
    ignored = False
    for p in patterns:
        if p.negate == ignored and p.matches(rel, is_dir):
            ignored = not p.negate
    return ignored


class Glob(str):
    """An exclude glob that knows the option it came from (``exclude`` or ``extend-exclude``), for -v."""

    option = "exclude"

    @classmethod
    def of(cls, text: str, option: str) -> "Glob":
        g = cls(text)
        g.option = option
        return g


def tagged(text: str, like) -> str:
    """``text`` (a glob made from ``like``) with ``like``'s option, where it has one."""
    return Glob.of(text, like.option) if isinstance(like, Glob) else text


def _why_ignored(patterns: list, rel: str, is_dir: bool) -> str:
    """-v's reason for a path the ``.gitignore`` patterns ignore: the last pattern that decides it."""
    last = None
    for p in patterns:
        if p.matches(rel, is_dir):
            last = p
    where = (last.base + "/" if last is not None and last.base else "") + ".gitignore"
    return f"ignored by `{last.text}` in {where}" if last is not None else "ignored by a .gitignore"


def _skip_dir_reason(name: str) -> str:
    if name in (".venv", "venv", ".env", "env"):
        return "a virtual environment's folder name; such folders are not scanned"
    return f"a `{name}` folder; such folders are not scanned"


_VCS = frozenset({".git", ".hg", ".svn", ".bzr", "_darcs", ".jj"})  # -v does not name these (git does not list them)
VENV_REASON = "a virtual environment (holds pyvenv.cfg); not scanned"


def suffix_reason(suffixes) -> str:
    return f"not a kernel source ({' '.join(suffixes)})"


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

    __slots__ = ("patterns", "negations", "groups", "slow", "rel_rx", "name_rx", "excludes")

    def __init__(self, patterns: list, excludes: tuple[str, ...]):
        self.patterns = patterns
        self.excludes = excludes
        self.negations = any(p.negate for p in patterns)
        self.slow = [p for p in patterns if p.regex is None]  # matched one by one, by _wildmatch
        grouped: dict = {}
        for p in patterns:
            if p.regex is None:
                continue
            on_name = p.name_only is not None
            grouped.setdefault((p.base, p.dir_only, on_name, p.lead), []).append(
                p.name_only if on_name else p.regex.pattern)
        self.groups = []  # (folder prefix, dir_only, matched against the name, alternation, lead)
        for (base, dir_only, on_name, lead), rxs in grouped.items():
            alt = "|".join(f"(?:{x})" for x in rxs)
            self.groups.append((base + "/" if base else "", dir_only, on_name,
                                re.compile(f"(?:{alt})$" if on_name else alt), lead))
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
        for base, dir_only, on_name, rx, lead in self.groups:
            if dir_only and not is_dir or base and not rel.startswith(base):
                continue
            if rx.match(name) if on_name else rx.match(lead + rel[len(base):]):
                break
        else:
            if not any(p.matches(rel, is_dir) for p in self.slow):
                return False
        return True if not self.negations else _ignored(self.patterns, rel, is_dir)

    def why(self, rel: str, name: str, is_dir: bool) -> str:
        """-v's reason for a path :meth:`skip` skips: the exclude glob (and its option) or the .gitignore
        pattern that decides it.  Called only for such paths, only under -v."""
        norm = os.path.normcase
        for g in self.excludes or ():
            gn = norm(g)
            whole = fnmatch.fnmatchcase(norm(rel), gn) or fnmatch.fnmatchcase(norm(rel), norm(g.rstrip("/") + "/*"))
            if whole or fnmatch.fnmatchcase(norm(name), gn):
                return f"matches `{g}` ({getattr(g, 'option', 'exclude')})"
        return _why_ignored(self.patterns, rel, is_dir)


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
    here = start.resolve()
    for d in chain[:-1]:  # the start folder's own .gitignore is read by the walk
        # an anchored pattern is relative to its .gitignore's folder: it sees the path from there
        lead = here.relative_to(d).as_posix() + "/"
        pats += _read_gitignore(str(d), "", lead)
    return root, pats


def discover(
    paths: Iterable[str],
    suffixes: tuple[str, ...],
    excludes=(),  # globs, or a function of a folder argument giving its globs
    respect_gitignore: bool = True,
    errors: Optional[list] = None,
    skipped: Optional[list] = None,
    special: Optional[list] = None,
    reasons: Optional[list] = None,
    linked: Optional[set] = None,
    folders: Optional[dict] = None,
) -> Iterator[str]:
    """Yield candidate files (explicit files first in argument order; a folder's files in no set order).

    A folder that cannot be listed is appended to ``errors`` as (path, reason), when given.  Only
    regular files (or links to them) are yielded: a FIFO, socket, device, broken link or link to a
    folder met in a walk goes to ``skipped`` as (path, reason); one named explicitly goes to
    ``special`` (the caller reports it as an error) and is never opened.

    ``reasons`` (-v): when given, every entry a walk passes over by a rule goes there as (path, why): a
    .gitignore pattern or git's own ignore rules, an exclude glob (and whether ``exclude`` or
    ``extend-exclude`` gave it), a virtual environment, a folder never scanned (``.git``, ``build``...),
    a file without a kernel suffix.  A folder passed over is named once, not the files below it.

    ``linked``: when given, every file a walk yields that is a symbolic link (to a regular file) is added to
    it before it is yielded; a walk's other files are regular files that are not links (what
    ``Configs.for_path(regular=True)`` may take without looking again).

    ``folders``: when given, what the walker saw of each folder below a folder argument that it listed
    (``_walk``'s ``folders``); git's list of files gives none.
    """
    seen: set[str] = set()
    for arg in paths:
        try:
            st = os.stat(arg)
        except (OSError, ValueError):
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            ex = tuple(excludes(arg)) if callable(excludes) else excludes  # per folder: globs anchored elsewhere
            found = _git_walk(arg, suffixes, ex, skipped, reasons, linked) if respect_gitignore else None
            if found is None:  # not in a git work tree, or no git: the walker reads the .gitignore files
                outer = _git_root_patterns(Path(arg))[1] if respect_gitignore else []
                found = _walk(arg, outer, suffixes, ex, respect_gitignore, errors, skipped, reasons, linked, folders)
            for f in found:
                if f not in seen:
                    seen.add(f)
                    yield f
            continue
        if st is not None and not stat.S_ISREG(st.st_mode):
            if special is not None and arg not in seen:
                special.append((arg, describe_special(arg)))
            seen.add(arg)
            continue
        # explicit files are always processed (a missing one is reported by the reader)
        if arg not in seen:
            seen.add(arg)
            yield arg


def _git_list(folder: str) -> Optional[list[str]]:
    """git's entries for the files under ``folder`` (tracked, and untracked that no ignore rule
    covers: every ``.gitignore`` of the repository, parents' included, ``.git/info/exclude`` and
    ``core.excludesFile``), relative to it; None when it is not in a git work tree or git fails.

    Each entry starts with git's tag (``-t``): ``? path`` for an untracked file (a nested repository
    that is not a submodule: its folder with a final ``/``); ``H mode object stage\tpath`` for one in
    the index.  git is not asked which files changed or went missing in the work tree (``-m``,
    ``-d``): that compares contents, and a comparison can run the repository's clean filters; the
    walk looks at each candidate itself.  git runs with the options of :func:`gitrev.git`: the
    repository's configuration never starts a program."""
    if not _maybe_in_git(folder):
        return None
    from .gitrev import GitTimeout, git

    try:
        r = git(["ls-files", "-z", "-t", "-s", "-c", "-o", "--exclude-standard", "--", "."], folder)
    except GitTimeout as e:  # git waits on something the repository names (a FIFO): walk without it, and say so
        import sys

        print(f"cpasync-migrate: warning: {folder}: {e}; the folder is walked without git", file=sys.stderr)
        return None
    except (OSError, ValueError):
        return None
    if r.returncode != 0:
        return None
    return os.fsdecode(r.stdout).split("\0")


def _maybe_in_git(folder: str) -> bool:
    """False only when git could not find a repository for ``folder``: no ``.git`` entry (a folder, or
    the file of a linked work tree or submodule) in it or any folder above, and no ``GIT_DIR`` or
    ``GIT_WORK_TREE`` in the environment.  Spares a tree outside git the start of a git process."""
    if os.environ.get("GIT_DIR") or os.environ.get("GIT_WORK_TREE"):
        return True
    cur = os.path.abspath(folder)
    while True:
        if os.path.lexists(os.path.join(cur, ".git")):
            return True
        up = os.path.dirname(cur)
        if up == cur:
            return False
        cur = up


def _git_walk(top: str, suffixes, excludes, skipped: Optional[list] = None,
              reasons: Optional[list] = None, linked: Optional[set] = None) -> Optional[Iterator[str]]:
    """The files under ``top`` in scope, from git's own list (see :func:`_git_list`); None when git
    cannot give it (then the walker is used).

    The rest of the walker's rules hold on top of git's: the skipped folders (``SKIP_DIRS``,
    ``*.egg-info``, a folder holding ``pyvenv.cfg``), the ``--exclude`` globs, regular files only
    (a file deleted from the work tree is passed over).  A nested repository and a checked out
    submodule are listed by git in their own folder.  Each source file in scope costs one ``lstat``
    here (git is not asked which changed in the work tree: see :func:`_git_list`)."""
    entries = _git_list(top)
    if entries is None or not any(entries):
        return None  # git has nothing there: a folder named on the command line that git ignores is walked
    if reasons is not None:
        _git_ignored(top, "", reasons)
    return _git_files(top, "", entries, suffixes, _Filter([], excludes) if excludes else None, skipped, reasons,
                      linked)


def _git_ignored(top: str, prefix: str, reasons: list) -> None:
    """-v: what git's ignore rules leave out under ``top`` (one more git process, only under -v)."""
    from .gitrev import git

    try:
        r = git(["ls-files", "-z", "-o", "-i", "--exclude-standard", "--directory", "--", "."], top + "/" + prefix)
    except (OSError, ValueError):
        return
    if r.returncode != 0:
        return
    base = top if top.endswith(os.sep) else top + os.sep
    for rel in os.fsdecode(r.stdout).split("\0"):
        if rel:
            reasons.append((base + prefix + rel.rstrip("/"),
                            "ignored by git (.gitignore, .git/info/exclude or core.excludesFile)"))


class _GitEntries:
    """git's entries of one repository (``_git_list``) sorted by what the walk does with them; paths are
    relative to the top folder scanned, as ``rel``."""

    __slots__ = ("candidates", "nested", "venvs", "links", "unsuffixed")

    def __init__(self):
        self.candidates: dict = {}  # rel -> True: source-named (a dict: a conflicted file is listed once per stage)
        self.nested: list = []  # nested repositories and submodules, their folders
        self.venvs: set = set()  # folders holding a pyvenv.cfg
        self.links: list = []  # untracked files and links, not source-named (only with skipped)
        self.unsuffixed: list = []  # every entry not source-named (only with reasons)


def _git_entries(prefix: str, entries: list, suffixes, skipped, reasons) -> _GitEntries:
    """Sort git's ``-t -s`` entries (see ``_git_list``) of the repository at ``prefix``."""
    out = _GitEntries()
    for ent in entries:
        tag = ent[:1]
        if tag == "?":
            rel = prefix + ent[2:]
            if rel.endswith("/"):  # a nested repository
                out.nested.append(rel[:-1])
                continue
            look = True
        elif tag:
            head, _, rel = ent.partition("\t")
            rel = prefix + rel
            if head[2:8] == "160000":  # a submodule
                out.nested.append(rel)
                continue
            look = head[2:8] == "120000" or tag not in "HM"  # a link (to a folder?); skip-worktree (S) and others
        else:
            continue
        if rel.endswith(suffixes):
            out.candidates[rel] = True
        elif rel.endswith("pyvenv.cfg") and (rel == prefix + "pyvenv.cfg" or rel.endswith("/pyvenv.cfg")):
            out.venvs.add(rel[: -len("/pyvenv.cfg")] if "/" in rel else "")
        elif look and skipped is not None:
            out.links.append(rel)  # untracked or a link: one to a folder is reported as skipped, as the walker does
        if reasons is not None and not rel.endswith(suffixes):
            out.unsuffixed.append(rel)
    return out


class _GitFolders:
    """Whether a folder (relative, as ``rel``) is in scope: every folder above it is, and it is no skipped
    folder (``SKIP_DIRS``, ``*.egg-info``, a virtual environment, an ``--exclude`` glob); each answer kept.
    A folder left out under one in scope is reported to ``reasons`` (-v)."""

    def __init__(self, base: str, prefix: str, venvs: set, filt, reasons):
        self.base, self.venvs, self.filt, self.reasons = base, venvs, filt, reasons
        self.ok: dict = {"": True}
        if prefix:
            self.ok[prefix[:-1]] = True  # a nested repository's folder was checked as an entry of the one above
        venvs.discard(prefix[:-1] if prefix else "")  # the folder scanned is scanned, whatever it holds

    def check(self, d: str) -> bool:
        ok = self.ok
        v = ok.get(d)
        if v is None:
            up, _, name = d.rpartition("/")
            filt, venvs = self.filt, self.venvs
            v = ok[d] = (self.check(up) and name not in SKIP_DIRS and not name.endswith(".egg-info")
                         and d not in venvs and not (filt is not None and filt.skip(d, name, True)))
            if not v and self.reasons is not None and ok.get(up):
                self.reasons.append((self.base + d, _skip_dir_reason(name) if name in SKIP_DIRS or
                                     name.endswith(".egg-info") else VENV_REASON if d in venvs
                                     else filt.why(d, name, True)))
        return v


def _git_files(top: str, prefix: str, entries: list, suffixes, filt, skipped, reasons=None,
               linked: Optional[set] = None) -> Iterator[str]:
    """The files in scope among git's ``entries`` of the repository at ``prefix`` under ``top`` (see
    ``_git_walk``), then those of its nested repositories; what is left out goes to ``skipped`` and (-v)
    ``reasons``."""
    ents = _git_entries(prefix, entries, suffixes, skipped, reasons)
    base = top if top.endswith(os.sep) else top + os.sep  # as os.path.join(top, rel) writes it
    folder_ok = _GitFolders(base, prefix, ents.venvs, filt, reasons).check
    yield from _git_candidates(base, ents.candidates, folder_ok, filt, skipped, reasons, linked)
    for rel in ents.links:
        d = rel.rpartition("/")[0]
        if folder_ok(d) and os.path.islink(base + rel) and os.path.isdir(base + rel):
            skipped.append((base + rel, "a symbolic link to a folder; links to folders are not followed"))
    for rel in ents.unsuffixed:
        if folder_ok(rel.rpartition("/")[0]) and not (os.path.islink(base + rel) and os.path.isdir(base + rel)):
            reasons.append((base + rel, suffix_reason(suffixes)))
    for rel in ents.nested:
        if folder_ok(rel):
            yield from _git_nested(top, base, rel, suffixes, filt, skipped, reasons, linked)


def _git_candidates(base: str, candidates: dict, folder_ok, filt, skipped, reasons,
                    linked) -> Iterator[str]:
    """The source-named entries in scope that are regular files or links to one (one ``lstat`` each)."""
    for rel in candidates:
        d, _, name = rel.rpartition("/")
        if not folder_ok(d):
            continue
        if filt is not None and filt.skip(rel, name, False):
            if reasons is not None:
                reasons.append((base + rel, filt.why(rel, name, False)))
            continue
        path = base + rel
        try:
            st = os.lstat(path)
        except FileNotFoundError:  # in the index, deleted from the work tree
            continue
        except OSError:
            st = None
        if st is not None and stat.S_ISREG(st.st_mode):
            yield path
            continue
        try:
            regular = st is not None and stat.S_ISLNK(st.st_mode) and os.path.isfile(path)
        except OSError:
            regular = False
        if regular:
            if linked is not None:
                linked.add(path)
            yield path
        elif skipped is not None:
            skipped.append((path, describe_special(path) + "; only regular files are read"))


def _git_nested(top: str, base: str, rel: str, suffixes, filt, skipped, reasons, linked) -> Iterator[str]:
    """The files in scope of the nested repository or submodule at ``rel`` (in scope itself): git's list of it,
    or the walker where git cannot read it; nothing for a submodule that is not checked out."""
    folder = base + rel
    if not os.path.lexists(os.path.join(folder, ".git")):
        return  # a submodule that is not checked out
    sub = _git_list(folder)
    if sub is None:  # a repository git cannot read: the walker reads its .gitignore files
        yield from _walk(folder, [], suffixes, _sub_globs(filt, rel), True, None, skipped, reasons, linked)
        return
    if reasons is not None:
        _git_ignored(top, rel + "/", reasons)
    yield from _git_files(top, rel + "/", sub, suffixes, filt, skipped, reasons, linked)


def _sub_globs(filt, rel: str) -> tuple:
    """The exclude globs of ``filt`` as seen from its folder ``rel`` (for a walk started there)."""
    if filt is None or not getattr(filt, "excludes", None):
        return ()
    from .config import glob_for_folder

    return tuple(tagged(t, g) for g, t in ((g, glob_for_folder(g, rel)) for g in filt.excludes) if t is not None)


def _pyproject_seen(entries) -> Optional[bool]:
    """Whether the listed ``pyproject.toml`` entry is a regular file, from its type in the listing (None: a link,
    or a type the listing does not give without a system call that failed)."""
    for e in entries:
        if e.name == "pyproject.toml":
            try:
                return None if e.is_symlink() else e.is_file(follow_symlinks=False)
            except OSError:
                return None
    return None


def _walk(top: str, outer: list[_Pattern], suffixes, excludes, respect_gitignore,
          errors: Optional[list] = None, skipped: Optional[list] = None,
          reasons: Optional[list] = None, linked: Optional[set] = None,
          folders: Optional[dict] = None) -> Iterator[str]:
    """Files under ``top`` in scope, in no particular order (callers sort what they report).

    One ``scandir`` per folder and no other system call for plain entries: a folder's own
    ``.gitignore`` and ``pyvenv.cfg`` are seen among its entries, and ``rel`` paths are built only
    when a pattern or an exclude needs them.  A source-named entry is yielded only when it is a
    regular file or a link to one (the entry's type costs nothing; a link costs one ``stat``; a link
    goes to ``linked``).  Links to folders are not followed.  ``folders``: each folder listed below ``top`` (as
    written, reached through no link) -> whether it holds a regular ``pyproject.toml`` (None: a link of that name;
    ``config.WALK_FACTS``)."""
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
        if folders is not None and rel_dir:
            folders[full_dir] = _pyproject_seen(entries) if "pyproject.toml" in names else False
        if rel_dir and "pyvenv.cfg" in names:
            if reasons is not None:
                reasons.append((full_dir, VENV_REASON))
            continue  # a virtual environment, whatever its folder is called
        if respect_gitignore and ".gitignore" in names:
            own = _read_gitignore(full_dir, rel_dir, skipped=skipped)
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
                    if reasons is not None and name not in _VCS:
                        reasons.append((e.path, _skip_dir_reason(name)))
                    continue
                rel = f"{rel_dir}/{name}" if rel_dir else name
                if filt is not None and filt.skip(rel, name, True):
                    if reasons is not None:
                        reasons.append((e.path, filt.why(rel, name, True)))
                    continue
                stack.append((rel, pats))
            elif name.endswith(suffixes):
                if filt is not None and filt.skip(f"{rel_dir}/{name}" if rel_dir else name, name, False):
                    if reasons is not None:
                        reasons.append((e.path, filt.why(f"{rel_dir}/{name}" if rel_dir else name, name, False)))
                    continue
                try:
                    regular = e.is_file()  # follows a link; FIFOs, sockets and devices are not files
                except OSError:
                    regular = False
                if not regular:
                    if skipped is not None:
                        skipped.append((e.path, describe_special(e.path) + "; only regular files are read"))
                    continue
                if linked is not None and e.is_symlink():
                    linked.add(e.path)
                yield e.path
            elif skipped is not None or reasons is not None:
                _pass_over(e, suffixes, skipped, reasons)


def _pass_over(e, suffixes, skipped: Optional[list], reasons: Optional[list]) -> None:
    """Why the walk passes over an entry that is neither a folder nor named like a source file: a link to a
    folder (``skipped``), else its name (``reasons``, -v)."""
    if skipped is not None and e.is_symlink():
        try:
            linked_dir = e.is_dir()
        except OSError:
            linked_dir = False
        if linked_dir:
            skipped.append((e.path, "a symbolic link to a folder; links to folders are not followed"))
        elif reasons is not None:
            reasons.append((e.path, suffix_reason(suffixes)))
    elif reasons is not None:
        reasons.append((e.path, suffix_reason(suffixes)))


# ---------------------------------------------------------------- reading
