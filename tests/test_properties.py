"""Properties of the Python migration over generated legacy TileLang scripts.

The scripts (tests/strategies.py) vary the import spelling, the argument
spelling (six positional, five positional + ``dtype=``, keywords in any
order, a positional prefix + keywords), comments and line breaks between the
arguments, trailing commas, ``T.evaluate`` wrappers, nesting (prim_func,
factory, macro with annotated buffers), buffer dtypes and their spelling,
byte counts, LF/CRLF, and unrelated code around the kernels.

Each property is checked against facts the generator wrote down and against
stdlib ``ast``/``tokenize`` readings of the input and output, never against
the tool's own idea of where the calls are.
"""
from __future__ import annotations

import ast
import atexit
import io
import os
import shutil
import sys
import tempfile
import tokenize
from collections import Counter

import libcst
import pytest
from hypothesis import HealthCheck, event, example, given, settings

from cpasync_migrate.engine import RunSettings, process_file
from cpasync_migrate.findings import Status
from strategies import LEGACY, Call, Imports, Layout, Script, hostile_trees, scripts

# CPASYNC_PROPERTY_EXAMPLES raises the number of generated scripts for a deeper run (default 60, about 20 s).
SETTINGS = settings(max_examples=int(os.environ.get("CPASYNC_PROPERTY_EXAMPLES", "60")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.large_base_example])
_DIR = tempfile.mkdtemp(prefix="cpasync-props-")
atexit.register(shutil.rmtree, _DIR, True)


# ---------------------------------------------------------------------------- running the tool

def migrate(text: str, unsafe: bool = False):
    """One in-process engine run in check mode (nothing written); returns (outcome, output text)."""
    path = os.path.join(_DIR, "kernel.py")
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    outcome = process_file(path, RunSettings(mode="check", unsafe_fixes=unsafe))
    assert outcome is not None, "the file holds ptx_cp_async; the prefilter must not drop it"
    assert outcome.error is None, outcome.error
    return outcome, (outcome.new_text if outcome.new_text is not None else text)


# ---------------------------------------------------------------------------- reading texts with stdlib ast

def line_starts(text: str) -> list[int]:
    return [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]


def off(starts: list[int], line: int, col: int) -> int:
    # generated text is ASCII: ast's UTF-8 byte columns are character columns
    return starts[line - 1] + col


def intrinsic_calls(tree: ast.AST, spelling: str) -> list[ast.Call]:
    """Calls spelled like the file's intrinsic, with arguments (a local zero-argument namesake is skipped)."""
    out = [n for n in ast.walk(tree)
           if isinstance(n, ast.Call) and ast.unparse(n.func) == spelling and (n.args or n.keywords)]
    return sorted(out, key=lambda n: (n.lineno, n.col_offset))


def arg_list_span(text: str, starts: list[int], call: ast.Call) -> tuple[int, int]:
    """Character span of the text between the call's parentheses."""
    fe = off(starts, call.func.end_lineno, call.func.end_col_offset)
    ce = off(starts, call.end_lineno, call.end_col_offset)
    assert text[fe] == "(" and text[ce - 1] == ")", (text[fe], text[ce - 1])
    return fe + 1, ce - 1


def outside(text: str, spans: list[tuple[int, int]]) -> list[str]:
    """The text cut at the given spans: the pieces between them."""
    pieces, pos = [], 0
    for s, e in sorted(spans):
        pieces.append(text[pos:s])
        pos = e
    pieces.append(text[pos:])
    return pieces


def comments(text: str) -> Counter:
    toks = tokenize.generate_tokens(io.StringIO(text).readline)
    return Counter(t.string for t in toks if t.type == tokenize.COMMENT)


def dump(expr_text: str) -> str:
    return ast.dump(ast.parse(expr_text.strip(), mode="eval").body)


