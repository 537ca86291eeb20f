"""What a run read, changed and started, as the interpreter's audit events tell it (PEP 578).

One job: while a run is observed (:func:`observe` ... :func:`collect`), gather from every audit event of this
process and of the worker processes it forks:

* **reads**: each path opened for reading (``open``: ``open()``, ``os.open``, the imports' ``io.open_code``) and
  each folder listed (``os.listdir``, ``os.scandir``);
* **changes**: each path opened for writing, created, truncated or appended to, and each event that changes the
  file system (rename, remove, mkdir, chmod, chown, utime, link, symlink, truncate, extended attributes);
  but the interpreter's bytecode cache (``__pycache__``): a bytecode file read stands for its source, and
  writing one (the first run after an install) changes nothing a user asked for;
* **unsupported**: anything the run did that a record of its reads cannot vouch for: a program started
  (``subprocess.Popen``, ``os.system``, ``os.exec``, ``os.posix_spawn``, ``os.spawn``), a socket, a change of the
  current folder.

A worker (forked after :func:`observe`) appends its events to a log file of its own in a private folder (made in
the folder ``observe`` names: the run records' own), one
JSON line per event, written at once (a worker that is killed loses nothing it wrote); :func:`collect` reads
them back.  What the cache store does for itself (``cache_store``: the machine's key, entries, the prune) runs
:func:`unobserved`: bookkeeping, not an input of the run's report nor a change a user asked for.

A path is kept as the event gave it, a relative one joined to the current folder of the run's start; a file
descriptor (``open(fd)``) is passed over: it was opened by a call that was seen.  ``replay.py`` decides what the
gathered events mean; this module only gathers them.  Audit hooks cannot be removed, so one hook is installed
per process, on first use, and does nothing while no run is observed.
"""
from __future__ import annotations

import json
import os
import sys

_DEVNULL = os.devnull
_PYCACHE = os.sep + "__pycache__" + os.sep
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_LISTINGS = frozenset({"os.listdir", "os.scandir"})
_CHANGES = frozenset({
    "os.rename", "os.remove", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.chflags", "os.utime",
    "os.link", "os.symlink", "os.truncate", "os.setxattr", "os.removexattr", "os.mkfifo", "os.mknod",
    "shutil.copyfile", "shutil.copymode", "shutil.copystat", "shutil.copytree", "shutil.rmtree", "shutil.move",
    "shutil.chown", "tempfile.mkstemp", "tempfile.mkdtemp",
})
_UNSUPPORTED = frozenset({
    "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.startfile", "os.forkpty",
    "os.chdir", "pty.spawn", "socket.connect", "socket.bind", "socket.sendto", "socket.getaddrinfo",
    "urllib.Request", "http.client.connect", "ctypes.dlopen",
})

_WATCHED = _LISTINGS | _CHANGES | _UNSUPPORTED | {"open", "os.fork"}


class Observed:
    """The events of one observed run: ``reads`` (paths), ``changes`` and ``unsupported`` (what happened, for a
    message), ``programs`` (the git processes it ran, each as ``ran`` told it)."""

    __slots__ = ("reads", "changes", "unsupported", "programs", "started", "suspects")

    def __init__(self):
        self.reads: set = set()
        self.changes: list = []
        self.unsupported: list = []
        self.programs: list = []
        self.started = 0  # announced programs that started (each must have told its answer)
        self.suspects: list = []  # inputs likely changed just before the run (``suspect``)

    def add(self, kind: str, what: str) -> None:
        if kind == "r":
            self.reads.add(what)
        elif kind == "c":
            self.changes.append(what)
        else:
            self.unsupported.append(what)


_state: Observed | None = None  # the observed run of this process, if any
_parent = 0  # the process that observes (its workers log to files)
_cwd = ""
_logdir: str | None = None
_logs_in: str | None = None
_logfd: int | None = None
_quiet = 0  # > 0 inside ``unobserved`` functions
_busy = False  # the hook's own calls raise events too
_installed = False
_announced = 0  # programs announced by ``announce`` whose start is not an unsupported event
_alarm: tuple | None = None  # (read end, write end) of a pipe: a worker that cannot log writes a byte
_expected: frozenset = frozenset()  # in a worker: the paths of its task, which the parent notes itself (``expect``)


