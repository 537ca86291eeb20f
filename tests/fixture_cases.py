"""Fixture cases: NAME.in.<ext>, NAME.out.<ext> (hand-written expected output) and NAME.toml."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from conftest import FIXTURES


@dataclass
class Case:
    name: str
    lang: str
    input: Path
    output: Path
    meta: dict

    @property
    def ext(self) -> str:
        return self.input.name.split(".in", 1)[1]

    def __str__(self):
        return f"{self.lang}/{self.name}"


def cases(lang: str) -> list[Case]:
    d = FIXTURES / lang
    out = []
    if not d.is_dir():
        return out
    for meta_path in sorted(d.glob("*.toml")):
        name = meta_path.stem
        ins = [p for p in d.glob(f"{name}.in.*")]
        if len(ins) != 1:
            # A fixture that silently becomes no test is worse than a failing one.
            raise ValueError(f"{meta_path}: expected exactly one {name}.in.* beside it, found {len(ins)}")
        inp = ins[0]
        ext = inp.name[len(name) + len(".in"):]
        outp = d / f"{name}.out{ext}"
        meta = tomllib.loads(meta_path.read_text(encoding="utf-8"))
        out.append(Case(name, lang, inp, outp if outp.exists() else inp, meta))
    named = {c.name for c in out}
    for inp in sorted(d.glob("*.in.*")):
        if inp.name.split(".in.", 1)[0] not in named:
            raise ValueError(f"{inp}: an input without its NAME.toml is no test")
    return out