def added_import(s: Script, out: str) -> tuple[str, int, int]:
    """Find the import the tool must add; returns (output without it, its start, its end)."""
    tree = ast.parse(out)
    starts = line_starts(out)
    added = [i for i, n in enumerate(tree.body) if isinstance(n, ast.Import)
             and [(a.name, a.asname) for a in n.names] == [("tilelang.language", "T")]]
    assert len(added) == 1, "exactly one `import tilelang.language as T` must be added"
    i = added[0]
    node = tree.body[i]
    # in the top-of-file import block, where isort puts it: after the third-party `import x` statements whose
    # names sort before it and before those that sort after it (case-insensitively)
    for prev in tree.body[:i]:
        assert isinstance(prev, (ast.Import, ast.ImportFrom)) or (
            isinstance(prev, ast.Expr) and isinstance(prev.value, ast.Constant)), ast.unparse(prev)
    # (first in the block when every import of it sorts after it, as isort puts it)
    assert (i > 0 and isinstance(tree.body[i - 1], (ast.Import, ast.ImportFrom))) or (
        i + 1 < len(tree.body) and isinstance(tree.body[i + 1], (ast.Import, ast.ImportFrom)))
    end = i + 1
    while end < len(tree.body) and isinstance(tree.body[end], (ast.Import, ast.ImportFrom)):
        end += 1

    def third_party(n) -> list[str]:
        return [a.name.lower() for a in n.names if a.name.split(".")[0] not in sys.stdlib_module_names] \
            if isinstance(n, ast.Import) else []

    assert all(m <= "tilelang.language" for n in tree.body[:i] for m in third_party(n))
    assert all(m > "tilelang.language" for n in tree.body[i + 1:end] for m in third_party(n))
    a = starts[node.lineno - 1]
    b = starts[node.end_lineno] if node.end_lineno < len(starts) else len(out)
    nl = "\r\n" if s.crlf else "\n"
    assert out[a:b] == "import tilelang.language as T" + nl, repr(out[a:b])
    return out[:a] + out[b:], a, b


# ---------------------------------------------------------------------------- properties
# Each check_* is one property; one test runs them all on each generated script, since a run of the
# tool (libcst with scope and qualified-name metadata) costs far more than the checks.

def check_parses(s: Script, out: str) -> None:
    """Property 1: the output parses, for libcst and for stdlib ast."""
    libcst.parse_module(out)
    ast.parse(out)


def check_newlines(s: Script, out: str) -> None:
    """Property 7: CRLF stays CRLF (no bare \\n introduced), LF stays LF."""
    if s.crlf:
        assert out.count("\n") == out.count("\r\n"), "a bare \\n was introduced into a CRLF file"
    else:
        assert "\r" not in out


def check_second_run(s: Script, out: str) -> None:
    """Property 2: migrating the output again finds nothing to fix and changes no byte; the sites
    left for a person are still reported."""
    outcome2, out2 = migrate(out)
    assert out2 == out, "a second run changed the text"
    assert [(f.line, f.code) for f in outcome2.findings if f.fix is not None] == []
    left = [f for f in outcome2.findings if f.legacy_site]
    assert len(left) == sum(not c.expect_rewrite for c in s.calls)
    assert all(f.code == "CPA002" for f in left)


def check_bytes_outside(s: Script, out: str) -> None:
    """Property 3: cut out the argument lists of the rewritten calls (and the one added import line):
    what is left is byte-identical."""
    if s.imports.adds_import and any(c.expect_rewrite for c in s.calls):
        # the import comes with the fixes: a file whose every site is left for a person gets none
        out, _, _ = added_import(s, out)
    # otherwise an added line would sit in a piece outside the cuts and fail the comparison
    in_tree, out_tree = ast.parse(s.text), ast.parse(out)
    in_calls = intrinsic_calls(in_tree, s.imports.spelling)
    out_calls = intrinsic_calls(out_tree, s.imports.spelling)
    assert len(in_calls) == len(out_calls) == len(s.calls)
    in_starts, out_starts = line_starts(s.text), line_starts(out)
    cut = [i for i, c in enumerate(s.calls) if c.expect_rewrite]
    # the one-line `T.evaluate(...)` around a call is laid out with it (python/layout.py): cut its
    # argument list, which holds the call and nothing else (property 5 checks the call)
    in_wrap = [_wrapper(in_tree, in_calls[i]) for i in cut]
    in_wrap = [w if w is not None and w.lineno == w.end_lineno else None for w in in_wrap]
    out_wrap = [_wrapper(out_tree, out_calls[i]) if w is not None else None for i, w in zip(cut, in_wrap)]
    assert all((w is None) == (v is None) for w, v in zip(in_wrap, out_wrap))
    in_spans = [arg_list_span(s.text, in_starts, w or in_calls[i]) for i, w in zip(cut, in_wrap)]
    out_spans = [arg_list_span(out, out_starts, w or out_calls[i]) for i, w in zip(cut, out_wrap)]
    assert outside(out, out_spans) == outside(s.text, in_spans)


