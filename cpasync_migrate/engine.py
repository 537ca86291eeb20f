"""The per-file pipeline: read -> front end -> choose fixes -> re-parse -> write.

``process_file`` is a pure function of the file and the run's settings (plus
the write itself), so it can run in a process pool.  Heavy front ends are
imported only when a file that needs them is met.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Optional

from . import budget, files
from .inputs import refuse
from .codes import FILE_ERROR
from .findings import Edit, FileOutcome, Finding, FrontEndOptions, Status, apply_edits, line_starts, offset_to_linecol


_SITE_RE: Optional[re.Pattern] = None  # a call of the intrinsic by its name (rules/namespaces.toml), when first asked


@dataclass
class RunSettings:
    mode: str  # "write" | "check" | "diff"
    unsafe_fixes: bool = False
    target: str = "0.1.8"
    source: str = "legacy"
    style: str = "tvm_access_ptr"
    migrate_tvm: bool = False
    rules_dir: Optional[str] = None
    verify: bool = False
    device: str = "cpu"
    require_proof: bool = False
    binds: dict = field(default_factory=dict)
    emit_cuda: Optional[str] = None
    cache_dir: Optional[str] = None  # where analyses are remembered (None: no cache)
    keep_texts: bool = True  # False: outcomes drop the file's texts (a --check run reports findings only)
    # Coupled change sets (sets.py): write mode leaves files with a member of a set unwritten until
    # the run's sets are decided, and ``hold`` names, per path, the (line, column, code) of the sites
    # whose fixes a set holds back.
    defer_coupled: bool = False
    hold: dict = field(default_factory=dict)
    max_file_size: int = files.DEFAULT_MAX_FILE_SIZE  # bytes; a larger file is a file error (0: no limit)
    # CPU seconds a file's analysis may take, before its growth with the file's size (budget.py; 0: no limit)
    file_cpu_limit: float = budget.DEFAULT_SECONDS
    allow_read_only: bool = False  # write mode also rewrites read-only files (keeping their mode)
    line_length: Optional[int] = None  # --line-length (None: each file's nearest pyproject.toml says)
    # whether a code is selected in a file (``selected(code, path)``; run.Selection); None: every code.  A site
    # of a code not selected that has a fix is held (its fix is never applied)
    selection: Optional[object] = None
    # the target, style and line length of each file's own configuration (file_settings.FileSettings): ``settle``
    # gives the settings a file is processed with; None: these settings for every file
    per_file: Optional[object] = None


def language_of(path: str) -> Optional[str]:
    if path.endswith(files.PYTHON_SUFFIXES):
        return "python"
    if path.endswith(files.CPP_SUFFIXES):
        return "cpp"
    return None


def front_end(language: str):
    if language == "python":
        from . import python as fe
    else:
        from . import cpp as fe
    return fe


def front_end_options(settings: RunSettings, line_length: int = 88, cpp_style=None) -> FrontEndOptions:
    """The front end's options: every option of the table that changes results (options.py), as the
    run's settings hold it (the line length and the C++ layout style: the file's, worked out by the
    caller)."""
    from .options import result_options
    from .rules import load_rules

    rules = load_rules(settings.rules_dir)
    given = {}
    for o in result_options():
        value = line_length if o.name == "line_length" else getattr(settings, o.setting)
        given[o.front_end] = rules.generation(value) if o.kind.name == "generation" else value
    return FrontEndOptions(rules=rules, cpp_style=cpp_style, **given)


def forget_folders() -> None:
    """Forget which configuration each folder has, and which files import a macro (a run starts: files may
    have come or gone)."""
    import sys

    for name in ("clang_format", "line_length", "importers"):  # a module not imported yet has nothing to forget
        module = sys.modules.get(f"{__package__}.{name}")
        if module is not None:
            module.forget()


def line_length_of(path: str) -> int:
    """The line length ruff, else black, is configured to for the file; else 88 (``line_length.py``)."""
    from . import line_length

    return line_length.of(path)


def _count_sites(text: str) -> list[tuple[int, int]]:
    starts = line_starts(text)
    global _SITE_RE
    if _SITE_RE is None:
        from .rules import intrinsic_name

        _SITE_RE = re.compile(rf"\b{re.escape(intrinsic_name())}\b(?!_)\s*\(")
    return [offset_to_linecol(starts, m.start()) for m in _SITE_RE.finditer(text)]


def _unread(outcome: FileOutcome) -> FileOutcome:
    outcome.unread = True
    return outcome


def error_outcome(path: str, language: str, message: str, line: Optional[int] = None,
                   text: Optional[str] = None, column: Optional[int] = None) -> FileOutcome:
    out = FileOutcome(path=path, language=language, error=message, error_line=line)
    out.findings.append(Finding(path, line or 1, column or 1, line or 1, column or 1, FILE_ERROR,
                                message, status=Status.UNPARSABLE, legacy_site=False))
    if text is not None:
        # every occurrence of the intrinsic in a file that cannot be parsed is a site in the "unparsable" bucket
        for ln, col in _count_sites(text):
            out.findings.append(Finding(path, ln, col, ln, col, FILE_ERROR,
                                        "ptx_cp_async in a file that cannot be parsed; not examined",
                                        status=Status.UNPARSABLE))
    return out


NOT_CACHED = object()  # process_file(only_cached=True): the results cache holds no analysis of the file

# A switch (CPASYNC_MIGRATE_CACHE_FIRST=0: a file is decoded and scanned for its nesting before the results
# cache is asked, as before; a measuring switch).  On: the cache is asked first; a file whose analysis it
# holds skips the nesting scan (files.nesting), which passed on the same bytes before that analysis was
# stored (the key covers the bytes, the language and the tool's code); a miss under ``only_cached`` is not
# decoded at all.
CACHE_FIRST = os.environ.get("CPASYNC_MIGRATE_CACHE_FIRST", "1") != "0"


def process_file(path: str, settings: RunSettings, explicit: bool = False,
                 no_write: Optional[str] = None, only_cached: bool = False) -> Optional[FileOutcome]:
    """Process one file.  Returns None when the byte prefilter rules it out.

    ``no_write``: why write mode must not write this file (the runner's rules on links), if so.
    ``only_cached``: return ``NOT_CACHED`` instead of analysing a file the results cache does not know.
    """
    language = language_of(path) or ("python" if explicit else None)
    if language is None:
        return None
    if settings.per_file is not None:
        settings = settings.per_file.settle(path, settings)
    raw, early = _read_raw(path, language, settings)
    if raw is None:
        return early
    analysis = ck = None
    first = CACHE_FIRST and settings.cache_dir
    if not first:
        try:
            src = files.decode(path, raw, python=(language == "python"))
        except files.FileError as e:
            return _unread(error_outcome(path, language, e.message, e.line))
    line_length = (settings.line_length or line_length_of(path)) if language == "python" else 88
    cpp_style = None
    if language != "python":
        from . import clang_format

        cpp_style = clang_format.style_of(path)
    # whether the Python front end's ast pass may decide legacy calls with their fixes (python.fast_fixes: --check
    # alone, and write mode, --diff and --verify while CPASYNC_MIGRATE_FAST_WRITE is on); the cache's key says so
    fixes = language == "python" and front_end(language).fast_fixes(settings.mode, settings.verify)
    if settings.cache_dir:
        from . import cache

        ck = cache.key(settings, path, language, raw, line_length=line_length,
                       layout=None if cpp_style is None else (cpp_style.column_limit, cpp_style.continuation),
                       ast_fixes=fixes)
        if settings.mode != "write":  # write mode applies only edits it computed in this run
            analysis = cache.load_analysis(settings.cache_dir, ck, path)
    if analysis is None and only_cached:
        return NOT_CACHED
    if first:  # an analysis in the cache was stored after this scan passed on these bytes: not scanned again
        try:
            src = files.decode(path, raw, python=(language == "python"), deep=analysis is None)
        except files.FileError as e:
            return _unread(error_outcome(path, language, e.message, e.line))
    text = src.text
    fresh = analysis is None
    if fresh:
        analysis = _analyze(path, language, text, settings, line_length, cpp_style, fixes, len(raw))
        if isinstance(analysis, FileOutcome):
            return analysis
        if ck is not None:
            cache.store_analysis(settings.cache_dir, ck, analysis)
    if analysis.error:
        return error_outcome(path, language, analysis.error, analysis.error_line, text, analysis.error_column)
    if any(f.fix is not None and f.fix.importers for f in analysis.findings):
        from . import importers  # the cross-file question, answered for this run, never cached with the file

        importers.settle(path, analysis.findings, settings.rules_dir)
    outcome = FileOutcome(path=path, language=language, findings=analysis.findings, old_text=text,
                          cached=ck is not None and not fresh, migrated=list(analysis.migrated),
                          target=settings.target)
    chosen = _choose_fixes(outcome, text, settings)
    if chosen:
        failed = _apply_fixes(outcome, chosen, settings, raw)
        if failed is not None:
            return failed
    return _finish(outcome, src, raw, settings, no_write)


def _analyze(path: str, language: str, text: str, settings: RunSettings, line_length: int, cpp_style, fixes: bool,
             size: int):
    """The front end's analysis of ``text`` (suppression comments resolved) within the file's CPU budget
    (budget.py), or the error outcome of a file it could not finish (never cached: another machine, or another
    limit, may finish it)."""
    fe, opts = front_end(language), front_end_options(settings, line_length, cpp_style)
    kw = {"fixes": True} if fixes else {}  # (python/fast.py: DECIDE_FIXES; a run it decides never imports libcst)
    from . import suppress

    limit = budget.limit_for(settings.file_cpu_limit, size)
    try:
        with budget.cpu_budget(limit):
            analysis = fe.analyze(text, path, opts, **kw)
            if suppress.spelling(opts.rules.suppress_comment).marker in text:  # suppression comments (suppress.py)
                analysis = suppress.resolve(text, path, language, analysis,
                                            lambda t: fe.analyze(t, path, opts, **kw), opts.rules)
    except (RecursionError, MemoryError) as e:  # nesting past what files.nesting bounds (a long chain of a + a + ...)
        if isinstance(e, MemoryError):
            refuse("a file's analysis ran out of memory (another run may not)")  # no run record (replay.py)
        return error_outcome(path, language, "nested too deep for the parser or its passes; not analysed")
    except budget.OverBudget:
        refuse("a file went over its CPU budget (another run may not)")
        return error_outcome(path, language, budget.message(limit))
    return analysis


def _read_raw(path: str, language: str, settings: RunSettings) -> tuple:
    """(the file's bytes, None), or (None, what ``process_file`` returns instead: an outcome for a file that
    cannot be read or is too large for the name it holds, None for one the byte prefilter rules out)."""
    try:
        raw = files.read_source(path, settings.max_file_size)
    except files.TooLarge as e:
        return None, _unread(error_outcome(path, language, e.message)) if e.has_needle else None
    except files.FileError as e:
        return None, _unread(error_outcome(path, language, e.message))
    if not files.has_needle(raw):
        return None, None
    return raw, None


def _choose_fixes(outcome: FileOutcome, text: str, settings: RunSettings) -> list[Edit]:
    """Give each finding its status (manual, held, rewritten or unsafe) and its original and replacement text;
    the edits of the fixes chosen, each once, in the findings' order."""
    chosen: list[Edit] = []
    seen: set = set()  # the edits in chosen (every fix of a file may carry the same added import)
    starts = line_starts(text) if outcome.findings else []
    path = outcome.path
    held = settings.hold.get(path, ())
    for f in outcome.findings:
        if f.status is None:
            if f.fix is None:
                f.status = Status.MANUAL
            elif (f.line, f.column, f.code) in held or (
                    settings.selection is not None and not settings.selection(f.code, path)):
                f.status = Status.HELD
            elif f.fix.safe or settings.unsafe_fixes:
                f.status = Status.REWRITTEN
            else:
                f.status = Status.UNSAFE
        _describe_fix(text, f, starts)
        if f.status is Status.REWRITTEN and f.fix is not None:
            for e in f.fix.edits:
                if e not in seen:
                    seen.add(e)
                    chosen.append(e)
    return chosen


def _apply_fixes(outcome: FileOutcome, chosen: list[Edit], settings: RunSettings, raw: bytes) -> Optional[FileOutcome]:
    """The new text (``outcome.new_text``), unless it does not re-parse (then its fixes are left for a person,
    with the file's error); an error outcome when the edits cannot be applied at all."""
    path, language, text = outcome.path, outcome.language, outcome.old_text
    try:
        new_text = apply_edits(text, chosen)
    except ValueError as e:
        return error_outcome(path, language, f"internal error: {e}; file left unchanged")
    problem = _reparse_problem(settings, path, language, raw, text, new_text)
    if problem:
        for f in outcome.findings:
            if f.status is Status.REWRITTEN:
                f.status = Status.MANUAL
        outcome.error = f"{problem}; file left unchanged"
        outcome.findings.append(Finding(path, 1, 1, 1, 1, FILE_ERROR, outcome.error,
                                        status=Status.UNPARSABLE, legacy_site=False))
    else:
        outcome.new_text = new_text
    return None


def _finish(outcome: FileOutcome, src, raw: bytes, settings: RunSettings, no_write: Optional[str]) -> FileOutcome:
    """--verify's verdicts, then what the mode does with the new text: --diff shows it unless refused, write mode
    writes it (or defers the write until its change sets are decided); the texts dropped where not kept."""
    if settings.verify and outcome.changed:
        _verify(outcome, settings)
    refused = verify_refusal(outcome, settings) if settings.verify and outcome.changed else None
    if settings.mode == "diff" and refused:
        outcome.error = f"{refused}; its diff is left out"  # the diff shows only what write mode would write
    if settings.mode == "write" and outcome.changed:
        if refused:
            outcome.error = f"{refused}; file not written"
        elif settings.defer_coupled and any(f.role for f in outcome.findings):
            import hashlib

            outcome.deferred_digest = hashlib.sha256(raw).hexdigest()  # written once its sets are decided
            outcome.no_write = no_write
            return outcome
        else:
            _write(outcome, src, settings, no_write)
    _not_applied(outcome, settings)
    if not settings.keep_texts:
        outcome.drop_texts()  # memory and the workers' answers grow with findings, not with file sizes
    return outcome


def _write(outcome: FileOutcome, src, settings: RunSettings, no_write: Optional[str]) -> None:
    if no_write:
        outcome.error = no_write
        return
    try:
        files.atomic_write(src, outcome.new_text, settings.allow_read_only)
        outcome.written = True
    except files.FileError as e:
        outcome.error = e.message


def _not_applied(outcome: FileOutcome, settings: RunSettings) -> None:
    """A rewrite that was not written (or not shown) leaves its sites for a person, saying why."""
    if settings.mode in ("write", "diff") and outcome.error and outcome.changed and not outcome.written:
        for f in outcome.findings:
            if f.status is Status.REWRITTEN:
                f.status = Status.MANUAL
                f.message += f" [not {'written' if settings.mode == 'write' else 'shown'}: {outcome.error}]"


def finish_deferred(outcome: FileOutcome, settings: RunSettings) -> FileOutcome:
    """Write a file whose write was deferred, now that no change set holds any of its sites back.

    The file is read again and written only if its bytes are still the ones analysed."""
    import hashlib

    try:
        raw = files.read_source(outcome.path, settings.max_file_size)
        src = files.decode(outcome.path, raw, python=(outcome.language == "python"))
    except files.FileError as e:
        outcome.error = e.message
    else:
        if hashlib.sha256(raw).hexdigest() != outcome.deferred_digest:
            outcome.error = "the file changed while the run was deciding its change sets; not written"
        else:
            _write(outcome, src, settings, outcome.no_write)
    outcome.deferred_digest = None
    _not_applied(outcome, settings)
    if not settings.keep_texts:
        outcome.drop_texts()
    return outcome


def verify_refusal(outcome: FileOutcome, settings: RunSettings) -> Optional[str]:
    """Why write mode refuses a file after --verify (None: it does not): a mismatch, or, under
    --require-proof, a kernel not proven equivalent."""
    if any(v.get("verdict") == "mismatch" for v in outcome.verdicts):
        return "verification found a mismatch"
    if settings.require_proof and any(v.get("verdict") != "equivalent" for v in outcome.verdicts):
        return "--require-proof: a kernel is not proven equivalent"
    return None


def _reparse_problem(settings: RunSettings, path, language, raw: bytes, text: str, new_text: str):
    """The front end's re-parse check of a rewrite; remembered in the cache except in write mode,
    where the text about to be written is always parsed.  (A front end is imported only when it
    has work to do: an answer from the cache needs no parser.)"""
    if not settings.cache_dir or settings.mode == "write":
        return front_end(language).reparse_problem(text, new_text)
    from . import cache

    new_raw = new_text.encode("utf-8", "surrogatepass")
    k = cache.key(settings, path, language, len(raw).to_bytes(8, "little") + raw + new_raw, kind="reparse")
    found, problem = cache.load_text(settings.cache_dir, k)
    if not found:
        problem = front_end(language).reparse_problem(text, new_text)
        cache.store_text(settings.cache_dir, k, problem)
    return problem


def _describe_fix(text: str, f: Finding, starts: list[int]) -> None:
    """Fill ``original``/``replacement``: the site's text before and after its own fix (``starts``: line starts).
    A finding without a fix gets its ``original`` only (SARIF fingerprints read it)."""
    if not (0 < f.line <= f.end_line <= len(starts)):
        return
    s = starts[f.line - 1] + f.column - 1
    e = starts[f.end_line - 1] + f.end_column - 1
    if f.fix is None:
        f.original = text[s:e]
        return
    inside = [x for x in f.fix.edits if s <= x.start and x.end <= e]
    f.original = text[s:e]
    f.replacement = apply_edits(f.original, [Edit(x.start - s, x.end - s, x.replacement) for x in inside])


def _verify(outcome: FileOutcome, settings: RunSettings) -> None:
    try:
        from . import verify
    except ImportError as e:  # pragma: no cover - verify is part of the package
        outcome.verdicts = [{"kernel": "*", "verdict": "inconclusive", "reason": f"verifier unavailable: {e}"}]
        return
    if outcome.language != "python":
        return
    opts = front_end_options(settings)
    try:
        verdicts = verify.verify_source(outcome.old_text, outcome.new_text, outcome.path, verify.VerifyOptions(
            rules=opts.rules, target=opts.target, binds=settings.binds, device=settings.device,
            emit_cuda_dir=settings.emit_cuda, source=None if settings.source == "legacy" else settings.source,
        ))
        outcome.verdicts = [v.to_dict() for v in verdicts]
    except Exception as e:  # noqa: BLE001 - a verifier crash must not lose the file's other results
        outcome.verdicts = [{"kernel": "*", "line": 1, "verdict": "inconclusive", "reason": f"verifier error: {e}"}]
