"""The results cache's store: entries of JSON under a key, each with an HMAC made with this machine's secret.

``cache.py`` decides what an entry holds (one file's analysis, a re-parse answer, under a key of everything it
depends on); the stat memo (``stat_memo.py``) and the run records (``replay.py``) keep their own entries here.
This module only finds the folder, keeps the machine's key, reads, writes and prunes entries.

Entries are JSON (never pickle: a cache directory restored in CI must not be able to run code), written
atomically; an entry that cannot be read or does not have the expected shape is a miss.  Only this machine's
entries are used.  Each entry carries an HMAC-SHA256 over its key and its JSON, made with a secret kept outside
every tree (``$XDG_CACHE_HOME/cpasync-migrate/key``, else ``~/.cache/cpasync-migrate/key``; 32 random bytes,
created once with mode 0600, ``O_EXCL`` and no link followed); an entry whose MAC does not check (one committed
to the scanned repository, one another machine wrote, an edited one) is a miss.  Without a usable key the cache
is neither read nor written.  Every file of the cache is written and read through :mod:`.safe_write` (no link
followed); the prune deletes only entry files (``??/<62 hex digits>.json``) inside the folder, and the log
folders a killed run's workers left (``inputs-<16 hex digits>/<process id>``, a day old).

What the store reads and writes is the tool's own bookkeeping, never an input of a run's report: it is done
unobserved (``inputs.unobserved``), so a run record does not count it among the run's inputs or side effects.
"""
from __future__ import annotations

import hmac
import json
import os

from . import safe_write
from .inputs import unobserved

ENV = "CPASYNC_MIGRATE_CACHE_DIR"
KEY_BYTES = 32
MAX_ENTRY_BYTES = 64 << 20  # a larger file under an entry's name is a miss, never read whole
# an entry's file is one JSON object: {"mac":"<64 hex digits>","v":<the value, as written>}; the MAC is
# over the value's exact bytes
_HEAD, _TAIL = b'{"mac":"', b'","v":'
_BODY_AT = len(_HEAD) + 64 + len(_TAIL)


def default_dir() -> str | None:
    """``$CPASYNC_MIGRATE_CACHE_DIR``, else ``$XDG_CACHE_HOME/cpasync-migrate/results``, else ``~/.cache/...``;
    None (no cache) when there is no home folder to put it in."""
    env = os.environ.get(ENV)
    if env:
        return env
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        home = os.path.expanduser("~")
        if home.startswith("~"):
            return None  # never a folder named "~" in the current directory
        base = os.path.join(home, ".cache")
    return os.path.join(base, "cpasync-migrate", "results")


def key_dir() -> str | None:
    """The folder of the MAC key: ``$XDG_CACHE_HOME/cpasync-migrate``, else ``~/.cache/cpasync-migrate``
    (never the results folder, which the command line or a tree's configuration may place in a tree);
    None when there is no home folder."""
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        home = os.path.expanduser("~")
        if home.startswith("~"):
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "cpasync-migrate")


_KEYS: dict = {}


def mac_key() -> bytes | None:
    """This machine's secret (read once per process and folder; made on first use); None when it cannot
    be read or made (then the cache is off)."""
    where = key_dir()
    if where not in _KEYS:
        _KEYS[where] = None if where is None else _load_key(where)
    return _KEYS[where]


@unobserved
def _load_key(where: str) -> bytes | None:
    try:
        fd = safe_write.open_dir(where, mode=0o700)
    except OSError:
        return None
    try:
        data = safe_write.read_at(fd, "key", limit=KEY_BYTES)
        if data is None:
            try:
                safe_write.create_at(fd, "key", os.urandom(KEY_BYTES), 0o600)
            except OSError:
                return None
            data = safe_write.read_at(fd, "key", limit=KEY_BYTES)
        return data if data is not None and len(data) == KEY_BYTES else None
    finally:
        os.close(fd)


def _mac(secret: bytes, k: str, body: bytes) -> bytes:
    return hmac.digest(secret, k.encode("ascii", "replace") + b"\0" + body, "sha256").hex().encode()


_ROOTS: dict = {}  # results folder -> the project root a tree's configuration must keep it inside


def _open(directory: str, create: bool) -> int:
    return safe_write.open_dir(directory, under=_ROOTS.get(directory), create=create)


def _open_sub(directory: str, name: str, create: bool) -> int:
    """The entry folder ``name`` of the results folder, opened without following a link."""
    return safe_write.open_child(directory, name, under=_ROOTS.get(directory), create=create)


MAX_AGE_DAYS = 30  # an entry not read or written for this long is deleted
PRUNE_EVERY_S = 24 * 3600  # how often a run looks for such entries


_ENTRY = r"[0-9a-f]{62}\.json"  # the name of an entry file (the prune deletes nothing else)
# the private folder of a run's workers' event logs (inputs.py), left behind only by a run that was killed; the
# prune deletes one a day old, with the logs in it (files named by a worker's process id)
_LOGS = r"inputs-[0-9a-f]{16}"
_LOG = r"[0-9]{1,10}"


