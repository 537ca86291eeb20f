"""Run records: a run that would read exactly what an earlier run of the same command read, unchanged, prints
what that run printed, without doing its work again.

**Recording.**  Every run of the console script (``console.py``) and of ``python -m cpasync_migrate`` is
observed (``inputs.py``: the interpreter's audit events, in this process and its workers) and its stdout and
stderr are kept as written.  When it ends normally it leaves a *record* in the results cache under the key of
the invocation (below): its inputs, each path with its ``lstat`` (type and permission bits, size, modification
and status-change times in nanoseconds, inode, device), or "absent"; what it wrote on each stream, in order;
its exit code (the progress bar on a terminal erases itself and is not kept).  The inputs are every file it
opened for reading and every folder it listed (imports included), every file the walk found (``inputs.note``:
a file the stat memo lets the run skip is found, never opened), every path named on the command line, every module loaded in this process, every entry of ``sys.path``, and
every folder above any of them up to ``/`` (a configuration file, a ``.git`` or a ``pyproject.toml`` created
anywhere a lookup looks is a new entry in one of those folders, which changes the folder's times); for code (a
path below an entry of ``sys.path``, outside the arguments and the current folder) only up to that entry
(``_input_paths``).  A lookup that only asks whether a
path exists, outside the folders the walk lists and those above the inputs, notes the path (``inputs.note``:
the places of the tree's own API definition); an attempt to open a file that is not there is an ``open`` event,
so such a file is an input too ("absent").  No record is left by a run that:

* changed anything outside the cache's own bookkeeping (write mode, ``-o FILE``, ``--report``, a job summary,
  a bundle: ``inputs.Observed.changes``), started a program other than the git processes of ``gitrev.git``
  (a GPU probe; git from a worker), opened a socket or changed its folder (``inputs.Observed.unsupported``), or
  ran without the results cache (``--no-cache``, the configuration's ``cache = false``, no machine key) or with
  ``--verify`` (a verdict is always made afresh; ``run.Run._no_record``);
* wrote to a stream's binary buffer (not kept), or read stdin (the path ``-``);
* has an input that is a symbolic link, or lies below one (a lookup may follow it elsewhere), or that cannot
  be looked at (only "absent" is an answer), or that changed less than ``RACY_NS`` (5 s) before the run
  started: every write sets a file's status-change time to the current time and nothing sets it back, so an
  older input is the one the run read, as the stat memo reasons (``stat_memo.py``).

**Replay.**  Before anything else is imported, a run looks for the record of its invocation; it is replayed
only when its MAC checks under this machine's key (``cache_store``: a record committed to a tree or restored
from another machine is never used), every input's ``lstat`` is what the record says and every git process
the run started (the file list of a git work tree: tracked, untracked and ignored files are git's answer, not
a walk's) gives the same answer again, run as the run ran it: exit code, stdout and stderr.  The key of an
invocation is a SHA-256 over the arguments, the current folder, the whole environment, ``sys.path``, the
interpreter (its path, version and flags), the user and groups, which standard streams are terminals and,
for a terminal, its size, and the streams' encodings: anything else the output could depend on is an input.

The replay answers exactly what the run would: it prints the same bytes on the same streams in the same
order and exits with the same code.  A fresh checkout (a CI job) has new inodes and times, so there every run
is a real one, and a run with ``CI`` set to true (as CI services set it) neither reads nor leaves a record.
``CPASYNC_MIGRATE_REPLAY=0`` turns records off (neither read nor written; a measuring switch,
with an equality test in ``tests/test_replay.py``).
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time

ENABLED = os.environ.get("CPASYNC_MIGRATE_REPLAY", "1") != "0"
# CPASYNC_MIGRATE_REPLAY=explain: one line on stderr, after the run and outside its record, says whether the run
# was replayed, left a record, or why it left none (the setting is in the key: such runs have records of their own)
EXPLAIN = os.environ.get("CPASYNC_MIGRATE_REPLAY") == "explain"
FORMAT = 1
RACY_NS = 5 * 10**9  # an input changed less than this long before the run started: no record
_NOT_INPUTS = ("/proc/", "/sys/", "/dev/")  # the machine's state (the number of workers), not the report's input


def main(argv: list) -> int:
    """The command line ``argv``: replayed where a record of it holds, else run (and recorded)."""
    if not ENABLED or os.name != "posix" or not _recordable(argv):
        return _run(argv)
    from . import streams

    streams.tolerant()  # as the run makes them (cli.main), before the key reads their error handlers
    where = _folder(argv)
    try:
        k = _key(argv)
    except OSError:  # no current folder (it was removed): the run says so, unrecorded
        return _run(argv)
    if where is None:
        return _run(argv)
    code = _replay(where, k)
    if code is not None:
        return code
    return _record(where, k, argv)


def _run(argv: list) -> int:
    from .cli import main as cli_main

    return cli_main(argv)


def _recordable(argv: list) -> bool:
    """Whether the command line can be recorded at all: not stdin (``-``), not ``--no-cache``, not ``rule``, not
    in CI (``CI`` set to true, as CI services set it: a job's checkout is fresh, so no record could ever be
    replayed there, and each job's would only grow the cache a later job restores)."""
    return (argv[:1] != ["rule"] and "-" not in argv and "--no-cache" not in argv
            and os.environ.get("CI", "").strip().lower() not in ("true", "1", "yes")
            and not any(a == "--stdin-filename" or a.startswith("--stdin-filename=") for a in argv))


def _folder(argv: list) -> str | None:
    """Where records are kept: the folder of the last ``--cache-dir`` on the command line, else the cache's
    default folder (a folder a tree's configuration names is never used for records)."""
    where = None
    for i, a in enumerate(argv):
        if a == "--cache-dir" and i + 1 < len(argv):
            where = argv[i + 1]
        elif a.startswith("--cache-dir="):
            where = a.split("=", 1)[1]
    if where:
        return where
    from .cache_store import default_dir

    return default_dir()


def _terminal(fd: int):
    try:
        return [fd, os.isatty(fd), list(os.get_terminal_size(fd)) if os.isatty(fd) else None]
    except OSError:
        return [fd, False, None]


def _key(argv: list) -> str:
    from . import __version__
    from .syspath import as_given

    streams = [[getattr(s, "encoding", None), getattr(s, "errors", None)] for s in (sys.stdout, sys.stderr)]
    material = [
        "cpasync-migrate run record", FORMAT, __version__, sys.executable, sys.version, list(sys.flags),
        sys.argv[0] if sys.argv else "", list(argv), os.getcwd(), sorted(os.environ.items()), list(as_given()),
        list(sys.path), os.getuid(), os.getgid(), sorted(os.getgroups()), [_terminal(fd) for fd in (0, 1, 2)],
        streams,
    ]
    return hashlib.sha256(json.dumps(material).encode("utf-8", "surrogatepass")).hexdigest()


def _stat_key(path: str):
    """What an input's record compares: its ``lstat`` as one string, or None when it is absent; OSError when it
    cannot be looked at."""
    try:
        return _as_text(os.lstat(path))
    except (FileNotFoundError, NotADirectoryError):
        return None


def _as_text(st: os.stat_result) -> str:
    return "%x:%x:%x:%x:%x:%x" % (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def _replay(where: str, k: str) -> int | None:
    """The recorded run's exit code, its output printed, when the record of ``k`` holds; else None."""
    from .cache_store import read_json

    rec = read_json(where, k)
    if not (isinstance(rec, dict) and rec.get("format") == FORMAT and isinstance(rec.get("inputs"), list)
            and isinstance(rec.get("out"), list) and isinstance(rec.get("code"), int)):
        _explain("not replayed: no record of this command line here (or not this machine's)")
        return None
    try:
        for path, want in rec["inputs"]:
            if _stat_key(path) != want:
                _explain(f"not replayed: {path} changed")
                return None
    except (OSError, ValueError, TypeError):
        _explain("not replayed: an input cannot be looked at")
        return None
    if not _same_answers(rec.get("programs")):
        _explain("not replayed: git answers differently")
        return None
    from . import streams

    try:
        for fd, text in rec["out"]:
            (sys.stdout if fd == 1 else sys.stderr).write(text)
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # as a run does (cli.main)
        streams.quiet_stdout()
        return 1
    _explain(f"replayed: {len(rec['inputs'])} inputs and {len(rec['programs'])} git answers unchanged")
    return rec["code"]


def _explain(line: str) -> None:
    if EXPLAIN:
        print(f"cpasync-migrate: run record: {line}", file=sys.stderr)


def _same_answers(programs) -> bool:
    """Whether every git process the recorded run started answers as it did (each is run again)."""
    if not isinstance(programs, list):
        return False
    if not programs:
        return True
    from .gitrev import answer, git

    try:
        for (tool, args, cwd, filters_off), digest in programs:
            if tool != "git" or not isinstance(args, list) or not all(isinstance(a, str) for a in args):
                return False
            r = git(args, cwd, bool(filters_off))
            if answer(r.returncode, r.stdout, r.stderr) != digest:
                return False
    except (OSError, ValueError, TypeError):
        return False
    return True


class _Kept:
    """A standard stream that keeps what is written to it (``out``: [fd, text] in the order written, shared by
    both streams) and passes it on.  Its binary ``buffer`` is not kept: asking for it spoils the record."""

    def __init__(self, stream, fd: int, out: list, spoilt: list):
        self._stream, self._fd, self._out, self._spoilt = stream, fd, out, spoilt

    def write(self, text):
        try:
            n = self._stream.write(text)
        except BaseException:  # the reader went away (`| head`): what was printed is not the run's output
            self._spoilt.append(f"a write to fd {self._fd} failed")
            raise
        self._out.append([self._fd, text])
        return n

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    @property
    def transient(self):
        """The stream itself, for what is not the run's output (the progress bar, which erases itself)."""
        return self._stream

    @property
    def buffer(self):
        self._spoilt.append(f"the binary stream of fd {self._fd}")
        return self._stream.buffer

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _record(where: str, k: str, argv: list) -> int:
    from . import inputs

    start = time.time_ns()
    out: list = []
    spoilt: list = []
    real = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Kept(real[0], 1, out, spoilt), _Kept(real[1], 2, out, spoilt)
    inputs.observe(where)
    try:
        from .cli import main as cli_main  # under observation: whatever its imports read is an input

        code = cli_main(argv)
    except BaseException:
        inputs.collect()
        raise
    finally:
        sys.stdout, sys.stderr = real
    seen = inputs.collect()
    why = ("nothing observed" if seen is None else f"a change ({seen.changes[0]})" if seen.changes
           else seen.unsupported[0] if seen.unsupported else spoilt[0] if spoilt else None)
    _explain(f"none left: {why}" if why else _save(where, k, argv, seen, out, code, start))
    return code


TOP = "/"  # the highest folder an input's parents are taken up to (tests bound it to their own folder)


def _ancestors(path: str, into: set, top: str) -> None:
    while path != TOP and path != top:
        parent = os.path.dirname(path)
        if parent == path or parent in into:
            return
        into.add(parent)
        path = parent


def _input_paths(argv: list, seen, where: str) -> set:
    """Every input of the run (see above) but the records' own folder and what lies below it.

    The folders above an input are inputs up to ``/`` (the upward lookups of configuration files, ``.git`` and
    formatter settings start from the tree's files, the arguments and the current folder), but for code: a
    path below an entry of ``sys.path`` and outside the arguments and the current folder (a module, the rules
    the package carries) has its folders up to that entry, which is an input itself.  What is above an import
    path's entry does not change what is imported from it, and an interpreter that lives below a folder that
    changes all the time (``/tmp``) would otherwise never replay."""
    from .syspath import as_given

    cwd = os.getcwd()
    paths = set(seen.reads)
    named = [cwd]
    for a in argv:  # every argument that could be a path (an option's value included): absent ones too
        for part in ([a] if not a.startswith("-") else [a.split("=", 1)[1]] if "=" in a else []):
            if part:
                named.append(part if os.path.isabs(part) else os.path.join(cwd, part))
    paths.update(named)
    for m in list(sys.modules.values()):
        f = getattr(m, "__file__", None)
        if isinstance(f, str) and os.path.isabs(f):
            paths.add(f)
    entries = sorted({os.path.abspath(e) for e in as_given() if e}, key=len, reverse=True)  # the longest first
    paths.update(e for e in entries if os.path.isdir(e))
    below_named = tuple(os.path.join(n, "") for n in named)
    below_entry = [(os.path.join(e, ""), e) for e in entries]
    folders: set = set()
    for p in paths.difference(entries):  # an import path's entry: itself, not what is above it
        top = TOP
        if not os.path.join(p, "").startswith(below_named):
            top = next((e for inside, e in below_entry if p.startswith(inside)), TOP)
        _ancestors(p, folders, top)
    own = os.path.join(os.path.abspath(where), "")
    return {p for p in paths | folders if not p.startswith(_NOT_INPUTS) and not os.path.join(p, "").startswith(own)}


def _save(where: str, k: str, argv: list, seen, out: list, code: int, start: int) -> str:
    """Leave the record, unless an input is a link, cannot be looked at or changed too recently (see above); what
    was done, for ``CPASYNC_MIGRATE_REPLAY=explain``."""
    import stat

    from .cache_store import write_json

    limit = start - RACY_NS
    racy = f"changed less than {RACY_NS / 1e9:g} s before the run"
    for p in seen.suspects:  # the file edited just before the run refuses the record before the others are looked at
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if max(st.st_mtime_ns, st.st_ctime_ns) > limit:
            return f"none left: {p} {racy}"
    recorded = []
    for p in sorted(_input_paths(argv, seen, where)):
        try:
            st = os.lstat(p)
        except (FileNotFoundError, NotADirectoryError):
            recorded.append([p, None])
            continue
        except (OSError, ValueError) as e:
            return f"none left: {p} cannot be looked at ({e})"
        if stat.S_ISLNK(st.st_mode):
            return f"none left: {p} is a symbolic link"
        if max(st.st_mtime_ns, st.st_ctime_ns) > limit:
            return f"none left: {p} {racy}"
        recorded.append([p, _as_text(st)])
    write_json(where, k, {"format": FORMAT, "inputs": recorded, "programs": seen.programs, "out": out, "code": code})
    return f"left: {len(recorded)} inputs, {len(seen.programs)} git answers"
