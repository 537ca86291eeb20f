#!/usr/bin/env bash
# Build the virtual environments that tests/test_realtl.py lowers kernels in:
# one per TileLang release, each with the CPU build of torch installed first.
#
#   scripts/realtl_setup.sh            # all three environments
#   scripts/realtl_setup.sh legacy     # only some of them: legacy, v018, latest
#
# Environments live in $CPASYNC_REALTL_DIR (default ~/.cache/cpasync-migrate/realtl):
#   tl-0.1.7.post1/   legacy API (offset form)         + apache-tvm-ffi 0.1.7
#   tl-0.1.8/         access pointers, size in bytes   + apache-tvm-ffi 0.1.8.post2
#   tl-latest/        access pointers, num_elems       (first pair in LATEST_CANDIDATES that imports)
# An environment is complete when it holds the file .ready (written after its
# import check passed); complete ones are skipped, so a second run is quick.
# Interpreter: $CPASYNC_REALTL_PYTHON (default python3.11, else python3).
# CPASYNC_REALTL_LATEST="0.1.9 0.1.10" makes tl-latest that TileLang/FFI pair.
set -euo pipefail

ROOT="${CPASYNC_REALTL_DIR:-$HOME/.cache/cpasync-migrate/realtl}"
PY="${CPASYNC_REALTL_PYTHON:-$(command -v python3.11 || command -v python3)}"
TORCH_PIN="torch==2.13.0"

LEGACY_TL="0.1.7.post1"
LEGACY_FFI="0.1.7"
V018_TL="0.1.8"
V018_FFI="0.1.8.post2"
# Newest first: "tilelang apache-tvm-ffi".  The FFI pin is the release closest
# to the TileLang release that its own metadata admits (0.1.13 to 0.1.15 ask
# for apache-tvm-ffi>=0.1.11,<0.1.13, so the same-month FFI release is not
# installable beside them); for 0.1.9 it is the release of the same month.
LATEST_CANDIDATES=(
  "0.1.15 0.1.12"
  "0.1.14 0.1.12"
  "0.1.13 0.1.12"
  "0.1.12 0.1.11"
  "0.1.9 0.1.10"
)
# CPASYNC_REALTL_LATEST="TILELANG FFI" pins tl-latest to one pair instead.
if [[ -n "${CPASYNC_REALTL_LATEST:-}" ]]; then
  LATEST_CANDIDATES=("$CPASYNC_REALTL_LATEST")
fi

mkdir -p "$ROOT"
log() { printf '[realtl_setup] %s\n' "$*" >&2; }
# pip, quiet, without the notes about this machine's absent local indexes.
pip_install() {
  local py="$1"; shift
  "$py" -m pip install --quiet --disable-pip-version-check "$@" \
    2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
}

# A libcuda.so.1 whose every driver entry point answers CUDA_ERROR_NO_DEVICE.
# TileLang 0.1.7.post1's libraries are linked against libcuda.so.1; lowering
# never calls into it, it only has to resolve.  The symbol list is read off
# the libraries themselves (their undefined cu* symbols).
build_stub_libcuda() {
  local venv="$1" site stubdir src syms
  site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  stubdir="$venv/stub-libcuda"
  mkdir -p "$stubdir"
  syms="$(find "$site/tilelang" "$site/tvm_ffi" -name '*.so*' -type f 2>/dev/null \
          | xargs -r nm -D --undefined-only 2>/dev/null \
          | awk '{print $NF}' | sed 's/@.*//' | grep -E '^cu[A-Z][A-Za-z0-9_]*$' | sort -u || true)"
  # Drop the runtime/NVRTC entry points the nvidia wheels provide.
  syms="$(printf '%s\n' $syms | grep -Ev '^(cuda|nvrtc)' || true)"
  src="$stubdir/stub.c"
  {
    echo '/* Stub driver library: no device. */'
    echo 'typedef int CUresult;'
    echo '#define CUDA_ERROR_NO_DEVICE 100'
    for s in cuInit cuDriverGetVersion cuDeviceGetCount cuGetProcAddress cuGetProcAddress_v2 $syms; do
      echo "CUresult $s(void) { return CUDA_ERROR_NO_DEVICE; }"
    done | sort -u
  } > "$src"
  gcc -shared -fPIC -O1 -Wl,-soname,libcuda.so.1 -o "$stubdir/libcuda.so.1" "$src"
  ln -sf libcuda.so.1 "$stubdir/libcuda.so"
  log "stub libcuda.so.1 with $(grep -c '^CUresult' "$src") entry points in $stubdir"
}

