#!/usr/bin/env bash
# The examples/ programs built against the INSTALLED package, not the build tree: `cmake --install`
# into a temporary prefix, examples/classify.c with pkg-config (shared library) and examples/ with
# find_package(bertrt) (finetune_on_device.cpp on the shared library, classify.c on the static
# one), then run on real data: fine-tune a BERT-tiny on 200 SST-2 sentences (fp32 and QAT int8),
# label 20 dev sentences and compare with `bertrt predict`; the installed Python module loads the
# installed library. Usage: examples_test.sh BUILD_DIR BERTRT_CLI DATA
set -uo pipefail
BUILD=$1 CLI=$2 DATA=$3
SRC=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
SST2=$DATA/glue/SST-2 VOCAB=$DATA/vocab/bert-base-uncased-vocab.txt
if [ ! -f "$SST2/train.tsv" ] || [ ! -f "$VOCAB" ]; then
  if [ "${BERTRT_REQUIRE_DATA:-0}" = 1 ]; then echo "no SST-2 data in $DATA"; exit 1; fi
  echo "SKIP: no SST-2 data in $DATA"; exit 0
fi

P=$T/prefix
cmake --install "$BUILD" --prefix "$P" >"$T/install.log" 2>&1 || { echo "install failed: $(tail -3 "$T/install.log")"; exit 1; }
for f in include/bertrt/bertrt.h lib/libbertrt.a lib/libbertrt.so lib/libbertrt.so.0 lib/pkgconfig/bertrt.pc \
         lib/cmake/bertrt/bertrtConfig.cmake lib/cmake/bertrt/bertrtConfigVersion.cmake; do
  [ -e "$P/$f" ] || bad "installed package lacks $f"