def _wrapper(tree: ast.AST, call: ast.Call):
    """The call whose sole argument ``call`` is, if any."""
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and len(n.args) == 1 and not n.keywords and n.args[0] is call:
            return n
    return None


def _access_ptr(node: ast.expr, emit: str, buf: str, dtype_text: str, size: int, off_text: str, nbytes: int,
                mask: int, out: str) -> None:
    assert isinstance(node, ast.Call) and not node.keywords, ast.unparse(node)
    assert ast.unparse(node.func) == f"{emit}.tvm_access_ptr"
    assert len(node.args) == 5, ast.unparse(node)
    ann, data, offset, extent, rw = node.args
    assert isinstance(ann, ast.Call) and ast.unparse(ann.func) == f"{emit}.type_annotation"
    assert len(ann.args) == 1 and not ann.keywords
    # P is the buffer's declared dtype, copied verbatim
    assert ast.get_source_segment(out, ann.args[0]) == dtype_text
    assert ast.dump(data) == dump(f"{buf}.data")
    assert ast.dump(offset) == dump(off_text)
    assert isinstance(extent, ast.Constant) and type(extent.value) is int
    assert extent.value * size == nbytes, (extent.value, size, nbytes)
    assert isinstance(rw, ast.Constant) and rw.value == mask


def check_meaning(s: Script, out: str) -> None:
    """Property 5: each rewritten call is `<T>.ptx_cp_async(dst access ptr (mask 2), src access ptr (mask 1),
    bytes)` with P the buffer's declared dtype, the same offsets, n * sizeof(P) == bytes, no dtype= left."""
    out_calls = intrinsic_calls(ast.parse(out), s.imports.spelling)
    assert len(out_calls) == len(s.calls)
    for c, node in zip(s.calls, out_calls):
        if not c.expect_rewrite:
            continue
        assert not node.keywords, f"keywords left: {ast.unparse(node)}"
        assert len(node.args) == 3, ast.unparse(node)
        _access_ptr(node.args[0], s.imports.emit, c.dst, c.dst_dtype, c.dst_size, c.dst_off, c.nbytes, 2, out)
        _access_ptr(node.args[1], s.imports.emit, c.src, c.src_dtype, c.src_size, c.src_off, c.nbytes, 1, out)
        # bytes stay bytes under 0.1.8, text unchanged
        assert ast.get_source_segment(out, node.args[2]) == c.bytes_text
        assert ast.literal_eval(node.args[2]) == c.nbytes
        assert "dtype" not in ast.unparse(node)


CANONICAL = ["shared_ptr", "shared_offset", "global_ptr", "global_offset", "bytes"]


