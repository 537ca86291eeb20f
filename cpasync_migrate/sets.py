"""Coupled change sets: everything that builds, reads, defines or calls one op changes together.

What: the sites of one IR op across the scanned files form one set: C++ constructions
(``builder``), code generators, the shared-memory merge pass and any pass or runtime helper
that reads the call's arguments (``reader``), the Python API's own definition (``definition``),
and the kernels and tests that call that definition where the tree defines it (``caller``).
``builtin::ptx_cp_async()`` (``tir.ptx_cp_async``) and ``tl::ptx_cp_async()``
(``tl.ptx_cp_async``) are different ops, so different sets.

Why: a tree whose builders emit the new layout while a reader still expects the old one is a
broken compiler, although every edit is right on its own; the same holds for a fork whose
API definition and its callers disagree.

Rules (``decide``):

* A set is **incomplete** when it has builders (or a definition) but no reader, or readers but
  no builder: the scanned paths cannot show the whole program.  Nothing of it is applied
  unless ``accept_partial`` (``--accept-partial-sets``).
* Default mode applies a set only when every legacy member is rewritten by a safe fix; any
  member left for a person, not fixed without ``--unsafe-fixes``, suppressed, or in a file
  that cannot be parsed **blocks** it, and its other members are **held** (status ``held``).
* A member whose fix rests only on facts the set establishes (``Fix.set_established``: "every
  producer of this call now builds the access-pointer layout" for a reader, a registration's
  new arity) is **exact given the set**: in a complete set (builders and readers in view, not
  merely accepted with ``accept_partial``) in which every other legacy member is rewritten or
  exact given the set, it is applied by default (``ChangeSet.granted``), since the same run
  migrates every producer it depends on.  Elsewhere it is an unsafe fix like any other.
* A set whose members' files are migrated to different targets (each file's own configuration names
  its target) is **held** whatever the options: one change to one program cannot take two API
  generations, and which one the program needs is not the tool's to guess.
* With ``--unsafe-fixes`` every automatic member is applied and the members left for a person
  make the set's checklist, unless a member stays in the legacy form whatever is applied (a
  suppression comment keeps it, or its file cannot be parsed): then the set is held too.

Pure: takes findings with their engine status, returns the sets and which findings to hold (and,
in each set's ``granted``, which unsafe ones to apply).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

from . import codes
from .findings import Finding, Status

BUILDERS = ("builder", "definition")
READERS = ("reader",)


@dataclass
class Member:
    path: str
    finding: Finding
    target: Optional[str] = None  # the generation its file is migrated to (FileOutcome.target)

    @property
    def role(self) -> str:
        return self.finding.role or ""


@dataclass
class ChangeSet:
    id: str
    op: str
    members: list = field(default_factory=list)  # Member, in path/line order
    state: str = "applied"  # "applied" | "held" | "incomplete" | "partial"
    why: str = ""  # one sentence: what keeps it from being applied whole
    blockers: list = field(default_factory=list)  # (Member, reason)
    checklist: list = field(default_factory=list)  # (Member, what to change, upstream commit or "")
    command: str = ""  # what would apply the rest
    granted: list = field(default_factory=list)  # Member: unsafe only by a fact the set establishes, applied

    def roles(self) -> dict:
        out: dict = {}
        for m in self.members:
            out[m.role] = out.get(m.role, 0) + 1
        return out

    def to_dict(self) -> dict:
        return {
            "id": self.id, "op": self.op, "state": self.state, "why": self.why, "command": self.command,
            "roles": self.roles(),
            "members": [{"path": m.path, "line": m.finding.line, "code": m.finding.code, "role": m.role,
                         "status": m.finding.status.value if m.finding.status else None} for m in self.members],
            "blockers": [{"path": m.path, "line": m.finding.line, "code": m.finding.code, "reason": r}
                         for m, r in self.blockers],
            "checklist": [{"path": m.path, "line": m.finding.line, "code": m.finding.code, "change": c,
                           "upstream": u} for m, c, u in self.checklist],
        }


def group(outcomes: Iterable) -> list[ChangeSet]:
    """The change sets of a run: one per op, its members the findings that name a role.

    Python calls of the intrinsic (role ``caller``, no op of their own) join the set of the op
    that a definition in the scanned tree builds; without such a definition they stand alone.
    """
    by_op: dict[str, ChangeSet] = {}
    callers: list[Member] = []
    defined: list[str] = []
    for o in outcomes:
        for f in o.findings:
            if not f.role:
                continue
            m = Member(o.path, f, getattr(o, "target", None))
            if f.role == "caller" and not f.op:
                callers.append(m)
                continue
            if not f.op:
                continue
            cs = by_op.setdefault(f.op, ChangeSet(id=f.op, op=f.op))
            cs.members.append(m)
            if f.role == "definition" and o.language == "python" and f.op not in defined:
                defined.append(f.op)
    for op in defined[:1]:  # the tree's own Python API: its callers are part of the op it builds
        by_op[op].members.extend(callers)
    for cs in by_op.values():
        cs.members.sort(key=lambda m: (m.path, m.finding.line, m.finding.column))
    return [by_op[k] for k in sorted(by_op)]


def decide(sets: list[ChangeSet], unsafe_fixes: bool, accept_partial: bool, paths: list[str],
           upstream: Optional[dict] = None) -> list[Finding]:
    """Fill each set's state; return the findings whose fixes must be held back."""
    upstream = upstream or {}
    held: list[Finding] = []
    where = " ".join(paths) or "."
    for cs in sets:
        legacy = [m for m in cs.members if m.finding.legacy_site]
        roles = {m.role for m in cs.members}
        has_builder = bool(roles & set(BUILDERS))
        has_reader = bool(roles & set(READERS))
        applying = [m for m in legacy if m.finding.status is Status.REWRITTEN]
        for m in legacy:
            if m.finding.status is Status.MANUAL and m.finding.fix is None:
                cs.checklist.append((m, _first_line(m.finding.message), upstream_for(upstream, m.path)))
        targets = sorted({m.target for m in cs.members if m.target})
        if len(targets) > 1:
            cs.state = "held"
            cs.blockers.extend((m, f"its file is migrated to {m.target}") for m in legacy)
            cs.why = (f"its members' files are migrated to different targets ({', '.join(targets)}): one change "
                      f"to one program takes one API generation, so none of the set's {len(legacy)} legacy "
                      "site(s) is rewritten")
            cs.command = ("give every file of the set the same target (one `target` in their configurations, or "
                          f"`--target`), then `cpasync-migrate {where}`")
            held.extend(m.finding for m in applying)
            continue
        if not (has_builder and has_reader) and not accept_partial:
            cs.state = "incomplete"
            found, missing = ("builders", "reader") if has_builder else ("readers", "builder")
            cs.why = (f"the scanned paths hold {found} of {cs.op} but no {missing}: the rest of the program "
                      "is not in view, so a rewrite could leave it reading the other layout")
            cs.command = (f"run on the whole source tree, or `cpasync-migrate --accept-partial-sets "
                          f"{'--unsafe-fixes ' if unsafe_fixes else ''}{where}` to migrate the part in view")
            for m in applying:
                held.append(m.finding)
            continue
        if unsafe_fixes:
            # members that stay as they are whatever is applied: a suppressed one (its comment says keep it)
            # and one in a file that cannot be parsed; migrating the rest would leave them reading the other
            # layout, so they hold the set here too (a member left for a person goes on the checklist instead)
            kept = [(m, _KEPT[m.finding.status]) for m in legacy if m.finding.status in _KEPT]
            if kept:
                cs.blockers.extend(kept)
                cs.state = "held"
                cs.why = (f"{len(kept)} member(s) stay in the legacy layout whatever is applied, so none of the "
                          f"set's {len(legacy)} legacy site(s) is rewritten")
                cs.command = ("remove the suppression comment (or suppress every member of the set) and fix the "
                              f"unparsable files, then `cpasync-migrate --unsafe-fixes {where}`")
                held.extend(m.finding for m in applying)
                continue
            cs.state = "partial" if cs.checklist else "applied"
            if cs.checklist:
                cs.why = f"{len(cs.checklist)} member(s) must be changed by hand in the same change (checklist)"
            continue
        complete = has_builder and has_reader
        exact = [m for m in legacy if complete and _established(m.finding, legacy)]
        for m in legacy:
            st = m.finding.status
            if st is Status.REWRITTEN or m in exact:
                continue
            reason = {
                Status.UNSAFE: _unmet(m.finding, legacy) if complete else
                "its fix rests on an assumption (--unsafe-fixes applies it)",
                Status.MANUAL: "it is left for a person",
                **_KEPT,
            }.get(st, f"its status is {st.value if st else 'unknown'}")
            cs.blockers.append((m, reason))
        if cs.blockers:
            cs.state = "held"
            cs.why = (f"{len(cs.blockers)} member(s) would stay in the legacy layout, so none of the set's "
                      f"{len(legacy)} legacy site(s) is rewritten")
            only_unsafe = all(m.finding.status is Status.UNSAFE for m, _ in cs.blockers)
            cs.command = (f"`cpasync-migrate --unsafe-fixes {where}`" if only_unsafe else
                          f"change the members left for a person by hand, then `cpasync-migrate --unsafe-fixes "
                          f"{where}` applies every automatic member")
            held.extend(m.finding for m in applying)
        else:
            cs.granted = exact
    return held


