#!/usr/bin/env bash
# The QAT measurements of docs/explanation/quantization.md: SST-2 and MRPC fine-tuned from the same pre-trained
# BERT-mini in fp32 and with --qat int8 (same steps), PTQ of the fp32 models (512 calibration
# examples), dev accuracy / F1 of every model, int8 vs fake-quant agreement, then int8 vs fp32
# latency (bench/int8_bench.sh), BERT-mini and BERT-base. The 4 fine-tunes run in parallel with
# 4 threads each (a 16-core machine; about 4 min there).
# Usage (repo root): bench/qat_measure.sh PRETRAINED.brt OUTDIR      QUICK=1: a dry run on a tiny model
set -uo pipefail
PRE=$(realpath "$1")
OUT=$(realpath -m "${2:-runs/qat}")
DATA=$(realpath "${BERTRT_DATA:-../shared/data}")
BENCH=$(realpath bench/int8_bench.sh)
B=$(realpath "${BERTRT:-build/bertrt}")
W=$OUT/work
mkdir -p "$OUT" "$W/data"
exec > >(tee "$OUT/log.txt") 2>&1
t0=$(date +%s)
stamp() { echo "=== [$(($(date +%s) - t0)) s] $*"; }
for t in SST-2:sst2 MRPC:mrpc; do
  cp "$DATA/glue/${t%%:*}/train.tsv" "$W/data/${t##*:}_train.tsv"
  cp "$DATA/glue/${t%%:*}/dev.tsv" "$W/data/${t##*:}_dev.tsv"
done
cp "$DATA/vocab/bert-base-uncased-vocab.txt" "$W/data/vocab.txt"
ln -sf "$PRE" "$W/pretrained.brt"
nproc; grep -m1 'model name' /proc/cpuinfo; grep -o -m1 -E 'avx512_vnni|avx_vnni' /proc/cpuinfo | head -1
cd "$W"
SST_STEPS=600 MRPC_STEPS=345 TMO=360 TH=4
if [ "${QUICK:-0}" = 1 ]; then
  SST_STEPS=3 MRPC_STEPS=3 TMO=300 TH=1
  for t in sst2 mrpc; do
    head -n 41 data/${t}_dev.tsv > d && mv d data/${t}_dev.tsv
    head -n 600 data/${t}_train.tsv > d && mv d data/${t}_train.tsv
  done
  rm -f pretrained.brt; $B init --preset tiny --vocab data/vocab.txt --seed 1 -o pretrained.brt
fi
FT="--batch-size 32 --max-seq-length 128 --learning-rate 1e-4 --seed 42"

stamp "fine-tunes: 4 in parallel, 4 threads each"
ft() {  # task steps name extra...
  local task=$1 steps=$2 name=$3; shift 3
  BERTRT_NUM_THREADS=$TH OPENBLAS_NUM_THREADS=$TH timeout $TMO $B finetune --model pretrained.brt \
    --task $task --train data/${task}_train.tsv --dev data/${task}_dev.tsv --max-steps $steps $FT \
    --metrics "$OUT/$name.jsonl" "$@" > $name.log 2>&1
  echo "$name: exit $? after $(($(date +%s) - t0)) s"; grep -E "dev after|wrote|int8 model" $name.log
}
pids=()
ft sst2 $SST_STEPS sst2_fp32 -o sst2_fp32.brt & pids+=($!)
ft sst2 $SST_STEPS sst2_qat --qat int8 --save-fake-quant sst2_qat_fq.brt -o sst2_qat_int8.brt & pids+=($!)
ft mrpc $MRPC_STEPS mrpc_fp32 -o mrpc_fp32.brt & pids+=($!)
ft mrpc $MRPC_STEPS mrpc_qat --qat int8 --save-fake-quant mrpc_qat_fq.brt -o mrpc_qat_int8.brt & pids+=($!)
wait "${pids[@]}"  # not a bare wait: that would also wait for the tee above
tail -c 300 sst2_qat.log