def expected_arg_list(c: Call, emit: str) -> str:
    """The text between the parentheses after the rewrite, from the layout rules of the rewrite contract
    (not from the tool): arguments in canonical order keep their place and their separators, lose `name=`;
    the dtype argument goes with its comma and the whitespace to the next argument (or, when it is last,
    with the comma and whitespace before it), except that whitespace holding a comment stays; the access
    pointer is wrapped around the pointer and offset texts; out-of-order arguments are re-emitted in
    canonical order joined by ", "; the text after `(` and after the last argument never changes."""
    lay = c.layout
    pre = {"shared_ptr": f"{emit}.tvm_access_ptr({emit}.type_annotation({c.dst_dtype}), ",
           "global_ptr": f"{emit}.tvm_access_ptr({emit}.type_annotation({c.src_dtype}), "}
    post = {"shared_offset": f", {c.nbytes // c.dst_size}, 2)", "global_offset": f", {c.nbytes // c.src_size}, 1)"}

    def value(k: str) -> str:  # `name=` dropped, access pointer wrapped around pointer and offset
        return pre.get(k, "") + lay.values[k] + post.get(k, "")

    if not c.in_order:  # re-emitted in canonical order, joined by ", "
        return lay.after_paren + ", ".join(value(k) for k in CANONICAL) + lay.end
    args = [value(k) for k in lay.keys]
    gaps = [b + "," + a for b, a in lay.gaps]
    d = lay.keys.index("dtype")
    if d + 1 < len(args):
        # dtype removed with its comma and the whitespace up to the next argument; when that holds a
        # comment, only the value and its comma go
        b, a = lay.gaps[d]
        args[d] = ""
        gaps[d] = b + a if "#" in b + a else ""
    else:
        # a trailing dtype removed with the comma before it and the whitespace between; when that holds a
        # comment, only the comma and the argument go
        b, a = lay.gaps[d - 1]
        args[d] = ""
        gaps[d - 1] = b + a if "#" in b + a else ""
    pieces = [lay.after_paren]
    for i, arg in enumerate(args):
        pieces.append(arg)
        if i < len(gaps):
            pieces.append(gaps[i])
    return "".join(pieces) + lay.end


def _tokens(arg_list: str) -> tuple[list[tuple[int, str]], list[str]]:
    """The code tokens of an argument list and its comments in order, layout left out (line breaks,
    indents, the trailing commas a split adds, a comment's place before or after a comma:
    python/layout.py lays the call out, tests/test_layout.py checks that)."""
    toks = [(t.type, t.string) for t in tokenize.generate_tokens(io.StringIO("(" + arg_list + ")").readline)
            if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)]
    code = [t for t in toks if t[0] != tokenize.COMMENT]
    code = [t for i, t in enumerate(code) if not (t == (tokenize.OP, ",") and code[i + 1] == (tokenize.OP, ")"))]
    return code, [t[1] for t in toks if t[0] == tokenize.COMMENT]


def check_exact_text(s: Script, out: str) -> None:
    """Property 5, textually: each rewritten argument list is, token for token, what the contract's rules
    give (the texts of the arguments kept, in their order), with the same comments in the same order; how
    it is laid out on lines is the layout module's (tests/test_layout.py)."""
    out_calls = intrinsic_calls(ast.parse(out), s.imports.spelling)
    starts = line_starts(out)
    for c, node in zip(s.calls, out_calls):
        if not c.expect_rewrite:
            continue
        a, b = arg_list_span(out, starts, node)
        assert _tokens(out[a:b]) == _tokens(expected_arg_list(c, s.imports.emit))


def check_findings(s: Script, outcome) -> None:
    """Property 6: one finding per generated legacy call, at the call, none lost; the string, the comment,
    the local namesake and the method namesake give none. Out-of-order keywords with comments between
    arguments are left for a person (CPA002); every other site gets a safe fix that is applied."""
    sites = sorted((f for f in outcome.findings if f.legacy_site), key=lambda f: (f.line, f.column))
    assert [f for f in outcome.findings if not f.legacy_site] == []
    assert len(sites) == len(s.calls), [(f.line, f.code, f.message) for f in sites]
    calls = intrinsic_calls(ast.parse(s.text), s.imports.spelling)
    for c, node, f in zip(s.calls, calls, sites):
        assert (f.line, f.column) == (node.lineno, node.col_offset + 1)
        assert (f.end_line, f.end_column) == (node.end_lineno, node.end_col_offset + 1)
        if c.expect_rewrite:
            assert (f.code, f.status) == ("CPA001", Status.REWRITTEN), f.message
            assert f.fix is not None and f.fix.safe and not f.fix.assumptions
        else:
            assert (f.code, f.status) == ("CPA002", Status.MANUAL), f.message
            assert f.fix is None


