#!/usr/bin/env bash
# Peak RSS and step time of a fine-tuning step, full fine-tuning against LoRA adapters, side by
# side in one run: `bertrt finetune --task sst2` at batch 8 × 128 pieces (each row several SST-2
# sentences joined, so every row fills the 128 pieces) for BERT-mini and BERT-base from
# `bertrt init`, a few steps each. Peak RSS from /usr/bin/time -v; step time the mean wall time of
# the steps after the first (from --metrics' elapsed_seconds). 2 threads.
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
printf '%-6s %-46s %10s %10s %12s\n' model training "peak MB" "step s" "vs full"
for p in "${PRESETS[@]}"; do
  "$BIN" init --preset "$p" --vocab "$DATA/vocab/bert-base-uncased-vocab.txt" -o "$T/$p.brt" > /dev/null
  steps=$([ "$p" = base ] && echo 4 || echo 6)
  full=""
  for opts in "" "--lora-r 8 --lora-target query,value" "--lora-r 8 --lora-target query,key,value,dense"; do
    # shellcheck disable=SC2086
    /usr/bin/time -v "$BIN" finetune --model "$T/$p.brt" --task sst2 --train "$T/train.tsv" \
      --batch-size 8 --max-seq-length 128 --max-steps "$steps" --metrics "$T/m.jsonl" $opts \
      -o "$T/out.brt" > /dev/null 2> "$T/time"
    s=$(step_s "$T/m.jsonl")
    [ -z "$full" ] && full=$s
    ratio=$(awk -v a="$s" -v b="$full" 'BEGIN { if (b > 0) printf "%.2f×", a / b; else print "-" }')
    printf '%-6s %-46s %10s %10s %12s\n' "$p" "${opts:-full fine-tuning}" "$(peak_mb "$T/time")" "$s" "$ratio"
  done
done
