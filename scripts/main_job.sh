#!/usr/bin/env bash
# The main job, end to end on real data (../shared/data):
#   BERT-mini from scratch → MLM+NSP pre-training on English Wikipedia (held-out MLM/NSP accuracy
#   before and after) → SST-2 fine-tuning, beside the same architecture fine-tuned from random
#   init → dev accuracy of both → predict and fill-mask on real sentences → QAT-int8 fine-tuning
#   from the same pre-trained model (same steps), post-training quantization of the fp32 model
#   beside it, int8 dev accuracy of both and int8 prediction.
# BUDGET=small (default, ≈ 15 min on 2 cores) or BUDGET=full (≈ 20 min pre-training + 2 × ≈ 13 min
# fine-tuning, the README's figures). Results land in $OUT (default runs/main).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
DATA=${BERTRT_DATA:-../shared/data}
OUT=${OUT:-runs/main}
B=build/bertrt
mkdir -p "$OUT"
case "${BUDGET:-small}" in
  small) PT_STEPS=150; FT="--max-steps 600" ;;
  full)  PT_STEPS=800; FT="--epochs 1" ;;
  *) echo "BUDGET must be small or full" >&2; exit 2 ;;
esac
SST=$DATA/glue/SST-2

$B init --preset mini --vocab "$DATA/vocab/bert-base-uncased-vocab.txt" --seed 1 -o "$OUT/init.brt"
$B pretrain --model "$OUT/init.brt" \
  --corpus "$DATA/corpus/enwiki/enwiki_train_20MB.txt" --valid "$DATA/corpus/enwiki/enwiki_valid_1000docs.txt" \
  --dynamic-masking --max-steps $PT_STEPS --batch-size 32 --max-seq-length 128 --learning-rate 1e-3 --warmup-ratio 0.1 \
  --metrics "$OUT/pretrain.jsonl" -o "$OUT/pretrained.brt" | tee "$OUT/pretrain.txt"
for init in pretrained init; do
  $B finetune --model "$OUT/$init.brt" --task sst2 --train "$SST/train.tsv" --dev "$SST/dev.tsv" \
    $FT --batch-size 32 --max-seq-length 128 --learning-rate 1e-4 \
    --metrics "$OUT/finetune_$init.jsonl" -o "$OUT/sst2_from_$init.brt"
  $B eval --model "$OUT/sst2_from_$init.brt" --task sst2 --data "$SST/dev.tsv" --json | tee "$OUT/eval_$init.json"
done
printf 'a gorgeous, witty, seductive movie.\nthe plot is nothing but boilerplate clichés.\n' |
  $B predict --model "$OUT/sst2_from_pretrained.brt"
$B fill-mask --model "$OUT/pretrained.brt" "The [MASK] of France is Paris."

# Quantization (README "Quantization-aware training and int8"): QAT-int8 fine-tune → int8 model
# (-o) + fake-quant model; PTQ of the fp32 model as the baseline; dev accuracy of the int8 models.
$B finetune --model "$OUT/pretrained.brt" --task sst2 --train "$SST/train.tsv" --dev "$SST/dev.tsv" \
  $FT --batch-size 32 --max-seq-length 128 --learning-rate 1e-4 --qat int8 \
  --save-fake-quant "$OUT/sst2_qat_fq.brt" --metrics "$OUT/finetune_qat.jsonl" -o "$OUT/sst2_qat_int8.brt"
$B eval --model "$OUT/sst2_qat_int8.brt" --task sst2 --data "$SST/dev.tsv" --json | tee "$OUT/eval_qat_int8.json"
$B quantize --model "$OUT/sst2_from_pretrained.brt" --task sst2 --calibration "$SST/train.tsv" \
  --calibration-examples 512 -o "$OUT/sst2_ptq_int8.brt"
$B eval --model "$OUT/sst2_ptq_int8.brt" --task sst2 --data "$SST/dev.tsv" --json | tee "$OUT/eval_ptq_int8.json"
printf 'a gorgeous, witty, seductive movie.\nthe plot is nothing but boilerplate clichés.\n' |
  $B predict --model "$OUT/sst2_qat_int8.brt"
$B info "$OUT/sst2_qat_int8.brt" > "$OUT/info_qat_int8.txt"  # the quantization of each tensor
grep -m4 -E "^parameters|^quant" "$OUT/info_qat_int8.txt"
echo "main job done: results in $OUT (eval_pretrained.json vs eval_init.json; fp32 vs eval_qat_int8.json, eval_ptq_int8.json)"