def check_comments(s: Script, out: str) -> None:
    """Property 4: every comment of the input is in the output, as often as before."""
    before, after = comments(s.text), comments(out)
    assert after == before, f"lost: {dict(before - after)}, new: {dict(after - before)}"


# A comment between the leading dtype argument and its comma: once deleted together with the dtype
# (found by these properties); kept as an explicit example.
COMMENT_BEFORE_COMMA = Script(
    "import tilelang.language as T\n"
    "\n"
    "\n"
    "@T.prim_func\n"
    "def main(A: T.Tensor((1024,), \"float16\")):\n"
    "    with T.Kernel(8, threads=32) as bx:\n"
    "        S = T.alloc_shared((128,), \"float16\")\n"
    "        tx = T.get_thread_binding()\n"
    "        T.ptx_cp_async(\"float16\"  # c\n"
    "            , S.data, tx * 8, A.data, tx * 8, 16)\n",
    Imports(["import tilelang.language as T"], "T.ptx_cp_async", "T.", "T", False, True, "import_as"),
    [Call("S", '"float16"', 2, "tx * 8", "A", '"float16"', 2, "tx * 8", 16, "16", expect_rewrite=True,
          gaps_have_comment=True, in_order=True, form="pos6", nesting="prim_func",
          layout=Layout("", list(LEGACY),
                        dict(zip(LEGACY, ['"float16"', "S.data", "tx * 8", "A.data", "tx * 8", "16"])),
                        [("  # c\n            ", " "), ("", " "), ("", " "), ("", " "), ("", " ")], ""))],
)


@pytest.mark.slow
@SETTINGS
@example(COMMENT_BEFORE_COMMA)
@given(scripts())
def test_migration_properties(s: Script):
    """All seven properties on every generated script (one tool run, plus the second run of property 2)."""
    event("CRLF" if s.crlf else "LF")
    event("adds the import" if s.imports.adds_import else "binds tilelang.language")
    event(f"{len(s.calls)} legacy calls")
    for t in sorted(s.tags):
        event(t)
    event("some call left for a person" if not all(c.expect_rewrite for c in s.calls) else "all calls rewritten")
    assert s.text.isascii()  # ast columns are UTF-8 bytes; ASCII makes them character columns
    outcome, out = migrate(s.text)
    check_findings(s, outcome)  # 6
    check_parses(s, out)  # 1
    check_newlines(s, out)  # 7
    check_bytes_outside(s, out)  # 3
    check_comments(s, out)  # 4
    check_meaning(s, out)  # 5
    check_exact_text(s, out)  # 5, textually
    check_second_run(s, out)  # 2


# ---------------------------------------------------------------------------- hostile trees

HOSTILE_SETTINGS = settings(max_examples=int(os.environ.get("CPASYNC_HOSTILE_EXAMPLES", "10")), deadline=None,
                            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                   HealthCheck.large_base_example])
HANG = 120  # seconds: only a hang takes this long


def _build(root: str, tree, text: str):
    """Write ``tree`` under root/tree (legacy files hold ``text``) and root/outside; returns the paths."""
    from strategies import Entry  # noqa: F401  (documentation of what the entries are)

    top = os.path.join(root, "tree")
    outside = os.path.join(root, "outside")
    os.makedirs(os.path.join(top, "sub"))
    os.makedirs(outside)
    with open(os.path.join(outside, "o.py"), "w", encoding="utf-8", newline="") as f:
        f.write(text)
    for e in tree.entries:
        p = os.path.join(top, e.rel)
        if e.kind in ("legacy", "plain"):
            with open(p, "w", encoding="utf-8", newline="") as f:
                f.write(text if e.kind == "legacy" else "x = 1  # no intrinsic here\n")
        elif e.kind == "fifo":
            os.mkfifo(p)
        elif e.kind == "device":
            os.symlink(e.device, p)
        elif e.kind == "link_in":
            os.symlink(os.path.relpath(os.path.join(top, tree.entries[e.ref].rel), os.path.dirname(p)), p)
        elif e.kind == "link_out":
            os.symlink(os.path.relpath(os.path.join(outside, "o.py"), os.path.dirname(p)), p)
        elif e.kind == "hard":
            os.link(os.path.join(top, tree.entries[e.ref].rel), p)
        elif e.kind == "dir_link":
            os.symlink("sub" if not e.folder else "..", p)
    return top, outside