stamp "PTQ of the fp32 models (512 calibration examples from train)"
for t in sst2 mrpc; do
  BERTRT_NUM_THREADS=$TH OPENBLAS_NUM_THREADS=$TH $B quantize --model ${t}_fp32.brt --task $t --calibration data/${t}_train.tsv \
    --calibration-examples 512 --save-fake-quant ${t}_ptq_fq.brt -o ${t}_ptq_int8.brt
done

stamp "dev: eval (accuracy) and predict (labels for F1 and agreement)"
export BERTRT_NUM_THREADS=$TH OPENBLAS_NUM_THREADS=$TH
tail -n +2 data/sst2_dev.tsv | cut -f1 > sst2_in.txt; tail -n +2 data/sst2_dev.tsv | cut -f2 > sst2_gold.txt
tail -n +2 data/mrpc_dev.tsv | cut -f4,5 > mrpc_in.txt; tail -n +2 data/mrpc_dev.tsv | cut -f1 > mrpc_gold.txt
for t in sst2 mrpc; do
  for m in fp32 qat_fq qat_int8 ptq_fq ptq_int8; do
    [ -f ${t}_$m.brt ] || { echo "${t}_$m.brt missing"; continue; }
    $B eval --model ${t}_$m.brt --task $t --data data/${t}_dev.tsv --batch-size 64 --json > ${t}_$m.eval & p1=$!
    $B predict --model ${t}_$m.brt < ${t}_in.txt | cut -f1 > ${t}_$m.pred
    wait $p1
  done
done
{
  echo "task model eval_accuracy predict_accuracy f1(pos=1) n"
  for t in sst2 mrpc; do for m in fp32 qat_fq qat_int8 ptq_fq ptq_int8; do
    [ -f ${t}_$m.pred ] || continue
    acc=$(sed -E 's/.*"accuracy":([0-9.]+).*/\1/' ${t}_$m.eval)
    paste ${t}_gold.txt ${t}_$m.pred | awk -v t=$t -v m=$m -v a=$acc '{n++; c+=($1==$2); tp+=($1==1&&$2==1); fp+=($1==0&&$2==1); fn+=($1==1&&$2==0)}
      END {f1=(2*tp+fp+fn)?2*tp/(2*tp+fp+fn):0; printf "%s %s %s %.4f %.4f %d\n", t, m, a, c/n, f1, n}'
  done; done
  echo "agreement (same predicted label)"
  for t in sst2 mrpc; do for p in "qat_fq qat_int8" "ptq_fq ptq_int8" "fp32 ptq_int8" "fp32 qat_int8"; do
    set -- $p
    [ -f ${t}_$1.pred ] && [ -f ${t}_$2.pred ] || continue
    paste ${t}_$1.pred ${t}_$2.pred | awk -v t=$t -v a=$1 -v b=$2 '{n++; s+=($1==$2)} END {printf "%s %s vs %s: %d / %d = %.4f\n", t, a, b, s, n, s/n}'
  done; done
} | tee "$OUT/results.txt"
$B info sst2_qat_int8.brt | grep -E "parameters|quant" | head -8
ls -la *.brt

stamp "latency: BERT-mini fp32 vs int8 (SST-2 models)"
ITERS=20; [ "${QUICK:-0}" = 1 ] && ITERS=2
BERTRT="$B" ITERS=$ITERS bash "$BENCH" sst2_fp32.brt sst2_qat_int8.brt 1 4 | tee -a "$OUT/results.txt"
[ "${QUICK:-0}" = 1 ] && { stamp "done (quick)"; exit 0; }

stamp "latency: BERT-base (random init, 1 QAT step for the ranges)"
$B init --preset base --vocab data/vocab.txt --seed 1 -o base_init.brt
head -n 65 data/sst2_train.tsv > base_train.tsv; head -n 9 data/sst2_dev.tsv > base_dev.tsv
BERTRT_NUM_THREADS=8 OPENBLAS_NUM_THREADS=8 $B finetune --model base_init.brt --task sst2 --train base_train.tsv \
  --dev base_dev.tsv --max-steps 2 --batch-size 32 --max-seq-length 128 --qat int8 \
  --save-fake-quant base_fq.brt -o base_int8.brt | tail -2
BERTRT="$B" ITERS=5 bash "$BENCH" base_fq.brt base_int8.brt 4 | tee -a "$OUT/results.txt"
stamp done
