#!/usr/bin/env bash
# Disk full and I/O errors while writing every kind of output: `pretrain` checkpoints, `finetune
# -o`, `quantize -o`, `bertrt-convert -o` and the export back to Hugging Face (`--to hf`). Each
# kind meets three faults with a good previous output in place:
#   fsize     RLIMIT_FSIZE (ulimit -f): write() fails with EFBIG part-way (the binaries ignore
#             SIGXFSZ so that they can clean up);
#   enospc    a full filesystem (a small tmpfs filled to the last byte): ENOSPC;
#   readonly  a read-only filesystem (tmpfs remounted ro; chmod a-w when not root): EROFS/EACCES.
# Each trial must exit non-zero with one error line naming the output's folder, leave the previous
# output byte-identical and loadable, and leave no temp file. Without root (no tmpfs) the enospc
# trials are skipped visibly and readonly uses chmod.
# Usage: io_faults_test.sh BERTRT BERTRT_CONVERT DATA_DIR CKPT_DIR
set -uo pipefail
CONV=$2 CKPT=$4
set -- "$1" "$3"
source "$(dirname "$0")/harness.sh"
export BERTRT_NUM_THREADS=${BERTRT_NUM_THREADS:-1}
ST=$CKPT/hf/inference-server_tiny_bert
TEXT=$DATA/corpus/enwiki/enwiki_valid_1000docs.txt
for f in "$ST/model.safetensors" "$TEXT" "$DATA/glue/SST-2/train.tsv"; do
  if [ ! -f "$f" ]; then
    if [ "${BERTRT_REQUIRE_DATA:-0}" = 1 ]; then echo "required data missing: $f"; exit 1; fi
    echo "SKIP: data missing ($f)"; exit 0
  fi
done
MOUNTS=()
cleanup() {
  for m in "${MOUNTS[@]}"; do umount "$m" 2>/dev/null; done
  chmod -R u+w "$T" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT

# --- good outputs to start from -------------------------------------------------------------------
head -c 100000 "$TEXT" > "$T/corpus.txt"
head -n 200 "$DATA/glue/SST-2/train.tsv" > "$T/train.tsv"
PT=(--corpus "$T/corpus.txt" --batch-size 4 --max-seq-length 32 --max-predictions-per-seq 5 --seed 11)
FT=(--task sst2 --train "$T/train.tsv" --max-steps 2 --batch-size 8)
QT=(--task sst2 --calibration "$T/train.tsv" --calibration-examples 16)
"$BIN" init --preset tiny --vocab "$VOCAB" --seed 3 -o "$T/init.brt" > /dev/null || { echo "init failed"; exit 1; }
"$BIN" pretrain --model "$T/init.brt" "${PT[@]}" --max-steps 2 -o "$T/good_ck.brt" > /dev/null 2>&1 || { echo "pretrain failed"; exit 1; }
"$BIN" finetune --model "$T/init.brt" "${FT[@]}" -o "$T/good_ft.brt" > /dev/null 2>&1 || { echo "finetune failed"; exit 1; }
"$BIN" quantize --model "$T/good_ft.brt" "${QT[@]}" -o "$T/good_q.brt" > /dev/null 2>&1 || { echo "quantize failed"; exit 1; }
"$CONV" -q "$ST" -o "$T/good_c.brt" 2> /dev/null || { echo "convert failed"; exit 1; }
"$CONV" -q --to hf "$T/good_c.brt" -o "$T/good_hf" 2> /dev/null || { echo "export failed"; exit 1; }

# The command that rewrites output KIND inside folder DIR.
command_for() {
  local kind=$1 dir=$2
  case $kind in
    pretrain) echo "$BIN" pretrain --model "$T/init.brt" "${PT[@]}" --max-steps 3 --save-steps 1 -o "$dir/ck.brt" ;;
    finetune) echo "$BIN" finetune --model "$T/init.brt" "${FT[@]}" -o "$dir/ft.brt" ;;
    quantize) echo "$BIN" quantize --model "$T/good_ft.brt" "${QT[@]}" -o "$dir/q.brt" ;;
    convert) echo "$CONV" -q "$ST" -o "$dir/c.brt" ;;
    export-hf) echo "$CONV" -q --to hf "$T/good_c.brt" -o "$dir/hf" ;;
  esac
}
# Puts the good previous output of KIND into DIR; prints its path.
place_previous() {
  local kind=$1 dir=$2
  case $kind in
    # --save-steps writes the checkpoint OUT.resume: a previous one there must survive.
    pretrain) cp "$T/good_ck.brt" "$dir/ck.brt.resume"; echo "$dir/ck.brt.resume" ;;
    finetune) cp "$T/good_ft.brt" "$dir/ft.brt"; echo "$dir/ft.brt" ;;
    quantize) cp "$T/good_q.brt" "$dir/q.brt"; echo "$dir/q.brt" ;;
    convert) cp "$T/good_c.brt" "$dir/c.brt"; echo "$dir/c.brt" ;;
    export-hf) cp -r "$T/good_hf" "$dir/hf"; echo "$dir/hf" ;;
  esac
}
digest() { if [ -d "$1" ]; then (cd "$1" && cat $(ls) | md5sum); else md5sum < "$1"; fi; }
# The previous output still loads: a .brt through `bertrt info`, an HF folder by converting it back.
loads() {
  if [ -d "$1" ]; then "$CONV" -q "$1" -o "$T/reload.brt" 2> /dev/null && rm -f "$T/reload.brt"
  else "$BIN" info "$1" > /dev/null 2>&1; fi
}

