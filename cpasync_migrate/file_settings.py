"""The settings a file's own configuration decides for it: ``target``, ``style`` and ``line-length``.

Each file takes them from its nearest ``pyproject.toml`` with a ``[tool.cpasync-migrate]`` table
(``config.Configs``), as ruff resolves its settings: the nearest table is the file's whole
configuration, the tables above it are not merged in.  A key that table leaves out has its default
(the target: the run's default, the one ``--target`` would choose if no file set it; the line length:
ruff's or black's, ``line_length.py``).  A value on the command line (``--target``, ``--style``,
``--line-length``, ``--config KEY=VALUE``) wins over every file's configuration.

The run's main process checks each configuration as it meets it (``run.Run``); a worker process that
meets a configuration first only reads the generation it names.  Plain data, so a worker can be given it.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

STYLE_DEFAULT = "tvm_access_ptr"


class FileSettings:
    """``settle(path, settings)``: the run's settings with the file's own target, style and line length."""

    def __init__(self, configs, given: dict, default_target: str, rules_dir: Optional[str] = None):
        self.configs = configs
        self.given = dict(given)  # key -> the command line's value (it wins over every file's configuration)
        self.default_target = default_target  # a file whose configuration does not set target
        self.rules_dir = rules_dir
        self._targets: dict = {}  # configuration file -> the generation its target names

    def values(self, path: str) -> dict:
        """RunSettings field -> the value in force for the file at ``path``."""
        cfg = self.configs.for_path(path)
        given = self.given
        return {
            "target": given["target"] if "target" in given else self.generation(cfg),
            "style": given["style"] if "style" in given else cfg.get("style") or STYLE_DEFAULT,
            # None: the file's ruff / black configuration says (engine.line_length_of)
            "line_length": given["line-length"] if "line-length" in given else cfg.get("line-length"),
        }

    def settle(self, path: str, settings):
        values = self.values(path)
        if all(getattr(settings, k) == v for k, v in values.items()):
            return settings
        return dataclasses.replace(settings, **values)

    def generation(self, cfg: dict) -> str:
        """The generation a configuration's ``target`` names (the default where it sets none)."""
        if "target" not in cfg:
            return self.default_target
        name = cfg.get("__file__", "")
        gen = self._targets.get(name)
        if gen is None:
            gen = self._targets[name] = generation_named(cfg["target"], self.rules_dir)
        return gen

    def remember(self, cfg: dict, generation: str) -> None:
        """The main process checked ``cfg``'s target: the generation it names."""
        self._targets[cfg.get("__file__", "")] = generation

    def origin(self, path: str) -> str:
        """Where the file's target comes from, in words (for the report)."""
        if "target" in self.given:
            return "the command line"
        cfg = self.configs.for_path(path)
        return cfg["__file__"] if "target" in cfg else "the default"


def generation_named(spec: str, rules_dir: Optional[str] = None) -> str:
    """The generation of a target already checked (``cli.choose_target``): a version, a generation or latest."""
    from .rules import load_rules, version_spec

    rules = load_rules(rules_dir)
    s = version_spec(spec)
    return rules.generations[-1].name if s == "latest" else rules.resolve(s).name
