"""Worker processes made by ``os.fork``, fed tasks over pipes (the run's jobs are the caller's)."""
from __future__ import annotations

import os
import sys
from typing import Callable, Optional


class Worker:
    __slots__ = ("pid", "task_fd", "result_fd", "tasks", "out")

    def __init__(self, pid: int, task_fd: int, result_fd: int):
        self.pid, self.task_fd, self.result_fd = pid, task_fd, result_fd
        self.tasks: list = []  # sent (or queued to send) and not yet answered, oldest first
        self.out = bytearray()  # task bytes not yet taken by the pipe


class ForkPool:
    """Worker processes made by ``os.fork``, each with a task pipe and a result pipe.

    Messages are length-prefixed pickles; a worker answers its tasks in order, each with
    ``("ok", handler(task))``, or ``("error", the exception's last line)`` when the handler
    raised.  The parent's task pipes are non-blocking and it keeps what a pipe does not take
    yet, so the parent never blocks writing while a worker blocks writing a large answer.
    ``handler`` runs in the forked children: what it needs must be in place before ``grow``.
    """

    def __init__(self, limit: int, handler: Callable):
        import pickle  # noqa: F401 - what the workers use, imported once here before any is forked, not in each
        import select  # noqa: F401
        import signal  # noqa: F401

        self.handler = handler
        self.limit = limit  # workers to start at most (a dead one is not replaced)
        self.started = 0
        self.workers: list[Worker] = []

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
            _worker_loop(t_r, r_w, self.handler)
        os.close(t_r)
        os.close(r_w)
        os.set_blocking(t_w, False)
        self.workers.append(Worker(pid, t_w, r_r))
        self.started += 1
        return True

    def send(self, w: Worker, task) -> None:
        import pickle

        data = pickle.dumps(task, protocol=pickle.HIGHEST_PROTOCOL)
        w.out += len(data).to_bytes(8, "little") + data
        w.tasks.append(task)
        self._flush(w)

    def _flush(self, w: Worker) -> None:
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

    def _drop(self, w: Worker) -> None:
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


def _worker_loop(t_r: int, r_w: int, handler: Callable) -> None:  # pragma: no cover - runs in the child
    import pickle
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends a worker quietly; the parent reports it
    code = 0
    try:
        while True:
            task = _read_message(t_r)
            if task is None:
                break
            try:
                answer = ("ok", handler(task))
            except Exception:  # noqa: BLE001 - the parent turns it into a finding for that file
                import traceback  # only now: its import would delay every worker's first task

                answer = ("error", traceback.format_exc(limit=3).strip().splitlines()[-1])
            data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
            view = memoryview(len(data).to_bytes(8, "little") + data)
            while view:
                view = view[os.write(r_w, view):]
    except BaseException:  # noqa: BLE001
        code = 1
    finally:
        os._exit(code)
