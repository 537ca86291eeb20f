"""How many worker processes a run starts by default: the CPUs this process may use."""
from __future__ import annotations

import os
from typing import Optional


def default_jobs(proc_cgroup: str = "/proc/self/cgroup", fs: str = "/sys/fs/cgroup") -> int:
    """The CPUs this process may use: its affinity mask, capped by a cgroup CPU quota.

    ``os.cpu_count()`` is the host's count; a container limited to two CPUs on a 64-core host would
    otherwise fork 64 workers that share two CPUs, each paying its imports.
    """
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    limit = cgroup_cpu_limit(proc_cgroup, fs)
    if limit is not None:
        n = min(n, max(1, -(-limit[0] // limit[1])))  # quota / period, rounded up
    return max(1, n)


def cgroup_cpu_limit(proc_cgroup: str, fs: str) -> Optional[tuple[int, int]]:
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
