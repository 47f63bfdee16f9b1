#!/usr/bin/env bash
# Hostile model files (tests/hostile/make_hostile_models.cpp): .brt files that pass the FlatBuffers
# verifier and carry correct checksums, made from a tiny model, an SST-2 fine-tuned one and its
# int8 export, must be refused by every command that reads them — exit 1, one error line naming
# the file and the field (the generator's pattern) — fast and in small memory: the loader's cost
# is bounded by the file, whatever the file declares.
# Usage: hostile_model_test.sh BERTRT MAKE_HOSTILE_MODELS [BERTRT_CONVERT]
set -uo pipefail
BIN=$1 GEN=$2 CONV=${3:-}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# Bounds per command. Honest loads of these tiny models take ~0.01 s and ~20 MB (~70 MB under
# ASan); the attacks took > 20 s and up to 3.8 GB before the loader bounded its cost. 2 s of CPU
# and 200 MB are far below the attacks and far above any refusal's cost on a loaded machine or
# under the sanitizers.
MAX_CPU=2.0 MAX_KB=$((200 * 1024))

# --- the three honest models: tiny (bertrt init), SST-2 fine-tuned, its int8 export ------------
{
  printf '[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n'
  for w in the a movie film good bad great awful fun boring plot actor story was is not very \
           and but it this that of to in best worst love hate fine dull nice long short; do
    echo "$w"
  done
} >"$T/vocab.txt"
printf 'sentence\tlabel\n' >"$T/train.tsv"
for i in 1 2 3 4; do
  printf 'a great movie\t1\nthe worst film\t0\nvery good fun\t1\nboring and dull\t0\n' >>"$T/train.tsv"
done
"$BIN" init --preset tiny --vocab "$T/vocab.txt" --seed 1 -o "$T/tiny.brt" >/dev/null \
  && "$BIN" finetune --model "$T/tiny.brt" --task sst2 --train "$T/train.tsv" --max-steps 2 \
       --batch-size 4 --max-seq-length 16 -o "$T/sst2.brt" >/dev/null 2>&1 \
  && "$BIN" quantize --model "$T/sst2.brt" --task sst2 --calibration "$T/train.tsv" \
       --max-seq-length 16 -o "$T/int8.brt" >/dev/null 2>&1 \
  || { echo "FAIL: could not make the honest models"; exit 1; }
mkdir "$T/h"
"$GEN" "$T/tiny.brt" "$T/sst2.brt" "$T/int8.brt" "$T/h" || { echo "FAIL: make_hostile_models"; exit 1; }
for m in tiny sst2 int8; do  # the honest ones load
  echo "a great movie" | "$BIN" predict --model "$T/$m.brt" >/dev/null 2>&1 || [ $m = tiny ] || bad "honest $m: predict failed"
  "$BIN" info "$T/$m.brt" >/dev/null 2>&1 && ok || bad "honest $m: info failed"
done

# run NAME FILE COMMAND: runs `bertrt info FILE` or `bertrt predict --model FILE` (one line on
# stdin), "-unchecked" with --no-verify-checksums; leaves rc, cpu (s), rss (kB) and $T/stderr.
run() {
  local file=$2 cmd=${3%-*} flags=()
  case $3 in *-unchecked) flags=(--no-verify-checksums) ;; esac
  if [ "$cmd" = info ]; then
    /usr/bin/time -f '%U %S %M' -o "$T/time" "$BIN" info "${flags[@]}" "$file" >"$T/stdout" 2>"$T/stderr" </dev/null
  else
    echo "a great movie" | /usr/bin/time -f '%U %S %M' -o "$T/time" "$BIN" predict "${flags[@]}" \
      --model "$file" >"$T/stdout" 2>"$T/stderr"
  fi
  rc=$?
  read -r user sys rss < <(tail -1 "$T/time")
  cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
}

worst_cpu=0 worst_rss=0 files=0
while IFS=$'\t' read -r name commands pattern; do
  file=$T/h/$name.brt
  files=$((files + 1))
  IFS=, read -ra cmds <<<"$commands"
  for c in "${cmds[@]}"; do
    run "$name" "$file" "$c"
    if awk -v a="$cpu" -v b="$worst_cpu" 'BEGIN { exit !(a > b) }'; then worst_cpu=$cpu; fi
    [ "$rss" -gt "$worst_rss" ] && worst_rss=$rss
    case $c in
      *-ok)
        [ $rc -eq 0 ] && ok || bad "$name ($c): exit $rc: $(head -c 300 "$T/stderr")"
        continue ;;
    esac
    if [ $rc -ne 1 ]; then bad "$name ($c): exit $rc, expected 1: $(head -c 300 "$T/stderr")"; continue; fi
    if [ "$(wc -l <"$T/stderr")" -ne 1 ]; then bad "$name ($c): not one error line: $(head -c 600 "$T/stderr")"; continue; fi
    if ! grep -qF -- "$file" "$T/stderr"; then bad "$name ($c): the error does not name the file: $(cat "$T/stderr")"; continue; fi
    if ! grep -qE -- "$pattern" "$T/stderr"; then bad "$name ($c): stderr lacks /$pattern/: $(head -c 600 "$T/stderr")"; continue; fi
    if awk -v a="$cpu" -v b="$MAX_CPU" 'BEGIN { exit !(a > b) }'; then bad "$name ($c): $cpu s of CPU > $MAX_CPU s"; continue; fi
    if [ "$rss" -gt $MAX_KB ]; then bad "$name ($c): max RSS $rss kB > $MAX_KB kB"; continue; fi
    ok
  done
done <"$T/h/manifest.tsv"
echo "hostile_model_test: $files files, worst refusal $worst_cpu s CPU, $((worst_rss / 1024)) MB max RSS"

# A file without checksums: re-saved as the error says, it loads (with its checksums).
if [ -n "$CONV" ]; then
  old=$T/h/no_checksums_vocab_swapped.brt
  if "$CONV" --no-verify-checksums "$old" -o "$T/resaved.brt" -q >"$T/stdout" 2>"$T/stderr" \
     && "$BIN" info "$T/resaved.brt" >"$T/info.txt" 2>&1 \
     && grep -q "checksums  CRC-32C on .* and the header, all verified" "$T/info.txt"; then
    ok
  else
    bad "re-saving a file without checksums: $(cat "$T/stderr" "$T/info.txt" 2>/dev/null | head -c 600)"
  fi
  # ... but not without the flag, and never one with NaN weights.
  "$CONV" "$old" -o "$T/r2.brt" -q >/dev/null 2>"$T/stderr"
  [ $? -eq 1 ] && grep -q "carries no checksum" "$T/stderr" && [ ! -e "$T/r2.brt" ] && ok \
    || bad "bertrt-convert re-saved a file without checksums unasked: $(cat "$T/stderr")"
  "$CONV" --no-verify-checksums "$T/h/no_checksums_nan.brt" -o "$T/r3.brt" -q >/dev/null 2>"$T/stderr"
  [ $? -eq 1 ] && grep -q "element 0 is not finite" "$T/stderr" && [ ! -e "$T/r3.brt" ] && ok \
    || bad "bertrt-convert re-saved NaN weights: $(cat "$T/stderr")"
fi

echo "hostile_model_test: $pass passed, $fail failed"
[ $fail -eq 0 ]
