"""Run the per-file pipeline over a tree: discovery, byte prefilter, worker processes.

With ``-j N`` (N > 1) the work goes to N forked worker processes over pipes (where
``os.fork`` exists; elsewhere a ``ProcessPoolExecutor``).  The main process walks the
tree and hands out chunks of paths; a worker reads each file of a chunk for the
intrinsic's name and sends back the hits; hits then go out one file at a time,
dearest first (``cost.cost_of``), to whichever worker is free.  Results are sorted by path, so the
output does not depend on the number of workers or on timing.

The jobs this schedules live in their own modules: ``gitrev`` (``--since``), ``prefilter``
(the byte prefilter), ``stat_memo`` (the files a run need not read again), ``cost`` (the order in
which hits go out), ``pool`` (the forked workers), ``progress`` (the progress bar); ``cpus`` gives
the default number of workers.
"""
from __future__ import annotations

import os
import sys
from typing import Optional

from . import discovery, files, prefilter, stat_memo
from .engine import NOT_CACHED, RunSettings, error_outcome, forget_folders, language_of, process_file
from .findings import FileOutcome
from .cost import cost_of
from .gitrev import changed_since, since_filter
from .inputs import expect, note, refuse
from .tree import leads_outside
from .pool import ForkPool as _ForkPool  # looked up at run time, so a run can be given another pool
from .progress import progress as _progress

SUFFIXES = files.PYTHON_SUFFIXES + files.CPP_SUFFIXES


def _discovered(paths, excludes, respect_gitignore, since_set, errors=None, skipped=None, special=None,
                keep=None, reasons=None, folders=None, free=None):
    """Yield (path, explicit) for every source file in scope (no reading); unlistable folders go to
    ``errors``, entries that are not regular files to ``skipped`` (in a walk) or ``special`` (named).
    ``keep``: for a file found in a walk, why it is out of scope (its own configuration excludes it), or None;
    called as ``keep(path, regular)``, ``regular`` telling that the walk saw a regular file, not a link.
    ``folders``: what the walk saw of each folder it listed (``discovery.discover``), for ``keep``.
    ``free``: folders (as written: a path less its last ``os.sep`` and name) whose regular files ``keep`` keeps
    whatever their names; it fills the set as it learns them (``run.FREE_FOLDERS``), and such a file is not
    asked about."""
    explicit = {p for p in paths if not os.path.isdir(p)}
    changed = None if since_set is None else since_filter(paths, since_set)
    links: set = set()  # the walk's files that are links (discovery.discover)
    sep = os.sep
    for path in discovery.discover(paths, SUFFIXES, excludes, respect_gitignore, errors, skipped, special, reasons,
                                   links, folders):
        note(path)  # an input of the run, also where the stat memo lets it go unread (replay.py)
        if changed is not None and not changed(path):
            continue
        if keep is not None and path not in explicit:
            regular = path not in links
            if free is not None and regular and path.rpartition(sep)[0] in free:
                yield path, False
                continue
            why = keep(path, regular)
            if why:
                if skipped is not None:
                    skipped.append((path, why))
                continue
        yield path, path in explicit


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

    def __init__(self, paths, skipped: list, follow_links_outside: bool = False):
        self.roots = [os.path.join(os.path.realpath(p), "") for p in paths if os.path.isdir(p)]
        self.named = {os.path.realpath(p) for p in paths if not os.path.isdir(p)}
        self.skipped = skipped
        # named paths that lead out of their tree through a link (tree.py): not written, nor what lies below
        self.outside: list = [] if follow_links_outside else [
            (p, os.path.join(p, "") if os.path.isdir(p) else None, why)
            for p in paths for why in [leads_outside(p)] if why]
        self.held: dict = {}  # (st_dev, st_ino) -> [(is_link, path, explicit), ...]
        self.only: dict = {}  # (st_dev, st_ino) -> path, of hits that are neither links nor hard-linked

    def _refused(self, path: str, explicit: bool) -> Optional[str]:
        for named, below, why in self.outside:
            if path == named if explicit or below is None else path.startswith(below):
                return why
        return None

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
            return (path, explicit, self._refused(path, explicit) if self.outside else None)
        self.held.setdefault((st.st_dev, st.st_ino), []).append((link, path, explicit))
        return None

    def keep_done(self, done, on_outcome) -> None:
        """The outcomes a worker made of hits as it found them (``_prefilter_chunk``): each stands for a
        file with one name; a file with several is held back by ``admit``, processed once all are known."""
        for pe, outcome in done:
            if self.admit(pe) is not None:
                on_outcome(outcome)

    def release(self) -> list:
        out = []
        for key, names in self.held.items():
            names.sort()
            first = self.only.get(key)
            if first is None:
                link, first, explicit = names.pop(0)
                why = self._refused(first, explicit) if self.outside else None
                out.append((first, explicit, why or (self._no_write(first) if link else None)))
            for _, other, _ in names:
                self.skipped.append((other, f"the same file as {first}; processed once, under that name"))
        self.held = {}
        return out


