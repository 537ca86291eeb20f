"""One run, resolved once: the command line's options over each file's configuration.

``Run.build(args)`` merges the parsed arguments (options.py's table) with ``[tool.cpasync-migrate]``,
picks the target, the modes and the ceilings, and makes the engine's :class:`~.engine.RunSettings`;
``Run.execute()`` runs the files (the runner, or one text from stdin) and hands the outcomes to the
report (emit.py).  ``cli.py`` only parses and calls these two.

Configuration is per file (as ruff resolves it): each file's settings come from its nearest
``pyproject.toml`` with a ``[tool.cpasync-migrate]`` table (``config.Configs``).  The keys the table
marks ``per_file`` (excludes, select, ignore, per-file-ignores; the target, style and line length
through ``file_settings.FileSettings``) apply per file; the others apply to the whole run and come
from the configuration of the folder that holds every path given (so the order of the arguments
changes nothing).  Every configuration a file of the run uses is checked before that file is
processed, and in write mode before the first file is written (``runner.run_files``).
"""
from __future__ import annotations

import dataclasses
import os
import sys
from typing import Optional

from .errors import UsageError
from .inputs import suspect

# A switch (CPASYNC_MIGRATE_FREE_FOLDERS=0: every file a walk finds is asked about through Run.keep, as before;
# a measuring switch).  On: once Run.keep has found that the files of a folder (as written) take a
# configuration without anchored excludes, the walk's other regular files there are kept without the call
# (``Run.free_folders``, ``runner._discovered``).  Only where Run.keep finds a file's folder by cutting its name.
FREE_FOLDERS = os.environ.get("CPASYNC_MIGRATE_FREE_FOLDERS", "1") != "0"


# ------------------------------------------------------------------ selection


def parse_codes(option: str, values) -> tuple:
    """Codes (or prefixes) from comma lists; an unknown one is a usage error naming ``option``."""
    from .codes import CODES

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


class Selection:
    """Whether a code is selected in a file: ``selection(code, path)``.

    The command line's --select / --ignore win over the file's configuration (its ``select`` /
    ``ignore``); ``per-file-ignores`` of the file's configuration (globs relative to its folder) and
    --per-file-ignores (relative to the current folder) drop codes in the files they match.  CPA900 (a
    file error) is always selected.  Plain data (no closures), so a worker process can be given it."""

    def __init__(self, configs, select, ignore, per_file_ignores, here: str):
        self.configs = configs
        self.select = parse_codes("--select", select) if select is not None else None
        if select is not None and not self.select:
            raise UsageError("--select: no code given")
        self.ignore = parse_codes("--ignore", ignore) if ignore is not None else None
        self.extra = tuple((g, parse_codes(f"--per-file-ignores {g}:", [",".join(c)]), here)
                           for g, c in per_file_ignores or ())
        self._memo: dict = {}

    def given(self) -> bool:
        """Whether the command line selects or drops any code."""
        return self.select is not None or self.ignore is not None or bool(self.extra)

    def for_config(self, cfg: dict) -> tuple:
        """(chosen, dropped, per-file ignores) that a configuration gives, checked (once per file)."""
        name = cfg.get("__file__")
        if name in self._memo:
            return self._memo[name]
        where = lambda key: f"{name}: [tool.cpasync-migrate] {key} ="  # noqa: E731
        chosen = parse_codes(where("select"), cfg["select"]) if "select" in cfg else None
        if chosen == ():
            raise UsageError(f"{where('select')} []: no code given (leave the key out to select every code)")
        dropped = parse_codes(where("ignore"), cfg["ignore"]) if "ignore" in cfg else None
        folder = os.path.dirname(os.path.abspath(name)) if name else os.getcwd()
        pfi = tuple((g, parse_codes(f"{where('per-file-ignores')} {g!r}", codes), folder)
                    for g, codes in (cfg.get("per-file-ignores") or {}).items())
        self._memo[name] = out = (chosen, dropped, pfi)
        return out

    def active_in(self, cfg: dict) -> bool:
        c = self.for_config(cfg)
        return self.given() or c[0] is not None or c[1] is not None or bool(c[2])

    def __call__(self, code: str, path: str) -> bool:
        from .codes import FILE_ERROR
        from .config import path_excluded

        if code == FILE_ERROR:
            return True  # a file error is never deselected
        chosen, dropped, pfi = self.for_config(self.configs.for_path(path))
        chosen = self.select if self.select is not None else chosen
        dropped = self.ignore if self.ignore is not None else dropped
        if chosen and not code.startswith(chosen):
            return False
        if dropped and code.startswith(dropped):
            return False
        for glob, codes, anchor in pfi + self.extra:
            if code.startswith(codes):
                rel = _rel_to(path, anchor)
                if rel is not None and path_excluded(rel, (glob,)):
                    return False
        return True

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_memo"} | {"_memo": {}}


