"""What the tool's entry points may import from: never the current folder, nor a ``PYTHONPATH`` entry
that is the current folder or lies inside it (the folder a user runs the tool in is often the tree it
scans, and CI jobs often set ``PYTHONPATH=.``).  Imports only ``os`` and ``sys``, which the interpreter
has loaded before any code of the tool runs.

Called first by every entry point: ``python -m cpasync_migrate`` (``__main__``), ``python -m
cpasync_migrate.verify.gpu`` and the console script (``console.py``).  The package itself is
imported already; its modules are found through it, not through ``sys.path``.
"""
import os
import sys


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def unsafe_entries(path: list, cwd, pythonpath) -> list:
    """The entries of ``path`` (a ``sys.path``) an entry point must not import from, given the current
    folder (None when it is gone) and the ``PYTHONPATH`` value (None when unset)."""
    bad = set()
    if cwd is not None:
        bad.add(cwd)
        try:
            bad.add(os.path.realpath(cwd))
        except OSError:
            pass
    out = []
    if path and (path[0] == "" or path[0] in bad) and not sys.flags.safe_path:
        out.append(path[0])  # what -m (and -c) put first: the current folder
    for e in (pythonpath or "").split(os.pathsep) if pythonpath else ():
        if not e or not os.path.isabs(e):  # relative: inside the current folder, wherever that is
            out += [e, os.path.normpath(os.path.join(cwd, e))] if cwd is not None else [e]
        elif cwd is not None and any(_inside(os.path.normpath(e), b) or _inside(os.path.realpath(e), b) for b in bad):
            out += [e, os.path.normpath(e)]
    return out


AS_GIVEN = None  # sys.path as the interpreter made it, before drop_unsafe (None: not dropped in this process)


def as_given() -> list:
    """``sys.path`` as Python made it: where a distribution counts as installed (its metadata is read,
    never its code; ``cli.installed_tilelang``), also in a folder the tool does not import from."""
    return AS_GIVEN if AS_GIVEN is not None else sys.path


def drop_unsafe() -> None:
    """Take the current folder and the PYTHONPATH entries in it out of ``sys.path``, and out of the
    ``PYTHONPATH`` the tool's own child processes inherit (the GPU probe, the GPU runner's worker: they
    start in an empty folder, where the entries would no longer look like the current folder)."""
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = None
    global AS_GIVEN
    pythonpath = os.environ.get("PYTHONPATH")
    if AS_GIVEN is None:
        AS_GIVEN = list(sys.path)
    bad = set(unsafe_entries(sys.path, cwd, pythonpath))
    if bad:
        sys.path[:] = [p for p in sys.path if p not in bad]
    if pythonpath is not None:
        kept = [e for e in pythonpath.split(os.pathsep) if e and os.path.isabs(e) and e not in bad]
        if kept:
            os.environ["PYTHONPATH"] = os.pathsep.join(kept)
        else:
            del os.environ["PYTHONPATH"]

