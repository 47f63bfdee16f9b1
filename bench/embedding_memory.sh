#!/usr/bin/env bash
# Peak RSS and step time of contrastive fine-tuning (`bertrt finetune --task sentence-embedding`):
# MultipleNegativesRankingLoss at batch 32, its cached form (GradCache, --loss cached-mnrl,
# --mini-batch-size 32) at batch 32 and 1,024, and mnrl at 1,024 where the machine has the memory
# (about 32 times mnrl's at 32, estimated from that run; skipped otherwise). SQuAD (question, its
# paragraph) pairs, texts truncated at --max-seq-length 128, on a model from `bertrt init` with mean
# pooling. Peak RSS from /usr/bin/time -v; step time is the mean over the steps after the first
# (from --metrics' elapsed_seconds). Prints a table; asserts nothing.
# Usage: bench/embedding_memory.sh BERTRT_BINARY [DATA_DIR] [PRESET]   (default preset: tiny)
# env: BENCH_STEPS (default 3), BENCH_THREADS (default 2)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
. "$(dirname "$0")/lib_checks.sh"
USAGE="usage: $0 BERTRT_BINARY [DATA_DIR] [PRESET]   env: BENCH_STEPS=3 BENCH_THREADS=2
  DATA_DIR default: bench/../../shared/data (the vocab, squad_v1.1); PRESET: tiny (default), mini, ...
example: $0 build/bertrt ../shared/data tiny"
need_args 1 "$@"
need_exe BERTRT_BINARY "$1"
BIN=$(realpath "$1")
DATA=${2:-$(dirname "$0")/../../shared/data}
need_dir DATA_DIR "$DATA" "give the data folder as the second argument: $0 $1 DATA_DIR [PRESET]"
SQUAD=$DATA/squad_v1.1/dev-v1.1-articles-00-39.json
need_file DATA_DIR/squad_v1.1 "$SQUAD"
need_file DATA_DIR/vocab "$DATA/vocab/bert-base-uncased-vocab.txt"
PRESET=${3:-tiny}
STEPS=${BENCH_STEPS:-3}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export BERTRT_NUM_THREADS=${BENCH_THREADS:-2}
"$BIN" init --preset "$PRESET" --vocab "$DATA/vocab/bert-base-uncased-vocab.txt" -o "$T/m.brt" > /dev/null

peak_mb() { sed -n 's/.*Maximum resident set size (kbytes): //p' "$1" | awk '{printf "%.0f", $1/1024}' | grep . || echo -; }
# Mean seconds a step over steps 2.. of a metrics file (the first warms the buffers up).
step_s() {
  grep '"step"' "$1" | grep -v '"eval"' | sed -n 's/.*"elapsed_seconds":\([-+.0-9e]*\).*/\1/p' \
    | awk 'NR == 1 {first = $1} {last = $1; n = NR} END {if (n > 1) printf "%.2f", (last - first) / (n - 1); else print "-"}'
}
run() {  # run BATCH LOSS...: one row of the table
  local batch=$1; shift
  /usr/bin/time -v "$BIN" finetune --model "$T/m.brt" --task sentence-embedding --pooling mean \
    --max-seq-length 128 --train "$SQUAD" --batch-size "$batch" --max-steps "$STEPS" "$@" \
    --metrics "$T/metrics.jsonl" -o "$T/out.brt" > /dev/null 2> "$T/time.txt"
  printf '%-7s %-40s %6s %10s %10s\n' "$PRESET" "$*" "$batch" "$(peak_mb "$T/time.txt")" "$(step_s "$T/metrics.jsonl")"
}

echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores, BERTRT_NUM_THREADS=$BERTRT_NUM_THREADS, $STEPS steps"
printf '%-7s %-40s %6s %10s %10s\n' model loss batch "peak MB" "s/step"
run 32 --loss mnrl
mnrl32=$(peak_mb "$T/time.txt")
run 32 --loss cached-mnrl --mini-batch-size 32
run 1024 --loss cached-mnrl --mini-batch-size 32
avail=$(awk '/MemAvailable/ {printf "%.0f", $2 / 1024}' /proc/meminfo)
need=$((mnrl32 * 32))
if [ "$need" -lt $((avail * 2 / 3)) ]; then
  run 1024 --loss mnrl
else
  printf '%-7s %-40s %6s %10s %10s\n' "$PRESET" "--loss mnrl" 1024 "(skipped: ~${need} MB needed, ${avail} MB available)" ""
fi
