"""Data types shared by every stage: sites, fixes, findings and file outcomes.

Offsets in :class:`Edit` are *character* offsets into the decoded text of a
file (``str`` indices), so the engine can apply edits from any language
front end the same way.  Lines and columns are 1-based; columns count
characters.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Optional


class Status(str, Enum):
    """The bucket a legacy site ends up in.  Every site is in exactly one."""

    REWRITTEN = "rewritten"  # the fix was applied (or would be, in --check/--diff)
    MANUAL = "manual"  # left for a person, with a reason
    UNSAFE = "unsafe"  # an unsafe fix exists but was not applied (no --unsafe-fixes)
    SUPPRESSED = "suppressed"  # a suppression comment keeps it as it is
    HELD = "held"  # its own fix is fine, but its change set cannot be applied whole (sets.py)
    UNPARSABLE = "unparsable"  # the file could not be parsed
    INFO = "info"  # information only; not a legacy site, not a failure


class Applicability(str, Enum):
    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True)
class Edit:
    """Replace ``text[start:end]`` with ``replacement`` (character offsets)."""

    start: int
    end: int
    replacement: str


@dataclass
class Fix:
    edits: list[Edit]
    applicability: Applicability
    # Each assumption is one sentence a person can check; empty for safe fixes.
    assumptions: list[str] = field(default_factory=list)
    # Migration steps this fix applies, e.g. ["legacy->0.1.8"].
    steps: list[str] = field(default_factory=list)
    # Assumptions another file of the repository decides (importers.py): assumption -> (the module-level
    # macro it is about, whether a star import of the module binds that name, the reading the importing
    # files' calls of it must give: a JSON-able dict, see importers.py).
    importers: dict = field(default_factory=dict)
    # The assumptions are facts the fix's change set establishes when it is complete and every
    # legacy member of it is migrated in the same run (sets.py applies such a fix by default then).
    set_established: bool = False
    # ... and only when the set also rewrites another member in this function (a helper's definition,
    # for the overload its declaration gets); "" when no other member is needed.
    needs_function: str = ""

    @property
    def safe(self) -> bool:
        return self.applicability is Applicability.SAFE


@dataclass
class Finding:
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    code: str
    message: str
    fix: Optional[Fix] = None
    # Enclosing function (qualified, e.g. "make_kernel.main"), when known.
    function: Optional[str] = None
    # Set by the front end for suppressed/info sites; the engine sets the rest.
    status: Optional[Status] = None
    # Original text of the whole site and its replacement (filled by the engine).
    original: Optional[str] = None
    replacement: Optional[str] = None
    # Whether this finding counts as a legacy site (info findings do not).
    legacy_site: bool = True
    # "error" | "warning" | "note"; None: derived from the status.
    severity: Optional[str] = None
    # Which IR op the site builds, reads, defines or calls (see ``Coupling`` in ``sets.py``):
    # "tir.ptx_cp_async" (TVM's builtin), "tl.ptx_cp_async" (TileLang's own op), or None when the
    # site is a kernel's call of the Python intrinsic that the scanned tree does not define.
    op: Optional[str] = None
    # Its part in that op's change: "builder" | "reader" | "definition" | "caller"; None: no part.
    role: Optional[str] = None
    # Id of the coupled change set the engine put the site in (None: the site stands alone).
    set_id: Optional[str] = None

    @property
    def fixable(self) -> bool:
        return self.fix is not None

    def sort_key(self):
        return (self.path, self.line, self.column, self.code)


@dataclass
class FileOutcome:
    path: str
    language: str  # "python" | "cpp"
    findings: list[Finding] = field(default_factory=list)
    old_text: Optional[str] = None
    new_text: Optional[str] = None  # None when nothing changes
    written: bool = False
    error: Optional[str] = None  # an error for this file (exit code 2)
    error_line: Optional[int] = None
    # Verification verdicts, when --verify ran (list of dicts, see verify/).
    verdicts: list = field(default_factory=list)
    cached: bool = False  # the analysis came from the results cache
    # Set when the texts were dropped (a --check run keeps only what it reports).
    changed_flag: Optional[bool] = None
    # Write mode held the write back until the run's change sets are decided (engine.finish_deferred):
    # the SHA-256 of the bytes the analysis read, and why write mode must not write the file, if so.
    deferred_digest: Optional[str] = None
    no_write: Optional[str] = None
    # Functions whose calls of TileLang's intrinsic are already in the access-pointer form (Analysis.migrated).
    migrated: list = field(default_factory=list)
    # The file was not analysed because of how it is stored (over the size limit, binary, not decodable,
    # not readable): -v says it was skipped, and why, instead of processed.
    unread: bool = False
    # The API generation the file was migrated to (its own configuration's target, or the run's).
    target: Optional[str] = None

    @property
    def changed(self) -> bool:
        if self.changed_flag is not None:
            return self.changed_flag
        return self.new_text is not None and self.new_text != self.old_text

    def drop_texts(self) -> None:
        """Forget the file's old and new text, keeping whether they differ."""
        self.changed_flag = self.changed
        self.old_text = self.new_text = None


