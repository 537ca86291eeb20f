"""Command line: parse arguments, pick the mode, map outcomes to exit codes."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Optional

from . import __version__
from .errors import EXIT_USAGE, UsageError

EPILOG = """\
modes:
  (default)  rewrite legacy calls in place and print a summary
  --diff     print a unified diff (git apply / patch -p1), write nothing
  --check    print one line per legacy site (path:line:col: CODE message), write nothing

exit codes:
  0  no legacy site remains (write mode: every site was migrated or suppressed)
  1  legacy sites remain (--check/--diff: any; write mode: those the tool could not migrate)
  2  an error: bad usage or configuration, a file that cannot be read, decoded, parsed or
     written (or that write mode refuses), a named path that is not a regular file, a file
     over --max-file-size that names the intrinsic
     (2 wins over 1; a broken file never stops the others from being processed)

suppression: `# cpasync-migrate: ignore` (Python) or `// cpasync-migrate: ignore` (C++) on the line
where a site starts keeps it as it is and out of the report; `ignore[CPA001,CPA003]` only those codes;
`ignore-file` / `ignore-file[CODE,...]` anywhere in a file: the whole file.  A comment that suppresses
nothing is reported as CPA010 (a warning).
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="cpasync-migrate",
        description="Migrate TileLang's legacy ptx_cp_async calls to the access-pointer API.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("paths", nargs="*", help="files and directories (recursively)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="report legacy sites and write nothing (CI lint)")
    mode.add_argument("--diff", action="store_true", help="print a unified diff and write nothing (dry run)")
    p.add_argument("--format", choices=("text", "json", "github", "sarif"), default="text",
                   help="output format (default: text)")
    p.add_argument("--unsafe-fixes", dest="unsafe_fixes", action="store_true", default=None,
                   help="also apply fixes that rest on an assumption the text does not show")
    p.add_argument("--no-unsafe-fixes", dest="unsafe_fixes", action="store_false")
    p.add_argument("--accept-partial-sets", dest="accept_partial_sets", action="store_true", default=None,
                   help="migrate a change set although the paths hold only its builders or only its readers "
                        "(the rest of the program is not in view)")
    p.add_argument("--target", help="TileLang API to migrate to: a version (0.1.8, tilelang==0.1.13), "
                   "a generation (0.1.8, 0.1.9) or 'latest' (default: the installed TileLang, else 0.1.8)")
    p.add_argument("--from", dest="source", help="API generation the code is written for (default: legacy); "
                   "e.g. --from 0.1.8 --target 0.1.9 converts byte counts of access-pointer calls")
    p.add_argument("--style", choices=("tvm_access_ptr", "access_ptr"), default=None,
                   help="access-pointer spelling for 0.1.9+ targets")
    p.add_argument("--migrate-tvm", action="store_true", default=None,
                   help="also migrate calls through TVM's namespace, switching them to TileLang's op")
    p.add_argument("--exclude", action="append", default=None, metavar="GLOB",
                   help="skip paths matching GLOB (repeatable; replaces the configured list)")
    p.add_argument("--extend-exclude", action="append", default=None, metavar="GLOB",
                   help="skip paths matching GLOB, in addition to the configured list")
    p.add_argument("--force-exclude", action="store_true",
                   help="apply the excludes to files named on the command line too (pre-commit names every file)")
    p.add_argument("--no-gitignore", action="store_true", help="do not honour .gitignore files")
    p.add_argument("--since", metavar="REV", help="only files changed since git revision REV")
    p.add_argument("-j", "--jobs", type=int, default=None, help="worker processes (default: the CPUs this process may use)")
    p.add_argument("--no-cache", dest="cache", action="store_false", default=None,
                   help="do not read or write the results cache")
    p.add_argument("--cache-dir", metavar="DIR", help="results cache folder (default: $CPASYNC_MIGRATE_CACHE_DIR, "
                   "else ~/.cache/cpasync-migrate/results)")
    p.add_argument("--config", metavar="PYPROJECT", help="read [tool.cpasync-migrate] from this file")
    p.add_argument("--isolated", action="store_true", help="ignore configuration files")
    p.add_argument("--verify", action="store_true", help="prove each rewritten kernel equivalent to the original")
    p.add_argument("--device", choices=("auto", "cpu", "gpu"), default="auto",
                   help="where --verify runs kernels (default: auto)")
    p.add_argument("--require-proof", action="store_true",
                   help="with --verify, do not write files that have inconclusive kernels")
    p.add_argument("--bind", action="append", default=[], metavar="NAME=VALUE",
                   help="bind a kernel factory parameter for --verify (repeatable)")
    p.add_argument("--emit-cuda", metavar="DIR", help="with --verify, write the lowered CUDA of both forms")
    p.add_argument("--emit-bundle", metavar="DIR", help="write a bundle of lowered kernels for the GPU runner")
    p.add_argument("--max-file-size", metavar="SIZE", default=None,
                   help="files larger than SIZE bytes (e.g. 4MB; 0: no limit) that name the intrinsic are a "
                        "file error, not analysed (default: 1MB)")
    p.add_argument("--allow-read-only", dest="allow_read_only", action="store_true", default=None,
                   help="write mode also rewrites read-only files, keeping their permission bits")
    p.add_argument("-q", "--quiet", action="store_true", help="print only findings and errors")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="also print every file processed and every path skipped, with the reason")
    p.add_argument("--version", action="version", version=f"cpasync-migrate {__version__}")
    return p


