#!/usr/bin/env bash
# How a LoRA adapter meets int8 deployment, measured: SST-2 dev accuracy (872 sentences) of
#   fp32            the fp32 base + an adapter trained on it (the fp32 reference);
#   int8+adapter    the int8 base (`bertrt quantize` of the base) + an adapter trained over that
#                   int8 base, kept unmerged: int8 GEMMs plus the fp32 low-rank update;
#   merge+PTQ       the fp32 adapter merged into the fp32 base (`bertrt merge`), then quantized
#                   (`bertrt quantize`, calibrated on the training sentences);
# for a few seeds, side by side, from one base (default: the pre-trained BERT-tiny of the docs'
# recipe). LoRA r 8, alpha 16 on query,value; the first TRAIN_ROWS training sentences, EPOCHS
# epochs at batch 16, 64 pieces, learning rate 1e-3. 2 threads.
# Usage: bench/lora_int8_accuracy.sh BERTRT_BINARY BASE_MODEL [DATA_DIR] [SEEDS...]
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
. "$(dirname "$0")/lib_checks.sh"
USAGE="usage: $0 BERTRT_BINARY BASE_MODEL [DATA_DIR] [SEEDS...]
  BASE_MODEL: an fp32 .brt (pre-trained, or with a task head); DATA_DIR default
  bench/../../shared/data (glue/SST-2); SEEDS default 1 2 3; TRAIN_ROWS (2000) and EPOCHS (3)
  from the environment
example: $0 build/bertrt pre.brt ../shared/data 1 2 3"
need_args 2 "$@"
need_exe BERTRT_BINARY "$1"
BIN=$(realpath "$1")
need_file BASE_MODEL "$2"
BASE=$(realpath "$2")
DATA=${3:-$(dirname "$0")/../../shared/data}
need_dir DATA_DIR "$DATA" "give the data folder as the third argument: $0 $1 $2 DATA_DIR"
need_file DATA_DIR/SST-2 "$DATA/glue/SST-2/train.tsv"
shift $(( $# >= 3 ? 3 : 2 ))
SEEDS=("$@"); [ ${#SEEDS[@]} -eq 0 ] && SEEDS=(1 2 3)
TRAIN_ROWS=${TRAIN_ROWS:-2000}
EPOCHS=${EPOCHS:-3}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 BERTRT_NUM_THREADS=2
head -n "$((TRAIN_ROWS + 1))" "$DATA/glue/SST-2/train.tsv" > "$T/train.tsv"
DEV="$DATA/glue/SST-2/dev.tsv"
quantize() {  # MODEL OUT: PTQ calibrated on 512 training sentences
  "$BIN" quantize --model "$1" --task sst2 --calibration "$T/train.tsv" \
    --calibration-examples 512 --max-seq-length 64 -o "$2" > /dev/null
}
acc() { "$BIN" eval "$@" --data "$DEV" --max-seq-length 64 --json |
          /usr/bin/python3 -c 'import json, sys; print("%.4f" % json.load(sys.stdin)["accuracy"])'; }
# The int8 base: PTQ needs a task head to calibrate through; a pre-trained base gets one from a
# single step at a learning rate of zero (its encoder unchanged, its head freshly initialised).
"$BIN" finetune --model "$BASE" --task sst2 --train "$T/train.tsv" --max-steps 1 \
  --learning-rate 1e-30 --batch-size 16 --max-seq-length 64 -o "$T/base.brt" > /dev/null 2>&1
quantize "$T/base.brt" "$T/base8.brt"
LORA=(--task sst2 --train "$T/train.tsv" --epochs "$EPOCHS" --batch-size 16 --max-seq-length 64
      --learning-rate 1e-3 --lora-r 8 --lora-alpha 16 --lora-target query,value)
printf '%-5s %10s %14s %10s\n' seed fp32 int8+adapter merge+PTQ
for s in "${SEEDS[@]}"; do
  "$BIN" finetune --model "$T/base.brt" "${LORA[@]}" --seed "$s" -o "$T/a.brt" > /dev/null 2>&1
  "$BIN" finetune --model "$T/base8.brt" "${LORA[@]}" --seed "$s" -o "$T/a8.brt" > /dev/null 2>&1
  "$BIN" merge --model "$T/base.brt" --adapter "$T/a.brt" -o "$T/merged.brt" > /dev/null
  quantize "$T/merged.brt" "$T/merged8.brt"
  printf '%-5s %10s %14s %10s\n' "$s" "$(acc --model "$T/base.brt" --adapter "$T/a.brt")" \
    "$(acc --model "$T/base8.brt" --adapter "$T/a8.brt")" "$(acc --model "$T/merged8.brt")"
done
