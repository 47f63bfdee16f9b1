#!/usr/bin/env bash
# The cpu backend's threads when other programs want the cores: wall time of `bertrt eval` of
# SST-2 dev and of a 30-step fine-tune of BERT-mini, fp32 and int8 (eval of the quantized file;
# QAT fine-tune), with the default thread count against one thread (BERTRT_NUM_THREADS=1), on
# idle cores and beside HOGS CPU-bound processes (busy shell loops). Every run alternates with
# the others in each round; the table gives each cell's median over the rounds, and the default's
# time over one thread's. The default runs with BERTRT_THREAD_STATS=1: "width" is the narrowest
# width its pool used (from its stderr line).
# The models are made in WORKDIR on the first run (`bertrt init --preset mini`, a 30-step
# fine-tune, `bertrt quantize`) and reused after.
# Usage: bench/contention.sh [WORKDIR]
#   env: BERTRT=build/bertrt ROUNDS=3 HOGS=2 BERTRT_DATA=../shared/data STEPS=30
# Example: ROUNDS=5 bench/contention.sh /tmp/contention
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
. "$(dirname "$0")/lib_checks.sh"
USAGE="usage: $0 [WORKDIR]   env: BERTRT=build/bertrt ROUNDS=3 HOGS=2 BERTRT_DATA=../shared/data STEPS=30
example: ROUNDS=5 $0 /tmp/contention"
need_args 0 "$@"
[ $# -le 1 ] || usage
BERTRT=${BERTRT:-build/bertrt}
ROUNDS=${ROUNDS:-3}
HOGS=${HOGS:-2}
STEPS=${STEPS:-30}
DATA=${BERTRT_DATA:-../shared/data}
need_exe BERTRT "$(command -v -- "$BERTRT" || echo "$BERTRT")"
B=$(realpath "$(command -v -- "$BERTRT" || echo "$BERTRT")")
need_dir BERTRT_DATA "$DATA" "set BERTRT_DATA"
need_file "SST-2 train" "$DATA/glue/SST-2/train.tsv"
need_file "SST-2 dev" "$DATA/glue/SST-2/dev.tsv"
need_file vocab "$DATA/vocab/bert-base-uncased-vocab.txt"
DATA=$(realpath "$DATA")  # the runs happen in WORKDIR
W=$(realpath -m "${1:-/tmp/bertrt-contention}")
mkdir -p "$W"
cd "$W"

hog_pids=()
stop_hogs() {
  for p in "${hog_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${hog_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  hog_pids=()
}
trap stop_hogs EXIT
start_hogs() {
  for _ in $(seq "$HOGS"); do
    sh -c 'while :; do :; done' &
    hog_pids+=($!)
  done
}

# The models (once; quietly, with the default threads).
head -n 2001 "$DATA/glue/SST-2/train.tsv" > train.tsv
cp "$DATA/glue/SST-2/dev.tsv" dev.tsv
if [ ! -f mini_int8.brt ]; then
  echo "making the models in $W ..."
  "$B" init --preset mini --vocab "$DATA/vocab/bert-base-uncased-vocab.txt" --seed 1 \
    -o mini_init.brt > /dev/null
  "$B" finetune --model mini_init.brt --task sst2 --train train.tsv --max-steps "$STEPS" \
    --batch-size 32 --learning-rate 1e-4 -o mini_fp32.brt > /dev/null 2>&1
  "$B" quantize --model mini_fp32.brt --calibration train.tsv --calibration-examples 256 \
    -o mini_int8.brt.tmp > /dev/null && mv mini_int8.brt.tmp mini_int8.brt
fi

WORKLOADS=("eval fp32" "eval int8" "finetune fp32" "finetune int8")
run_workload() {  # name
  case $1 in
    "eval fp32") "$B" eval --model mini_fp32.brt --data dev.tsv ;;
    "eval int8") "$B" eval --model mini_int8.brt --data dev.tsv ;;
    "finetune fp32") "$B" finetune --model mini_init.brt --task sst2 --train train.tsv \
      --max-steps "$STEPS" --batch-size 32 --learning-rate 1e-4 -o ft_out.brt ;;
    "finetune int8") "$B" finetune --model mini_init.brt --task sst2 --train train.tsv \
      --max-steps "$STEPS" --batch-size 32 --learning-rate 1e-4 --qat int8 -o ft_out.brt ;;
  esac
}

echo "bench/contention.sh: $(date -u +%FT%TZ), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)," \
  "$(nproc) CPUs, $("$B" --version | head -1)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); rounds $ROUNDS, $HOGS busy processes"
declare -A times widths
for r in $(seq "$ROUNDS"); do
  for cond in idle busy; do
    [ "$cond" = busy ] && start_hogs
    for wl in "${WORKLOADS[@]}"; do
      for th in default 1; do
        t0=$(date +%s%N)
        if [ "$th" = 1 ]; then
          BERTRT_NUM_THREADS=1 run_workload "$wl" > /dev/null 2> err.txt
        else
          (unset BERTRT_NUM_THREADS; BERTRT_THREAD_STATS=1 run_workload "$wl") > /dev/null 2> err.txt
          w=$(grep -o 'narrowest [0-9]*' err.txt | tail -1 | cut -d' ' -f2)
          widths["$wl|$cond"]="${widths["$wl|$cond"]:-} ${w:-?}"
        fi
        t1=$(date +%s%N)
        times["$wl|$cond|$th"]="${times["$wl|$cond|$th"]:-} $(((t1 - t0) / 1000000))"
        printf 'round %s %-5s %-14s threads %-8s %7.2f s\n' "$r" "$cond" "$wl" "$th" \
          "$(awk -v ms=$(((t1 - t0) / 1000000)) 'BEGIN { print ms / 1000 }')" >&2
      done
    done
    [ "$cond" = busy ] && stop_hogs
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{ a[NR] = $1 } END {
  print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
printf '| %-13s | %-5s | %12s | %12s | %15s | %-9s |\n' workload cores "1 thread (s)" "default (s)" \
  "default / 1" "width"
printf '|%s|%s|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..15})" "$(printf -- '-%.0s' {1..7})" \
  "$(printf -- '-%.0s' {1..14})" "$(printf -- '-%.0s' {1..14})" "$(printf -- '-%.0s' {1..17})" \
  "$(printf -- '-%.0s' {1..11})"
for wl in "${WORKLOADS[@]}"; do
  for cond in idle busy; do
    one=$(echo "${times["$wl|$cond|1"]}" | median)
    def=$(echo "${times["$wl|$cond|default"]}" | median)
    printf '| %-13s | %-5s | %12.2f | %12.2f | %14.2fx | %-9s |\n' "$wl" "$cond" \
      "$(awk -v v="$one" 'BEGIN { print v / 1000 }')" "$(awk -v v="$def" 'BEGIN { print v / 1000 }')" \
      "$(awk -v a="$def" -v b="$one" 'BEGIN { print a / b }')" "$(echo "${widths["$wl|$cond"]}" | xargs | tr ' ' ',')"
  done
done
