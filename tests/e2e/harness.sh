# Shared set-up of the CLI end-to-end scripts (sourced, not run): BIN and DATA from the script's
# arguments, skip (or fail under BERTRT_REQUIRE_DATA=1) when the data is absent, a temp folder $T
# removed on exit, pass/fail counters and the expect_ok / expect_error checks.
# shellcheck shell=bash
BIN=$1
DATA=${BERTRT_DATA:-$2}
VOCAB=$DATA/vocab/bert-base-uncased-vocab.txt
if [ ! -f "$VOCAB" ]; then
  if [ "${BERTRT_REQUIRE_DATA:-0}" = 1 ]; then echo "required data missing: $VOCAB"; exit 1; fi
  echo "SKIP: data missing ($VOCAB)"; exit 0
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
# The step of a checkpoint (`bertrt info` prints "training   step N"), or nothing.
step_of() { "$BIN" info "$1" 2>/dev/null | sed -n 's/^training *step \([0-9]*\)$/\1/p'; }
# The largest "step" of the train lines of a metrics file (0 when none).
progress_of() { { grep -o '"step":[0-9]*' "$1" 2>/dev/null || true; } | cut -d: -f2 | sort -n | tail -1 | sed 's/^$/0/'; }
# wait_for_checkpoint FILE TRIES PAUSE: prints FILE's step as soon as it holds a checkpoint
# (polling TRIES times, PAUSE seconds apart), nothing if it never did.
wait_for_checkpoint() {
  local s="" i
  for i in $(seq "$2"); do
    s=$(step_of "$1")
    [ -n "$s" ] && break
    sleep "$3"
  done
  echo "$s"
}
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect_error NAME OUTFILE PATTERN -- CMD...: non-zero exit, stderr matches PATTERN, OUTFILE absent.
expect_error() {
  local name=$1 out=$2 pattern=$3; shift 4
  "$@" >"$T/stdout" 2>"$T/stderr" </dev/null
  local rc=$?
  if [ $rc -eq 0 ]; then bad "$name: exit 0"; return; fi
  if ! grep -qiE -- "$pattern" "$T/stderr"; then bad "$name: stderr lacks /$pattern/: $(cat "$T/stderr")"; return; fi
  if [ -n "$out" ] && [ -e "$out" ]; then bad "$name: left $out behind"; return; fi
  ok
}
# expect_ok NAME CMD...: exit 0.
expect_ok() {
  local name=$1; shift
  if "$@" >"$T/stdout" 2>"$T/stderr"; then ok; else bad "$name: exit $?: $(tail -3 "$T/stderr")"; fi
}
