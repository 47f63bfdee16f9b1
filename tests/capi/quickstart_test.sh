#!/usr/bin/env bash
# examples/quickstart.c and examples/quickstart.py run as their headers say, from an installed
# prefix: `cmake --install` into a temporary prefix, quickstart.c compiled exactly as a user would
# (pkg-config from the prefix, -Wl,-rpath at its libdir), then both run on a tiny model
# fine-tuned here for sst2 (a vocabulary and training lines of its own: no data needed). Their
# labels are those `bertrt predict` prints; a model that fails to load stops with its error.
# Usage: quickstart_test.sh BUILD_DIR BERTRT_CLI PYTHON
set -uo pipefail
BUILD=$1 CLI=$2 PY=$3
SRC=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

P=$T/p
cmake --install "$BUILD" --prefix "$P" > "$T/install.log" 2>&1 || { echo "install failed: $(tail -3 "$T/install.log")"; exit 1; }
pc=$(find "$P" -name bertrt.pc | head -1)
[ -n "$pc" ] && ok || { echo "the install has no bertrt.pc"; exit 1; }

# --- C: as the header of quickstart.c says --------------------------------------------------------
cp "$SRC/examples/quickstart.c" "$T/"
(
  cd "$T" || exit 1
  export PKG_CONFIG_PATH=$(dirname "$pc")
  cc quickstart.c $(pkg-config --cflags --libs bertrt) -lm \
     -Wl,-rpath,"$(pkg-config --variable=libdir bertrt)" -o quickstart 2> cc.log
) && ok || bad "cc quickstart.c: $(head -5 "$T/cc.log")"
[ -s "$T/cc.log" ] && bad "cc quickstart.c warned: $(head -5 "$T/cc.log")" || ok
PKG_CONFIG_PATH=$(dirname "$pc") cc -std=c99 -Wall -Wextra -Werror -c "$T/quickstart.c" \
  $(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags bertrt) -o "$T/q.o" 2> "$T/cc99.log" \
  && ok || bad "quickstart.c is not warning-free C99: $(head -5 "$T/cc99.log")"
loaded=$(ldd "$T/quickstart" | sed -n 's/^[[:space:]]*libbertrt\.so\.0 => \(.*\) (0x.*/\1/p')
[ -n "$loaded" ] && [ "$(readlink -f "$loaded")" = "$(readlink -f "$P/lib/libbertrt.so.0")" ] && ok ||
  bad "quickstart does not load the installed library: $(ldd "$T/quickstart" | grep bertrt)"

# --- a tiny sst2 model ------------------------------------------------------------------------------
{ printf '[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n'
  for w in the a film movie good bad great dull it is was not very and of story witty gorgeous , .; do echo "$w"; done; } > "$T/vocab.txt"
{ printf 'sentence\tlabel\n'
  for i in 1 2 3 4; do printf 'a good film\t1\na great story\t1\na bad movie\t0\nit was dull\t0\n'; done; } > "$T/train.tsv"
"$CLI" init --preset tiny --vocab "$T/vocab.txt" --seed 1 -o "$T/init.brt" > /dev/null 2>&1 &&
  "$CLI" finetune --model "$T/init.brt" --task sst2 --train "$T/train.tsv" --max-steps 4 --batch-size 4 \
    --learning-rate 1e-3 --max-seq-length 16 -o "$T/sst2.brt" > /dev/null 2>&1 && ok || bad "setup: the tiny sst2 model"
want=$(echo 'a gorgeous, witty movie' | "$CLI" predict --model "$T/sst2.brt" | cut -f1)

# --- C run --------------------------------------------------------------------------------------------
"$T/quickstart" "$T/sst2.brt" 'a gorgeous, witty movie' > "$T/c.out" 2> "$T/c.err" && ok || bad "quickstart: $(cat "$T/c.err")"
same_label=$(head -1 "$T/c.out")
[ "$same_label" = "$want" ] && ok || bad "quickstart label '$same_label', bertrt predict '$want'"
[[ $want =~ ^(negative|positive)$ ]] && ok || bad "bertrt predict label '$want' is not an sst2 class name"
"$PY" - "$T/c.out" <<'EOF2' && ok || bad "quickstart probabilities: $(cat "$T/c.out")"
import sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 3, lines
probs = dict(l.split() for l in lines[1:])
assert set(probs) == {"negative", "positive"}, probs
assert abs(sum(map(float, probs.values())) - 1) < 2e-4, probs  # 4 decimals each
assert max(probs, key=lambda k: float(probs[k])) == lines[0]
EOF2
"$T/quickstart" "$T/missing.brt" 'x' > /dev/null 2> "$T/err"
rc=$?
[ $rc -eq 1 ] && grep -q "^quickstart: bertrt_model_load: path $T/missing.brt: No such file" "$T/err" \
  && ok || bad "quickstart of a missing model: exit $rc: $(cat "$T/err")"
"$T/quickstart" > /dev/null 2>&1; [ $? -eq 2 ] && ok || bad "quickstart without arguments did not exit 2"

# --- Python: the module where the install put it, for this Python ---------------------------------
init=$(find "$P" -path '*/bertrt/__init__.py' | head -1)
PYDIR=$(dirname "$(dirname "$init")")
pyver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
[[ ${PYDIR#$P/} =~ ^lib/python$pyver/(dist|site)-packages$ ]] && ok || bad "the module is in ${PYDIR#$P/}, not this Python's lib/python$pyver/{dist,site}-packages"
out=$(cd "$T" && env -u BERTRT_LIBRARY PYTHONPATH="$PYDIR" "$PY" "$SRC/examples/quickstart.py" "$T/sst2.brt" 'a gorgeous, witty movie' 2>&1)
[ "$(echo "$out" | head -1)" = "a gorgeous, witty movie -> $want" ] && ok || bad "quickstart.py: $out"
[ "$(echo "$out" | wc -l)" = 3 ] && echo "$out" | grep -q '^  negative 0\.[0-9]\{4\}$' && ok || bad "quickstart.py probabilities: $out"
out=$(cd "$T" && env -u BERTRT_LIBRARY PYTHONPATH="$PYDIR" "$PY" "$SRC/examples/quickstart.py" "$T/missing.brt" x 2>&1)
rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q "^quickstart: .*missing.brt: No such file" && ok || bad "quickstart.py of a missing model: exit $rc: $out"

echo "quickstart_test: $pass passed, $fail failed"
[ $fail -eq 0 ]
