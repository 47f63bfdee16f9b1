#!/usr/bin/env bash
# One version number everywhere: CMake's project(VERSION) against the public header's macros,
# libbertrt.so's file name and SONAME, bertrt_version() (through Python), `bertrt --version`,
# `bertrt-convert --version`, the Python module's __version__, pkg-config and find_package files,
# the CPack package file name and CHANGELOG.md's newest release heading. --version also names
# the git commit (a build from a git checkout), the backends built in and the cpu kernels, which
# must be those `bertrt bench` reports running.
# Usage: version_test.sh SOURCE_DIR BUILD_DIR BERTRT BERTRT_CONVERT LIBBERTRT_SO PYTHON VULKAN(ON/OFF)
set -uo pipefail
SRC=$1 BUILD=$2 BIN=$3 CONV=$4 LIB=$5 PY=$6 VULKAN=$7
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
same() { [ "$2" = "$3" ] && ok || bad "$1: '$2', expected '$3'"; }

V=$(sed -n 's/^project(bertrt VERSION \([0-9]*\.[0-9]*\.[0-9]*\).*/\1/p' "$SRC/CMakeLists.txt")
[[ $V =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] && ok || { echo "no project(bertrt VERSION X.Y.Z) in CMakeLists.txt"; exit 1; }
MAJOR=${V%%.*} REST=${V#*.}
MINOR=${REST%%.*} PATCH=${REST#*.}

# The header (CMake refuses to configure otherwise; checked here too, in words).
h() { sed -n "s/^#define BERTRT_VERSION_$1 \(.*\)$/\1/p" "$SRC/include/bertrt/bertrt.h"; }
same "bertrt.h BERTRT_VERSION_MAJOR" "$(h MAJOR)" "$MAJOR"
same "bertrt.h BERTRT_VERSION_MINOR" "$(h MINOR)" "$MINOR"
same "bertrt.h BERTRT_VERSION_PATCH" "$(h PATCH)" "$PATCH"
same "bertrt.h BERTRT_VERSION_STRING" "$(h STRING)" "\"$V\""

# The shared library: its real name carries the version, its SONAME the major version only (the
# ABI is stable within a major version).
[ -f "$(dirname "$LIB")/libbertrt.so.$V" ] && ok || bad "no libbertrt.so.$V beside $LIB: $(ls "$(dirname "$LIB")" | grep libbertrt)"
soname=$(readelf -d "$LIB" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
same "SONAME" "$soname" "libbertrt.so.$MAJOR"

# bertrt --version and bertrt-convert --version: the same text but the program's name.
"$BIN" --version > "$T/v1" 2> "$T/err" && ok || bad "bertrt --version: $(cat "$T/err")"
"$CONV" --version > "$T/v2" 2> "$T/err" && ok || bad "bertrt-convert --version: $(cat "$T/err")"
first=$(head -1 "$T/v1")
if git -C "$SRC" rev-parse --show-toplevel > /dev/null 2>&1; then
  # A checkout: the commit the build saw (ctest may run after a later commit: any commit of the
  # repository, abbreviated).
  [[ $first =~ ^bertrt\ $V\ \(commit\ ([0-9a-f]{7,40})\)$ ]] && ok || bad "bertrt --version line 1: '$first'"
  commit=${BASH_REMATCH[1]:-none}
  git -C "$SRC" cat-file -e "$commit^{commit}" 2> /dev/null && ok || bad "bertrt --version names commit $commit, not one of $SRC"
else
  same "bertrt --version line 1 (no git checkout)" "$first" "bertrt $V"
fi
same "bertrt-convert --version" "$(sed 's/^bertrt-convert /bertrt /' "$T/v2")" "$(cat "$T/v1")"
backends=$(sed -n 's/^backends: //p' "$T/v1")
if [ "$VULKAN" = ON ]; then want="cpu, vulkan (also reference and checked, for testing)"
else want="cpu (also reference and checked, for testing)"; fi
same "--version backends" "$backends" "$want"
kernels=$(sed -n 's/^cpu kernels on this host: //p' "$T/v1")
[[ $kernels =~ ^fp32\ ([a-z0-9_-]+),\ int8\ ([a-z0-9_-]+),\ fc\ provider\ ([a-z]+)\ \((XNNPACK built|no XNNPACK in this build)\)$ ]] \
  && ok || bad "--version kernels line: '$kernels'"
f32=${BASH_REMATCH[1]:-} q8=${BASH_REMATCH[2]:-} fc=${BASH_REMATCH[3]:-}
grep -q "fully-connected (Linear) layers' fp32 matrix products" "$T/v1" && ok || bad "--version does not explain the fc provider: $(cat "$T/v1")"
# ... the kernels `bertrt bench` runs on this host (a tiny model of a 40-word vocabulary).
{ printf '[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n'; for w in the a film movie good bad great dull it is was not very and of to in on with story; do echo "$w"; done; for i in $(seq 15); do echo "w$i"; done; } > "$T/vocab.txt"
"$BIN" init --preset tiny --vocab "$T/vocab.txt" -o "$T/m.brt" > /dev/null 2>&1 \
  && "$BIN" bench --model "$T/m.brt" --iters 1 --warmup 0 --seq-len 8 --json > "$T/bench.json" 2> "$T/err" \
  && ok || bad "bench: $(cat "$T/err")"
bench() { "$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$T/bench.json" "$1"; }
same "--version fp32 kernel vs bench" "$f32" "$(bench f32_kernel)"
same "--version int8 kernel vs bench" "$q8" "$(bench int8_kernel)"
same "--version fc provider vs bench" "$fc" "$(bench fc_provider)"
# The variables that pick the kernels are honoured, and a bad one is named, not fatal.
same "BERTRT_FC_PROVIDER=openblas" "$(BERTRT_FC_PROVIDER=openblas "$BIN" --version | sed -n 's/^cpu kernels on this host: .*fc provider \([a-z]*\).*/\1/p')" openblas
BERTRT_Q8_KERNEL=nonsense "$BIN" --version > "$T/v3" 2>&1 && grep -q "int8 (none: BERTRT_Q8_KERNEL=nonsense: no such int8 kernel" "$T/v3" \
  && ok || bad "--version with a bad BERTRT_Q8_KERNEL: $(cat "$T/v3")"

# The library through Python (bertrt_version()) and the module's __version__.
pyv=$(cd "$T" && PYTHONPATH="$SRC/python" BERTRT_LIBRARY="$LIB" "$PY" -c "import bertrt; print(bertrt.version(), bertrt.__version__)" 2>&1)
same "bertrt_version() and __version__" "$pyv" "$V $V"

# pkg-config, find_package(bertrt) and the CPack package.
same "bertrt.pc Version" "$(sed -n 's/^Version: //p' "$BUILD/bertrt.pc")" "$V"
grep -q "set(PACKAGE_VERSION \"$V\")" "$BUILD/bertrtConfigVersion.cmake" && ok || bad "bertrtConfigVersion.cmake: $(grep 'set(PACKAGE_VERSION ' "$BUILD/bertrtConfigVersion.cmake")"
pkg=$(sed -n 's/^set(CPACK_PACKAGE_FILE_NAME "\(.*\)")$/\1/p' "$BUILD/CPackConfig.cmake")
[[ $pkg =~ ^bertrt-$V-Linux-[a-z0-9_]+$ ]] && ok || bad "CPack package file name '$pkg'"
src_pkg=$(sed -n 's/^set(CPACK_SOURCE_PACKAGE_FILE_NAME "\(.*\)")$/\1/p' "$BUILD/CPackSourceConfig.cmake")
same "CPack source package file name" "$src_pkg" "bertrt-$V-Source"

# CHANGELOG.md: its newest release heading (after [Unreleased]) is this version.
newest=$(grep -E '^## \[' "$SRC/CHANGELOG.md" | grep -v '^## \[Unreleased\]' | head -1)
[[ $newest =~ ^##\ \[$V\] ]] && ok || bad "CHANGELOG.md: the newest release heading is '$newest', expected '## [$V]'"

echo "version_test: $pass passed, $fail failed"
[ $fail -eq 0 ]
