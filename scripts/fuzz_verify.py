#!/usr/bin/env python3
"""Differential fuzzing of the verifier against real TileLang (docs/realtl.md, "Differential fuzzing").

    python scripts/fuzz_verify.py --seed S --count N [--mutants M] [--work DIR]
                                  [--pairs-json FILE] [--found-toml FILE] [--wide]
    python scripts/fuzz_verify.py --reverify FILE [FILE ...] [--pairs-json FILE] [--found-toml FILE]

``--reverify`` reads the pairs an earlier run saved (``--pairs-json``, plain or gzip) and asks the
verifier of this tree again, keeping their real-lowering truth: the before/after counts of a
verifier change without lowering anything again.

Generates N legacy kernels from seeds S, S+1, ... (tests/realtl/fuzz_gen.py), lowers them with
TileLang 0.1.7.post1, migrates each with the tool (--target 0.1.8 or 0.1.9, as the case draws)
and writes the generator's own candidates (its migration and M mutants of it), lowers every
candidate with 0.1.8 or the newest release, compares the cp.async copies over the launch grid in
int32 (tests/realtl/fuzz_truth.py), and asks `cpasync_migrate.verify.verify_source` about every
pair.  Prints the counts; every false proof (the verifier says `equivalent` where real lowering
differs) is listed.  Exit status 1 when there is a false proof, 2 when the environments of
scripts/realtl_setup.sh are missing.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _load(name: str):
    mod = sys.modules.get(name)
    if mod is None:
        spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / "realtl" / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return mod


fuzz_gen = _load("fuzz_gen")
fuzz_truth = _load("fuzz_truth")


def toml_string(text: str) -> str:
    """A TOML multi-line literal string holding ``text`` (no escapes are read inside one)."""
    if "'''" in text:
        raise ValueError("text holds ''', which a literal string cannot")
    return "'''\n" + text + "'''"


def found_toml(pairs: list, seed: int, count: int) -> str:
    """The false proofs in the adversarial suite's format (tests/test_verify_adversarial.py)."""
    out = ["# Pairs found by scripts/fuzz_verify.py: the verifier said `equivalent`, real TileLang lowering",
           "# (0.1.7.post1 for the old text; 0.1.8 or 0.1.15 for the new) gave different cp.async copies.",
           f"# Run: --seed {seed} --count {count}.  `why` is what real lowering said.", ""]
    for p in pairs:
        why = f"real lowering differs ({fuzz_truth.ENV_NAMES['legacy']} vs " \
              f"{fuzz_truth.ENV_NAMES[p.target]}): {p.truth_detail}"
        out += ["[[pair]]", f'name = "{p.case}_{p.kind}_{p.target.replace(".", "")}"', 'expect = "wrong"',
                f'target = "{p.target}"', f"why = {json.dumps(why[:900])}",
                f"old = {toml_string(p.old)}", f"new = {toml_string(p.new)}", ""]
    return "\n".join(out)