def _path(p) -> str | None:
    if isinstance(p, int):
        return None
    try:
        p = os.fsdecode(p)
    except TypeError:
        return None
    return p if os.path.isabs(p) else os.path.join(_cwd, p)


def _bytecode(path: str) -> bool:
    return _PYCACHE in path or path.endswith(_PYCACHE[:-1])


def _classify(event: str, args) -> tuple | None:
    if event == "open":
        path = _path(args[0])
        if path is None:
            return None
        flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
        mode = args[1] if len(args) > 1 and isinstance(args[1], str) else ""
        write = flags & _WRITE_FLAGS or any(m in mode for m in "wax+")
        if _bytecode(path):  # the interpreter's bytecode cache: its source is the input, its writes change nothing
            return None if write else ("r", _source_of(path))
        return ("c" if write else "r", path)
    if event in _LISTINGS:
        path = _path(args[0]) if args else _cwd
        return None if path is None else ("r", path)
    if event in _CHANGES:
        path = _path(args[0]) if args else None
        if path is not None and _bytecode(path):
            return None
        return ("c", f"{event} {args[0] if args else ''}")
    if event in _UNSUPPORTED:
        return ("u", f"{event} {args[0] if args else ''}"[:300])
    return None


def _source_of(path: str) -> str:
    """The source a bytecode file was compiled from (``dir/__pycache__/name.TAG.pyc`` -> ``dir/name.py``: the
    interpreter checks the bytecode against the source's size and time, so the source is what a run depends on).
    Written out, not ``importlib.util.source_from_cache``: the hook runs inside imports, that one among them."""
    folder, _, leaf = path.rpartition(_PYCACHE)
    return os.path.join(folder, leaf.partition(".")[0] + ".py") if leaf.endswith(".pyc") else path


def _hook(event: str, args) -> None:
    """The audit hook: an error of its own is never the audited call's (it would break the run): it makes the run
    unsupported instead."""
    if event not in _WATCHED:
        return
    try:
        _observe(event, args)
    except Exception as e:  # noqa: BLE001 - see above
        try:
            refuse(f"the observer failed on {event}: {e!r}"[:300])
        except Exception:  # noqa: BLE001
            pass


def _observe(event: str, args) -> None:
    global _announced
    if event == "os.fork":
        _before_fork()
        return
    if _state is None or _state.unsupported or _quiet or _busy:
        return
    got = _classify(event, args)
    if got is None or got == ("c", _DEVNULL):  # writing to the null device changes nothing
        return
    if os.getpid() == _parent:
        if got[0] == "u" and event == "subprocess.Popen" and _announced:
            _announced = 0  # this start is the announced one; ``ran`` tells what it answered
            _state.started += 1
            return
        _state.add(*got)
        return
    if not (got[0] == "r" and got[1] in _expected):
        _log(got)


