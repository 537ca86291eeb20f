#!/usr/bin/env bash
# Fetch what the opt-in whole-package check (tests/test_realwheel.py) needs: the realcpp cache
# (scripts/realcpp_setup.sh: the tilelang 0.1.7.post1 wheel, downloaded with `pip download --no-deps`
# or reused, its TVM headers, tvm-ffi's, libdmlc-dev), and the wheel's whole `tilelang` package
# (Python, src/, contrib/cutedsl; not 3rdparty/ or the compiled lib/) unpacked under
# $CPASYNC_REALCPP_CACHE/tl017pkg.  Prints the cache folder.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
CACHE="$(bash "$here/realcpp_setup.sh" | tail -n1)"
PY="${PYTHON:-python3}"
dest="$CACHE/tl017pkg"
if [ ! -f "$dest/.unpacked" ]; then
  rm -rf "${dest:?}"
  mkdir -p "$dest"
  "$PY" - "$(ls "$CACHE"/wheels/tilelang-0.1.7.post1-*.whl | head -n1)" "$dest" <<'PYEOF'
import sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    z.extractall(dest, [n for n in z.namelist()
                        if n.startswith("tilelang/") and not n.startswith(("tilelang/3rdparty/", "tilelang/lib/"))])
PYEOF
  touch "$dest/.unpacked"
fi
echo "$CACHE"
