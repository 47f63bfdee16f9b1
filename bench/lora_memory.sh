#!/usr/bin/env bash
# Peak RSS and step time of a fine-tuning step, side by side in one run: `bertrt finetune --task
# sst2` at batch 8 × 128 pieces (each row several SST-2 sentences joined, so every row fills the
# 128 pieces) for BERT-mini and BERT-base from `bertrt init`, a few steps each: full fine-tuning,
# six frozen layers (--freeze-embeddings --freeze-layers 6 --recompute), LoRA r 8 on query,value
# over the fp32 base and over its int8 model (`bertrt quantize`; model/lora_int8.h), each LoRA
# row also with --recompute. Peak RSS from /usr/bin/time -v; step time the mean wall time of the
# steps after the first (from --metrics' elapsed_seconds); "vs full" the step time over full
# fine-tuning's in the same round. ROUNDS (default 1) repeats the whole table. 2 threads.
# Usage: bench/lora_memory.sh BERTRT_BINARY [DATA_DIR] [PRESETS...]   (default: mini base)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
. "$(dirname "$0")/lib_checks.sh"
USAGE="usage: $0 BERTRT_BINARY [DATA_DIR] [PRESETS...]
  DATA_DIR default: bench/../../shared/data (the vocab, glue/SST-2); PRESETS: mini base
example: $0 build/bertrt ../shared/data mini"
need_args 1 "$@"
need_exe BERTRT_BINARY "$1"
BIN=$(realpath "$1")
DATA=${2:-$(dirname "$0")/../../shared/data}
need_dir DATA_DIR "$DATA" "give the data folder as the second argument: $0 $1 DATA_DIR [PRESETS...]"
need_file DATA_DIR/SST-2 "$DATA/glue/SST-2/train.tsv"
need_file DATA_DIR/vocab "$DATA/vocab/bert-base-uncased-vocab.txt"
shift $(( $# >= 2 ? 2 : 1 ))
PRESETS=("$@"); [ ${#PRESETS[@]} -eq 0 ] && PRESETS=(mini base)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 BERTRT_NUM_THREADS=2
# 64 rows of 8 sentences each (well over 128 pieces), labelled as the first sentence.
{ echo -e "sentence\tlabel"
  sed -n '2,513p' "$DATA/glue/SST-2/train.tsv" | paste -d '\t' - - - - - - - - |
    awk -F '\t' '{ s = ""; for (i = 1; i <= NF; i += 2) s = s " " $i; print substr(s, 2) "\t" $2 }'
} > "$T/train.tsv"
peak_mb() { sed -n 's/.*Maximum resident set size (kbytes): //p' "$1" | awk '{printf "%.0f", $1/1024}'; }
step_s() {
  /usr/bin/python3 - "$1" <<'PY'
import json, sys
e = [json.loads(l)["elapsed_seconds"] for l in open(sys.argv[1]) if '"elapsed_seconds"' in l]
print(f"{(e[-1] - e[0]) / (len(e) - 1):.3f}" if len(e) > 1 else "-")
PY
}
ROUNDS=${ROUNDS:-1}
printf '%-6s %-5s %-58s %10s %10s %10s\n' model round training "peak MB" "step s" "vs full"
for p in "${PRESETS[@]}"; do
  "$BIN" init --preset "$p" --vocab "$DATA/vocab/bert-base-uncased-vocab.txt" -o "$T/$p.brt" > /dev/null
  # The int8 base: PTQ calibrates through a task head, which one step with everything frozen
  # gives the random model (its encoder unchanged).
  "$BIN" finetune --model "$T/$p.brt" --task sst2 --train "$T/train.tsv" --batch-size 8 \
    --max-steps 1 --freeze-embeddings --freeze-layers "$([ "$p" = base ] && echo 12 || echo 4)" \
    -o "$T/$p-cls.brt" > /dev/null 2>&1
  "$BIN" quantize --model "$T/$p-cls.brt" --task sst2 --calibration "$T/train.tsv" \
    --calibration-examples 16 --batch-size 8 -o "$T/$p-int8.brt" > /dev/null
  steps=$([ "$p" = base ] && echo 4 || echo 6)
  for round in $(seq "$ROUNDS"); do
    full=""
    for row in "fp32|full fine-tuning|" \
               "fp32|six frozen layers|--freeze-embeddings --freeze-layers 6 --recompute" \
               "fp32|LoRA r 8 query,value|--lora-r 8 --lora-target query,value" \
               "fp32|LoRA r 8 query,value --recompute|--lora-r 8 --lora-target query,value --recompute" \
               "int8|LoRA r 8 query,value over int8|--lora-r 8 --lora-target query,value" \
               "int8|LoRA r 8 query,value over int8 --recompute|--lora-r 8 --lora-target query,value --recompute"; do
      IFS='|' read -r base name opts <<< "$row"
      model="$T/$p.brt"; [ "$base" = int8 ] && model="$T/$p-int8.brt"
      # shellcheck disable=SC2086
      /usr/bin/time -v "$BIN" finetune --model "$model" --task sst2 --train "$T/train.tsv" \
        --batch-size 8 --max-seq-length 128 --max-steps "$steps" --metrics "$T/m.jsonl" $opts \
        -o "$T/out.brt" > /dev/null 2> "$T/time"
      s=$(step_s "$T/m.jsonl")
      [ -z "$full" ] && full=$s
      ratio=$(awk -v a="$s" -v b="$full" 'BEGIN { if (b > 0) printf "%.2f×", a / b; else print "-" }')
      printf '%-6s %-5s %-58s %10s %10s %10s\n' "$p" "$round" "$name" "$(peak_mb "$T/time")" "$s" "$ratio"
    done
  done
done
