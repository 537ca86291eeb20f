"""Hypothesis strategies that write legacy TileLang scripts, with what each call must become.

A generated :class:`Script` carries its text and, per legacy call (in source
order), the facts an independent check needs: the buffers passed, their
declared dtype text and element size, the offset and byte texts, and whether
the contract says the call is rewritten or left for a person.  Everything is
ASCII, so stdlib ``ast`` column offsets (UTF-8 bytes) are character offsets.
"""
from __future__ import annotations

import re
import string
from dataclasses import dataclass, field

from functools import lru_cache
from typing import Optional

from hypothesis import strategies as st

# Element sizes in bytes, written down from the TileLang dtypes (not read from the rules).
SIZES = {"float16": 2, "float32": 4, "uint8": 1, "int8": 1, "bfloat16": 2}
# The legacy parameter names, in their positional order.
LEGACY = ["dtype", "shared_ptr", "shared_offset", "global_ptr", "global_offset", "bytes"]
SUPPRESS = re.compile(r"#\s*cpasync-migrate:\s*ignore\b")

# Names the generated code uses for other things; aliases must not collide with them.
ALIASES = ["T", "TL", "tl", "lang", "Tl", "tlang"]
FUNC_ALIASES = ["cp", "cp_async", "legacy_cp", "async_copy"]
BARE = ["Buffer", "Kernel", "Tensor", "alloc_shared", "evaluate", "get_thread_binding", "macro", "prim_func",
        "ptx_commit_group", "ptx_wait_group", "serial"]


@dataclass
class Imports:
    lines: list[str]  # top-level import statements (may span lines)
    spelling: str  # how the intrinsic is called, e.g. "T.ptx_cp_async" or "cp"
    decl: str  # prefix for declarations and helpers: "T.", "tilelang.language." or ""
    emit: str  # the name the tool must use for tilelang.language
    adds_import: bool  # the tool must add `import tilelang.language as T`
    attr_dtypes: bool  # whether `<decl>float16` resolves to a TileLang dtype
    kind: str = ""


@dataclass
class Layout:
    """The pieces of a generated argument list: ``after_paren``, then the arguments (``keys``, legacy names in
    source order, with ``values`` their value texts) separated by ``gaps`` (text before the comma, text after
    it), then ``end`` (an optional trailing comma and what precedes the closing parenthesis)."""

    after_paren: str
    keys: list[str]
    values: dict[str, str]
    gaps: list[tuple[str, str]]
    end: str


@dataclass
class Call:
    dst: str
    dst_dtype: str  # declared dtype text of dst, verbatim
    dst_size: int
    dst_off: str
    src: str
    src_dtype: str
    src_size: int
    src_off: str
    nbytes: int
    bytes_text: str
    expect_rewrite: bool
    gaps_have_comment: bool  # a comment sits between two arguments
    in_order: bool  # the non-dtype arguments are in canonical order
    form: str = ""  # argument spelling
    layout: Optional["Layout"] = None
    nesting: str = ""  # prim_func, factory or macro


@dataclass
class Script:
    text: str
    imports: Imports
    calls: list[Call] = field(default_factory=list)
    crlf: bool = False
    tags: set = field(default_factory=set)  # what the script exercises, for hypothesis statistics

    def __repr__(self) -> str:  # hypothesis prints this for a failing example
        return f"Script(crlf={self.crlf}, spelling={self.imports.spelling!r}, text=\n{self.text}\n)"


# Strategies are built once and reused: building one per draw makes generation several times slower.
@lru_cache(maxsize=None)
def _index(n: int):
    return st.integers(0, n - 1)


@lru_cache(maxsize=None)
def _perm(items: tuple):
    return st.permutations(items)


_BOOL = st.booleans()


def pick(draw, seq):
    """One element of ``seq``."""
    seq = list(seq)
    return seq[draw(_index(len(seq)))]


def one_in(draw, n: int) -> bool:
    """True with probability about 1/n."""
    return draw(_index(n)) == 0


def shuffled(draw, seq) -> list:
    seq = list(seq)
    return [seq[i] for i in draw(_perm(tuple(range(len(seq)))))]


# ---------------------------------------------------------------------------- small pieces