# ------------------------------------------------------------------ target


def installed_tilelang() -> Optional[str]:
    """Version of the tilelang distribution on sys.path, from its metadata, never importing it.

    A wheel or a regular install leaves ``tilelang-X.dist-info`` (or ``tilelang-X-py3.N.egg-info``);
    an editable or setuptools install may leave ``tilelang.egg-info`` (or ``tilelang.dist-info``)
    with no version in the name: then the ``Version:`` line of its ``PKG-INFO`` / ``METADATA``
    says it.  The first ``sys.path`` entry holding one wins, as for an import; within one entry
    (a stale folder left beside a new one) the highest version by PEP 440 (``0.1.9rc10`` after
    ``0.1.9rc9``).  A few directory listings, not importlib.metadata's import.
    """
    from .rules import RulesError, parse_version

    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        found = []
        for name in names:
            low = name.lower()
            if not low.endswith((".dist-info", ".egg-info")):
                continue
            stem = name.rsplit(".", 1)[0]
            dist, _, version = stem.partition("-")
            if dist.lower().replace("-", "_") != "tilelang":
                continue
            version = version.split("-py", 1)[0] if version else _metadata_version(os.path.join(entry or ".", name))
            if version:
                try:
                    found.append((parse_version(version), version))
                except RulesError:
                    continue
        if found:
            return max(found)[1]
    return None


