"""Style facts of a whole Python file that a rewrite's layout follows: its indentation unit, whether its
lists of one item per line end with a comma, and the quote its strings mostly use.  Parser-free (lines and the standard tokenizer), so a
window of a large file (window.py) is laid out by the facts of the file it belongs to."""
from __future__ import annotations

import io
import tokenize
from collections import Counter
from typing import Optional


def indent_unit(lines: list[str]) -> str:
    """The most common step of indentation after a line ending with ``:``; four spaces when none."""
    steps: Counter = Counter()
    n = len(lines)
    for i, line in enumerate(lines):
        s = line.rstrip()
        if not s.endswith(":") or s.lstrip().startswith("#"):
            continue
        ind = line[: len(line) - len(line.lstrip(" \t"))]
        for j in range(i + 1, n):  # the next line that is neither blank nor a comment
            nxt = lines[j]
            if nxt.strip() == "" or nxt.lstrip().startswith("#"):
                continue
            nind = nxt[: len(nxt) - len(nxt.lstrip(" \t"))]
            if nind.startswith(ind) and len(nind) > len(ind):
                steps[nind[len(ind):]] += 1
            break
    return steps.most_common(1)[0][0] if steps else "    "


def habits(text: str) -> tuple[bool, str, frozenset]:
    """(whether the text's lists of one item per line end with a comma (no such list: yes), the quote its
    one-line strings mostly use: ``'`` where single quotes are the more, else ``"``, and where that is
    ``'`` the double-quoted strings the text holds), from one token pass."""
    yes = no = 0
    quotes: Counter = Counter()
    doubles: set = set()
    stack: list[dict] = []
    last = None  # last significant token
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
                if tok.type == tokenize.NL and last is not None and last.string == "," and stack \
                        and stack[-1]["depth_comma"] is last:
                    stack[-1]["split"] = True
                continue
            if tok.type == tokenize.STRING:
                body = tok.string.lstrip("rRbBuUfF")
                if body[:3] not in ('"""', "'''") and "'" not in body[1:-1] and '"' not in body[1:-1]:
                    quotes[body[:1]] += 1
                if body[:1] == '"':
                    doubles.add(tok.string)
            elif tok.type == tokenize.OP and tok.string in "([{":
                stack.append({"split": False, "depth_comma": None})
            elif tok.type == tokenize.OP and tok.string in ")]}":
                if stack:
                    b = stack.pop()
                    if b["split"] and last is not None and last.end[0] < tok.start[0]:
                        if last.string == ",":
                            yes += 1
                        else:
                            no += 1
            elif tok.type == tokenize.OP and tok.string == "," and stack:
                stack[-1]["depth_comma"] = tok
            last = tok
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    single = quotes["'"] > quotes['"']
    return yes >= no, "'" if single else '"', frozenset(doubles) if single else frozenset()


def quick_habits(text: str, flat: bool) -> Optional[tuple]:
    """``habits(text)`` without the tokenizer where the text shows it: ``flat`` (no bracket holds a line break:
    no list of one item per line, so "yes") and no ``'`` in the text (no string opens with one: the quote is ``"``
    and no double-quoted strings are kept); None elsewhere."""
    if flat and "'" not in text:
        return True, '"', frozenset()
    return None


class FileStyle:
    """Both facts of one file's text, each computed when first asked for.  ``flat``: the caller has shown that no
    bracket of the text holds a line break (``window._flat``), so ``quick_habits`` may answer."""

    def __init__(self, text: str, flat: bool = False):
        self.text = text
        self._unit: Optional[str] = None
        self._habits: Optional[tuple] = quick_habits(text, flat)

    def unit(self) -> str:
        if self._unit is None:
            self._unit = indent_unit(self.text.splitlines(True))
        return self._unit

    def habits(self) -> tuple[bool, str, frozenset]:
        if self._habits is None:
            self._habits = habits(self.text)
        return self._habits

    def comma(self) -> bool:
        return self.habits()[0]
