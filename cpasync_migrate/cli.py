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
  -          with the path -, read one file from stdin (named by --stdin-filename): --check and --diff
             as for a file; the default mode prints the migrated text on stdout (the report on stderr)

exit codes:
  0  no legacy site remains (write mode: every site was migrated or suppressed), or --exit-zero
  1  legacy sites remain (--check/--diff: any; write mode: those the tool could not migrate)
  2  a file error: a file that cannot be read, decoded, parsed or written (or that write mode
     refuses), a named path that is not a regular file, a file over --max-file-size that names
     the intrinsic, a folder that cannot be listed
     (2 wins over 1; a broken file never stops the others from being processed)
  3  bad usage or configuration (arguments, [tool.cpasync-migrate], an unknown --since revision):
     nothing was processed

suppression: `# cpasync-migrate: ignore` (Python) or `// cpasync-migrate: ignore` (C++) on the line
where a site starts keeps it as it is and out of the report; `ignore[CPA001,CPA003]` only those codes;
`ignore-file` / `ignore-file[CODE,...]` anywhere in a file: the whole file.  A comment that suppresses
nothing is reported as CPA010 (a warning).  --ignore CODES does the same for every file.

environment:
  NO_COLOR=1     no colour (wins over FORCE_COLOR)      FORCE_COLOR=1  colour also when not a terminal
  CPASYNC_MIGRATE_CACHE_DIR   results cache folder (else $XDG_CACHE_HOME/cpasync-migrate/results)
  CPASYNC_MIGRATE_RULES       a rules folder to use instead of the bundled rules/*.toml
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own usage errors exit 3 too, not 2 (a file error)
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _report_spec(text: str) -> tuple:
    """``--report FORMAT:FILE``."""
    from .emit import DOCUMENT_FORMATS

    fmt, sep, path = text.partition(":")
    if not sep or not path or fmt not in DOCUMENT_FORMATS:
        raise argparse.ArgumentTypeError(f"expected FORMAT:FILE with FORMAT one of {', '.join(DOCUMENT_FORMATS)}")
    return fmt, path


class _Version(argparse.Action):
    """--version: the tool, its rules and its parsers (from their metadata, never imported)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        sys.stdout.write("\n".join(version_lines()) + "\n")
        parser.exit(0)


def version_lines() -> list[str]:
    from importlib import metadata

    lines = [f"cpasync-migrate {__version__}"]
    try:
        from .rules import load_rules, rules_dir

        rules = load_rules()
        lines.append(f"rules {max(rules.versions.values(), default='?')} ({rules_dir()})")
    except Exception as e:  # noqa: BLE001 - --version still answers with a broken rules folder
        lines.append(f"rules: cannot be loaded ({e})")
    for dist in ("libcst", "tree-sitter", "tree-sitter-cpp"):
        try:
            lines.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            lines.append(f"{dist}: not installed")
    return lines


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="cpasync-migrate",
        description="Migrate TileLang's legacy ptx_cp_async calls to the access-pointer API.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("paths", nargs="*", help="files and directories (recursively); - reads one file from stdin")
    p.add_argument("--version", action=_Version, help="print the version of the tool, its rules and its parsers")

    g = p.add_argument_group("modes")
    mode = g.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="report legacy sites and write nothing (CI lint)")
    mode.add_argument("--diff", action="store_true", help="print a unified diff and write nothing (dry run)")

    g = p.add_argument_group("output")
    g.add_argument("--format", choices=("text", "json", "github", "sarif", "markdown", "junit", "gitlab"),
                   default="text", help="output format (default: text; gitlab: code quality JSON)")
    g.add_argument("-o", "--output-file", metavar="FILE",
                   help="write the report to FILE instead of stdout (the text summary of --check and --diff "
                        "still goes to stderr)")
    g.add_argument("--report", metavar="FORMAT:FILE", action="append", default=None, type=_report_spec,
                   help="also write a report in FORMAT (json, sarif, markdown, github, junit, gitlab, text: the "
                        "per-site lines) to FILE, in the same run (repeatable)")
    g.add_argument("--statistics", action="store_true",
                   help="text format: one line per code (count, code, name, fixable) instead of one per site")
    g.add_argument("--exit-zero", action="store_true",
                   help="exit 0 even while legacy sites remain (errors still exit 2 or 3)")
    g.add_argument("-q", "--quiet", action="store_true", help="print only findings and errors")
    g.add_argument("-v", "--verbose", action="store_true",
                   help="also print every file processed and every path skipped, with the reason")

    g = p.add_argument_group("selection")
    g.add_argument("--select", metavar="CODES", action="append", default=None,
                   help="only these codes (comma list; a prefix such as CPA1 selects every C++ code)")
    g.add_argument("--ignore", metavar="CODES", action="append", default=None,
                   help="not these codes (comma list, prefixes allowed; wins over --select): their sites "
                        "are kept as they are and out of the report, as a suppression comment does")

    g = p.add_argument_group("fixes and targets")
    g.add_argument("--unsafe-fixes", dest="unsafe_fixes", action="store_true", default=None,
                   help="also apply fixes that rest on an assumption the text does not show")
    g.add_argument("--no-unsafe-fixes", dest="unsafe_fixes", action="store_false")
    g.add_argument("--accept-partial-sets", dest="accept_partial_sets", action="store_true", default=None,
                   help="migrate a change set although the paths hold only its builders or only its readers "
                        "(the rest of the program is not in view)")
    g.add_argument("--target", help="TileLang API to migrate to: a version (0.1.8, tilelang==0.1.13), "
                   "a generation (0.1.8, 0.1.9) or 'latest' (default: the installed TileLang, else 0.1.8)")
    g.add_argument("--from", dest="source", help="API generation the code is written for (default: legacy); "
                   "e.g. --from 0.1.8 --target 0.1.9 converts byte counts of access-pointer calls")
    g.add_argument("--style", choices=("tvm_access_ptr", "access_ptr"), default=None,
                   help="access-pointer spelling for 0.1.9+ targets")
    g.add_argument("--migrate-tvm", action="store_true", default=None,
                   help="also migrate calls through TVM's namespace, switching them to TileLang's op")
    g.add_argument("--allow-read-only", dest="allow_read_only", action="store_true", default=None,
                   help="write mode also rewrites read-only files, keeping their permission bits")
    g.add_argument("--follow-links-outside", action="store_true",
                   help="write mode also writes a path named here that leads through a symbolic link out of its "
                        "tree (its git work tree, else the current folder); only on the command line")

    g = p.add_argument_group("files")
    g.add_argument("--exclude", action="append", default=None, metavar="GLOB",
                   help="skip paths matching GLOB (repeatable; replaces the configured list)")
    g.add_argument("--extend-exclude", action="append", default=None, metavar="GLOB",
                   help="skip paths matching GLOB, in addition to the configured list")
    g.add_argument("--force-exclude", action="store_true",
                   help="apply the excludes to files named on the command line too (pre-commit names every file)")
    g.add_argument("--no-gitignore", action="store_true",
                   help="do not honour .gitignore files (nor take the file list from git)")
    g.add_argument("--since", metavar="REV",
                   help="only files changed since the merge base of git revision REV and HEAD (git diff REV...HEAD), "
                        "in the commits since or in the work tree, and untracked files (on a branch, --since main "
                        "leaves out what only main changed)")
    g.add_argument("--stdin-filename", metavar="NAME",
                   help="with the path -: the name the text on stdin is reported under; its suffix picks "
                        "Python or C++, its folder the configuration")
    g.add_argument("--max-file-size", metavar="SIZE", default=None,
                   help="files larger than SIZE bytes (e.g. 4MB; 0: no limit) that name the intrinsic are a "
                        "file error, not analysed (default: 1MB; a configuration file may set at most 4MB)")
    g.add_argument("--config", metavar="PYPROJECT", help="read [tool.cpasync-migrate] from this file")
    g.add_argument("--isolated", action="store_true", help="ignore configuration files")

    g = p.add_argument_group("verification")
    g.add_argument("--verify", action="store_true", help="prove each rewritten kernel equivalent to the original")
    g.add_argument("--device", choices=("auto", "cpu", "gpu"), default="auto",
                   help="where --verify runs kernels (default: auto)")
    g.add_argument("--require-proof", action="store_true",
                   help="with --verify, do not write files that have inconclusive kernels")
    g.add_argument("--bind", action="append", default=[], metavar="NAME=VALUE",
                   help="bind a kernel factory parameter for --verify (repeatable)")
    g.add_argument("--emit-cuda", metavar="DIR", help="with --verify, write the lowered CUDA of both forms")
    g.add_argument("--emit-bundle", metavar="DIR", help="write a bundle of lowered kernels for the GPU runner")

    g = p.add_argument_group("performance")
    g.add_argument("-j", "--jobs", type=int, default=None,
                   help="worker processes (default: the CPUs this process may use; a configuration file may "
                        "set fewer, never more)")
    g.add_argument("--no-cache", dest="cache", action="store_false", default=None,
                   help="do not read or write the results cache")
    g.add_argument("--cache-dir", metavar="DIR", help="results cache folder (default: $CPASYNC_MIGRATE_CACHE_DIR, "
                   "else ~/.cache/cpasync-migrate/results; a configuration file may name only a folder inside "
                   "its own, reached without links)")
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
    from .syspath import as_given

    for entry in as_given():  # with the entries the entry point took off the import path: only metadata is read
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
            try:
                if not f.is_file():
                    continue
            except (OSError, ValueError):  # a name too long, a loop: no definition there
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


def main(argv: Optional[list[str]] = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # a file name that is not UTF-8 is printed as its bytes
        if hasattr(stream, "reconfigure") and getattr(stream, "errors", "") == "strict":
            try:
                stream.reconfigure(errors="surrogateescape")
            except (ValueError, OSError):
                pass
    parser = build_parser()
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as e:  # argparse exits 3 on usage errors (_Parser.error), 0 for --help
            return int(e.code or 0)
        try:
            return run(args)
        except UsageError as e:  # also ConfigError: a mistake in [tool.cpasync-migrate]
            print(f"cpasync-migrate: error: {e}", file=sys.stderr)
            return EXIT_USAGE
        except KeyboardInterrupt:
            print("cpasync-migrate: interrupted", file=sys.stderr)
            return 2
    except BrokenPipeError:  # the reader went away (`| head`) outside the report: quiet, as other tools are
        _quiet_stdout()
        return 1


def _quiet_stdout() -> None:
    """Point stdout at the null device, so that the flush at exit raises no second BrokenPipeError."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def _emit_kept(outcomes, scanned, mode, args, target_info, rules, sets, **kw) -> int:
    """:func:`emit.emit`; when stdout's reader went away mid-report (`... | head`), no traceback and the
    exit code the run had (as ruff and black do)."""
    from .emit import emit
    from .report import exit_code

    try:
        if args.output_file:  # -o: the report to that file (a stdin run's migrated text stays on stdout)
            kw.pop("out", None)
            from .emit import open_document

            with open_document(args.output_file) as fh:
                return emit(outcomes, scanned, mode, args, target_info, rules, sets, out=fh, **kw)
        return emit(outcomes, scanned, mode, args, target_info, rules, sets, **kw)
    except BrokenPipeError:
        _quiet_stdout()
        return exit_code(outcomes, mode)


def run(args) -> int:
    import dataclasses

    from . import config as cfgmod
    from .engine import RunSettings
    from .rules import RulesError, load_rules, version_spec

    if not args.paths:
        raise UsageError("no paths given (try: cpasync-migrate --diff path/)")
    for opt, path in ([("-o", args.output_file)] if args.output_file else []) + [
            (f"--report {fmt}", path) for fmt, path in args.report or ()]:
        if not os.path.isdir(os.path.dirname(os.path.abspath(path))) or os.path.isdir(path):
            raise UsageError(f"{opt} {path}: not a file in an existing folder")
    if args.statistics and (args.output_file or args.report):
        raise UsageError("--statistics is a terminal report; -o and --report write documents")
    stdin = _stdin_name(args)
    if args.statistics and args.format != "text":
        raise UsageError(f"--statistics is a text report; --format {args.format} lists every finding")
    cfg: dict = {}
    if not args.isolated:
        if args.config:
            cfg = cfgmod.load(Path(args.config), required=True)
        else:
            first = Path(stdin) if stdin is not None else Path(args.paths[0])
            try:
                pp = cfgmod.find_config(first if stdin is not None or first.exists() else Path.cwd())
            except (OSError, RuntimeError):  # a link loop, a vanished folder: no configuration
                pp = None
            if pp is not None:
                cfg = cfgmod.load(pp)
    select = _selection(args, cfg)
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
    from .discovery import Glob

    anchored = ([(Glob.of(g, "exclude"), here) for g in args.exclude] if args.exclude is not None
                else [(Glob.of(g, "exclude"), there) for g in cfg.get("exclude", [])])
    anchored += [(Glob.of(g, "extend-exclude"), there) for g in cfg.get("extend-exclude", [])] + \
        [(Glob.of(g, "extend-exclude"), here) for g in args.extend_exclude or []]
    excludes = _excludes_for(anchored) if anchored else ()
    from .files import CPP_SUFFIXES, PYTHON_SUFFIXES

    kept = []
    # a named file of another kind (a .c file from a hook) is skipped, with a note
    for p in ([] if stdin is not None else args.paths):
        if not p.endswith(PYTHON_SUFFIXES + CPP_SUFFIXES) and os.path.isfile(p):
            print(f"cpasync-migrate: note: skipped {p}: not a Python ({' '.join(PYTHON_SUFFIXES)}) or C++ "
                  f"({' '.join(CPP_SUFFIXES)}) file", file=sys.stderr)
            continue
        kept.append(p)
    if stdin is None:
        args.paths = kept
    force_exclude = args.force_exclude or bool(cfg.get("force-exclude", False))
    stdin_excluded = stdin is not None and force_exclude and bool(anchored) and _named_file_excluded(stdin, anchored)
    if force_exclude and anchored and stdin is None:
        kept = []
        for p in args.paths:
            if not os.path.isdir(p) and _named_file_excluded(p, anchored):
                if args.verbose:
                    print(f"skipped {p}: excluded (--force-exclude)", file=sys.stderr)
                continue
            kept.append(p)
        args.paths = kept  # none left: nothing to do, exit 0 (as a pre-commit hook expects)
    if args.jobs is not None:  # the command line's count is used as given
        jobs = args.jobs
    else:
        from .cpus import default_jobs

        # a configuration file may lower the count, never raise it past the CPUs this process may use
        jobs = min(cfg["jobs"], default_jobs()) if cfg.get("jobs") else default_jobs()
        if args.verbose and cfg.get("jobs", 0) > jobs:
            print(f"cpasync-migrate: note: {cfg['__file__']}: jobs = {cfg['jobs']} capped at {jobs} (the CPUs "
                  "this process may use; only -j asks for more)", file=sys.stderr)
    if jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if args.max_file_size is not None:  # only the command line lifts the ceiling (0: no limit)
        max_file_size = cfgmod.parse_size(args.max_file_size)
        if max_file_size is None:
            raise UsageError(f"--max-file-size {args.max_file_size!r}: expected a size in bytes such as 4MB "
                             "(0: no limit)")
    else:
        from .files import DEFAULT_MAX_FILE_SIZE

        max_file_size = cfg.get("max-file-size", DEFAULT_MAX_FILE_SIZE)
        ceiling = cfgmod.CONFIG_MAX_FILE_SIZE
        if max_file_size == 0 or max_file_size > ceiling:
            print(f"cpasync-migrate: note: {cfg['__file__']}: max-file-size = {cfg['max-file-size']} capped at "
                  f"{ceiling} bytes (a configuration file cannot lift the limit past that; --max-file-size "
                  "can)", file=sys.stderr)
            max_file_size = ceiling
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
    cache_dir = confine = None
    if (args.cache if args.cache is not None else cfg.get("cache", True)):
        from . import cache

        cache_dir = args.cache_dir or cfg.get("cache-dir") or cache.default_dir()
        if not args.cache_dir and cfg.get("cache-dir"):
            confine = cfg["__cache_root__"]  # the configuration's folder: inside its project root, no link
    settings = RunSettings(
        mode=mode, unsafe_fixes=unsafe, target=target_info["generation"], source=src_gen.name, style=style,
        migrate_tvm=migrate_tvm, verify=args.verify, device=device, require_proof=args.require_proof,
        binds=binds, emit_cuda=args.emit_cuda, cache_dir=cache_dir,
        keep_texts=mode != "check" or bool(args.emit_bundle), defer_coupled=mode == "write",
        max_file_size=max_file_size, allow_read_only=allow_read_only,
    )
    if cache_dir and not cache.prepare(settings, confine):
        if args.verbose:
            print(f"cpasync-migrate: note: results cache off: no key in {cache.key_dir()} could be read or made",
                  file=sys.stderr)
        settings.cache_dir = None
    if stdin is not None:
        return _run_stdin(stdin, stdin_excluded, settings, select, args, cfg, target_info, rules)
    from .runner import run_files

    def run_all(s, verbose: bool):
        return run_files(args.paths, s, excludes=excludes, jobs=jobs, respect_gitignore=not args.no_gitignore,
                         since=args.since, verbose=verbose, quiet=args.quiet,
                         show_progress=True, follow_links_outside=args.follow_links_outside) if args.paths else ([], 0)

    if select is not None and mode != "check":
        # the fixes of sites deselected must not be applied: a first pass finds them, the run holds them
        probe = dataclasses.replace(settings, mode="check", keep_texts=False, defer_coupled=False, verify=False,
                                    emit_cuda=None)
        found = run_all(probe, False)[0]
        _refuse_split_sets(found, select, unsafe)
        settings.hold = _deselected_sites(found, select)
    outcomes, scanned = run_all(settings, args.verbose)
    if select is not None:
        _refuse_split_sets(outcomes, select, unsafe)
        _deselect(outcomes, select)
    sets: list = []
    if any(f.role for o in outcomes for f in o.findings):
        from .settle import settle

        accept_partial = (args.accept_partial_sets if args.accept_partial_sets is not None
                          else bool(cfg.get("accept-partial-sets", False)))
        outcomes, sets = settle(outcomes, settings, args.paths, accept_partial, rules)
        if select is not None:  # a file processed again for its set has its deselected sites held
            _deselect(outcomes, select)
    bundle_error = None
    if args.emit_bundle:
        from .verify_bridge import emit_bundle

        try:
            emit_bundle(outcomes, settings, args.emit_bundle)
        except OSError as e:  # a link planted in the folder, no permission: said, and a file error
            bundle_error = f"cpasync-migrate: error: --emit-bundle {args.emit_bundle}: {e}; the bundle is incomplete"
    code = _exit(args, _emit_kept(outcomes, scanned, mode, args, target_info, rules, sets))
    if bundle_error:
        print(bundle_error, file=sys.stderr)
        return max(code, 2)
    return code


def _exit(args, code: int) -> int:
    """--exit-zero: sites that remain do not fail the run (errors still do)."""
    return 0 if args.exit_zero and code == 1 else code


def _stdin_name(args) -> Optional[str]:
    """The name the text on stdin is reported under, when the path is ``-`` (else None)."""
    if "-" not in args.paths:
        if args.stdin_filename is not None:
            raise UsageError("--stdin-filename names the text read from stdin: give - as the path")
        return None
    if args.paths != ["-"]:
        raise UsageError("- (read stdin) must be the only path")
    if args.since:
        raise UsageError("--since selects files of a tree; - reads one text from stdin")
    name = args.stdin_filename
    if name is None:
        raise UsageError("- reads stdin: give --stdin-filename NAME (the file's name: its suffix picks Python "
                         "or C++, and findings are reported under it)")
    from .engine import language_of
    from .files import CPP_SUFFIXES, PYTHON_SUFFIXES

    if language_of(name) is None:
        raise UsageError(f"--stdin-filename {name}: not a Python ({' '.join(PYTHON_SUFFIXES)}) or C++ "
                         f"({' '.join(CPP_SUFFIXES)}) name")
    if os.path.isdir(name):
        raise UsageError(f"--stdin-filename {name}: a folder")
    return name


def _selection(args, cfg: dict):
    """From --select/--ignore (else ``select``/``ignore`` in the configuration), whether a code is selected
    (None: neither given).  A prefix such as ``CPA1`` stands for every code it starts; CPA900 (a file error)
    is always selected.  The file's lists are checked also where an option overrides them."""
    from .codes import CODES, FILE_ERROR

    def parse(option: str, values) -> tuple:
        out = []
        for value in values or ():
            for c in value.split(","):
                c = c.strip().upper()
                if not c:
                    continue
                if not any(k.startswith(c) for k in CODES):
                    raise UsageError(f"{option} {c}: no such code (codes: {', '.join(sorted(CODES))})")
                out.append(c)
        return tuple(out)

    def codes_of(key: str) -> Optional[tuple]:
        """The option's codes, else the file's (None: neither gives the list); the file's are checked either way."""
        where = f"{cfg.get('__file__')}: [tool.cpasync-migrate] {key} ="
        from_file = parse(where, cfg[key]) if key in cfg else None
        if key == "select" and from_file == ():
            raise UsageError(f"{where} []: no code given (leave the key out to select every code)")
        given = getattr(args, key)
        return parse(f"--{key}", given) if given is not None else from_file

    chosen, dropped = codes_of("select"), codes_of("ignore")
    if chosen is None and dropped is None:
        return None
    if args.select is not None and not chosen:
        raise UsageError("--select: no code given")

    def selected(code: str) -> bool:
        if code == FILE_ERROR:
            return True  # a file error is never deselected
        if chosen and not code.startswith(chosen):
            return False
        return not (dropped and code.startswith(dropped))

    return selected


def _deselected_sites(outcomes, selected) -> dict:
    """Per path, the (line, column, code) of the sites of codes not selected that have a fix (to hold)."""
    hold: dict = {}
    for o in outcomes:
        for f in o.findings:
            if f.fix is not None and not selected(f.code):
                hold.setdefault(o.path, set()).add((f.line, f.column, f.code))
    return {k: frozenset(v) for k, v in hold.items()}


def _refuse_split_sets(outcomes, selected, unsafe: bool) -> None:
    """With --unsafe-fixes a change set is applied without its suppressed members (sets.decide), so a
    deselected member would be left in the legacy layout while the rest of its program moves on:
    refused before anything is written."""
    if not unsafe:
        return
    from .sets import group

    split = sorted({f"{m.finding.code} ({m.role}, {m.path}:{m.finding.line})" for cs in group(outcomes)
                    for m in cs.members if m.finding.legacy_site and not selected(m.finding.code)})
    if split:
        raise UsageError(f"--select/--ignore leave change-set members in the legacy layout while --unsafe-fixes "
                         f"migrates the rest of their program: {', '.join(split[:5])}"
                         f"{' ...' if len(split) > 5 else ''}; select every code of the set, or drop --unsafe-fixes")


def _deselect(outcomes, selected) -> None:
    """Findings of codes not selected are kept as they are and out of the report: suppressed (so a
    change set they belong to is blocked, as by a suppression comment)."""
    from .findings import Status

    for o in outcomes:
        for f in o.findings:
            if not selected(f.code) and f.status is not Status.UNPARSABLE:
                f.status = Status.SUPPRESSED


def _run_stdin(name: str, excluded: bool, settings, select, args, cfg, target_info, rules) -> int:
    """One text from stdin, reported under ``name``: --check and --diff as for a file of that name;
    write mode prints the migrated text (the input as it is, where nothing is migrated) on stdout
    and its report on stderr, as formatters do.  Nothing is written to disk."""
    import dataclasses

    from . import engine, files
    from .findings import Status

    raw = sys.stdin.buffer.read()
    mode = settings.mode
    if excluded:  # --force-exclude and an excluded name: the text goes through untouched
        if args.verbose:
            print(f"skipped {name}: excluded (--force-exclude)", file=sys.stderr)
        if mode == "write":
            sys.stdout.buffer.write(raw)
        return 0
    files.give(name, raw)
    run_settings = dataclasses.replace(settings, mode="diff", keep_texts=True, defer_coupled=False) \
        if mode == "write" else settings
    if select is not None and mode != "check":
        o = engine.process_file(name, dataclasses.replace(run_settings, mode="check", verify=False, emit_cuda=None),
                                explicit=True)
        _refuse_split_sets([o] if o else [], select, settings.unsafe_fixes)
        run_settings.hold = _deselected_sites([o] if o else [], select)
    o = engine.process_file(name, run_settings, explicit=True)
    outcomes = [o] if o is not None else []
    if select is not None:
        _refuse_split_sets(outcomes, select, settings.unsafe_fixes)
        _deselect(outcomes, select)
    sets: list = []
    if any(f.role for x in outcomes for f in x.findings):
        from .settle import settle

        accept = (args.accept_partial_sets if args.accept_partial_sets is not None
                  else bool(cfg.get("accept-partial-sets", False)))
        outcomes, sets = settle(outcomes, run_settings, [name], accept, rules)
        if select is not None:
            _deselect(outcomes, select)
    if mode != "write":
        return _exit(args, _emit_kept(outcomes, 1, mode, args, target_info, rules, sets))
    text_out = raw
    for x in outcomes:
        if x.new_text is not None and not x.error:
            src = files.decode(name, raw, python=x.language == "python")
            text_out = files.encode(src, x.new_text)
            x.written = True  # to stdout: the report says what remains in the text printed
    for x in outcomes:  # what was not printed migrated stays for a person
        if not x.written:
            for f in x.findings:
                if f.status is Status.REWRITTEN:
                    f.status = Status.MANUAL
    sys.stdout.buffer.write(text_out)
    sys.stdout.flush()
    return _exit(args, _emit_kept(outcomes, 1, mode, args, target_info, rules, sets, out=sys.stderr))


def _rel_to(path: str, anchor: str) -> Optional[str]:
    """``path`` relative to ``anchor`` with ``/`` separators; None when it lies outside it."""
    r = os.path.relpath(os.path.abspath(path), anchor)
    return None if r == ".." or r.startswith(".." + os.sep) else r.replace(os.sep, "/")


def _excludes_for(anchored):
    """For a folder argument, the exclude globs as the walk there needs them (relative to it)."""
    from .config import glob_for_folder
    from .discovery import tagged

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
                out.append(tagged(t, g))
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