def _snapshot(folder: str) -> dict:
    """rel path -> (kind, bytes or link target, inode of a FIFO or a hard-linked file) for everything
    below ``folder`` (links not followed)."""
    import stat as st_

    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            s = os.lstat(p)
            if st_.S_ISLNK(s.st_mode):
                out[os.path.relpath(p, folder)] = ("link", os.readlink(p), None)
            elif st_.S_ISREG(s.st_mode):
                with open(p, "rb") as f:  # the inode must stay where the file has hard links
                    out[os.path.relpath(p, folder)] = ("file", f.read(), s.st_ino if s.st_nlink > 1 else None)
            elif st_.S_ISFIFO(s.st_mode):
                out[os.path.relpath(p, folder)] = ("fifo", None, s.st_ino)
            elif st_.S_ISDIR(s.st_mode):
                out[os.path.relpath(p, folder)] = ("dir", None, None)
    return out


@pytest.mark.slow
@HOSTILE_SETTINGS
@given(scripts(), hostile_trees())
def test_hostile_trees_never_hang_and_change_only_the_calls(s: Script, tree):
    """Over generated trees with links (inside, outside, to devices, to a folder), hard links, FIFOs and
    odd names: the run ends (a subprocess timeout guards), nothing outside the scanned folder changes,
    links, FIFOs and hard links stay what they were, and a regular file changes only in write mode, only
    when it holds legacy calls, and then into exactly the in-process migration, which changes no byte
    outside the calls (property 3)."""
    import subprocess
    import sys

    for e in tree.entries:
        event(e.kind)
    event(tree.mode)
    _, migrated = migrate(s.text)
    root = tempfile.mkdtemp(dir=_DIR)
    top, outside = _build(root, tree, s.text)
    before_tree, before_out = _snapshot(top), _snapshot(outside)
    args = [] if tree.mode == "write" else [f"--{tree.mode}"]
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR",)}
    r = subprocess.run([sys.executable, "-m", "cpasync_migrate", *args, "-j", tree.jobs, "--no-cache", "tree"],
                       cwd=root, capture_output=True, timeout=HANG, env=env)
    assert r.returncode in (0, 1, 2), r.stderr[-2000:]
    assert b"Traceback" not in r.stderr, r.stderr[-2000:]
    assert _snapshot(outside) == before_out, "a file outside the scanned paths changed"
    after = _snapshot(top)
    assert after.keys() == before_tree.keys(), "entries appeared or vanished"
    for rel, (kind, data, ino) in before_tree.items():
        akind, adata, aino = after[rel]
        assert akind == kind and aino == ino, (rel, kind, akind)
        if kind == "link":
            assert adata == data
        elif kind == "file":
            original = s.text.encode("utf-8")
            if tree.mode == "write" and data == original:
                assert adata == migrated.encode("utf-8"), rel
                check_bytes_outside(s, adata.decode("utf-8"))
            else:
                assert adata == data, rel
    if tree.mode == "write":
        # the only error such a tree can cause: a rewrite refused behind a link that leads outside
        refused = any(e.kind == "link_out" for e in tree.entries) and migrated != s.text
        assert (r.returncode == 2) == refused, (r.returncode, r.stdout[-2000:])
    shutil.rmtree(root, ignore_errors=True)