_COMMENT_CHARS = string.ascii_letters + string.digits + " \t_-.,:;()[]{}'\"=+*/<>!?@$%^&~`|\\#"


_COMMENT_BODY = st.one_of(
    st.text(alphabet=_COMMENT_CHARS, max_size=24),
    st.sampled_from(["destination", "source", "dtype", "T.ptx_cp_async(...) legacy", "bytes", "16 B"]),
)


def comment(draw) -> str:
    body = draw(_COMMENT_BODY)
    text = "#" + pick(draw, ["", " "]) + body
    text = text.rstrip(" \t")  # trailing blanks on a line are noise, not a comment's text
    if SUPPRESS.search(text):
        text = "# note"
    return text


def _quote(draw, s: str) -> str:
    q = pick(draw, ['"', "'"])
    return f"{q}{s}{q}"


_EXTRA_IMPORTS = st.lists(st.sampled_from(["import math", "import tilelang", "import os.path"]), unique=True,
                          max_size=2)


def imports(draw) -> Imports:
    kind = pick(draw, ["import_as", "from_func", "from_as", "import_as", "from_func", "from_plain", "import_plain"])
    extra = draw(_EXTRA_IMPORTS)
    if kind == "import_as":
        a = pick(draw, ALIASES)
        imp = Imports([f"import tilelang.language as {a}"], f"{a}.ptx_cp_async", f"{a}.", a, False, True)
    elif kind == "from_as":
        a = pick(draw, ALIASES + ["language"])
        line = f"from tilelang import language as {a}" if a != "language" or draw(_BOOL) else \
            "from tilelang import language"
        imp = Imports([line], f"{a}.ptx_cp_async", f"{a}.", a, False, True)
    elif kind == "from_plain":
        imp = Imports(["from tilelang import language"], "language.ptx_cp_async", "language.", "language", False, True)
    elif kind == "import_plain":
        imp = Imports(["import tilelang.language"], "tilelang.language.ptx_cp_async", "tilelang.language.",
                      "tilelang.language", False, True)
    else:
        x = pick(draw, FUNC_ALIASES + [None])
        fline = "from tilelang.language import ptx_cp_async" + (f" as {x}" if x else "")
        spelling = x or "ptx_cp_async"
        if one_in(draw, 3):
            # the module is also bound: the tool uses that name, declarations go through it
            a = pick(draw, ALIASES)
            mline = pick(draw, [f"import tilelang.language as {a}", f"from tilelang import language as {a}"])
            imp = Imports([fline, mline], spelling, f"{a}.", a, False, True)
        else:
            names = sorted(BARE)
            if draw(_BOOL):
                bline = "from tilelang.language import (\n" + "".join(f"    {n},\n" for n in names) + ")"
            else:
                bline = "from tilelang.language import " + ", ".join(names)
            imp = Imports([fline, bline], spelling, "", "T", True, False)
    if kind == "import_as" and "import math" in extra and one_in(draw, 2):
        # one statement binding several modules
        extra.remove("import math")
        imp.lines = [imp.lines[0].replace("import ", "import math, ", 1)]
    lines = shuffled(draw, imp.lines + extra)
    imp.kind = kind
    imp.lines = list(lines)
    return imp


def offset(draw, loop: bool) -> str:
    e = pick(draw, [1, 2, 4, 8, 16])
    b = pick(draw, [64, 128, 256])
    k = draw(_index(8))
    forms = ["tx * {e}", "bx * {b} + tx * {e}", "0", "(tx + {k}) * {e}", "tx*{e}", "{k}", "(bx * {b} + tx * {e})",
             "bx * {b} + (tx % 4) * {e}"]
    if loop:
        forms += ["tx * {e} + j * {k}", "j * {b} + tx * {e}"]
    return pick(draw, forms).format(e=e, b=b, k=k)


@dataclass
class Buf:
    name: str
    dtype_text: str
    size: int


def dtype_decl(draw, imp: Imports) -> tuple[str, int]:
    name = pick(draw, sorted(SIZES))
    if imp.attr_dtypes and one_in(draw, 4):
        return f"{imp.decl}{name}", SIZES[name]
    return _quote(draw, name), SIZES[name]


