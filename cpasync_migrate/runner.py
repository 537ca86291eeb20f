"""Run the per-file pipeline over a tree: discovery, byte prefilter, worker processes.

With ``-j N`` (N > 1) the work goes to N forked worker processes over pipes (where
``os.fork`` exists; elsewhere a ``ProcessPoolExecutor``).  The main process walks the
tree and hands out chunks of paths; a worker reads each file of a chunk for the
intrinsic's name and sends back the hits; hits then go out one file at a time,
largest first, to whichever worker is free.  Results are sorted by path, so the
output does not depend on the number of workers or on timing.
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Iterable, Optional

from . import files
from .engine import RunSettings, process_file
from .findings import FileOutcome

SUFFIXES = files.PYTHON_SUFFIXES + files.CPP_SUFFIXES


def changed_since(rev: str, paths: Iterable[str]) -> set[str]:
    """Absolute paths of files changed (added, copied, modified, renamed) since ``rev``, plus untracked files."""
    import subprocess

    from .cli import UsageError

    out: set[str] = set()
    roots = set()
    for p in paths:
        d = p if os.path.isdir(p) else os.path.dirname(os.path.abspath(p))
        try:
            root = subprocess.run(["git", "-C", d, "rev-parse", "--show-toplevel"], capture_output=True,
                                  text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            raise UsageError(f"--since needs a git repository; {p} is not in one") from None
        roots.add(root)
    for root in roots:
        for cmd in (["git", "-C", root, "diff", "--name-only", "-z", "--diff-filter=ACMR", rev, "--"],
                    ["git", "-C", root, "ls-files", "-z", "--others", "--exclude-standard"]):
            r = subprocess.run(cmd, capture_output=True)
            if r.returncode != 0:
                raise UsageError(f"--since {rev}: {r.stderr.decode(errors='replace').strip()}")
            for name in r.stdout.decode("utf-8", "surrogateescape").split("\0"):
                if name:
                    out.add(os.path.realpath(os.path.join(root, name)))
    return out


def default_jobs(proc_cgroup: str = "/proc/self/cgroup", fs: str = "/sys/fs/cgroup") -> int:
    """The CPUs this process may use: its affinity mask, capped by a cgroup CPU quota.

    ``os.cpu_count()`` is the host's count; a container limited to two CPUs on a 64-core host would
    otherwise fork 64 workers that share two CPUs, each paying its imports.
    """
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    limit = _cgroup_cpu_limit(proc_cgroup, fs)
    if limit is not None:
        n = min(n, max(1, -(-limit[0] // limit[1])))  # quota / period, rounded up
    return max(1, n)


def _cgroup_cpu_limit(proc_cgroup: str, fs: str) -> Optional[tuple[int, int]]:
    """(quota, period) in microseconds from cgroup v2 ``cpu.max`` or v1 ``cpu.cfs_quota_us``; None: no limit."""
    try:
        with open(proc_cgroup, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    places = []
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        path = path.strip("/")
        if controllers == "":  # cgroup v2
            places += [(os.path.join(fs, path, "cpu.max"), None), (os.path.join(fs, "cpu.max"), None)]
        elif "cpu" in controllers.split(","):
            for d in (controllers, "cpu", "cpu,cpuacct"):
                places += [(os.path.join(fs, d, path, "cpu.cfs_quota_us"), os.path.join(fs, d, path, "cpu.cfs_period_us")),
                           (os.path.join(fs, d, "cpu.cfs_quota_us"), os.path.join(fs, d, "cpu.cfs_period_us"))]
    for quota_file, period_file in places:
        try:
            with open(quota_file, encoding="utf-8") as fh:
                fields = fh.read().split()
            if period_file is not None:
                with open(period_file, encoding="utf-8") as fh:
                    fields += fh.read().split()
            quota, period = int(fields[0]), int(fields[1])
        except (OSError, ValueError, IndexError):
            continue  # absent, or "max": no limit there
        if quota > 0 and period > 0:
            return quota, period
    return None


def _discovered(paths, excludes, respect_gitignore, since_set, errors=None, skipped=None, special=None):
    """Yield (path, explicit) for every source file in scope (no reading); unlistable folders go to
    ``errors``, entries that are not regular files to ``skipped`` (in a walk) or ``special`` (named)."""
    explicit = {p for p in paths if not os.path.isdir(p)}
    changed = None if since_set is None else _since_filter(paths, since_set)
    for path in files.discover(paths, SUFFIXES, excludes, respect_gitignore, errors, skipped, special):
        if changed is not None and not changed(path):
            continue
        yield path, path in explicit


def _since_filter(paths, since_set: set[str]):
    """Whether a discovered path is in ``since_set`` (real paths), without resolving every path.

    The walk does not enter symbolically linked folders, so below a folder argument the real path
    of a file that is not itself a link is the folder's real path plus the rest of the path.  Only
    links and files named on the command line are resolved (``os.path.realpath`` costs about 0.1 ms,
    1.4 s over a 15,000-file tree).
    """
    roots = []
    for p in paths:
        if os.path.isdir(p):
            roots.append((p if p.endswith(os.sep) else p + os.sep, os.path.join(os.path.realpath(p), "")))
    roots.sort(key=lambda r: -len(r[0]))  # the innermost folder argument first (it may be reached through a link)

    def changed(path: str) -> bool:
        for prefix, real in roots:
            if path.startswith(prefix):
                if real + path[len(prefix):] in since_set:
                    return True
                if not os.path.islink(path):
                    return False
                break
        return os.path.realpath(path) in since_set

    return changed


# ---------------------------------------------------------------- byte prefilter

_BLOCK = 1 << 18  # bytes per read; a file that fills a whole block is searched through a memory map
_MMAP = True  # tests turn the memory map off to exercise the block loop
_READV = hasattr(os, "readv")


def _prefilter(chunk):
    """The (path, explicit) pairs of a chunk that are worth parsing: the byte prefilter.

    Only files that contain the intrinsic's name are parsed.  A file is read into one
    reused buffer (no new bytes object per file); one that fills the buffer is searched
    whole through a memory map, or block by block where that fails.  A file that cannot
    be opened or read is kept: the reader reports it.  This loop runs once per file of
    the tree, so it is written flat, with everything it uses in local variables.
    """
    n0, n1, n2 = files.NEEDLES
    block = _BLOCK
    buf = _buffer()
    find = buf.find
    opn, cls, rd = os.open, os.close, os.readv if _READV else None
    flags = files._OPEN_READ  # non-blocking: a FIFO put in place of a file after the walk cannot stall the run
    out = []
    with memoryview(buf) as mv:
        bufs = [mv[:block]]
        for pe in chunk:
            if pe[1]:
                out.append(pe)
                continue
            try:
                fd = opn(pe[0], flags)
            except OSError:
                out.append(pe)
                continue
            try:
                if rd is not None:
                    n = rd(fd, bufs)
                else:
                    data = os.read(fd, block)
                    n = len(data)
                    mv[:n] = data
                hit = (find(n0, 0, n) != -1 or find(n1, 0, n) != -1 or find(n2, 0, n) != -1
                       or (n == block and _rest_has(fd, buf, block)))
            except OSError:
                hit = True
            finally:
                cls(fd)
            if hit:
                out.append(pe)
    return out


def _rest_has(fd: int, buf: bytearray, block: int) -> bool:
    """After a first block of ``block`` bytes (already in ``buf``) without the name: the rest of the file."""
    needles = files.NEEDLES
    keep = max(map(len, needles)) - 1
    import stat

    if not stat.S_ISREG(os.fstat(fd).st_mode):
        return True  # a device or pipe (put there after the walk) never ends: the reader reports it
    if _MMAP:
        import mmap

        try:
            with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as m:
                return any(m.find(n, max(0, block - keep)) != -1 for n in needles)
        except (OSError, ValueError):
            pass  # not mappable (a pipe, a special file): read on
    os.lseek(fd, block, os.SEEK_SET)
    with memoryview(buf) as mv:
        have = min(keep, block)  # the last bytes of the previous block go in front of the next
        buf[:have] = buf[block - have : block]
        while True:
            data = os.read(fd, block)
            if not data:
                return False
            n = len(data)
            mv[have : have + n] = data
            if any(buf.find(nd, 0, have + n) != -1 for nd in needles):
                return True
            tail = max(0, have + n - keep)
            buf[: have + n - tail] = buf[tail : have + n]
            have = have + n - tail


_BUF: Optional[bytearray] = None


def _buffer() -> bytearray:
    global _BUF
    size = _BLOCK + max(map(len, files.NEEDLES))
    if _BUF is None or len(_BUF) != size:
        _BUF = bytearray(size)
    return _BUF


def _worth_parsing(path: str, explicit: bool) -> bool:
    """The byte prefilter for one file."""
    return bool(_prefilter([(path, explicit)]))


# ---------------------------------------------------------------- one file, one name


class _Names:
    """The rules on links and hard links, applied to the files worth parsing (few; each costs
    an ``lstat`` and a ``stat`` here).

    - A file reached through several names (symbolic links, hard links, a link and the real path)
      is processed once, under the first of its names in (not a link, path) order; the others go
      to ``skipped``.  A hit that has other names is held back until the walk is over, so the
      choice does not depend on timing.
    - A name that is a symbolic link is processed (the write goes to the file it leads to, the link
      stays), but write mode does not write it when the file lies outside the scanned paths: the
      real paths of the folder arguments and of the files named on the command line.

    ``admit`` turns a (path, explicit) pair into a (path, explicit, no_write) task, or holds it
    back (None); ``release`` gives the tasks held back, once every hit has been admitted.
    """

    def __init__(self, paths, skipped: list):
        self.roots = [os.path.join(os.path.realpath(p), "") for p in paths if os.path.isdir(p)]
        self.named = {os.path.realpath(p) for p in paths if not os.path.isdir(p)}
        self.skipped = skipped
        self.held: dict = {}  # (st_dev, st_ino) -> [(is_link, path, explicit), ...]
        self.only: dict = {}  # (st_dev, st_ino) -> path, of hits that are neither links nor hard-linked

    def _no_write(self, path: str) -> Optional[str]:
        real = os.path.realpath(path)
        if real in self.named or any(real.startswith(r) for r in self.roots):
            return None
        return f"a symbolic link to {real}, outside the scanned paths; not written"

    def admit(self, pe):
        path, explicit = pe[0], pe[1]
        try:
            link = os.path.islink(path)
            st = os.stat(path)
        except OSError:
            return (path, explicit, None)  # the reader reports it
        if not link and st.st_nlink <= 1:
            self.only[(st.st_dev, st.st_ino)] = path  # its one real name: it wins over any link to it
            return (path, explicit, None)
        self.held.setdefault((st.st_dev, st.st_ino), []).append((link, path, explicit))
        return None

    def release(self) -> list:
        out = []
        for key, names in self.held.items():
            names.sort()
            first = self.only.get(key)
            if first is None:
                link, first, explicit = names.pop(0)
                out.append((first, explicit, self._no_write(first) if link else None))
            for _, other, _ in names:
                self.skipped.append((other, f"the same file as {first}; processed once, under that name"))
        self.held = {}
        return out


# ---------------------------------------------------------------- workers

_SETTINGS: Optional[RunSettings] = None


def _init_worker(settings: RunSettings) -> None:
    global _SETTINGS
    _SETTINGS = settings


def _process(pe):
    return process_file(pe[0], _SETTINGS, *pe[1:])


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _chunks(pairs, size: int):
    chunk = []
    for p in pairs:
        chunk.append(p)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


CHUNK = 128  # paths per prefilter task
DEPTH = 8  # prefilter tasks outstanding per worker: a worker never waits for the parent to be scheduled


def _crash_outcome(path: str, why: str) -> FileOutcome:
    from .engine import _error_outcome, language_of

    return _error_outcome(path, language_of(path) or "python", f"internal error: {why}; file left unchanged")


class _Worker:
    __slots__ = ("pid", "task_fd", "result_fd", "tasks", "out")

    def __init__(self, pid: int, task_fd: int, result_fd: int):
        self.pid, self.task_fd, self.result_fd = pid, task_fd, result_fd
        self.tasks: list = []  # sent (or queued to send) and not yet answered, oldest first
        self.out = bytearray()  # task bytes not yet taken by the pipe


class _ForkPool:
    """Worker processes made by ``os.fork``, each with a task pipe and a result pipe.

    Messages are length-prefixed pickles; a worker answers its tasks in order.  The
    parent's task pipes are non-blocking and it keeps what a pipe does not take yet, so
    the parent never blocks writing while a worker blocks writing a large answer.
    """

    def __init__(self, limit: int, settings: RunSettings):
        _init_worker(settings)
        self.limit = limit  # workers to start at most (a dead one is not replaced)
        self.started = 0
        self.workers: list[_Worker] = []

    def grow(self) -> bool:
        """Start one more worker, unless ``limit`` were started already."""
        if self.started >= self.limit:
            return False
        sys.stdout.flush()
        sys.stderr.flush()
        t_r, t_w = os.pipe()
        r_r, r_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child (its coverage is not collected)
            for w in self.workers:
                os.close(w.task_fd)
                os.close(w.result_fd)
            os.close(t_w)
            os.close(r_r)
            _worker_loop(t_r, r_w)
        os.close(t_r)
        os.close(r_w)
        os.set_blocking(t_w, False)
        self.workers.append(_Worker(pid, t_w, r_r))
        self.started += 1
        return True

    def send(self, w: _Worker, task) -> None:
        import pickle

        data = pickle.dumps(task, protocol=pickle.HIGHEST_PROTOCOL)
        w.out += len(data).to_bytes(8, "little") + data
        w.tasks.append(task)
        self._flush(w)

    def _flush(self, w: _Worker) -> None:
        try:
            while w.out:
                del w.out[: os.write(w.task_fd, w.out)]
        except BlockingIOError:
            pass
        except OSError:  # the worker is gone; wait() finds its result pipe closed
            w.out.clear()

    def wait(self, timeout: Optional[float] = None):
        """Wait for one answer: (task, answer, lost); answer None when the worker died, with
        ``lost`` its other unanswered tasks.  Returns None when nothing came within ``timeout``."""
        import select

        busy = [w for w in self.workers if w.tasks]
        writing = [w.task_fd for w in busy if w.out]
        ready, writable, _ = select.select([w.result_fd for w in busy], writing, [], timeout)
        for w in busy:
            if w.task_fd in writable:
                self._flush(w)
        if not ready:
            return None
        w = next(w for w in busy if w.result_fd == ready[0])
        task = w.tasks.pop(0)
        msg = _read_message(w.result_fd)
        if msg is None:
            lost = w.tasks
            self._drop(w)
            return task, None, lost
        return task, msg, []

    def _drop(self, w: _Worker) -> None:
        self.workers.remove(w)
        _close(w.task_fd)
        _close(w.result_fd)
        _reap(w.pid)

    def close(self) -> None:
        for w in self.workers:
            _close(w.task_fd)  # EOF: each worker exits after its current task
        for w in self.workers:
            _close(w.result_fd)
            _reap(w.pid)
        self.workers = []


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def _read_exact(fd: int, n: int) -> Optional[bytes]:
    parts = []
    while n:
        b = os.read(fd, min(n, 1 << 20))
        if not b:
            return None
        parts.append(b)
        n -= len(b)
    return b"".join(parts)


def _read_message(fd: int):
    import pickle

    head = _read_exact(fd, 8)
    if head is None:
        return None
    body = _read_exact(fd, int.from_bytes(head, "little"))
    return None if body is None else pickle.loads(body)


def _worker_loop(t_r: int, r_w: int) -> None:  # pragma: no cover - runs in the child
    import pickle
    import signal
    import traceback

    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends a worker quietly; the parent reports it
    code = 0
    try:
        while True:
            task = _read_message(t_r)
            if task is None:
                break
            kind, arg = task
            try:
                answer = ("ok", _prefilter(arg) if kind == "pre" else _process(arg))
            except Exception:  # noqa: BLE001 - the parent turns it into a finding for that file
                answer = ("error", traceback.format_exc(limit=3).strip().splitlines()[-1])
            data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
            view = memoryview(len(data).to_bytes(8, "little") + data)
            while view:
                view = view[os.write(r_w, view):]
    except BaseException:  # noqa: BLE001
        code = 1
    finally:
        os._exit(code)


def _run_forked(pairs, jobs: int, settings: RunSettings, on_hits, on_outcome, names: "_Names") -> None:
    """Prefilter and process with forked workers.

    Prefilter chunks go out as the walk produces them (at most ``DEPTH`` outstanding per
    worker); a worker with nothing outstanding and no chunk waiting gets the largest
    hit found so far.  Workers are forked as work appears, up to ``jobs``: a run over a
    handful of files starts a handful.  A worker that dies loses nothing: its chunks go to the others (or
    are read here), and a file it was parsing is reported as an internal error.
    """
    pool = _ForkPool(jobs, settings)
    chunks: list = []  # prefilter chunks not yet sent
    hits: list = []  # (size, pair), ascending: the largest is taken first
    walk = _chunks(pairs, CHUNK)
    walking = True

    def found(pes, release: bool = False) -> None:
        on_hits(len(pes))
        tasks = [t for t in map(names.admit, pes) if t is not None]
        if release:
            tasks += names.release()
        hits.extend((_size(t[0]), t) for t in tasks)
        hits.sort(key=lambda x: x[0])

    def prefiltering() -> bool:
        return walking or bool(chunks) or any(t[0] == "pre" for w in pool.workers for t in w.tasks)

    def answered(task, msg, lost) -> None:
        kind, arg = task
        if msg is None:
            for kind2, arg2 in [task, *lost]:
                if kind2 == "pre":
                    chunks.append(arg2)
                else:
                    on_outcome(_crash_outcome(arg2[0], "a worker process ended while checking this file"))
            return
        status, value = msg
        if kind == "pre":
            found(value if status == "ok" else _prefilter(arg))
        else:
            on_outcome(value if status == "ok" else _crash_outcome(arg[0], value))

    try:
        while True:
            if walking and len(chunks) < DEPTH * max(1, len(pool.workers)):
                nxt = next(walk, None)
                if nxt is None:
                    walking = False
                else:
                    chunks.append(nxt)
            if (chunks or hits) and all(w.tasks for w in pool.workers):
                pool.grow()  # workers start as work appears: a run over a few files forks a few
            if not pool.workers:  # every worker died (or none could start): finish in this process
                for c in [*chunks, *walk]:
                    found(_prefilter(c))
                found([], release=True)
                for _, pe in reversed(hits):
                    on_outcome(process_file(pe[0], settings, *pe[1:]))
                return
            if names.held and not prefiltering():
                found([], release=True)  # every hit is known: the files with several names can go
            for w in pool.workers:
                while len(w.tasks) < DEPTH and chunks:
                    pool.send(w, ("pre", chunks.pop(0)))
            for w in pool.workers:
                if not w.tasks and hits:
                    pool.send(w, ("file", hits.pop()[1]))
            while hits and pool.grow():  # every worker is busy and files are waiting: one more worker
                pool.send(pool.workers[-1], ("file", hits.pop()[1]))
            if not any(w.tasks for w in pool.workers):
                if not walking and not chunks and not hits:
                    return
                continue
            # while walking, only pick up answers that are already there
            got = pool.wait(0 if walking and len(chunks) < DEPTH * len(pool.workers) else None)
            if got is not None:
                answered(*got)
    finally:
        pool.close()


def _run_executor(pairs, jobs: int, settings: RunSettings, on_hits, on_outcome, names: "_Names") -> None:
    """The same work with a ``ProcessPoolExecutor`` (where ``os.fork`` does not exist)."""
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker, initargs=(settings,)) as pool:
        hits = []
        for batch in pool.map(_prefilter, _chunks(pairs, CHUNK)):
            on_hits(len(batch))
            hits.extend(t for t in map(names.admit, batch) if t is not None)
        hits += names.release()
        hits.sort(key=lambda pe: -_size(pe[0]))
        for o in pool.map(_process, hits):
            on_outcome(o)


PROGRESS_MIN_FILES = 8


class _Progress:
    """A rich progress bar on stderr for long runs (only on a terminal), over the files parsed."""

    def __init__(self, enabled: bool):
        self.enabled = enabled and sys.stderr.isatty()
        self.total = 0
        self.done = 0
        self.bar = None
        self.task = None

    def hits(self, n: int) -> None:
        self.total += n
        if self.bar is None and self.enabled and self.total >= PROGRESS_MIN_FILES:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("cpasync-migrate"), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), transient=True, console=Console(stderr=True))
            self.bar.start()
            self.task = self.bar.add_task("files", total=self.total, completed=self.done)
        elif self.bar is not None:
            self.bar.update(self.task, total=self.total)

    def advance(self) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.update(self.task, completed=self.done)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


@contextmanager
def _progress(enabled: bool):
    p = _Progress(enabled)
    try:
        yield p
    finally:
        p.stop()


def run_files(paths: list[str], settings: RunSettings, excludes=(), jobs: int = 1, respect_gitignore=True,
              since: Optional[str] = None, verbose=False, quiet=False,
              show_progress: bool = False, pool: Optional[str] = None) -> tuple[list[FileOutcome], int]:
    """Every file's outcome (sorted by path) and the number of files in scope.

    ``pool`` picks how ``jobs > 1`` runs: "fork" or "executor" (default: fork where it exists).
    """
    since_set = changed_since(since, paths) if since else None
    if not any(os.path.isdir(p) for p in paths):
        jobs = min(jobs, len(paths))  # named files only: one worker each at most (one file: no worker at all)
    outcomes: list[FileOutcome] = []
    scanned = 0
    unlisted: list = []  # folders the walk could not list: their files were not checked
    skipped: list = []  # (path, why) of entries not read: not regular files, second names of one file
    special: list = []  # (path, what) of named paths that are not regular files: errors
    names = _Names(paths, skipped)

    def pairs():
        nonlocal scanned
        for pe in _discovered(paths, excludes, respect_gitignore, since_set, unlisted, skipped, special):
            scanned += 1
            yield pe

    with _progress(show_progress and not quiet) as progress:
        def on_outcome(o) -> None:
            if o is not None:
                outcomes.append(o)
            progress.advance()

        if jobs <= 1:
            for chunk in _chunks(pairs(), CHUNK):
                for pe in _prefilter(chunk):
                    progress.hits(1)
                    task = names.admit(pe)
                    if task is not None:
                        on_outcome(process_file(task[0], settings, *task[1:]))
            for task in names.release():
                on_outcome(process_file(task[0], settings, *task[1:]))
        elif (pool or ("fork" if hasattr(os, "fork") else "executor")) == "fork":
            _run_forked(pairs(), jobs, settings, progress.hits, on_outcome, names)
        else:
            _run_executor(pairs(), jobs, settings, progress.hits, on_outcome, names)
    if unlisted or special:
        from .engine import _error_outcome, language_of

        for folder, why in unlisted:
            outcomes.append(_error_outcome(folder, "folder", f"cannot list this folder ({why}); the files in it "
                                           "were not checked"))
        for path, what in special:
            outcomes.append(_error_outcome(path, language_of(path) or "python",
                                           f"{what}, not a regular file; not read"))
    if verbose:
        for path, why in sorted(skipped):
            print(f"skipped {path}: {why}", file=sys.stderr)
        for o in sorted(outcomes, key=lambda o: o.path):
            print(f"processed {o.path}" + (" (analysis from the results cache)" if o.cached else ""), file=sys.stderr)
    outcomes.sort(key=lambda o: o.path)
    return outcomes, scanned
