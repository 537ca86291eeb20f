"""The tree of a path named on the command line, and whether the path leads out of it through a link.

The tree of a named path is the git work tree that holds it: the nearest folder at or above it (above
it for a file or a link), found without following the path's own links (a folder that is a symbolic
link is passed over), that holds a ``.git`` entry; outside git, the current folder when the path lies
in it, else the folder the path lies in.  A named path whose real path (every link followed) is not
inside the real path of its tree leads out of it through a link: write mode refuses it, and every file
below it, unless ``--follow-links-outside`` is given.
"""
from __future__ import annotations

import os
from typing import Optional


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(os.path.join(folder, ""))


def tree_of(path: str) -> str:
    """The tree of ``path`` (see above), as an absolute path that may still hold links."""
    p = os.path.abspath(path)
    start = p if os.path.isdir(p) and not os.path.islink(p) else os.path.dirname(p)
    cur = start
    while True:
        if not os.path.islink(cur) and os.path.lexists(os.path.join(cur, ".git")):
            return cur
        up = os.path.dirname(cur)
        if up == cur:
            break
        cur = up
    try:
        here = os.getcwd()
    except OSError:
        here = None
    if here is not None and _inside(p, here):
        return here
    return os.path.dirname(p)


def leads_outside(path: str) -> Optional[str]:
    """Why write mode refuses ``path`` (None: it does not): it leads through a link out of its tree."""
    try:
        real = os.path.realpath(path)
        tree = tree_of(path)
        real_tree = os.path.realpath(tree)
    except (OSError, ValueError):
        return None  # the reader reports a path that cannot be resolved
    if _inside(real, real_tree):
        return None
    return (f"a symbolic link on the way leads to {real}, outside the tree {tree}; not written "
            "(--follow-links-outside writes it)")
