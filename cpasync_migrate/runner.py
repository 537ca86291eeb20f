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


def _candidates(paths, excludes, respect_gitignore, since_set, counter: list):
    """Yield (path, explicit) for files worth parsing; ``counter[0]`` counts files scanned."""
    explicit = {p for p in paths if not os.path.isdir(p)}
    for path in files.discover(paths, SUFFIXES, excludes, respect_gitignore):
        if since_set is not None and os.path.realpath(path) not in since_set:
            continue
        counter[0] += 1
        is_explicit = path in explicit
        if not is_explicit:
            # byte prefilter: only files that contain the intrinsic's name are parsed
            try:
                with open(path, "rb") as fh:
                    data = fh.read()
            except OSError:
                yield path, is_explicit
                continue
            if files.NEEDLE not in data:
                continue
        yield path, is_explicit


PROGRESS_MIN_FILES = 8


def _progress(total: int):
    """A rich progress bar on stderr for long runs (only when stderr is a terminal)."""
    if total < PROGRESS_MIN_FILES or not sys.stderr.isatty():
        return None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    p = Progress(TextColumn("cpasync-migrate"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                 transient=True)
    task = p.add_task("files", total=total)
    p.start()
    return p, task


def _work(item):
    path, explicit, settings = item
    return process_file(path, settings, explicit)


def run_files(paths: list[str], settings: RunSettings, excludes=(), jobs: int = 1, respect_gitignore=True,
              since: Optional[str] = None, verbose=False, quiet=False,
              show_progress: bool = False) -> tuple[list[FileOutcome], int]:
    since_set = changed_since(since, paths) if since else None
    counter = [0]
    cands = list(_candidates(paths, excludes, respect_gitignore, since_set, counter))
    scanned = counter[0]
    outcomes: list[FileOutcome] = []
    progress = _progress(len(cands)) if (show_progress and not quiet) else None
    try:
        if jobs > 1 and len(cands) > 1:
            with ProcessPoolExecutor(max_workers=min(jobs, len(cands))) as pool:
                for o in pool.map(_work, [(p, e, settings) for p, e in cands], chunksize=1):
                    if o is not None:
                        outcomes.append(o)
                    if progress:
                        progress[0].advance(progress[1])
        else:
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

