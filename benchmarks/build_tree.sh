#!/usr/bin/env bash
# Build the large real tree for benchmarks/check_bench.py, and install the
# tools it compares against.  Idempotent: a second run reuses what is there.
#
#   benchmarks/build_tree.sh            # tree under ~/.cache/cpasync-migrate/bench-tree
#   CPASYNC_BENCH_CACHE=/data/bench benchmarks/build_tree.sh
#
# What it does:
#   - `pip download --no-deps` the tilelang 0.1.7.post1 and 0.1.8 wheels and
#     the apache-tvm wheel (only the package index is reached);
#   - unpacks their source files (the suffixes cpasync-migrate examines:
#     .py .pyi .cc .cpp .cxx .h .hpp .cu .cuh) into $CACHE/tree/<wheel>/,
#     leaving out shared libraries and everything else;
#   - installs Debian's ripgrep (apt-get update once) and PyPI's ast-grep-cli
#     into a virtual environment at $CACHE/tools-venv;
#   - prints the tree's file count, line count, bytes and the number of
#     files that contain `ptx_cp_async`, and writes them to $CACHE/tree-stats.json;
#   - builds a second tree, $CACHE/tree-tl-tvm, of hard links to the same files
#     less the vendored CUTLASS and composable_kernel folders: TileLang's and
#     TVM's own sources, the composition the speed targets were set on (about 4,800 files
#     and 1.6 million lines there);
#   - builds $CACHE/tree-git from git: TileLang at the pinned HEAD (its testing/ and
#     examples/ call the access-pointer form), TileLang at the last legacy revision
#     (6fd0bd31f^, the parent of upstream PR #1590) and apache TVM at a pinned revision,
#     each `git archive`d and cut to the same source suffixes.  TILELANG_GIT and TVM_GIT
#     name local clones or mirrors that hold those revisions (default: bare clones into
#     $CACHE/git from GitHub).  Nothing of those repositories is kept in this project.
#
# The last line of output is the (full) tree's path.
set -euo pipefail

CACHE="${CPASYNC_BENCH_CACHE:-$HOME/.cache/cpasync-migrate/bench-tree}"
PY="${PYTHON:-python3}"
TVM_VERSION="${APACHE_TVM_VERSION:-0.27.0.post1}"
AST_GREP_VERSION="${AST_GREP_VERSION:-}"   # empty: the newest on the index

mkdir -p "$CACHE/wheels"
TREE="$CACHE/tree"

log() { echo "build_tree: $*" >&2; }

# ---------------------------------------------------------------- tools
if ! command -v rg >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
  log "installing ripgrep (Debian package)"
  $SUDO apt-get update -q >/dev/null
  $SUDO apt-get install -y -q ripgrep >/dev/null
fi

if [ ! -x "$CACHE/tools-venv/bin/ast-grep" ]; then
  log "installing ast-grep-cli into $CACHE/tools-venv"
  "$PY" -m venv "$CACHE/tools-venv"
  "$CACHE/tools-venv/bin/pip" install -q "ast-grep-cli${AST_GREP_VERSION:+==$AST_GREP_VERSION}"
fi

# ---------------------------------------------------------------- wheels
fetch() {  # fetch SPEC GLOB
  local spec="$1" glob="$2"
  if ! compgen -G "$CACHE/wheels/$glob" >/dev/null; then
    log "downloading $spec"
    "$PY" -m pip download --quiet --no-deps --only-binary=:all: "$spec" -d "$CACHE/wheels"
  fi
}
fetch "tilelang==0.1.7.post1" "tilelang-0.1.7.post1-*.whl"
fetch "tilelang==0.1.8" "tilelang-0.1.8-*.whl"
fetch "apache-tvm==$TVM_VERSION" "apache_tvm-$TVM_VERSION-*.whl"