# ---------------------------------------------------------------- workers

_SETTINGS: Optional[RunSettings] = None


def _init_worker(settings: RunSettings, memo=None) -> None:
    global _SETTINGS
    _SETTINGS = settings
    if memo is not None:
        prefilter.MEMO = memo  # a spawned worker (the executor pool): the parent's memo, as pickled


def _process(pe):
    return process_file(pe[0], _SETTINGS, *pe[1:])


def _answer(task):
    """A worker's job: a chunk to prefilter ("pre", see ``_prefilter_chunk``) or a file to process ("file")."""
    kind, arg = task
    expect([pe[0] for pe in arg] if kind == "pre" else [arg[0]])  # the parent noted them (replay.py)
    return _prefilter_chunk(arg) if kind == "pre" else _process(arg)


def _prefilter_chunk(chunk) -> tuple:
    """(hits still to process, the stat memo's changes, [(pair, outcome)] of the hits already done).

    In --check mode with the results cache, a hit whose analysis the cache holds is processed at
    once, in the worker that found it (it costs less than sending it back): a warm run then finishes
    its files while the tree is still being walked.  The parent keeps such an outcome only for a file
    with one name (``_Names.admit``); any other hit is processed as before.
    """
    hits = prefilter.select(chunk)
    done = []
    s = _SETTINGS
    if hits and s is not None and s.cache_dir and s.mode == "check" and EARLY_CACHED:
        rest = []
        for pe in hits:
            o = process_file(pe[0], s, pe[1], only_cached=True)
            if o is NOT_CACHED:
                rest.append(pe)
            else:
                done.append((pe, o))
        hits = rest
    return hits, (prefilter.MEMO.take() if prefilter.MEMO is not None else ({}, [])), done


# A switch (CPASYNC_MIGRATE_EARLY_CACHED=0: every hit waits for the walk, as before; a measuring switch).
EARLY_CACHED = os.environ.get("CPASYNC_MIGRATE_EARLY_CACHED", "1") != "0"


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
    refuse(f"a worker ended while checking {path}")  # no run record (replay.py): another run may not crash
    return error_outcome(path, language_of(path) or "python", f"internal error: {why}; file left unchanged")


# A switch (CPASYNC_MIGRATE_PRELOAD=0: each worker imports the front ends when its first file needs them, as
# before; a measuring switch).  On: a run in which every file that names the intrinsic is analysed (no results
# cache, or write mode) imports both front ends once, before the first worker is forked.
PRELOAD = os.environ.get("CPASYNC_MIGRATE_PRELOAD", "1") != "0"
# the front ends' modules a first analysis imports (one that is gone or fails is passed over: only time is lost)
_FRONT_END_MODULES = ("python", "python.fast", "python.window", "cpp", "cpp.window")


def _before_fork(settings: RunSettings) -> None:
    """What every worker needs, made once in this process before any is forked rather than in each: the byte
    prefilter's needles (they import the suppression module), the modules a file's processing looks its
    layout up in (``engine.process_file``) and, where every hit is analysed (``PRELOAD``), the front ends."""
    files.NEEDLES  # noqa: B018 - computed on first use (files.__getattr__)
    from . import clang_format, line_length  # noqa: F401

    if PRELOAD and (settings.mode == "write" or not settings.cache_dir):
        import importlib

        for name in _FRONT_END_MODULES:
            try:
                importlib.import_module(f"{__package__}.{name}")
            except Exception:  # noqa: BLE001 - the worker that needs it meets the same error and reports it, as before
                pass