can_mount=0
if [ "$(id -u)" = 0 ] && mkdir -p "$T/probe" && mount -t tmpfs -o size=1M tmpfs "$T/probe" 2>/dev/null; then
  umount "$T/probe"; can_mount=1
fi
[ $can_mount = 1 ] || echo "note: not root or no tmpfs: enospc trials skipped, readonly uses chmod"

trials=0 lost=0 partial=0
trial() {
  local kind=$1 fault=$2 dir=$T/$1-$2
  mkdir -p "$dir"
  if [ "$fault" != fsize ] && [ $can_mount = 1 ]; then
    # 96 MB: room for the previous pretrain checkpoint (tiny model + moments, 53 MB), then filled.
    mount -t tmpfs -o size=96M tmpfs "$dir" || { bad "$kind/$fault: mount"; return; }
    MOUNTS+=("$dir")
  fi
  if [ "$fault" = enospc ] && [ $can_mount = 0 ]; then echo "SKIP: $kind/$fault (needs root for a tmpfs)"; return; fi
  local prev; prev=$(place_previous "$kind" "$dir")
  local before; before=$(digest "$prev")
  local cmd; read -r -a cmd <<< "$(command_for "$kind" "$dir")"
  case $fault in
    fsize) ( ulimit -f 64; exec "${cmd[@]}" ) > "$T/stdout" 2> "$T/stderr" < /dev/null ;;
    enospc)
      dd if=/dev/zero of="$dir/filler" bs=64k > /dev/null 2>&1  # until the filesystem is full
      "${cmd[@]}" > "$T/stdout" 2> "$T/stderr" < /dev/null ;;
    readonly)
      if [ $can_mount = 1 ]; then mount -o remount,ro "$dir"; else chmod -R a-w "$dir"; fi
      "${cmd[@]}" > "$T/stdout" 2> "$T/stderr" < /dev/null ;;
  esac
  local rc=$?
  trials=$((trials + 1))
  local err; err=$(grep -i 'error' "$T/stderr")
  if [ $rc -eq 0 ]; then bad "$kind/$fault: exit 0"
  elif [ "$(grep -ci 'error' "$T/stderr")" != 1 ]; then bad "$kind/$fault: not one error line: $(cat "$T/stderr")"
  elif ! grep -q -- "$dir" <<< "$err"; then bad "$kind/$fault: the error does not name $dir: $err"
  else ok; fi
  if [ "$(digest "$prev")" != "$before" ] || ! loads "$prev"; then
    lost=$((lost + 1)); bad "$kind/$fault: the previous output changed or does not load"
  fi
  local left; left=$(find "$dir" -name '*.tmp.*' -o -name '.bertrt-write-probe*' | wc -l)
  if [ "$left" -ne 0 ]; then partial=$((partial + 1)); bad "$kind/$fault: left $(find "$dir" -name '*.tmp.*')"; fi
  echo "$kind/$fault: exit $rc: $(cut -c1-150 <<< "$err")"
}

for kind in pretrain finetune quantize convert export-hf; do
  for fault in fsize enospc readonly; do trial "$kind" "$fault"; done
done
echo "fault injection: $trials trials, $lost previous outputs lost, $partial with temp files left"
echo "io_faults_test: $pass passed, $fail failed"
[ $fail -eq 0 ]