# ------------------------------------------------------------------ excludes


def _rel_to(path: str, anchor: str) -> Optional[str]:
    """``path`` relative to ``anchor`` with ``/`` separators; None when it lies outside it."""
    r = os.path.relpath(os.path.abspath(path), anchor)
    return None if r == ".." or r.startswith(".." + os.sep) else r.replace(os.sep, "/")


def _unreachable(path: str) -> str:
    """Why a named path cannot be looked at ("" when it can): it does not exist, or the system refuses the name."""
    import errno

    try:
        os.lstat(path)
    except FileNotFoundError:
        return "no such file"
    except OSError as e:
        if e.errno == errno.ENAMETOOLONG:
            return "path or name too long for this system"
        return f"cannot be looked at ({e.strerror or e})"
    except ValueError:  # a NUL byte in the name
        return "not a valid path"
    return ""


def anchored_excludes(args, cfg: dict) -> list:
    """Each exclude glob with the folder it is relative to: the configuration's folder for its own, the
    current one for the command line's (--exclude replaces the file's list, --extend-exclude adds)."""
    from .discovery import Glob  # each glob tagged with the key that gave it, for -v's reasons

    here = os.getcwd()
    there = os.path.dirname(os.path.abspath(cfg["__file__"])) if "__file__" in cfg else here
    out = ([(Glob.of(g, "exclude"), here) for g in args.exclude] if args.exclude is not None
           else [(Glob.of(g, "exclude"), there) for g in cfg.get("exclude", [])])
    return out + [(Glob.of(g, "extend-exclude"), there) for g in cfg.get("extend-exclude", [])] + \
        [(Glob.of(g, "extend-exclude"), here) for g in args.extend_exclude or []]


def globs_for_folder(arg: str, anchored) -> tuple:
    """For a folder argument, the exclude globs as the walk there needs them (relative to it)."""
    from .config import glob_for_folder
    from .discovery import tagged

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


def named_file_excluded(path: str, anchored) -> bool:
    from .config import path_excluded

    for g, anchor in anchored:
        rel = _rel_to(path, anchor)
        if rel is None:
            rel = os.path.basename(path) if "/" not in g.rstrip("/") else None
        if rel is not None and path_excluded(rel, (g,)):
            return True
    return False


# ------------------------------------------------------------------ the run