def _run_forked(pairs, jobs: int, settings: RunSettings, on_hits, on_outcome, names: "_Names", on_memo) -> None:
    """Prefilter and process with forked workers.

    Prefilter chunks go out as the walk produces them (at most ``DEPTH`` outstanding per
    worker); a worker with nothing outstanding and no chunk waiting gets the largest
    hit found so far.  Workers are forked as work appears, up to ``jobs``: a run over a
    handful of files starts a handful.  A worker that dies loses nothing: its chunks go to the others (or
    are read here), and a file it was parsing is reported as an internal error.
    """
    _init_worker(settings)  # before the first fork: the workers inherit it
    _before_fork(settings)
    pool = _ForkPool(jobs, _answer)
    chunks: list = []  # prefilter chunks not yet sent
    hits: list = []  # (size, pair), ascending: the largest is taken first
    walk = _chunks(pairs, CHUNK)
    walking = True

    def found(pes, release: bool = False, done=()) -> None:
        on_hits(len(pes) + len(done))
        tasks = [t for t in map(names.admit, pes) if t is not None]
        names.keep_done(done, on_outcome)
        if release:
            tasks += names.release()
        hits.extend((cost_of(t[0]), t) for t in tasks)
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
            if status == "ok":
                on_memo(value[1])
                found(value[0], done=value[2])
            else:
                found(prefilter.select(arg))
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
                _finish_here([*chunks, *walk], found, hits, settings, on_outcome)
                return
            if names.held and not prefiltering():
                found([], release=True)  # every hit is known: the files with several names can go
            _dispatch(pool, chunks, hits)
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


def _finish_here(chunks, found, hits: list, settings: RunSettings, on_outcome) -> None:
    """What the forked workers left, prefiltered and processed in this process (the largest hit first)."""
    for c in chunks:
        found(prefilter.select(c))
    found([], release=True)
    for _, pe in reversed(hits):
        on_outcome(process_file(pe[0], settings, *pe[1:]))


def _dispatch(pool: "_ForkPool", chunks: list, hits: list) -> None:
    """Prefilter chunks to every worker (up to ``DEPTH`` outstanding), then the largest hit to each idle
    worker, then one more worker per waiting hit while the pool may grow."""
    for w in pool.workers:
        while len(w.tasks) < DEPTH and chunks:
            pool.send(w, ("pre", chunks.pop(0)))
    for w in pool.workers:
        if not w.tasks and hits:
            pool.send(w, ("file", hits.pop()[1]))
    while hits and pool.grow():  # every worker is busy and files are waiting: one more worker
        pool.send(pool.workers[-1], ("file", hits.pop()[1]))


def _run_executor(pairs, jobs: int, settings: RunSettings, on_hits, on_outcome, names: "_Names", on_memo) -> None:
    """The same work with a ``ProcessPoolExecutor`` (where ``os.fork`` does not exist)."""
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker,
                             initargs=(settings, prefilter.MEMO)) as pool:
        hits = []
        for batch, memo, done in pool.map(_answer, (("pre", c) for c in _chunks(pairs, CHUNK))):
            on_memo(memo)
            on_hits(len(batch) + len(done))
            hits.extend(t for t in map(names.admit, batch) if t is not None)
            names.keep_done(done, on_outcome)
        hits += names.release()
        hits.sort(key=lambda pe: -cost_of(pe[0]))
        for o in pool.map(_process, hits):
            on_outcome(o)


def _stat_memo(settings: RunSettings, paths) -> tuple:
    """(the stat memo for this run, its key), or (None, None) without the results cache or with the
    memo switched off."""
    if not (settings.cache_dir and stat_memo.ENABLED):
        return None, None
    from . import cache

    k = stat_memo.memo_key(cache.salt(settings), paths)
    return stat_memo.load(settings.cache_dir, k, cache.read_json), k


def _run_serial(pairs, settings: RunSettings, on_hits, on_outcome, names: "_Names") -> None:
    """``-j 1``: every file the prefilter selects, processed in this process, chunk by chunk."""
    for chunk in _chunks(pairs, CHUNK):
        for pe in prefilter.select(chunk):
            on_hits(1)
            task = names.admit(pe)
            if task is not None:
                on_outcome(process_file(task[0], settings, *task[1:]))
    for task in names.release():
        on_outcome(process_file(task[0], settings, *task[1:]))


def _unread_outcomes(unlisted: list, special: list) -> list[FileOutcome]:
    """The errors for the folders the walk could not list and the named paths that are not regular files."""
    out = []
    for folder, why in unlisted:
        out.append(error_outcome(folder, "folder", f"cannot list this folder ({why}); the files in it "
                                 "were not checked"))
    for path, what in special:
        out.append(error_outcome(path, language_of(path) or "python", f"{what}, not a regular file; not read"))
    return out


def _not_named_reason() -> str:
    """-v's reason for a file in scope that no front end parsed: the byte prefilter (or, for a file over
    --max-file-size, its search through the whole file) found no name worth parsing in it."""
    from .rules import intrinsic_name

    return (f"does not name {intrinsic_name()} (nor a runtime helper or a suppression comment); "
            "not parsed")