# ---------------------------------------------------------------------------- the call

def legacy_call(draw, imp: Imports, shared: list[Buf], glob: list[Buf], loop: bool, indent: str,
                comment_before_comma: bool = True):
    """Text of one legacy call statement (continuation lines indented) and its Call facts."""
    dst = pick(draw, shared)
    src = pick(draw, glob)
    nbytes = pick(draw, [n for n in (4, 8, 16) if n % dst.size == 0 and n % src.size == 0])
    bytes_text = hex(nbytes) if one_in(draw, 10) else str(nbytes)
    # The call's dtype has the destination's element size: where the two differ, the legacy offset's
    # unit depends on whether the kernel's shared memory was merged, a question of its own
    # (tests/fixtures/python/merged_smem_call_dtype, smem_* and the verifier's adversarial suite).
    call_dtype = pick(draw, sorted(k for k, v in SIZES.items() if v == dst.size))
    dtype_text = f"{imp.decl}{call_dtype}" if imp.attr_dtypes and draw(_BOOL) else _quote(draw, call_dtype)
    d_off, s_off = offset(draw, loop), offset(draw, loop)
    values = {"dtype": dtype_text, "shared_ptr": f"{dst.name}.data", "shared_offset": d_off,
              "global_ptr": f"{src.name}.data", "global_offset": s_off, "bytes": bytes_text}

    form = pick(draw, ["pos6", "pos5kw", "kw", "mixed"])
    if form == "pos6":
        items = [(None, k) for k in LEGACY]
    elif form == "pos5kw":
        items = [(None, k) for k in LEGACY[1:]] + [("dtype", "dtype")]
    elif form == "kw":
        items = [(k, k) for k in shuffled(draw, LEGACY)]
    else:
        p = 1 + draw(_index(5))
        items = [(None, k) for k in LEGACY[:p]] + [(k, k) for k in shuffled(draw, LEGACY[p:])]
    order = [k for _, k in items if k != "dtype"]
    in_order = order == LEGACY[1:]

    cont = indent + pick(draw, ["    ", "        ", "  ", ""])
    nl = "\n"

    def arg_text(kw, k):
        if kw is None:
            return values[k]
        eq = pick(draw, ["=", "=", "=", " = "])
        return f"{kw}{eq}{values[k]}"

    gaps: list[tuple[str, str]] = []

    # about half the calls have no comment inside at all
    commented = draw(_BOOL)
    after_paren = pick(draw, ["", "", "newline", "comment"] if commented else ["", "newline"])
    if after_paren == "newline":
        after_paren = nl + cont
    elif after_paren == "comment":
        after_paren = "  " + comment(draw) + nl + cont
    parts = [after_paren]
    gaps_comment = False
    for i, (kw, k) in enumerate(items):
        parts.append(arg_text(kw, k))
        if i + 1 < len(items):
            pre = ""
            if commented and comment_before_comma and one_in(draw, 12):  # a comment between an argument and its comma
                pre = "  " + comment(draw) + nl + cont
                gaps_comment = True
            post = pick(draw, ["space", "space", "none", "newline"]
                        + (["comment", "comment_line"] if commented else []))
            if post == "space":
                post_t = " "
            elif post == "none":
                post_t = ""
            elif post == "newline":
                post_t = nl + cont
            elif post == "comment":
                post_t = "  " + comment(draw) + nl + cont
                gaps_comment = True
            else:
                post_t = nl + cont + comment(draw) + nl + cont
                gaps_comment = True
            parts.append(pre + "," + post_t)
            gaps.append((pre, post_t))
    # after the last argument
    end = ""
    trailing = draw(_BOOL)
    if commented and (comment_before_comma or not trailing) and one_in(draw, 10):
        end += "  " + comment(draw) + nl + cont
    if trailing:
        end += ","
    tail = pick(draw, ["", "newline", "comment"] if commented else ["", "newline"])
    if tail == "newline":
        end += nl + indent
    elif tail == "comment":
        end += "  " + comment(draw) + nl + indent
    parts.append(end)
    call = f"{imp.spelling}(" + "".join(parts) + ")"
    if one_in(draw, 4):
        call = f"{imp.decl}evaluate({call})"
    if one_in(draw, 6):
        call += "  " + comment(draw)
    fact = Call(dst.name, dst.dtype_text, dst.size, d_off, src.name, src.dtype_text, src.size, s_off, nbytes,
                bytes_text, expect_rewrite=in_order or not gaps_comment, gaps_have_comment=gaps_comment,
                in_order=in_order, form=form + (" in evaluate" if "evaluate(" in call else ""),
                layout=Layout(after_paren, [k for _, k in items], values, gaps, end))
    return call, fact


