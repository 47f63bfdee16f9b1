#!/usr/bin/env bash
# Inference memory and cold start (docs/explanation/performance.md, "Memory and cold start"): for
# each model file, the peak RSS (/usr/bin/time, maximum resident set) and the wall time of
# `bertrt predict` of one sentence (process start to the first prediction, page cache warm: the
# file is read once first) and the peak RSS of `bertrt bench --iters 1`, over RUNS runs: the
# lowest time, the highest RSS (MB = 10^6 bytes, as the file size). A benchmark: it prints figures
# and asserts nothing.
# Usage: bench/memory_cold_start.sh BERTRT_BINARY MODEL.brt...
# env:   RUNS=5  THREADS="1 2" (BERTRT_NUM_THREADS of each row)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
. "$(dirname "$0")/lib_checks.sh"
USAGE="usage: $0 BERTRT_BINARY MODEL.brt...   env: RUNS=5 THREADS=\"1 2\"
example: RUNS=3 $0 build/bertrt base.cls.brt base.int8.brt"
need_args 2 "$@"
need_exe BERTRT_BINARY "$1"
for m in "${@:2}"; do need_file MODEL.brt "$m"; done
BIN=$(realpath "$1"); shift
RUNS=${RUNS:-5} THREADS=${THREADS:-"1 2"}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
echo "host: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $BIN"
printf '| %s | %s | %s | %s | %s | %s |\n|---|---|---|---|---|---|\n' model "file MB" threads \
  "predict: first answer, s" "predict: peak RSS MB" "bench --iters 1: peak RSS MB"
best() { sort -g | head -1; }
worst() { sort -g | tail -1; }
for m in "$@"; do
  cat "$m" > /dev/null  # warm page cache
  mb=$(( $(stat -c %s "$m") / 1000000 ))
  for t in $THREADS; do
    : > "$T/s"; : > "$T/p"; : > "$T/b"
    for _ in $(seq "$RUNS"); do
      echo "a fine movie" | BERTRT_NUM_THREADS=$t /usr/bin/time -o "$T/t" -f '%e %M' \
        "$BIN" predict --model "$m" > /dev/null
      read -r s kb < "$T/t"; echo "$s" >> "$T/s"; echo $((kb * 1024 / 1000000)) >> "$T/p"
      BERTRT_NUM_THREADS=$t /usr/bin/time -o "$T/t" -f '%M' "$BIN" bench --model "$m" --iters 1 \
        > /dev/null
      echo $(( $(cat "$T/t") * 1024 / 1000000 )) >> "$T/b"
    done
    printf '| %s | %s | %s | %s | %s | %s |\n' "$(basename "$m")" "$mb" "$t" "$(best < "$T/s")" \
      "$(worst < "$T/p")" "$(worst < "$T/b")"
  done
done