# ---------------------------------------------------------------- unpack
STAMP="$TREE/.complete-$TVM_VERSION"
if [ ! -f "$STAMP" ]; then
  log "unpacking source files into $TREE"
  rm -rf "${TREE:?}"
  mkdir -p "$TREE"
  "$PY" - "$CACHE/wheels" "$TREE" "$TVM_VERSION" <<'PYEOF'
import glob, os, sys, zipfile
wheels, tree, tvm = sys.argv[1:4]
SUFFIXES = (".py", ".pyi", ".cc", ".cpp", ".cxx", ".h", ".hpp", ".cu", ".cuh")
parts = [("tilelang-0.1.7.post1", "tilelang-0.1.7.post1-*.whl"),
         ("tilelang-0.1.8", "tilelang-0.1.8-*.whl"),
         (f"apache-tvm-{tvm}", f"apache_tvm-{tvm}-*.whl")]
for name, pattern in parts:
    (wheel,) = sorted(glob.glob(os.path.join(wheels, pattern)))[:1]
    dest = os.path.join(tree, name)
    with zipfile.ZipFile(wheel) as z:
        members = [m for m in z.namelist() if m.endswith(SUFFIXES) and ".dist-info/" not in m]
        z.extractall(dest, members)
PYEOF
  touch "$STAMP"
fi

# ---------------------------------------------------------------- stats
"$PY" - "$TREE" "$CACHE/tree-stats.json" <<'PYEOF'
import json, os, sys
tree, out = sys.argv[1:3]
stats = {"tree": tree, "parts": {}}
total = {"files": 0, "lines": 0, "bytes": 0, "files_with_ptx_cp_async": 0, "python_files": 0, "cpp_files": 0}
for part in sorted(os.listdir(tree)):
    top = os.path.join(tree, part)
    if not os.path.isdir(top):
        continue
    s = dict.fromkeys(total, 0)
    for d, _, names in os.walk(top):
        for n in names:
            with open(os.path.join(d, n), "rb") as fh:
                data = fh.read()
            s["files"] += 1
            s["lines"] += data.count(b"\n")
            s["bytes"] += len(data)
            s["files_with_ptx_cp_async"] += b"ptx_cp_async" in data
            s["python_files" if n.endswith((".py", ".pyi")) else "cpp_files"] += 1
    stats["parts"][part] = s
    for k in total:
        total[k] += s[k]
stats["total"] = total
with open(out, "w") as fh:
    json.dump(stats, fh, indent=1)
for part, s in list(stats["parts"].items()) + [("total", total)]:
    print(f"{part:28} {s['files']:6d} files ({s['python_files']} Python, {s['cpp_files']} C++) "
          f"{s['lines']:9d} lines {s['bytes'] / 1e6:7.1f} MB  {s['files_with_ptx_cp_async']:3d} contain ptx_cp_async",
          file=sys.stderr)
PYEOF
# ---------------------------------------------------------------- TileLang + TVM only
SMALL="$CACHE/tree-tl-tvm"
if [ ! -f "$SMALL/.complete-$TVM_VERSION" ]; then
  log "linking TileLang's and TVM's own sources into $SMALL (no vendored CUTLASS / composable_kernel)"
  rm -rf "${SMALL:?}"
  "$PY" - "$TREE" "$SMALL" <<'PYEOF'
import os, shutil, sys
src, dst = sys.argv[1:3]
for d, dirs, names in os.walk(src):
    dirs[:] = [x for x in dirs if x not in ("cutlass", "composable_kernel")]
    out = os.path.join(dst, os.path.relpath(d, src))
    os.makedirs(out, exist_ok=True)
    for n in names:
        if n.startswith(".complete"):
            continue
        try:
            os.link(os.path.join(d, n), os.path.join(out, n))
        except OSError:
            shutil.copy2(os.path.join(d, n), os.path.join(out, n))
PYEOF
  touch "$SMALL/.complete-$TVM_VERSION"
