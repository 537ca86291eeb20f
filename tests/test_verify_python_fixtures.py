"""Every pair in tests/fixtures/python/ (NAME.in.py -> NAME.out.py) gets a verdict.

The expected verdict is "equivalent" for every kernel unless the case's toml
says ``verdict = "..."`` (every kernel) or names a kernel in ``[verdicts]``.  The target and source generations come from the
case's ``args`` (``--target``, ``--from``, ``--bind``).
"""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from cpasync_migrate.rules import load_rules
from cpasync_migrate.verify import VERDICTS, verify_source
from fixture_args import fixture_options

PY = Path(__file__).parent / "fixtures" / "python"
RULES = load_rules()
CASES = sorted(p.name[: -len(".in.py")] for p in PY.glob("*.in.py") if (PY / (p.name[: -len(".in.py")] + ".out.py")).exists())


def read(p: Path) -> str:
    return p.read_bytes().decode("utf-8-sig")


@pytest.mark.skipif(not CASES, reason="no Python fixture pairs yet")
@pytest.mark.parametrize("name", CASES)
def test_python_fixture_pair_verdict(name):
    cfg_path = PY / f"{name}.toml"
    cfg = tomllib.loads(cfg_path.read_text()) if cfg_path.exists() else {}
    opt = fixture_options(RULES, cfg.get("args", []))
    expected = cfg.get("verdict", "equivalent")
    assert expected in VERDICTS
    verdicts = verify_source(read(PY / f"{name}.in.py"), read(PY / f"{name}.out.py"), f"{name}.in.py", rules=RULES,
                             target=opt["target"], source=opt["source"], binds=opt["binds"] or None)
    per_kernel = cfg.get("verdicts", {})
    assert set(per_kernel) <= {v.kernel for v in verdicts}, "a [verdicts] entry names no kernel of the file"
    for v in verdicts:
        assert v.verdict == per_kernel.get(v.kernel, expected), v.to_dict()