@dataclass
class Analysis:
    """What a language front end returns for one file.  Pure data, no I/O."""

    findings: list[Finding]
    # Set when the text cannot be parsed at all.
    error: Optional[str] = None
    error_line: Optional[int] = None
    error_column: Optional[int] = None
    # Functions ("" for module level) holding TileLang access-pointer calls already (the Python front end):
    # with a legacy site left beside them the file loads under no TileLang release (half_migrated).
    migrated: list = field(default_factory=list)


@dataclass(frozen=True)
class FrontEndOptions:
    """What a language front end needs to know to analyse one file.

    ``rules`` is a :class:`cpasync_migrate.rules.Rules`; ``source`` and
    ``target`` are :class:`cpasync_migrate.rules.Generation` objects
    (``source`` is the generation the code is written for: legacy unless
    ``--from`` says otherwise).
    """

    rules: object
    target: object
    source: object
    style: str = "tvm_access_ptr"  # or "access_ptr" (0.1.9+ only)
    migrate_tvm: bool = False  # also migrate calls through TVM's namespace
    # The line length rewritten code is laid out within: the file's nearest pyproject.toml
    # ([tool.ruff] line-length, else [tool.black] line-length), else 88; the engine finds it.
    line_length: int = 88
    # How rewritten C++ is laid out (clang_format.py: the nearest .clang-format; LLVM's 80 columns without one).
    cpp_style: object = None


# The sites that keep a file on the legacy API: TileLang's legacy calls (TVM's keep the legacy signature).
_LEGACY_CALL_CODES = ("CPA001", "CPA002")


def half_migrated(o: FileOutcome) -> Optional[dict]:
    """A file that has (or, once written, will have) access-pointer calls of TileLang's intrinsic beside legacy
    ones left for a person: no TileLang release loads it (0.1.7.post1 takes only the legacy form, 0.1.8 only
    access pointers).  None when it is not so; else ``{"migrated": [functions], "remaining": {function:
    [(line, code, status)]}, "by_this_run": bool}`` (functions by qualified name, "" for module level)."""
    remaining: dict = {}
    by_run = set()
    for f in o.findings:
        if not f.legacy_site or f.code not in _LEGACY_CALL_CODES:
            continue
        if f.status is Status.REWRITTEN:
            by_run.add(f.function or "")
        elif f.status in (Status.MANUAL, Status.UNSAFE, Status.HELD):
            remaining.setdefault(f.function or "", []).append((f.line, f.code, f.status.value))
    migrated = sorted(set(o.migrated) | by_run)
    if not remaining or not migrated:
        return None
    return {"migrated": migrated, "remaining": remaining, "by_this_run": bool(by_run)}


def apply_edits(text: str, edits: list[Edit]) -> str:
    """Apply non-overlapping edits (character offsets into ``text``)."""
    out = []
    pos = 0
    for e in sorted(edits, key=lambda e: (e.start, e.end)):
        if e.start < pos:
            raise ValueError(f"overlapping edits at offset {e.start}")
        out.append(text[pos : e.start])
        out.append(e.replacement)
        pos = e.end
    out.append(text[pos:])
    return "".join(out)


def line_starts(text: str) -> list[int]:
    """Character offset of the start of each line (index 0 = line 1)."""
    from itertools import accumulate

    starts = list(accumulate([len(line) + 1 for line in text.split("\n")], initial=0))
    starts.pop()  # the offset one past the end
    return starts


def offset_to_linecol(starts: list[int], offset: int) -> tuple[int, int]:
    """1-based line and column of a character offset."""
    import bisect

    i = bisect.bisect_right(starts, offset) - 1
    return i + 1, offset - starts[i] + 1
