"""Writes that follow no link: every file the tool makes outside the files it migrates goes through here.

The folders the tool writes into (the results cache, ``--emit-cuda``, ``--emit-bundle``) may lie in a
tree someone else controls, with links committed in them.  So a folder is opened once, as a file
descriptor, and everything below it is reached through that descriptor: each sub-folder opened with
``O_NOFOLLOW | O_DIRECTORY`` (a link there is refused, never followed), each file written to a new
temporary file created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` in the same folder and renamed over its
name (a rename replaces a link planted under that name; it never writes through it).  Reads of what
such a folder holds use ``O_NOFOLLOW | O_NONBLOCK`` and take only regular files (a FIFO cannot stall
a run).

``open_dir(path)`` opens a folder the user named (the command line, the environment): links on the
way to it are the user's and are followed.  ``open_dir(path, under=root)`` opens a folder a scanned
tree's configuration named: it must lie inside ``root`` and no folder below ``root`` on the way may be
a link.  Folders missing on the way are created (mode ``0o777`` less the umask, or ``mode``).

This module uses only the standard library, so the verifier can use it without sharing code with the
rewriters.
"""
from __future__ import annotations

import os
import stat

_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class UnsafePath(OSError):
    """A folder that may not be written into: a link on the way, or a place outside the allowed root."""


def _parts(rel: str) -> list[str]:
    return [p for p in rel.replace(os.sep, "/").split("/") if p not in ("", ".")]


def inside(path: str, root: str) -> str | None:
    """``path`` relative to ``root`` (``/``-separated, ``""`` for the root itself) when ``path`` lies
    inside it by its text (no ``..`` that climbs out, not elsewhere when absolute); None otherwise."""
    full = os.path.normpath(os.path.join(os.path.abspath(root), path))
    base = os.path.normpath(os.path.abspath(root))
    if full == base:
        return ""
    if not full.startswith(base.rstrip(os.sep) + os.sep):
        return None
    return full[len(base.rstrip(os.sep)) + 1:].replace(os.sep, "/")


def links_below(root: str, rel: str) -> str | None:
    """The first folder on the way from ``root`` to ``root/rel`` that exists and is not a plain folder
    (a link, a file), as a path; None when there is none."""
    cur = root
    for p in _parts(rel):
        cur = os.path.join(cur, p)
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            return None
        if not stat.S_ISDIR(st.st_mode):
            return cur
    return None


def open_subdir(dir_fd: int, name: str, create: bool = True, mode: int = 0o777, shown: str | None = None) -> int:
    """A descriptor of the folder ``name`` inside ``dir_fd``, opened without following a link (created
    when missing and ``create``).  A link or a file of that name: :class:`UnsafePath`, whose message
    names ``shown`` (the folder's path as the user knows it; default ``name``)."""
    shown = shown or name
    if name in ("", ".", "..") or "/" in name or (os.altsep and os.altsep in name):
        raise UnsafePath(f"{shown!r}: not a plain folder name")
    try:
        return os.open(name, _DIR_FLAGS | _NOFOLLOW, dir_fd=dir_fd)
    except FileNotFoundError:
        if not create:
            raise
    except OSError as e:  # ELOOP / ENOTDIR: a link or a file there
        _refuse(dir_fd, name, shown, e)
    try:
        os.mkdir(name, mode, dir_fd=dir_fd)
    except FileExistsError:
        pass  # made meanwhile (by another worker, or planted: the open below decides)
    try:
        return os.open(name, _DIR_FLAGS | _NOFOLLOW, dir_fd=dir_fd)
    except OSError as e:
        _refuse(dir_fd, name, shown, e)
        raise


def _refuse(dir_fd: int, name: str, shown: str, e: OSError) -> None:
    """Raise :class:`UnsafePath` when ``name`` is a link or not a folder; else ``e`` itself."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        raise e from None
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePath(f"{shown}: a link; not followed") from None
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafePath(f"{shown}: not a folder") from None
    raise e


def open_dir(path: str, *, under: str | None = None, create: bool = True, mode: int = 0o777) -> int:
    """A descriptor of the folder ``path`` (see the module docstring); the caller closes it."""
    if under is None:
        if create:
            os.makedirs(path, mode, exist_ok=True)
        return os.open(path, _DIR_FLAGS)
    rel = inside(path, under)
    if rel is None:
        raise UnsafePath(f"{path}: outside {under}")
    fd = os.open(under, _DIR_FLAGS)
    shown = under
    try:
        for p in _parts(rel):
            shown = os.path.join(shown, p)
            sub = open_subdir(fd, p, create, mode, shown)
            os.close(fd)
            fd = sub
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_child(path: str, name: str, *, under: str | None = None, create: bool = True, mode: int = 0o777) -> int:
    """A descriptor of the folder ``name`` inside the folder ``path`` (:func:`open_dir`'s rules for
    ``path`` and ``under``), ``name`` opened without following a link.  The same as opening ``path``
    and then :func:`open_subdir`, in one ``open`` where ``path`` is the user's and both exist."""
    if under is None and name not in ("", ".", "..") and "/" not in name and not (os.altsep and os.altsep in name):
        try:
            return os.open(os.path.join(path, name), _DIR_FLAGS | _NOFOLLOW)
        except OSError:
            pass  # missing, or a link or a file there: the long way creates it or says why
    fd = open_dir(path, under=under, create=create, mode=mode)
    try:
        return open_subdir(fd, name, create, mode, os.path.join(path, name))
    finally:
        os.close(fd)


def write_at(dir_fd: int, name: str, data: bytes, mode: int = 0o666) -> None:
    """Replace ``name`` inside ``dir_fd`` with a new file holding ``data``: a temporary file created there
    with ``O_EXCL | O_NOFOLLOW``, renamed over ``name`` (a link of that name is replaced, not followed)."""
    tmp = _temp_name(name)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0), mode,
                 dir_fd=dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def create_at(dir_fd: int, name: str, data: bytes, mode: int = 0o600) -> bool:
    """Create ``name`` inside ``dir_fd`` holding ``data``, complete or not at all, unless something of that
    name exists (then False: nothing is changed).  A temporary file is written and linked to the name."""
    tmp = _temp_name(name)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0), mode,
                 dir_fd=dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
        except FileExistsError:
            return False
        return True
    finally:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass


def read_at(dir_fd: int, name: str, limit: int = 64 << 20, touch: bool = False) -> bytes | None:
    """The bytes of the regular file ``name`` inside ``dir_fd``, read without following a link and without
    blocking on a FIFO; None when it is missing, not a regular file, or over ``limit`` bytes.  ``touch``:
    also set its times to now (through the open descriptor)."""
    try:
        fd = os.open(name, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0),
                     dir_fd=dir_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        parts, left = [], st.st_size + 1
        while left > 0:
            b = os.read(fd, min(left, 1 << 20))
            if not b:
                break
            parts.append(b)
            left -= len(b)
        if left <= 0:
            return None  # grew while read: over what was measured
        if touch:
            try:
                os.utime(fd)
            except (OSError, NotImplementedError):
                pass
        return b"".join(parts)
    except OSError:
        return None
    finally:
        os.close(fd)


def _temp_name(name: str) -> str:
    return f".{name}.{os.getpid()}.{os.urandom(6).hex()}.tmp"