def write_found(path: Path, pairs: list, seed: int, count: int) -> None:
    """Add the pairs to ``path`` (those whose name it does not hold yet)."""
    import tomllib
    have = set()
    text = ""
    if path.is_file():
        text = path.read_text()
        have = {p["name"] for p in tomllib.loads(text).get("pair", [])}
    new = [p for p in pairs if f"{p.case}_{p.kind}_{p.target.replace('.', '')}" not in have]
    if not new:
        return
    block = found_toml(new, seed, count)
    if text:
        block = "\n".join(line for line in block.splitlines() if not line.startswith("# Pairs found")
                          and not line.startswith("# (0.1.7")) + "\n"
    path.write_text(text + ("\n" if text else "") + block)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--count", type=int, default=100, help="legacy kernels to generate")
    ap.add_argument("--mutants", type=int, default=2, help="mutants per kernel")
    ap.add_argument("--wide", action="store_true",
                    help="the wide families (positional scopes, elem_offset, int64, binding time, loops, predicates)")
    ap.add_argument("--work", type=Path, default=None, help="keep the files there (default: a temporary folder)")
    ap.add_argument("--pairs-json", type=Path, default=None, help="write every pair's outcome there (JSON lines)")
    ap.add_argument("--found-toml", type=Path, default=None, help="write the false proofs there (adversarial format)")
    ap.add_argument("--reverify", type=Path, nargs="+", default=None,
                    help="judge the pairs saved by earlier runs again (their truth kept; nothing is lowered)")
    ap.add_argument("--realtl-dir", type=Path,
                    default=Path(os.environ.get("CPASYNC_REALTL_DIR", "~/.cache/cpasync-migrate/realtl")).expanduser())
    args = ap.parse_args(argv)

    if args.reverify:
        result = reverify(args.reverify)
        return report(args, result, f"re-judged {', '.join(map(str, args.reverify))}")
    missing = [n for n in fuzz_truth.ENV_NAMES.values() if not (args.realtl_dir / n / ".ready").is_file()]
    if missing:
        print(f"missing environments under {args.realtl_dir}: {', '.join(missing)} (run scripts/realtl_setup.sh)",
              file=sys.stderr)
        return 2
    cases = fuzz_gen.generate(args.seed, args.count, args.mutants, wide=args.wide)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="cpasync-fuzz-") as tmp:
        work = args.work or Path(tmp)
        result = fuzz_truth.run(cases, work, args.realtl_dir, log=log)
    return report(args, result, f"seed {args.seed}, count {args.count}, mutants per kernel {args.mutants}"
                                f"{', wide' if args.wide else ''}")


def reverify(paths: list[Path]) -> dict:
    """The pairs saved by earlier runs, judged by this tree's verifier (their truth as saved)."""
    import gzip
    from cpasync_migrate.rules import load_rules
    rules = load_rules()
    pairs = []
    for path in paths:
        opener = gzip.open if str(path).endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                d = json.loads(line)
                p = fuzz_truth.Pair(d["case"], d["kind"], d["target"], d["old"], d["new"], truth=d["truth"],
                                    truth_detail=d["truth_detail"])
                p.verdict, p.reasons = fuzz_truth.verdict_of(p, rules)
                pairs.append(p)
    cases = {p.case for p in pairs}
    return {"generated": len(cases), "lowered": len(cases), "discarded": {}, "pairs": pairs,
            "tool_unchanged": len({p.case for p in pairs} - {p.case for p in pairs if p.kind == "tool"})}


def report(args, result: dict, title: str) -> int:
    counts = fuzz_truth.tally(result)
    print(title)
    for key, value in counts.items():
        if isinstance(value, dict):
            print(f"{key}:")
            for k, v in value.items():
                print(f"  {v:5d}  {k}")
        else:
            print(f"{key}: {value}")
    pairs = result["pairs"]
    by_kind: dict[str, dict[str, int]] = {}
    for p in pairs:
        row = by_kind.setdefault(p.kind, {})
        key = f"{p.truth}/{p.verdict}"
        row[key] = row.get(key, 0) + 1
    print("by candidate (real lowering / verifier):")
    for kind in sorted(by_kind):
        print(f"  {kind:18s} " + ", ".join(f"{k} {v}" for k, v in sorted(by_kind[kind].items())))
    false = [p for p in pairs if p.false_proof]
    if false:
        print("false proofs:")
        for p in false:
            print(f"  {p.case} {p.kind} --target {p.target}: {p.truth_detail[:240]}")
    if args.pairs_json:
        with args.pairs_json.open("w") as fh:
            for p in pairs:
                fh.write(json.dumps({"case": p.case, "kind": p.kind, "target": p.target, "truth": p.truth,
                                     "truth_detail": p.truth_detail, "verdict": p.verdict,
                                     "reasons": list(p.reasons), "old": p.old, "new": p.new}) + "\n")
    if args.found_toml and false:
        write_found(args.found_toml, false, args.seed, args.count)
    return 1 if false else 0


if __name__ == "__main__":
    sys.exit(main())