# ---------------------------------------------------------------------------- kernels

def unit(draw, imp: Imports, idx: int, comment_before_comma: bool = True):
    """One kernel-bearing unit: a prim_func, a factory returning one, or a macro."""
    d = imp.decl
    kind = pick(draw, ["prim_func", "factory", "macro"])
    n_glob = 1 + draw(_index(2))
    n_shared = 1 + draw(_index(2))
    glob, shared = [], []
    for k in range(n_glob):
        t, s = dtype_decl(draw, imp)
        glob.append(Buf(f"A{idx}{k}", t, s))
    for k in range(n_shared):
        t, s = dtype_decl(draw, imp)
        shared.append(Buf(f"S{idx}{k}", t, s))
    base = "        " if kind != "factory" else "            "
    if kind == "macro":
        base = "    "

    def tensor(b: Buf, shape: str) -> str:
        if one_in(draw, 4):
            return f"{d}Tensor({shape}, dtype={b.dtype_text})"
        return f"{d}Tensor({shape}, {b.dtype_text})"

    def shared_decl(b: Buf) -> str:
        if one_in(draw, 4):
            return f"{d}alloc_shared((128,), dtype={b.dtype_text})"
        return f"{d}alloc_shared((128,), {b.dtype_text})"

    body: list[str] = []
    calls: list[Call] = []
    n_calls = 1 + draw(_index(3))
    for _ in range(n_calls):
        block = pick(draw, ["", "", "", "for", "if"])
        loop = block == "for"
        ind = base + ("    " if block else "")
        text, fact = legacy_call(draw, imp, shared, glob, loop, ind, comment_before_comma)
        if one_in(draw, 4):
            body.append(base + pick(draw, ["x = tx * 2", "T_off = bx + 1", "# stage the next tile",
                                           f"{d}ptx_commit_group()"]))
        if block == "for":
            body.append(base + f"for j in {d}serial(2):")
        elif block == "if":
            body.append(base + "if tx < 16:")
        body.append(ind + text)
        fact.nesting = kind
        calls.append(fact)
    body.append(base + f"{d}ptx_commit_group()")
    body.append(base + f"{d}ptx_wait_group(0)")

    shape = "(N,)" if kind == "factory" else "(1024,)"
    params = ", ".join(f"{b.name}: {tensor(b, shape)}" for b in glob)
    lines: list[str] = []
    if kind == "macro":
        sparams = []
        for b in shared:
            if one_in(draw, 4):
                sparams.append(f"{b.name}: {d}Buffer[(128,), {b.dtype_text}]")
            else:
                sparams.append(f"{b.name}: {d}Buffer((128,), {b.dtype_text})")
        lines += [f"@{d}macro", f"def load{idx}({', '.join(sparams)}, {params}, tx, bx):"]
        lines += body
    else:
        pre = "    " if kind == "factory" else ""
        if kind == "factory":
            lines.append(f"def make_kernel{idx}(N=1024, block=128):")
        lines += [pre + f"@{d}prim_func", pre + f"def main{idx}({params}):",
                  pre + f"    with {d}Kernel(8, threads=32) as bx:"]
        for b in shared:
            lines.append(pre + f"        {b.name} = {shared_decl(b)}")
        lines.append(pre + f"        tx = {d}get_thread_binding()")
        lines += body
        if kind == "factory":
            lines += ["", f"    return main{idx}"]
    return "\n".join(lines) + "\n", calls