def _metadata_version(folder: str) -> Optional[str]:
    """The ``Version:`` header of a metadata folder's PKG-INFO (egg-info) or METADATA (dist-info)."""
    for leaf in ("PKG-INFO", "METADATA"):
        try:
            with open(os.path.join(folder, leaf), encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    if not line.strip():
                        break  # end of the headers
                    key, _, value = line.partition(":")
                    if key.strip().lower() == "version":
                        return value.strip() or None
        except OSError:
            continue
    return None


# Where a TileLang tree keeps the Python API's definition, relative to a scanned folder (the
# repository root, or the tilelang package itself).
_DEFINITION_PLACES = ("tilelang/language/tir/op.py", "language/tir/op.py")


def tree_definition(paths, rules) -> Optional[tuple]:
    """(generation, "path:line") of the intrinsic's own definition in a scanned TileLang tree, if any.

    The generation is the one whose Python parameters the definition's are; None when no scanned
    folder holds the definition where TileLang keeps it, or its parameters match no generation."""
    import ast

    for p in paths:
        for rel in _DEFINITION_PLACES:
            f = Path(p) / rel
            if not f.is_file():
                continue
            try:
                tree = ast.parse(f.read_bytes())
            except (OSError, SyntaxError, ValueError):
                continue
            for node in tree.body:
                if isinstance(node, ast.FunctionDef) and node.name == "ptx_cp_async":
                    params = tuple(a.arg for a in node.args.args)
                    for gen in rules.generations:
                        if params == tuple(gen.python_params):
                            return gen, f"{f}:{node.lineno}"
    return None


def choose_target(spec: Optional[str], rules, origin: str, paths=()) -> dict:
    """Resolve --target into a generation, with the reason shown in every summary."""
    from .rules import RulesError, version_spec

    def info(gen, reason):
        return {"generation": gen.name, "title": gen.title, "reason": reason, "size_meaning": gen.size_meaning}

    if spec:
        s = version_spec(spec)
        if s == "latest":
            return info(rules.generations[-1], f"--target latest {origin}")
        try:
            gen = rules.resolve(s)
        except RulesError as e:
            raise UsageError(f"--target {spec}: {e}") from None
        if gen.form != "access_ptr":
            raise UsageError(f"--target {spec}: that is the legacy API itself; choose 0.1.8 or later")
        return info(gen, f"--target {spec} {origin}")
    default = rules.generations[1]
    own = tree_definition(paths, rules)
    if own is not None:
        gen, where = own
        if gen.form == "access_ptr":
            return info(gen, f"the scanned tree defines the {gen.name} API itself ({where}); the installed "
                             "TileLang plays no part")
        return info(default, f"the scanned tree defines the legacy API itself ({where}); migrating it to the "
                             "first access-pointer generation (the installed TileLang plays no part)")
    v = installed_tilelang()
    if v:
        try:
            gen = rules.generation_for_version(v)
        except RulesError:
            gen = None
        if gen is not None and gen.form == "access_ptr":
            return info(gen, f"installed tilelang {v}")
        return info(default, f"installed tilelang {v} still has the legacy API; using the first "
                             f"access-pointer generation")
    return info(default, "no TileLang installed here; default is the upstream PR's form (bytes)")


# ------------------------------------------------------------------ main


def _color(stream) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return hasattr(stream, "isatty") and stream.isatty()


def main(argv: Optional[list[str]] = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse exits 2 on usage errors already
        return int(e.code or 0)
    try:
        return run(args)
    except UsageError as e:
        print(f"cpasync-migrate: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("cpasync-migrate: interrupted", file=sys.stderr)
        return 2


def run(args) -> int:
    from . import config as cfgmod
    from .engine import RunSettings
    from .rules import RulesError, load_rules, version_spec

    if not args.paths:
        raise UsageError("no paths given (try: cpasync-migrate --diff path/)")
    cfg: dict = {}
    if not args.isolated:
        try:
            if args.config:
                cfg = cfgmod.load(Path(args.config), required=True)
            else:
                try:
                    pp = cfgmod.find_config(Path(args.paths[0]) if Path(args.paths[0]).exists() else Path.cwd())
                except (OSError, RuntimeError):  # a link loop, a vanished folder: no configuration
                    pp = None
                if pp is not None:
                    cfg = cfgmod.load(pp)
        except cfgmod.ConfigError as e:
            raise UsageError(str(e)) from None
    try:
        rules = load_rules()
    except (RulesError, FileNotFoundError) as e:
        raise UsageError(str(e)) from None

    mode = "check" if args.check else "diff" if args.diff else "write"
    origin = "(command line)" if args.target else f"({cfg['__file__']})" if "target" in cfg else ""
    if "target" in cfg:  # checked even where --target overrides it: a mistake in the file is one
        try:
            choose_target(cfg["target"], rules, "", args.paths)
        except UsageError as e:
            why = str(e).split(": ", 1)[1] if str(e).startswith("--target ") else str(e)
            raise UsageError(f"{cfg['__file__']}: [tool.cpasync-migrate] target = {cfg['target']!r}: {why}") from None
    if "from" in cfg:
        try:
            rules.resolve(version_spec(cfg["from"]))
        except RulesError as e:
            raise UsageError(f"{cfg['__file__']}: [tool.cpasync-migrate] from = {cfg['from']!r}: {e}") from None
    target_info = choose_target(args.target or cfg.get("target"), rules, origin.strip(), args.paths)
    source = version_spec(args.source or cfg.get("from") or "legacy")
    try:
        src_gen = rules.resolve(source)
        rules.chain(src_gen.name, target_info["generation"])
    except RulesError as e:
        if not args.source and "from" in cfg:
            where = "from" if args.target or "target" not in cfg else "from and target"
            raise UsageError(f"{cfg['__file__']}: [tool.cpasync-migrate] {where}: {source}: {e}") from None
        raise UsageError(f"--from {source}: {e}") from None
    target_info["from"] = src_gen.name
    target_info["steps"] = rules.steps(src_gen.name, target_info["generation"])
    target_info["rules_version"] = max(rules.versions.values(), default="")

    unsafe = args.unsafe_fixes if args.unsafe_fixes is not None else bool(cfg.get("unsafe-fixes", False))
    style = args.style or cfg.get("style") or "tvm_access_ptr"
    migrate_tvm = args.migrate_tvm if args.migrate_tvm is not None else bool(cfg.get("migrate-tvm", False))
    # each glob with the folder it is relative to: the config file's for the file's, the current one's
    # for the command line's
    here = os.getcwd()
    there = os.path.dirname(os.path.abspath(cfg["__file__"])) if "__file__" in cfg else here
    anchored = ([(g, here) for g in args.exclude] if args.exclude is not None
                else [(g, there) for g in cfg.get("exclude", [])])
    anchored += [(g, there) for g in cfg.get("extend-exclude", [])] + [(g, here) for g in args.extend_exclude or []]
    excludes = _excludes_for(anchored) if anchored else ()
    from .files import CPP_SUFFIXES, PYTHON_SUFFIXES

    kept = []
    for p in args.paths:  # a named file of another kind (a .c file from a hook) is skipped, with a note
        if not p.endswith(PYTHON_SUFFIXES + CPP_SUFFIXES) and os.path.isfile(p):
            print(f"cpasync-migrate: note: skipped {p}: not a Python ({' '.join(PYTHON_SUFFIXES)}) or C++ "
                  f"({' '.join(CPP_SUFFIXES)}) file", file=sys.stderr)
            continue
        kept.append(p)
    args.paths = kept
    force_exclude = args.force_exclude or bool(cfg.get("force-exclude", False))
    if force_exclude and anchored:
        kept = []
        for p in args.paths:
            if not os.path.isdir(p) and _named_file_excluded(p, anchored):
                if args.verbose:
                    print(f"skipped {p}: excluded (--force-exclude)", file=sys.stderr)
                continue
            kept.append(p)
        args.paths = kept  # none left: nothing to do, exit 0 (as a pre-commit hook expects)
    if args.jobs is not None or cfg.get("jobs"):
        jobs = args.jobs if args.jobs is not None else cfg["jobs"]
    else:
        from .cpus import default_jobs

        jobs = default_jobs()
    if jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if args.max_file_size is not None:
        max_file_size = cfgmod.parse_size(args.max_file_size)
        if max_file_size is None:
            raise UsageError(f"--max-file-size {args.max_file_size!r}: expected a size in bytes such as 4MB "
                             "(0: no limit)")
    else:
        from .files import DEFAULT_MAX_FILE_SIZE

        max_file_size = cfg.get("max-file-size", DEFAULT_MAX_FILE_SIZE)
    allow_read_only = (args.allow_read_only if args.allow_read_only is not None
                       else bool(cfg.get("allow-read-only", False)))
    binds = {}
    for b in args.bind:
        if "=" not in b:
            raise UsageError(f"--bind {b!r}: expected NAME=VALUE")
        k, v = b.split("=", 1)
        binds[k.strip()] = v.strip()
    device = args.device
    if args.verify and device == "auto":
        device = "gpu" if _gpu_available() else "cpu"
    cache_dir = None
    if (args.cache if args.cache is not None else cfg.get("cache", True)):
        from . import cache

        cache_dir = args.cache_dir or cfg.get("cache-dir") or cache.default_dir()
    settings = RunSettings(
        mode=mode, unsafe_fixes=unsafe, target=target_info["generation"], source=src_gen.name, style=style,
        migrate_tvm=migrate_tvm, verify=args.verify, device=device, require_proof=args.require_proof,
        binds=binds, emit_cuda=args.emit_cuda, cache_dir=cache_dir,
        keep_texts=mode != "check" or bool(args.emit_bundle), defer_coupled=mode == "write",
        max_file_size=max_file_size, allow_read_only=allow_read_only,
    )
    if cache_dir:
        cache.prepare(settings)
    from .runner import run_files

    outcomes, scanned = run_files(args.paths, settings, excludes=excludes, jobs=jobs,
                                  respect_gitignore=not args.no_gitignore, since=args.since,
                                  verbose=args.verbose, quiet=args.quiet,
                                  show_progress=True) if args.paths else ([], 0)
    sets: list = []
    if any(f.role for o in outcomes for f in o.findings):
        from .settle import settle

        accept_partial = (args.accept_partial_sets if args.accept_partial_sets is not None
                          else bool(cfg.get("accept-partial-sets", False)))
        outcomes, sets = settle(outcomes, settings, args.paths, accept_partial, rules)
    if args.emit_bundle:
        from .verify_bridge import emit_bundle

        emit_bundle(outcomes, settings, args.emit_bundle)
    return emit(outcomes, scanned, mode, args, target_info, rules, sets)


def _rel_to(path: str, anchor: str) -> Optional[str]:
    """``path`` relative to ``anchor`` with ``/`` separators; None when it lies outside it."""
    r = os.path.relpath(os.path.abspath(path), anchor)
    return None if r == ".." or r.startswith(".." + os.sep) else r.replace(os.sep, "/")


def _excludes_for(anchored):
    """For a folder argument, the exclude globs as the walk there needs them (relative to it)."""
    from .config import glob_for_folder

    def for_folder(arg: str) -> tuple:
        out = []
        for g, anchor in anchored:
            prefix = _rel_to(arg, anchor)
            if prefix is None:  # the folder lies outside the glob's anchor: only a name glob can match
                if "/" not in g.rstrip("/") or g[:1] in "*?[":
                    out.append(g)
                continue
            t = glob_for_folder(g, prefix)
            if t is not None:
                out.append(t)
        return tuple(out)

    return for_folder


def _named_file_excluded(path: str, anchored) -> bool:
    from .config import path_excluded

    for g, anchor in anchored:
        rel = _rel_to(path, anchor)
        if rel is None:
            rel = os.path.basename(path) if "/" not in g.rstrip("/") else None
        if rel is not None and path_excluded(rel, (g,)):
            return True
    return False


_GPU_PROBE = "import cupy, sys; sys.exit(0 if cupy.cuda.runtime.getDeviceCount() > 0 else 1)"


def _gpu_available() -> bool:
    """Whether cupy sees a GPU, asked in a child process.

    Asking here would initialise CUDA in this process, and CUDA does not survive ``fork``:
    the worker processes that run --verify would then fail on the device.
    """
    import importlib.util
    import subprocess
    import tempfile

    try:
        if importlib.util.find_spec("cupy") is None:  # finds, never runs, a module
            return False
    except (ImportError, ValueError):
        return False
    try:
        # -P: neither the current folder nor a script's folder goes on the child's sys.path, and it
        # starts in an empty folder, so a cupy.py or numpy.py of the scanned tree is never imported
        with tempfile.TemporaryDirectory(prefix="cpasync-probe-") as empty:
            return subprocess.run([sys.executable, "-P", "-c", _GPU_PROBE], capture_output=True, timeout=120,
                                  cwd=empty).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def emit(outcomes, scanned: int, mode: str, args, target_info: dict, rules, sets=()) -> int:
    from . import report
    from .findings import Status

    out = sys.stdout
    code = report.exit_code(outcomes, mode)
    if mode == "write" and args.format != "json":
        # what remains, where it now stands (the JSON ledger keeps the positions read, as --check has them)
        report.relocate_written(outcomes)
    if args.format == "json":
        report.dump_json(report.json_report(outcomes, scanned, mode, target_info, rules.versions, sets), out)
        return code
    if args.format == "sarif":
        report.dump_json(report.sarif_report(outcomes, target_info, rules.versions, mode), out)
        return code
    if args.format == "github":
        for line in report.github_lines(outcomes, mode):
            out.write(line + "\n")
        if mode == "diff":
            _write_diffs(outcomes, out)
        return code
    # text
    if mode == "diff":
        _write_diffs(outcomes, out)
        info = sys.stderr
        _print_unapplied(outcomes, info, show_unsafe=True)
    elif mode == "check":
        for line in report.check_lines(outcomes):
            out.write(line + "\n")
        info = sys.stderr
    else:
        if args.quiet:  # one line per change (the fixing pre-commit hook runs quiet)
            for f in report.all_findings(outcomes):
                if f.status is Status.REWRITTEN and f.legacy_site and not (f.fix and f.fix.assumptions):
                    out.write(f"{report.rel(f.path)}:{f.line}:{f.column}: {f.code} fixed\n")
        _print_unapplied(outcomes, out)
        info = out
    for line in report.verdict_lines(outcomes):
        info.write(line + "\n")
    for line in report.set_lines(sets):
        info.write(line + "\n")
    if not args.quiet:
        report.print_summary(info, outcomes, scanned, mode, target_info, _color(info), sets)
    info.flush()
    return code


def _write_diffs(outcomes, out) -> None:
    from . import report

    color = _color(out)
    for o in sorted(outcomes, key=lambda o: o.path):
        d = report.unified_diff(o)
        if d:
            out.write(report.colorize_diff(d) if color else d)


def _print_unapplied(outcomes, out, show_unsafe: bool = False) -> None:
    """Sites left for a person and unapplied unsafe fixes, with reasons and assumptions."""
    from . import report
    from .findings import Status

    for f in report.all_findings(outcomes):
        if f.status in (Status.MANUAL, Status.UNSAFE, Status.UNPARSABLE) or (
                f.status is Status.REWRITTEN and f.fix and f.fix.assumptions):
            out.write(report.finding_line(f) + "\n")
            if f.fix and f.fix.assumptions:
                for a in f.fix.assumptions:
                    out.write(f"    assumption: {a}\n")
            if show_unsafe and f.status is Status.UNSAFE and f.replacement is not None:
                out.write("    unsafe fix, applied only with --unsafe-fixes:\n")
                for ln in f.original.splitlines():
                    out.write(f"    - {ln}\n")
                for ln in f.replacement.splitlines():
                    out.write(f"    + {ln}\n")
    for o in outcomes:
        if o.error and not any(f.code == "CPA900" for f in o.findings):
            out.write(f"{report.rel(o.path)}:{o.error_line or 1}:1: CPA900 {o.error}\n")
