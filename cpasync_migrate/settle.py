"""Settle a run's coupled change sets once every file is analysed.

``sets.py`` decides which sets are applied whole and which sites they hold back; this module
carries that decision out on the outcomes: a file with a held site is processed again with
those sites held (so its diff, its re-parse check, its verification and its write cover exactly
what is applied), a file whose write was deferred and holds nothing is written now, and every
member learns its set's id.
"""
from __future__ import annotations

import dataclasses
import os

from . import engine
from .findings import FileOutcome, Status
from .sets import decide, granted, group


# A switch (CPASYNC_MIGRATE_MEMBER_INDEX=0: each finding of a change set looks through all of the set's members for
# its own, as before; a measuring switch).  On: the members listed by their place once (a set of 5,000 definitions
# took 12 s).  tests/test_settle_speedups.py checks the same reports on and off.
MEMBER_INDEX = os.environ.get("CPASYNC_MIGRATE_MEMBER_INDEX", "1") != "0"


def settle(outcomes: list[FileOutcome], settings: engine.RunSettings, paths: list[str],
           accept_partial: bool, rules) -> tuple[list[FileOutcome], list]:
    sets = group(outcomes)
    upstream = dict(rules.python_api.get("upstream", {}))
    held = decide(sets, settings.unsafe_fixes, accept_partial, paths, upstream)
    key_set = {}
    members_at: dict = {}  # (the set's id, (path, line, column, code)) -> its members there (MEMBER_INDEX)
    for cs in sets:
        for m in cs.members:
            key = (m.path, m.finding.line, m.finding.column, m.finding.code)
            key_set[key] = cs
            members_at.setdefault((id(cs), key), []).append(m)
    hold: dict = {}
    for f in held:
        hold.setdefault(f.path, set()).add((f.line, f.column, f.code))
    grant: dict = {}
    for f in granted(sets):
        grant.setdefault(f.path, set()).add((f.line, f.column, f.code))
    out = []
    for o in outcomes:
        if (o.path in hold or o.path in grant) and settings.mode == "check":
            for f in o.findings:  # nothing is written or shown: the statuses say it all
                k = (f.line, f.column, f.code)
                if k in hold.get(o.path, ()):
                    f.status = Status.HELD
                elif k in grant.get(o.path, ()):
                    f.status = Status.REWRITTEN
                    o.changed_flag = True
        elif o.path in hold or o.path in grant:
            o = _again(o, settings, hold.get(o.path, set()), grant.get(o.path, set()))
        elif o.deferred_digest is not None:
            o = engine.finish_deferred(o, settings)
        for f in o.findings:
            cs = key_set.get((o.path, f.line, f.column, f.code))
            if cs is None:
                continue
            f.set_id = cs.id
            # the set reports the findings the outcome now holds (a member's place never changes: found once)
            there = members_at.get((id(cs), (o.path, f.line, f.column, f.code)), ()) if MEMBER_INDEX else cs.members
            for m in there:
                if m.path == o.path and (m.finding.line, m.finding.column, m.finding.code) == \
                        (f.line, f.column, f.code):
                    m.finding = f
            if f.status is Status.HELD:
                f.message += f" [held: change set {cs.id} is {cs.state}]"
        out.append(o)
    return out, sets


def _again(o: FileOutcome, settings: engine.RunSettings, hold: set, grant: set) -> FileOutcome:
    """Process a file again with ``hold`` held and the unsafe fixes in ``grant`` applied: the run applies
    unsafe fixes and holds every other unsafe one, which then reads as unsafe again."""
    keep = set(hold) | set(settings.hold.get(o.path, ()))  # and the run's own holds
    unsafe = set()
    if grant:
        unsafe = {(f.line, f.column, f.code) for f in o.findings
                  if f.status is Status.UNSAFE and (f.line, f.column, f.code) not in grant} - keep
    again = dataclasses.replace(settings, hold={o.path: frozenset(keep | unsafe)}, defer_coupled=False,
                                unsafe_fixes=settings.unsafe_fixes or bool(grant))
    new = engine.process_file(o.path, again, no_write=o.no_write) or o
    for f in new.findings:
        if f.status is Status.HELD and (f.line, f.column, f.code) in unsafe:
            f.status = Status.UNSAFE
    return new
