#!/usr/bin/env bash
# int8 vs fp32 inference: model file size and latency of BertModel::forward at seq_len 128,
# batch 1 and 8, side by side (`bertrt bench`: random ids, no padding, median of ITERS runs).
# Usage: bench/int8_bench.sh FP32_MODEL INT8_MODEL [THREADS ...]     (default threads: 1)
#   FP32_MODEL may be a fake-quant file: it runs with --fp32 (its fp32 weights, no fake-quant).
#   BERTRT: the bertrt command (default build/bertrt); ITERS (default 20).
# Example: bench/int8_bench.sh runs/main/sst2_from_pretrained.brt runs/main/sst2_qat_int8.brt 1 2
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
. "$(dirname "$0")/lib_checks.sh"
USAGE="usage: $0 FP32_MODEL INT8_MODEL [THREADS ...]   env: BERTRT=build/bertrt ITERS=20
example: $0 runs/main/sst2_from_pretrained.brt runs/main/sst2_qat_int8.brt 1 2"
need_args 2 "$@"
BERTRT=${BERTRT:-build/bertrt}
ITERS=${ITERS:-20}
# BERTRT may name a command on PATH: it runs as a command, not a path
need_exe BERTRT "$(command -v -- "$BERTRT" || echo "$BERTRT")"
need_file FP32_MODEL "$1"
need_file INT8_MODEL "$2"
fp32=$1 int8=$2
shift 2
threads=("$@")
[ ${#threads[@]} -eq 0 ] && threads=(1)
median() { $BERTRT bench --model "$1" --batch-size "$2" --seq-len 128 --iters "$ITERS" --json $3 |
  sed -E 's/.*"median_ms":([0-9.eE+-]+).*/\1/'; }
div() { awk -v a="$1" -v b="$2" -v f="$3" 'BEGIN { printf f, a / b }'; }
printf 'model size: fp32 %s MB (%s), int8 %s MB (%s), ratio %s\n' \
  "$(div "$(stat -c %s "$fp32")" 1e6 %.2f)" "$fp32" "$(div "$(stat -c %s "$int8")" 1e6 %.2f)" \
  "$int8" "$(div "$(stat -c %s "$int8")" "$(stat -c %s "$fp32")" %.3f)"
printf '%-8s %-6s %-5s %12s %12s %9s\n' threads batch seq "fp32 ms" "int8 ms" speed-up
for t in "${threads[@]}"; do
  for b in 1 8; do
    f=$(BERTRT_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t median "$fp32" $b --fp32)
    q=$(BERTRT_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t median "$int8" $b "")
    printf '%-8s %-6s %-5s %12.2f %12.2f %8sx\n' "$t" "$b" 128 "$f" "$q" "$(div "$f" "$q" %.2f)"
  done
done
