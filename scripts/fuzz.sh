#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, CMake option BERTRT_FUZZ with clang-14: ASan + UBSan,
# no recovery) into build-fuzz/ and runs each for SECS seconds, one at a time, from its seed corpus
# (tests/fuzz/corpus/<target>, read-only; new inputs go to build-fuzz/corpus/<target>) with its
# dictionary (tests/fuzz/dict/<target>.dict when present) and its own libFuzzer flags, one a line
# (tests/fuzz/options/<target>, after the defaults: e.g. a larger -max_len). A run stops at its
# first finding (crash, sanitizer report, uncaught exception other than bertrt::Error, hang > 10 s,
# > 2 GB);
# the input is kept in build-fuzz/artifacts/<target>/ — copy it to tests/fuzz/regressions/<target>/
# and fix the parser. Prints a table (target, CPU seconds, execs, edges, crashes); exits 1 when
# any target found something.
# -j N runs N targets at once (each libFuzzer process is one thread; -t is wall time, so on an
# idle machine -j $(nproc) gives each target a whole core and the sweep takes 1/N as long).
# Usage: scripts/fuzz.sh [-t SECS] [-j N] [--json FILE] [--nice N] [TARGET...]   (default: 30 s, -j 1, all)
#   e.g. scripts/fuzz.sh -t 300 tokenizer pickle
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=30 JOBS=1 JSON="" NICE=15 TARGETS=()
while (($#)); do
  case "$1" in
    -t) SECS=$2; shift 2 ;;
    -j) JOBS=$2; shift 2 ;;
    --json) JSON=$2; shift 2 ;;
    --nice) NICE=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) TARGETS+=("$1"); shift ;;
  esac
done
B=${BERTRT_FUZZ_BUILD:-build-fuzz}  # the build folder (CI and by-hand runs may keep their own)
command -v clang++-14 >/dev/null || { echo "fuzz.sh: clang++-14 missing (scripts/setup.sh installs clang-14 and libclang-rt-14-dev)" >&2; exit 1; }
cmake -S . -B $B -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-14 \
  -DCMAKE_CXX_COMPILER=clang++-14 -DBERTRT_FUZZ=ON -DBERTRT_BUILD_TESTS=OFF -DBERTRT_VULKAN=OFF >/dev/null
start=$(date +%s)
nice -n "$NICE" cmake --build $B --target fuzz_targets -j"$(nproc)" >/dev/null
echo "fuzz.sh: built the targets in $(($(date +%s) - start)) s" >&2
if ((${#TARGETS[@]} == 0)); then
  for f in tests/fuzz/corpus/*/; do TARGETS+=("$(basename "$f")"); done
fi
export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# One target: its libFuzzer run, then one JSON row in $B/logs/$t.row (read back in target order).
fuzz_one() {
  local t=$1 exe=$B/fuzz_$1 work=$B/corpus/$1 art=$B/artifacts/$1 log=$B/logs/$1.log rc=0 dict=() opts=()
  mkdir -p "$work" "$art" "$(dirname "$log")"
  [ -f tests/fuzz/dict/$t.dict ] && dict=(-dict=tests/fuzz/dict/$t.dict)
  [ -f tests/fuzz/options/$t ] && mapfile -t opts <tests/fuzz/options/$t
  touch "$art/.start"  # findings of earlier runs stay in $art; count only this run's
  /usr/bin/time -f '%U %S' -o $B/logs/$t.time nice -n "$NICE" "$exe" -max_total_time="$SECS" \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$art/" "${dict[@]}" "${opts[@]}" \
    "$work" tests/fuzz/corpus/$t >"$log" 2>&1 || rc=$?
  local cpu execs edges crashes
  cpu=$(awk 'END { printf "%.0f", $1 + $2 }' $B/logs/$t.time)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  edges=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  crashes=$(find "$art" -type f -newer "$art/.start" \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' \) | wc -l)
  if ((rc != 0 && crashes == 0)); then crashes=1; fi  # died without an artifact: still a finding
  printf '%s\t%s\t%s\t%s\t%s\n' "$t" "$cpu" "${execs:-0}" "${edges:-0}" "$crashes" >$B/logs/$t.row
}
for t in "${TARGETS[@]}"; do
  [ -x "$B/fuzz_$t" ] || { echo "fuzz.sh: no target $t ($B/fuzz_$t)" >&2; exit 2; }
  rm -f $B/logs/$t.row
done
running=0
for t in "${TARGETS[@]}"; do
  if ((running >= JOBS)); then wait -n || true; running=$((running - 1)); fi
  fuzz_one "$t" &
  running=$((running + 1))
done
wait
rows=() found=0
printf '%-14s %8s %12s %7s %8s\n' target cpu_s execs edges crashes
for t in "${TARGETS[@]}"; do
  [ -f $B/logs/$t.row ] || { echo "fuzz.sh: $t left no result ($B/logs/$t.log)" >&2; found=1; continue; }
  IFS=$'\t' read -r _ cpu execs edges crashes <$B/logs/$t.row
  ((crashes)) && found=1
  printf '%-14s %8s %12s %7s %8s\n' "$t" "$cpu" "$execs" "$edges" "$crashes"
  ((crashes)) && echo "  -> $B/logs/$t.log, $B/artifacts/$t" >&2
  rows+=("{\"target\": \"$t\", \"seconds\": $SECS, \"cpu_seconds\": $cpu, \"execs\": $execs, \"edges\": $edges, \"crashes\": $crashes}")
done
if [ -n "$JSON" ]; then
  { echo "["; (IFS=$'\n'; echo "${rows[*]}" | sed '$!s/$/,/'); echo "]"; } >"$JSON"
fi
exit $found