@unobserved
def _read(directory: str, k: str):
    """The JSON value of entry ``k`` when its MAC checks under this machine's key (the entry is then
    marked as in use: not pruned); None otherwise."""
    secret = mac_key()
    if secret is None:
        return None
    try:
        sub = _open_sub(directory, k[:2], create=False)
    except OSError:
        return None
    try:
        raw = safe_write.read_at(sub, k[2:] + ".json", limit=MAX_ENTRY_BYTES, touch=True)
    finally:
        os.close(sub)
    if (raw is None or not raw.startswith(_HEAD) or raw[_BODY_AT - len(_TAIL):_BODY_AT] != _TAIL
            or not raw.endswith(b"}")):
        return None
    body = raw[_BODY_AT:-1]
    if not hmac.compare_digest(raw[len(_HEAD):_BODY_AT - len(_TAIL)], _mac(secret, k, body)):
        return None  # not made by this machine (or edited since): a miss
    try:
        return json.loads(body)
    except ValueError:
        return None


def read_json(directory: str, k: str):
    """The JSON value stored under ``k``, or None (another module's entry: the stat memo)."""
    return _read(directory, k)


def write_json(directory: str, k: str, obj) -> None:
    _write(directory, k, obj)


@unobserved
def _write(directory: str, k: str, obj) -> None:
    """Best effort: a cache that cannot be written only costs time."""
    secret = mac_key()
    if secret is None:
        return
    body = json.dumps(obj, separators=(",", ":")).encode("utf-8", "surrogatepass")
    try:
        fd = _open(directory, create=True)
    except OSError:
        return
    try:
        try:
            sub = safe_write.open_subdir(fd, k[:2])
        except OSError:
            return
        try:
            safe_write.write_at(sub, k[2:] + ".json", _HEAD + _mac(secret, k, body) + _TAIL + body + b"}")
        except OSError:
            return
        finally:
            os.close(sub)
        _prune(fd)
    finally:
        os.close(fd)


def _prune(dir_fd: int, now: float | None = None) -> None:
    """At most once a day: delete the entries nobody read or wrote for ``MAX_AGE_DAYS``.

    ``dir_fd``: the results folder, open.  Only entry files are deleted (``??/<62 hex>.json``,
    regular files), in sub-folders that are not links, and the workers' log folders a killed run left
    (``_prune_logs``); the marker ``last-pruned`` is replaced, never written through."""
    import re
    import stat
    import time

    now = time.time() if now is None else now
    try:
        if now - os.stat("last-pruned", dir_fd=dir_fd, follow_symlinks=False).st_mtime < PRUNE_EVERY_S:
            return
    except OSError:
        pass
    try:
        safe_write.write_at(dir_fd, "last-pruned", ("the results cache of cpasync-migrate; entries unused for %d "
                                                    "days are deleted\n" % MAX_AGE_DAYS).encode())
        os.utime("last-pruned", (now, now), dir_fd=dir_fd, follow_symlinks=False)
        for sub in os.scandir(dir_fd):
            if re.fullmatch(_LOGS, sub.name) and sub.is_dir(follow_symlinks=False):
                _prune_logs(dir_fd, sub.name, now)
                continue
            if len(sub.name) != 2 or not sub.is_dir(follow_symlinks=False):
                continue
            try:
                sfd = safe_write.open_subdir(dir_fd, sub.name, create=False)
            except OSError:
                continue
            try:
                for e in os.scandir(sfd):
                    if not re.fullmatch(_ENTRY, e.name) or not e.is_file(follow_symlinks=False):
                        continue
                    st = e.stat(follow_symlinks=False)
                    if stat.S_ISREG(st.st_mode) and now - st.st_mtime > MAX_AGE_DAYS * 86400:
                        os.unlink(e.name, dir_fd=sfd)
            finally:
                os.close(sfd)
    except OSError:
        pass


def _prune_logs(dir_fd: int, name: str, now: float) -> None:
    """Delete the log folder ``name`` of a run that was killed (a live run's is minutes old): when it was last
    changed a day ago or more, its log files (regular files named by a process id; nothing else is deleted),
    then the folder, which is left where anything else is in it."""
    import re
    import stat

    try:
        if now - os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mtime < PRUNE_EVERY_S:
            return
        sfd = safe_write.open_subdir(dir_fd, name, create=False)
    except OSError:
        return
    try:
        for e in os.scandir(sfd):
            if re.fullmatch(_LOG, e.name) and stat.S_ISREG(e.stat(follow_symlinks=False).st_mode):
                os.unlink(e.name, dir_fd=sfd)
    except OSError:
        pass
    finally:
        os.close(sfd)
    try:
        os.rmdir(name, dir_fd=dir_fd)
    except OSError:
        pass


