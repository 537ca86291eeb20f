"""The adversarial suite (tests/fixtures/verify/adversarial/): hand-written wrong migrations must never be
proven, and differently written correct ones must be proven (all but the few named below)."""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from cpasync_migrate.rules import load_rules
from cpasync_migrate.verify import verify_source

DIR = Path(__file__).parent / "fixtures" / "verify" / "adversarial"
RULES = load_rules()

# Correct pairs the verifier is allowed not to prove, with the reason (at most 3).
NOT_PROVEN = {
}


def _edit(text: str, edits, where: str) -> str:
    for a, b in edits:
        a, b = a.replace("\\n", "\n"), b.replace("\\n", "\n")  # edits spell newlines as \n
        assert text.count(a) >= 1, f"{where}: edit {a!r} does not apply"
        text = text.replace(a, b)
    return text


def load_pairs() -> dict:
    bases = tomllib.loads((DIR / "bases.toml").read_text())["base"]
    out = {}
    for f in sorted(DIR.glob("*.toml")):
        if f.name == "bases.toml":
            continue
        data = tomllib.loads(f.read_text())
        for p in data.get("pair", []):
            name = f"{f.stem}:{p['name']}"
            assert name not in out, name
            base = bases.get(p.get("base", ""), {})
            old = p.get("old", base.get("old"))
            new = p.get("new", base.get("new"))
            old = _edit(old, p.get("old_edits", []), name)
            new = _edit(new, p.get("edits", []), name)
            if p.get("edits_both"):
                old = _edit(old, p["edits_both"], name)
                new = _edit(new, p["edits_both"], name)
            assert p["expect"] in ("wrong", "equivalent"), name
            if p["expect"] == "wrong":
                assert p.get("why"), f"{name}: a wrong pair says why it is wrong"
            out[name] = {"old": old, "new": new, "target": p.get("target", "0.1.8"), "source": p.get("source"),
                         "expect": p["expect"], "why": p.get("why", ""), "binds": p.get("binds")}
    return out


PAIRS = load_pairs()
WRONG = sorted(n for n, p in PAIRS.items() if p["expect"] == "wrong")
RIGHT = sorted(n for n, p in PAIRS.items() if p["expect"] == "equivalent")


def verdicts(name):
    p = PAIRS[name]
    return verify_source(p["old"], p["new"], name + ".py", rules=RULES, target=p["target"], source=p["source"],
                         binds=p["binds"], seeds=2)


def test_suite_size():
    assert len(WRONG) >= 60
    assert len(RIGHT) >= 30
    assert len(NOT_PROVEN) <= 3
    assert set(NOT_PROVEN) <= set(RIGHT)


@pytest.mark.parametrize("name", WRONG)
def test_wrong_pair_is_never_proven(name):
    vs = verdicts(name)
    assert vs, name
    assert any(v.verdict in ("mismatch", "inconclusive") for v in vs), (PAIRS[name]["why"], [v.to_dict() for v in vs])


@pytest.mark.parametrize("name", RIGHT)
def test_equivalent_pair_is_proven(name):
    vs = verdicts(name)
    assert vs, name
    proven = all(v.verdict == "equivalent" for v in vs)
    if name in NOT_PROVEN:
        assert not proven, f"{name} is proven now: drop it from NOT_PROVEN"
    else:
        assert proven, [v.to_dict() for v in vs]


def test_a_loop_copy_into_merged_dynamic_memory_is_not_proven_under_0_1_8():
    """fuzz_wide.toml's fz100426_loop_merged_sync: real TileLang 0.1.7.post1 lowers the old text, 0.1.8 fails on
    the new one (``tvm.error.InternalError: Cannot match type handle vs int32`` in
    ``TileLangThreadSync("shared.dyn")``; the loop copy's offset has a shift), so the verifier must not prove
    it: it says which construct it does not model.  The same loop copy beside a copy into a static tile (fz100426_loop_static_other) is lowered by
    0.1.8 with the same copies as 0.1.7.post1's, and stays proven."""
    vs = verdicts("fuzz_wide:fz100426_loop_merged_sync")
    assert [v.verdict for v in vs] == ["inconclusive"], [v.to_dict() for v in vs]
    assert "thread-sync pass" in vs[0].reason and "(S0, " in vs[0].reason and "shift" in vs[0].reason, vs[0].reason
    assert [v.verdict for v in verdicts("fuzz_wide:fz100426_loop_static_other")] == ["equivalent"]
