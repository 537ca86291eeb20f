"""Run the per-file pipeline over a tree: discovery, byte prefilter, process pool."""
from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from typing import Iterable, Optional

from . import files
from .engine import RunSettings, process_file
from .findings import FileOutcome

SUFFIXES = files.PYTHON_SUFFIXES + files.CPP_SUFFIXES


def changed_since(rev: str, paths: Iterable[str]) -> set[str]:
    """Absolute paths of files changed (added, copied, modified, renamed) since ``rev``, plus untracked files."""
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


def _discovered(paths, excludes, respect_gitignore, since_set):
    """Yield (path, explicit) for every source file in scope (no reading)."""
    explicit = {p for p in paths if not os.path.isdir(p)}
    for path in files.discover(paths, SUFFIXES, excludes, respect_gitignore):
        if since_set is not None and os.path.realpath(path) not in since_set:
            continue
        yield path, path in explicit


def _worth_parsing(path: str, explicit: bool) -> bool:
    """The byte prefilter: only files that contain the intrinsic's name are parsed."""
    if explicit:
        return True
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return True  # let the reader report it
    return files.NEEDLE in data


_SETTINGS: Optional[RunSettings] = None


def _init_worker(settings: RunSettings) -> None:
    global _SETTINGS
    _SETTINGS = settings


def _prefilter(chunk):
    """Worker: the (path, explicit) pairs of a chunk that are worth parsing."""
    return [pe for pe in chunk if _worth_parsing(*pe)]


def _process(pe):
    return process_file(pe[0], _SETTINGS, pe[1])


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


PROGRESS_MIN_FILES = 8
CHUNK = 64  # paths per task sent to a worker


def _progress(total: int):
    """A rich progress bar on stderr for long runs (only when stderr is a terminal).

    ``total`` None: the tree is still being walked; the bar counts files scanned.
    """
    if (total is not None and total < PROGRESS_MIN_FILES) or not sys.stderr.isatty():
        return None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    p = Progress(TextColumn("cpasync-migrate"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                 transient=True)
    task = p.add_task("files", total=total)
    p.start()
    return p, task


def run_files(paths: list[str], settings: RunSettings, excludes=(), jobs: int = 1, respect_gitignore=True,
              since: Optional[str] = None, verbose=False, quiet=False,
              show_progress: bool = False) -> tuple[list[FileOutcome], int]:
    since_set = changed_since(since, paths) if since else None
    outcomes: list[FileOutcome] = []
    scanned = 0
    if jobs > 1:
        # Stream paths to the pool as the walk finds them; workers read, prefilter and parse,
        # so reading the tree overlaps with walking it.  Memory stays bounded: results for
        # files without the intrinsic are None.
        def pairs():
            nonlocal scanned
            for pe in _discovered(paths, excludes, respect_gitignore, since_set):
                scanned += 1
                yield pe

        with ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker, initargs=(settings,)) as pool:
            # phase 1: read and prefilter in the pool, in chunks, while the walk goes on
            hits = [pe for batch in pool.map(_prefilter, _chunks(pairs(), CHUNK)) for pe in batch]
            # phase 2: parse the hits, largest first, one file per task (balanced)
            hits.sort(key=lambda pe: -_size(pe[0]))
            progress = _progress(len(hits)) if (show_progress and not quiet) else None
            try:
                for o in pool.map(_process, hits):
                    if o is not None:
                        outcomes.append(o)
                    if progress:
                        progress[0].advance(progress[1])
            finally:
                if progress:
                    progress[0].stop()
    else:
        cands = []
        for p, e in _discovered(paths, excludes, respect_gitignore, since_set):
            scanned += 1
            if _worth_parsing(p, e):
                cands.append((p, e))
        progress = _progress(len(cands)) if (show_progress and not quiet) else None
        try:
            for p, e in cands:
                o = process_file(p, settings, e)
                if o is not None:
                    outcomes.append(o)
                if progress:
                    progress[0].advance(progress[1])
        finally:
            if progress:
                progress[0].stop()
    if verbose:
        for o in outcomes:
            print(f"processed {o.path}", file=sys.stderr)
    outcomes.sort(key=lambda o: o.path)
    return outcomes, scanned

