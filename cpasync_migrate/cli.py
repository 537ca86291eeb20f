"""Command line: parse arguments, pick the mode, map outcomes to exit codes."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Optional

from . import __version__, streams
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

other commands:
  cpasync-migrate rule CODE   print a code's page (what it means, why, an example); rule --all: every page
                              (to scan a folder named rule, write ./rule)

configuration: each file's nearest pyproject.toml with [tool.cpasync-migrate] (docs/configuration.md);
  --show-settings PATH prints what is in force there

environment:
  NO_COLOR=1     no colour (wins over FORCE_COLOR)      FORCE_COLOR=1  colour also when not a terminal
  CPASYNC_MIGRATE_CACHE_DIR   results cache folder (else $XDG_CACHE_HOME/cpasync-migrate/results)
  CPASYNC_MIGRATE_RULES       a rules folder to use instead of the bundled rules/*.toml
"""


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
    """The parser, from the option table (options.py); no abbreviations (``--chec`` is refused)."""
    from .options import Parser, add_options

    p = Parser(
        prog="cpasync-migrate",
        description="Migrate TileLang's legacy ptx_cp_async calls to the access-pointer API.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    p.add_argument("paths", nargs="*", help="files and directories (recursively); - reads one file from stdin")
    p.add_argument("--version", action=_Version, help="print the version of the tool, its rules and its parsers")
    add_options(p)
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

    from .inputs import note

    for p in paths:
        for rel in _DEFINITION_PLACES:
            f = Path(p) / rel
            note(str(f))  # looked at, found or not: an input of a run record (replay.py), also in an unwalked folder
            try:
                if not f.is_file():
                    continue
            except (OSError, ValueError):  # a name too long, a loop: no definition there
                continue
            from .files import nesting
            from .small_files import read

            try:  # the tree's file: bounded in size and nesting (as a kernel is) before it is parsed
                raw = read(str(f), 4 << 20)
                if nesting(raw.decode("utf-8", "replace"), True) is not None:
                    continue
                tree = ast.parse(raw)
            except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):  # ValueError: Refused
                continue
            for node in tree.body:
                if isinstance(node, ast.FunctionDef) and node.name == rules.intrinsic:
                    params = tuple(a.arg for a in node.args.args)
                    for gen in rules.generations:
                        if params == tuple(gen.python_params):
                            return gen, f"{f}:{node.lineno}"
    return None


def _known_release_line(spec: str, rules) -> None:
    """A version whose major number no generation of the rules starts in (``9.9`` while every generation
    is a 0.x release) is refused: an open-ended last generation covers later releases of its own line,
    not a version nobody has described."""
    from .rules import RulesError, parse_version

    if spec == "latest" or any(g.name == spec for g in rules.generations):
        return
    major = parse_version(spec)[1][0]  # (epoch, release, ...): the release's first number
    majors = {parse_version(g.covers_min)[1][0] for g in rules.generations if g.covers_min}
    if major > max(majors):
        raise RulesError(f"TileLang {spec} is newer than every release line the rules describe")


def _known_generations(rules) -> str:
    """The generations rules/ knows, with the TileLang versions each covers."""
    parts = []
    for g in rules.generations:
        span = f"{g.covers_min} to {g.covers_max}" if g.covers_max else f"{g.covers_min} and later"
        parts.append(f"{g.name} ({span})")
    return f"known generations (rules/): {', '.join(parts)}; or 'latest'"


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
            _known_release_line(s, rules)
        except RulesError as e:
            raise UsageError(f"--target {spec}: {e}; {_known_generations(rules)}") from None
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
    streams.tolerant()  # a file name that is not UTF-8 is printed as its bytes
    args_given = sys.argv[1:] if argv is None else list(argv)
    try:
        os.getcwd()
    except OSError as e:  # every relative path, configuration lookup and report path starts from it
        print(f"cpasync-migrate: error: the current folder cannot be found ({e.strerror}); run in an existing folder",
              file=sys.stderr)
        return EXIT_USAGE
    if args_given[:1] == ["rule"]:  # `cpasync-migrate rule CODE`: a code's page (scan a folder named rule as ./rule)
        return rule(args_given[1:])
    parser = build_parser()
    try:
        try:
            args = parser.parse_args(args_given)
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
        streams.quiet_stdout()
        return 1


def rule(argv: list[str]) -> int:
    """``cpasync-migrate rule CODE`` prints the code's page (docs/codes/CODE.md); ``rule --all`` every page."""
    from .codes import CODES, page
    from .options import Parser

    p = Parser(prog="cpasync-migrate rule", description="print a code's page", allow_abbrev=False)
    p.add_argument("code", nargs="?", help="a code, e.g. CPA001")
    p.add_argument("--all", action="store_true", help="every code's page")
    try:
        a = p.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    if a.all == (a.code is not None):
        print("cpasync-migrate rule: error: give one CODE, or --all", file=sys.stderr)
        return EXIT_USAGE
    codes = sorted(CODES) if a.all else [a.code.strip().upper()]
    if codes[0] not in CODES:
        print(f"cpasync-migrate rule: error: {a.code}: no such code (codes: {', '.join(sorted(CODES))})",
              file=sys.stderr)
        return EXIT_USAGE
    texts = []
    for c in codes:
        text = page(c)
        if text is None:
            print(f"cpasync-migrate rule: error: the page of {c} is not installed (docs/codes/{c}.md)", file=sys.stderr)
            return 2
        texts.append(text.rstrip("\n") + "\n")
    sys.stdout.write("\n".join(texts))
    return 0


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
        streams.quiet_stdout()
        return exit_code(outcomes, mode)


def run(args) -> int:
    """Parsed arguments -> one :class:`~.run.Run` -> its files -> its report; the exit code."""
    from .run import Run

    return Run.build(args).execute()


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