fi
# ---------------------------------------------------------------- TileLang + TVM from git
# Pinned revisions (issue 18 §2): TileLang's HEAD when this tree was introduced, its last
# legacy revision (the parent of 6fd0bd31f, PR #1590), and apache TVM's HEAD of the same day.
TILELANG_HEAD_REV="${TILELANG_HEAD_REV:-a35008a42531c62b976ae4cec3855d4383db0f3c}"
TILELANG_LEGACY_REV="${TILELANG_LEGACY_REV:-d6eb5d3d4c5101ed7f5e1eae9e3e769861d1f50e}"
TVM_GIT_REV="${TVM_GIT_REV:-5d4dc8721307cf9677becacf0395c19be130e206}"
GIT_TREE="$CACHE/tree-git"
GIT_STAMP="$GIT_TREE/.complete-${TILELANG_HEAD_REV:0:9}-${TILELANG_LEGACY_REV:0:9}-${TVM_GIT_REV:0:9}"
if [ ! -f "$GIT_STAMP" ]; then
  repo_for() {  # repo_for VAR URL NAME: a git directory that holds the revisions
    local given="$1" url="$2" name="$3"
    if [ -n "$given" ]; then echo "$given"; return; fi
    if [ ! -d "$CACHE/git/$name.git" ]; then
      log "cloning $url (bare) into $CACHE/git/$name.git"
      mkdir -p "$CACHE/git"
      git clone -q --bare "$url" "$CACHE/git/$name.git"
    fi
    echo "$CACHE/git/$name.git"
  }
  TL_GIT="$(repo_for "${TILELANG_GIT:-}" https://github.com/tile-ai/tilelang.git tilelang)"
  TV_GIT="$(repo_for "${TVM_GIT:-}" https://github.com/apache/tvm.git tvm)"
  log "archiving TileLang ${TILELANG_HEAD_REV:0:9} and ${TILELANG_LEGACY_REV:0:9}, TVM ${TVM_GIT_REV:0:9} into $GIT_TREE"
  rm -rf "${GIT_TREE:?}"
  mkdir -p "$GIT_TREE"
  for spec in "tilelang-${TILELANG_HEAD_REV:0:9}:$TL_GIT:$TILELANG_HEAD_REV" \
              "tilelang-${TILELANG_LEGACY_REV:0:9}:$TL_GIT:$TILELANG_LEGACY_REV" \
              "tvm-${TVM_GIT_REV:0:9}:$TV_GIT:$TVM_GIT_REV"; do
    IFS=: read -r name repo rev <<<"$spec"
    mkdir -p "$GIT_TREE/$name"
    git -C "$repo" archive "$rev" | tar -x -C "$GIT_TREE/$name"
  done
  # the suffixes the tool examines, as in the wheel tree (submodules are not in an archive)
  find "$GIT_TREE" -type f ! \( -name '*.py' -o -name '*.pyi' -o -name '*.cc' -o -name '*.cpp' -o -name '*.cxx' \
       -o -name '*.h' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' \) -delete
  find "$GIT_TREE" -type l -delete
  touch "$GIT_STAMP"
fi
"$PY" - "$GIT_TREE" <<'PYEOF'
import os, sys
tree = sys.argv[1]
for part in sorted(os.listdir(tree)):
    top = os.path.join(tree, part)
    if not os.path.isdir(top):
        continue
    f = py = ln = b = hit = 0
    for d, _, names in os.walk(top):
        for n in names:
            data = open(os.path.join(d, n), "rb").read()
            f += 1; py += n.endswith((".py", ".pyi")); ln += data.count(b"\n"); b += len(data)
            hit += b"ptx_cp_async" in data
    print(f"{part:28} {f:6d} files ({py} Python, {f - py} C++) {ln:9d} lines {b / 1e6:7.1f} MB  {hit:3d} contain ptx_cp_async",
          file=sys.stderr)
PYEOF

log "rg $(rg --version | head -n1 | cut -d' ' -f2), ast-grep $("$CACHE/tools-venv/bin/ast-grep" --version | cut -d' ' -f2)"
echo "$TREE"
