#!/usr/bin/env bash
# The Vulkan backend end to end: the same seeded tiny pre-training (8 steps, MLM +
# NSP), SST-2 fine-tuning (8 steps, fp32 and QAT int8) and eval on --backend vulkan and on cpu;
# the losses must agree step by step within platforms/compare_runs.py's bound (rtol 1e-5: the two
# differ only in summation order), with the Khronos validation layer on and silent. Also the
# errors: an unknown device index, no driver at all; and a pre-training killed (SIGKILL) after a
# checkpoint and resumed on vulkan ends byte-identical to the uninterrupted vulkan run.
# Usage: vulkan_test.sh BERTRT DATA
source "$(dirname "$0")/harness.sh"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
if ! "$BIN" info --devices | grep -q '^0:'; then
  if [ "${BERTRT_REQUIRE_VULKAN:-0}" = 1 ]; then echo "BERTRT_REQUIRE_VULKAN=1 and no Vulkan device"; exit 1; fi
  echo "SKIP: no Vulkan device"; exit 0
fi
head -c 300000 "$DATA/corpus/enwiki/enwiki_valid_1000docs.txt" > "$T/corpus.txt"
head -n 301 "$DATA/glue/SST-2/train.tsv" > "$T/train.tsv"
head -n 101 "$DATA/glue/SST-2/dev.tsv" > "$T/dev.tsv"
run() {  # run NAME BACKEND
  local d=$T/$1 be=$2
  mkdir -p "$d"
  local t0; t0=$(date +%s.%N)
  "$BIN" init --preset tiny --vocab "$VOCAB" --seed 7 -o "$d/init.brt" > /dev/null &&
  "$BIN" pretrain --backend "$be" --model "$d/init.brt" --corpus "$T/corpus.txt" --max-steps 8 \
    --batch-size 4 --max-seq-length 32 --learning-rate 1e-3 --seed 11 --save-steps 4 \
    --metrics "$d/pretrain.jsonl" -o "$d/pt.brt" > "$d/log" 2>&1 &&
  "$BIN" finetune --backend "$be" --model "$d/pt.brt" --task sst2 --train "$T/train.tsv" \
    --dev "$T/dev.tsv" --max-steps 8 --batch-size 8 --max-seq-length 32 --learning-rate 1e-4 \
    --seed 5 --metrics "$d/finetune.jsonl" -o "$d/sst2.brt" >> "$d/log" 2>&1 &&
  "$BIN" eval --backend "$be" --model "$d/sst2.brt" --task sst2 --data "$T/dev.tsv" --json \
    > "$d/eval.json" 2>> "$d/log" || { bad "$1: $(tail -3 "$d/log")"; return 1; }
  mkdir -p "$d/qat"
  "$BIN" finetune --backend "$be" --model "$d/pt.brt" --task sst2 --train "$T/train.tsv" \
    --dev "$T/dev.tsv" --max-steps 8 --batch-size 8 --max-seq-length 32 --learning-rate 1e-4 \
    --seed 5 --qat int8 --metrics "$d/qat/finetune.jsonl" -o "$d/qat.brt" >> "$d/log" 2>&1 &&
  "$BIN" eval --backend "$be" --model "$d/qat.brt" --task sst2 --data "$T/dev.tsv" --json \
    > "$d/qat/eval.json" 2>> "$d/log" || { bad "$1 qat: $(tail -3 "$d/log")"; return 1; }
  cp "$d/pretrain.jsonl" "$d/qat/pretrain.jsonl"
  echo "$1 ($be): $(echo "$(date +%s.%N) - $t0" | bc | cut -c1-5) s"
  ok
}
run cpu cpu
# Under the validation layer unless the caller says otherwise (the asan preset turns it off: the
# layer keeps state to the end of the process that LeakSanitizer would report).
BERTRT_VULKAN_VALIDATION=${BERTRT_VULKAN_VALIDATION:-1} run vulkan vulkan
if grep -q "vulkan validation" "$T/vulkan/log"; then bad "validation messages: $(grep -m3 'vulkan validation' "$T/vulkan/log")"; else ok; fi
if /usr/bin/python3 "$SRC/platforms/compare_runs.py" "$T/vulkan" "$T/cpu"; then ok; else bad "fp32 losses differ"; fi
# QAT: a rounding tie can fall the other way (one quantization step; ~1e-4 of the loss, measured
# 3.2e-4 relative at worst here), hence rtol 1e-3.
if /usr/bin/python3 "$SRC/platforms/compare_runs.py" --rtol 1e-3 "$T/vulkan/qat" "$T/cpu/qat"; then ok; else bad "QAT losses differ"; fi
# kill -9 after the first checkpoint, then --resume, both on vulkan: byte-identical to the
# uninterrupted vulkan run above (same flags, so the same file).
PT=(--backend vulkan --corpus "$T/corpus.txt" --max-steps 8 --batch-size 4 --max-seq-length 32
    --learning-rate 1e-3 --seed 11 --save-steps 4)
"$BIN" pretrain --model "$T/vulkan/init.brt" "${PT[@]}" -o "$T/killed.brt" > "$T/killed.log" 2>&1 &
pid=$!
saved=$(wait_for_checkpoint "$T/killed.brt.resume" 3000 0.1)  # the first save, then kill at once
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
if [ -n "$saved" ] && [ "$saved" -lt 8 ]; then
  "$BIN" pretrain --resume "$T/killed.brt.resume" "${PT[@]}" -o "$T/killed.brt" >> "$T/killed.log" 2>&1 &&
    cmp -s "$T/killed.brt" "$T/vulkan/pt.brt" && ok ||
    bad "vulkan: killed at step $saved + resumed differs from the uninterrupted run: $(tail -2 "$T/killed.log")"
else
  bad "vulkan: no checkpoint below step 8 before the kill (saw '$saved')"
fi
expect_error "device index out of range" "" "device 7 asked for.*has 1|this machine has" -- \
  "$BIN" eval --backend vulkan --device 7 --model "$T/cpu/sst2.brt" --task sst2 --data "$T/dev.tsv"
# The variable is read strictly: -1 indexed the device list before it was checked (a crash).
for v in -1 abc 0abc; do
  expect_error "BERTRT_VULKAN_DEVICE=$v" "" "BERTRT_VULKAN_DEVICE: '$v' is not a device index" -- \
    env BERTRT_VULKAN_DEVICE=$v "$BIN" eval --backend vulkan --model "$T/cpu/sst2.brt" --task sst2 --data "$T/dev.tsv"
done
expect_error "no driver" "" "no Vulkan driver|found no Vulkan device" -- \
  env VK_ICD_FILENAMES=/nonexistent.json "$BIN" eval --backend vulkan --model "$T/cpu/sst2.brt" --task sst2 --data "$T/dev.tsv"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