def _say_what_was_read(outcomes: list, skipped: list, looked: list) -> None:
    """-v: ``skipped PATH: WHY`` for every path passed over (by a rule of the walk, the byte prefilter, or
    how the file is stored) and ``processed PATH`` for every file analysed, the paths named as the findings
    name them (paths.rel: `x`, not `./x`)."""
    from .paths import rel

    reported = {o.path for o in outcomes}
    skipped = skipped + [(p, _not_named_reason()) for p in looked if p not in reported]
    skipped += [(o.path, f"{o.error} (CPA900)") for o in outcomes if o.unread]
    for path, why in sorted(set(skipped)):
        print(f"skipped {rel(path)}: {why}", file=sys.stderr)
    for o in sorted(outcomes, key=lambda o: o.path):
        if not o.unread:
            print(f"processed {rel(o.path)}" + (" (analysis from the results cache)" if o.cached else ""),
                  file=sys.stderr)


def run_files(paths: list[str], settings: RunSettings, excludes=(), jobs: int = 1, respect_gitignore=True,
              since: Optional[str] = None, verbose=False, quiet=False,
              show_progress: bool = False, pool: Optional[str] = None,
              follow_links_outside: bool = False, keep=None, folders=None,
              free=None) -> tuple[list[FileOutcome], int]:
    """Every file's outcome (sorted by path) and the number of files in scope.

    ``pool`` picks how ``jobs > 1`` runs: "fork" or "executor" (default: fork where it exists).
    ``follow_links_outside``: write mode also writes a named path that leads out of its tree (tree.py).
    ``keep``: why a file a walk found is out of scope, or None (the per-file configuration: run.py);
    ``folders``: a dict the walk fills with what it saw of each folder (``discovery.discover``), for ``keep``;
    ``free``: the folders whose regular files ``keep`` keeps, a set it fills (``_discovered``).
    """
    since_set = changed_since(since, paths) if since else None
    if not any(os.path.isdir(p) for p in paths):
        jobs = min(jobs, len(paths))  # named files only: one worker each at most (one file: no worker at all)
    outcomes: list[FileOutcome] = []
    scanned = 0
    unlisted: list = []  # folders the walk could not list: their files were not checked
    skipped: list = []  # (path, why) of entries not read: not regular files, second names of one file
    special: list = []  # (path, what) of named paths that are not regular files: errors
    names = _Names(paths, skipped, follow_links_outside or settings.mode != "write")

    def pairs():
        nonlocal scanned
        for pe in _discovered(paths, excludes, respect_gitignore, since_set, unlisted, skipped, special, keep,
                              skipped if verbose else None, folders, free):
            scanned += 1
            if looked is not None:
                looked.append(pe[0])
            if memo is not None and not pe[1]:
                walked.append(pe[0])
            yield pe

    forget_folders()
    memo, memo_key = _stat_memo(settings, paths)
    fresh: dict = {}  # the stat memo's new entries (from every process) ...
    stale: set = set()  # ... and the paths whose old entry no longer holds
    walked: list = []  # the paths the prefilter looked at
    looked: Optional[list] = [] if verbose else None  # -v: every path in scope, to say why one was not parsed

    def on_memo(taken) -> None:
        fresh.update(taken[0])
        stale.update(taken[1])

    # Write mode walks the whole tree before it processes (and so writes) any file: every configuration a
    # file of the run uses is then read and checked (``keep``), and a mistake in one (a ConfigError naming
    # the file and the key) ends the run with nothing written, not half of the tree.  The other modes write
    # nothing, so they walk and process at once.
    listed = iter(list(pairs())) if settings.mode == "write" else None
    prefilter.MEMO = memo

    try:
        with _progress(show_progress and not quiet) as progress:
            def on_outcome(o) -> None:
                if o is not None:
                    outcomes.append(o)
                progress.advance()

            source = listed if listed is not None else pairs()
            if jobs <= 1:
                _run_serial(source, settings, progress.hits, on_outcome, names)
            elif (pool or ("fork" if hasattr(os, "fork") else "executor")) == "fork":
                _run_forked(source, jobs, settings, progress.hits, on_outcome, names, on_memo)
            else:
                _run_executor(source, jobs, settings, progress.hits, on_outcome, names, on_memo)
    finally:
        prefilter.MEMO = None
    if memo is not None:
        on_memo(memo.take())  # what this process read itself (-j 1, or a chunk a dead worker left)
        if not unlisted and since_set is None:  # a folder not listed, or --since (only some files were
            # looked at): the memo of the whole walk stays as it was
            from . import cache

            stat_memo.save(settings.cache_dir, memo_key, memo, memo.entries(walked, fresh, stale), cache.write_json)
    outcomes.extend(_unread_outcomes(unlisted, special))
    if verbose:
        _say_what_was_read(outcomes, skipped, looked)
    outcomes.sort(key=lambda o: o.path)
    return outcomes, scanned
