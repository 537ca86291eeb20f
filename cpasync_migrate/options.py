"""The option table: every command-line option and configuration key, once.

Each :class:`Option` says its name, its kind (what a value must be), its default, its key in
``[tool.cpasync-migrate]`` (None: only the command line may set it), whether it changes the results of
an analysis (then it is part of the results cache's key and of the front end's options), and whether
a file's own configuration may set it for that file (``per_file``) or only for the whole run.

From the table are derived: the argument parser (:func:`build_parser`), the configuration reader's key
checks (:func:`config_checks`, read by ``config.py``), the front end's options
(``engine.front_end_options``) and the results cache's key (``cache.key``, through :func:`result_values`).
``docs/configuration.md`` lists the table; a test checks that page against it.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from typing import Callable, Optional

from .errors import EXIT_USAGE

# ------------------------------------------------------------------ kinds


@dataclass(frozen=True)
class Kind:
    """What a value must be: ``words`` for error messages, ``check`` for a value read from TOML."""

    name: str
    words: str
    check: Callable[[object], bool]


def _size_ok(v) -> bool:
    from .config import parse_size

    return parse_size(v) is not None


def _is_strs(v) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


# The most globs one configuration key may hold: each listed file is tried against each glob (and each of its
# folders), so a tree's own configuration must not choose that product (10,000 globs over 4,000 files never ended).
MAX_GLOBS = 256


def _is_globs(v) -> bool:
    return _is_strs(v) and len(v) <= MAX_GLOBS


BOOL = Kind("bool", "true or false", lambda v: isinstance(v, bool))
STR = Kind("str", "a string", lambda v: isinstance(v, str))
GENERATION = Kind("generation", "a string (a TileLang version or API generation)", lambda v: isinstance(v, str))
NONEMPTY = Kind("path", "a non-empty string", lambda v: isinstance(v, str) and v != "")
JOBS = Kind("jobs", "a whole number of at least 1",
            lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1)
LINE_LENGTH = Kind("line-length", "a whole number from 1 to 320",
                   lambda v: isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 320)
SIZE = Kind("size", "a size in bytes (a whole number >= 0, or a string such as \"4MB\"; 0: no limit)", _size_ok)
GLOBS = Kind("globs", f"a list of at most {MAX_GLOBS} strings (glob patterns)", _is_globs)
CODES = Kind("codes", "a list of strings (codes, or prefixes such as \"CPA1\")", _is_strs)
PER_FILE_IGNORES = Kind(
    "per-file-ignores", f"a table of at most {MAX_GLOBS} glob = [codes] (e.g. \"tests/*\" = [\"CPA003\"])",
    lambda v: isinstance(v, dict) and len(v) <= MAX_GLOBS and all(isinstance(k, str) and _is_strs(x)
                                                                  for k, x in v.items()))
STYLE = Kind("style", "one of \"tvm_access_ptr\", \"access_ptr\"", lambda v: v in ("tvm_access_ptr", "access_ptr"))
SECONDS = Kind("seconds", "a number of seconds >= 0 (0: no limit)",
                lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < float("inf"))
FLAG = Kind("flag", "a flag", lambda v: isinstance(v, bool))  # command line only
ANY = Kind("value", "a value", lambda v: True)  # command line only (argparse checks it)


# ------------------------------------------------------------------ the table


@dataclass(frozen=True)
class Option:
    name: str  # the attribute on the parsed arguments (argparse's dest)
    flags: tuple  # the command-line spellings; () for a configuration key without a flag
    kind: Kind
    default: object = None
    key: Optional[str] = None  # its key in [tool.cpasync-migrate]; None: command line only
    results: bool = False  # changes what an analysis finds: in the cache key and the front end's options
    front_end: Optional[str] = None  # the FrontEndOptions field it fills (results options only)
    setting: Optional[str] = None  # the RunSettings field that holds it in a run (results options only)
    per_file: bool = False  # a file's nearest configuration decides it for that file
    group: str = "output"
    help: Optional[str] = None
    arg: dict = field(default_factory=dict)  # further argparse keywords (action, choices, metavar, type)


def _report_spec(text: str) -> tuple:
    """``--report FORMAT:FILE``."""
    from .emit import DOCUMENT_FORMATS

    fmt, sep, path = text.partition(":")
    if not sep or not path or fmt not in DOCUMENT_FORMATS:
        raise argparse.ArgumentTypeError(f"expected FORMAT:FILE with FORMAT one of {', '.join(DOCUMENT_FORMATS)}")
    return fmt, path


def _per_file_ignore_spec(text: str) -> tuple:
    """``--per-file-ignores GLOB:CODES``."""
    glob, sep, codes = text.rpartition(":")
    if not sep or not glob or not codes.strip():
        raise argparse.ArgumentTypeError("expected GLOB:CODES, e.g. 'tests/*:CPA003,CPA004'")
    return glob, tuple(c.strip() for c in codes.split(",") if c.strip())


FORMATS = ("text", "json", "github", "sarif", "markdown", "junit", "gitlab")

OPTIONS: tuple = (
    # modes (a mutually exclusive pair; parser-built below)
    Option("check", ("--check",), FLAG, False, group="modes", arg={"action": "store_true"},
           help="report legacy sites and write nothing (CI lint)"),
    Option("diff", ("--diff",), FLAG, False, group="modes", arg={"action": "store_true"},
           help="print a unified diff and write nothing (dry run)"),
    # output
    Option("format", ("--format",), ANY, "text", arg={"choices": FORMATS},
           help="output format (default: text; gitlab: code quality JSON)"),
    Option("output_file", ("-o", "--output-file"), ANY, None, arg={"metavar": "FILE"},
           help="write the report to FILE instead of stdout (the text summary of --check and --diff "
                "still goes to stderr)"),
    Option("report", ("--report",), ANY, None, arg={"metavar": "FORMAT:FILE", "action": "append",
                                                   "type": _report_spec},
           help="also write a report in FORMAT (json, sarif, markdown, github, junit, gitlab, text: the "
                "per-site lines) to FILE, in the same run (repeatable)"),
    Option("statistics", ("--statistics",), FLAG, False, arg={"action": "store_true"},
           help="text format: one line per code (count, code, name, fixable) instead of one per site"),
    Option("exit_zero", ("--exit-zero",), FLAG, False, arg={"action": "store_true"},
           help="exit 0 even while legacy sites remain (errors still exit 2 or 3)"),
    Option("exit_non_zero_on_fix", ("--exit-non-zero-on-fix",), FLAG, False, arg={"action": "store_true"},
           help="write mode: exit 1 when a file was rewritten, even if no legacy site remains (as ruff's flag)"),
    Option("color", ("--color",), ANY, "auto", arg={"choices": ("auto", "always", "never")},
           help="colour the summary and diffs: auto (a terminal, unless NO_COLOR / FORCE_COLOR say otherwise), "
                "always, never (default: auto)"),
    Option("quiet", ("-q", "--quiet"), FLAG, False, arg={"action": "store_true"},
           help="print only findings and errors"),
    Option("verbose", ("-v", "--verbose"), FLAG, False, arg={"action": "store_true"},
           help="also print every file processed and every path skipped, with the reason"),
    Option("show_settings", ("--show-settings",), FLAG, False, arg={"action": "store_true"},
           help="print the settings resolved for the first path (its configuration file, every option) "
                "and exit"),
    # selection
    Option("select", ("--select",), CODES, None, key="select", per_file=True, group="selection",
           arg={"metavar": "CODES", "action": "append"},
           help="only these codes (comma list; a prefix such as CPA1 selects every C++ code)"),
    Option("ignore", ("--ignore",), CODES, None, key="ignore", per_file=True, group="selection",
           arg={"metavar": "CODES", "action": "append"},
           help="not these codes (comma list, prefixes allowed; wins over --select): their sites "
                "are kept as they are and out of the report, as a suppression comment does"),
    Option("per_file_ignores", ("--per-file-ignores",), PER_FILE_IGNORES, None, key="per-file-ignores",
           per_file=True, group="selection",
           arg={"metavar": "GLOB:CODES", "action": "append", "type": _per_file_ignore_spec},
           help="not these codes in the files GLOB matches (relative to the current folder; repeatable; "
                "added to the configuration's per-file-ignores)"),
    # fixes and targets
    Option("unsafe_fixes", ("--unsafe-fixes",), BOOL, None, key="unsafe-fixes", group="fixes and targets",
           arg={"action": "store_true", "negation": "--no-unsafe-fixes"},
           help="also apply fixes that rest on an assumption the text does not show"),
    Option("accept_partial_sets", ("--accept-partial-sets",), BOOL, None, key="accept-partial-sets",
           group="fixes and targets", arg={"action": "store_true"},
           help="migrate a change set although the paths hold only its builders or only its readers "
                "(the rest of the program is not in view)"),
    Option("target", ("--target",), GENERATION, None, key="target", results=True, front_end="target", setting="target",
           per_file=True,
           group="fixes and targets",
           help="TileLang API to migrate to: a version (0.1.8, tilelang==0.1.13), "
                "a generation (0.1.8, 0.1.9) or 'latest' (default: the installed TileLang, else 0.1.8)"),
    Option("source", ("--from",), GENERATION, None, key="from", results=True, front_end="source", setting="source",
           group="fixes and targets",
           help="API generation the code is written for (default: legacy); "
                "e.g. --from 0.1.8 --target 0.1.9 converts byte counts of access-pointer calls"),
    Option("style", ("--style",), STYLE, None, key="style", results=True, front_end="style", setting="style",
           per_file=True,
           group="fixes and targets", arg={"choices": ("tvm_access_ptr", "access_ptr")},
           help="access-pointer spelling for 0.1.9+ targets"),
    Option("migrate_tvm", ("--migrate-tvm",), BOOL, None, key="migrate-tvm", results=True,
           front_end="migrate_tvm", setting="migrate_tvm", group="fixes and targets",
           arg={"action": "store_true"},
           help="also migrate calls through TVM's namespace, switching them to TileLang's op"),
    Option("line_length", ("--line-length",), LINE_LENGTH, None, key="line-length", results=True, front_end="line_length",
           per_file=True,
           setting="line_length", group="fixes and targets", arg={"metavar": "N", "type": int},
           help="the line length rewritten code is laid out within (default: the file's nearest "
                "pyproject.toml [tool.ruff] / [tool.black] line-length, else 88)"),
    Option("allow_read_only", ("--allow-read-only",), BOOL, None, key="allow-read-only",
           group="fixes and targets", arg={"action": "store_true"},
           help="write mode also rewrites read-only files, keeping their permission bits"),
    Option("follow_links_outside", ("--follow-links-outside",), FLAG, False, group="fixes and targets",
           arg={"action": "store_true"},
           help="write mode also writes a path named here that leads through a symbolic link out of its "
                "tree (its git work tree, else the current folder); only on the command line"),
    # files
    Option("exclude", ("--exclude",), GLOBS, None, key="exclude", per_file=True, group="files",
           arg={"action": "append", "metavar": "GLOB"},
           help="skip paths matching GLOB (repeatable; replaces the configured list)"),
    Option("extend_exclude", ("--extend-exclude",), GLOBS, None, key="extend-exclude", per_file=True,
           group="files", arg={"action": "append", "metavar": "GLOB"},
           help="skip paths matching GLOB, in addition to the configured list"),
    Option("force_exclude", ("--force-exclude",), BOOL, False, key="force-exclude", group="files",
           arg={"action": "store_true"},
           help="apply the excludes to files named on the command line too (pre-commit names every file)"),
    Option("no_gitignore", ("--no-gitignore",), FLAG, False, group="files", arg={"action": "store_true"},
           help="do not honour .gitignore files (nor take the file list from git)"),
    Option("since", ("--since",), ANY, None, group="files", arg={"metavar": "REV"},
           help="only files changed since the merge base of git revision REV and HEAD (git diff REV...HEAD), "
                "in the commits since or in the work tree, and untracked files (on a branch, --since main "
                "leaves out what only main changed)"),
    Option("stdin_filename", ("--stdin-filename",), ANY, None, group="files", arg={"metavar": "NAME"},
           help="with the path -: the name the text on stdin is reported under; its suffix picks "
                "Python or C++, its folder the configuration"),
    Option("max_file_size", ("--max-file-size",), SIZE, None, key="max-file-size", group="files",
           arg={"metavar": "SIZE"},
           help="files larger than SIZE bytes (e.g. 4MB; 0: no limit) that name the intrinsic are a "
                "file error, not analysed (default: 1MB; a configuration file may set at most 4MB)"),
    Option("config", ("--config",), ANY, None, group="files", arg={"metavar": "FILE|KEY=VALUE", "action": "append"},
           help="read [tool.cpasync-migrate] from this pyproject.toml (for every file), or set one key as "
                "TOML KEY = VALUE (checked as in the file; repeatable; wins over the files)"),
    Option("isolated", ("--isolated",), FLAG, False, group="files", arg={"action": "store_true"},
           help="ignore configuration files"),
    # verification
    Option("verify", ("--verify",), FLAG, False, group="verification", arg={"action": "store_true"},
           help="prove each rewritten kernel equivalent to the original"),
    Option("device", ("--device",), ANY, "auto", group="verification", arg={"choices": ("auto", "cpu", "gpu")},
           help="where --verify runs kernels (default: auto)"),
    Option("require_proof", ("--require-proof",), FLAG, False, group="verification", arg={"action": "store_true"},
           help="with --verify, do not write files that have inconclusive kernels"),
    Option("bind", ("--bind",), ANY, [], group="verification", arg={"action": "append", "metavar": "NAME=VALUE"},
           help="bind a kernel factory parameter for --verify (repeatable)"),
    Option("emit_cuda", ("--emit-cuda",), ANY, None, group="verification", arg={"metavar": "DIR"},
           help="with --verify, write the lowered CUDA of both forms"),
    Option("emit_bundle", ("--emit-bundle",), ANY, None, group="verification", arg={"metavar": "DIR"},
           help="write a bundle of lowered kernels for the GPU runner"),
    # performance
    Option("jobs", ("-j", "--jobs"), JOBS, None, key="jobs", group="performance", arg={"type": int},
           help="worker processes (default: the CPUs this process may use; a configuration file may "
                "set fewer, never more)"),
    Option("file_cpu_limit", ("--file-cpu-limit",), SECONDS, None, group="performance",
           arg={"metavar": "SECONDS", "type": float},
           help="CPU seconds one file's analysis may take, and 60 times that more per MiB of the file (default: 5; "
                "0: no limit); a file that needs more is a file error, not analysed (command line only)"),
    Option("cache", ("--no-cache",), BOOL, None, key="cache", group="performance", arg={"action": "store_false"},
           help="do not read or write the results cache"),
    Option("cache_dir", ("--cache-dir",), NONEMPTY, None, key="cache-dir", group="performance",
           arg={"metavar": "DIR"},
           help="results cache folder (default: $CPASYNC_MIGRATE_CACHE_DIR, else ~/.cache/cpasync-migrate/results; "
                "a configuration file may name only a folder inside its own, reached without links)"),
)

GROUPS = ("modes", "output", "selection", "fixes and targets", "files", "verification", "performance")


def by_name() -> dict:
    return {o.name: o for o in OPTIONS}


def by_key() -> dict:
    """Configuration key -> its option."""
    return {o.key: o for o in OPTIONS if o.key}


def config_checks() -> dict:
    """key -> (what the value must be, in words; a check): the configuration reader's table."""
    return {o.key: (o.kind.words, o.kind.check) for o in OPTIONS if o.key}


