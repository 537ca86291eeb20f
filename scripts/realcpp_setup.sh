#!/usr/bin/env bash
# Fetch what the opt-in real-source check (tests/test_realcpp.py) needs:
#   - the tilelang 0.1.7.post1 wheel (legacy C++ sources and TVM's headers),
#   - the tilelang 0.1.8 wheel (upstream's own migration, for comparison),
#   - the apache-tvm-ffi 0.1.7 wheel (tvm/ffi headers),
#   - the tilelang 0.1.15 wheel (a tirx-era TVM: headers and the legacy passes it still carries),
#   - the apache-tvm-ffi 0.1.11 wheel (tvm/ffi headers that 0.1.15's TVM compiles with; 0.1.12 does not),
#   - Debian's libdmlc-dev (dmlc headers TVM includes),
#   - where a bare git mirror of tile-ai/tilelang is at $CPASYNC_TILELANG_MIRROR (default
#     /work/.mirror/tile-ai+tilelang/repo): upstream's last legacy revision (6fd0bd31f^, the parent of
#     PR #1590) and PR #1590's own result (6fd0bd31f), their src/ and tilelang/ folders (the TVM
#     submodule is not in a mirror: they compile against the 0.1.7.post1 wheel's TVM headers),
#   - where a mirror of the fork xwhzz/tilelang is at $CPASYNC_FORK_MIRROR (default
#     /work/.mirror/xwhzz+tilelang/repo): two of its branches still on the legacy layout, `cost`
#     (95fc5a0f) and `minference` (31a9676f), their src/ and tilelang/ folders,
#   - where a mirror of the fork tile-ai/tilescale is at $CPASYNC_TILESCALE_MIRROR (default
#     /work/.mirror/tile-ai+tilescale/repo): its main branch as of 4704282a (March 2026), still on the
#     legacy layout, CuTeDSL backend included, its src/ and tilelang/ folders.
# Wheels are downloaded, never installed, and unpacked under
# $CPASYNC_REALCPP_CACHE (default ~/.cache/cpasync-migrate/realcpp).
set -euo pipefail

CACHE="${CPASYNC_REALCPP_CACHE:-$HOME/.cache/cpasync-migrate/realcpp}"
PY="${PYTHON:-python3}"
mkdir -p "$CACHE/wheels"

fetch() {  # fetch SPEC GLOB DIR PREFIX...   (unpacks only members under the prefixes)
  local spec="$1" glob="$2" dir="$3"
  shift 3
  if [ -f "$CACHE/$dir/.unpacked" ]; then
    return 0
  fi
  if ! ls "$CACHE"/wheels/$glob >/dev/null 2>&1; then
    "$PY" -m pip download --quiet --no-deps --only-binary=:all: \
      --python-version 3.11 \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      "$spec" -d "$CACHE/wheels"
  fi
  rm -rf "${CACHE:?}/$dir"
  mkdir -p "$CACHE/$dir"
  "$PY" - "$(ls "$CACHE"/wheels/$glob | head -n1)" "$CACHE/$dir" "$@" <<'PYEOF'
import sys, zipfile
wheel, dest, prefixes = sys.argv[1], sys.argv[2], tuple(sys.argv[3:])
with zipfile.ZipFile(wheel) as z:
    z.extractall(dest, [n for n in z.namelist() if n.startswith(prefixes)])
PYEOF
  touch "$CACHE/$dir/.unpacked"
}

TVM=tilelang/3rdparty/tvm
fetch "tilelang==0.1.7.post1" "tilelang-0.1.7.post1-*.whl" tl017 \
  tilelang/src/ $TVM/include/ $TVM/src/ $TVM/3rdparty/dlpack/include/ tilelang/3rdparty/cutlass/include/
fetch "tilelang==0.1.8" "tilelang-0.1.8-*.whl" tl018 tilelang/src/
fetch "apache-tvm-ffi==0.1.7" "apache_tvm_ffi-0.1.7-*.whl" tvmffi tvm_ffi/include/
fetch "tilelang==0.1.15" "tilelang-0.1.15-*.whl" tl015 \
  tilelang/src/ $TVM/include/ $TVM/src/ tilelang/3rdparty/cutlass/include/
fetch "apache-tvm-ffi==0.1.11" "apache_tvm_ffi-0.1.11-*.whl" tvmffi011 tvm_ffi/include/

MIRROR="${CPASYNC_TILELANG_MIRROR:-/work/.mirror/tile-ai+tilelang/repo}"
export_rev() {  # export_rev MIRROR REV DIR: the revision's src/ and tilelang/ from a bare mirror, once
  local mirror="$1" rev="$2" dir="$3"
  if [ -f "$CACHE/$dir/.unpacked" ] || [ ! -f "$mirror/HEAD" ]; then
    return 0
  fi
  rm -rf "${CACHE:?}/$dir"
  mkdir -p "$CACHE/$dir"
  git -C "$mirror" archive "$rev" src tilelang | tar -x -C "$CACHE/$dir"
  touch "$CACHE/$dir/.unpacked"
}
export_rev "$MIRROR" "6fd0bd31f^" tl-legacy-6fd0bd31f
export_rev "$MIRROR" "6fd0bd31f" tl-pr1590
FORK_MIRROR="${CPASYNC_FORK_MIRROR:-/work/.mirror/xwhzz+tilelang/repo}"
export_rev "$FORK_MIRROR" 95fc5a0f fork-xwhzz-cost
export_rev "$FORK_MIRROR" 31a9676f fork-xwhzz-minference
TILESCALE_MIRROR="${CPASYNC_TILESCALE_MIRROR:-/work/.mirror/tile-ai+tilescale/repo}"
export_rev "$TILESCALE_MIRROR" 4704282a fork-tilescale-main

if [ ! -f /usr/include/dmlc/logging.h ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get install -y -q libdmlc-dev >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q libdmlc-dev >/dev/null; }
  else
    echo "libdmlc-dev is missing: run 'sudo apt-get install -y libdmlc-dev'" >&2
    exit 1
  fi
fi
command -v g++ >/dev/null || { echo "g++ is missing" >&2; exit 1; }
echo "$CACHE"