UNRELATED = [
    'NOTE = "T.ptx_cp_async(dtype, dst, dst_off, src, src_off, 16) is the legacy form"\n',
    "def helper():\n    def ptx_cp_async():\n        return 0\n\n    return ptx_cp_async()\n",
    "class Fake:\n    def ptx_cp_async(self, *args):\n        return args\n\n\n"
    "FAKE = Fake().ptx_cp_async(1, 2, 3, 4, 5, 6)\n",
    "# ptx_cp_async(\"float16\", S.data, 0, A.data, 0, 16) in a comment\n",
    "BLOCK = 128  # threads per block\n",
    "def shape_of(n):\n    return (n,)\n",
]


_EXTRAS = st.lists(st.sampled_from(UNRELATED), unique=True, max_size=3)


@st.composite
def scripts(draw, comment_before_comma: bool = True) -> Script:
    """A legacy script; ``comment_before_comma=False`` never puts a comment between an argument and its comma."""
    imp = imports(draw)
    head: list[str] = []
    if one_in(draw, 4):
        head.append("# Kernels staged through shared memory.\n")
    if one_in(draw, 4):
        head.append('"""Copy kernels."""\n')
    head.append("\n".join(imp.lines) + "\n")
    chunks: list[str] = []
    calls: list[Call] = []
    n_units = 1 + draw(_index(2))
    units = []
    for i in range(n_units):
        text, cs = unit(draw, imp, i, comment_before_comma)
        units.append((text, cs))
    extras = draw(_EXTRAS)
    pieces = [("u", u) for u in units] + [("x", x) for x in extras]
    pieces = shuffled(draw, pieces)
    for kind, p in pieces:
        if kind == "u":
            chunks.append(p[0])
            calls.extend(p[1])
        else:
            chunks.append(p)
    text = "".join(head) + "\n\n" + "\n\n".join(chunks)
    if one_in(draw, 6):
        text = text.rstrip("\n")  # no newline at the end of the file
    crlf = one_in(draw, 2)
    if crlf:
        text = text.replace("\n", "\r\n")
    tags = {f"import {imp.kind}"} | {f"call {c.form}" for c in calls} | {f"in {c.nesting}" for c in calls}
    return Script(text, imp, calls, crlf, tags)


# ---------------------------------------------------------------------------- hostile trees

@dataclass
class Entry:
    """One entry of a generated tree: a file, a FIFO or a link (``ref``: the entry a link or a hard
    link leads to, an index into the tree's entries)."""

    name: str  # a file name (no "/"), possibly with spaces, tabs, newlines or non-ASCII letters
    folder: str  # "" (the root of the tree) or "sub"
    kind: str  # legacy | plain | fifo | device | link_in | link_out | hard | dir_link
    ref: Optional[int] = None
    device: str = "/dev/zero"

    @property
    def rel(self) -> str:
        return f"{self.folder}/{self.name}" if self.folder else self.name


@dataclass
class Tree:
    entries: list
    mode: str  # write | check | diff
    jobs: str


_NAME_CHARS = string.ascii_letters[:6] + " \t\n-ñ"
KINDS = ["legacy", "plain", "fifo", "device", "link_in", "link_out", "hard", "dir_link"]


@st.composite
def hostile_trees(draw) -> Tree:
    """A small tree mixing regular files (legacy or not), FIFOs, links to devices, links inside and
    outside the tree, hard links and a link to a folder, under odd names."""
    n = draw(st.integers(1, 7))
    entries: list = []
    for i in range(n):
        base = draw(st.text(alphabet=_NAME_CHARS, min_size=0, max_size=5))
        name = f"{i}{base}.py"  # the index keeps names unique; every name is a source name
        folder = draw(st.sampled_from(["", "sub"]))
        regular = [j for j, e in enumerate(entries) if e.kind in ("legacy", "plain")]
        kinds = [k for k in KINDS if k not in ("link_in", "hard") or regular]
        kind = draw(st.sampled_from(kinds))
        ref = draw(st.sampled_from(regular)) if kind in ("link_in", "hard") else None
        dev = draw(st.sampled_from(["/dev/zero", "/dev/urandom"]))
        entries.append(Entry(name, folder, kind, ref, dev))
    if not any(e.kind == "legacy" for e in entries):
        entries.append(Entry(f"{n}.py", "", "legacy"))
    return Tree(entries, draw(st.sampled_from(["write", "check", "diff"])), draw(st.sampled_from(["1", "2"])))
