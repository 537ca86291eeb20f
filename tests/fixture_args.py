"""What a fixture's ``args`` (its toml) ask of the verifier: the target and source generations and the
``--bind`` values, read the way the command line reads them.  Shared by the CPU check of every
fixture pair (test_verify_python_fixtures.py) and the GPU evidence builder (gpu_evidence.py)."""
from __future__ import annotations

from cpasync_migrate.rules import parse_version


def generation_of(rules, text: str) -> str:
    """The generation a ``--target``/``--from`` value names: a generation, ``latest``, or a version."""
    names = [g.name for g in rules.generations]
    t = text.split("==", 1)[-1].strip()
    if t in names:
        return t
    if t == "latest":
        return names[-1]
    parse_version(t)
    return rules.generation_for_version(t).name


def fixture_options(rules, args: list) -> dict:
    """{"target": name, "source": name or None, "binds": {name: value}} from a fixture's ``args``."""
    out = {"target": "0.1.8", "source": None, "binds": {}}
    i = 0
    while i < len(args):
        key, _, val = args[i].partition("=")
        if key in ("--target", "--from", "--bind"):
            if not val and i + 1 < len(args):
                val = args[i + 1]
                i += 1
            if key == "--target":
                out["target"] = generation_of(rules, val)
            elif key == "--from":
                out["source"] = generation_of(rules, val)
            else:
                n, _, v = val.partition("=")
                out["binds"][n] = v
        i += 1
    return out
