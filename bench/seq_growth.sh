#!/usr/bin/env bash
# Cost growth from S = 128 to S = 512 (against the FLOP ratio), for each model
# file and each attention path of the cpu backend (BERTRT_ATTENTION: streamed, gemm), in one run,
# the paths alternated ROUNDS times; each figure is the lowest `bertrt bench` minimum (B = 1).
# FLOP ratio: the Linears' multiply-adds per token (4C² + 2CI) plus attention's 2TC, times T.
# A benchmark: it prints figures and asserts nothing.
# Usage: bench/seq_growth.sh BERTRT_BINARY MODEL.brt...
# env:   ROUNDS=2  ITERS=20 (timed forwards per bench; 5 for files over 200 MB)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
. "$(dirname "$0")/lib_checks.sh"
USAGE="usage: $0 BERTRT_BINARY MODEL.brt...   env: ROUNDS=2 ITERS=20
example: ROUNDS=1 $0 build/bertrt mini.int8.brt mini.cls.brt"
need_args 2 "$@"
need_exe BERTRT_BINARY "$1"
for m in "${@:2}"; do need_file MODEL.brt "$m"; done
BIN=$(realpath "$1"); shift
ROUNDS=${ROUNDS:-2} ITERS=${ITERS:-20}
flags=$(grep -m1 '^flags' /proc/cpuinfo | grep -ow 'avx2\|fma\|avx512f\|avx512_vnni\|amx_int8' | xargs)
echo "host: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), flags: ${flags:-none of avx2 fma avx512f}; $BIN"
printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n|---|---|---|---|---|---|---|---|\n' file \
  "streamed S128 ms" "streamed S512 ms" "streamed ratio" "gemm S128 ms" "gemm S512 ms" \
  "gemm ratio" "FLOP ratio"
for m in "$@"; do
  its=$ITERS
  (( $(stat -c %s "$m") > 200000000 )) && its=5
  declare -A best=()
  for _ in $(seq "$ROUNDS"); do
    for path in streamed gemm; do
      for s in 128 512; do
        ms=$(BERTRT_ATTENTION=$path "$BIN" bench --model "$m" --seq-len "$s" --iters "$its" --json |
             python3 -c 'import json,sys; print(json.load(sys.stdin)["min_ms"])')
        k="$path$s"
        if [[ -z "${best[$k]:-}" ]] || python3 -c "import sys; sys.exit(not $ms < ${best[$k]})"; then
          best[$k]=$ms
        fi
      done
    done
  done
  flops=$("$BIN" info "$m" --json | python3 -c '
import json, sys
c = json.load(sys.stdin)["config"]
C, I = c["hidden_size"], c["intermediate_size"]
f = lambda T: T * (4 * C * C + 2 * C * I + 2 * T * C)
print(f"{f(512) / f(128):.2f}")')
  python3 - "$(basename "$m")" "${best[streamed128]}" "${best[streamed512]}" "${best[gemm128]}" \
    "${best[gemm512]}" "$flops" <<'PY'
import sys
f, a1, a4, g1, g4, fl = sys.argv[1], *map(float, sys.argv[2:6]), sys.argv[6]
print(f"| {f} | {a1:.2f} | {a4:.2f} | {a4 / a1:.2f} | {g1:.2f} | {g4:.2f} | {g4 / g1:.2f} | {fl} |")
PY
  unset best
done
