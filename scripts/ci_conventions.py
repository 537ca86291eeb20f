"""Run the CI conventions of issue 27 against one source tree of the tool and print, per convention, the
command run, the verdict its output decides (held / partial / diverging / not run) and the excerpt that decided.

    python scripts/ci_conventions.py TREE [--json OUT]

TREE is a checkout of the tool (its ``cpasync_migrate`` is imported from there through PYTHONPATH, by the
Python running this script, which must have the tool's dependencies, ruff, black and jsonschema).  Every
scratch tree is made under a temporary folder; nothing of TREE is written.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

LEGACY = textwrap.dedent('''\
    import tilelang.language as T


    @T.prim_func
    def main(A: T.Tensor((256,), "float16"), B: T.Tensor((256,), "float16")):
        with T.Kernel(1, threads=32) as bx:
            S = T.alloc_shared((256,), "float16")
            tx = T.get_thread_binding()
            T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            for i in T.serial(8):
                B[tx * 8 + i] = S[tx * 8 + i]
    ''')
UNSAFE = textwrap.dedent('''\
    import tilelang.language as T


    @T.macro
    def load(S, A, off):
        T.ptx_cp_async("float32", S.data, off, A.data, off, 16)
    ''')
TVM = textwrap.dedent('''\
    from tvm.script import tir as T


    @T.prim_func
    def main(A: T.Buffer((32,), "float16")):
        S = T.alloc_buffer((32,), "float16", scope="shared")
        T.evaluate(T.ptx_cp_async(S.data, 0, A.data, 0, 16, dtype="float16"))
    ''')
OLD_CALL = 'T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)'

PY = sys.executable
BIN = os.path.dirname(PY)


class Ctx:
    def __init__(self, tree: str, scratch: str):
        self.tree, self.scratch, self.n = os.path.abspath(tree), scratch, 0

    def fresh(self, files: dict) -> Path:
        self.n += 1
        root = Path(self.scratch) / f"t{self.n:02}"
        for rel, text in files.items():
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(text if isinstance(text, bytes) else text.encode())
        root.mkdir(parents=True, exist_ok=True)
        return root

    def env(self, extra=None) -> dict:
        e = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "GITHUB_STEP_SUMMARY")}
        e.update(NO_COLOR="1", PYTHONPATH=self.tree, CPASYNC_MIGRATE_CACHE_DIR=os.path.join(self.scratch, "cache"))
        e["PATH"] = BIN + os.pathsep + e.get("PATH", "")
        e.update(extra or {})
        return e

    def tool(self, args, cwd, extra_env=None, input=None):
        """cpasync-migrate ARGS in cwd; returns (rc, stdout, stderr, the command as written)."""
        r = subprocess.run([PY, "-m", "cpasync_migrate", *args], cwd=cwd, env=self.env(extra_env),
                           capture_output=True, text=True, input=input, errors="replace")
        return r.returncode, r.stdout, r.stderr, "cpasync-migrate " + " ".join(shlex.quote(a) for a in args)

    def sh(self, cmd: list, cwd, extra_env=None):
        r = subprocess.run(cmd, cwd=cwd, env=self.env(extra_env), capture_output=True, text=True, errors="replace")
        return r.returncode, r.stdout, r.stderr


def excerpt(*texts, limit=400) -> str:
    t = " | ".join(" ".join(x.split()) for x in texts if x and x.strip())
    return t if len(t) <= limit else t[: limit - 3] + "..."


def verdict(ok, partial=False):
    return "held" if ok else "partial" if partial else "diverging"


CHECKS = []


def check(cid, item, what):
    def deco(fn):
        CHECKS.append((cid, item, what, fn))
        return fn
    return deco


def _mono(c):
    return c.fresh({
        "pyproject.toml": '[tool.cpasync-migrate]\nextend-exclude = ["3rdparty/**"]\n',
        "sub/pyproject.toml": '[project]\nname = "sub"\n\n[tool.cpasync-migrate]\nextend-exclude = ["gen/**"]\n',
        "top.py": LEGACY, "3rdparty/tvm/a.py": LEGACY, "sub/pkg/b.py": LEGACY, "sub/gen/c.py": LEGACY})


def _paths(out):
    try:
        return sorted({f["path"] for f in json.loads(out)["findings"]})
    except (ValueError, KeyError):
        return None


# ------------------------------------------------------------------ 1. configuration per file

@check("1.1", 1, "a sub-package's configuration does not knock out the root's exclude (3rdparty/ not linted)")
def _(c):
    t = _mono(c)
    rc, out, err, cmd = c.tool(["--check", "--format", "json", "--no-cache", "."], t)
    p = _paths(out)
    return verdict(p is not None and "3rdparty/tvm/a.py" not in p and "sub/gen/c.py" not in p), cmd, f"paths: {p}"


@check("1.2", 1, "the fix hook (named files, --force-exclude) does not rewrite a file its own sub-package excludes")
def _(c):
    t = _mono(c)
    rc, out, err, cmd = c.tool(["--no-cache", "--force-exclude", "sub/gen/c.py", "3rdparty/tvm/a.py"], t)
    same = (t / "sub/gen/c.py").read_text() == LEGACY and (t / "3rdparty/tvm/a.py").read_text() == LEGACY
    return verdict(same), cmd, f"rc {rc}; both files unchanged: {same}"


@check("1.3", 1, "results do not change with the order of the arguments")
def _(c):
    t = _mono(c)
    files = ["top.py", "3rdparty/tvm/a.py", "sub/pkg/b.py", "sub/gen/c.py"]
    a = c.tool(["--check", "--format", "json", "--no-cache", "--force-exclude", *files], t)
    b = c.tool(["--check", "--format", "json", "--no-cache", "--force-exclude", *files[::-1]], t)
    pa, pb = _paths(a[1]), _paths(b[1])
    return verdict(pa == pb and pa is not None), a[3] + "  (and the reverse order)", f"{pa} / {pb}"


@check("1.4", 1, "target, style and line-length per file (sub-packages with different targets, both orders)")
def _(c):
    t = c.fresh({"a/pyproject.toml": '[tool.cpasync-migrate]\ntarget = "0.1.9"\n',
                 "b/pyproject.toml": '[tool.cpasync-migrate]\ntarget = "0.1.8"\n', "a/k.py": LEGACY, "b/k.py": LEGACY})
    r1 = c.tool(["--diff", "--no-cache", "a", "b"], t)
    r2 = c.tool(["--diff", "--no-cache", "b", "a"], t)
    a_elems = re.search(r"\+\+\+ b/a/k\.py.*?\n\+\s+8,\n", r1[1], re.S) is not None
    b_bytes = re.search(r"\+\+\+ b/b/k\.py.*?\n\+\s+16,\n", r1[1], re.S) is not None
    return (verdict(a_elems and b_bytes and r1[1] == r2[1], partial=r1[1] == r2[1]), r1[3] + "  (and b a)",
            f"a/k.py gets 8 elements (0.1.9): {a_elems}; b/k.py keeps 16 bytes (0.1.8): {b_bytes}; "
            f"same diff both orders: {r1[1] == r2[1]}; {excerpt(r1[2].splitlines()[-1] if r1[2] else '')}")


# ------------------------------------------------------------------ 2. --since

@check("2.1", 2, "--since REV uses the merge base (REV...HEAD): on a branch, --since main leaves out what only main changed")
def _(c):
    t = c.fresh({"f.py": LEGACY, "g.py": LEGACY})
    g = lambda *a: c.sh(["git", "-c", "user.email=t@e.invalid", "-c", "user.name=t", *a], t)  # noqa: E731
    g("init", "-q", "-b", "main")
    g("add", ".")
    g("commit", "-qm", "base")
    g("checkout", "-qb", "feature")
    (t / "f.py").write_text(LEGACY + "\n# feature\n")
    g("commit", "-qam", "feature")
    g("checkout", "-q", "main")
    (t / "g.py").write_text(LEGACY + "\n# main\n")
    g("commit", "-qam", "main")
    g("checkout", "-q", "feature")
    rc, out, err, cmd = c.tool(["--check", "--no-cache", "--since", "main", "."], t)
    listed = sorted({ln.split(":")[0] for ln in out.splitlines() if ": CPA" in ln})
    return verdict(listed == ["f.py"]), cmd + "  (on branch feature; main changed g.py)", f"rc {rc}; reported: {listed}"


@check("2.2", 2, "--help says --since uses the merge base")
def _(c):
    rc, out, err, cmd = c.tool(["--help"], c.scratch)
    m = re.search(r"--since REV\s+(.*?)\n\s+--", out, re.S)
    text = " ".join(m.group(1).split()) if m else ""
    return verdict("merge base" in text and "REV...HEAD" in text), cmd, text


# ------------------------------------------------------------------ 3. the layout

def _formatted(c, t, rel, tool="ruff"):
    """Lay the input out with the formatter first (a project that runs it), so only the rewrite can differ."""
    cmd = [os.path.join(BIN, "ruff"), "format", rel] if tool == "ruff" else [os.path.join(BIN, "black"), "-q", rel]
    c.sh(cmd, t)


def _ruff_format_check(c, t, rel):
    rc, out, err = c.sh([os.path.join(BIN, "ruff"), "format", "--check", "--diff", rel], t)
    return rc, excerpt(out, err, limit=200)


@check("3.1", 3, "ruff.toml's line-length is followed (ruff format --check passes after the rewrite)")
def _(c):
    t = c.fresh({"ruff.toml": "line-length = 60\n", "k.py": LEGACY})
    _formatted(c, t, "k.py")
    rc, out, err, cmd = c.tool(["--no-cache", "k.py"], t)
    frc, fx = _ruff_format_check(c, t, "k.py")
    return verdict(rc == 0 and frc == 0), "ruff format k.py && " + cmd + " && ruff format --check k.py", f"rc {rc}; ruff format --check rc {frc} {fx}"


@check("3.2", 3, ".ruff.toml's line-length is followed")
def _(c):
    t = c.fresh({".ruff.toml": "line-length = 60\n", "k.py": LEGACY})
    _formatted(c, t, "k.py")
    rc, out, err, cmd = c.tool(["--no-cache", "k.py"], t)
    frc, fx = _ruff_format_check(c, t, "k.py")
    return verdict(rc == 0 and frc == 0), "ruff format k.py && " + cmd + " && ruff format --check k.py", f"rc {rc}; ruff format --check rc {frc} {fx}"


@check("3.3", 3, "a nearer pyproject.toml without [tool.ruff] does not stop the search for ruff's configuration")
def _(c):
    t = c.fresh({"ruff.toml": "line-length = 60\n", "sub/pyproject.toml": '[project]\nname = "sub"\n',
                 "sub/k.py": LEGACY})
    _formatted(c, t / "sub", "k.py")
    rc, out, err, cmd = c.tool(["--no-cache", "k.py"], t / "sub")
    frc, fx = _ruff_format_check(c, t / "sub", "k.py")
    return verdict(rc == 0 and frc == 0), "(in sub/) ruff format k.py && " + cmd + " && ruff format --check k.py", f"rc {rc}; ruff format --check rc {frc} {fx}"


@check("3.4", 3, "black's line-length ([tool.black] at the project root) is followed (black --check passes)")
def _(c):
    t = c.fresh({"pyproject.toml": "[tool.black]\nline-length = 60\n", "k.py": LEGACY})
    _formatted(c, t, "k.py", "black")
    rc, out, err, cmd = c.tool(["--no-cache", "k.py"], t)
    brc, bo, be = c.sh([os.path.join(BIN, "black"), "--check", "k.py"], t)
    return verdict(rc == 0 and brc == 0), "black k.py && " + cmd + " && black --check k.py", f"rc {rc}; black --check rc {brc} {excerpt(be, limit=150)}"


@check("3.5", 3, "at width 60 an expression that no longer fits is split (ruff format --check passes)")
def _(c):
    text = LEGACY.replace(OLD_CALL, 'T.ptx_cp_async("float16", S.data, (bx * 32 + tx) * 8 - bx * 256, '
                                    'A.data, (bx * 32 + tx) * 8 - bx * 256, 16)')
    t = c.fresh({"ruff.toml": "line-length = 60\n", "k.py": text})
    _formatted(c, t, "k.py")
    before = set((t / "k.py").read_text().splitlines())
    rc, out, err, cmd = c.tool(["--no-cache", "k.py"], t)
    new = (t / "k.py").read_text()
    longest = max((len(x) for x in new.splitlines() if x not in before), default=0)
    frc, fx = _ruff_format_check(c, t, "k.py")
    return (verdict(rc == 0 and longest <= 60 and frc == 0, partial=rc == 0 and longest <= 60),
            "ruff format k.py && " + cmd + " && ruff format --check k.py", f"rc {rc}; longest new line {longest}; ruff format --check rc {frc} {fx}")


@check("3.6", 3, "a generated dtype string takes the file's quotes (single quotes in a single-quote file)")
def _(c):
    text = LEGACY.replace('"', "'")
    t = c.fresh({"k.py": text})
    rc, out, err, cmd = c.tool(["--no-cache", "k.py"], t)
    new = (t / "k.py").read_text()
    return verdict(rc == 0 and '"' not in new), cmd, f"rc {rc}; double quotes in the result: {new.count(chr(34))}"


@check("3.7", 3, "the import --migrate-tvm adds keeps isort order (ruff check --select I001 passes)")
def _(c):
    text = "import os\n\n" + TVM.replace("from tvm.script import tir as T\n", "from tvm.script import tir as T\n\nx = os.sep\n")
    t = c.fresh({"k.py": text})
    rc, out, err, cmd = c.tool(["--no-cache", "--migrate-tvm", "k.py"], t)
    irc, io, ie = c.sh([os.path.join(BIN, "ruff"), "check", "--isolated", "--select", "I001", "k.py"], t)
    changed = (t / "k.py").read_text() != text
    return verdict(changed and irc == 0, partial=changed), cmd + " && ruff check --select I001 k.py", \
        f"rc {rc}; changed {changed}; ruff I001 rc {irc} {excerpt(io, limit=150)}"


# ------------------------------------------------------------------ 4. one run, every report

@check("4.1", 4, "-o/--output-file writes the report to a file")
def _(c):
    t = c.fresh({"k.py": LEGACY})
    rc, out, err, cmd = c.tool(["--check", "--no-cache", "--format", "json", "-o", "out.json", "."], t)
    ok = (t / "out.json").is_file() and json.loads((t / "out.json").read_text())["summary"]["files_scanned"] == 1
    return verdict(ok and not out.strip()), cmd, f"rc {rc}; out.json written: {ok}; stdout {len(out)} chars"


@check("4.2", 4, "several formats in one run (--format github plus --report sarif:FILE and junit:FILE)")
def _(c):
    t = c.fresh({"k.py": LEGACY})
    rc, out, err, cmd = c.tool(["--check", "--no-cache", "--format", "github", "--report", "sarif:x.sarif",
                                "--report", "junit:j.xml", "."], t)
    ok = (t / "x.sarif").is_file() and (t / "j.xml").is_file() and out.startswith("::")
    return verdict(ok), cmd, f"rc {rc}; x.sarif and j.xml written, annotations on stdout: {ok}"


@check("4.3", 4, "a junit format (XML testsuite, one failure per site)")
def _(c):
    import xml.etree.ElementTree as ET

    t = c.fresh({"k.py": LEGACY})
    rc, out, err, cmd = c.tool(["--check", "--no-cache", "--format", "junit", "."], t)
    try:
        root = ET.fromstring(out)
        fails = len(root.findall(".//failure"))
    except ET.ParseError as e:
        return "diverging", cmd, f"not XML: {e}"
    return verdict(fails == 1), cmd, f"rc {rc}; root <{root.tag}>, {fails} failure(s)"


@check("4.4", 4, "a gitlab (code quality) format")
def _(c):
    t = c.fresh({"k.py": LEGACY})
    rc, out, err, cmd = c.tool(["--check", "--no-cache", "--format", "gitlab", "."], t)
    try:
        data = json.loads(out)
        ok = isinstance(data, list) and data and all({"description", "fingerprint", "severity", "location"} <= set(d)
                                                       for d in data)
    except ValueError:
        data, ok = None, False
    return verdict(bool(ok)), cmd, f"rc {rc}; {excerpt(json.dumps(data[:1]) if data else out, limit=250)}"


@check("4.5", 4, "one run gives the job page one summary (GITHUB_STEP_SUMMARY: one heading per run)")
def _(c):
    t = c.fresh({"k.py": LEGACY})
    summary = t / "summary.md"
    rc, out, err, cmd = c.tool(["--check", "--no-cache", "--format", "github", "--report", "sarif:cpasync.sarif", "."],
                               t, {"GITHUB_STEP_SUMMARY": str(summary)})
    heads = [ln for ln in summary.read_text().splitlines() if ln.startswith("## ")] if summary.exists() else []
    return verdict(len(heads) == 1), "GITHUB_STEP_SUMMARY=summary.md " + cmd + "  (the README's CI step)", \
        f"rc {rc}; headings in the summary: {heads}"


# ------------------------------------------------------------------ 5. SARIF

def _sarif(c, t, rel="."):
    rc, out, err, cmd = c.tool(["--check", "--no-cache", "--format", "sarif", rel], t)
    try:
        return rc, json.loads(out), cmd, err
    except ValueError:
        return rc, None, cmd, err


@check("5.1", 5, "SARIF fingerprints survive a re-layout (ruff format adding a trailing comma)")
def _(c):
    text = LEGACY.replace(OLD_CALL, 'T.ptx_cp_async(\n            "float16", S.data, tx * 8, A.data, tx * 8, 16\n        )')
    t = c.fresh({"k.py": text, "ruff.toml": "line-length = 60\n"})
    rc, s1, cmd, _ = _sarif(c, t)
    c.sh([os.path.join(BIN, "ruff"), "format", "k.py"], t)
    relaid = (t / "k.py").read_text() != text
    rc2, s2, _, _ = _sarif(c, t)
    fp = lambda s: [r.get("partialFingerprints") for r in s["runs"][0]["results"]] if s else None  # noqa: E731
    return verdict(relaid and fp(s1) == fp(s2) and fp(s1)), cmd + "; ruff format k.py; " + cmd, \
        f"re-laid out by ruff: {relaid}; fingerprints before {fp(s1)} after {fp(s2)}"


@check("5.2", 5, "SARIF artifact URIs are percent-encoded and the log validates against SARIF 2.1.0")
def _(c):
    import jsonschema

    t = c.fresh({"a b#1.py": LEGACY})
    rc, s, cmd, err = _sarif(c, t)
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in s["runs"][0]["results"]] if s else []
    schema = json.loads((Path(__file__).resolve().parent.parent / "tests" / "schemas" / "sarif-schema-2.1.0.json").read_text())
    try:
        jsonschema.validate(s, schema)
        valid = True
    except jsonschema.ValidationError as e:
        valid = f"invalid: {e.message[:100]}"
    return verdict(uris == ["a%20b%231.py"] and valid is True), cmd + "  (file 'a b#1.py')", f"uris {uris}; schema: {valid}"


@check("5.3", 5, "a file name that is not UTF-8 does not crash the SARIF report")
def _(c):
    t = c.fresh({})
    with open(os.path.join(os.fsencode(str(t)), b"k\xff.py"), "wb") as fh:
        fh.write(LEGACY.encode())
    rc, s, cmd, err = _sarif(c, t)
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in s["runs"][0]["results"]] if s else []
    return verdict(rc == 1 and uris == ["k%FF.py"]), cmd + "  (file b'k\\xff.py')", f"rc {rc}; uris {uris}; {excerpt(err, limit=150)}"


# ------------------------------------------------------------------ 6. -v

@check("6.1", 6, "-v says why each skipped path was skipped (gitignore, exclude, venv, size, NUL bytes, undecodable)")
def _(c):
    t = c.fresh({".gitignore": "ign.py\n", "ign.py": LEGACY, "gen/g.py": LEGACY, "env1/pyvenv.cfg": "",
                 "env1/x.py": LEGACY, "big.py": LEGACY + "#" + "x" * 3000 + "\n", "nul.py": LEGACY.encode() + b"\0\n",
                 "latin.py": LEGACY.encode() + b"# caf\xe9\n", "k.py": LEGACY})
    rc, out, err, cmd = c.tool(["--check", "-v", "--no-cache", "--max-file-size", "2000", "--exclude", "gen", "."], t)
    skipped = {ln.split(":")[0][len("skipped "):] for ln in err.splitlines() if ln.startswith("skipped ")}
    want = {"ign.py", "gen", "env1", "big.py", "nul.py", "latin.py"}
    got = want & skipped
    return verdict(got == want, partial=bool(got)), cmd, f"skipped lines for {sorted(got)}; none for {sorted(want - got)}"


@check("6.2", 6, "-v names paths as the findings do (x, not ./x)")
def _(c):
    t = c.fresh({"pkg/k.py": LEGACY, "pkg/plain.py": "x = 1\n"})
    rc, out, err, cmd = c.tool(["--check", "-v", "--no-cache", "./pkg"], t)
    named = [ln for ln in err.splitlines() if ln.startswith(("skipped", "processed"))]
    return verdict(bool(named) and not any(" ./" in ln for ln in named) and out.startswith("pkg/k.py:")), cmd, \
        excerpt(*named, out.splitlines()[0] if out else "")


# ------------------------------------------------------------------ 7. wording and exit codes

@check("7.1", 7, "an applied unsafe fix reads as applied in write mode (not the pending 'legacy ... migrate' wording)")
def _(c):
    t = c.fresh({"m.py": UNSAFE})
    rc, out, err, cmd = c.tool(["--no-cache", "--unsafe-fixes", "m.py"], t)
    lines = [ln for ln in (out + err).splitlines() if "m.py:" in ln]
    pending = [ln for ln in lines if "migrate to access pointers" in ln]
    return verdict(rc == 0 and not pending), cmd, f"rc {rc}; {excerpt(*lines, limit=300)}"


@check("7.2", 7, "JSON in --check does not say rewritten / applied: true while 0 files are written")
def _(c):
    t = c.fresh({"k.py": LEGACY})
    rc, out, err, cmd = c.tool(["--check", "--no-cache", "--format", "json", "."], t)
    d = json.loads(out)
    bad = [f for f in d["findings"] if f.get("status") == "rewritten" or (f.get("fix") or {}).get("applied") is True]
    st = [f.get("status") for f in d["findings"]]
    return verdict(not bad), cmd, f"statuses {st}; files_written {d['summary'].get('files_written')}"


@check("7.3", 7, "a path that does not exist is an error, not counted as scanned")
def _(c):
    t = c.fresh({"k.py": LEGACY})
    rc, out, err, cmd = c.tool(["--check", "--no-cache", "--format", "json", "missing.py", "k.py"], t)
    d = json.loads(out)
    return verdict(rc == 2 and d["summary"]["files_scanned"] == 1), cmd, \
        f"rc {rc}; files_scanned {d['summary']['files_scanned']}; errors {excerpt(json.dumps(d.get('errors')), limit=150)}"


@check("7.4", 7, "--target 9.9 is refused")
def _(c):
    t = c.fresh({"k.py": LEGACY})
    rc, out, err, cmd = c.tool(["--check", "--target", "9.9", "k.py"], t)
    return verdict(rc == 3), cmd, f"rc {rc}; {excerpt(err, limit=200)}"


@check("7.5", 7, "a file given twice under two spellings is reported once")
def _(c):
    t = c.fresh({"k.py": LEGACY})
    rc, out, err, cmd = c.tool(["--check", "--no-cache", "k.py", "./k.py"], t)
    n = sum(": CPA001" in ln for ln in out.splitlines())
    return verdict(n == 1), cmd, f"rc {rc}; CPA001 lines: {n}"


@check("7.6", 7, "the parse-error position is Python's")
def _(c):
    src = "import tilelang.language as T\nx = f(T.ptx_cp_async(1, 2\n"
    t = c.fresh({"bad.py": src})
    try:
        compile(src, "bad.py", "exec")
        want = None
    except SyntaxError as e:
        want = f"{e.lineno}:{e.offset}"
    rc, out, err, cmd = c.tool(["--check", "--no-cache", "bad.py"], t)
    m = re.search(r"bad\.py:(\d+:\d+): CPA900 cannot parse", out)
    got = m.group(1) if m else None
    return verdict(got == want), cmd, f"tool {got}, Python {want}; {excerpt(out, limit=150)}"


@check("7.7", 7, "a read-only folder says more than 'Permission denied'")
def _(c):
    if os.geteuid() == 0:
        return "not run", "(write mode in a chmod 555 folder)", "running as root: permission bits are not enforced"
    t = c.fresh({"ro/k.py": LEGACY})
    os.chmod(t / "ro", 0o555)
    try:
        rc, out, err, cmd = c.tool(["--no-cache", "ro/k.py"], t)
    finally:
        os.chmod(t / "ro", 0o755)
    text = out + err
    return verdict("ro" in text and "Permission denied" not in text.replace("permission denied", "")), cmd, excerpt(text, limit=200)


@check("7.8", 7, "the verifier's extent and byte-count messages state old and new the right way round")
def _(c):
    code = textwrap.dedent('''\
        import json, sys
        from cpasync_migrate.rules import load_rules
        from cpasync_migrate.verify.verifier import verify_source
        old = sys.stdin.read()
        call = 'T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)'
        new = ('T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation("float16"), S.data, tx * 8, {d}, 2), '
               'T.tvm_access_ptr(T.type_annotation("float16"), A.data, tx * 8, 8, 1), {n})')
        out = {}
        for name, d, n in (("short extent", 4, 16), ("fewer bytes", 8, 8)):
            [v] = verify_source(old, old.replace(call, new.format(d=d, n=n)), "k.py", rules=load_rules(), target="0.1.8")
            out[name] = [c["how"] for s in v.to_dict()["sites"] for c in s["checks"] if c["ok"] is False]
        print(json.dumps(out))
    ''')
    r = subprocess.run([PY, "-c", code], input=LEGACY, capture_output=True, text=True, env=c.env(), cwd=c.scratch)
    try:
        out = json.loads(r.stdout)
    except ValueError:
        return "not run", "python -c (verify_source on two pairs)", excerpt(r.stderr, limit=200)
    byte = " ".join(out["fewer bytes"])
    m = re.search(r"(\d+) vs (?:new )?(\d+) bytes", byte)
    right = m is not None and (m.group(1), m.group(2)) == ("16", "8")
    ext = " ".join(out["short extent"])
    return verdict(right and "4 x sizeof(float16) >= " in ext and "16 bytes" in ext), \
        "verify_source(old, new) on a pair whose dst extent is 4 (of 8) and one of 8 bytes (of 16)", \
        f"extent: {ext}; byte count: {byte}"


# ------------------------------------------------------------------ 8. flags ruff users reach for

@check("8.1", 8, "--exit-non-zero-on-fix: write mode exits 1 when it wrote a file")
def _(c):
    t = c.fresh({"k.py": LEGACY})
    rc, out, err, cmd = c.tool(["--no-cache", "--exit-non-zero-on-fix", "k.py"], t)
    return verdict(rc == 1 and (t / "k.py").read_text() != LEGACY), cmd, f"rc {rc}; written {(t / 'k.py').read_text() != LEGACY}"


@check("8.2", 8, "--line-length N lays rewritten code out within N")
def _(c):
    t = c.fresh({"k.py": LEGACY})
    rc, out, err, cmd = c.tool(["--no-cache", "--line-length", "60", "k.py"], t)
    old = set(LEGACY.splitlines())
    longest = max((len(x) for x in (t / "k.py").read_text().splitlines() if x not in old), default=0)
    return verdict(rc == 0 and longest <= 60), cmd, f"rc {rc}; longest rewritten line {longest}"


@check("8.3", 8, "--color {auto,always,never}")
def _(c):
    t = c.fresh({"k.py": LEGACY})
    a = c.tool(["--diff", "--no-cache", "--color", "always", "k.py"], t)
    n = c.tool(["--diff", "--no-cache", "--color", "never", "k.py"], t, {"FORCE_COLOR": "1"})
    esc = "\x1b[" in a[1] + a[2]
    none = "\x1b[" not in n[1] + n[2]
    return verdict(esc and none), a[3] + "; " + n[3] + " (FORCE_COLOR=1)", f"ANSI with always: {esc}; none with never: {none}"


@check("8.4", 8, "per-file-ignores in [tool.cpasync-migrate]")
def _(c):
    t = c.fresh({"pyproject.toml": '[tool.cpasync-migrate.per-file-ignores]\n"tests/*" = ["CPA001"]\n',
                 "tests/k.py": LEGACY, "k.py": LEGACY})
    rc, out, err, cmd = c.tool(["--check", "--no-cache", "."], t)
    listed = sorted({ln.split(":")[0] for ln in out.splitlines() if ": CPA001" in ln})
    return verdict(listed == ["k.py"]), cmd, f"rc {rc}; CPA001 in {listed}"


@check("8.5", 8, "--config KEY=VALUE")
def _(c):
    t = c.fresh({"k.py": LEGACY})
    rc, out, err, cmd = c.tool(["--check", "--no-cache", "--config", 'select = ["CPA002"]', "k.py"], t)
    bad = c.tool(["--check", "--no-cache", "--config", "nosuchkey = 1", "k.py"], t)
    return verdict(rc == 0 and "CPA001" not in out and bad[0] == 3), cmd + "; ... --config 'nosuchkey = 1'", \
        f"rc {rc} (CPA001 deselected: {'CPA001' not in out}); unknown key rc {bad[0]}: {excerpt(bad[2], limit=120)}"


@check("8.6", 8, "cpasync-migrate rule CODE prints the code's page")
def _(c):
    rc, out, err, cmd = c.tool(["rule", "CPA001"], c.scratch)
    return verdict(rc == 0 and "CPA001" in out and len(out) > 200), cmd, f"rc {rc}; {excerpt(out.splitlines()[0] if out else err, limit=120)}"


@check("8.7", 8, "--show-settings PATH")
def _(c):
    t = c.fresh({"k.py": LEGACY, "pyproject.toml": '[tool.cpasync-migrate]\nline-length = 100\n'})
    rc, out, err, cmd = c.tool(["--show-settings", "k.py"], t)
    return verdict(rc == 0 and "Settings path" in out and "line-length = 100" in out), cmd, excerpt(*out.splitlines()[:4])


@check("8.8", 8, "no option abbreviations (--chec is refused)")
def _(c):
    t = c.fresh({"k.py": LEGACY})
    rc, out, err, cmd = c.tool(["--chec", "k.py"], t)
    return verdict(rc == 3 and (t / "k.py").read_text() == LEGACY), cmd, f"rc {rc}; {excerpt(err.splitlines()[-1] if err else '', limit=150)}"


# ------------------------------------------------------------------ 9. suppressions

@check("9.1", 9, "a marker inside a string on the site's line does not suppress (only comments do)")
def _(c):
    text = LEGACY.replace(OLD_CALL, 'x = "# cpasync-migrate: ignore"; ' + OLD_CALL)
    t = c.fresh({"k.py": text})
    rc, out, err, cmd = c.tool(["--check", "--no-cache", "k.py"], t)
    return verdict(rc == 1 and ": CPA001" in out), cmd, f"rc {rc}; {excerpt(out, limit=150)}"


@check("9.2", 9, "an unused suppression is reported in a file that does not name the intrinsic")
def _(c):
    t = c.fresh({"k.py": "x = 1  # cpasync-migrate: ignore\n"})
    rc, out, err, cmd = c.tool(["--check", "--no-cache", "k.py"], t)
    return verdict("CPA010" in out), cmd, f"rc {rc}; {excerpt(out, limit=150)}"


@check("9.3", 9, "a range form (off ... on)")
def _(c):
    text = LEGACY.replace("        " + OLD_CALL, "        # cpasync-migrate: off\n        " + OLD_CALL + "\n        # cpasync-migrate: on")
    t = c.fresh({"k.py": text})
    rc, out, err, cmd = c.tool(["--check", "--no-cache", "k.py"], t)
    return verdict(rc == 0 and "CPA001" not in out), cmd, f"rc {rc}; {excerpt(out, err.splitlines()[0] if err else '', limit=150)}"


# ------------------------------------------------------------------ 10. pre-commit

@check("10.1", 10, "the pre-commit snippet works as written (no rev: v0.1.0; a commit id or a local hook)")
def _(c):
    root = Path(c.tree)
    docs = "".join(p.read_text(errors="replace") for p in [root / "README.md", *(root / "docs").glob("*.md")])
    bad_rev = "rev: v0.1.0" in docs
    hooks = (root / ".pre-commit-hooks.yaml").read_text() if (root / ".pre-commit-hooks.yaml").exists() else ""
    ids = re.findall(r"^- id: (\S+)", hooks, re.M)
    local = re.search(r"repo: local.*?entry: ([^\n]+)", docs, re.S)
    entry = local.group(1).strip() if local else None
    t = c.fresh({"k.py": LEGACY})
    ran = c.tool(shlex.split(entry)[1:] + ["k.py"], t) if entry and entry.startswith("cpasync-migrate") else None
    ok = not bad_rev and ids and ran is not None and ran[0] == 1
    return ("held" if ok else "diverging"), \
        "grep 'rev:' README.md docs/*.md; .pre-commit-hooks.yaml ids; the local hook's entry run on a legacy file", \
        f"rev: v0.1.0 present: {bad_rev}; hook ids {ids}; local entry {entry!r} rc {ran[0] if ran else None} " \
        "(pre-commit itself is not installed here)"


# ------------------------------------------------------------------ 11. the test command

@check("11.2", 11, "slow suites behind a marker the default run leaves out, run by .ci/run")
def _(c):
    root = Path(c.tree)
    py = (root / "pyproject.toml").read_text()
    ci = (root / ".ci" / "run").read_text() if (root / ".ci" / "run").exists() else ""
    ok = '"-m", "not slow"' in py and "-m slow" in ci
    return verdict(ok), "grep addopts pyproject.toml; grep -- '-m slow' .ci/run", \
        f"addopts not slow: {'not slow' in py}; .ci/run runs -m slow: {'-m slow' in ci}"


def main(argv):
    tree = argv[1]
    out_json = argv[argv.index("--json") + 1] if "--json" in argv else None
    scratch = tempfile.mkdtemp(prefix="ci-conventions-")
    rows = []
    try:
        c = Ctx(tree, scratch)
        for cid, item, what, fn in CHECKS:
            try:
                v, cmd, ex = fn(c)
            except Exception as e:  # noqa: BLE001 - a check that cannot run says so
                v, cmd, ex = "not run", "", f"{type(e).__name__}: {e}"
            rows.append({"id": cid, "item": item, "convention": what, "verdict": v, "command": cmd, "excerpt": ex})
            print(f"{cid:5} {v:9} {what}\n      $ {cmd}\n      {ex}\n", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if out_json:
        Path(out_json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main(sys.argv)