def granted(sets: list[ChangeSet]) -> list[Finding]:
    """The findings ``decide`` applies by default because their set establishes what they assume."""
    return [m.finding for cs in sets for m in cs.granted]


def _established(f: Finding, legacy: list) -> bool:
    """``f``'s fix rests only on facts the set establishes, and the member it needs is rewritten in the
    same set: with ``needs_function`` (a helper's declaration, whose new overload is right once the helper's
    definition takes empty offsets), the other member of that code in that function (its definition) when
    the set has one, else some member of that code (the helper it hands its offsets on to; a definition
    that is no member already takes what that one takes).

    A printer and the runtime helpers it prints calls of (CuTeDSL) move together: the printer's
    ``needs_function`` names the helpers (``;``-separated), each of which must be a member of the set
    with a fix that the set establishes; a helper (CPA007) needs a member of another code whose fix
    names it so (the printer that now passes one pointer per side)."""
    return _unmet(f, legacy) is None


def _unmet(f: Finding, legacy: list) -> Optional[str]:
    """None when ``_established``; else why not, for the set's blockers."""
    if not (f.status is Status.UNSAFE and f.fix is not None and f.fix.set_established):
        return "its fix rests on an assumption (--unsafe-fixes applies it)"
    need = f.fix.needs_function
    if f.code == codes.LEGACY_RUNTIME_HELPER:
        if any(g.code != f.code and g.fix is not None and g.fix.set_established and f.function in _needed(g)
               for g in (m.finding for m in legacy)):
            return None
        return (f"no printer of the set prints its calls with one pointer per side: the code generator that "
                f"prints `{f.function}` is not in view or not migrated (--unsafe-fixes applies it)")
    if not need:
        return None
    if f.code != codes.CPP_LEGACY_HELPER_SIGNATURE:
        helpers = {m.finding.function: m.finding for m in legacy if m.finding.code == codes.LEGACY_RUNTIME_HELPER}
        missing = [n for n in _needed(f) if n not in helpers or helpers[n].fix is None
                   or not helpers[n].fix.set_established]
        if not missing:
            return None
        return (f"it prints calls of the runtime helper(s) {', '.join(f'`{n}`' for n in missing)}, which the set "
                "does not migrate with it (their definitions are not in view, or left)")
    return None if _declaration_met(f, legacy, need) else "its fix rests on an assumption (--unsafe-fixes applies it)"


def _needed(f: Finding) -> list:
    return [n for n in (f.fix.needs_function if f.fix is not None else "").split(";") if n]


def _declaration_met(f: Finding, legacy: list, need: str) -> bool:
    same = [m.finding for m in legacy if m.finding is not f and m.finding.code == f.code]
    own = [g for g in same if g.function == need]
    return any(g.status is Status.REWRITTEN for g in (own or same)) and all(
        g.status is Status.REWRITTEN or (g.fix is not None and g.fix.set_established and not g.fix.needs_function)
        for g in own)


_KEPT = {
    Status.SUPPRESSED: "a suppression comment keeps it in the legacy form",
    Status.UNPARSABLE: "its file cannot be parsed",
}


def upstream_for(upstream: dict, path: str) -> str:
    """The upstream commit that made the same change to a file of this name, where one is known."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return str(upstream.get(name, ""))


def _first_line(message: str) -> str:
    return message.split("\n", 1)[0]