done
soname=$(readelf -d "$P/lib/libbertrt.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = libbertrt.so.0 ] && ok || bad "SONAME is '$soname', expected libbertrt.so.0"
# Only the C API leaves the shared library.
others=$(nm -D --defined-only "$P/lib/libbertrt.so" | awk '{print $3}' | grep -v '^bertrt_' | grep -v '^BERTRT_0$' | head -3)
[ -z "$others" ] && ok || bad "libbertrt.so exports more than bertrt_*: $others"

# classify.c: C99, pkg-config, the shared library.
export PKG_CONFIG_PATH=$P/lib/pkgconfig
if cc -std=c99 -Wall -Wextra -Werror "$SRC/examples/classify.c" $(pkg-config --cflags --libs bertrt) -lm \
     -Wl,-rpath,"$P/lib" -o "$T/classify" 2>"$T/cc.log"; then ok; else bad "cc classify.c: $(head -5 "$T/cc.log")"; fi
# grep -F > /dev/null, not grep -q: with pipefail, grep -q's early exit can kill ldd with SIGPIPE.
ldd "$T/classify" | grep -F "$P/lib/libbertrt.so.0" > /dev/null && ok ||
  bad "classify does not load the installed libbertrt.so.0: $(ldd "$T/classify" | grep bertrt)"
# examples/CMakeLists.txt: find_package(bertrt).
if cmake -S "$SRC/examples" -B "$T/ex" -DCMAKE_PREFIX_PATH="$P" -DCMAKE_BUILD_TYPE=Release >"$T/ex.log" 2>&1 &&
   cmake --build "$T/ex" -j2 >>"$T/ex.log" 2>&1; then ok; else bad "examples/ with find_package: $(grep -m3 -i error "$T/ex.log")"; fi
grep -rq "$BUILD" "$T/ex/CMakeCache.txt" && bad "the examples' build refers to the build tree" || ok

# Real data: 200 training sentences, 64 dev sentences.
head -201 "$SST2/train.tsv" >"$T/train.tsv"
head -65 "$SST2/dev.tsv" >"$T/dev.tsv"
tail -n +2 "$T/dev.tsv" | head -20 | cut -f1 >"$T/lines.txt"
"$CLI" init --preset tiny --vocab "$VOCAB" --seed 3 -o "$T/init.brt" >/dev/null || bad "bertrt init"
for mode in fp32 qat; do
  "$T/ex/finetune_on_device" "$T/init.brt" sst2 "$T/train.tsv" "$T/dev.tsv" "$T/$mode.brt" 1 64 $mode \
    >"$T/ft_$mode.out" 2>"$T/ft_$mode.err"
  rc=$?
  [ $rc -eq 0 ] && ok || bad "finetune_on_device $mode: exit $rc: $(tail -2 "$T/ft_$mode.err")"
  grep -q '^step 13/13 epoch 1 loss' "$T/ft_$mode.out" && ok || bad "$mode: no progress line for step 13/13: $(tail -3 "$T/ft_$mode.out")"
  grep -q '^dev {.*"accuracy":' "$T/ft_$mode.out" && ok || bad "$mode: no dev metrics: $(tail -2 "$T/ft_$mode.out")"
  # The C program labels as `bertrt predict` does (same library, same model; int8 unchanged).
  "$T/classify" "$T/$mode.brt" 64 <"$T/lines.txt" >"$T/classify_$mode.out" 2>"$T/classify.err" || bad "classify $mode: $(cat "$T/classify.err")"
  "$T/ex/classify" "$T/$mode.brt" 64 <"$T/lines.txt" >"$T/static_$mode.out" 2>>"$T/classify.err" || bad "static classify $mode: $(cat "$T/classify.err")"
  "$CLI" predict --model "$T/$mode.brt" <"$T/lines.txt" >"$T/predict_$mode.out" || bad "bertrt predict $mode"
  [ "$(wc -l <"$T/classify_$mode.out")" = 20 ] && ok || bad "classify $mode: $(wc -l <"$T/classify_$mode.out") lines, expected 20"
  cmp -s "$T/classify_$mode.out" "$T/predict_$mode.out" && ok || bad "classify $mode differs from bertrt predict: $(diff "$T/classify_$mode.out" "$T/predict_$mode.out" | head -4)"
  cmp -s "$T/static_$mode.out" "$T/predict_$mode.out" && ok || bad "static classify $mode differs from bertrt predict"
done
"$CLI" info "$T/qat.brt" >"$T/info.txt"
grep -q '^metadata   quantization = int8$' "$T/info.txt" && ok || bad "the QAT run did not write an int8 model"

# Errors: one line naming the file, exit 1, nothing written.
"$T/classify" "$T/missing.brt" </dev/null 2>"$T/err" && bad "classify of a missing model succeeded"
grep -q "^classify: load: bertrt_model_load: path $T/missing.brt: No such file" "$T/err" && ok || bad "missing model: $(cat "$T/err")"
"$T/ex/finetune_on_device" "$T/init.brt" sst2 "$T/dev.tsv.none" "$T/dev.tsv" "$T/none.brt" >/dev/null 2>"$T/err" && bad "finetune on a missing file succeeded"
grep -q "train_path $T/dev.tsv.none: no such file" "$T/err" && ok || bad "missing train file: $(cat "$T/err")"
[ -e "$T/none.brt" ] && bad "a failed fine-tuning left $T/none.brt" || ok

# The installed Python module finds the installed library by itself.
PYDIR=$(dirname "$(dirname "$(find "$P" -path '*/bertrt/__init__.py' | head -1)")")
out=$(cd "$T" && env -u BERTRT_LIBRARY PYTHONPATH="$PYDIR" /usr/bin/python3 -c "
import bertrt
m = bertrt.Model('$T/fp32.brt')
print(m.predict(['a gorgeous, witty movie'])[0]['label'], bertrt.__file__)" 2>&1)
echo "$out" | grep -E "^(negative|positive) $PYDIR/bertrt/__init__.py$" > /dev/null && ok || bad "installed Python module: $out"
# ... from the manifest, and after the prefix is moved (the path is relative to the module: an
# absolute one sent the CPack tarball's module to the build's staging folder).
grep -q "/bertrt/_library_path.py$" "$BUILD/install_manifest.txt" && ok || bad "_library_path.py is not in install_manifest.txt"
mv "$P" "$T/moved"
MOVED=${PYDIR/#$P/$T/moved}
out=$(cd "$T" && env -u BERTRT_LIBRARY PYTHONPATH="$MOVED" /usr/bin/python3 -c "
import bertrt
print(bertrt.Model('$T/fp32.brt').predict(['a gorgeous, witty movie'])[0]['label'], bertrt.version())" 2>&1)
echo "$out" | grep -E "^(negative|positive) 0\." > /dev/null && ok || bad "the moved prefix's Python module: $out"

echo "examples_test: $pass passed, $fail failed"
[ $fail -eq 0 ]