class Run:
    """Everything a run decided before the first file is read (built once, by :meth:`build`)."""

    def __init__(self, args):
        self.args = args
        self.stdin: Optional[str] = None
        self.stdin_excluded = False
        self._noted: set = set()
        self._checked: set = set()  # the configuration files checked (_check_config)
        self._kept: dict = {}  # a configuration's file (None: none) -> its anchored excludes (Run.keep)
        self._kept_in: dict = {}  # a folder as written -> (its files' configuration, its anchored excludes)
        # folders (as written) whose regular files Run.keep keeps, whatever their names (FREE_FOLDERS)
        self.free_folders: Optional[set] = None

    # -------------------------------------------------------------- building

    @classmethod
    def build(cls, args) -> "Run":
        from . import gitrev

        gitrev.reset()  # a git that stalled in an earlier run of this process is asked again
        r = cls(args)
        r._check_arguments()
        r._configure()
        r._choose_target()
        r._choose_files()
        r._settle_settings()
        r._no_record()
        return r

    def _no_record(self) -> None:
        """A run record (replay.py) is a cache entry of a read-only run that proves nothing: none is left without
        the cache, in write mode or by --verify (its verdicts are always made afresh)."""
        s = self.settings
        why = ("the results cache is off" if s.cache_dir is None else "write mode" if s.mode == "write"
               else "--verify" if s.verify else None)
        if why:
            from .inputs import refuse

            refuse(why)

    def _check_arguments(self) -> None:
        args = self.args
        if not args.paths:
            raise UsageError("no paths given (try: cpasync-migrate --diff path/)")
        for opt, path in ([("-o", args.output_file)] if args.output_file else []) + [
                (f"--report {fmt}", path) for fmt, path in args.report or ()]:
            if not os.path.isdir(os.path.dirname(os.path.abspath(path))) or os.path.isdir(path):
                raise UsageError(f"{opt} {path}: not a file in an existing folder")
        if args.statistics and (args.output_file or args.report):
            raise UsageError("--statistics is a terminal report; -o and --report write documents")
        self.stdin = _stdin_name(args)
        if args.statistics and args.format != "text":
            raise UsageError(f"--statistics is a text report; --format {args.format} lists every finding")
        self.mode = "check" if args.check else "diff" if args.diff else "write"

    def _configure(self) -> None:
        from . import config as cfgmod

        args = self.args
        explicit, pairs = cfgmod.split_config_arguments(args.config)
        cfgmod.apply_overrides(args, pairs)
        self.configs = cfgmod.Configs(None if args.isolated else explicit, args.isolated)
        self._keep_once = cfgmod.DIR_CONFIG  # Run.keep's memo, under the same switch
        self._cut_name = cfgmod.DIR_CONFIG and cfgmod.WALK_FACTS and os.altsep is None
        self.free_folders = set() if FREE_FOLDERS and self._cut_name else None
        self.cfg = (self.configs.for_path(self.stdin) if self.stdin is not None  # its folder, made or not
                    else self.configs.for_run(args.paths))
        self.selection = Selection(self.configs, args.select, args.ignore, args.per_file_ignores, os.getcwd())
        self.selection.for_config(self.cfg)  # the run's file is checked even where an option overrides it

    def _choose_target(self) -> None:
        from .cli import choose_target
        from .rules import RulesError, load_rules, version_spec

        args, cfg = self.args, self.cfg
        try:
            rules = self.rules = load_rules()
        except (RulesError, FileNotFoundError) as e:
            raise UsageError(str(e)) from None
        origin = "(command line)" if args.target else f"({cfg['__file__']})" if "target" in cfg else ""
        if "target" in cfg:  # checked even where --target overrides it: a mistake in the file is one
            try:
                choose_target(cfg["target"], rules, "", args.paths)
            except UsageError as e:
                why = str(e).split(": ", 1)[1] if str(e).startswith("--target ") else str(e)
                raise UsageError(f"{cfg['__file__']}: [tool.cpasync-migrate] target = {cfg['target']!r}: "
                                 f"{why}") from None
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
        self.target_info, self.source = target_info, src_gen.name
        from .file_settings import FileSettings

        given = {"target": target_info["generation"]} if args.target else {}
        if args.style:
            given["style"] = args.style
        if args.line_length is not None:
            given["line-length"] = args.line_length
        # a file whose own configuration sets no target: what --target would default to
        default = (target_info["generation"] if args.target or "target" not in cfg
                   else choose_target(None, rules, "", args.paths)["generation"])
        self.file_settings = FileSettings(self.configs, given, default, None)
        self._checked.add(cfg.get("__file__"))  # checked above
        if "target" in cfg:
            self.file_settings.remember(cfg, choose_target(cfg["target"], rules, "", args.paths)["generation"])
        for p in [self.stdin] if self.stdin is not None else args.paths:  # a named file's own configuration
            if p != "-" and not os.path.isdir(p):
                self._check_config(self.configs.for_path(p))
                self._note_run_keys(self.configs.for_path(p))

    def _check_config(self, cfg: dict) -> None:
        """A configuration a file of the run uses, checked once, in the main process, before that file is
        processed: its codes, and the target it names (a release the rules know, reached from the run's
        ``from``).  A mistake is a :class:`ConfigError` naming the file and the key."""
        name = cfg.get("__file__")
        if name in self._checked:
            return
        self._checked.add(name)
        from .cli import choose_target
        from .errors import ConfigError
        from .rules import RulesError

        self.selection.for_config(cfg)
        if "target" not in cfg:
            return
        where = f"{name}: [tool.cpasync-migrate] target = {cfg['target']!r}"
        try:
            gen = choose_target(cfg["target"], self.rules, "", self.args.paths)["generation"]
        except UsageError as e:
            why = str(e).split(": ", 1)[1] if str(e).startswith("--target ") else str(e)
            raise ConfigError(f"{where}: {why}") from None
        if "target" not in self.file_settings.given:  # the file's own target is used: it must follow from --from
            try:
                self.rules.chain(self.source, gen)
            except RulesError as e:
                raise ConfigError(f"{where}: {e} (the run migrates from {self.source})") from None
        self.file_settings.remember(cfg, gen)

    def _choose_files(self) -> None:
        from .files import CPP_SUFFIXES, PYTHON_SUFFIXES

        args, cfg = self.args, self.cfg
        self.anchored = anchored_excludes(args, cfg)
        kept, self.missing = [], []
        # a named file of another kind (a .c file from a hook) is skipped, with a note
        for p in ([] if self.stdin is not None else args.paths):
            why = _unreachable(p)
            if why:  # an error of its own, never counted as scanned
                self.missing.append((p, why))
                continue
            if not p.endswith(PYTHON_SUFFIXES + CPP_SUFFIXES) and os.path.isfile(p):
                print(f"cpasync-migrate: note: skipped {p}: not a Python ({' '.join(PYTHON_SUFFIXES)}) or C++ "
                      f"({' '.join(CPP_SUFFIXES)}) file", file=sys.stderr)
                continue
            kept.append(p)
        if self.stdin is None:
            args.paths = _once(kept, args.verbose)
        self.force_exclude = args.force_exclude or bool(cfg.get("force-exclude", False))
        if self.stdin is not None:
            self.stdin_excluded = self.force_exclude and self._excluded_named(self.stdin)
        elif self.force_exclude:
            kept = []
            for p in args.paths:
                if not os.path.isdir(p) and self._excluded_named(p):
                    if args.verbose:
                        print(f"skipped {p}: excluded (--force-exclude)", file=sys.stderr)
                    continue
                kept.append(p)
            args.paths = kept  # none left: nothing to do, exit 0 (as a pre-commit hook expects)

    def _excluded_named(self, path: str) -> bool:
        """Whether the excludes of a named file's own configuration (and the command line's) exclude it."""
        anchored = anchored_excludes(self.args, self.configs.for_path(path))
        return bool(anchored) and named_file_excluded(path, anchored)

    def _note_run_keys(self, cfg: dict) -> None:
        """A configuration below the run's that sets a key of the whole run (the target, the jobs...) to
        another value is said once: that key is the run's, not the file's."""
        name = cfg.get("__file__")
        if name is None or cfg is self.cfg or name in self._noted:
            return
        self._noted.add(name)
        from .options import by_key

        other = sorted(k for k, o in by_key().items() if not o.per_file and k in cfg and cfg[k] != self.cfg.get(k))
        if other:
            print(f"cpasync-migrate: note: {name}: {', '.join(other)} {'applies' if len(other) == 1 else 'apply'} "
                  "to the whole run, not per file: "
                  f"this run's come from {self.cfg.get('__file__', 'the defaults')} (run from that folder "
                  "to use them)", file=sys.stderr)

    def excludes_for(self, arg: str) -> tuple:
        """The globs a walk from folder argument ``arg`` prunes with: its own configuration's."""
        return globs_for_folder(arg, anchored_excludes(self.args, self.configs.for_path(arg, folder=True)))

    def keep(self, path: str, regular: bool = False) -> Optional[str]:
        """Why a file a walk found is out of scope under its own configuration (None: in scope).
        ``regular``: the walk saw a regular file, not a link (``Configs.for_path``)."""
        if self._keep_once:  # once per folder and per configuration file: the same checks, notes and globs
            # a link's configuration is its target's; a walked file's folder as written is its path less its name
            folder = (path.rpartition(os.sep)[0] if self._cut_name else os.path.dirname(path)) if regular else None
            known = self._kept_in.get(folder) if regular else None
            if known is None:
                cfg = self.configs.for_path(path, regular=regular)
                name = cfg.get("__file__")
                anchored = self._kept.get(name)
                if anchored is None:
                    self._check_config(cfg)
                    self._note_run_keys(cfg)
                    anchored = self._kept[name] = anchored_excludes(self.args, cfg)
                known = (cfg, anchored)
                if regular:
                    self._kept_in[folder] = known
                    if not anchored and self.free_folders is not None:
                        self.free_folders.add(folder)  # its other regular files: kept without asking
            cfg, anchored = known
            if not anchored:
                return None
        else:
            cfg = self.configs.for_path(path, regular=regular)
            self._check_config(cfg)
            self._note_run_keys(cfg)
            anchored = anchored_excludes(self.args, cfg)
        if anchored and named_file_excluded(path, anchored):
            return f"excluded ({cfg.get('__file__', 'the command line')})"
        return None

    def _settle_settings(self) -> None:
        from . import config as cfgmod
        from .engine import RunSettings

        args, cfg, mode = self.args, self.cfg, self.mode
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
        self.jobs = jobs
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
        if args.line_length is not None and not 1 <= args.line_length <= 320:
            raise UsageError(f"--line-length {args.line_length}: expected a whole number from 1 to 320")
        line_length = args.line_length if args.line_length is not None else cfg.get("line-length")
        binds = {}
        for b in args.bind:
            if "=" not in b:
                raise UsageError(f"--bind {b!r}: expected NAME=VALUE")
            k, v = b.split("=", 1)
            binds[k.strip()] = v.strip()
        device = args.device
        if args.verify and device == "auto":
            from .cli import _gpu_available

            device = "gpu" if _gpu_available() else "cpu"
        cache_dir = confine = None
        if (args.cache if args.cache is not None else cfg.get("cache", True)):
            from . import cache

            cache_dir = args.cache_dir or cfg.get("cache-dir") or cache.default_dir()
            if not args.cache_dir and cfg.get("cache-dir"):
                confine = cfg["__cache_root__"]  # the configuration's folder: inside its project root, no link
        self.unsafe = args.unsafe_fixes if args.unsafe_fixes is not None else bool(cfg.get("unsafe-fixes", False))
        self.accept_partial = (args.accept_partial_sets if args.accept_partial_sets is not None
                               else bool(cfg.get("accept-partial-sets", False)))
        settings = RunSettings(
            mode=mode, unsafe_fixes=self.unsafe, target=self.target_info["generation"], source=self.source,
            style=args.style or cfg.get("style") or "tvm_access_ptr",
            migrate_tvm=args.migrate_tvm if args.migrate_tvm is not None else bool(cfg.get("migrate-tvm", False)),
            verify=args.verify, device=device, require_proof=args.require_proof,
            binds=binds, emit_cuda=args.emit_cuda, cache_dir=cache_dir,
            keep_texts=mode != "check" or bool(args.emit_bundle), defer_coupled=mode == "write",
            max_file_size=max_file_size, file_cpu_limit=_file_cpu_limit(args),
            allow_read_only=(args.allow_read_only if args.allow_read_only is not None
                             else bool(cfg.get("allow-read-only", False))),
            line_length=line_length, selection=self.selection, per_file=self.file_settings,
        )
        if cache_dir:
            from . import cache

            if not cache.prepare(settings, confine):
                if args.verbose:
                    print(f"cpasync-migrate: note: results cache off: no key in {cache.key_dir()} could be read "
                          "or made", file=sys.stderr)
                settings.cache_dir = None
        self.settings = settings

    # -------------------------------------------------------------- running

    def execute(self) -> int:
        if self.args.show_settings:
            sys.stdout.write(self.settings_text(self.stdin or self.args.paths[0] if self.stdin or self.args.paths
                                                else "."))
            return 0
        with _colour(self.args.color):
            if self.stdin is not None:
                return self._run_stdin()
            return self._run_files()

    def settings_text(self, path: str) -> str:
        """--show-settings: the settings resolved for ``path`` (its configuration file, then every key of
        the table with the value in force there), as ``ruff check --show-settings`` prints them."""
        import json

        from .engine import line_length_of
        from .options import OPTIONS

        args, s = self.args, self.settings
        cfg = self.cfg if os.path.isdir(path) and path in args.paths else self.configs.for_path(path)
        chosen, dropped, pfi = self.selection.for_config(cfg)
        own = self.file_settings.values(path) if cfg is not self.cfg else {
            "target": s.target, "style": s.style, "line_length": s.line_length}
        here = os.getcwd()
        values = {
            "mode": self.mode, "target": own["target"], "from": s.source, "style": own["style"],
            "migrate-tvm": s.migrate_tvm,
            "line-length": own["line_length"] if own["line_length"] is not None else line_length_of(path),
            "unsafe-fixes": s.unsafe_fixes, "accept-partial-sets": self.accept_partial,
            "allow-read-only": s.allow_read_only, "force-exclude": self.force_exclude,
            "max-file-size": s.max_file_size, "jobs": self.jobs, "cache": s.cache_dir is not None,
            "cache-dir": s.cache_dir,
            "exclude": [g for g, _ in anchored_excludes(args, cfg)],
            "select": list(self.selection.select if self.selection.select is not None else chosen or ()),
            "ignore": list(self.selection.ignore if self.selection.ignore is not None else dropped or ()),
            "per-file-ignores": {os.path.relpath(os.path.join(a, g), here).replace(os.sep, "/"): list(c)
                                 for g, c, a in pfi + self.selection.extra},
        }
        keys = [o.key for o in OPTIONS if o.key and o.key != "extend-exclude"]
        lines = [f"Resolved settings for: {json.dumps(path)}",
                 f"Settings path: {json.dumps(cfg['__file__']) if '__file__' in cfg else 'none'}", ""]
        for k in ["mode"] + keys:
            lines.append(f"{k} = {json.dumps(values[k])}")
        return "\n".join(lines) + "\n"

    def _run_all(self, s, verbose: bool):
        from .runner import run_files

        args = self.args
        return run_files(args.paths, s, excludes=self.excludes_for, jobs=self.jobs,
                         respect_gitignore=not args.no_gitignore, since=args.since, verbose=verbose,
                         quiet=args.quiet, show_progress=True, follow_links_outside=args.follow_links_outside,
                         keep=self.keep, folders=self.configs.walked if self._cut_name else None,
                         free=self.free_folders
                         ) if args.paths else ([], 0)

    def _probe(self, run_once) -> None:
        """Where the run selects codes before anything is written, a first pass (check mode) finds the
        change sets a selection would split, and refuses them (--unsafe-fixes) before any file is written."""
        if self.mode == "check" or not self.selection.active_in(self.cfg):
            return
        probe = dataclasses.replace(self.settings, mode="check", keep_texts=False, defer_coupled=False,
                                          verify=False, emit_cuda=None)
        _refuse_split_sets(run_once(probe), self.selection, self.unsafe)

    def _run_files(self) -> int:
        args, settings = self.args, self.settings
        self._probe(lambda s: self._run_all(s, False)[0])
        outcomes, scanned = self._run_all(settings, args.verbose)
        suspect(o.path for o in outcomes if not o.cached)  # analysed afresh: likely just edited (replay.py)
        if self.missing:
            from .engine import error_outcome, language_of

            outcomes = sorted(outcomes + [error_outcome(p, language_of(p) or "python", why)
                                          for p, why in self.missing], key=lambda o: o.path)
        _refuse_split_sets(outcomes, self.selection, self.unsafe)
        _deselect(outcomes, self.selection)
        sets: list = []
        if any(f.role for o in outcomes for f in o.findings):
            from .settle import settle

            outcomes, sets = settle(outcomes, settings, args.paths, self.accept_partial, self.rules)
            _deselect(outcomes, self.selection)  # a file processed again for its set has its deselected sites held
        self._note_targets(outcomes)
        bundle_error = None
        if args.emit_bundle:
            from .verify_bridge import emit_bundle

            try:
                emit_bundle(outcomes, settings, args.emit_bundle)
            except OSError as e:  # a link planted in the folder, no permission: said, and a file error
                bundle_error = (f"cpasync-migrate: error: --emit-bundle {args.emit_bundle}: {e}; the bundle is "
                                "incomplete")
        code = self._exit(self._emit(outcomes, scanned, sets), outcomes)
        if bundle_error:
            print(bundle_error, file=sys.stderr)
            return max(code, 2)
        return code

    def _note_targets(self, outcomes) -> None:
        """The report's target gains ``per_file``: the other targets files were migrated to, where from."""
        from .paths import rel

        run = self.target_info["generation"]
        other: dict = {}
        for o in outcomes:
            if o.target and o.target != run:
                key = (o.target, rel(self.file_settings.origin(o.path)))
                other[key] = other.get(key, 0) + 1
        if other:
            self.target_info = dict(self.target_info, per_file=[
                {"generation": g, "from": where, "files": n} for (g, where), n in sorted(other.items())])

    def _run_stdin(self) -> int:
        """One text from stdin, reported under its name: --check and --diff as for a file of that name;
        write mode prints the migrated text (the input as it is, where nothing is migrated) on stdout
        and its report on stderr, as formatters do.  Nothing is written to disk."""
        from . import engine, files
        from .findings import Status

        name, args, settings, mode = self.stdin, self.args, self.settings, self.mode
        raw = sys.stdin.buffer.read()
        if self.stdin_excluded:  # --force-exclude and an excluded name: the text goes through untouched
            if args.verbose:
                print(f"skipped {name}: excluded (--force-exclude)", file=sys.stderr)
            if mode == "write":
                sys.stdout.buffer.write(raw)
            return 0
        files.give(name, raw)
        run_settings = dataclasses.replace(settings, mode="diff", keep_texts=True, defer_coupled=False) \
            if mode == "write" else settings

        def once(s):
            o = engine.process_file(name, s, explicit=True)
            return [o] if o is not None else []

        self._probe(once)
        outcomes = once(run_settings)
        _refuse_split_sets(outcomes, self.selection, self.unsafe)
        _deselect(outcomes, self.selection)
        sets: list = []
        if any(f.role for x in outcomes for f in x.findings):
            from .settle import settle

            outcomes, sets = settle(outcomes, run_settings, [name], self.accept_partial, self.rules)
            _deselect(outcomes, self.selection)
        if mode != "write":
            return self._exit(self._emit(outcomes, 1, sets), outcomes)
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
        return self._exit(self._emit(outcomes, 1, sets, out=sys.stderr), outcomes)

    def _emit(self, outcomes, scanned, sets, **kw) -> int:
        from .cli import _emit_kept

        return _emit_kept(outcomes, scanned, self.mode, self.args, self.target_info, self.rules, sets, **kw)

    def _exit(self, code: int, outcomes) -> int:
        """--exit-zero: sites that remain do not fail the run (errors still do); --exit-non-zero-on-fix:
        a file written fails it (--exit-zero wins, as in ruff)."""
        if self.args.exit_zero:
            return 0 if code == 1 else code
        if code == 0 and self.args.exit_non_zero_on_fix and self.mode == "write" and any(o.written for o in outcomes):
            return 1
        return code