# Write the activation helper every caller uses: sets LD_LIBRARY_PATH to the
# CUDA runtime/NVRTC wheels and the stub driver, then execs the venv's python.
write_runner() {
  local venv="$1" site
  site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  cat > "$venv/run-python" <<EOF
#!/usr/bin/env bash
# Runs this environment's python with the CUDA libraries TileLang links against.
LIBS="$site/nvidia/cuda_runtime/lib:$site/nvidia/cuda_nvrtc/lib:$venv/stub-libcuda"
export LD_LIBRARY_PATH="\$LIBS\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export CUDA_VISIBLE_DEVICES=""
export TILELANG_CACHE_DIR="${venv}/tilelang-cache"
exec "$venv/bin/python" "\$@"
EOF
  chmod +x "$venv/run-python"
}

import_check() {
  local venv="$1"
  "$venv/run-python" -c 'import tilelang, tvm, tvm_ffi; print(tilelang.__version__, tvm_ffi.__version__)'
}

# make_env NAME TILELANG_VERSION FFI_VERSION [cuda-wheels]
make_env() {
  local name="$1" tl="$2" ffi="$3" cuda="${4:-}" venv="$ROOT/$1"
  if [[ -f "$venv/.ready" ]]; then
    log "$name: ready ($(cat "$venv/.ready")), skipped"
    return 0
  fi
  log "$name: creating with tilelang==$tl apache-tvm-ffi==$ffi"
  rm -rf "$venv"
  "$PY" -m venv "$venv"
  if ! pip_install "$venv/bin/python" "$TORCH_PIN"; then
    log "$name: installing $TORCH_PIN failed"; return 1
  fi
  local extra=()
  if [[ -n "$cuda" ]]; then
    extra=(nvidia-cuda-runtime-cu12 nvidia-cuda-nvrtc-cu12)
  fi
  # torch stays at the pinned CPU build: pass it again so no resolver step replaces it.
  if ! pip_install "$venv/bin/python" "$TORCH_PIN" "tilelang==$tl" "apache-tvm-ffi==$ffi" "${extra[@]}"; then
    log "$name: installing tilelang==$tl apache-tvm-ffi==$ffi failed"; return 1
  fi
  mkdir -p "$venv/stub-libcuda"
  if [[ -n "$cuda" ]]; then
    build_stub_libcuda "$venv"
  fi
  write_runner "$venv"
  local got
  if ! got="$(import_check "$venv" 2>&1 | tail -n 1)"; then
    log "$name: import check failed: $got"
    return 1
  fi
  echo "tilelang==$tl apache-tvm-ffi==$ffi ($got)" > "$venv/.ready"
  log "$name: ready ($got)"
}

make_latest() {
  local venv="$ROOT/tl-latest" pair tl ffi
  if [[ -f "$venv/.ready" ]]; then
    log "tl-latest: ready ($(cat "$venv/.ready")), skipped"
    return 0
  fi
  for pair in "${LATEST_CANDIDATES[@]}"; do
    read -r tl ffi <<<"$pair"
    if make_env tl-latest "$tl" "$ffi"; then
      return 0
    fi
    log "tl-latest: tilelang==$tl does not import here, trying an older release"
  done
  log "tl-latest: no candidate imported"
  return 1
}

want=("$@")
[[ ${#want[@]} -eq 0 ]] && want=(legacy v018 latest)
start=$SECONDS
for w in "${want[@]}"; do
  case "$w" in
    legacy) make_env "tl-$LEGACY_TL" "$LEGACY_TL" "$LEGACY_FFI" cuda ;;
    v018)   make_env "tl-$V018_TL" "$V018_TL" "$V018_FFI" ;;
    latest) make_latest ;;
    *) log "unknown environment '$w' (legacy, v018, latest)"; exit 2 ;;
  esac
done
log "done in $((SECONDS - start)) s; environments under $ROOT"