def _log(got: tuple) -> None:
    """In a worker: one event, appended to this process's log at once."""
    global _busy, _logfd
    if _logdir is None:
        return
    _busy = True
    try:
        if _logfd is None:
            _logfd = os.open(os.path.join(_logdir, str(os.getpid())),
                             os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        os.write(_logfd, (json.dumps(got) + "\n").encode("utf-8", "surrogatepass"))
    except OSError:
        try:  # the event is lost: the parent must not leave a record
            os.write(_alarm[1], b"!")
        except (OSError, TypeError):
            pass
    finally:
        _busy = False


def _before_fork() -> None:
    """On ``os.fork`` in the observing process: the private folder the workers log to, made once, in the folder
    ``observe`` was given (the records' own, which is no input: a folder made in a shared one, such as ``/tmp``,
    would change an input of a tree or an interpreter that lives there)."""
    global _logdir, _busy, _alarm
    if _state is None or _state.unsupported or _logdir is not None or os.getpid() != _parent:
        return
    _busy = True
    try:
        os.makedirs(_logs_in, exist_ok=True)
        name = os.path.join(_logs_in, "inputs-" + os.urandom(8).hex())
        os.mkdir(name, 0o700)
        _logdir = name
        _alarm = os.pipe()
    except (OSError, TypeError):
        _state.add("u", "no folder for the workers' event logs")
    finally:
        _busy = False


def _alarmed() -> bool:
    """Whether a worker wrote to the alarm pipe (read without waiting); the pipe is closed."""
    global _alarm
    r, w = _alarm
    _alarm = None
    try:
        os.set_blocking(r, False)
        return bool(os.read(r, 1))
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        os.close(r)
        os.close(w)


def _install() -> None:
    global _installed
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True


def observe(logs_in: str) -> None:
    """Start gathering this process's events (and those of the workers it forks from now on); the workers' logs
    go to a private folder made in ``logs_in``."""
    global _state, _parent, _cwd, _logdir, _logfd, _announced, _alarm, _logs_in
    _install()
    _logs_in = logs_in
    _state, _parent, _cwd, _logdir, _logfd, _announced, _alarm = (Observed(), os.getpid(), os.getcwd(), None, None,
                                                                   0, None)


def collect() -> Observed | None:
    """Stop gathering; the run's events, the workers' included (None: nothing was observed).  A worker's log
    that cannot be read makes the run unsupported."""
    global _state, _logdir
    got, _state = _state, None
    if got is not None and got.started != len(got.programs):
        got.add("u", "a program started that did not tell its answer")
    if got is not None and _alarm is not None and _alarmed():
        got.add("u", "a worker could not write its event log")
    if got is None or _logdir is None:
        return got
    try:
        for name in sorted(os.listdir(_logdir)):
            full = os.path.join(_logdir, name)
            try:
                with open(full, "rb") as fh:
                    for line in fh:
                        kind, what = json.loads(line)
                        got.add(kind, what)
            except (OSError, ValueError, TypeError):
                got.add("u", f"the event log of worker {name} could not be read")
            try:
                os.unlink(full)
            except OSError:
                pass
        os.rmdir(_logdir)
    except OSError:
        got.add("u", "the workers' event logs could not be read")
    _logdir = None
    return got


def note(path: str) -> None:
    """A path this process found and the run depends on without opening it (a file the walk found): a read."""
    if _state is not None:
        _state.reads.add(path if os.path.isabs(path) else os.path.join(_cwd, path))


def suspect(paths) -> None:
    """Inputs the run found changed since an earlier one (analysed afresh, not from the cache): a record looks at
    them first, so that one changed a moment ago (the edit before the run) refuses it at once."""
    if _state is not None:
        _state.suspects.extend(paths)


def expect(paths) -> None:
    """In a worker: the paths of the task it starts, which the parent found and noted (``note``); their reads
    need not be logged."""
    global _expected
    if _state is not None and os.getpid() != _parent:
        _expected = frozenset(p if os.path.isabs(p) else os.path.join(_cwd, p) for p in paths)


def announce() -> None:
    """The program this process starts next is one whose answer ``ran`` will tell (a git process of
    ``gitrev.git``): its start is not unsupported.  In a worker it is (its answer would not reach the record)."""
    global _announced
    if _state is not None and os.getpid() == _parent:
        _announced = 1


def ran(call: list, digest: str) -> None:
    """The announced program ended: ``call`` (what runs it again: JSON values) and the digest of its answer (exit
    code and output, ``gitrev.answer``); a replay runs it again and compares (``replay.py``)."""
    if _state is not None and os.getpid() == _parent:
        _state.programs.append([call, digest])


def refuse(why: str) -> None:
    """Something the run did that no record of its reads can vouch for (a progress bar, the cache off, an answer
    that depends on time); nothing more is gathered (a run with anything unsupported leaves no record).  In a
    worker too (its log tells the parent)."""
    if _state is None:
        return
    if os.getpid() == _parent:
        _state.unsupported.append(why)
    elif not _busy:
        _log(("u", why))


def unobserved(fn):
    """A function whose file-system calls are the tool's own bookkeeping (the cache store): not gathered."""
    def call(*a, **k):
        global _quiet
        _quiet += 1
        try:
            return fn(*a, **k)
        finally:
            _quiet -= 1
    call.__name__, call.__doc__, call.__wrapped__ = fn.__name__, fn.__doc__, fn
    return call