def result_options() -> list:
    """The options that change what an analysis finds (the cache key and the front end's options hold them)."""
    return [o for o in OPTIONS if o.results]


def result_values(settings, **derived) -> list:
    """[name, value] of every option that changes results, as a run's settings hold them; ``derived``
    gives the values a run works out per file (the line length) instead."""
    return [[o.name, derived[o.name] if o.name in derived else getattr(settings, o.setting or o.name, o.default)]
            for o in result_options()]


# ------------------------------------------------------------------ the parser


class Parser(argparse.ArgumentParser):
    """argparse's parser, exiting 3 on a usage error; adding an option does not ask the terminal's width."""

    _checking = False  # inside add_argument

    def add_argument(self, *args, **kwargs):
        self._checking = True
        try:
            return super().add_argument(*args, **kwargs)
        finally:
            self._checking = False

    def _get_formatter(self):
        # add_argument asks a formatter only to check the option's metavar (_format_args), which the width does
        # not change: a fixed one spares the terminal's size (and the import of shutil) on every run; help and
        # usage texts still get the terminal's
        if self._checking:
            return self.formatter_class(prog=self.prog, width=80)
        return super()._get_formatter()

    def error(self, message):  # argparse's own usage errors exit 3 too, not 2 (a file error)
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def add_options(p: argparse.ArgumentParser) -> None:
    """Every option of the table, in its group (--check and --diff exclude each other)."""
    groups = {g: p.add_argument_group(g) for g in GROUPS}
    modes = groups["modes"].add_mutually_exclusive_group()
    for o in OPTIONS:
        if not o.flags:
            continue
        target = modes if o.group == "modes" else groups[o.group]
        kw = dict(o.arg)
        negation = kw.pop("negation", None)
        kw.setdefault("default", o.default)
        target.add_argument(*o.flags, dest=o.name, help=o.help, **kw)
        if negation:
            target.add_argument(negation, dest=o.name, action="store_false", help=f"the opposite of {o.flags[0]}")



# ------------------------------------------------------------------ the page


def markdown_table() -> str:
    """The table of docs/configuration.md (a test checks the page holds exactly this)."""
    rows = ["| option | key in `[tool.cpasync-migrate]` | value | default | per file | changes results |",
            "|---|---|---|---|---|---|"]
    for o in OPTIONS:
        flags = ", ".join(f"`{f}`" for f in o.flags)
        key = f"`{o.key}`" if o.key else "(command line only)"
        default = "" if o.default in (None, [], False) else f"`{o.default}`"
        rows.append(f"| {flags} | {key} | {o.kind.words} | {default} | {'yes' if o.per_file else ''} | "
                    f"{'yes' if o.results else ''} |")
    return "\n".join(rows) + "\n"