def _once(paths: list, verbose: bool) -> list:
    """The paths, each file or folder once: ``a.py``, ``./a.py`` and a link to it are one file, processed
    under its first name that is not a link (else its first name), where the first of them stood."""
    groups: dict = {}
    for p in paths:
        groups.setdefault(_identity(p), []).append(p)
    out = []
    for names in groups.values():
        keep = next((p for p in names if not os.path.islink(p)), names[0])
        out.append((paths.index(names[0]), keep))
        for other in names:
            if other != keep and verbose:
                print(f"skipped {other}: the same file as {keep}; processed once, under that name", file=sys.stderr)
    return [p for _, p in sorted(out)]


def _identity(path: str):
    """What makes two spellings of a named path one file: its device and inode, else its normalised path."""
    try:
        st = os.stat(path)
        return (st.st_dev, st.st_ino)
    except OSError:
        return os.path.normcase(os.path.abspath(path))


class _colour:
    """--color always / never: the environment the report's colour choice reads (NO_COLOR, FORCE_COLOR),
    for the run only."""

    def __init__(self, choice: str):
        self.choice = choice
        self.saved: dict = {}

    def __enter__(self):
        if self.choice in ("always", "never"):
            self.saved = {k: os.environ.get(k) for k in ("NO_COLOR", "FORCE_COLOR")}
            os.environ.pop("NO_COLOR" if self.choice == "always" else "FORCE_COLOR", None)
            os.environ["FORCE_COLOR" if self.choice == "always" else "NO_COLOR"] = "1"
        return self

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        return False


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


def _refuse_split_sets(outcomes, selected, unsafe: bool) -> None:
    """With --unsafe-fixes a change set is applied without its suppressed members (sets.decide), so a
    deselected member would be left in the legacy layout while the rest of its program moves on:
    refused before anything is written."""
    if not unsafe:
        return
    from .sets import group

    split = sorted({f"{m.finding.code} ({m.role}, {m.path}:{m.finding.line})" for cs in group(outcomes)
                    for m in cs.members if m.finding.legacy_site and not selected(m.finding.code, m.path)})
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
            if f.status is not Status.UNPARSABLE and not selected(f.code, o.path):
                f.status = Status.SUPPRESSED


def _file_cpu_limit(args) -> float:
    """--file-cpu-limit's seconds (budget.py; the command line only sets it)."""
    from .budget import DEFAULT_SECONDS
    from .options import SECONDS

    seconds = DEFAULT_SECONDS if args.file_cpu_limit is None else args.file_cpu_limit
    if not SECONDS.check(seconds):
        raise UsageError(f"--file-cpu-limit {args.file_cpu_limit}: expected {SECONDS.words}")
    return seconds
