"""Every pair in tests/fixtures/python/ (NAME.in.py -> NAME.out.py) gets a verdict.

The expected verdict is "equivalent" for every kernel unless the case's toml
says ``verdict = "..."`` (every kernel) or names a kernel in ``[verdicts]``.  The target and source generations come from the
case's ``args`` (``--target``, ``--from``, ``--bind``).
"""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from cpasync_migrate.rules import load_rules, parse_version
from cpasync_migrate.verify import VERDICTS, verify_source

PY = Path(__file__).parent / "fixtures" / "python"
RULES = load_rules()
CASES = sorted(p.name[: -len(".in.py")] for p in PY.glob("*.in.py") if (PY / (p.name[: -len(".in.py")] + ".out.py")).exists())


def generation_of(text: str):
    names = [g.name for g in RULES.generations]
    t = text.split("==", 1)[-1].strip()
    if t in names:
        return t
    if t == "latest":
        return names[-1]
    parse_version(t)
    return RULES.generation_for_version(t).name


def options(args: list) -> dict:
    out = {"target": "0.1.8", "source": None, "binds": {}}
    it = iter(range(len(args)))
    for i in it:
        a = args[i]
        key, _, val = a.partition("=")
        if key in ("--target", "--from", "--bind"):
            if not val:
                val = args[i + 1]
                next(it, None)
            if key == "--target":
                out["target"] = generation_of(val)
            elif key == "--from":
                out["source"] = generation_of(val)
            else:
                n, _, v = val.partition("=")
                out["binds"][n] = v
    return out


def read(p: Path) -> str:
    return p.read_bytes().decode("utf-8-sig")


@pytest.mark.skipif(not CASES, reason="no Python fixture pairs yet")
@pytest.mark.parametrize("name", CASES)
def test_python_fixture_pair_verdict(name):
    cfg_path = PY / f"{name}.toml"
    cfg = tomllib.loads(cfg_path.read_text()) if cfg_path.exists() else {}
    opt = options(cfg.get("args", []))
    expected = cfg.get("verdict", "equivalent")
    assert expected in VERDICTS
    verdicts = verify_source(read(PY / f"{name}.in.py"), read(PY / f"{name}.out.py"), f"{name}.in.py", rules=RULES,
                             target=opt["target"], source=opt["source"], binds=opt["binds"] or None)
    per_kernel = cfg.get("verdicts", {})
    assert set(per_kernel) <= {v.kernel for v in verdicts}, "a [verdicts] entry names no kernel of the file"
    for v in verdicts:
        assert v.verdict == per_kernel.get(v.kernel, expected), v.to_dict()
